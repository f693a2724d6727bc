"""Why ptxas's count differs from the PTX estimate, split into reasons that add up exactly.

``gap = REGCOUNT - estimate`` (the PTX liveness peak, 32-bit units).  With the SASS traced
(:mod:`ptxforge.reports.sass_trace`), every register of the gap has a reason, computed from
facts of the compiled code:

* ``fixed overhead``: the 2 registers REGCOUNT carries above the highest one used, and R1
  (the stack pointer) when it is live at the SASS peak;
* ``call-graph floor``: REGCOUNT above that when a callee needs more;
* ``alignment holes``: registers below the highest used that are not live at the SASS peak;
* ``ABI call clobbers``: registers a CALL at the SASS peak may overwrite;
* ``ptxas-made values``: temporaries ptxas made inside one PTX line (addresses, steps of a
  multi-instruction operation);
* ``unroll copies`` / ``extra copies``: more than one register holding the same PTX value
  (copies from unrolling a loop, or versions ptxas kept);
* ``kept longer``: PTX values the SASS holds at its peak that the PTX has dead at the same
  PTX line (hoisted loads, values kept longer);
* ``folded away`` (negative): values the PTX counts live at that line that no SASS register
  ever holds (constant offsets, parameters read from the constant bank);
* ``not live here`` (negative): values the PTX counts at that line that the SASS holds
  elsewhere (scheduled later, rematerialised);
* ``peak elsewhere`` (negative): the PTX line of the SASS peak has fewer live PTX values than
  the PTX peak;
* ``not traced``: whatever is left (registers live with no known value), named as such.

Example::

    >>> g = explain_gap(kernel_report, trace, liveness)    # doctest: +SKIP
    >>> [(r.reason, r.registers) for r in g.reasons]          # doctest: +SKIP
    [('fixed overhead', 3), ('ABI call clobbers', 13), ('folded away', -4)]
"""

from __future__ import annotations

from collections import Counter

import attrs

from ptxforge.arch.ptxas_model import REGCOUNT_RESERVED
from ptxforge.ptx.opcodes import MemoryAccess, opcode_of

__all__ = ["REASONS", "Gap", "GapEffect", "GapReason", "explain_gap"]

#: Every reason, in the order reports list them.
REASONS = ("fixed overhead", "call-graph floor", "alignment holes", "ABI call clobbers",
           "ptxas-made values", "unroll copies", "extra copies", "kept longer",
           "folded away", "not live here", "peak elsewhere", "not traced")

_WHY = {
    "fixed overhead": f"REGCOUNT is the highest register used + 1, plus {REGCOUNT_RESERVED}; "
                      "R1 is the stack pointer",
    "call-graph floor": "a function the kernel calls needs more registers",
    "alignment holes": "registers below the highest one, not live at the SASS peak (64-bit "
                       "values take aligned pairs)",
    "ABI call clobbers": "at the CALL the callee may overwrite these (the call ABI)",
    "ptxas-made values": "values ptxas made inside one PTX line (addresses, intermediate "
                         "steps), with no PTX register",
    "unroll copies": "the same PTX value held in several registers: ptxas unrolled its loop",
    "extra copies": "the same PTX value held in several registers (versions ptxas kept)",
    "kept longer": "PTX values live in the SASS at its peak but dead in the PTX there "
                   "(loads hoisted, values kept longer)",
    "folded away": "PTX values live there that no SASS register ever holds (constant "
                   "offsets, parameters folded into instructions)",
    "not live here": "PTX values live there that the SASS computes later or recomputes",
    "peak elsewhere": "the SASS peak is at another point than the PTX peak, with fewer PTX "
                      "values live there",
    "not traced": "registers live at the SASS peak whose value could not be traced",
}


@attrs.frozen(slots=True, kw_only=True)
class GapReason:
    """One part of the gap: a reason, its registers (negative: the estimate counts more) and
    what it means."""

    reason: str
    registers: int
    detail: str = ""

    def to_dict(self) -> dict:
        return {"reason": self.reason, "registers": self.registers, "detail": self.detail}


@attrs.frozen(slots=True, kw_only=True)
class GapEffect:
    """A net effect of the gap in plain words: ``effect`` (``"schedule"``, ``"folded"``,
    ``"copies"``, ``"bookkeeping"``, ``"peak elsewhere"``, ``"not traced"``), its net
    ``registers`` (the sum of ``parts``, the signed reasons it nets) and the sentence."""

    effect: str
    registers: int
    text: str
    parts: tuple = ()          # ((reason, registers), ...)

    def to_dict(self) -> dict:
        return {"effect": self.effect, "registers": self.registers, "text": self.text,
                "parts": [{"reason": r, "registers": n} for r, n in self.parts]}


#: Which reasons each net effect sums (:meth:`Gap.effects`).
_EFFECTS = (("schedule", ("kept longer", "not live here")),
            ("folded", ("folded away",)),
            ("copies", ("unroll copies", "extra copies")),
            ("bookkeeping", ("fixed overhead", "call-graph floor", "alignment holes",
                             "ABI call clobbers", "ptxas-made values")),
            ("peak elsewhere", ("peak elsewhere",)),
            ("not traced", ("not traced",)))


def _short(effect: str, net: int, g) -> str:
    """A net effect in a word or two, by its sign (:meth:`Gap.headline`)."""
    if effect == "schedule":
        if net < 0:
            return "rematerialised"
        return "kept longer (loads hoisted)" if g.kept_loads else "kept longer"
    return {"folded": "folded", "copies": "copies", "bookkeeping": "overhead"}.get(effect,
                                                                                  effect)


@attrs.frozen(slots=True, kw_only=True)
class Gap:
    """REGCOUNT − estimate and its reasons (non-zero ones, :data:`REASONS` order); they sum
    to ``total`` exactly."""

    regcount: int
    estimate: int
    reasons: tuple
    #: ((source line, registers), …): the SASS peak's registers by the source line of the value
    #: each holds (:meth:`~ptxforge.reports.sass_trace.KernelTrace.peak_groups`), most first
    peak_lines: tuple = ()
    sass_peak: int = 0
    #: of the ``kept longer`` values, those a PTX load (``ld.*``, ``tex``…) defines
    kept_loads: int = 0
    #: the SASS peak lies in a loop: (unroll, depth) of the innermost one (unroll None: no
    #: SASS loop holds its lines), else None
    peak_loop: tuple | None = None

    @property
    def total(self) -> int:
        return self.regcount - self.estimate

    def get(self, reason: str) -> int:
        return sum(r.registers for r in self.reasons if r.reason == reason)

    def to_list(self) -> list:
        return [r.to_dict() for r in self.reasons]

    def effects(self) -> tuple:
        """The reasons netted into what they mean (:class:`GapEffect` s, largest first, zero
        nets left out unless their parts offset): ``kept longer`` with ``not live here`` is
        what ptxas's schedule does, the copies, the bookkeeping registers that hold no value.

        Example::

            >>> g = Gap(regcount=40, estimate=30, reasons=(GapReason(reason="kept longer",
            ...         registers=14), GapReason(reason="not live here", registers=-4)),
            ...         kept_loads=9)
            >>> g.effects()[0].text[:60]
            'ptxas keeps 10 more values live at its peak than the PTX ord'
            >>> g.effects()[0].text[77:]
            ": 14 kept longer (9 loaded values: loads hoisted; 5 computed values kept longer), 4 of the PTX's live values computed later or rematerialised"
        """
        out = []
        got = {r.reason: r.registers for r in self.reasons}
        for effect, reasons in _EFFECTS:
            parts = tuple((r, got[r]) for r in reasons if got.get(r))
            if not parts:
                continue
            net = sum(n for _, n in parts)
            out.append(GapEffect(effect=effect, registers=net, parts=parts,
                                 text=_effect_text(effect, net, dict(parts), self)))
        out.sort(key=lambda e: (-abs(e.registers), [x for x, _ in _EFFECTS].index(e.effect)))
        return tuple(out)

    def headline(self) -> str:
        """The whole gap in one sentence: ptxas's count against the PTX's live count."""
        t = self.total
        if t == 0:
            return (f"ptxas needs as many registers as the PTX's live count ({self.regcount}); "
                    "the effects below offset each other")
        more = "more" if t > 0 else "fewer"
        nets = ", ".join(f"{_short(e.effect, e.registers, self)} {e.registers:+d}"
                         for e in self.effects() if e.registers)
        return (f"ptxas needs {abs(t)} {more} registers than the PTX's live count "
                f"({self.regcount} against {self.estimate})" + (f": {nets}" if nets else ""))

    def notes(self) -> tuple:
        """One sentence per reason, largest first, for ``analyze`` and ``compare``."""
        out = []
        for r in sorted(self.reasons, key=lambda r: (-abs(r.registers), REASONS.index(r.reason))):
            out.append(f"{r.registers:+d} {r.reason}: {r.detail or _WHY[r.reason]}.")
        return tuple(out)


def _loop_words(g: Gap) -> str:
    if g.peak_loop is None:
        return ""
    unroll, depth = g.peak_loop
    nest = f" (loop depth {depth})" if depth > 1 else ""
    rolled = f" unrolled {unroll}x" if unroll and unroll > 1 else ""
    return f" across the loop{rolled}{nest} that holds the SASS peak"


def _effect_text(effect: str, net: int, parts: dict, g: Gap) -> str:
    """The plain-words sentence of one net effect."""
    n = abs(net)
    if effect == "schedule":
        kept, gone = parts.get("kept longer", 0), -parts.get("not live here", 0)
        other = kept - g.kept_loads
        why = "; ".join(([f"{g.kept_loads} loaded values: loads hoisted"] if g.kept_loads
                         else []) + ([f"{other} computed values kept longer"] if other else []))
        bits = ([f"{kept} kept longer ({why})"] if kept else []) + (
            [f"{gone} of the PTX's live values computed later or rematerialised"]
            if gone else [])
        if net > 0 and not gone and g.kept_loads == kept:
            return (f"ptxas keeps {kept} loaded values live{_loop_words(g)}: loads hoisted "
                    "(issued early to hide their latency)")
        if net > 0:
            lead = (f"ptxas keeps {n} more values live at its peak than the PTX order has "
                    f"live there{_loop_words(g)}")
        elif net == 0:
            lead = "ptxas's schedule moves values without changing the count"
        else:
            lead = (f"ptxas holds {n} fewer of the PTX's live values at its peak"
                    f"{_loop_words(g)}: values rematerialised or computed later")
        return f"{lead}: {', '.join(bits)}"
    if effect == "folded":
        return (f"{n} values the PTX counts need no register: constant offsets and "
                "parameters folded into the instructions")
    if effect == "copies":
        if "unroll copies" in parts:
            return (f"ptxas holds {n} values in more than one register: copies made by "
                    "unrolling a loop")
        return f"ptxas holds {n} values in more than one register (versions it kept)"
    if effect == "bookkeeping":
        what = ", ".join(f"{v} {k}" for k, v in parts.items())
        return f"{n} registers hold no value of yours: {what}"
    if effect == "peak elsewhere":
        side = "fewer" if net < 0 else "more"
        return (f"the SASS peak is at another point of the kernel, where the PTX has {n} "
                f"{side} values live than at its own peak")
    return f"{n} registers live at the SASS peak could not be traced to a value"


def _is_load(ins) -> bool:
    """A memory load (the opcode table's MemoryAccess), parameters (the constant bank) not."""
    op = opcode_of(ins.opcode)
    acc = op.info.get(MemoryAccess) if op.info is not None else None
    return acc is not None and acc.direction == "load" and op.space != "param"


def _load_defined(liveness) -> set:
    """PTX register names a load defines somewhere in the kernel."""
    out: set = set()
    if liveness is None:
        return out
    for ins, defs in zip(liveness.cfg.instructions, liveness.instruction_defs):
        if _is_load(ins):
            out |= {liveness.register(d).name for d in defs}
    return out


def _peak_loop(trace, peak: int) -> tuple | None:
    """(unroll, depth) of the innermost PTX loop whose SASS instructions reach ``peak``."""
    inner = [lp for lp in trace.loops if lp.peak >= peak > 0]
    if not inner:
        return None
    lp = max(inner, key=lambda x: (x.depth, -(x.ptx_lines[1] - x.ptx_lines[0])))
    return (lp.unroll, lp.depth)


def _live_units(liveness, index: int | None) -> tuple:
    """(units live at PTX instruction ``index``, {(name, unit)}) from the PTX liveness."""
    if liveness is None or index is None:
        return 0, set()
    pairs = set()
    for x in liveness.live_at(index, "at"):
        reg = liveness.register(x)
        if reg.type.name != "pred":
            pairs |= {(reg.name, u) for u in range(reg.type.units)}
    return len(pairs), pairs


def explain_gap(report, trace, liveness=None,
                span_reserved: int = REGCOUNT_RESERVED) -> Gap | None:
    """The gap of a :class:`~ptxforge.reports.sass.SassKernelReport` (with its estimate and
    REGCOUNT) explained from its :class:`~ptxforge.reports.sass_trace.KernelTrace` and the
    kernel's PTX :class:`~ptxforge.analysis.liveness.Liveness` (None, or a SASS peak outside
    the kernel's own PTX lines: the PTX side is not compared there, and ``peak elsewhere``
    holds the whole difference)."""
    if report.estimate is None or report.regcount is None:
        return None
    est, regcount, span = report.estimate.registers, report.regcount, report.span
    peak = report.sass_peak
    parts: Counter = Counter()
    above = regcount - span
    parts["fixed overhead"] += min(above, span_reserved)
    if above > span_reserved:
        parts["call-graph floor"] += above - span_reserved
    parts["alignment holes"] += span - peak
    kinds = Counter(v.kind for v in trace.peak_values)
    parts["fixed overhead"] += kinds.get("stack pointer", 0)
    parts["ABI call clobbers"] += kinds.get("call clobber", 0)
    parts["ptxas-made values"] += kinds.get("temporary", 0)
    loops_unrolled = any((lp.unroll or 1) > 1 for lp in trace.loops)
    held: dict = {}
    for v in trace.peak_values:
        if v.kind in ("ptx", "merged"):
            key = (v.ptx, v.unit)
            held[key] = held.get(key, 0) + 1
    copies = sum(n - 1 for n in held.values())
    parts["unroll copies" if loops_unrolled else "extra copies"] += copies
    n_live, l_pairs = _live_units(liveness, trace.peak_ptx_index)
    kept_loads = 0
    if liveness is None or trace.peak_ptx_index is None:
        parts["peak elsewhere"] += len(held) - est
    else:
        merged_ok = set()
        for (name, unit) in held:        # a merged register counts for whichever is live
            for n in name.split("|"):
                if (n, unit) in l_pairs:
                    merged_ok.add((n, unit))
                    break
        in_both = len(merged_ok)
        parts["kept longer"] += len(held) - in_both
        loaded = _load_defined(liveness)
        kept_loads = sum(1 for (name, unit) in held
                         if not any((n, unit) in l_pairs for n in name.split("|"))
                         and any(n in loaded for n in name.split("|")))
        missing = l_pairs - merged_ok
        folded = sum(1 for p in missing if p in trace.folded)
        parts["folded away"] -= folded
        parts["not live here"] -= len(missing) - folded
        parts["peak elsewhere"] += n_live - est
    accounted = sum(parts.values())
    parts["not traced"] += (regcount - est) - accounted
    why = dict(_WHY)
    plus = min(max(above, 0), span_reserved)
    if plus < span_reserved:   # a subroutine compiled into the kernel holds the top register
        why["fixed overhead"] = (f"REGCOUNT is the highest register used + 1, plus {plus} (a "
                                 "subroutine ptxas compiled into the kernel holds the highest "
                                 f"register: its code gets no +{REGCOUNT_RESERVED}); R1 is the "
                                 "stack pointer")
    reasons = tuple(GapReason(reason=r, registers=parts[r], detail=why[r])
                    for r in REASONS if parts.get(r))
    return Gap(regcount=regcount, estimate=est, reasons=reasons,
               peak_lines=trace.peak_groups("line"), sass_peak=peak, kept_loads=kept_loads,
               peak_loop=_peak_loop(trace, peak))
