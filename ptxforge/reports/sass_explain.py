"""The explanation part of ``ptxforge sass``: traced peak values, hot lines, loops and gap.

Glue between :mod:`ptxforge.reports.sass_trace` (what each register holds),
:mod:`ptxforge.reports.gap` (why REGCOUNT differs from the estimate) and the report of
:mod:`ptxforge.reports.sass`: :func:`explain_dict` gives the JSON keys ``peak_values``,
``by_line``, ``loops``, ``gap`` (and ``peak_groups``, ``traced``); :func:`explain_text` the
text block, at most 100 columns wide.

Example::

    >>> d = explain_dict(trace, gap)          # doctest: +SKIP
    >>> sorted(d)                              # doctest: +SKIP
    ['by_line', 'gap', 'loops', 'peak_by_callsite', 'peak_by_line', 'peak_values', 'traced']
"""

from __future__ import annotations

from ptxforge._text import clip, table

__all__ = ["explain_dict", "explain_text"]


def explain_dict(trace, gap) -> dict:
    """The JSON keys the issue-14 contract names, plus the peak groups and traced share."""
    if trace is None:
        return {"peak_values": [], "by_line": [], "loops": [], "gap": None,
                "peak_by_line": [], "peak_by_callsite": [], "traced": None}
    return {
        "peak_values": [v.to_dict() for v in trace.peak_values],
        "by_line": [x.to_dict() for x in trace.by_line],
        "loops": [x.to_dict() for x in trace.loops],
        "gap": None if gap is None else gap.to_list(),
        "peak_by_line": [{"source": s, "registers": n} for s, n in trace.peak_groups("line")],
        "peak_by_callsite": [{"callsite": s, "registers": n}
                             for s, n in trace.peak_groups("callsite")],
        "traced": round(trace.traced_fraction, 6),
    }


def explain_text(trace, gap, top: int = 10, sass_peak: int | None = None) -> list:
    """Lines of text: the SASS peak by source line, the heaviest lines, the loops and the gap
    reasons (each table clipped to fit 100 columns)."""
    if trace is None:
        return []
    lines = []
    n = len(trace.peak_values)
    groups = trace.peak_groups("line")
    if groups:
        share = f"{trace.traced_fraction * 100:.0f}% traced to a value"
        lines += ["", (f"SASS peak ({n} registers) by the source line of the value held "
                       f"({share}):")]
        shown = groups if top <= 0 else groups[:top]
        lines += table(("source line of the value", "registers"),
                       [(clip(s, 80), c) for s, c in shown], right={1})
        if len(shown) < len(groups):
            lines.append(f"  … {len(groups) - len(shown)} more lines")
    if trace.by_line:
        shown = trace.by_line if top <= 0 else trace.by_line[:min(top, 5)]
        lines += ["", "heaviest source lines (most GPRs live at one of their instructions):"]
        lines += table(("source line", "max live", "SASS instructions"),
                       [(clip(x.source, 70), x.max_live, x.instructions) for x in shown],
                       right={1, 2})
    if trace.loops:
        lines += ["", "PTX loops:"]
        lines += table(("PTX lines", "SASS peak", "unroll"),
                       [(f"{a}-{b}", lp.peak, "-" if lp.unroll is None else f"x{lp.unroll}")
                        for lp in trace.loops for a, b in [lp.ptx_lines]], right={1, 2})
    if gap is not None:
        lines += ["", (f"gap: REGCOUNT {gap.regcount} - estimate {gap.estimate} = "
                       f"{gap.total:+d} registers:")]
        lines += table(("reason", "registers", "what it is"),
                       [(r.reason, f"{r.registers:+d}", clip(r.detail, 66))
                        for r in gap.reasons], right={1})
    return lines
