"""nvdisasm started the moment ptxas writes the cubin (``analyze``'s default path), with the real
ptxas and nvdisasm: the hook fires once per cubin written, the early run's listing is the one
:func:`~ptxforge.toolchain.nvdisasm.run` prints, and the compile side's SASS is the same as read
afterwards.  The session's tool memo answers known compiles without running ptxas (so without
the hook): these tests turn it off.
"""

from __future__ import annotations

import os
import tempfile

import pytest

from ptxforge.dsl import kernels
from ptxforge.errors import PtxforgeError
from ptxforge.ptx.emit import emit
from ptxforge.reports.analyze_compile import start_early
from ptxforge.toolchain import sass as sass_module
from ptxforge.toolchain.backends import PtxasBackend
from ptxforge.toolchain.compile import CompileOptions, compile_ptx
from ptxforge.toolchain.nvdisasm import LIFE_RANGES, start
from ptxforge.toolchain.ptxas_run import when_cubin_written
from ptxforge.toolchain.sass import sass_liveness


@pytest.fixture
def real_tools(monkeypatch, tmp_path):
    """Every compile runs ptxas (no memo); temporary folders go under ``tmp_path``."""
    monkeypatch.setenv("PTXFORGE_TOOL_CACHE", "off")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _ptx() -> str:
    return emit(kernels.block_reduce_sum(target="sm_80"))


def _leftovers(folder) -> list:
    return sorted(p for p in os.listdir(folder) if p.startswith("ptxforge-"))


def test_the_hook_sees_the_cubin_ptxas_wrote_once_and_only_inside_its_block(real_tools):
    seen: list = []

    def look(path):
        with open(path, "rb") as fh:
            seen.append(fh.read())

    backend = PtxasBackend()
    with when_cubin_written(look):
        raw = backend.compile(_ptx(), "sm_80", CompileOptions())
    assert seen == [raw.cubin] and raw.cubin[:4] == b"\x7fELF"
    backend.compile(_ptx(), "sm_80", CompileOptions())
    assert len(seen) == 1                                   # outside the block: not called
    with when_cubin_written(look):
        with when_cubin_written(lambda path: None):         # an inner block replaces it
            backend.compile(_ptx(), "sm_80", CompileOptions())
        backend.compile(_ptx(), "sm_80", CompileOptions())  # and restores it after
    assert len(seen) == 2


def test_a_started_run_is_read_as_sass_liveness_reads_its_own_and_cleans_up(real_tools,
                                                                          monkeypatch):
    runs: list = []
    with when_cubin_written(lambda path: runs.append(start(None, path))):
        compiled = compile_ptx(_ptx(), "sm_80", backend="ptxas", line_info=True)
    (started,) = runs
    assert started is not None and started.flags == LIFE_RANGES
    early = sass_liveness(compiled, started=started)
    assert _leftovers(real_tools) == []
    monkeypatch.setenv("PTXFORGE_TOOL_CACHE", "disk")   # the reference: nvdisasm run after
    assert early == sass_liveness(compiled)
    assert early.function("block_reduce_sum").peak().count > 0
    assert early.regcount("block_reduce_sum") == compiled["block_reduce_sum"].registers


def test_sass_liveness_refuses_a_started_run_of_other_flags(real_tools):
    runs: list = []
    with when_cubin_written(lambda path: runs.append(start(None, path, ("-c",)))):
        compiled = compile_ptx(_ptx(), "sm_80", backend="ptxas")
    with pytest.raises(ValueError, match="started must run"):
        sass_liveness(compiled, started=runs[0])
    runs[0].discard()
    assert _leftovers(real_tools) == []


def test_a_started_run_on_a_file_that_is_no_cubin_says_nvdisasm_failed(real_tools):
    bogus = real_tools / "not.cubin"
    bogus.write_bytes(b"\x7fELF" + bytes(60))
    started = start(None, str(bogus))
    assert started is not None
    with pytest.raises(PtxforgeError, match=r"nvdisasm -c --life-range-mode narrow failed "
                                            r"on the cubin \(exit \d+\)"):
        started.output()
    assert _leftovers(real_tools) == []


def test_start_without_nvdisasm_is_none(real_tools, monkeypatch):
    monkeypatch.setenv("PTXFORGE_NVDISASM", str(real_tools / "no-such-nvdisasm"))
    cubin = real_tools / "k.cubin"
    cubin.write_bytes(compile_ptx(_ptx(), "sm_80", backend="ptxas").cubin)
    assert start(None, str(cubin)) is None


def test_the_early_compile_reads_the_sass_it_started_and_leaves_no_files(real_tools,
                                                                        monkeypatch):
    later: list = []    # nvdisasm runs made after the compile returned
    memo = sass_module._run
    monkeypatch.setattr(sass_module, "_run", lambda tool, data, flags: later.append(flags)
                        or memo(tool, data, flags))
    early = start_early(_ptx(), None, None, explain=True)
    result = early.side.result()
    sass, why = result.sass
    assert why is None and sass is not None
    assert LIFE_RANGES not in later     # the listing came from the run started at the cubin
    monkeypatch.setenv("PTXFORGE_TOOL_CACHE", "disk")
    assert sass == sass_liveness(result.compiled) and LIFE_RANGES in later
    assert sass.regcount("block_reduce_sum") == result.compiled["block_reduce_sum"].registers
    assert _leftovers(real_tools) == []


def test_the_early_compile_without_nvdisasm_says_why(real_tools, monkeypatch):
    monkeypatch.setenv("PTXFORGE_NVDISASM", str(real_tools / "no-such-nvdisasm"))
    result = start_early(_ptx(), None, None, explain=True).side.result()
    sass, why = result.sass
    assert sass is None and why.startswith("nvdisasm is unavailable")
    assert result.compiled["block_reduce_sum"].registers > 0
