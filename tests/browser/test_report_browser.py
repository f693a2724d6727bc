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


def test_memory_section_lists_the_worst_line_first_and_marks_it(browser, tmp_path_factory):
    from memory_kernels import CUDA_LINES

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
