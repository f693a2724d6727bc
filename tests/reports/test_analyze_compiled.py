"""What the compile layer knows, shown by ``analyze``: call-graph vs own-body figures, an
unbounded (recursive) stack, the register cap's origin, debug PTX, the compiler that ran, and
a crash of nvJitLink as an error instead of a dead process.  Real PTX from CUDA C++ (NVRTC)
compiled by nvJitLink; nothing is mocked.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ptxforge import CompilerCrashError, analyze_ptx
from ptxforge.cli import main
from ptxforge.ptx.directives import with_maxnreg
from ptxforge.toolchain.compile import CompileOptions, CompileRequest, compile_ptx

from cli_util import flat, header
from compile_sources import CALLS, LIVE64, OCTREE_WALK, nvrtc
from corpus_util import corpus_ptx

ROOT = Path(__file__).resolve().parents[2]


def _doc(capsys, path, *argv):
    assert main(["analyze", str(path), "--json", *argv]) == 0
    import json
    return json.loads(capsys.readouterr().out)


def _text(capsys, path, *argv):
    assert main(["analyze", str(path), *argv]) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def ptx(tmp_path_factory):
    d = tmp_path_factory.mktemp("compiled")
    files = {"calls": nvrtc(CALLS, "calls", "sm_80"),
             "recursive": corpus_ptx("calls", "sm_80"),
             "debug": nvrtc(CALLS, "calls_g", "sm_80", "-G"),
             "bounds": nvrtc(LIVE64.replace("BOUNDS", "__launch_bounds__(256, 4)"), "lb",
                             "sm_80")}
    out = {}
    for name, text in files.items():
        out[name] = d / f"{name}.ptx"
        out[name].write_text(text)
    return out


def test_json_ptxas_has_call_graph_and_own_body_figures(capsys, ptx):
    # the call graph's figures of a relocatable, linked build (whole-program ptxas folds the
    # callees into the kernel: tests/toolchain/test_modes.py)
    stats = compile_ptx(ptx["calls"].read_text(), "sm_80", backend="nvjitlink")["calls"]
    (k,) = [k for k in _doc(capsys, ptx["calls"], "--backend", "nvjitlink")["kernels"] if k["name"] == "calls"]
    p = k["ptxas"]
    # nvJitLink 13.5, sm_80: gather (called twice) spills 56/56 in a 136-byte frame
    assert (p["registers"], p["body_registers"]) == (stats.registers, stats.body_registers)
    assert p["body_registers"] < p["registers"]
    assert (p["spill_stores"], p["spill_loads"]) == (56, 56)
    assert (p["body_spill_stores"], p["body_spill_loads"]) == (0, 0)
    assert (p["stack"], p["body_stack_frame"], p["stack_known"]) == (160, 0, True)
    assert p["callees"] == list(stats.callees) and "_Z6gatherPKdll" in p["callees"]
    assert (p["register_cap"], p["register_cap_source"], p["register_cap_note"]) == (
        None, None, None)


def test_text_shows_own_body_rows_and_the_callees(capsys, ptx):
    out = _text(capsys, ptx["calls"], "--kernel", "calls", "--backend", "nvjitlink")
    assert re.search(r"^  stack \(bytes\) +- +160$", out, re.M)
    assert re.search(r"^    spill stores, own body \(bytes\) +- +0$", out, re.M)
    assert re.search(r"^    stack frame, own body \(bytes\) +- +0$", out, re.M)
    assert "calls 4 functions: fail, gather, __cuda_sm20_rem_s64, vprintf;" in flat(out)
    assert "ptxas spilled: 56 bytes stored, 56 bytes loaded per thread in the kernel and the " \
           "functions it calls (0/0 in its own body, 56/56 in its callees)" in flat(out)


def test_recursion_makes_the_stack_a_lower_bound(capsys, ptx):
    doc = _doc(capsys, ptx["recursive"], "--backend", "nvjitlink")
    (k,) = [k for k in doc["kernels"] if k["name"] == "call_chain"]
    assert (k["ptxas"]["stack_known"], k["ptxas"]["stack"]) == (False, 48)
    (other,) = [k for k in doc["kernels"] if k["name"] == "call_indirect"]
    assert other["ptxas"]["stack_known"] is True
    assert any("is a lower bound: the call graph recurses" in n for n in k["notes"])
    out = _text(capsys, ptx["recursive"], "--backend", "nvjitlink")
    head = [line for line in out.splitlines() if line.startswith("  kernel ")][0]
    row = [line for line in out.splitlines() if line.startswith("  call_chain ")][0]
    columns = re.split(r"\s{2,}", head.strip())
    assert re.split(r"\s{2,}", row.strip())[columns.index("stack")] == "≥48"
    assert re.search(r"^  stack \(bytes\) +- +≥48$", out, re.M)
    assert "  stack: at least 48 bytes: the call graph recurses" in out


def test_a_recursive_func_has_an_unknown_stack(capsys, ptx):
    doc = _doc(capsys, ptx["recursive"], "--kernel", "_Z13fib_recursivei", "--backend", "nvjitlink")
    assert doc["kernels"][0]["ptxas"]["stack_known"] is False
    doc = _doc(capsys, ptx["recursive"], "--kernel", "_Z5poly3ffff", "--backend", "nvjitlink")
    assert doc["kernels"][0]["ptxas"]["stack_known"] is True


def test_launch_bounds_name_the_caps_source(capsys, ptx):
    p = _doc(capsys, ptx["bounds"])["kernels"][0]["ptxas"]
    # __launch_bounds__(256, 4) on sm_80: 65536 / (256 * 4) = 64 registers
    assert (p["register_cap"], p["register_cap_source"], p["register_cap_note"]) == (
        64, "launch bounds", None)
    out = _text(capsys, ptx["bounds"])
    assert re.search(r"^  register cap +- +64 \(launch bounds\)$", out, re.M)


def test_a_maxrregcount_launch_bounds_ignore_is_noted(ptx):
    a = analyze_ptx(ptx["bounds"].read_text(), "lb.ptx",
                    request=CompileRequest(options=CompileOptions(max_registers=40)))
    k = a.kernels[0]
    assert k.stats.register_cap == 64
    note = k.to_dict()["ptxas"]["register_cap_note"]
    assert note.startswith("--maxrregcount=40 not applied: ptxas ignores --maxrregcount")
    assert f"register cap: {note}" in flat(a.to_text())


def test_debug_ptx_is_noted_and_the_tool_named(capsys, ptx):
    doc = _doc(capsys, ptx["debug"])
    assert doc["tool"].startswith("ptxas 13.") and doc["tool_version"].startswith("13.")
    assert doc["mode"] == "whole-program"
    (note,) = doc["notes"]
    assert note.startswith("debug PTX ('.target sm_80, debug'") and "compiled at -O0" in note
    text = _text(capsys, ptx["debug"])
    # the header names the tool (its path shortened from the left) and the mode
    assert re.search(r"; ptxas 13\.\d+ \(\S*ptxas\), whole-program", header(text))
    assert f"note: {note}" in flat(text)
    assert _doc(capsys, ptx["calls"])["notes"] == []


def test_a_ptxas_executable_is_named_with_its_version(capsys, ptx):
    from ptxforge.ptx.directives import with_version
    from ptxforge.toolchain.backends import PtxasBackend

    alt = PtxasBackend().for_target("sm_80")
    if alt is None:
        pytest.skip("no ptxas executable accepts sm_80")
    text = with_version(ptx["calls"].read_text(), (8, 0))
    a = analyze_ptx(text, "calls.ptx", request=CompileRequest(backend="ptxas"))
    assert a.tool.startswith("ptxas ") and a.tool.endswith(")")
    assert re.search(r"; ptxas \d+\.\d+ \(\S*ptxas\), whole-program", header(a.to_text()))


def test_an_nvjitlink_crash_is_a_one_line_error(tmp_path):
    # nvJitLink 13.5 segfaults on walk for sm_80 at 24 registers (tests/support/compile_sources.py);
    # without isolation the command itself would die of SIGSEGV (exit -11).
    path = tmp_path / "walk24.ptx"
    path.write_text(with_maxnreg(nvrtc(OCTREE_WALK, "walk", "sm_80"), "walk", 24))
    proc = subprocess.run([sys.executable, "-m", "ptxforge", "analyze", str(path), "--backend",
                           "nvjitlink"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("ptxforge: error: nvJitLink crashed (signal 11, SIGSEGV) "
                                  "compiling for sm_80; hint: ")


def test_analyze_ptx_raises_compiler_crash_error_in_a_child():
    # in a child process, so that a regression (no isolation) kills the child, not pytest
    code = ("import sys; sys.path.insert(0, 'tests/support')\n"
            "from compile_sources import OCTREE_WALK, nvrtc\n"
            "from ptxforge import analyze_ptx, CompileRequest, CompilerCrashError\n"
            "from ptxforge.ptx.directives import with_maxnreg\n"
            "p = with_maxnreg(nvrtc(OCTREE_WALK, 'walk', 'sm_80'), 'walk', 24)\n"
            "try:\n    analyze_ptx(p, request=CompileRequest(backend='nvjitlink'))\n"
            "except CompilerCrashError as e:\n    print('crash', e.crash.signal)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "crash 11\n"), proc.stderr
    assert issubclass(CompilerCrashError, Exception)


def test_a_compile_started_before_the_analysis_is_the_one_used(monkeypatch, capsys, tmp_path):
    """The CLI starts ptxas before it imports the analysis (``RunOptions.started``):
    analyze_ptx uses that compile for the same text and request, starts its own for another
    text, and prints the same report either way."""
    from ptxforge.errors import PtxforgeError
    from ptxforge.reports import analyze_compile
    from ptxforge.reports.run_options import RunOptions

    text = corpus_ptx("gemm", "sm_80", True)
    other = corpus_ptx("reduce", "sm_80", True)
    request = CompileRequest()
    started = analyze_compile.start_early(text, None, request, None)
    runs = []
    real = analyze_compile._start
    monkeypatch.setattr(analyze_compile, "_start",
                        lambda *a, **k: runs.append(a[0][:40]) or real(*a, **k))
    used = analyze_ptx(text, "g.ptx", request=request, run=RunOptions(started=started))
    assert runs == []
    fresh = analyze_ptx(other, "r.ptx", request=request, run=RunOptions(started=started))
    assert len(runs) == 1 and fresh.kernels
    again = analyze_ptx(text, "g.ptx", request=CompileRequest(), run=RunOptions(started=started))
    assert len(runs) == 2                                      # another request: its own compile
    assert used.to_dict() == again.to_dict()
    (tmp_path / "g.ptx").write_text(text)
    monkeypatch.chdir(tmp_path)                  # the header names the file as given
    assert main(["analyze", "g.ptx"]) == 0
    assert capsys.readouterr().out.rstrip("\n") == used.to_text().rstrip("\n")
    with pytest.raises(PtxforgeError, match="RunOptions.started: expected"):
        RunOptions(started=42)


def test_a_big_file_compiles_before_its_parse_only_where_no_kernel_pool_can_fork(monkeypatch):
    """Over EARLY_BYTES the kernel pool may fork after the parse, which it must do before a
    compile thread exists: ptxas then starts after the parse, unless one job (or no fork)
    rules the pool out."""
    from ptxforge._parallel import can_fork
    from ptxforge.reports import analyze_compile

    text = corpus_ptx("reduce", "sm_80", True)
    monkeypatch.setattr(analyze_compile, "EARLY_BYTES", len(text) - 1)
    one = analyze_compile.start_early(text, None, None, False, 1)
    assert one is not None and one.side.result().compiled.kernels
    assert (analyze_compile.start_early(text, None, None, False, 2) is None) == can_fork()
    monkeypatch.setattr(analyze_compile, "EARLY_BYTES", len(text))
    small = analyze_compile.start_early(text, None, None, False, 2)
    assert small is not None and small.side.result().compiled.kernels


def test_the_wait_for_the_launch_ends_once_ptxas_runs_or_the_compile_failed(monkeypatch):
    """``analyze FILE`` loads the analysis only once the early ptxas process has begun
    (``CompiledSide.wait_for_launch``): the wait ends while ptxas still runs, and it ends too
    when the compile fails before any process starts."""
    import threading

    from ptxforge.errors import PtxforgeError
    from ptxforge.reports import analyze_compile
    from ptxforge.toolchain import ptxas_run

    monkeypatch.setenv("PTXFORGE_TOOL_CACHE", "off")      # ptxas itself runs
    text = corpus_ptx("reduce", "sm_80", True)
    begun, gate = [], threading.Event()
    announce = ptxas_run.announce_started

    def held():                      # the process has begun; its wait waits for the test
        begun.append(True)
        announce()
        gate.wait(60)

    def ends(wait) -> bool:          # whether wait() returns within 20 s
        waiter = threading.Thread(target=wait, daemon=True)
        waiter.start()
        waiter.join(20)
        return not waiter.is_alive()

    monkeypatch.setattr(ptxas_run, "announce_started", held)
    early = analyze_compile.start_early(text, None, None, False, 1)
    assert ends(early.side.wait_for_launch) and begun == [True]   # ptxas is held running
    gate.set()
    assert early.side.result().compiled.kernels
    monkeypatch.setenv("PTXFORGE_PTXAS", "/nonexistent/ptxas")
    failed = analyze_compile.start_early(text, None, None, False, 1)
    assert ends(failed.side.wait_for_launch) and begun == [True]
    with pytest.raises(PtxforgeError, match="does not exist"):
        failed.side.result()
