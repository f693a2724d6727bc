"""``mbarrier`` forms beyond what cuda::barrier compiles to, on a PTX kernel that ptxas accepts:
``arrive_drop`` shrinks the next phase, ``expect_tx`` holds a phase open until ``complete_tx``
brings the transaction bytes to zero, and ``try_wait.parity`` reports the phase parity."""

from __future__ import annotations

import numpy as np
import pytest

from ptxforge.emulator import EmulationError
from ptxforge.launch.loader import load

PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry phases(.param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<6>;
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 16;
    add.s64 %rd1, %rd1, %rd2;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra INIT_DONE;
    mbarrier.init.shared.b64 [bar], 4;
INIT_DONE:
    bar.sync 0;
    // phase 0: thread 3 drops out (the next phase expects 3); everyone else arrives
    setp.eq.u32 %p2, %r1, 3;
    @%p2 mbarrier.arrive_drop.shared.b64 %rd3, [bar];
    @!%p2 mbarrier.arrive.shared.b64 %rd3, [bar];
    mbarrier.test_wait.shared.b64 %p3, [bar], %rd3;
    selp.u32 %r2, 1, 0, %p3;
    st.global.u32 [%rd1], %r2;
    bar.sync 0;
    @%p2 bra DONE;
    // phase 1: thread 0 expects 64 bytes; the three arrivals alone do not complete it
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.expect_tx.shared.b64 [bar], 64;
    mbarrier.arrive.shared.b64 %rd4, [bar];
    mbarrier.try_wait.parity.shared.b64 %p3, [bar], 1;
    selp.u32 %r3, 1, 0, %p3;
    st.global.u32 [%rd1+4], %r3;
    @%p1 mbarrier.complete_tx.shared.b64 [bar], 64;
    mbarrier.try_wait.parity.shared.b64 %p3, [bar], 1;
    selp.u32 %r4, 1, 0, %p3;
    st.global.u32 [%rd1+8], %r4;
    mbarrier.test_wait.shared.b64 %p3, [bar], %rd4;
    selp.u32 %r5, 1, 0, %p3;
    st.global.u32 [%rd1+12], %r5;
DONE:
    ret;
}
"""


def test_arrive_drop_expect_tx_complete_tx_and_parity_waits():
    out = np.full((4, 4), 9, np.uint32)
    load(PTX, device="emulator")["phases"](out, grid=1, block=4)
    # phase 0 completes (all four arrived); phase 1 waits on 64 bytes, then completes
    assert out[:3].tolist() == [[1, 0, 1, 1]] * 3
    assert out[3].tolist() == [1, 9, 9, 9]


def test_ptxas_accepts_the_kernel():
    from ptxforge.toolchain.compile import compile_ptx

    assert compile_ptx(PTX, "sm_90") is not None


def test_more_arrivals_than_expected_is_an_error():
    text = PTX.replace("mbarrier.init.shared.b64 [bar], 4;", "mbarrier.init.shared.b64 [bar], 2;")
    with pytest.raises(EmulationError, match="more arrivals than the phase expects"):
        load(text, device="emulator")["phases"](np.zeros(16, np.uint32), grid=1, block=4)
