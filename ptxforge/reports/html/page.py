"""The HTML page: header, the sortable kernel index, and one section per kernel.

:func:`render_page` writes one self-contained document from :class:`~.data.KernelView`\\ s:
the stylesheet and script inline (:mod:`.assets`), charts as inline SVG (:mod:`.svg`), no
``src`` or ``href`` that leaves the page (links are ``#anchors``).

Example::

    >>> html = render_page("demo.ptx", ["sm_80"], [])
    >>> html.startswith("<!DOCTYPE html>"), "http" in html
    (True, False)
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from ptxforge._text import short_path

from .assets import SCRIPT, STYLE, heat_color
from .data import HEAT_CLASSES, heat_classes
from .svg import Frame, line_chart

__all__ = ["render_kernel", "render_page"]


def _pct(x) -> str:
    return "–" if x is None else f"{x * 100:.1f}%"


def _v(x) -> str:
    return "–" if x is None else f"{x:,}" if isinstance(x, int) else escape(str(x))


def _card(label: str, value, detail: str = "", cls: str = "") -> str:
    return (f'<div class="card {cls}"><div class="k">{escape(label)}</div>'
            f'<div class="v">{value}</div>'
            + (f'<div class="k">{escape(detail)}</div>' if detail else "") + "</div>")


def _cards(v) -> str:
    cards = []
    if v.prediction is not None:
        cards.append(_card("prediction (ptxas registers)", escape(v.prediction)))
    if v.timeline_of == "PTX":
        cards.append(_card("live at the peak (estimate)", _v(v.estimate),
                           f"32-bit units; {v.predicates} predicates"))
    else:
        cards.append(_card("SASS peak live", _v(v.estimate),
                           f"physical GPRs (nvdisasm); {v.predicates} predicates"))
    if v.ptxas_registers is not None:
        spills = ("spills: only in ptxas's log" if v.spill_stores is None else
                  f"spills {v.spill_stores} B st / {v.spill_loads} B ld")
        cards.append(_card("ptxas registers", _v(v.ptxas_registers),
                           f"{spills}; stack {v.stack} B", "ptxas"))
    else:
        cards.append(_card("ptxas registers", "–", "not compiled"))
    if v.sass_peak is not None:
        cards.append(_card("SASS peak live", _v(v.sass_peak), "physical GPRs (nvdisasm)"))
    if v.occupancy is not None:
        cards.append(_card("occupancy", _pct(v.occupancy),
                           f"{v.blocks} blocks/SM at {v.block_size} threads; "
                           f"limited by {v.limiter or '–'}"))
    else:
        cards.append(_card("occupancy", "n/a", v.occupancy_note or ""))
    if v.is_entry and v.occupancy is not None:
        down = ("no fewer count gains a block" if v.to_gain is None else
                f"−{v.to_gain} registers → {v.next_blocks} blocks/SM")
        up = ("no count up to 255 loses a block" if v.headroom is None else
              f"+{v.headroom + 1} registers loses a block")
        cards.append(_card("next register cliff", escape(down), up))
    return '<div class="cards">' + "".join(cards) + "</div>"


def _timeline(v) -> str:
    n = len(v.timeline)
    if not n:
        return '<p class="note">no instructions</p>'
    series = [("ptx", v.timeline, "ptx")]
    if v.sass and any(x is not None for x in v.sass):
        series.append(("sass", v.sass, "sass"))
    shades = [(s.start, s.end, f"loop {s.name} (depth {s.depth})") for s in v.loops]
    peak = None if v.peak_index is None else (v.peak_index, v.timeline[v.peak_index])
    top = max([x for _, vals, _ in series for x in vals if x is not None] + [1])
    svg = line_chart(series, shades=shades, peak=peak, y_top=top,
                     frame=Frame(title=f"registers live per instruction: {v.label}", width=1320,
                                 height=280,
                                 x_label=f"{v.timeline_of} instruction",
                                 y_label="live registers", chart_id=f"{v.anchor}-timeline"))
    svg = svg.replace('<svg class="chart"', f'<svg class="chart timeline wide" data-n="{n}" '
                      f'data-values="{",".join(map(str, v.timeline))}"', 1)
    what = "PTX live (32-bit units)" if v.timeline_of == "PTX" else "SASS live GPRs"
    legend = ('<div class="legend"><span><i style="background:var(--ptx)"></i>'
              f'{what}</span>'
              + ('<span><i style="background:var(--sass)"></i>SASS live GPRs at the '
                 'instructions compiled from each PTX line</span>' if len(series) > 1 else "")
              + ('<span><i style="background:var(--shade)"></i>loops</span>' if shades else "")
              + (f'<span>● peak {peak[1]} at instruction {peak[0]}: '
                 f'<code>{escape(v.peak_instruction or "")}</code></span>' if peak else "")
              + "</div>")
    return svg + legend


def _source(v) -> str:
    if not v.source:
        return f'<p class="note">{escape(v.source_note or "no source lines")}</p>'
    code = [s for s in v.source if s.live is not None]
    heat = dict(zip(map(id, code), heat_classes([s.live for s in code])))
    rows, file = [], None
    for s in v.source:
        if s.file != file:
            file = s.file
            rows.append(f'<tr class="file"><td colspan="4">{escape(s.file)}</td></tr>')
        if s.live is None:
            rows.append(f'<tr><td class="n">{s.line}</td><td class="live"></td>'
                        f'<td class="mono">{escape(s.text)}</td><td></td></tr>')
            continue
        c = heat[id(s)]
        vals = ", ".join(s.values[:12]) + (f" and {len(s.values) - 12} more"
                                            if len(s.values) > 12 else "")
        rows.append(f'<tr class="code heat-{c}" data-live="{s.live}" data-line="{s.line}" '
                    f'data-heat="{c}" style="background:{heat_color(c / (HEAT_CLASSES - 1))}">'
                    f'<td class="n">{s.line}</td>'
                    f'<td class="live" title="{s.instructions} PTX instructions">{s.live}</td>'
                    f'<td class="mono">{escape(s.text)}</td>'
                    f'<td class="vals">{escape(vals)}</td></tr>')
    lives = sorted({s.live for s in code})
    legend = ('<div class="legend heat">heat by quantile of the kernel\'s code lines: '
              + "".join(f'<span class="swatch" style="background:'
                        f'{heat_color(c / (HEAT_CLASSES - 1))}">{label}</span>'
                        for c, label in _heat_labels(code, heat))
              + f" (live {lives[0]}–{lives[-1]})</div>" if lives else "")
    note = f'<p class="note">{escape(v.source_note)}</p>' if v.source_note else ""
    return (note + legend + '<div class="scroll"><table class="src"><thead><tr><th>line</th>'
            '<th>live</th><th>source</th><th>live at the peak, defined here</th></tr></thead>'
            "<tbody>" + "".join(rows) + "</tbody></table></div>")


def _heat_labels(code, heat: dict) -> list:
    """(class, "lo–hi") of each heat class in use: the live counts it covers."""
    spans: dict = {}
    for s in code:
        lo, hi = spans.get(heat[id(s)], (s.live, s.live))
        spans[heat[id(s)]] = (min(lo, s.live), max(hi, s.live))
    return [(c, f"{lo}" if lo == hi else f"{lo}–{hi}") for c, (lo, hi) in sorted(spans.items())]


def _cliffs(v) -> str:
    if not v.steps or not v.max_warps:
        return f'<p class="note">{escape(v.occupancy_note or "no occupancy table")}</p>'
    # steps: (max registers, blocks), highest count first; draw occupancy for 1..255
    plateaus = sorted(v.steps)
    xs, ys = [], []
    lo = 1
    for hi, blocks in plateaus:
        occ = round(100 * blocks * v.warps_per_block / v.max_warps, 1)
        xs += [lo, hi]
        ys += [occ, occ]
        lo = hi + 1
    marks = [(min(v.estimate, xs[-1]), f"estimate {v.estimate}")]
    if v.ptxas_registers is not None:
        marks.append((v.ptxas_registers, f"ptxas {v.ptxas_registers}"))
    svg = line_chart([("occupancy", ys, "occ")], xs=xs, marks=marks, y_top=100,
                     frame=Frame(title="occupancy against registers per thread",
                                 x_label="registers per thread", y_label="occupancy %",
                                 width=1320, height=220, chart_id=f"{v.anchor}-cliffs"))
    return svg.replace('<svg class="chart"', '<svg class="chart wide"', 1)


def _sweep_table(v, pts: list) -> str:
    """The sweep as a table, one row per compile, the recommended rows marked with their
    lever."""
    marks = {m.cap: m for m in v.sweep_marks}
    rows = []
    for p in sorted(v.sweep, key=lambda p: (p.cap is not None, -(p.cap or 0))):
        m = marks.get(p.cap)
        spill = ("–" if p.spill_stores is None else
                 f"{p.spill_stores} / {p.spill_loads if p.spill_loads is not None else '–'}")
        lever = (f' lever: <code>{escape(m.lever)}</code>' if m and m.lever else
                 " (no cap: the kernel as it is)" if m and p.cap is None else
                 " (no lever proven)")
        mark = "" if m is None else f'<span class="rec">{escape(m.label)}</span>{lever}'

        cls = ' class="recommended"' if m else ""
        cap = "none" if p.cap is None else str(p.cap)
        rows.append(f'<tr{cls} data-cap="{cap}"><td>{cap}</td><td>{_v(p.registers)}</td>'
                    f"<td>{spill}</td><td>{_v(p.blocks)}</td><td>{_pct(p.occupancy)}</td>"
                    f"<td>{mark}</td></tr>")
    return ('<table class="sweep"><thead><tr><th>cap</th><th>registers</th>'
            "<th>spill st / ld (bytes)</th><th>blocks/SM</th><th>occupancy</th>"
            "<th>recommendation</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _sweep(v) -> str:
    pts = [p for p in v.sweep if p.cap is not None and p.registers is not None]
    if not pts:
        return ""
    pts.sort(key=lambda p: p.cap)
    xs = [p.cap for p in pts]
    size = {"width": 460, "height": 220}
    charts = [
        line_chart([("registers", [p.registers for p in pts], "regs")], xs=xs,
                   frame=Frame(title="registers against the cap", x_label="register cap",
                               y_label="registers", chart_id=f"{v.anchor}-sweep-r", **size)),
        line_chart([("spill bytes", [p.spill_stores for p in pts], "spill")], xs=xs,
                   frame=Frame(title="spill stores against the cap", x_label="register cap",
                               y_label="spill bytes", chart_id=f"{v.anchor}-sweep-s", **size)),
        line_chart([("occupancy", [None if p.occupancy is None else round(p.occupancy * 100, 1)
                                   for p in pts], "occ")], xs=xs, y_top=100,
                   frame=Frame(title="occupancy against the cap", x_label="register cap",
                               y_label="occupancy %", chart_id=f"{v.anchor}-sweep-o", **size)),
    ]
    rec = "".join(f'<p class="note">{escape(r)}</p>' for r in v.recommended)
    return ("<h3>register-cap sweep</h3>" + _sweep_table(v, pts) + rec
            + '<div class="charts">' + "".join(charts) + "</div>")


def _fig(d) -> str:
    if d is None:
        return "not proven"
    if d.get("error"):
        return f"refused: {escape(d['error'])}"
    occ = "" if d.get("occupancy") is None else f" ({d['occupancy'] * 100:.1f}%)"
    spill = (d.get("spill_stores") or 0) + (d.get("spill_loads") or 0)
    return (f"{_v(d.get('registers'))} regs, {spill} spill B, "
            f"{_v(d.get('blocks_per_sm'))} blocks/SM{occ}")


def _buys_costs(buys: dict, costs: dict) -> str:
    """``buys +2 blocks/SM (+6.2 points); costs 92 spill B, 136 more instructions``."""
    occ = buys.get("occupancy")
    got = [f"{buys['blocks_per_sm']:+d} blocks/SM"
           + ("" if occ is None else f" ({occ * 100:+.1f} points)")]
    lost = []
    if buys["spill_bytes_saved"]:
        got.append(f"{buys['spill_bytes_saved']} spill B removed")
    if costs["spill_bytes"]:
        lost.append(f"{costs['spill_bytes']} spill B")
    ins = costs["instructions"]
    if ins:
        (lost if ins > 0 else got).append(f"{abs(ins)} {'more' if ins > 0 else 'fewer'} "
                                          "instructions")
    return f"buys {', '.join(got)}; costs {', '.join(lost) or 'nothing'}"


def _advice(v) -> str:
    """``ptxforge advise``'s ranked changes, each with its figures before and after."""
    a = v.advice
    if a is None:
        return ""
    rows = []
    for it in a["items"]:
        buys, costs = it.get("buys"), it.get("costs")
        gain = "–" if buys is None else _buys_costs(buys, costs)
        rows.append(f'<tr class="{"proven" if it["proven"] else "unproven"}" '
                    f'data-rank="{it["rank"]}"><td>{it["rank"]}</td><td>{escape(it["kind"])}</td>'
                    f'<td class="change"><code>{escape(it["change"])}</code></td>'
                    f'<td>{_fig(it["before"])}</td><td>{_fig(it["after"])}</td>'
                    f'<td>{escape(gain)}</td><td class="from">{escape(it["after_from"])}</td></tr>')
    notes = "".join(f'<p class="note">{escape(n)}</p>' for n in a.get("notes", ()))
    if not rows:
        return ('<h3>advise</h3><p class="note">no change found that gains a block per SM '
                "or removes spills</p>" + notes)
    return ('<h3>advise: ranked changes, each compiled</h3><table class="advice"><thead><tr>'
            "<th>#</th><th>change</th><th>what to write</th><th>now</th><th>after</th>"
            "<th>buys / costs</th><th>after from</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table>" + notes)


def _base(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _spills(v) -> str:
    """Local-memory traffic by source line (STL/LDL in the SASS), deepest loop first."""
    if v.spill_lines is None:
        return ""
    if not v.spill_lines:
        return ('<h3>local memory by source line</h3><p class="note">no STL/LDL in the SASS: '
                "no spills or local arrays</p>")
    rows = "".join(
        f'<tr data-line="{"" if s.line is None else s.line}"><td title="{escape(s.file or "")}">'
        f'{escape("(no line info)" if s.file is None else f"{_base(s.file)}:{s.line}")}</td>'
        f"<td>{s.stores}</td><td>{s.store_bytes}</td><td>{s.loads}</td><td>{s.load_bytes}</td>"
        f"<td>{s.spill_accesses}</td><td>{s.loop_depth}</td></tr>" for s in v.spill_lines)
    return ('<h3>local memory by source line (SASS STL/LDL, deepest loop first)</h3>'
            '<table class="spills"><thead><tr><th>source line</th><th>stores</th>'
            "<th>bytes</th><th>loads</th><th>bytes</th><th>ptxas spills</th>"
            "<th>loop depth</th></tr></thead><tbody>" + rows + "</tbody></table>")


def _memory(v) -> str:
    """The memory table: one row per source line, worst first (docs/memory.md)."""
    if v.timeline_of != "PTX":
        return '<p class="note">a cubin has no PTX: the memory analysis reads PTX</p>'
    if not v.memory:
        return '<p class="note">no global, shared or local memory access</p>'
    rows = []
    for r in v.memory:
        where = f"{escape(short_path(r.file, 24))}:{r.line}" if r.line is not None else "-"
        bad = r.severity is not None and r.severity > 1
        rows.append(f'<tr class="{"bad" if bad else "ok"}" data-space="{r.space}" '
                    f'data-line="{r.line if r.line is not None else ""}" '
                    f'data-severity="{"" if r.severity is None else round(r.severity, 3)}">'
                    f'<td class="mono">{where}</td><td>{r.count}</td><td>{r.space}</td>'
                    f"<td>{r.direction}</td><td>{r.width}</td>"
                    f'<td class="fig">{escape(r.figure)}</td>'
                    f'<td class="mono detail">{escape(r.detail)}</td></tr>')
    bx, by, bz = v.memory_block
    fixes = "".join(f'<p class="note">fix, {escape(f)}</p>' for f in v.memory_fixes)
    return (f'<p class="meta">per warp request, block {bx}x{by}x{bz}: sectors per request '
            "(global, local), bank-conflict ways and wavefronts (shared); worst line first</p>"
            '<div class="scroll"><table class="mem"><thead><tr><th>line</th><th>accesses</th>'
            "<th>space</th><th>direction</th><th>bytes</th><th>figure</th>"
            "<th>address / reason</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table></div>" + fixes)


def render_kernel(v) -> str:
    """One kernel's ``<section>``."""
    kind = ".entry" if v.is_entry else ".func"
    head = (f'<section class="kernel" id="{v.anchor}" data-name="{escape(v.name)}">'
            f"<h2>{escape(v.demangled)} <span class=\"muted\">({kind})</span></h2>"
            + (f'<p class="meta mono">mangled: {escape(v.name)}</p>'
               if v.demangled != v.name else "")
            + f'<p class="meta">{v.instructions:,} instructions; {escape(v.arch)}, '
            f"{v.block_size} threads/block</p>")
    notes = "".join(f'<p class="note{" effect" if n.startswith("In effect: ") else ""}">'
                    f"{escape(n)}</p>" for n in v.notes)
    return (head + _cards(v) + notes + _advice(v) + "<h3>pressure timeline</h3>" + _timeline(v)
            + "<h3>source</h3>" + _source(v) + _spills(v) + "<h3>memory</h3>" + _memory(v)
            + "<h3>occupancy cliffs</h3>" + _cliffs(v) + _sweep(v) + "</section>")


def _index(views: Sequence) -> str:
    head = ("<tr><th>kernel</th><th>instructions</th><th>estimate</th><th>ptxas</th>"
            "<th>spill bytes</th><th>occupancy</th></tr>")
    rows = []
    for v in views:
        spill = None if v.spill_stores is None else v.spill_stores + (v.spill_loads or 0)
        rows.append(
            f'<tr><td data-sort="{escape(v.label)}"><a href="#{v.anchor}">{escape(v.label)}'
            f"</a></td><td>{v.instructions}</td><td>{v.estimate}</td>"
            f'<td data-sort="{-1 if v.ptxas_registers is None else v.ptxas_registers}">'
            f"{_v(v.ptxas_registers)}</td>"
            f'<td data-sort="{-1 if spill is None else spill}">{_v(spill)}</td>'
            f'<td data-sort="{-1 if v.occupancy is None else round(v.occupancy, 4)}">'
            f"{_pct(v.occupancy)}</td></tr>")
    return (f'<h3>{len(views)} kernels (click a header to sort)</h3><table id="index">'
            f"<thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>")


def render_page(file: str, header: Sequence[str], views: Sequence,
                notes: Sequence[str] = ()) -> str:
    """The whole document: ``header`` lines under the title, the index when there is more
    than one kernel, then each kernel's section."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>ptxforge report: {escape(file)}</title><style>{STYLE}</style></head>",
             f"<body><h1>Register pressure: {escape(file)}</h1>"]
    parts += [f'<p class="meta">{escape(h)}</p>' for h in header]
    parts += [f'<p class="note">note: {escape(n)}</p>' for n in notes]
    if len(views) > 1:
        parts.append(_index(views))
    parts += [render_kernel(v) for v in views]
    parts.append(f'<div id="hover"></div><script>{SCRIPT}</script></body></html>')
    return "\n".join(parts) + "\n"
