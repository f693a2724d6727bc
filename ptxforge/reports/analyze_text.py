"""Text rendering for :mod:`ptxforge.reports.analyze` and :mod:`ptxforge.reports.variants`.

Aligned tables and prose wrapped at 100 columns (:mod:`ptxforge._text`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional, Sequence

from ptxforge._text import cap_list as _cap_list
from ptxforge._text import clip as _clip
from ptxforge._text import plural as _plural
from ptxforge._text import short_loc as _short_loc
from ptxforge._text import short_path as _short_path
from ptxforge._text import table, wrap
from ptxforge.ptx.demangle import display_name

from .analyze_compile import SUMMARY_ABOVE
from .names import short_label as _short_label
from .names import short_labels, title_lines
from .resources import stack_text

if TYPE_CHECKING:  # pragma: no cover
    from .analyze import KernelAnalysis, ModuleAnalysis
    from .occupancy_sweep import OccupancyReport

__all__ = ["table", "percent", "change", "KEY_ROWS", "GENERIC_ROWS", "SELP_ROWS", "cliff_line",
           "prediction_lines", "render_kernel", "render_module", "render_occupancy",
           "compiler_text"]

#: The instruction counts of the seeds' hand-made tables: (label, prefixes summed).
KEY_ROWS = (
    ("fma", ("fma",)),
    ("selp", ("selp",)),
    ("setp", ("setp",)),
    ("ld.global", ("ld.global",)),
    ("cp.async global→shared", ("cp.async.global_to_shared",)),
    ("st.global", ("st.global",)),
    ("ld.shared", ("ld.shared",)),
    ("st.shared", ("st.shared",)),
    ("ld.local", ("ld.local",)),
    ("st.local", ("st.local",)),
    ("atom/red", ("atom", "red")),
    ("bra", ("bra",)),
    ("call", ("call",)),
)

#: Loads and stores with no state space (``ld.f32``, as numba and generic pointers give):
#: (label, opcode) rows of the key-instruction table after ``st.global``.
GENERIC_ROWS = (("ld (generic)", "ld"), ("st (generic)", "st"))

_SPACES = ("global", "shared", "local", "param", "const", "tex")


def generic_count(mix, op: str) -> int:
    """How many ``op`` (``ld`` or ``st``) instructions name no state space (generic addressing).

    Example::

        >>> from types import SimpleNamespace
        >>> generic_count(SimpleNamespace(by_opcode={"ld.f32": 3, "ld.global.f32": 2,
        ...                                          "ld.volatile.u32": 1, "ldu.f32": 4}), "ld")
        4
    """
    return sum(n for name, n in mix.by_opcode.items()
               if name.split(".")[0] == op
               and not any(part.split("::")[0] in _SPACES for part in name.split(".")[1:]))


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


def _blocks(n) -> str:
    """``1 block/SM``, ``3 blocks/SM``."""
    return f"{n} block/SM" if n == 1 else f"{n} blocks/SM"


def cliff_line(c, over: int = 0) -> str:
    """One sentence on the register cliffs (``over``: registers the estimate needs beyond
    the limit ``c.registers`` it is clamped to)."""
    parts = []
    if c.to_gain is not None:
        parts.append(f"{_plural(c.to_gain, 'fewer register')} ({c.registers - c.to_gain}) "
                     f"{'gives' if c.to_gain == 1 else 'give'} {_blocks(c.next_blocks)}"
                     + (f", {c.to_gain + over} below the estimate" if over else ""))
    else:
        parts.append("fewer registers gain no block")
    if over:
        pass  # at the limit already: no register count above it
    elif c.headroom is None:
        parts.append("no register count up to 255 loses a block")
    else:
        n = c.headroom + 1
        parts.append(f"{_plural(n, 'more register')} ({c.registers + n}) "
                     f"{'loses' if n == 1 else 'lose'} a block")
    head = (f"register cliffs at {c.registers}, the limit (the estimate is {over} over it): "
            if over else "register cliffs: ")
    return head + "; ".join(parts)


_SOURCES = {".reqntid": "its .reqntid", ".maxntid": "its .maxntid"}


def _resources_title(k: "KernelAnalysis") -> str:
    op = k.occupancy
    if not k.is_entry:
        return (f"resources ({k.arch}; a .func is not launched: no block size"
                + ("" if k.stats else "; ptxas: no code for this function" if k.stats_note
                   else "; ptxas not run") + "):")
    text = f"resources ({k.arch}, {k.block_size} threads/block"
    if k.block_source in _SOURCES:
        text += f" from {_SOURCES[k.block_source]}"
    if op is not None and op.shared_per_block:
        text += f", {op.shared_per_block:,} bytes shared"
        if k.dynamic_shared:
            text += f" ({k.dynamic_shared:,} dynamic)"
    elif k.dynamic_shared:
        text += f", {k.dynamic_shared:,} bytes dynamic shared"
    if k.stats is None:
        text += "; ptxas: no code for this function" if k.stats_note else "; ptxas not run"
    return text + "):"


def _resource_rows(k: "KernelAnalysis") -> list:
    r, s, lim = k.pressure, k.stats, k.register_limit
    oe, op = k.occupancy_estimate, k.occupancy
    rows = [
        ("registers (32-bit)", r.peak.units, s.registers if s else None),
        (f"utilization (of {lim})", percent(r.peak.units / lim),
         percent(s.registers / lim) if s else None),
        ("predicates", r.pred_peak.units, None),
        ("spill stores (bytes)", None, s.spill_stores if s else None),
        ("spill loads (bytes)", None, s.spill_loads if s else None),
        ("stack (bytes)", None, stack_text(s) if s else None),
    ]
    if s is not None and s.callees:   # the kernel's own figures beside the call graph's
        own = [("registers", s.body_registers, s.registers),
               ("spill stores", s.body_spill_stores, s.spill_stores),
               ("spill loads", s.body_spill_loads, s.spill_loads),
               ("stack frame", s.body_stack_frame, s.stack_frame)]
        rows += [(f"  {what}, own body" + ("" if what == "registers" else " (bytes)"), None, mine)
                 for what, mine, total in own if mine is not None and mine != total]
    if s is not None and s.register_cap is not None:
        rows.append(("register cap", None, f"{s.register_cap} ({s.register_cap_source})"
                     if s.register_cap_source else s.register_cap))
    if k.local_bytes:
        rows.append(("local arrays in the PTX (bytes)", k.local_bytes, None))
    if k.constant_bank0 is not None:
        rows.append(("constant bank 0 (bytes)", None, k.constant_bank0))
        if k.param_bytes is not None:
            rows.append(("  of which parameters", None, k.param_bytes))
    if op is None:
        na = "n/a"
        rows += [("blocks/SM", na, na if s else None), ("occupancy", na, na if s else None)]
    else:
        assert oe is not None   # known whenever the occupancy is (KernelAnalysis)
        rows += [
            ("blocks/SM", oe.active_blocks, op.active_blocks if s else None),
            ("occupancy", percent(oe.occupancy), percent(op.occupancy) if s else None),
            ("limited by", ",".join(oe.limiting), ",".join(op.limiting) if s else None),
        ]
    return rows


def _compile_lines(s) -> list:
    """What the table cannot say: the calls behind the figures, an unbounded stack, a
    requested cap that did not apply."""
    if s is None:
        return []
    out = []
    if s.callees:
        one = len(s.callees) == 1
        out += wrap(f"calls {_plural(len(s.callees), 'function')}: "
                    + _cap_list([_short_label(display_name(c), 60) for c in s.callees], 4)
                    + f"; registers, spills and stack cover {'it' if one else 'them'}",
                    indent="  ", subsequent="    ")
    if not s.stack_known:
        out += wrap(f"stack: at least {s.stack_frame} bytes: the call graph recurses, so "
                    "ptxas cannot bound it (each recursive function counted once)",
                    indent="  ", subsequent="    ")
    if s.register_cap_note:
        out += wrap(f"register cap: {s.register_cap_note}", indent="  ", subsequent="    ")
    return out


def _short_words(text: str, width: int = 60) -> str:
    """``text`` with each word longer than ``width`` (a long mangled name) cut in the middle,
    so that prose wraps within the page."""
    return " ".join(_short_label(w, width) for w in text.split(" "))


def _para(text: str) -> list:
    """An indented sentence of a kernel's section, wrapped at 100 columns."""
    return wrap(text, indent="  ", subsequent="    ")


def _title(k: "KernelAnalysis") -> list:
    return title_lines(k.demangled, ".entry" if k.is_entry else ".func", k.name)


_BY_HEADING = {"line": "source line", "function": "function", "callsite": "call site"}


def _peak_groups(k: "KernelAnalysis", top: int, by: str) -> list:
    """The table of the values live at the peak grouped ``by``."""
    p = k.pressure.peak
    if by == "line":
        groups = _cut(p.by_source, top)
        if groups and any(g.file is not None for g in p.by_source):
            rows = [(g.units, g.count, _short_loc(g.loc + (f" ({display_name(g.function)})"
                                                           if g.function else ""), 56),
                     _clip(", ".join(g.names), 40)) for g in groups]
            return ["", f"live at the peak by source line ({len(groups)} of "
                        f"{len(p.by_source)}; PTX view: where .loc defines each value):",
                    *table(("units", "values", "source", "registers"), rows, {0, 1},
                           width=100, shrink=(3, (2, _short_loc))), *_sass_peak_lines(k, top)]
        return ["  (no source lines: compile with -lineinfo to attribute values)"]
    all_groups = k.groups(by)
    groups = _cut(all_groups, top)
    if by == "callsite" and not any(g.file for g in all_groups):
        return ["  (no source lines: compile with -lineinfo to attribute values)"]
    rows = [(g.units, g.count, _clip(g.label, 60), _clip(", ".join(g.names), 40))
            for g in groups]
    return ["", f"live at the peak by {_BY_HEADING[by]} ({len(groups)} of {len(all_groups)}):",
            *table(("units", "values", _BY_HEADING[by], "registers"), rows, {0, 1},
                   width=100, shrink=(3, 2))]


def _sass_peak_lines(k: "KernelAnalysis", top: int) -> list:
    """The SASS peak's registers by the source line of the value each holds (the machine
    code's view of the peak), when the kernel was compiled and its SASS traced."""
    gap = k.gap if k.stats is not None else None
    if gap is None or not any(not label.startswith("(") for label, _ in gap.peak_lines):
        return []
    groups = gap.peak_lines if top <= 0 else gap.peak_lines[:top]
    rows = [(n, _short_loc(label, 80)) for label, n in groups]
    return ["", f"live at the SASS peak ({gap.sass_peak} registers) by the line of each value "
                f"({len(groups)} of {len(gap.peak_lines)}; machine code):",
            *table(("registers", "source"), rows, {0}, width=100)]


def prediction_lines(pred, live: int, ptxas=None, mode: Optional[str] = None) -> list:
    """The prediction of ptxas's count and its components, beside the live count (and
    ptxas's count when compiled); [] without a prediction.  For a relocatable build
    (``mode``) the line says which build the prediction is for (one without ``-rdc``) and
    names the model alone."""
    if pred is None:
        return []
    rdc = mode == "relocatable"
    what = "relocatable ptxas" if rdc else "ptxas"
    beside = f"; live count {live}" + (f"; {what} {ptxas} ({ptxas - pred.registers:+d})"
                                       if ptxas is not None else "")
    model = pred.model.split(" (", 1)[0] if rdc else pred.model
    rows = [(f"{c.registers:+d}" if k else str(c.registers), c.name, _short_words(c.detail))
            for k, c in enumerate(pred.components)]
    deep = getattr(pred, "out_of_depth", ())
    depth = f"; out of its depth: {', '.join(deep)}" if deep else ""
    return [*wrap(f"predicted ptxas count: {pred.registers} registers (likely {pred.low}-"
                  f"{pred.high}{', for a build without -rdc' if rdc else ''}{depth}){beside}; "
                  f"{model}"),
            *table(("registers", "component", "why"), rows, {0}, width=100, wrap_last=True)]


def render_kernel(k: "KernelAnalysis", top: int = 10, by: str = "line",
                  mode: Optional[str] = None) -> str:
    """One kernel's section of the ``analyze`` report (``mode``: the build's, as
    :func:`prediction_lines` takes it)."""
    mix, r, s = k.mix, k.pressure, k.stats
    lines = [*_title(k),
             *wrap(f"{_plural(mix.instructions, 'instruction')}; virtual registers: "
                   f"{sum(mix.vregs.values()):,}"
                   + (" (" + ", ".join(f".{t} {n:,}" for t, n in mix.vregs.items()) + ")"
                      if mix.vregs else "")),
             ""]
    op = k.occupancy
    lines += wrap(_resources_title(k))
    lines += table(("", "estimate", "ptxas"), _resource_rows(k), width=100, shrink=(2,))
    if k.stats_note:
        lines += _para(f"ptxas: {k.stats_note}")
    lines += _compile_lines(s)
    if op is None:
        lines += _para(f"occupancy n/a: {k.occupancy_note}")
    elif not op.launchable:
        lines += _para(f"cannot launch at {k.block_size} threads/block: {op.reason}")
    else:
        over = k.over_limit if s is None else 0
        lines += _para(cliff_line(k.cliffs, over)
                       + (" (at ptxas's count)" if s else "" if over else " (at the estimate)"))
    lines += prediction_lines(k.prediction, k.pressure.peak.units, s.registers if s else None,
                              mode)
    if k.mode_note:   # relocatable: how far from whole-program, and the helper calls why
        lines += wrap(k.mode_note)
    if k.over_limit:
        lines += wrap(f"warning: {k.notes()[0]}")
    cmp = k.comparison
    if cmp is not None and cmp.notes(general=False):
        lines.append(f"why ptxas differs from the estimate ({cmp.difference:+d} registers; "
                     "general reasons: docs/compile.md):")
        for note in cmp.notes(general=False):
            lines += wrap(note, indent="  - ", subsequent="    ")
    lines.append("")

    lines.append("key instructions:")
    rows = [(label, key_count(mix, pre)) for label, pre in KEY_ROWS]
    at = next(i for i, (label, _) in enumerate(KEY_ROWS) if label == "st.global") + 1
    rows[at:at] = [(label, generic_count(mix, op)) for label, op in GENERIC_ROWS]
    lines += table(("instruction", "count"), rows)
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
        selp_rows = [(label, selp_value(sel, attr),
                      percent(selp_value(sel, attr) / sel.total),
                      *[selp_type_value(sel.by_type[t], attr) for t in types])
                     for label, attr in SELP_ROWS]
        lines += table(("kind", "count", "%", *[f"selp.{t}" for t in types]), selp_rows)

    lines.append("")
    p = r.peak
    if p.index is None:
        lines.append("peak pressure: no instructions")
        return "\n".join(lines) + "\n"
    lines += wrap(f"peak pressure: {p.units:,} general registers (32-bit units) at instruction "
                  f"{p.index}" + (f", reached at {len(p.indices):,} instructions"
                                  if len(p.indices) > 1 else ""))
    lines.append(_clip(f"  {p.index}: {p.instruction}", 100))
    pp = r.pred_peak
    lines += _para(f"live there: {_plural(len(p.values), 'value')}"
                   + (" (" + ", ".join(f"{c} {n:,}" for c, n in p.by_class) + ")"
                      if p.by_class else "")
                   + (f"; predicates peak at {pp.units} (instruction {pp.index})"
                      if pp.units else "; no predicates live"))
    vals = _cut(p.values, top)
    if vals:
        lines.append("")
        lines.append(f"values live at the peak ({len(vals)} of {len(p.values)}, "
                     "longest-lived first):")
        value_rows = []
        for v in vals:
            src = v.loc or "?"
            if v.function:
                src += f" ({display_name(v.function)})"
            src = _short_loc(src, 48)
            value_rows.append((v.name, v.type, v.units, v.def_index, v.last_use, v.live_length, src,
                         _clip(v.def_text or "(never defined)", 44)))
        lines += table(("value", "type", "units", "def", "last use", "live", "source",
                        "definition"), value_rows, {2, 3, 4, 5}, width=100,
                       shrink=(7, (6, _short_loc), 0))
    if p.values:
        lines += _peak_groups(k, top, by)
    lines += _timeline_and_loops(k, top)
    return "\n".join(lines) + "\n"


def _timeline_and_loops(k: "KernelAnalysis", top: int, width: int = 72) -> list:
    """The sparkline of the live count per instruction and the per-loop table."""
    r = k.pressure
    n = len(r.timeline)
    if not n:
        return []
    step = max(1, -(-n // width))
    out = ["", *wrap(f"timeline (live units per instruction, {_plural(step, 'instruction')} "
                     f"per column, the most of each; peak {r.peak.units} at {r.peak.index}):"),
           "  " + r.sparkline(width)]
    if r.loops:
        loops = _cut(r.loops, top)
        out += ["", *wrap(f"loops ({len(loops)} of {len(r.loops)}; live-in: units live on "
                          "entry; carried: redefined in the loop):")]
        rows = [(lp.name, lp.depth, len(lp.blocks), lp.live_in, lp.carried, lp.peak,
                 lp.peak_index, _clip(", ".join(v.name for v in lp.values), 30))
                for lp in loops]
        out += table(("header", "depth", "blocks", "live-in", "carried", "peak", "at",
                      "longest-lived at its peak"), rows, {1, 2, 3, 4, 5, 6}, width=100,
                     shrink=(7, 0))
    return out


_ARCH_SOURCES = {"given": "", "target": " (from .target)", "default": " (default)"}


def _header(m: "ModuleAnalysis") -> list:
    own = [k for k in m.kernels if k.block_source in _SOURCES]
    blocks = f"{m.block_size} threads/block"
    if len(own) == 1:
        k = own[0]
        blocks += f" ({_short_label(display_name(k.name), 40)}: {k.block_size}, " \
                  f"{_SOURCES[k.block_source]})"
    elif own:
        sizes = sorted({k.block_size for k in own})
        which = "/".join(sorted({k.block_source for k in own}))
        blocks += (f" ({len(own)} kernels at their own {which}: "
                   + (str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]} to {sizes[-1]}")
                   + ")")
    head = (f"{_short_path(m.file, 40)}: PTX {m.ptx_version} for {m.ptx_target}; "
            f"analysed for {m.arch}"
            f"{_ARCH_SOURCES.get(m.arch_source, '')} at {blocks}"
            + (f", {m.dynamic_shared:,} bytes dynamic shared" if m.dynamic_shared else "")
            + "; " + compiler_text(m))
    # wrapped at 100 columns; the parts that grow (path, names, tool) are shortened too
    return [*wrap(head, subsequent="    "), *[x for n in m.notes for x in wrap(f"note: {n}")]]


def compiler_text(m: "ModuleAnalysis") -> str:
    """What compiled ``m``, as report headers name it: ``ptxas 13.5 (…/bin/ptxas),
    whole-program``, or ``ptxas not run``."""
    return _short_tool(_tool(m)) if m.compiled else "ptxas not run"


def _short_tool(text: str) -> str:
    """``ptxas 13.5 (/very/long/path/bin/ptxas)`` with the path shortened from the left."""
    return re.sub(r"\((/[^)]*)\)", lambda mt: f"({_short_path(mt.group(1), 24)})", text)


def _tool(m: "ModuleAnalysis") -> str:
    """``ptxas via nvjitlink (nvJitLink 13.5)`` or ``ptxas 12.9 (/path/to/ptxas)``."""
    mode = f", {m.mode}" if getattr(m, "mode", None) else ""
    if not m.tool:
        return f"ptxas via {m.backend}{mode}"
    if m.tool.startswith("ptxas"):
        return m.tool + mode
    return f"ptxas via {m.backend} ({m.tool}){mode}"


def _stack_cell(k: "KernelAnalysis"):
    if k.stats is not None:
        return stack_text(k.stats)
    return f"{k.local_bytes} (PTX)" if k.local_bytes else None


def render_module(m: "ModuleAnalysis", top: int = 10, by: str = "line",
                  summary: bool | None = False) -> str:
    """The ``analyze`` report: header, a summary row per kernel, then each kernel
    (``summary=True``: the rows only; None: the rows only above :data:`SUMMARY_ABOVE`
    kernels, with a note saying so)."""
    lines = [*_header(m), ""]
    rows, why = [], []
    names = [display_name(k.name) for k in m.kernels]
    for k, name in zip(m.kernels, names):
        s, o = k.stats, k.occupancy
        rows.append((name, k.mix.instructions, k.pressure.peak.units,
                     None if k.prediction is None else k.prediction.registers,
                     s.registers if s else None,
                     f"{s.spill_stores}/{s.spill_loads}" if s else None,
                     _stack_cell(k), "n/a" if o is None else o.active_blocks,
                     "n/a" if o is None else percent(o.occupancy)))
        label = _short_label(name, 60)
        if k.over_limit:
            why.append(f"{label}: the estimate is {k.over_limit} over the "
                       f"{k.register_limit}-register limit: ptxas must reorder or spill")
        if o is None and k.is_entry:
            why.append(f"{label}: occupancy n/a: {k.occupancy_note}")
        elif o is not None and not o.launchable:
            why.append(f"{label}: cannot launch at {k.block_size} threads/block: {o.reason}")
    header = ("kernel", "instrs", "estimate", "predicted", "ptxas", "spill st/ld", "stack",
              "blk/SM", "occup.")
    probe = table(header, [("",) + r[1:] for r in rows])
    room = max(24, 100 - max(len(x) for x in probe) + len(header[0]))
    labels = short_labels(names, room)
    lines += table(header, [(label,) + r[1:] for label, r in zip(labels, rows)])
    lines += wrap("instrs: PTX instructions; estimate: most live registers (32-bit units); "
                  "predicted: ptxas's count as predicted; spill st/ld, stack: bytes; "
                  "blk/SM, occup.: blocks per SM and occupancy" +
                  (" at ptxas's count" if m.compiled else " at the estimate"),
                  indent="  ", subsequent="  ")
    for text in why:
        lines += wrap(text, indent="  ", subsequent="    ")
    auto = summary is None and len(m.kernels) > SUMMARY_ABOVE
    if auto:
        lines += wrap(f"note: {len(m.kernels)} kernels, so one line each (more than "
                      f"{SUMMARY_ABOVE}); --full prints every kernel, --kernel NAME one")
    out = "\n".join(lines) + "\n"
    if summary or auto:
        return out
    for k in m.kernels:
        out += "\n" + render_kernel(k, top, by, getattr(m, "mode", None))
    return out


def render_occupancy(rep: "OccupancyReport") -> str:
    """The ``occupancy`` report."""
    o, c = rep.occupancy, rep.cliffs
    lines = [*wrap(f"{rep.arch or o.arch}: {o.registers} registers/thread, {o.block_size} "
                   f"threads/block, {o.shared_per_block} bytes shared/block"),
             f"  blocks/SM   {o.active_blocks}",
             f"  warps/SM    {o.active_warps} of {o.max_warps}",
             f"  occupancy   {percent(o.occupancy)}",
             f"  limited by  {', '.join(o.limiting) or '-'}",
             *([] if o.launchable else _para(f"cannot launch: {o.reason}")),
             *_para("limits (blocks/SM): " + ", ".join(
                 f"{name} {'-' if v is None else v}"
                 for name, v in o.to_dict()["limits"].items())),
             *_para(cliff_line(c)), "",
             "register plateaus (highest register count of each):"]
    warps = -(-o.block_size // 32)
    lines += table(("max registers", "blocks/SM", "occupancy"),
                   [(r, b, percent(b * warps / o.max_warps)) for r, b in c.steps])
    return "\n".join(lines) + "\n"
