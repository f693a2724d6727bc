"""Shared test fixtures: GPU skipping, real-ptxas acceptance (nvJitLink, no GPU needed), and
the memo of ptxas and nvdisasm runs (tests/support/tool_memo.py)."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import pytest

# The tests' helper modules (corpus_util, cli_util, liveness_kit, ...) live in tests/support/ and
# are imported by plain name.  isolate's worker processes get this sys.path from the parent;
# a ``python -c`` child inserts 'tests/support' itself.
SUPPORT = Path(__file__).resolve().parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

# Bytecode under a private cache even where PYTHONDONTWRITEBYTECODE is set: before the heavy
# imports below and before xdist starts its workers (they inherit the environment).
import bytecode_cache

bytecode_cache.install()

# The package's own result cache (ptxforge/toolchain/result_cache.py) stays off in the tests,
# in this process and the commands it starts: a test sees ptxas and nvdisasm run (or the tool
# memo below answer), never a user's cache folder.  tests/toolchain/test_result_cache.py turns
# it on in a folder of its own.
os.environ["PTXFORGE_CACHE"] = "off"

# Triton 3.9 warns once per process that its default FP fusion (on) will change in 3.10; the
# tests' Triton kernels are compiled with fusion on, as they always were, whatever the version
# (the warning landed in whichever test compiled Triton first in a worker).
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

# The cyclic collector runs a full collection less often in the test processes: a worker holds
# large caches for the whole session (parsed corpora, the reference schedules, hypothesis's
# engine), and every full collection walked them (about 12% of the CPU of test_strict +
# test_prediction, 13% of test_listsched_reference + test_properties_parser, 2-3x less with
# this threshold).  Only when garbage cycles are freed changes, not what a test computes.
gc.set_threshold(10_000, 10, 10)

import tool_memo  # noqa: E402

import hypothesis_profiles  # noqa: E402, F401  (registers "default"/"thorough"/"quick" before --hypothesis-profile applies)

# Each distinct ptxas / nvdisasm run once (memory, and on disk under the corpus cache): many
# tests analyse the same few files.  Only successful runs are remembered; see tool_memo.
tool_memo.install()

# The generator's catalogue probe and the test-side references, remembered on disk keyed by the
# package's source (tests/support/content_memo.py).
import content_memo

content_memo.install()

# An xdist worker whose session has finished ends without tearing its heap down (the
# controller waits for every worker to exit): tests/support/worker_exit.py.
import worker_exit  # noqa: E402

worker_exit.install()


def pytest_sessionfinish(session, exitstatus):
    worker_exit.finished()


def _gpu_reason() -> str | None:
    """None when a GPU and driver are usable, else why not."""
    try:
        from cuda.bindings import driver
    except Exception as exc:  # pragma: no cover - depends on the machine
        return f"cuda.bindings.driver not importable: {exc}"
    try:
        (err,) = driver.cuInit(0)
    except Exception as exc:  # pragma: no cover
        return f"CUDA driver library not loadable: {exc}"
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"cuInit failed ({err.name}): no NVIDIA GPU or driver on this machine"
    err, count = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or count == 0:
        return "no CUDA device present"
    return None


_GPU_REASON = _gpu_reason()


def pytest_collection_modifyitems(config, items):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # the longest files start first (tests/support/file_order.py; every worker computes
        # the same order, which xdist checks)
        import file_order

        items[:] = file_order.ordered(items)
    if _GPU_REASON is None:
        return
    skip = pytest.mark.skip(reason=f"gpu test skipped: {_GPU_REASON}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# --- real ptxas through nvJitLink (no GPU needed) -------------------------------------------
# A deliberately small helper so tests can ask ptxas before ptxforge.toolchain.compile existed; it runs
# the real ptxas inside nvJitLink and returns its verbose log.

def nvjitlink_compile(ptx: str, arch: str = "sm_80", extra: tuple = ()) -> str:
    """Compile PTX with nvJitLink; return ptxas's info log, raise AssertionError with the log.
    An accepted module's log is remembered (tool_memo): the same PTX is not compiled twice."""
    return tool_memo.nvjitlink_log(ptx, (arch, *extra),
                                   lambda: _nvjitlink_compile(ptx, arch, tuple(extra)))


def _nvjitlink_compile(ptx: str, arch: str, extra: tuple) -> str:
    from cuda.bindings import nvjitlink

    data = ptx.encode()
    handle = nvjitlink.create(2 + len(extra), [f"-arch={arch}", "-verbose", *extra])
    try:
        ok = True
        try:
            # Syntax and version errors surface at add_data, the rest at complete.
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "test.ptx")
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError:
            ok = False
        size = nvjitlink.get_error_log_size(handle)
        err = bytearray(size)
        if size:
            nvjitlink.get_error_log(handle, err)
        size = nvjitlink.get_info_log_size(handle)
        info = bytearray(size)
        if size:
            nvjitlink.get_info_log(handle, info)
    finally:
        nvjitlink.destroy(handle)
    if not ok:
        raise AssertionError(f"ptxas rejected the PTX for {arch}:\n{err.decode(errors='replace')}\n{ptx}")
    return info.decode(errors="replace")


@pytest.fixture
def ptxas_accepts():
    """Call ``ptxas_accepts(ptx, arch)``: fails the test with ptxas's log if rejected."""
    return nvjitlink_compile
