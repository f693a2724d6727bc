"""Isolated compiles: worker children that really die (SIGSEGV, os._exit) and the real
nvJitLink 13.5 crash on the octree walk at --maxrregcount <= 28 (sm_80)."""

import os
from pathlib import Path

import pytest

from ptxforge.errors import CompileError, CompilerCrashError, UnsupportedError
from ptxforge.toolchain.compile import compile_ptx
from ptxforge.toolchain.isolate import Crash, WorkerPool, error_from_child

from compile_sources import OCTREE_WALK, nvrtc
from crashing_backend import CrashAtCap

PRESSURE = (Path(__file__).parents[1] / "data" / "ptx" / "pressure.ptx").read_text()


def test_a_child_that_dies_is_a_crash_and_the_pool_goes_on():
    with WorkerPool(2) as pool:
        out = pool.map([("call", ("os", "getpid", ())),
                        ("call", ("crashing_backend", "segfault", ())),
                        ("call", ("crashing_backend", "exit_with", (3,))),
                        ("call", ("os", "getpid", ()))])
        assert out[0][0] == "ok" and out[0][1] != os.getpid()
        assert isinstance(out[1], Crash) and out[1].signal == 11
        assert out[1].describe() == "signal 11, SIGSEGV"
        assert isinstance(out[2], Crash) and (out[2].signal, out[2].exit_code) == (None, 3)
        assert out[2].describe() == "exit code 3"
        assert out[3][0] == "ok" and out[3][1] != os.getpid()
        assert pool.run(("call", ("os", "getpid", ())))[0] == "ok"   # still serving


def test_an_exception_in_the_child_comes_back_as_one():
    with WorkerPool(1) as pool:
        kind, info = pool.run(("call", ("ptxforge.arch.targets", "target", ("sm_61x",))))
    assert kind == "raise" and info["type"] == "ptxforge.errors.UnsupportedError"
    err = error_from_child(info)
    assert type(err) is UnsupportedError and "unknown target 'sm_61x'" in str(err)
    with WorkerPool(1) as pool:
        kind, info = pool.run(("call", ("no_such_module_here", "f", ())))
    assert kind == "raise" and "ModuleNotFoundError" in str(error_from_child(info))


def test_isolated_compile_gives_the_in_process_figures():
    here = compile_ptx(PRESSURE, "sm_80", max_registers=32)["pressure"]
    there = compile_ptx(PRESSURE, "sm_80", max_registers=32, isolate=True)["pressure"]
    import attrs
    assert attrs.evolve(there, compile_time_ms=None) == attrs.evolve(here, compile_time_ms=None)
    with pytest.raises(CompileError) as info:                       # errors cross over too
        compile_ptx(PRESSURE.replace("ld.param.u64 %rd1, [src];", "ld.param.u64 %rd1, [nope];"),
                    "sm_80", isolate=True)
    assert "nope" in info.value.log and "offending PTX:" in str(info.value)


def test_a_backend_that_segfaults_raises_instead_of_killing_us():
    with pytest.raises(CompilerCrashError) as info:
        compile_ptx(PRESSURE, "sm_80", backend=CrashAtCap(40), max_registers=32, isolate=True)
    err = info.value
    assert err.crash.signal == 11 and isinstance(err, CompileError)
    assert str(err).startswith("nvJitLink crashed (signal 11, SIGSEGV) at cap 32 compiling "
                               "for sm_80")
    assert compile_ptx(PRESSURE, "sm_80", backend=CrashAtCap(24), max_registers=32,
                       isolate=True)["pressure"].registers == 32


def test_the_real_nvjitlink_crash_is_caught():
    ptx = nvrtc(OCTREE_WALK, "walk", "sm_80")
    assert compile_ptx(ptx, "sm_80", backend="nvjitlink", max_registers=32,
                       isolate=True)["walk"].registers <= 32
    try:
        c = compile_ptx(ptx, "sm_80", backend="nvjitlink", max_registers=24, isolate=True)
    except CompilerCrashError as exc:
        assert exc.crash.signal == 11
        assert str(exc).startswith("nvJitLink crashed (signal 11, SIGSEGV) at cap 24")
        from ptxforge.toolchain.backends import PtxasBackend
        alt = PtxasBackend().for_target("sm_80")
        if alt is not None:
            assert f"hint: {alt.path} (a ptxas executable) accepts sm_80" in str(exc)
        return
    pytest.skip(f"this nvJitLink ({c.tool}) no longer crashes on the octree walk at cap 24")
