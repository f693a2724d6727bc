"""Every command's cost grows in proportion to the kernels of a file, never faster.

Each command runs on a generated template file of N kernels and on one of 2N (the shape of a
real many-kernel build: mangled names, inlined helpers, ``.loc`` lines), in this process, and
the CPU time it takes (this process and the compilers it runs: ptxas, nvdisasm, workers) is
compared as a ratio measured in the same run: a per-kernel step that costs the whole file
(the 30-minute trace of a 213-kernel file was kernels² × file size) makes the ratio 3-4; a
linear one keeps it at 2 or below (fixed costs make it less).  The small file's figure is the least
of two runs (the first pays for imports and first-use caches).
"""

from __future__ import annotations

import contextlib
import io
import resource

import pytest
from many_kernels import many_kernels

from ptxforge.cli import main

N = 6
LIMIT = 2.6   # "more than doubles", with room for the noise of a shared machine


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("many")
    out = {}
    for n in (N, 2 * N):
        p = d / f"many{n}.ptx"
        p.write_text(many_kernels(n, period=N))   # the same kernel shapes, twice
        out[n] = p
    return out


COMMANDS = {
    "analyze": lambda f, d: ["analyze", f, "--json", "--jobs", "1"],
    "sass": lambda f, d: ["sass", f, "--json"],
    "report": lambda f, d: ["report", f, "-o", d / "r.html"],
    "compare": lambda f, d: ["compare", f, f],
    "check": lambda f, d: ["check", f, "--max-registers", "255"],
}


def _cost(argv) -> float:
    start = _cpu()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main([str(a) for a in argv])
    assert code == 0, argv
    return _cpu() - start


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_twice_the_kernels_cost_at_most_twice(command, files, tmp_path, monkeypatch):
    monkeypatch.setenv("PTXFORGE_TOOL_CACHE", "off")   # every run compiles (support/tool_memo)
    argv = COMMANDS[command]
    small = min(_cost(argv(files[N], tmp_path)) for _ in range(2))   # the first: a warm-up
    big = _cost(argv(files[2 * N], tmp_path))
    assert big / small <= LIMIT, (command, small, big)


def test_the_files_double(files):
    """The premise: the big file has twice the kernels and about twice the text."""
    from ptxforge.ptx.parse import parse

    small, big = (parse(files[n].read_text()) for n in (N, 2 * N))
    assert [len([k for k in m.kernels if k.is_entry]) for m in (small, big)] == [N, 2 * N]
    assert 1.8 <= len(files[2 * N].read_text()) / len(files[N].read_text()) <= 2.1


def test_the_ptx_text_is_indexed_once_per_module(files, monkeypatch):
    """The mechanism behind the ratio above, counted rather than timed: explaining every
    kernel's gap indexes the PTX text once and walks each function's lines at most once
    (the 30-minute trace split the whole text once per function per kernel)."""
    from ptxforge.reports import sass_trace
    from ptxforge.reports.analyze import RunOptions, analyze_ptx

    calls = {"index": 0, "walk": 0}
    index, walk = sass_trace.PtxLines.__init__, sass_trace._walk

    def counted_index(self, text):
        calls["index"] += 1
        index(self, text)

    def counted_walk(*a):
        calls["walk"] += 1
        return walk(*a)

    monkeypatch.setattr(sass_trace.PtxLines, "__init__", counted_index)
    monkeypatch.setattr(sass_trace, "_walk", counted_walk)
    text = files[2 * N].read_text()
    a = analyze_ptx(text, "many.ptx", run=RunOptions(explain=True))
    assert all(k.gap is not None for k in a.kernels) and len(a.kernels) == 2 * N
    functions = text.count(".entry ") + text.count(".func ")   # definitions and prototypes
    assert calls["index"] == 1 and 0 < calls["walk"] <= functions
