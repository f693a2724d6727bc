"""The page's inline stylesheet and script (no external file, font or URL).

The script does two things only: it sorts the kernel index table when a header is clicked
(numbers by value, text by name; ``aria-sort`` says the order), and it shows the instruction
under the pointer on a timeline.  Everything else is static SVG and HTML.

Example::

    >>> "aria-sort" in SCRIPT and "http" not in SCRIPT + STYLE
    True
"""

from __future__ import annotations

__all__ = ["SCRIPT", "STYLE", "heat_color"]

STYLE = """
:root { --fg:#1d1f24; --muted:#6b7280; --line:#e5e7eb; --ptx:#2563eb; --sass:#ea580c;
        --card:#f8fafc; --shade:#fde68a; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
       margin: 0; width: 100%; padding: 16px 24px 64px; }
h1 { font-size: 20px; margin: 8px 0 2px; } h2 { font-size: 17px; margin: 32px 0 6px;
     border-top: 2px solid var(--line); padding-top: 14px; word-break: break-all; }
h3 { font-size: 14px; margin: 18px 0 4px; color: #374151; }
.meta, .note, .muted { color: var(--muted); } .note { margin: 2px 0; }
code, pre, .mono { font: 12px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
table { border-collapse: collapse; } td, th { padding: 3px 8px; text-align: right; }
td:first-child, th:first-child { text-align: left; }
#index th { cursor: pointer; user-select: none; border-bottom: 2px solid var(--line); }
#index th[aria-sort=ascending]::after { content: " ▲"; }
#index th[aria-sort=descending]::after { content: " ▼"; }
#index tr:nth-child(even) td { background: #f9fafb; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 8px 0; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
        padding: 8px 12px; min-width: 150px; }
.card .v { font-size: 22px; font-weight: 600; } .card .k { color: var(--muted); font-size: 12px; }
.chart { max-width: 100%; height: auto; background: #fff; }
.chart.wide { width: 100%; }
.chart .grid { stroke: var(--line); } .chart .tick, .chart .axis, .chart .marklabel {
  font-size: 11px; fill: var(--muted); }
.chart .series { fill: none; stroke-width: 1.5; stroke-linejoin: round; }
.chart .ptx { stroke: var(--ptx); } .chart .sass { stroke: var(--sass); stroke-dasharray: 4 2; }
.chart .regs { stroke: var(--ptx); } .chart .spill { stroke: #dc2626; }
.chart .occ { stroke: #16a34a; }
.chart .shade { fill: var(--shade); opacity: .45; }
.chart .peak { fill: #dc2626; stroke: #fff; stroke-width: 1.5; }
.chart .mark { stroke: #9ca3af; stroke-dasharray: 3 3; }
.legend span { margin-right: 14px; } .legend i { display: inline-block; width: 18px;
  height: 3px; vertical-align: middle; margin-right: 4px; }
.src { width: 100%; border: 1px solid var(--line); }
.mem { border: 1px solid var(--line); } .mem td { text-align: left; }
.mem th { text-align: left; border-bottom: 2px solid var(--line); }
.mem td.fig { white-space: nowrap; } .mem tr.bad td.fig { background: #fecaca; font-weight: 600; }
.mem td.detail { white-space: normal; font-size: 11px; color: #374151; }
.src td { text-align: left; padding: 0 6px; white-space: pre; vertical-align: top; }
.src td.n, .src td.live { text-align: right; color: #374151; }
.src td.vals { color: #7c2d12; white-space: normal; font-size: 11px; }
.src tr.file td { background: #eef2ff; font-weight: 600; white-space: normal; }
.scroll { max-height: 560px; overflow: auto; border: 1px solid var(--line); }
table.sweep, table.advice, table.spills { border: 1px solid var(--line); margin: 6px 0; }
table.sweep th, table.advice th, table.spills th { border-bottom: 2px solid var(--line); }
table.sweep tr.recommended td { background: #dcfce7; font-weight: 600; }
table.sweep td:last-child, table.sweep th:last-child, table.advice td, table.advice th,
.src th { text-align: left; }
table.sweep .rec { color: #166534; }
table.advice { width: 100%; } table.advice td { vertical-align: top; }
table.advice tr.unproven td { color: var(--muted); font-style: italic; }
table.advice td.change code { white-space: normal; }
table.advice td.from { color: var(--muted); font-size: 12px; max-width: 420px; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
.charts .chart { flex: 1 1 420px; max-width: 33%; min-width: 360px; }
.note.effect { color: var(--fg); }
.legend.heat { margin: 4px 0; font-size: 12px; color: var(--muted); }
.legend .swatch { display: inline-block; padding: 0 6px; margin: 0 2px; color: #1d1f24;
  border-radius: 3px; }
#hover { position: fixed; pointer-events: none; background: #111827; color: #fff;
         padding: 2px 6px; border-radius: 4px; font-size: 12px; display: none; }
"""

SCRIPT = """
(function () {
  "use strict";
  function key(cell) {
    var v = cell.getAttribute("data-sort");
    if (v === null) { v = cell.textContent.trim(); }
    var num = parseFloat(v);
    return (v !== "" && !isNaN(num) && isFinite(v)) ? num : v.toLowerCase();
  }
  function sortBy(table, col, th) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var asc = th.getAttribute("aria-sort") !== "ascending";
    rows.sort(function (a, b) {
      var x = key(a.cells[col]), y = key(b.cells[col]);
      if (typeof x !== typeof y) { x = String(x); y = String(y); }
      return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) {
      c.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
  }
  var table = document.getElementById("index");
  if (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.addEventListener("click", function () { sortBy(table, col, th); });
    });
  }
  var tip = document.getElementById("hover");
  Array.prototype.forEach.call(document.querySelectorAll("svg.timeline"), function (svg) {
    var n = parseInt(svg.getAttribute("data-n"), 10);
    var values = (svg.getAttribute("data-values") || "").split(",");
    svg.addEventListener("mousemove", function (ev) {
      var box = svg.getBoundingClientRect();
      var vb = svg.viewBox.baseVal;
      var x = (ev.clientX - box.left) * vb.width / box.width;
      var i = Math.round((x - 48) * (n - 1) / (vb.width - 60));
      if (i < 0 || i >= n) { tip.style.display = "none"; return; }
      tip.textContent = "instruction " + i + ": " + values[i] + " live";
      tip.style.left = (ev.clientX + 12) + "px"; tip.style.top = (ev.clientY + 12) + "px";
      tip.style.display = "block";
    });
    svg.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  });
})();
"""


def heat_color(t: float) -> str:
    """The background of a source line at heat ``t`` (0: coolest code, 1: hottest): pale
    yellow to red, as ``rgb(…)`` so a browser reports it back unchanged.

    Example::

        >>> heat_color(0), heat_color(1)
        ('rgb(254, 249, 195)', 'rgb(239, 68, 68)')
    """
    t = min(1.0, max(0.0, t))
    lo, hi = (254, 249, 195), (239, 68, 68)
    r, g, b = (round(a + (c - a) * t) for a, c in zip(lo, hi))
    return f"rgb({r}, {g}, {b})"
