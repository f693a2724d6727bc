"""The occupancy table checked against NVIDIA's published numbers, typed in by hand.

tests/arch/test_occupancy_differential.py feeds the registry's own values to both ptxforge and
cuda_occupancy.h, so it cannot see a wrong entry.  Here every compute capability's limits come
from the CUDA C++ Programming Guide's "Technical Specifications per Compute Capability" table
(threads, resident blocks, 32-bit registers and shared memory per SM; registers per block;
shared memory a block may opt into), and the expected block counts are worked out by hand
from them, without ptxforge.
"""

from __future__ import annotations

import pytest

from ptxforge.arch.occupancy import ARCHS, occupancy

KB = 1024

#: cc: (max threads / SM, max resident blocks / SM, registers / SM, registers / block,
#:      shared memory / SM in KB, max shared memory / block in KB (opt-in))
PUBLISHED = {
    "5.0": (2048, 32, 65536, 65536, 64, 48),
    "5.2": (2048, 32, 65536, 65536, 96, 48),
    "5.3": (2048, 32, 65536, 32768, 64, 48),
    "6.0": (2048, 32, 65536, 65536, 64, 48),
    "6.1": (2048, 32, 65536, 65536, 96, 48),
    "6.2": (2048, 32, 65536, 32768, 64, 48),
    "7.0": (2048, 32, 65536, 65536, 96, 96),
    "7.2": (2048, 32, 65536, 65536, 96, 96),
    "7.5": (1024, 16, 65536, 65536, 64, 64),
    "8.0": (2048, 32, 65536, 65536, 164, 163),
    "8.6": (1536, 16, 65536, 65536, 100, 99),
    "8.7": (1536, 16, 65536, 65536, 164, 163),
    "8.9": (1536, 24, 65536, 65536, 100, 99),
    "9.0": (2048, 32, 65536, 65536, 228, 227),
    "10.0": (2048, 32, 65536, 65536, 228, 227),
    "10.3": (2048, 32, 65536, 65536, 228, 227),
    "12.0": (1536, 24, 65536, 65536, 100, 99),
    "12.1": (1536, 24, 65536, 65536, 100, 99),
}


def test_every_table_entry_is_published_here():
    assert sorted(ARCHS, key=lambda cc: tuple(map(int, cc.split(".")))) == \
        sorted(PUBLISHED, key=lambda cc: tuple(map(int, cc.split("."))))


@pytest.mark.parametrize("cc", sorted(PUBLISHED))
def test_limits_match_the_published_table(cc):
    threads, blocks, regs_sm, regs_block, smem_sm, smem_block = PUBLISHED[cc]
    p = ARCHS[cc]
    assert (p.max_threads_per_sm, p.max_blocks_per_sm, p.regs_per_sm, p.regs_per_block) == \
        (threads, blocks, regs_sm, regs_block)
    assert (p.shared_per_sm, p.shared_per_block_optin) == (smem_sm * KB, smem_block * KB)
    assert p.max_threads_per_block == 1024 and p.warp_size == 32


@pytest.mark.parametrize("cc", sorted(PUBLISHED))
@pytest.mark.parametrize("block", [32, 96, 128, 256, 640, 1024])
def test_small_kernels_are_limited_by_threads_or_blocks(cc, block):
    """16 registers, no shared memory: only the thread and block limits can bind, so the
    resident blocks are min(blocks/SM, floor(threads/SM / block)), worked out by hand."""
    threads, blocks, *_ = PUBLISHED[cc]
    warps = -(-block // 32)
    expected = min(blocks, (threads // 32) // warps)
    assert occupancy(16, block, "sm_" + cc.replace(".", "")).active_blocks == expected


@pytest.mark.parametrize("cc,block,expected", [
    ("8.9", 1024, 1), ("8.9", 128, 12), ("8.9", 512, 3), ("8.6", 64, 16), ("8.0", 64, 32),
    ("7.5", 1024, 1), ("7.5", 128, 8), ("9.0", 256, 8), ("12.0", 32, 24), ("5.0", 64, 32),
])
def test_worked_examples(cc, block, expected):
    """A few of the above spelled out: sm_89 holds 48 warps, so one 1024-thread block
    (32 warps; two would need 64) and twelve 4-warp blocks."""
    assert occupancy(16, block, "sm_" + cc.replace(".", "")).active_blocks == expected


@pytest.mark.parametrize("cc,regs,block,expected", [
    # 255 registers round to 256 per thread: 8192 per warp, 65536 / 8192 = 8 warps per SM
    ("7.0", 255, 256, 1), ("8.0", 255, 128, 2), ("8.9", 255, 64, 4),
    # 64 registers: 2048 per warp, 32 warps per SM; a 256-thread block has 8 warps
    ("8.0", 64, 256, 4), ("8.9", 64, 256, 4), ("9.0", 64, 128, 8),
])
def test_register_limited_examples(cc, regs, block, expected):
    assert occupancy(regs, block, "sm_" + cc.replace(".", "")).active_blocks == expected
