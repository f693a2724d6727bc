"""The HTML report in a real browser: headless Debian Chromium driven by Playwright.

Checks what only a browser can: the page runs without console errors, the plotted polylines
have one point per instruction and the peak marker sits on the point of the peak index, the
heat map paints the heaviest source line hottest, and the index table sorts on click.
Screenshots of a large (sgemm_8x8, 1,208 PTX instructions) and a small kernel (the DSL
dot8, 65) go to $PTXFORGE_SCREENS (default: the pytest temporary folder).
Skipped, with the reason, when Chromium or Playwright is missing (``.ci/run`` installs
Chromium with ``apt-get install -y chromium``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from report_pages import page

CHROMIUM = os.environ.get("PTXFORGE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = [
    pytest.mark.skipif(not os.path.exists(CHROMIUM),
                       reason=f"no Chromium at {CHROMIUM} (apt-get install -y chromium)"),
]


@pytest.fixture(scope="module")
def browser():
    sync = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def _open(browser, name: str, errors: list):
    pg = browser.new_page(viewport={"width": 1200, "height": 900})
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("request", lambda r: errors.append(f"request {r.url}")
          if not r.url.startswith(("file:", "data:", "about:")) else None)
    pg.goto(page(name).as_uri())
    pg.wait_for_load_state("load")
    return pg


def _screens(tmp_path_factory) -> Path:
    d = os.environ.get("PTXFORGE_SCREENS")
    out = Path(d) if d else tmp_path_factory.mktemp("screens")
    out.mkdir(parents=True, exist_ok=True)
    return out


_TIMELINE = """(id) => {
  const svg = document.getElementById(id);
  const lines = [...svg.querySelectorAll('polyline[data-series=ptx]')];
  const sass = [...svg.querySelectorAll('polyline[data-series=sass]')];
  const peak = svg.querySelector('circle.peak');
  const i = parseInt(peak.getAttribute('data-index'));
  const pt = lines[0].points.getItem(i);
  const ys = [...Array(lines[0].points.numberOfItems).keys()].map(k => lines[0].points.getItem(k).y);
  return {n: parseInt(svg.getAttribute('data-n')), points: lines[0].points.numberOfItems,
          lines: lines.length, sass: sass.reduce((a, l) => a + l.points.numberOfItems, 0),
          index: i, px: pt.x, py: pt.y, cx: peak.cx.baseVal.value, cy: peak.cy.baseVal.value,
          minY: Math.min(...ys), shades: svg.querySelectorAll('rect.shade').length};
}"""


@pytest.mark.parametrize("name", ["gemm", "templates", "dsl", "cubin"])
def test_no_console_errors_and_no_requests(browser, name):
    errors: list = []
    pg = _open(browser, name, errors)
    pg.mouse.move(300, 300)
    assert pg.locator("section.kernel").count() >= 1
    pg.close()
    assert errors == []


def test_timeline_points_and_peak_marker(browser, tmp_path_factory):
    from ptxforge.analysis.pressure import analyze_pressure
    from ptxforge.ptx.parse import parse

    from corpus_util import corpus_ptx

    errors: list = []
    pg = _open(browser, "gemm", errors)
    kernels = parse(corpus_ptx("gemm", "sm_80", True)).kernels
    for n, k in enumerate(kernels):
        r = analyze_pressure(k)
        got = pg.evaluate(_TIMELINE, f"k{n}-timeline")
        assert got["n"] == got["points"] == len(k.instructions)      # one point each
        assert got["lines"] == 1 and got["index"] == r.peak.index
        assert (got["cx"], got["cy"]) == pytest.approx((got["px"], got["py"]), abs=0.06)
        assert got["py"] == pytest.approx(got["minY"], abs=0.06)    # the highest point
        assert got["sass"] > len(k.instructions) // 2                # the SASS overlay
        assert got["shades"] >= 1                                    # the K loop
    section = pg.locator("#k1")
    section.scroll_into_view_if_needed()
    section.screenshot(path=str(_screens(tmp_path_factory) / "large-sgemm_8x8.png"))
    pg.close()
    assert errors == []


def test_heaviest_source_line_is_hottest(browser, tmp_path_factory):
    errors: list = []
    pg = _open(browser, "dsl", errors)
    rows = pg.evaluate("""() => [...document.querySelectorAll('tr.code')].map(r => ({
        live: parseInt(r.dataset.live), line: parseInt(r.dataset.line),
        bg: getComputedStyle(r).backgroundColor}))""")
    assert len(rows) >= 10
    top = max(r["live"] for r in rows)
    hottest = [r for r in rows if r["live"] == top]
    reds = {r["bg"] for r in hottest}
    assert reds == {"rgb(239, 68, 68)"}
    for r in rows:   # redness falls with the live count: green and blue channels rise
        g = int(r["bg"].split(",")[1])
        assert (g == 68) == (r["live"] == top)
    pg.screenshot(path=str(_screens(tmp_path_factory) / "small-dot8.png"), full_page=True)
    pg.close()
    assert errors == []


def test_index_table_sorts(browser):
    errors: list = []
    pg = _open(browser, "templates", errors)
    names = "() => [...document.querySelectorAll('#index tbody tr td:first-child')]" \
            ".map(c => c.textContent)"
    estimate = "() => [...document.querySelectorAll('#index tbody tr td:nth-child(3)')]" \
               ".map(c => parseFloat(c.textContent))"
    before = pg.evaluate(names)
    assert len(before) == 4
    pg.click("#index th:nth-child(3)")
    up = pg.evaluate(estimate)
    assert up == sorted(up) and pg.get_attribute("#index th:nth-child(3)", "aria-sort") \
        == "ascending"
    pg.click("#index th:nth-child(3)")
    down = pg.evaluate(estimate)
    assert down == sorted(up, reverse=True) and down != up
    pg.click("#index th:nth-child(1)")
    by_name = pg.evaluate(names)
    assert by_name == sorted(before, key=str.lower)
    pg.close()
    assert errors == []


def _wide(browser, name: str, errors: list):
    """``name``'s page in a 1,400 px wide window."""
    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(page(name).as_uri())
    pg.wait_for_load_state("load")
    return pg


def test_page_uses_the_full_width_of_the_window(browser):
    errors: list = []
    pg = _wide(browser, "gemm", errors)
    got = pg.evaluate("""() => ({
        section: document.querySelector('section.kernel').getBoundingClientRect().width,
        timeline: document.querySelector('svg.timeline').getBoundingClientRect().width,
        source: document.querySelector('table.src').getBoundingClientRect().width,
        cliffs: document.querySelector('svg[id$="-cliffs"]').getBoundingClientRect().width,
        window: window.innerWidth})""")
    assert got["window"] == 1400
    for part in ("section", "timeline", "source", "cliffs"):
        assert got[part] >= 0.9 * 1400, (part, got)
    pg.close()
    assert errors == []


_HEAT = """() => [...document.querySelectorAll('tr.code')].map(r => ({
    live: parseInt(r.dataset.live), heat: parseInt(r.dataset.heat),
    bg: getComputedStyle(r).backgroundColor}))"""


def test_heat_is_relative_by_quantile(browser, tmp_path_factory):
    """sgemm_8x8: its loop lines span about the top tenth of the live range; by quantile they
    fall in different classes and colours, hotter never below cooler."""
    errors: list = []
    pg = _wide(browser, "advise", errors)
    rows = pg.evaluate(_HEAT)
    top = max(r["live"] for r in rows)
    assert {r["heat"] for r in rows if r["live"] == top} == {4}
    assert all(r["heat"] < 4 for r in rows if r["live"] < top)
    for a in rows:                 # monotone: more live never a cooler class
        for b in rows:
            if a["live"] > b["live"]:
                assert a["heat"] >= b["heat"]
    colour = {}
    for r in rows:
        assert colour.setdefault(r["heat"], r["bg"]) == r["bg"]   # one colour per class
    assert len(set(colour.values())) == len(colour) >= 4
    hot = [r for r in rows if r["live"] >= 0.9 * top]          # the hot loop's lines
    assert len({r["heat"] for r in hot}) >= 2 and len({r["bg"] for r in hot}) >= 2
    pg.locator("table.src").scroll_into_view_if_needed()
    pg.screenshot(path=str(_screens(tmp_path_factory) / "advise-source.png"))
    pg.close()
    assert errors == []


_SWEEP = """() => [...document.querySelectorAll('table.sweep tbody tr')].map(r => ({
    cap: r.dataset.cap, marked: r.classList.contains('recommended'),
    cells: [...r.cells].map(c => c.textContent.trim())}))"""


def test_sweep_table_marks_the_recommended_rows_with_their_lever(browser, tmp_path_factory):
    from report_pages import ADVISE_BUDGET

    errors: list = []
    pg = _wide(browser, "advise", errors)
    rows = pg.evaluate(_SWEEP)
    assert len(rows) >= 8

    def figures(r):
        st, ld = (int(x) for x in r["cells"][2].split(" / "))
        return {"spill": st + ld, "blocks": int(r["cells"][3]),
                "occ": float(r["cells"][4].rstrip("%"))}
    marked = [r for r in rows if r["marked"]]
    assert len(marked) == 2
    clean, spilly = marked if figures(marked[0])["spill"] == 0 else marked[::-1]
    best_clean = max(figures(r)["occ"] for r in rows if figures(r)["spill"] == 0)
    assert figures(clean)["occ"] == best_clean and "no spills" in clean["cells"][5]
    within = [r for r in rows if figures(r)["spill"] <= ADVISE_BUDGET]
    assert figures(spilly)["occ"] == max(figures(r)["occ"] for r in within) > best_clean
    # its lever: sgemm_8x8 has __launch_bounds__(64), so the lever is launch bounds with the
    # row's blocks per SM (never -maxrregcount)
    lever = spilly["cells"][5]
    assert f"__launch_bounds__(64, {figures(spilly)['blocks']})" in lever
    assert "maxrregcount" not in lever
    pg.locator("table.sweep").scroll_into_view_if_needed()
    pg.screenshot(path=str(_screens(tmp_path_factory) / "advise-sweep.png"))
    pg.close()
    assert errors == []


def test_advise_section_lists_the_ranked_compiled_changes(browser, tmp_path_factory):
    errors: list = []
    pg = _wide(browser, "advise", errors)
    rows = pg.evaluate("""() => [...document.querySelectorAll('table.advice tbody tr')].map(
        r => ({rank: parseInt(r.dataset.rank), proven: r.classList.contains('proven'),
               cells: [...r.cells].map(c => c.textContent.trim())}))""")
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    kinds = [r["cells"][1] for r in rows]
    assert "unroll" in kinds and "register cap" in kinds
    unroll = rows[kinds.index("unroll")]
    assert unroll["proven"] and unroll["cells"][2].startswith("#pragma unroll ")
    now, after = unroll["cells"][3], unroll["cells"][4]
    blocks = [int(t.split(" blocks/SM")[0].split()[-1]) for t in (now, after)]
    assert blocks[1] > blocks[0] and " 0 spill B" in after
    pg.locator("table.advice").scroll_into_view_if_needed()
    pg.screenshot(path=str(_screens(tmp_path_factory) / "advise-section.png"))
    pg.close()
    assert errors == []


def test_spills_by_source_line_add_up_to_ptxas_spill_bytes(browser, tmp_path_factory):
    errors: list = []
    pg = _wide(browser, "spills", errors)
    got = pg.evaluate("""() => ({
        rows: [...document.querySelectorAll('table.spills tbody tr')].map(
            r => [...r.cells].map(c => c.textContent.trim())),
        card: document.querySelector('.card.ptxas .k:last-child').textContent})""")
    stores, loads = (int(x) for x in
                     got["card"].split("spills ")[1].split(" B st / ")[0:1]
                     + got["card"].split(" B st / ")[1].split(" B ld")[0:1])
    assert stores > 0 and got["rows"]
    assert all(r[0].startswith("gemm.cu:") for r in got["rows"])
    assert sum(int(r[2]) for r in got["rows"]) == stores
    assert sum(int(r[4]) for r in got["rows"]) == loads
    depths = [int(r[6]) for r in got["rows"]]
    assert depths == sorted(depths, reverse=True) and depths[0] >= 1
    pg.locator("table.spills").scroll_into_view_if_needed()
    pg.screenshot(path=str(_screens(tmp_path_factory) / "spills-by-line.png"))
    pg.close()
    assert errors == []


def test_memory_section_lists_the_worst_line_first_and_marks_it(browser, tmp_path_factory):
    from memory_builders import CUDA_LINES

    errors: list = []
    pg = _open(browser, "memory", errors)
    tables = pg.evaluate("""() => [...document.querySelectorAll('section.kernel')].map(s => ({
        name: s.dataset.name,
        rows: [...s.querySelectorAll('table.mem tbody tr')].map(r => ({
            line: parseInt(r.dataset.line), space: r.dataset.space, bad: r.className === 'bad',
            figure: r.querySelector('td.fig').textContent,
            bg: getComputedStyle(r.querySelector('td.fig')).backgroundColor}))}))""")
    by_name = {t["name"]: t["rows"] for t in tables}
    naive, conflict, padded = by_name["naive"], by_name["tiled_conflict"], by_name["tiled_padded"]
    assert naive[0]["line"] == CUDA_LINES("STORE_NAIVE") and naive[0]["bad"]
    assert naive[0]["figure"] == "32 sectors/req" and naive[0]["bg"] == "rgb(254, 202, 202)"
    assert conflict[0]["line"] == CUDA_LINES("TILE_LOAD")
    assert conflict[0]["figure"].startswith("32-way") and conflict[0]["space"] == "shared"
    assert not any(r["bad"] for r in padded)
    assert pg.locator("text=Swizzle<5,2,5>").count() == 1
    table = pg.locator('section.kernel[data-name="tiled_conflict"] table.mem')
    table.scroll_into_view_if_needed()
    table.screenshot(path=str(_screens(tmp_path_factory) / "memory-tiled_conflict.png"))
    pg.screenshot(path=str(_screens(tmp_path_factory) / "memory-transposes.png"), full_page=True)
    pg.close()
    assert errors == []
