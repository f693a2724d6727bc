"""The ``ptxforge occupancy`` and ``ptxforge sweep`` reports.

JSON of the sweep (``"schema": "ptxforge.sweep/1"``)::

    schema, file, arch, block_size, dynamic_shared, backend, tool, tool_version, mode,
    kernels: [KERNEL + {sweep: {kernel, target, block_size, backend, …, notes: [str],
                                rows: [ROW]}}]
    ROW = {cap, registers, spill_stores, spill_loads, stack, blocks_per_sm, occupancy,
           limiter, limiters, reason, stack_frame, limiting, …}

(``…``: the further keys of :meth:`ptxforge.toolchain.sweep.Sweep.to_dict`; ``notes`` adds a note
when ptxas used more registers than a cap, e.g. its lower bound of 24.)  ``recommended`` and
``recommended_with_spills`` of a cap carry ``lever``, ``levers``, ``promise`` and ``dropped``:
the change that takes effect for the kernel, proven by a compile
(:mod:`ptxforge.reports.levers`).

``stack``/``limiter``/``limiters`` are the words ``analyze`` uses; ``stack_frame`` and
``limiting`` are the same values under their first names, kept so that programs reading
``sweep/1`` keep working (no schema bump: the change only adds keys).

Example::

    >>> r = occupancy_report("sm_86", 51, 256)
    >>> r.occupancy.active_blocks, round(r.occupancy.occupancy * 100, 1)
    (4, 66.7)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Union

import attrs

from ptxforge._text import wrap
from ptxforge.arch.occupancy import (
    Occupancy,
    RegisterCliffs,
    arch_props,
    occupancy,
    register_cliffs,
)
from ptxforge.arch.spec import LaunchSpec, launch_spec
from ptxforge.errors import PtxforgeError

from .analyze_text import render_occupancy

if TYPE_CHECKING:  # sweep_report imports analyze when it runs
    from .analyze import ModuleAnalysis

__all__ = ["SWEEP_SCHEMA", "PTXAS_CAP_FLOOR", "ROW_LEGEND", "CapChoice", "OccupancyReport",
           "SweepReport", "cap_notes", "occupancy_report", "recommend_cap",
           "proven_recommendation", "recommendation_lines", "sweep_report"]

SWEEP_SCHEMA = "ptxforge.sweep/1"
#: The lowest --maxrregcount ptxas honours: a smaller cap is raised to it (measured with
#: nvJitLink 13.5 on sm_75, sm_80, sm_86, sm_90, sm_100 and sm_120: "adjusting per thread
#: register count of 16 to lower bound of 24"; tests/reports/test_analyze_reports.py pins it).
PTXAS_CAP_FLOOR = 24


@attrs.frozen(slots=True, kw_only=True)
class OccupancyReport:
    """``ptxforge occupancy``: occupancy at a register count and the cliffs around it.
    ``arch`` is the target as named (``sm_90a``; the occupancy itself is per compute
    capability)."""

    occupancy: Occupancy
    cliffs: RegisterCliffs
    arch: Optional[str] = None

    def to_dict(self) -> dict:
        """JSON-ready dict: the occupancy keys plus ``arch`` and ``cliffs``."""
        from .analyze import occupancy_fields

        c = self.cliffs
        return {"arch": self.arch or self.occupancy.arch, **occupancy_fields(self.occupancy),
                "limits": self.occupancy.to_dict()["limits"],
                "cliffs": {"to_gain": c.to_gain, "next_blocks": c.next_blocks,
                           "headroom": c.headroom,
                           "steps": [{"max_registers": r, "blocks_per_sm": b}
                                     for r, b in c.steps]}}

    def to_text(self) -> str:
        """Readable summary with the per-resource limits and the register plateaus."""
        return render_occupancy(self)


def occupancy_report(target: Union[str, int], registers: int, block: int, smem: int = 0
                     ) -> OccupancyReport:
    """Occupancy of ``registers`` per thread at ``block`` threads with ``smem`` bytes of
    shared memory per block, and the register cliffs.  ``arch`` is checked like every
    command's (:func:`ptxforge.reports.analyze.check_target`: ``sm_90a`` yes, ``sm_80a`` no).

    Example::

        >>> occupancy_report("sm_90a", 32, 128).arch
        'sm_90a'
    """
    from .analyze import check_target

    name = check_target(target, compile=False)
    props = arch_props(name)
    if not isinstance(registers, int) or not 0 <= registers <= props.max_regs_per_thread:
        raise PtxforgeError(f"registers must be an int in 0..{props.max_regs_per_thread}, "
                            f"got {registers!r}")
    if not isinstance(block, int) or not 1 <= block <= props.max_threads_per_block:
        raise PtxforgeError(f"block size must be an int in 1..{props.max_threads_per_block}, "
                            f"got {block!r}")
    occ = occupancy(registers, block, props, shared=smem)
    return OccupancyReport(occupancy=occ,
                           cliffs=register_cliffs(registers, block, props, shared=smem), arch=name)


def cap_notes(sweep) -> tuple:
    """Notes on the rows of a :class:`~ptxforge.toolchain.sweep.Sweep` over their cap:
    ptxas's lower bound (caps below :data:`PTXAS_CAP_FLOOR`), or a cap that did not bind."""
    over = [r for r in sweep.rows if r.cap is not None and r.registers is not None
            and r.registers > r.cap]
    floor = [r for r in over if r.cap < PTXAS_CAP_FLOOR]
    out = []
    if floor:
        caps = ", ".join(str(r.cap) for r in floor)
        regs = ", ".join(sorted({str(r.registers) for r in floor}, key=int))
        out.append(f"{'cap' if len(floor) == 1 else 'caps'} {caps}: ptxas used {regs} "
                   f"registers, more than the cap: ptxas raises a cap below "
                   f"{PTXAS_CAP_FLOOR} to {PTXAS_CAP_FLOOR}, its lower bound (its log: "
                   f"'adjusting per thread register count of {floor[-1].cap} to lower bound "
                   f"of {PTXAS_CAP_FLOOR}')")
    for r in over:
        if r.cap >= PTXAS_CAP_FLOOR:
            out.append(f"cap {r.cap}: ptxas used {r.registers} registers, more than the cap"
                       + (f" ({r.note})" if getattr(r, "note", None) else ""))
    return tuple(out)


@attrs.frozen(slots=True, kw_only=True)
class CapChoice:
    """A recommended register cap: ``cap`` None means no cap (the uncapped compile);
    ``spill`` is spill stores + loads in bytes; ``budget`` the spill budget it was chosen under
    (0: no spills allowed)."""

    cap: Optional[int]
    registers: int
    occupancy: float
    blocks_per_sm: int
    spill: int
    budget: int

    def to_dict(self) -> dict:
        return {"cap": self.cap, "registers": self.registers,
                "occupancy": round(self.occupancy, 6), "blocks_per_sm": self.blocks_per_sm,
                "spill_bytes": self.spill, "budget": self.budget}

    def text(self) -> str:
        """One sentence: the cap, what it gives, under which budget."""
        cap = "no cap" if self.cap is None else f"cap {self.cap}"
        how = ("with no spills" if self.budget == 0 else
               f"with {self.spill} bytes of spills (budget {self.budget})")
        blocks = "block" if self.blocks_per_sm == 1 else "blocks"
        return (f"{cap}: {self.registers} registers, {self.blocks_per_sm} {blocks}/SM, "
                f"{self.occupancy * 100:.1f}% occupancy {how}")


def recommend_cap(sweep, spill_budget: int = 0) -> Optional[CapChoice]:
    """The row of ``sweep`` with the most occupancy whose spill bytes (stores + loads) are at
    most ``spill_budget``; among equal occupancy the uncapped compile, then the one with the
    most registers.  None when no row compiled with a known occupancy.

    Example::

        >>> from ptxforge.toolchain.sweep import Sweep, SweepRow
        >>> def row(cap, regs, spill, blocks, occ, limiting):
        ...     return SweepRow(cap=cap, registers=regs, spill_stores=spill, spill_loads=spill,
        ...                     stack_frame=spill, blocks_per_sm=blocks, occupancy=occ,
        ...                     limiting=limiting)
        >>> rows = (row(None, 90, 0, 2, 0.5, ("registers",)),
        ...         row(64, 64, 0, 3, 0.75, ("registers",)), row(40, 40, 48, 4, 1.0, ("warps",)))
        >>> s = Sweep(kernel="k", target="sm_80", block_size=256, backend="ptxas", rows=rows)
        >>> recommend_cap(s).cap, recommend_cap(s, spill_budget=128).cap
        (64, 40)
    """
    best = None
    for r in sweep.rows:
        if getattr(r, "status", "ok") != "ok" or r.registers is None or r.occupancy is None:
            continue
        spill = (r.spill_stores or 0) + (r.spill_loads or 0)
        if spill > spill_budget or not r.blocks_per_sm:
            continue
        key = (r.occupancy, r.cap is None, r.registers, r.cap or 0)
        if best is None or key > best[0]:
            best = (key, CapChoice(cap=r.cap, registers=r.registers, occupancy=r.occupancy,
                                   blocks_per_sm=r.blocks_per_sm, spill=spill,
                                   budget=spill_budget))
    return None if best is None else best[1]


def recommendation_lines(sweep, spill_budget: int = 0, *, ptx: Optional[str] = None,
                         request=None, proofs: Optional[dict] = None) -> tuple:
    """The sweep's closing sentences: the cap with the most occupancy and no spills, and
    (when it gives more) the most occupancy with spills within ``spill_budget`` bytes.  With
    the swept ``ptx``, each cap comes with the lever that takes effect for the kernel, proven
    by a compile (:func:`ptxforge.reports.levers.prove_recommendation`); ``proofs`` caches
    them by budget."""
    if recommend_cap(sweep, 1 << 62) is None:
        return ("recommended cap: none (no compile with a known occupancy)",)
    clean = _proven(sweep, 0, ptx, request, proofs)
    out = [f"recommended cap (most occupancy, no spills): {clean.choice.text()}"
           if clean.choice else
           "recommended cap (most occupancy, no spills): none: every compile spills"]
    out += clean.lines()
    if spill_budget > 0:
        spilly = _proven(sweep, spill_budget, ptx, request, proofs)
        c, s = clean.choice, spilly.choice
        if s is not None and (c is None or s.occupancy > c.occupancy):
            out.append(f"with up to {spill_budget} spill bytes: {s.text()}")
            out += spilly.lines()
        else:
            out.append(f"with up to {spill_budget} spill bytes: no cap gains occupancy "
                       "within the budget")
    return tuple(out)


def proven_recommendation(sweep, ptx: str, spill_budget: int = 0, *, request=None):
    """:func:`recommend_cap` of ``sweep`` (a sweep of ``ptx``) with the lever that takes effect
    for the kernel, each lever compiled (:func:`ptxforge.reports.levers.prove_recommendation`;
    a cap no lever delivers is dropped for the next best)."""
    from .levers import prove_recommendation

    return prove_recommendation(sweep, ptx, lambda s: recommend_cap(s, spill_budget),
                                request=request)


def _proven(sweep, budget: int, ptx: Optional[str], request, proofs: Optional[dict]):
    """The recommendation at ``budget``, its levers proven when ``ptx`` is known."""
    from .levers import Recommendation

    if ptx is None:
        return Recommendation(choice=recommend_cap(sweep, budget))
    key = (sweep.kernel, budget)
    if proofs is not None and key in proofs:
        return proofs[key]
    rec = proven_recommendation(sweep, ptx, budget, request=request)
    if proofs is not None:
        proofs[key] = rec
    return rec


#: What the columns of a sweep row mean (printed under each table).
ROW_LEGEND = ("each row is one compile at --maxrregcount=cap (none: uncapped): regs is what "
              "ptxas used, spill st/ld the bytes per thread it stored to and loaded from "
              "local memory, blocks/SM and occupancy follow from regs at the block size, "
              "limited by names the resource that stops one more block")


def _rec_dict(rec) -> Optional[dict]:
    if rec.choice is None:
        return None
    return rec.to_dict() if rec.levers or rec.dropped else rec.choice.to_dict()


def _row_dict(row) -> dict:
    d = row.to_dict()
    limiting = list(d.get("limiting", getattr(row, "limiting", ())))
    d["stack"] = d.get("stack_frame", getattr(row, "stack_frame", None))
    d["limiter"] = limiting[0] if limiting else None
    d["limiters"] = limiting
    return d


@attrs.frozen(slots=True, kw_only=True)
class SweepReport:
    """``ptxforge sweep``: per kernel its analysis (uncapped) and the register-cap sweep."""

    analysis: ModuleAnalysis  # of the uncapped compile
    sweeps: tuple          # one ptxforge.toolchain.sweep.Sweep per kernel of ``analysis``
    spill_budget: int = 0  # spill bytes the second recommendation may spend
    ptx: Optional[str] = attrs.field(default=None, repr=False)  # the levers are proven on it
    request: object = attrs.field(default=None, repr=False)
    proofs: dict = attrs.field(factory=dict, eq=False, repr=False)  # (kernel, budget) -> proof

    def to_dict(self, top: int = 10) -> dict:
        """JSON-ready dict (keys in the module docstring)."""
        a = self.analysis
        kernels = []
        for k, s in zip(a.kernels, self.sweeps):
            sw = s.to_dict()
            sw["rows"] = [_row_dict(r) for r in s.rows]
            sw["notes"] = list(sw.get("notes", ())) + list(cap_notes(s))
            clean = _proven(s, 0, self.ptx, self.request, self.proofs)
            sw["recommended"] = _rec_dict(clean)
            sw["recommended_with_spills"] = (
                None if self.spill_budget == 0 else
                _rec_dict(_proven(s, self.spill_budget, self.ptx, self.request, self.proofs)))
            kernels.append({**k.to_dict(top), "sweep": sw})
        return {"schema": SWEEP_SCHEMA, "file": a.file, "arch": a.arch,
                "block_size": a.block_size, "dynamic_shared": a.dynamic_shared,
                "backend": a.backend, "tool": a.tool, "tool_version": a.tool_version,
                "mode": a.mode, "kernels": kernels}

    def to_text(self) -> str:
        """The sweep tables, one per kernel, with the liveness estimate beside them."""
        parts = []
        for k, s in zip(self.analysis.kernels, self.sweeps):
            lines = s.to_text().splitlines()
            if k.block_source not in ("given", "default"):
                lines.append(f"{k.block_size} threads/block: the kernel's {k.block_source} "
                             "(--block overrides)")
            if k.dynamic_shared:
                lines.append(f"{k.dynamic_shared} bytes of dynamic shared memory per block")
            lines += [f"note: {n}" for n in cap_notes(s)]
            lines.append(ROW_LEGEND if s.cap_method == "--maxrregcount" else
                         ROW_LEGEND.replace("at --maxrregcount=cap", "with '.maxnreg cap' in "
                                            "the kernel's PTX"))
            lines += recommendation_lines(s, self.spill_budget, ptx=self.ptx,
                                          request=self.request, proofs=self.proofs)
            lines.append(f"liveness estimate: {k.estimate.registers} registers (32-bit units), "
                         f"{k.estimate.predicates} predicates"
                         + (f" ({k.over_limit} over the {k.register_limit} a thread can have)"
                            if k.over_limit else ""))
            # every line at most 100 columns: the long ones wrapped with a hanging indent
            parts.append("\n".join(x for line in lines
                                   for x in (wrap(line) if len(line) > 100 else [line])) + "\n")
        return "\n".join(parts)


def sweep_report(text: Union[str, bytes], file: str = "<ptx>",
                 spec: Union[LaunchSpec, str, int, None] = None, *,
                 caps: Optional[Sequence[int]] = None, only_caps: bool = False,
                 kernel: Optional[str] = None, request=None,
                 progress=None) -> SweepReport:
    """Parse, analyse and sweep every selected kernel at the occupancy cliffs of
    :func:`ptxforge.toolchain.sweep.default_caps` plus ``caps``; ``only_caps=True`` sweeps
    ``caps`` alone.  ``spec`` (a :class:`~ptxforge.arch.spec.LaunchSpec`, or a target name)
    defaults as in :func:`~ptxforge.reports.analyze.analyze_module` (the PTX's ``.target``,
    each kernel's ``.reqntid``/``.maxntid``; its ``dynamic_shared`` enters occupancy);
    ``request`` is the :class:`~ptxforge.toolchain.compile.CompileRequest`.  Only ``.entry``
    kernels can be swept (a file of ``.func`` only is an error that names its functions).
    ``progress(i, n, name)`` is called before each kernel.  The report recommends the cap
    with the most occupancy that does not spill; ``attrs.evolve(report, spill_budget=B)``
    adds the one whose spills stay within ``B`` bytes (:func:`recommend_cap`)."""
    from ptxforge.toolchain.compile import CompileRequest
    from ptxforge.toolchain.sweep import sweep

    from .analyze import analyze_ptx

    if only_caps and not caps:
        raise PtxforgeError("sweep: only_caps needs at least one cap")
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    spec, request = launch_spec(spec), request or CompileRequest()
    a = analyze_ptx(text, file, spec, kernel=kernel, request=request)
    chosen, extra = (tuple(caps or ()), ()) if only_caps else (None, tuple(caps or ()))
    sweeps = []
    for n, k in enumerate(a.kernels):
        if progress is not None:   # e.g. the CLI's line on a terminal
            progress(n, len(a.kernels), k.name)
        at = attrs.evolve(spec, target=a.arch, block=k.block_size)
        sweeps.append(sweep(text, k.name, at, caps=chosen, extra_caps=extra, request=request))
    return SweepReport(analysis=a, sweeps=tuple(sweeps), ptx=text, request=request)
