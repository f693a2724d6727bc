"""The prediction: ptxas's register count from the PTX, as named components that add up.

``registers`` is the sum of the components, in this order:

1. ``ptx live``: the PTX live count (the most 32-bit units live at once, the estimate);
2. ``no-register values``: minus what SASS keeps out of registers (parameters read from the
   constant bank, immediates, ``cvta.to.global``, copies, constant address offsets (not
   those computed between warp shuffles),
   32-to-64-bit widenings, above the occupancy budget the read-only loads from a
   warp-uniform address that ptxas keeps in uniform registers, below it the warp-uniform
   integer values read in loops, in uniform registers or the constant bank; :mod:`.view`);
3. ``scheduling``: what ptxas's instruction order adds or saves against the PTX order:
   short guarded branches predicated (:mod:`.ifconvert`), then each basic block (a label
   that nothing names ends none: :func:`~.labels.named_labels`) list scheduled
   (:mod:`.listsched`), for latency while fewer values are live than the
   **occupancy budget** allows (:func:`kernel_budget`: 32 on sm_80, the most registers that
   keep the most warps resident; launch bounds change it), for pressure from there.  Below the
   budget the count may grow up to it, not beyond; at or above it, the schedule can only
   lower the PTX order's pressure (the view read in SASS's forms first: 32-bit integer adds
   fused in pairs, IADD3, and shared loads of one variable issued per 16-byte window,
   LDS.128: :mod:`.forms`, model 11; a 32-bit integer division by a variable with the
   temporaries of its inline SASS sequence, model 12; below the budget, a one-block loop whose
   counter steps by a literal written four times, as ptxas unrolls it: :mod:`.unroll`, model
   13), and a kernel whose blocks scheduled bottom-up
   (:mod:`.bottomup`) keep at most the room + :data:`SQUEEZE_SLACK` units is squeezed to the
   budget (not when it is out of the model's depth);
4. ``fixed overhead``: plus 3: ptxas's count is the highest register used + 1 + 2, and R1
   (the stack pointer) is live throughout;
5. ``allocation holes``: plus :data:`HOLES`: 64-bit values take even-aligned pairs and
   128-bit values aligned quads, and the allocator does not pack the lowest registers
   (measured: highest register + 1 minus the SASS peak, median over the training split);
6. ``division slow path``: a kernel with an IEEE-rounded division (``div.rn.f32``,
   ``div.rn.f64``) gets at least the slow-path subroutine's count
   (:data:`~ptxforge.arch.ptxas_model.DIVISION_SLOW_PATH`) plus the units live across the
   division: ptxas compiles the subroutine into the kernel and keeps those values above it;
7. ``call ABI``: a kernel that calls a function gets at least :data:`~.abi.CALL_FLOOR`;
8. ``register limit``: ptxas never gives a thread more than :data:`REGISTER_LIMIT`.

``low`` and ``high`` bound the count with the 5th and 95th percentiles of ptxas / prediction
on the training split (:data:`BAND`).  The constants were chosen on the training split only;
``bench/bench_estimate_accuracy.py`` reports the validation split (docs/prediction.md).

Example::

    >>> from ptxforge.dsl import kernels
    >>> p = predict_registers(kernels.saxpy().kernels[0])
    >>> p.registers == sum(c.registers for c in p.components), p.low <= p.registers <= p.high
    (True, True)
"""

from __future__ import annotations

import functools
import math

import attrs

from ptxforge.arch.occupancy import arch_props

# the measured constants (R1 + the +2, the holes, the 255 limit): ptxforge.arch.ptxas_model
from ptxforge.arch.ptxas_model import (
    CALL_FLOOR,
    DIVISION_SLOW_PATH,
    FIXED_OVERHEAD,
    HOLES,
    REGISTER_LIMIT,
    SMALL_HOLES,
    SMALL_PEAK,
    UNROLL,
)
from ptxforge.errors import PtxforgeError
from ptxforge.ptx import ir

from ..cfg import TERMINATORS, build_cfg
from ..liveness import analyze_liveness
from .abi import call_targets
from .bottomup import bottom_up_peak
from .forms import division_results, expand_divisions, sass_forms
from .ifconvert import MAX_BODY, if_convert
from .labels import named_labels
from .listsched import list_schedule
from .unroll import unroll_loops
from .view import KINDS, SassView, sass_view

__all__ = [
    "BAND",
    "DEEP_BAND",
    "FIXED_OVERHEAD",
    "HOLES",
    "LONG_BLOCK",
    "MODEL",
    "REGISTER_LIMIT",
    "SQUEEZE_SLACK",
    "Component",
    "Prediction",
    "kernel_budget",
    "occupancy_budget",
    "out_of_depth",
    "predict_registers",
]

#: The model's version: bump it whenever a rule or a constant changes.
MODEL = "ptxforge-predict/13 (whole-program ptxas 13.5, sm_80)"
#: The occupancy budget where the target has no occupancy table.
FULL_OCCUPANCY_FALLBACK = 32
#: (low, high) ratios of ptxas / prediction: the 5th and 95th percentiles on the training
#: split of the fixed and family corpora (model 13; model 12 had 0.792 and 1.239, model 11
#: 0.804 and 1.251, model 10
#: 0.804 and 1.265, model 9
#: 0.778 and 1.256, model 8 0.781 and 1.3, models 6 and 7 0.732 and 1.28, model 5 0.732 and
#: 1.263, model 4 0.732 and 1.3), for kernels the model is not out of its depth on; measured
#: coverage in docs/prediction.md.
BAND = (0.792, 1.223)
#: The same for kernels :func:`out_of_depth` flags (tensor cores, calls, long blocks; models 7
#: and 8, kept since: models 10 and 11's training percentiles are 0.813 and 1.287, narrower;
#: model 6's were 0.783 and 1.303, model 5's 0.774 and 1.267).
DEEP_BAND = (0.789, 1.303)
#: A basic block longer than this (instructions) is beyond what the per-block list scheduler
#: was checked on: ptxas's scheduler works in regions there (issue 29).
LONG_BLOCK = 300
#: Above the budget, ptxas reaches it when the bottom-up pressure order
#: (:func:`~.bottomup.bottom_up_peak`) keeps at most the room plus this many units live: the
#: greedy order is that much above the best one ptxas finds (chosen on the training split:
#: docs/prediction.md, "Squeezed to the budget").
SQUEEZE_SLACK = 7
_KIND_WORDS = {"parameter": "parameters read from the constant bank",
               "immediate": "immediates and variable addresses",
               "special": "special registers read again",
               "alias": "cvta.to.global and copies",
               "offset": "constant address offsets",
               "widen": "32-to-64-bit widenings",
               "uniform": "uniform loads kept in uniform registers",
               "warp-uniform": "warp-uniform values read in loops, in uniform registers"}


@attrs.frozen(slots=True, kw_only=True)
class Component:
    """One named part of a prediction: registers it adds (negative: takes away) and why."""

    name: str
    registers: int
    detail: str

    def to_dict(self) -> dict:
        return {"name": self.name, "registers": self.registers, "detail": self.detail}


@attrs.frozen(slots=True, kw_only=True)
class Prediction:
    """The register count ptxas is predicted to report, its band, and what it is made of."""

    registers: int
    low: int
    high: int
    components: tuple
    model: str = MODEL
    out_of_depth: tuple = ()

    def component(self, name: str) -> Component:
        """The component called ``name`` (KeyError when the prediction has none)."""
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> dict:
        return {"registers": self.registers, "low": self.low, "high": self.high,
                "components": [c.to_dict() for c in self.components], "model": self.model,
                "out_of_depth": list(self.out_of_depth)}

    def summary(self) -> str:
        """``"31 (25-39) = 32 live - 12 no-register values + ..."`` on one line."""
        parts = []
        for k, c in enumerate(self.components):
            if k == 0:
                parts.append(f"{c.registers} {c.name}")
            elif c.registers:
                parts.append(f"{'+' if c.registers > 0 else '-'} {abs(c.registers)} {c.name}")
        return f"{self.registers} ({self.low}-{self.high}) = " + " ".join(parts)


def _peak(kernel: ir.Kernel) -> tuple[int, int]:
    """(general units, predicates): the most live at once."""
    lv = analyze_liveness(kernel)
    g = lv.series("at")
    p = lv.series("at", "pred")
    return (max(g) if g else 0), (max(p) if p else 0)


def occupancy_budget(target: str | int = "sm_80", threads: int | None = None,
                     min_blocks: int | None = None) -> int:
    """The most registers per thread that still let the most warps be resident on ``target``
    (32 on sm_80 and sm_90, 40 on sm_86 and sm_89; 32 when the registry has no table).

    ``threads`` (a launch bound: ``.maxntid`` or ``.reqntid``) limits the warps a block
    brings; with ``min_blocks`` (``.minnctapersm``) the budget is what ``min_blocks`` such
    blocks leave each thread (at most 255).

    Example::

        >>> occupancy_budget("sm_80"), occupancy_budget("sm_86")
        (32, 40)
        >>> occupancy_budget("sm_80", threads=32), occupancy_budget("sm_80", 256, 4)
        (64, 64)
    """
    try:
        p = arch_props(target)
    except PtxforgeError:
        return FULL_OCCUPANCY_FALLBACK
    return _occupancy_budget(p, threads, min_blocks)


@functools.lru_cache(maxsize=256)
def _occupancy_budget(p, threads, min_blocks) -> int:
    """:func:`occupancy_budget` for the architecture's properties ``p``, once per set."""
    per_sub = p.regs_per_sm // p.sub_partitions
    warps = p.max_threads_per_sm // p.warp_size
    if threads:
        per_block = -(-threads // p.warp_size)
        blocks = min_blocks or min(p.max_blocks_per_sm, warps // max(per_block, 1))
        warps = max(1, blocks * per_block)
    most = -(-warps // p.sub_partitions)
    best = 0
    for regs in range(1, p.max_regs_per_thread + 1):
        unit = -(-regs * p.warp_size // p.reg_alloc_unit) * p.reg_alloc_unit
        if most * unit <= per_sub:
            best = regs
    return best or FULL_OCCUPANCY_FALLBACK


def out_of_depth(kernel: ir.Kernel, cfg=None) -> tuple[str, ...]:
    """Why the prediction for ``kernel`` is less sure (its band is :data:`DEEP_BAND`): ``"tensor
    cores"`` (mma, wmma.mma, wgmma: fragments the rules do not model), ``"calls"`` (the call
    ABI), ``"a block of N instructions"`` (longer than :data:`LONG_BLOCK`), ``"setmaxnreg"``
    (warpgroups set their own register counts, without the complete launch bounds that
    :func:`predict_registers` reads the count from).  ``cfg`` is the kernel's
    :func:`~ptxforge.analysis.cfg.build_cfg` when the caller has it.

    Example::

        >>> from ptxforge.dsl import kernels
        >>> out_of_depth(kernels.saxpy().kernels[0])
        ()
    """
    reasons = []
    insts = kernel.instructions
    if any(i.family in ("mma", "wgmma") or i.opcode.startswith("wmma.mma") for i in insts):
        reasons.append("tensor cores")
    if call_targets(kernel):
        reasons.append("calls")
    warpgroups = _setmaxnreg(kernel)
    if warpgroups is not None and not warpgroups[0]:
        reasons.append("setmaxnreg")
    longest = _longest_block(kernel, cfg)
    if longest > LONG_BLOCK:
        reasons.append(f"a block of {longest} instructions")
    return tuple(reasons)


def _longest_block(kernel: ir.Kernel, cfg=None) -> int:
    """The most instructions in one basic block as ptxas schedules it: a label that nothing
    names (Triton's ``$L__tmp`` debug-line labels) ends no block (model 10,
    :func:`~.labels.named_labels`)."""
    body = kernel.body or ()
    named = named_labels(body)
    if all(s.name in named for s in body if isinstance(s, ir.Label)):
        return max((len(b) for b in (cfg or build_cfg(kernel)).blocks), default=0)
    longest = run = 0
    for s in body:
        if isinstance(s, ir.Instruction):
            run += 1
            if s.family in TERMINATORS:
                longest, run = max(longest, run), 0
        elif isinstance(s, ir.Label) and s.name in named:
            longest, run = max(longest, run), 0
    return max(longest, run)


def kernel_budget(kernel: ir.Kernel, target: str | int = "sm_80") -> int:
    """:func:`occupancy_budget` for ``kernel``'s launch bounds (``.reqntid``/``.maxntid``,
    ``.minnctapersm``), if it declares any."""
    d = dict(kernel.directives or ())
    ntid = d.get(".reqntid") or d.get(".maxntid")
    minimum = d.get(".minnctapersm")
    threads = math.prod(int(x) for x in ntid) if ntid else None
    return occupancy_budget(target, threads, int(minimum[0]) if minimum and threads else None)


def predict_registers(kernel: ir.Kernel, *, live_units: int | None = None,
                      holes: int = HOLES, target: str | int = "sm_80",
                      max_body: int = MAX_BODY, cfg=None) -> Prediction:
    """Predict ptxas's (whole-program) register count for ``kernel`` from its PTX alone.

    ``live_units`` is the PTX live count when the caller has it (the pressure report's
    ``peak.units``); it is computed otherwise.  ``target`` and the kernel's launch bounds set
    the occupancy budget the schedule works to (:func:`kernel_budget`); ``max_body`` is the
    longest branch body that is predicated (:data:`~.ifconvert.MAX_BODY`); ``cfg`` is the
    kernel's control-flow graph when the caller has it (its liveness's ``cfg``).
    """
    if live_units is None:
        live_units = _peak(kernel)[0]
    view = sass_view(kernel)
    view_liveness = analyze_liveness(view.kernel)
    folded = view_liveness.peak_units()[0]  # max(series("at")), without the series
    budget = kernel_budget(kernel, target)
    room = budget - FIXED_OVERHEAD - holes  # 32-bit units the values may take
    if folded < room and (cfg is None or cfg.loops):  # below the budget: warp-uniform values
        uni = sass_view(kernel, kinds=KINDS + ("warp-uniform",), cfg=cfg,  # in loops
                       base=view)  # (model 8)
        if uni.folded.get("warp-uniform"):
            view, view_liveness = uni, analyze_liveness(uni.kernel)
            folded = view_liveness.peak_units()[0]
    elif folded >= room:  # above the budget: uniform loads move to uniform registers (model 7)
        uni = sass_view(kernel, kinds=KINDS + ("uniform",), base=view)
        if uni.folded.get("uniform"):
            view, view_liveness = uni, analyze_liveness(uni.kernel)
            folded = view_liveness.peak_units()[0]
    taken = folded - live_units  # the no-register values' component, before the forms below
    forms = sass_forms(view.kernel)  # IADD3 and vector shared loads (model 11)
    if forms is not None:
        view = SassView(kernel=forms[0], folded=view.folded)
        view_liveness = analyze_liveness(view.kernel)
        folded = view_liveness.peak_units()[0]
    view, view_liveness, folded, converted, n_if, n_div = _converted(
        kernel, view, view_liveness, folded, max_body)
    converted, n_unrolled = unroll_loops(converted) if folded < room else (converted, 0)  # m. 13
    # one liveness of the converted kernel for the schedule and the squeeze below
    conv_liveness = analyze_liveness(converted) if n_if or n_unrolled else view_liveness
    # the schedule's peak is capped at the budget below it and at the PTX order's above it;
    # below the budget a peak up to ``folded`` gives ``folded``: blocks that cannot pass it
    # need no schedule
    scheduled = list_schedule(converted, room, stop_at=max(room, folded),
                              liveness=conv_liveness,
                              floor=folded if folded < room else 0).peak
    deep = out_of_depth(kernel, cfg)
    if folded < room:
        scheduled = max(folded, min(scheduled, room))
        why = (f"{n_if} short branch{'es' if n_if != 1 else ''} predicated; blocks list "
               f"scheduled for latency up to the occupancy budget ({budget} on {target})")
    else:
        scheduled = min(scheduled, folded)
        why = (f"{n_if} short branch{'es' if n_if != 1 else ''} predicated; above the "
               f"occupancy budget ({budget} on {target}) blocks list scheduled for pressure")
        if scheduled > room > 0 and not deep:  # no room at all: nothing fits
            order = bottom_up_peak(converted, conv_liveness)
            if order <= room + SQUEEZE_SLACK:
                scheduled = room
                why += (f"; squeezed to the budget: a bottom-up order keeps {order} units "
                        f"live (at most the room, {room}, + {SQUEEZE_SLACK})")
    why += _forms_detail(forms, n_div, n_unrolled)
    kinds = ", ".join(f"{n} {_KIND_WORDS[k]}" for k, n in sorted(view.folded.items()))
    comps = [
        Component(name="ptx live", registers=live_units,
                  detail="most 32-bit units live at once in the PTX order"),
        Component(name="no-register values", registers=taken,
                  detail=f"values SASS keeps out of registers ({kinds or 'none'})"),
        Component(name="scheduling", registers=scheduled - live_units - taken, detail=why),
        Component(name="fixed overhead", registers=FIXED_OVERHEAD,
                  detail="R1 (the stack pointer) and the 2 the count adds above the highest "
                  "register"),
        _holes(scheduled, holes),
    ]
    total = sum(c.registers for c in comps)
    slow = _division_slow_path(view_liveness)
    if slow is not None:
        floor, op, across = slow
        comps.append(Component(name="division slow path", registers=max(0, floor - total),
                               detail=f"{op}: ptxas calls a slow-path subroutine of "
                               f"{DIVISION_SLOW_PATH[op]} registers; {across} units live across "
                               "it sit above them"))
        total = max(total, floor)
    callees = call_targets(kernel)
    if callees:
        lift = max(0, CALL_FLOOR - total)
        more = ", ..." if len(callees) > 3 else ""
        comps.append(Component(name="call ABI", registers=lift,
                               detail=f"calls {', '.join(callees[:3])}{more}: the calling "
                               f"convention gives at least {CALL_FLOOR}"))
        total += lift
    if total > REGISTER_LIMIT:
        comps.append(Component(name="register limit", registers=REGISTER_LIMIT - total,
                               detail=f"ptxas assigns at most {REGISTER_LIMIT} and rematerialises "
                               "or spills the rest"))
        total = REGISTER_LIMIT
    warpgroups = _setmaxnreg(kernel)
    if warpgroups is not None and warpgroups[0]:
        most = warpgroups[1]   # the occupancy budget of the bounds, capped by the largest .inc
        share = budget if most is None else min(budget, most)
        comps.append(Component(name="setmaxnreg", registers=share - total,
                               detail="warpgroups set their own counts (setmaxnreg): ptxas gives "
                               "the kernel what its launch bounds allow, at most the largest "
                               ".inc"))
        total = share
    band = DEEP_BAND if deep else BAND
    low = max(1, math.floor(total * band[0]))
    high = min(REGISTER_LIMIT, max(total, math.ceil(total * band[1])))
    return Prediction(registers=total, low=min(low, total), high=high, components=tuple(comps),
                      out_of_depth=deep)


def _converted(kernel: ir.Kernel, view: SassView, view_liveness, folded: int,
               max_body: int) -> tuple:
    """The view's short branches predicated (:func:`~.ifconvert.if_convert`), then its integer
    divisions given their SASS temporaries (model 12; after the if-conversion, whose bodies
    count the PTX's instructions): (view, its liveness, its peak, the converted kernel, the
    branches predicated, the divisions expanded)."""
    converted, n_if = if_convert(view.kernel, max_body)
    divisions = division_results(kernel)
    expanded, n_div = expand_divisions(view.kernel, divisions) if divisions else (view.kernel, 0)
    if n_div:
        view = SassView(kernel=expanded, folded=view.folded)
        view_liveness = analyze_liveness(view.kernel)
        folded = view_liveness.peak_units()[0]
        converted = expand_divisions(converted, divisions)[0] if n_if else expanded
    return view, view_liveness, folded, converted, n_if, n_div


def _forms_detail(forms, n_div: int, n_unrolled: int = 0) -> str:
    """What the scheduling component says of the SASS forms read into the view and the loops
    unrolled (model 13)."""
    why = ""
    if n_unrolled:
        why += (f"; {n_unrolled} loop{'s' if n_unrolled != 1 else ''} unrolled x{UNROLL} as "
                "ptxas does (a literal step)")
    if n_div:
        why += (f"; {n_div} integer division{'s' if n_div != 1 else ''} by a variable computed "
                "inline, with the temporaries of its SASS sequence")
    if forms is not None and forms[1]["vector loads"]:
        why += (f"; {forms[1]['loads']} shared loads issued as {forms[1]['vector loads']} "
                "vector loads")
    return why


def _setmaxnreg(kernel: ir.Kernel) -> tuple[bool, int | None] | None:
    """None for a kernel that runs no ``setmaxnreg``; else (whether its launch bounds are
    complete: ``.maxntid`` or ``.reqntid``, and ``.minnctapersm``; its largest
    ``setmaxnreg.inc``, None without one).  Under complete bounds whole-program ptxas 13.5
    gives such a kernel the occupancy budget of those bounds, capped by that ``.inc``,
    whatever its body needs (measured on sm_90a; docs/prediction.md, "setmaxnreg"): 384
    threads x 1 block: 168 (inc 232), 104 (inc 104), 168 (dec 40 only); 256 x 1: 232 (inc
    232), 255 (dec only); 512 x 1: 96 (inc 96); 192 x 2: 168.  Without ``.minnctapersm``
    ptxas counts the body as usual."""
    runs, incs = False, []
    for i in kernel.instructions:
        if i.family == "setmaxnreg":
            runs = True
            if i.opcode.startswith("setmaxnreg.inc") and i.operands \
                    and isinstance(i.operands[0], ir.Immediate):
                incs.append(int(i.operands[0].value))
    if not runs:
        return None
    d = dict(kernel.directives or ())
    complete = bool(d.get(".minnctapersm") and (d.get(".maxntid") or d.get(".reqntid")))
    return complete, max(incs, default=None)


def _division_slow_path(lv) -> tuple[int, str, int] | None:
    """(floor, opcode, units live across it) for the IEEE division in liveness ``lv`` (of the
    view) whose slow path needs the most: :data:`DIVISION_SLOW_PATH` plus the general units
    live before and after it (not its operands or result); None without such a division."""
    at = [i for i, inst in enumerate(lv.cfg.instructions) if inst.opcode in DIVISION_SLOW_PATH]
    if not at:
        return None
    before, after = lv.live_sets(at, "before"), lv.live_sets(at, "after")
    regs = lv.registers
    best = None
    for i in at:
        across = sum(max(regs[r].units, 1) for r in set(before[i]) & set(after[i])
                     if not regs[r].type.is_pred)
        op = lv.cfg.instructions[i].opcode
        if best is None or DIVISION_SLOW_PATH[op] + across > best[0]:
            best = (DIVISION_SLOW_PATH[op] + across, op, across)
    return best


def _holes(scheduled: int, holes: int) -> Component:
    """The allocation holes: ``holes``, or :data:`SMALL_HOLES` for a small kernel (a scheduled
    peak of at most :data:`SMALL_PEAK` units) when ``holes`` is the default."""
    if scheduled <= SMALL_PEAK and holes == HOLES:
        return Component(name="allocation holes", registers=SMALL_HOLES,
                         detail=f"a small kernel (at most {SMALL_PEAK} units live) packs its "
                         "registers: fewer holes")
    return Component(name="allocation holes", registers=holes,
                     detail="64-bit values in even-aligned pairs, 128-bit in aligned quads, "
                     "unpacked low registers (training-split median)")
