"""The result cache (ptxforge/toolchain/result_cache.py) with the real ptxas and nvdisasm: a second
``analyze`` of the same PTX runs neither tool and prints the same bytes; another text, another
option or another executable is another key; a failed compile is never kept; a damaged entry
is a miss; past the size limit the least recently used entries go; ``PTXFORGE_CACHE=off``
keeps nothing.  The test session turns the cache off (tests/conftest.py) and its tool memo
would answer the compiles before the cache is asked: these tests turn both on and off here.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from ptxforge.dsl import kernels
from ptxforge.errors import CompileError
from ptxforge.ptx.emit import emit
from ptxforge.toolchain import nvdisasm, result_cache
from ptxforge.toolchain.compile import compile_ptx

from cli_util import run


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """The result cache on, in a folder of its own; the tool memo off; every ptxas and nvdisasm
    process counted (``cache.runs``)."""
    folder = tmp_path / "results"
    monkeypatch.setenv("PTXFORGE_CACHE", "on")
    monkeypatch.setenv("PTXFORGE_CACHE_DIR", str(folder))
    monkeypatch.setenv("PTXFORGE_TOOL_CACHE", "off")
    runs: list = []
    popen = subprocess.Popen

    class Counted(popen):   # type: ignore[misc, valid-type]
        def __init__(self, args, *rest, **kw):
            runs.append(os.path.basename(str(args[0])))
            super().__init__(args, *rest, **kw)

    monkeypatch.setattr(subprocess, "Popen", Counted)

    class Cache:
        pass

    c = Cache()
    c.folder, c.runs = folder, runs
    return c


def _entries(folder, kind: str) -> list:
    root = folder / kind
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def _tools(runs: list) -> list:
    return [r for r in runs if r in ("ptxas", "nvdisasm")]


def test_a_second_analyze_runs_no_tool_and_prints_the_same_bytes(cache, capsys, tmp_path,
                                                                 monkeypatch):
    ptx = tmp_path / "reduce.ptx"
    ptx.write_text(emit(kernels.block_reduce_sum(target="sm_80")))
    first = run(capsys, "analyze", ptx)
    assert first[0] == 0 and _tools(cache.runs) == ["ptxas", "nvdisasm"]
    assert len(_entries(cache.folder, "ptxas")) == 1 and len(_entries(cache.folder, "nvdisasm")) == 1
    cache.runs.clear()
    second = run(capsys, "analyze", ptx)
    assert _tools(cache.runs) == []                       # both answered by the cache
    assert second == first
    monkeypatch.setenv("PTXFORGE_CACHE", "off")
    cold = run(capsys, "analyze", ptx)
    assert _tools(cache.runs) == ["ptxas", "nvdisasm"] and cold == first


def test_another_text_or_option_is_another_key(cache):
    ptx = emit(kernels.block_reduce_sum(target="sm_80"))
    base = compile_ptx(ptx, "sm_80", backend="ptxas")
    again = compile_ptx(ptx, "sm_80", backend="ptxas")
    assert _tools(cache.runs) == ["ptxas"] and again.cubin == base.cubin
    assert again["block_reduce_sum"].registers == base["block_reduce_sum"].registers
    capped = compile_ptx(ptx, "sm_80", backend="ptxas", max_registers=16)
    other = compile_ptx(ptx + "\n// another text\n", "sm_80", backend="ptxas")
    assert _tools(cache.runs) == ["ptxas", "ptxas", "ptxas"]
    assert capped["block_reduce_sum"].registers <= 16 and other.cubin is not None
    assert len(_entries(cache.folder, "ptxas")) == 3


def test_a_failed_compile_is_never_kept(cache):
    bad = emit(kernels.block_reduce_sum(target="sm_80")).replace("ret;", "frobnicate.u32 %r1;", 1)
    for _ in range(2):
        with pytest.raises(CompileError):
            compile_ptx(bad, "sm_80", backend="ptxas")
    assert _tools(cache.runs) == ["ptxas", "ptxas"]       # the tool's own error, each time
    assert _entries(cache.folder, "ptxas") == []


def test_a_damaged_entry_is_a_miss_and_is_replaced(cache):
    ptx = emit(kernels.block_reduce_sum(target="sm_80"))
    base = compile_ptx(ptx, "sm_80", backend="ptxas")
    (entry,) = _entries(cache.folder, "ptxas")
    entry.write_bytes(b"not zlib")
    again = compile_ptx(ptx, "sm_80", backend="ptxas")
    assert _tools(cache.runs) == ["ptxas", "ptxas"] and again.cubin == base.cubin
    assert result_cache.load_ptxas(entry.name) is not None    # a good entry again


def test_nvdisasm_listing_is_kept_by_cubin_tool_and_flags(cache):
    cubin = compile_ptx(emit(kernels.block_reduce_sum(target="sm_80")), "sm_80").cubin
    tool = nvdisasm.find_nvdisasm()
    cache.runs.clear()
    text = nvdisasm.run(tool, cubin, nvdisasm.LIFE_RANGES)
    assert nvdisasm.run(tool, cubin, nvdisasm.LIFE_RANGES) == text
    plain = nvdisasm.run(tool, cubin, ("-c",))
    assert _tools(cache.runs) == ["nvdisasm", "nvdisasm"] and plain != text
    path = cache.folder / "module.cubin"
    path.write_bytes(cubin)
    kept = nvdisasm.start(tool, str(path), nvdisasm.LIFE_RANGES)
    assert isinstance(kept, nvdisasm.Kept) and kept.output() == text
    assert kept.flags == nvdisasm.LIFE_RANGES and kept.tool == tool
    assert _tools(cache.runs) == ["nvdisasm", "nvdisasm"]


def test_off_keeps_nothing(cache, monkeypatch):
    monkeypatch.setenv("PTXFORGE_CACHE", "off")
    ptx = emit(kernels.block_reduce_sum(target="sm_80"))
    compile_ptx(ptx, "sm_80", backend="ptxas")
    compile_ptx(ptx, "sm_80", backend="ptxas")
    assert _tools(cache.runs) == ["ptxas", "ptxas"] and not cache.folder.exists()


def test_a_folder_that_cannot_be_written_is_no_cache(cache, monkeypatch, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("PTXFORGE_CACHE_DIR", str(blocked / "results"))
    ptx = emit(kernels.block_reduce_sum(target="sm_80"))
    first = compile_ptx(ptx, "sm_80", backend="ptxas")
    second = compile_ptx(ptx, "sm_80", backend="ptxas")
    assert _tools(cache.runs) == ["ptxas", "ptxas"] and first.cubin == second.cubin


def test_past_the_limit_the_least_recently_used_go(cache, monkeypatch):
    monkeypatch.setenv("PTXFORGE_CACHE_MB", "1")
    noise = [os.urandom(400 * 1024) for _ in range(4)]     # does not compress: 400 KiB each
    keys = [result_cache.digest("entry", str(k)) for k in range(4)]
    result_cache.put("nvdisasm", keys[0], noise[0])
    result_cache.put("nvdisasm", keys[1], noise[1])
    past = (cache.folder / "nvdisasm" / keys[0][:2] / keys[0]).stat().st_mtime_ns - 10**9
    os.utime(cache.folder / "nvdisasm" / keys[1][:2] / keys[1], ns=(past, past))
    assert result_cache.get("nvdisasm", keys[0]) == noise[0]   # used now: the newest
    result_cache.put("nvdisasm", keys[2], noise[2])            # 1.2 MiB: the oldest goes
    assert result_cache.get("nvdisasm", keys[1]) is None
    assert result_cache.get("nvdisasm", keys[0]) == noise[0]
    assert result_cache.get("nvdisasm", keys[2]) == noise[2]
