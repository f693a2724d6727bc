"""Text rendering for :mod:`ptxforge.analysis` and :mod:`ptxforge.variants` (aligned tables)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

from ._text import clip as _clip
from ._text import plural as _plural
from ._text import table

if TYPE_CHECKING:  # pragma: no cover
    from .analysis import KernelAnalysis, ModuleAnalysis, OccupancyReport

__all__ = ["table", "percent", "change", "KEY_ROWS", "SELP_ROWS", "render_kernel",
           "render_module", "render_occupancy"]

#: The instruction counts of the seeds' hand-made tables: (label, prefixes summed).
KEY_ROWS = (
    ("fma", ("fma",)),
    ("selp", ("selp",)),
    ("setp", ("setp",)),
    ("ld.global", ("ld.global",)),
    ("st.global", ("st.global",)),
    ("ld.shared", ("ld.shared",)),
    ("st.shared", ("st.shared",)),
    ("ld.local", ("ld.local",)),
    ("st.local", ("st.local",)),
    ("atom/red", ("atom", "red")),
    ("bra", ("bra",)),
    ("call", ("call",)),
)

#: selp operand-kind rows: (label, attribute of ``SelpBreakdown``), the same counts as the
#: JSON's ``mix.selp``.  The unindented rows are exclusive and sum to the total; the indented
#: one is the part of "literal and register" whose literal is 0.
SELP_ROWS = (
    ("two literals", "literal_pair"),
    ("literal and register (incl. zero-clip)", "literal_register"),
    ("  of which zero-clip (literal 0)", "zero_clip"),
    ("two registers", "register_pair"),
)


def percent(x: Optional[float]) -> str:
    """``0.6667`` → ``66.7%``; None → ``-``."""
    return "-" if x is None else f"{x * 100:.1f}%"


def change(a: Optional[float], b: Optional[float]) -> str:
    """Relative change from ``a`` to ``b`` as the seeds write it: ``+281%``, ``-39%``, ``same``,
    ``new`` (from 0), ``-`` when either side is missing."""
    if a is None or b is None:
        return "-"
    if a == b:
        return "same"
    if a == 0:
        return "new"
    pct = (b - a) * 100.0 / a
    return f"{pct:+.0f}%" if abs(pct) >= 10 else f"{pct:+.1f}%"


def selp_value(selp, attr: str) -> int:
    """A selp category count (the field of the same name in the JSON)."""
    return getattr(selp, attr)


def selp_type_value(counts: dict, attr: str) -> int:
    """The same for one entry of ``SelpBreakdown.by_type``."""
    return counts[attr]


def key_count(mix, prefixes: Sequence[str]) -> int:
    """Sum of :meth:`InstructionMix.count` over prefixes."""
    return sum(mix.count(p) for p in prefixes)


def _cut(items: Sequence, top: int) -> Sequence:
    return items if top <= 0 else items[:top]


def _cliff_line(c) -> str:
    """One sentence on the register cliffs."""
    parts = []
    if c.to_gain is not None:
        parts.append(f"{c.to_gain} fewer registers ({c.registers - c.to_gain}) give "
                     f"{c.next_blocks} blocks/SM")
    else:
        parts.append("fewer registers gain no block")
    if c.headroom is None:
        parts.append("no register count up to 255 loses a block")
    else:
        parts.append(f"{c.headroom + 1} more registers ({c.registers + c.headroom + 1}) "
                     f"lose a block")
    return "register cliffs: " + "; ".join(parts)


def render_kernel(k: "KernelAnalysis", top: int = 10) -> str:
    """One kernel's section of the ``analyze`` report."""
    mix, r, s = k.mix, k.pressure, k.stats
    kind = ".entry" if k.is_entry else ".func"
    lines = [f"== {k.name} ({kind}) ==",
             f"{_plural(mix.instructions, 'instruction')}; virtual registers: "
             f"{sum(mix.vregs.values()):,}"
             + (" (" + ", ".join(f".{t} {n:,}" for t, n in mix.vregs.items()) + ")"
                if mix.vregs else ""),
             ""]
    oe, op = k.occupancy_estimate, k.occupancy
    dash = None
    na = "n/a"
    rows = [
        ("registers (32-bit)", r.peak.units, s.registers if s else dash),
        ("predicates", r.pred_peak.units, dash),
        ("spill stores (bytes)", dash, s.spill_stores if s else dash),
        ("spill loads (bytes)", dash, s.spill_loads if s else dash),
        ("stack frame (bytes)", dash, s.stack_frame if s else dash),
    ]
    if op is None:
        rows += [("blocks/SM", na, na if s else dash), ("occupancy", na, na if s else dash)]
    else:
        rows += [
            ("blocks/SM", oe.active_blocks, op.active_blocks if s else dash),
            ("occupancy", percent(oe.occupancy), percent(op.occupancy) if s else dash),
            ("limited by", ",".join(oe.limiting), ",".join(op.limiting) if s else dash),
        ]
    lines.append(f"resources ({k.arch}, {k.block_size} threads/block"
                 + (f", {op.shared_per_block} bytes shared" if op and op.shared_per_block else "")
                 + ("" if s else "; ptxas not run") + "):")
    lines += table(("", "estimate", "ptxas"), rows)
    if op is None:
        lines.append(f"  occupancy n/a: {k.occupancy_note}")
    elif not op.launchable:
        lines.append(f"  cannot launch at {k.block_size} threads/block: {op.reason}")
    else:
        lines.append("  " + _cliff_line(k.cliffs)
                     + (" (at ptxas's count)" if s else " (at the estimate)"))
    cmp = k.comparison
    if cmp is not None and cmp.notes(general=False):
        lines.append(f"why ptxas differs from the estimate ({cmp.difference:+d} registers; "
                     "general reasons: docs/compile.md):")
        lines += [f"  - {note}" for note in cmp.notes(general=False)]
    lines.append("")

    lines.append("key instructions:")
    lines += table(("instruction", "count"),
                   [(label, key_count(mix, pre)) for label, pre in KEY_ROWS])
    ops = list(mix.by_opcode.items())
    shown = _cut(ops, top)
    lines.append("")
    lines.append(f"opcodes (top {len(shown)} of {len(ops)}):" if len(shown) < len(ops)
                 else f"opcodes ({len(ops)}):")
    total = mix.instructions or 1
    lines += table(("opcode", "count", "%"), [(o, n, percent(n / total)) for o, n in shown])
    sel = mix.selp
    if sel.total:
        types = list(sel.by_type)
        lines.append("")
        lines.append(f"selp by operand kind ({sel.total:,} selp):")
        rows = [(label, selp_value(sel, attr), percent(selp_value(sel, attr) / sel.total),
                 *[selp_type_value(sel.by_type[t], attr) for t in types])
                for label, attr in SELP_ROWS]
        lines += table(("kind", "count", "%", *[f"selp.{t}" for t in types]), rows)

    lines.append("")
    p = r.peak
    if p.index is None:
        lines.append("peak pressure: no instructions")
        return "\n".join(lines) + "\n"
    lines.append(f"peak pressure: {p.units:,} general registers (32-bit units) at instruction "
                 f"{p.index}" + (f", reached at {len(p.indices):,} instructions"
                                 if len(p.indices) > 1 else ""))
    lines.append(f"  {p.index}: {p.instruction}")
    pp = r.pred_peak
    lines.append(f"  live there: {_plural(len(p.values), 'value')}"
                 + (" (" + ", ".join(f"{c} {n:,}" for c, n in p.by_class) + ")"
                    if p.by_class else "")
                 + (f"; predicates peak at {pp.units} (instruction {pp.index})"
                    if pp.units else "; no predicates live"))
    vals = _cut(p.values, top)
    if vals:
        lines.append("")
        lines.append(f"values live at the peak ({len(vals)} of {len(p.values)}, "
                     "longest-lived first):")
        rows = []
        for v in vals:
            src = v.loc or "?"
            if v.function:
                src += f" ({v.function})"
            rows.append((v.name, v.type, v.units, v.def_index, v.last_use, v.live_length, src,
                         _clip(v.def_text or "(never defined)", 44)))
        lines += table(("value", "type", "units", "def", "last use", "live", "source",
                        "definition"), rows, {2, 3, 4, 5})
    groups = _cut(p.by_source, top)
    if groups and any(g.file is not None for g in p.by_source):
        lines.append("")
        lines.append(f"live at the peak by source line ({len(groups)} of {len(p.by_source)}):")
        rows = [(g.units, g.count, g.loc + (f" ({g.function})" if g.function else ""),
                 _clip(", ".join(g.names), 40)) for g in groups]
        lines += table(("units", "values", "source", "registers"), rows, {0, 1})
    elif p.values:
        lines.append("  (no source lines: compile with -lineinfo to attribute values)")
    return "\n".join(lines) + "\n"


def render_module(m: "ModuleAnalysis", top: int = 10) -> str:
    """The ``analyze`` report: header, a summary row per kernel, then each kernel."""
    head = (f"{m.file}: PTX {m.ptx_version} for {m.ptx_target}; analysed for {m.arch} at "
            f"{m.block_size} threads/block; "
            + (f"ptxas via {m.backend}" if m.compiled else "ptxas not run"))
    lines = [head, ""]
    rows, why = [], []
    for k in m.kernels:
        s, o = k.stats, k.occupancy
        rows.append((k.name, k.mix.instructions, k.pressure.peak.units,
                     s.registers if s else None,
                     f"{s.spill_stores}/{s.spill_loads}" if s else None,
                     s.stack_frame if s else None, "n/a" if o is None else o.active_blocks,
                     "n/a" if o is None else percent(o.occupancy)))
        if o is None:
            why.append(f"  {k.name}: occupancy n/a: {k.occupancy_note}")
        elif not o.launchable:
            why.append(f"  {k.name}: cannot launch at {k.block_size} threads/block: {o.reason}")
    lines += table(("kernel", "instructions", "estimate", "ptxas", "spill st/ld", "stack",
                    "blocks/SM", "occupancy"), rows)
    lines += why
    out = "\n".join(lines) + "\n"
    for k in m.kernels:
        out += "\n" + render_kernel(k, top)
    return out


def render_occupancy(rep: "OccupancyReport") -> str:
    """The ``occupancy`` report."""
    o, c = rep.occupancy, rep.cliffs
    lines = [f"{o.arch}: {o.registers} registers/thread, {o.block_size} threads/block, "
             f"{o.shared_per_block} bytes shared/block",
             f"  blocks/SM   {o.active_blocks}",
             f"  warps/SM    {o.active_warps} of {o.max_warps}",
             f"  occupancy   {percent(o.occupancy)}",
             f"  limited by  {', '.join(o.limiting) or '-'}",
             *([] if o.launchable else [f"  cannot launch: {o.reason}"]),
             "  limits (blocks/SM): " + ", ".join(
                 f"{name} {'-' if v is None else v}"
                 for name, v in o.to_dict()["limits"].items()),
             "  " + _cliff_line(c), "",
             "register plateaus (highest register count of each):"]
    warps = -(-o.block_size // 32)
    lines += table(("max registers", "blocks/SM", "occupancy"),
                   [(r, b, percent(b * warps / o.max_warps)) for r, b in c.steps])
    return "\n".join(lines) + "\n"
