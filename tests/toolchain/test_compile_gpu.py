"""Driver backend and driver occupancy (need a GPU; skipped with a reason elsewhere).

The driver JIT-compiles with the ptxas of the installed driver; nvJitLink with its own.  Their
register counts are compared for the device's own sm_XY, exactly when both are the same CUDA
release, and the test skips (saying both versions and both counts) when they are not.
"""

from pathlib import Path

import pytest

from ptxforge.arch.occupancy import occupancy
from ptxforge.toolchain.backends import DriverBackend
from ptxforge.toolchain.compile import compile_ptx

PTX = Path(__file__).parents[1] / "data" / "ptx"
pytestmark = pytest.mark.gpu


def _versions() -> tuple:
    """(driver CUDA version, nvJitLink version), each as (major, minor)."""
    from cuda.bindings import nvjitlink

    from ptxforge.launch.device import device_info

    return device_info(0).driver_cuda_version, tuple(nvjitlink.version())


@pytest.mark.parametrize("name", ["axpy.ptx", "pressure.ptx", "local_array.ptx", "barrier.ptx"])
def test_driver_matches_nvjitlink(name):
    ptx = (PTX / name).read_text()
    sm = DriverBackend().device_target()
    d = compile_ptx(ptx, sm, backend="driver")
    n = compile_ptx(ptx, sm, backend="nvjitlink")
    assert [k.name for k in d] == [k.name for k in n]
    for kd in d:
        assert kd.max_threads_per_block >= 1
    driver_cuda, nvj = _versions()
    if driver_cuda != nvj:
        pytest.skip(f"driver JIT is CUDA {driver_cuda}, nvJitLink is {nvj}: different ptxas "
                    f"releases (registers driver {[k.registers for k in d]}, nvJitLink "
                    f"{[k.registers for k in n]})")
    for kd, kn in zip(d, n):
        assert kd.registers == kn.registers
        assert kd.stack_frame == kn.stack_frame
        assert kd.shared == kn.shared


def test_driver_occupancy_matches_calculator():
    ptx = (PTX / "pressure.ptx").read_text()
    be = DriverBackend()
    sm = be.device_target()
    stats = compile_ptx(ptx, sm, backend="driver")["pressure"]
    for block in (64, 128, 256, 512, 1024):
        if block > stats.max_threads_per_block:
            continue
        assert be.max_active_blocks(ptx, "pressure", block) == occupancy(
            stats.registers, block, sm, shared=stats.shared,
            barriers=stats.barriers or 0).active_blocks


@pytest.mark.parametrize("source", ["reduce", "warp", "calls", "gemm"])
def test_the_drivers_count_for_a_loaded_kernel_is_the_default_figure(source):
    """cuModuleLoadData JIT-compiles whole-program, as the default does: same registers for
    every kernel when the driver's ptxas is the same CUDA release as ptxforge's (else a skip
    naming both)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
    from corpus_util import compile_cu, corpus_ptx

    sm = DriverBackend().device_target()
    if sm not in ("sm_80", "sm_90"):
        ptx = compile_cu((Path(__file__).parents[1] / "corpus" / f"{source}.cu").read_text(),
                         source, sm)
    else:
        ptx = corpus_ptx(source, sm)
    default = compile_ptx(ptx, sm)
    driver = compile_ptx(ptx, sm, backend="driver")
    driver_cuda, _ = _versions()
    if driver_cuda[0] != default.tool_version[0]:
        pytest.skip(f"driver JIT is CUDA {driver_cuda}, the default ptxas is "
                    f"{default.tool_version}")
    assert default.mode == driver.mode == "whole-program"
    assert {k.name: k.registers for k in driver} == {k.name: k.registers for k in default}
