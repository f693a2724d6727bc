"""``check`` computes only what it prints, and prints the same bytes as the full analysis.

``ptxforge check`` leaves out the liveness and the prediction its output does not show (text
and JUnit show none of them, SARIF the peak lines of the failing kernels, JSON all three).  Each format is compared
byte for byte with the same report built from the full analysis (``analyze_ptx`` with every
part computed, the path ``check`` took before it went light), on real kernels: corpus sources
compiled with NVRTC (``-lineinfo``; spills, mangled templates, calls, shared memory) beside a
hand-written PTX without line info and a globals-only file.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ptxforge.arch.spec import LaunchSpec
from ptxforge.errors import PtxforgeError
from ptxforge.frontends.inputs import collect, fill_peak_lines, without_kernels
from ptxforge.reports.analyze import analyze_ptx
from ptxforge.reports.check import Budget, check
from ptxforge.reports.figures import kernel_figures
from ptxforge.reports.junit import junit_xml
from ptxforge.reports.sarif import sarif_text

from build_kit import write_build
from cli_util import run

GLOBALS_ONLY = """.version 8.0
.target sm_80
.address_size 64
.global .align 4 .u32 table[4] = {1, 2, 3, 4};
"""

#: Budgets that pass some kernels and fail others (every rule, so every message kind shows).
BUDGETS = (("--max-registers", "24", "--no-spills"),
           ("--max-stack", "0", "--min-occupancy", "0.75", "--block", "512"))


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    out = write_build(tmp_path_factory.mktemp("light"),
                      sources=("pressure", "templates", "calls", "softmax"))
    (out / "globals_only.ptx").write_text(GLOBALS_ONLY)
    return out


def _full_report(build: Path, budget: tuple):
    """The check report from the full analysis of every file (every part computed)."""
    block = int(budget[budget.index("--block") + 1]) if "--block" in budget else None
    spec = LaunchSpec(block=block)
    kernels, no_kernel = [], []
    for path in sorted(build.glob("*.ptx")):
        text = path.read_text()
        if ".entry" not in text:
            no_kernel.append(str(path))
            continue
        kernels += kernel_figures(analyze_ptx(text, str(path), spec), text)
    flags = dict(zip(budget[::2], budget[1::2]))
    base = Budget(max_registers=int(flags["--max-registers"]) if "--max-registers" in flags
                  else None, no_spills=True if "--no-spills" in budget else None,
                  max_stack=int(flags["--max-stack"]) if "--max-stack" in flags else None,
                  min_occupancy=float(flags["--min-occupancy"]) if "--min-occupancy" in flags
                  else None, block=block)
    return check(kernels, base, None, no_kernel)


@pytest.mark.parametrize("budget", BUDGETS, ids=["registers-spills", "stack-occupancy"])
def test_every_format_is_the_full_analysis_byte_for_byte(capsys, tmp_path, build, budget):
    full = _full_report(build, budget)
    assert full.failures and len(full.failures) < len(full.findings)   # both kinds shown
    code, out, err = run(capsys, "check", "--jobs", "1", *budget, build,
                         "--sarif", tmp_path / "r.sarif", "--junit", tmp_path / "r.xml")
    assert code == full.exit_status == 1, err
    assert out == full.to_text()
    assert (tmp_path / "r.sarif").read_text() == sarif_text(full, None, ())
    assert (tmp_path / "r.xml").read_text() == junit_xml(full)
    assert '"relatedLocations"' in (tmp_path / "r.sarif").read_text()   # peak lines shown
    code, out, err = run(capsys, "check", "--jobs", "1", *budget, build, "--json")
    assert code == 1, err
    assert out == json.dumps(full.to_dict(), indent=2, ensure_ascii=False) + "\n"
    assert all(k["estimate"] and k["prediction"] for k in json.loads(out)["kernels"])


def test_two_jobs_print_the_full_analysis_too(capsys, tmp_path, build):
    full = _full_report(build, BUDGETS[0])
    code, out, err = run(capsys, "check", "--jobs", "2", *BUDGETS[0], build,
                         "--sarif", tmp_path / "r.sarif")
    assert code == 1, err
    assert out == full.to_text()
    assert (tmp_path / "r.sarif").read_text() == sarif_text(full, None, ())


def test_the_light_path_computes_no_liveness_and_no_prediction(build):
    units = collect([build], reads=())
    assert without_kernels(units) == [str(build / "globals_only.ptx")]
    analysed = [k for u in units if u.analysis is not None for k in u.analysis.kernels]
    assert len(analysed) >= 6
    for ka in analysed:
        assert ka.part.computed() == ()
        assert ka.stats is not None and ka.occupancy is not None
    with pytest.raises(PtxforgeError, match="estimate, prediction, peak_lines were not computed"):
        units[0].figures[0].to_dict()
    # read later, the parts are the full analysis's
    full = analyze_ptx((build / "pressure.ptx").read_text(), str(build / "pressure.ptx"))
    light = next(u.analysis for u in units if u.path.endswith("pressure.ptx"))
    assert light.to_dict() == full.to_dict() and light.to_text() == full.to_text()
    assert all(ka.part.computed() for ka in light.kernels)



@pytest.mark.parametrize("jobs", [1, 2])
def test_sarif_computes_the_peak_lines_of_the_failing_kernels_only(build, jobs):
    units = collect([build], reads=(), jobs=jobs)   # jobs 2: the Inputs hold no analysis
    figures = [f for u in units for f in u.figures]
    failing = [f for f in figures if f.registers > 24]
    assert 0 < len(failing) < len(figures)
    filled = fill_peak_lines(units, failing)
    after = {(f.file, f.name): f for u in filled for f in u.figures}
    full = {(f.file, f.name): f for p in sorted(build.glob("*.ptx")) if ".entry" in p.read_text()
            for f in kernel_figures(analyze_ptx(p.read_text(), str(p)), p.read_text())}
    assert any(f.peak_lines for f in failing) is False and len(after) == len(full)
    for key, f in after.items():
        if any((g.file, g.name) == key for g in failing):
            assert f.peak_lines == full[key].peak_lines and "peak_lines" not in f.unread
            assert f.peak_lines or f.source is None   # with -lineinfo the peak has lines
        else:
            assert f.peak_lines == () and "peak_lines" in f.unread
    if jobs == 1:
        computed = {k.name: k.part.computed() for u in filled if u.analysis is not None
                    for k in u.analysis.kernels}
        assert {n for n, c in computed.items() if c} == {f.name for f in failing}


def test_without_a_budget_file_no_full_name_is_demangled(build):
    """The flags' budget matches no names: only the short names the table prints are
    demangled (a folder of template kernels spent a tenth of its main thread on the full
    names, read only by a budget file's globs)."""
    from ptxforge.ptx import demangle

    figures = [f for u in collect([build], reads=()) for f in u.figures]
    mangled = [f.name for f in figures if f.name.startswith("_Z")]
    assert mangled
    demangle._MEMO.clear()
    report = check(figures, Budget(max_registers=24))
    text = report.to_text()
    assert all((n, True) in demangle._MEMO for n in mangled)     # the table's short names
    assert not any((n, False) in demangle._MEMO for n in mangled)
    assert any(demangle.display_name(n) in text for n in mangled)


def test_one_job_starts_the_next_files_compile_ahead_and_compiles_each_once(build, monkeypatch):
    """With ``jobs=1`` ptxas compiles file N + 1 while file N is analysed: every file's
    compile starts once, in order, and its ptxas process has begun before the analysis of
    the file before it does (that analysis would slow the compile's start); the figures are
    those of the worker processes."""
    from ptxforge.reports import analyze, analyze_compile

    paths = sorted(build.glob("*.ptx"))
    name = {p.read_text(): p.name for p in paths}
    events: list = []
    start, analyse = analyze_compile.start_early, analyze.analyze_ptx
    monkeypatch.setattr(analyze_compile, "start_early", lambda text, *rest: events.append(
        ("start", name[text])) or start(text, *rest))
    monkeypatch.setattr(analyze, "analyze_ptx", lambda text, *rest, **kw: events.append(
        ("analyse", name[text])) or analyse(text, *rest, **kw))
    from ptxforge.toolchain import backends, ptxas_run

    running, most = [0], [0]
    run_ptxas, began = backends.run_to_files, ptxas_run.announce_started

    def started():    # a ptxas process has begun (each made slower: an overlap would show)
        running[0] += 1
        most[0] = max(most[0], running[0])
        events.append(("launched", sum(kind == "launched" for kind, _ in events)))
        time.sleep(0.02)
        began()

    def counted(*args):
        try:
            return run_ptxas(*args)
        finally:
            running[0] -= 1

    monkeypatch.setattr(ptxas_run, "announce_started", started)
    monkeypatch.setenv("PTXFORGE_TOOL_CACHE", "off")     # ptxas itself, every time
    monkeypatch.setattr(backends, "run_to_files", counted)
    units = collect([str(build)], jobs=1, reads=())
    assert most[0] == 1                   # one ptxas at a time, beside the analysis
    assert [n for kind, n in events if kind == "start"] == [p.name for p in paths]
    assert [n for kind, n in events if kind == "launched"] == list(range(len(paths)))
    for k, p in enumerate(paths[:-1]):    # file k + 1 compiles while file k is analysed
        assert events.index(("start", paths[k + 1].name)) < events.index(("analyse", p.name))
        assert events.index(("launched", k + 1)) < events.index(("analyse", p.name))
    monkeypatch.undo()
    apart = collect([str(build)], jobs=2, reads=())
    assert [u.figures for u in units] == [u.figures for u in apart]
    assert without_kernels(units) == [str(build / "globals_only.ptx")]
    assert sum(len(u.figures) for u in units) >= 8


def test_one_job_reports_a_file_ptxas_refuses_between_two_good_ones(tmp_path):
    """The compile started ahead fails in its own file's turn: that file is not checked, the
    others are."""
    good = GLOBALS_ONLY.replace(".global .align 4 .u32 table[4] = {1, 2, 3, 4};",
                                ".visible .entry k(.param .u64 p) { ret; }")
    (tmp_path / "a.ptx").write_text(good)
    # parses, but sm_80 has no setmaxnreg: ptxas refuses it
    refused = good.replace("ret;", "setmaxnreg.inc.sync.aligned.u32 64; ret;")
    (tmp_path / "b.ptx").write_text(refused)
    (tmp_path / "c.ptx").write_text(good)
    units = collect([str(tmp_path)], jobs=1, reads=(), keep_going=True)
    assert [u.error is None for u in units] == [True, False, True]
    assert "ptxas could not compile" in units[1].error and "setmaxnreg" in units[1].error
    assert [len(u.figures) for u in units] == [1, 0, 1]
