"""``__syncwarp`` (``bar.warp.sync``) in the interpreter's race check: the threads of one warp
that meet at it see each other's earlier shared-memory writes, so a warp-synchronous
reduction is not flagged; without it, or across two warps, the same code is.  Kernels:
tests/support/memory_kernels.py's SYNCWARP (NVRTC, -lineinfo)."""

from __future__ import annotations

import numpy as np
import pytest

from ptxforge.launch.loader import load
from ptxforge.launch.profile import find_races

from memory_kernels import SYNCWARP, line_of, syncwarp_ptx


@pytest.fixture(scope="module")
def mod():
    return load(syncwarp_ptx(), device="emulator")


def _run(mod, name, block=128, grid=2):
    x = np.arange(grid * block, dtype=np.float32) % 13
    out = np.zeros(grid * max(1, block // 32), np.float32)
    return find_races(mod[name], x, out, grid=grid, block=block), x, out


def test_warp_reduction_with_syncwarp_is_not_a_race(mod):
    races, x, out = _run(mod, "warp_sum")
    assert races == []
    assert np.array_equal(out, x.reshape(-1, 32).sum(axis=1))   # and it sums right


def test_warp_reduction_without_syncwarp_is_a_race_inside_the_warp(mod):
    races, _, _ = _run(mod, "warp_sum_unsynced")
    assert races and all(r.space == "shared" for r in races)
    for r in races:
        (b1, t1), (b2, t2) = r.first_thread, r.second_thread
        assert b1 == b2 and t1[0] // 32 == t2[0] // 32     # both threads of one warp


def test_syncwarp_does_not_order_two_warps(mod):
    races, _, _ = _run(mod, "block_sum_syncwarp", block=64)
    raw = [r for r in races if r.kind == "RAW"]
    assert raw, races
    r = raw[0]
    (b1, t1), (b2, t2) = r.first_thread, r.second_thread
    assert b1 == b2 and t1[0] // 32 != t2[0] // 32        # a writer and a reader of two warps
    assert (r.first.line, r.second.line) == (line_of("sw_store", SYNCWARP),
                                             line_of("sw_load", SYNCWARP))
