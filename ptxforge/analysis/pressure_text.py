"""Text rendering of a :class:`~ptxforge.analysis.pressure.PressureReport` (tables and a sparkline)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ptxforge._text import clip as _clip
from ptxforge._text import plural as _plural
from ptxforge._text import table
from ptxforge.arch.ptxas_model import PREDICATE_FILE

if TYPE_CHECKING:  # pragma: no cover
    from .pressure import LiveValue, PressureReport

__all__ = ["render_text"]


def _table(header: Sequence[str], rows: list, right: set) -> list[str]:
    """The shared table with empty cells for None."""
    return table(header, rows, right, none="")


def _indices(indices: Sequence[int], limit: int = 8) -> str:
    """``3, 7, 9`` or ``3, 7, 9, … (+12 more)``."""
    shown = ", ".join(str(i) for i in indices[:limit])
    if len(indices) > limit:
        shown += f", … (+{len(indices) - limit} more)"
    return shown


def _value_rows(values: Sequence["LiveValue"]) -> list[tuple]:
    """Table rows for live values."""
    rows = []
    for v in values:
        src = v.loc or "?"
        if v.function:
            src += f" ({v.function}"
            src += f", inlined at {v.inlined_at})" if v.inlined_at else ")"
        rows.append((v.name, v.type, v.units, v.def_index if v.def_index is not None else "-",
                     v.last_use if v.last_use is not None else "-", v.live_length, src,
                     _clip(v.def_text or "(never defined)", 48)))
    return rows


_VALUE_HEADER = ("name", "type", "units", "def", "last use", "length", "source", "definition")
_VALUE_RIGHT = {2, 3, 4, 5}


def render_text(report: "PressureReport", *, top: int = 20, width: int = 72) -> str:
    """The report as text: summary, timeline sparkline, peak values, sources, loops, blocks."""
    r = report
    lines = [f"register pressure of {r.kernel}: {_plural(r.n_instructions, 'instruction')}, "
             f"{_plural(r.n_blocks, 'basic block')}, {_plural(len(r.loops), 'loop')}"]
    total = sum(n for _, n in r.registers_by_type)
    per_type = ", ".join(f".{t} {n:,}" for t, n in r.registers_by_type)
    lines.append(f"virtual registers: {total:,}" + (f" ({per_type})" if per_type else ""))
    if r.declared:
        lines.append("declared: " + ", ".join(f".{t} {n:,}" for t, n in r.declared))
    lines.append("")
    p = r.peak
    if p.index is None:
        lines.append("peak: no instructions")
        return "\n".join(lines) + "\n"
    lines.append(f"peak: {p.units:,} general registers (32-bit units) at instruction {p.index}"
                 f" — reached at {_plural(len(p.indices), 'instruction')}: {_indices(p.indices)}")
    lines.append(f"  {p.index}: {p.instruction}")
    if p.by_class:
        lines.append("  live there: " + ", ".join(f"{c} {n:,}" for c, n in p.by_class))
    pp = r.pred_peak
    lines.append(f"predicates: peak {pp.units} at instruction {pp.index}"
                 + (f" ({', '.join(v.name for v in pp.values)})" if pp.values else "")
                 + (f"  — more than the {PREDICATE_FILE} hardware predicates: ptxas will spill them"
                    if pp.units > PREDICATE_FILE else ""))
    cp = [(c, v, i) for c, v, i in r.class_peaks if v]
    if cp:
        lines.append("most values live at once per class: "
                     + ", ".join(f"{c} {v:,} (at {i})" for c, v, i in cp))
    n = len(r.timeline)
    step = max(1, -(-n // max(1, width)))
    lines.append("")
    lines.append(f"timeline (units live at each instruction, {step} instruction(s) per column, max per column):")
    lines.append("  " + r.sparkline(width))
    lines.append("")
    lines.append(f"values live at the peak ({len(p.values):,}, longest-lived first):")
    lines.extend(_table(_VALUE_HEADER, _value_rows(p.values[:top]), _VALUE_RIGHT))
    if len(p.values) > top:
        lines.append(f"  … {len(p.values) - top:,} more")
    if p.by_source:
        lines.append("")
        lines.append("live at the peak by source line:")
        rows: list[tuple] = []
        for g in p.by_source[:top]:
            where = g.loc + (f" ({g.function})" if g.function else "")
            rows.append((g.units, g.count, where, _clip(", ".join(g.names), 40)))
        lines.extend(_table(("units", "values", "source", "registers"), rows, {0, 1}))
        if len(p.by_source) > top:
            lines.append(f"  … {len(p.by_source) - top:,} more lines")
    if r.loops:
        lines.append("")
        lines.append("loops (live-in: units live on entry to the header; carried: redefined in the loop):")
        rows = [(lp.name, lp.depth, len(lp.blocks), lp.live_in, lp.carried, lp.peak, lp.peak_index,
                 _clip(", ".join(v.name for v in lp.values), 36)) for lp in r.loops]
        lines.extend(_table(("header", "depth", "blocks", "live-in", "carried", "peak", "at",
                             "longest-lived at its peak"), rows, {1, 2, 3, 4, 5, 6}))
    if r.n_blocks > 1:
        lines.append("")
        ranked = sorted(r.blocks, key=lambda b: (-b.peak, b.index))[:min(top, 10)]
        lines.append(f"basic blocks (top {len(ranked)} by peak):")
        rows = [(b.name, f"{b.start}..{b.end - 1}", b.live_in, b.live_out, b.peak, b.peak_index, b.pred_peak)
                for b in ranked]
        lines.extend(_table(("block", "instructions", "live-in", "live-out", "peak", "at", "pred regs"),
                            rows, {2, 3, 4, 5, 6}))
    if r.graph is not None:
        graph = r.graph
        lines.append("")
        truncated = ", truncated" if graph["truncated"] else ""
        lines.append(f"interference graph: {graph['nodes']:,} nodes, {graph['edges']:,} edges "
                     f"(budget {graph['max_edges']:,}{truncated})")
        rows = []
        for c in graph["classes"]:
            if not c["nodes"] and c["scope"] == "full":
                continue
            win = f" {c['window'][0]}..{c['window'][1]}" if c["window"] else ""
            rows.append((c["reg_class"], c["scope"] + win, c["nodes"], c["edges"], c["colors"],
                         f"{c['max_clique']}" + ("" if c["max_clique_exact"] else " (lower bound)")))
        lines.extend(_table(("class", "scope", "nodes", "edges", "colours", "max clique"), rows, {2, 3, 4}))
    return "\n".join(lines) + "\n"
