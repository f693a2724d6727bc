"""Driver backend and driver occupancy (need a GPU; skipped with a reason elsewhere)."""

from pathlib import Path

import pytest

from ptxforge.backends import DriverBackend
from ptxforge.compile import compile_ptx
from ptxforge.occupancy import occupancy

PTX = Path(__file__).parent / "data" / "ptx"
pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["axpy.ptx", "pressure.ptx", "local_array.ptx", "barrier.ptx"])
def test_driver_matches_nvjitlink(name):
    ptx = (PTX / name).read_text()
    sm = DriverBackend().device_target()
    d = compile_ptx(ptx, sm, backend="driver")
    n = compile_ptx(ptx, sm, backend="nvjitlink")
    for kd, kn in zip(d, n):
        assert kd.registers == kn.registers
        assert kd.stack_frame == kn.stack_frame
        assert kd.shared == kn.shared
        assert kd.max_threads_per_block >= 1


def test_driver_occupancy_matches_calculator():
    ptx = (PTX / "pressure.ptx").read_text()
    be = DriverBackend()
    sm = be.device_target()
    regs = compile_ptx(ptx, sm, backend="driver")["pressure"].registers
    for block in (64, 128, 256, 512, 1024):
        assert be.max_active_blocks(ptx, "pressure", block) == occupancy(regs, block, sm).active_blocks
