"""``--jobs N`` and several inputs: the same bytes for every N, every file analysed in order.

``analyze`` takes several files and folders (each file's report in turn, JSON a list) and
analyses the kernels of one big file in worker processes; ``check`` and ``diff`` analyse the
files of folders in worker processes.  The outputs with 1 and 2 jobs are compared byte for
byte; a file that cannot be analysed is named and the others are still analysed.
"""

from __future__ import annotations

import json
import re

import pytest
from build_kit import write_build
from cli_util import flat, run
from many_kernels import many_kernels

from ptxforge import analyze_pressure
from ptxforge.reports import kernel_pool


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    return write_build(tmp_path_factory.mktemp("build"))


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    p = tmp_path_factory.mktemp("many") / "many.ptx"
    p.write_text(many_kernels(6))
    return p


def test_analyze_kernels_in_workers_give_the_same_bytes(many, capsys, monkeypatch):
    monkeypatch.setattr(kernel_pool, "MIN_INSTRUCTIONS", 0)   # a pool even for this file
    outs = {}
    for jobs in (1, 2):
        code, out, err = run(capsys, "analyze", many, "--json", "--jobs", jobs)
        assert code == 0, err
        outs[jobs] = out
    assert outs[1] == outs[2]
    kernels = json.loads(outs[2])["kernels"]
    assert len(kernels) == 6
    assert all(k["gap"] is not None and k["ptxas"]["registers"] > 0 for k in kernels)


def test_the_pool_is_used_for_a_big_file(many, monkeypatch):
    """The premise of the test above: with two jobs the kernels go to a pool."""
    from ptxforge.ptx.parse import parse

    monkeypatch.setattr(kernel_pool, "MIN_INSTRUCTIONS", 0)
    text = many.read_text()
    m = parse(text)
    entries = [k for k in m.kernels if k.is_entry]
    pool = kernel_pool.make_pool(m, entries, "sm_80", text, jobs=2)
    assert pool is not None and pool.jobs == 2
    try:
        parts = pool.parts()
    finally:
        pool.close()
    assert [p.pressure.peak.units for p in parts] == [
        analyze_pressure(k).peak.units for k in entries]


def test_the_parent_and_the_worker_share_the_kernels(many, monkeypatch, tmp_path):
    """Two jobs are this process and one worker, taking kernels from one counter: each kernel
    is analysed once, some here and some in the worker (this process waits, at its first
    kernel, until the worker has taken one), and the parts come back in the kernels' order."""
    import os
    import time

    from ptxforge.ptx.parse import parse

    monkeypatch.setattr(kernel_pool, "MIN_INSTRUCTIONS", 0)
    log, parent, real = tmp_path / "taken.txt", os.getpid(), kernel_pool.kernel_part

    def taken() -> list:
        return [line.split() for line in log.read_text().splitlines()] if log.exists() else []

    def marked(k, tgt):
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()} {k.name}\n")
        deadline = time.monotonic() + 30
        while os.getpid() == parent and time.monotonic() < deadline and \
                all(int(pid) == parent for pid, _ in taken()):
            time.sleep(0.01)
        return real(k, tgt)

    monkeypatch.setattr(kernel_pool, "kernel_part", marked)
    text = many.read_text()
    entries = [k for k in parse(text).kernels if k.is_entry]
    pool = kernel_pool.make_pool(parse(text), entries, "sm_80", text, jobs=2)
    try:
        parts = pool.parts()
    finally:
        pool.close()
    pids = {int(pid) for pid, _ in taken()}
    assert parent in pids and len(pids) == 2
    assert sorted(name for _, name in taken()) == sorted(k.name for k in entries)
    assert [p.kernel.name for p in parts] == [k.name for k in entries]
    assert [p.pressure.peak.units for p in parts] == [
        analyze_pressure(k).peak.units for k in entries]


def test_analyze_several_files_and_a_folder(build, many, capsys):
    code, out, err = run(capsys, "analyze", build, many, "--no-compile", "--json", "--jobs", 2)
    assert code == 0, err
    reports = json.loads(out)
    files = [r["file"] for r in reports]
    assert files == sorted(str(p) for p in build.glob("*.ptx")) + [str(many)]
    assert all(r["schema"] == "ptxforge.analyze/1" and r["kernels"] for r in reports)
    code, text, _ = run(capsys, "analyze", build, many, "--no-compile", "--jobs", 1)
    assert code == 0
    heads = re.findall(r"(\S+\.ptx): PTX \d", flat(text))     # each file's header, in order
    assert [h.split("/")[-1] for h in heads] == [f.split("/")[-1] for f in files]


def test_a_bad_file_is_named_and_the_rest_analysed(build, tmp_path, capsys):
    d = tmp_path / "mixed"
    write_build(d, sources=("pressure",), local_array=False)
    (d / "broken.ptx").write_text(".version 8.0\n.target sm_80\n.address_size 64\n"
                                  ".visible .entry k() { bogus.op; }\n")
    code, out, err = run(capsys, "analyze", d, "--no-compile", "--json", "--jobs", 2)
    assert code == 1
    assert "broken.ptx" in err and "bogus" in err
    assert [r["file"] for r in json.loads(out)] == [str(d / "pressure.ptx")]


@pytest.mark.parametrize("command", ["check", "diff"])
def test_folders_in_workers_give_the_same_bytes(command, build, capsys):
    argv = {"check": ["check", build, "--max-registers", 64],
            "diff": ["diff", build, build, "--all"]}[command]
    outs = {}
    for jobs in (1, 2):
        code, out, err = run(capsys, *argv, "--jobs", jobs)
        outs[jobs] = (code, out)
    assert outs[1] == outs[2]
    assert "dot_block<128>" in outs[1][1]   # a kernel of templates.ptx


def test_jobs_must_be_a_positive_count(capsys, many):
    code, _, err = run(capsys, "analyze", many, "--jobs", 0)
    assert code == 2 and "job count must be 1..1024, got 0" in err


def test_a_file_of_globals_is_listed_not_an_error(tmp_path, capsys):
    d = tmp_path / "mixed"
    write_build(d, sources=("pressure",), local_array=False)
    (d / "globals.ptx").write_text(".version 8.0\n.target sm_80\n.address_size 64\n"
                                   ".global .align 4 .u32 counter;\n")
    code, out, err = run(capsys, "analyze", d, "--no-compile", "--json", "--jobs", 1)
    assert code == 0, err
    reports = {r["file"].split("/")[-1]: r for r in json.loads(out)}
    assert reports["globals.ptx"]["kernels"] == [] and reports["pressure.ptx"]["kernels"]
    code, text, _ = run(capsys, "analyze", d, "--no-compile", "--jobs", 1)
    assert code == 0 and "globals.ptx: no kernel (no .entry and no .func with a body)" in text


@pytest.mark.parametrize("field, value, words", [
    ("jobs", 0, "RunOptions.jobs: expected a worker count of 1 or more (None: the cores), got 0"),
    ("jobs", "2", "RunOptions.jobs: expected a worker count"),
    ("explain", "yes", "RunOptions.explain: expected True, False or None, got 'yes'"),
    ("progress", 3, "RunOptions.progress: expected a callable progress(i, n, name) or None"),
])
def test_run_options_refuse_a_bad_value_by_name(field, value, words):
    from ptxforge.errors import PtxforgeError
    from ptxforge.reports.analyze import RunOptions

    with pytest.raises(PtxforgeError) as exc:
        RunOptions(**{field: value})
    assert words in str(exc.value)


def test_the_default_leaves_the_compiler_a_core(many, monkeypatch):
    """With no ``--jobs``, one file's kernels go to the cores less the one ptxas (then
    nvdisasm) runs on where the file is compiled, and to every core where it is not; a
    ``--jobs`` given is taken as given."""
    from ptxforge import _parallel
    from ptxforge.ptx.parse import parse
    from ptxforge.reports import analyze_compile

    monkeypatch.setattr(kernel_pool, "MIN_INSTRUCTIONS", 0)
    monkeypatch.setattr(_parallel, "default_jobs", lambda: 2)
    assert (_parallel.kernel_jobs(None, True), _parallel.kernel_jobs(None, False)) == (1, 2)
    assert _parallel.kernel_jobs(2, True) == 2
    text = many.read_text()
    m = parse(text)
    entries = [k for k in m.kernels if k.is_entry]
    assert kernel_pool.make_pool(m, entries, "sm_80", text, None, compiling=True) is None
    pool = kernel_pool.make_pool(m, entries, "sm_80", text, None, compiling=False)
    assert pool is not None and pool.jobs == 2
    pool.close()
    assert not analyze_compile._pool_possible(None)   # so a big file compiles before its parse
    monkeypatch.setattr(_parallel, "default_jobs", lambda: 3)
    assert analyze_compile._pool_possible(None) == _parallel.can_fork()
