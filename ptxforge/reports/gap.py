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

__all__ = ["REASONS", "Gap", "GapReason", "explain_gap"]

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

    @property
    def total(self) -> int:
        return self.regcount - self.estimate

    def get(self, reason: str) -> int:
        return sum(r.registers for r in self.reasons if r.reason == reason)

    def to_list(self) -> list:
        return [r.to_dict() for r in self.reasons]

    def notes(self) -> tuple:
        """One sentence per reason, largest first, for ``analyze`` and ``compare``."""
        out = []
        for r in sorted(self.reasons, key=lambda r: (-abs(r.registers), REASONS.index(r.reason))):
            out.append(f"{r.registers:+d} {r.reason}: {r.detail or _WHY[r.reason]}.")
        return tuple(out)


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
               peak_lines=trace.peak_groups("line"), sass_peak=peak)
