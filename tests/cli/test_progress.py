"""Progress on long work: a line on a terminal's standard error, never in JSON or piped output."""

from __future__ import annotations

import sys

from ptxforge.cli import main
from ptxforge.reports.analyze import RunOptions, analyze_ptx

from corpus_util import corpus_ptx


def test_analyze_calls_progress_once_per_kernel_in_order():
    ptx = corpus_ptx("gemm", "sm_80")
    seen = []
    a = analyze_ptx(ptx, "gemm.ptx", compile=False,
                    run=RunOptions(progress=lambda i, n, name: seen.append((i, n, name))))
    names = [k.name for k in a.kernels]
    assert seen == [(i, len(names), name) for i, name in enumerate(names)] and len(names) == 2


def test_no_progress_line_when_stderr_is_not_a_terminal(tmp_path, capsys):
    path = tmp_path / "gemm.ptx"
    path.write_text(corpus_ptx("gemm", "sm_80"))
    assert main(["analyze", str(path), "--no-compile"]) == 0
    assert capsys.readouterr().err == ""


def test_a_terminal_gets_the_progress_line_but_json_does_not(tmp_path, capsys, monkeypatch):
    path = tmp_path / "gemm.ptx"
    path.write_text(corpus_ptx("gemm", "sm_80"))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["analyze", str(path), "--no-compile"]) == 0
    err = capsys.readouterr().err
    assert "[1/2] sgemm_4x4" in err and "[2/2] sgemm_8x8" in err and err.endswith("\r\x1b[K")
    assert main(["analyze", str(path), "--no-compile", "--json"]) == 0
    assert capsys.readouterr().err == ""
