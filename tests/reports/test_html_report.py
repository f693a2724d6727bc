"""The HTML report (ptxforge.reports.html): self-contained, on PTX, a cubin and a DSL script."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from report_pages import DATA, page_text

from ptxforge.reports.html.data import ptx_line_numbers
from ptxforge.reports.html.svg import line_chart

# src="…" / href="…" / url(…) values in the page
_REFS = re.compile(r"""(?:\b(?:src|href)\s*=\s*["']?|url\()\s*([^"'\s>)]*)""", re.IGNORECASE)


@pytest.mark.parametrize("name", ["gemm", "templates", "dsl", "cubin"])
def test_page_makes_no_external_reference(name):
    html = page_text(name)
    refs = _REFS.findall(html)
    assert bool(refs) == (name != "dsl"), "the index links each kernel (one kernel: no index)"
    for ref in refs:
        assert not ref.lower().startswith(("http:", "https:", "//")), ref
        assert ref.startswith("#"), f"only in-page links expected, got {ref!r}"
    assert "http:" not in html and "https:" not in html
    assert "<link" not in html and "@import" not in html


def test_pages_show_one_section_per_kernel_and_the_timeline_points():
    gemm = page_text("gemm")
    assert gemm.count('class="kernel"') == 2 and 'id="index"' in gemm
    # one data value per PTX instruction, the peak marker at the analysis's peak
    from ptxforge.analysis.pressure import analyze_pressure
    from ptxforge.ptx.parse import parse

    from corpus_util import corpus_ptx

    module = parse(corpus_ptx("gemm", "sm_80", True))
    for n, k in enumerate(module.kernels):
        r = analyze_pressure(k)
        m = re.search(rf'<svg class="chart timeline wide" data-n="(\d+)" data-values="([^"]*)"'
                      rf'[^>]*id="k{n}-timeline" data-bucket="1".*?</svg>', gemm)
        assert m, n
        assert int(m.group(1)) == len(k.instructions) == r.n_instructions
        assert [int(x) for x in m.group(2).split(",")] == list(r.timeline.at)
        assert f'data-index="{r.peak.index}" data-value="{r.peak.units}"' in m.group(0)
    assert gemm.count('data-series="sass"') >= 2      # the SASS overlay (nvdisasm)
    single = page_text("dsl")
    assert 'id="index"' not in single and single.count('class="kernel"') == 1


def test_dsl_source_view_shows_the_python_lines_hottest_in_the_loop():
    html = page_text("dsl")
    rows = [(int(live), int(line)) for live, line in
            re.findall(r'data-live="(\d+)" data-line="(\d+)"', html)]
    text = (DATA / "report_dsl.py").read_text().splitlines()
    hottest_line = max(rows)[1]
    assert "kb.ifma(sums[j]" in text[hottest_line - 1]
    assert "report_dsl.py" in html and "%f10" in html


def test_cubin_page_uses_the_sass_timeline():
    html = page_text("cubin")
    assert "SASS instruction" in html and html.count('class="kernel"') == 2
    assert "ptxas registers" in html


def test_memory_section_rows_worst_first_and_the_cubin_note():
    html = page_text("memory")
    assert html.count("<h3>memory</h3>") == html.count('class="kernel"') == 3
    sections = html.split('<section class="kernel"')[1:]
    naive = next(s for s in sections if 'data-name="naive"' in s)
    rows = re.findall(r'<tr class="(bad|ok)" data-space="(\w+)" data-line="(\d*)" '
                      r'data-severity="([\d.]*)"', naive)
    assert [r[0] for r in rows] == ["bad", "ok"] and float(rows[0][3]) == 8.0
    assert "a cubin has no PTX" in page_text("cubin")


def test_report_is_deterministic_across_processes():
    """The page another process writes (its own hash seed, its own object addresses) is this
    process's, byte for byte (this process's page is the one the tests above read)."""
    code = ("import sys; sys.path.insert(0, 'tests/support'); import report_pages as r; "
            "sys.stdout.write(r.page_text('dsl'))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout
    here = page_text("dsl")
    assert other == here and len(here) > 5000


def test_line_chart_buckets_long_series_and_keeps_the_peak_index():
    values = list(range(10000))
    svg = line_chart([("ptx", values, "ptx")], peak=(9999, 9999))
    points = re.search(r'points="([^"]*)"', svg).group(1).split()
    assert len(points) == 3334 and 'data-bucket="3"' in svg and 'data-index="9999"' in svg


def test_ptx_lines_of_each_instruction_are_found():
    from ptxforge.ptx.parse import parse

    from corpus_util import corpus_ptx

    text = corpus_ptx("weno", "sm_80", True)
    k = parse(text).kernels[0]
    lines = ptx_line_numbers(text, k)
    src = text.splitlines()
    assert None not in lines and len(lines) == len(k.instructions)
    assert all(src[n - 1].strip().startswith(i.opcode.split(".")[0]) or
               src[n - 1].strip().startswith("@") for n, i in zip(lines, k.instructions))


def test_report_cli_writes_the_page(tmp_path, capsys):
    from cli_util import run

    out = tmp_path / "r.html"
    code, stdout, err = run(capsys, "report", DATA / "report_dsl.py", "-o", out, "--no-sass")
    assert code == 0, err
    assert stdout == ""            # progress goes to a terminal only; nothing on stdout
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "dot8" in html
    code, _, err = run(capsys, "report", DATA / "report_dsl.py", "--json")
    assert code == 2 and "--json" in err


def test_report_cli_rejects_a_script_without_a_module(tmp_path, capsys):
    from cli_util import run

    script = tmp_path / "empty.py"
    script.write_text("x = 1\n")
    code, _, err = run(capsys, "report", script, "-o", tmp_path / "r.html")
    assert code == 1 and "expected a top-level `module`" in err and "found nothing" in err


def test_heat_classes_split_a_hot_loop_by_quantile():
    """Lines at 76-86 of 86 with a few cool lines: the old linear scale painted the loop one
    red; by quantile the loop's lines take several classes, the top count alone the hottest."""
    from ptxforge.reports.html.data import HEAT_CLASSES, heat_classes

    lives = [4, 10, 12, 76, 78, 80, 81, 83, 84, 85, 86, 86]
    got = heat_classes(lives)
    assert [c for v, c in zip(lives, got) if v == 86] == [HEAT_CLASSES - 1] * 2
    assert all(c < HEAT_CLASSES - 1 for v, c in zip(lives, got) if v < 86)
    loop = {c for v, c in zip(lives, got) if v >= 76}
    assert len(loop) >= 3                                  # the loop spans classes
    assert list(got) == sorted(got)                        # monotone in the live count
    assert heat_classes([7, 7, 7]) == (HEAT_CLASSES - 1,) * 3


def test_sweep_table_advise_and_spills_sections_are_in_the_page():
    from report_pages import page_text

    html = page_text("advise")
    assert html.count('<tr class="recommended"') == 2 and 'table class="sweep"' in html
    assert 'table class="advice"' in html and "#pragma unroll" in html
    assert "no STL/LDL in the SASS" in html               # sgemm_8x8 does not spill
    assert 'table class="spills"' in page_text("spills")


def test_memory_fixes_are_said_once_per_line_with_how_many_accesses():
    """sgemm_8x8 stores its 32-way tile with 8 instructions on one line: one padding and one
    swizzle sentence for them, each counted, not 8 copies."""
    from report_pages import page_text

    section = next(s for s in page_text("advise").split('<section class="kernel"')[1:]
                   if "sgemm_8x8" in s.split(">", 1)[0])
    fixes = re.findall(r'<p class="note">fix, ([^<]*)</p>', section)
    assert fixes and len(fixes) == len(set(fixes))
    assert any(f.startswith("line 14: padding, 32 -&gt; 1 ways") and f.endswith("(8 accesses)")
               for f in fixes), fixes
