"""Occupancy calculator: the seed users' numbers, limits, cliffs."""

import pytest

from ptxforge.arch.occupancy import KernelLimits, arch_props, occupancy, register_cliffs
from ptxforge.errors import PtxforgeError


def test_v100_255_registers_one_block():
    o = occupancy(255, 256, "sm_70")
    assert o.active_blocks == 1 and o.occupancy == pytest.approx(0.125)
    assert o.limiting == ("registers",)


def test_v100_128_registers_two_blocks():
    o = occupancy(128, 256, "sm_70")
    assert o.active_blocks == 2 and o.occupancy == pytest.approx(0.25)


def test_sm86_51_registers_four_blocks_not_five():
    o = occupancy(51, 256, "sm_86")
    assert o.active_blocks == 4
    assert o.occupancy == pytest.approx(2 / 3)
    assert o.allocated_registers_per_block == 1792 * 8


@pytest.mark.parametrize("regs,blocks", [(57, 4), (55, 4), (48, 5), (113, 2), (104, 2)])
def test_seed_001_titan_v_split_kernels(regs, blocks):
    assert occupancy(regs, 256, "7.0").active_blocks == blocks


def test_block_size_limit_and_warps():
    assert occupancy(32, 1025, "sm_80").active_blocks == 0
    o = occupancy(16, 1024, "sm_75")
    assert o.active_blocks == 1 and o.limiting[0] == "warps"


def test_shared_memory_limits_with_reserved_kilobyte():
    # 8.0: 48 KB static + 1 KB reserved per block out of 164 KB -> 3 blocks
    o = occupancy(32, 128, "sm_80", shared=48 * 1024)
    assert o.active_blocks == 3 and o.limiting == ("shared_memory",)
    # 7.0 has no reserved kilobyte: 96 KB / 48 KB = 2
    assert occupancy(32, 128, "sm_70", shared=48 * 1024).active_blocks == 2
    # more than the opt-in maximum cannot launch
    assert occupancy(32, 128, "sm_86", dynamic_shared=100 * 1024).active_blocks == 0


def test_carveout_preference():
    full = occupancy(32, 128, "sm_80", shared=20 * 1024)
    small = occupancy(32, 128, "sm_80", shared=20 * 1024, carveout=25)
    assert full.active_blocks == 7 and small.active_blocks == 3


def test_block_limits_per_arch():
    assert [arch_props(a).max_blocks_per_sm for a in ("7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "12.0")] \
        == [32, 16, 32, 16, 24, 32, 24]
    assert occupancy(16, 32, "sm_89").active_blocks == 24


def test_cliffs():
    c = register_cliffs(255, 256, "sm_70")
    assert (c.blocks, c.to_gain, c.next_blocks, c.headroom) == (1, 127, 2, None)
    assert c.caps[:4] == (255, 128, 80, 64)
    c = register_cliffs(51, 256, "sm_86")
    assert (c.blocks, c.to_gain, c.next_blocks, c.headroom) == (4, 3, 5, 13)
    c = register_cliffs(16, 256, "sm_80")
    assert c.to_gain is None and c.blocks == 8


def test_errors_name_what_was_expected():
    with pytest.raises(PtxforgeError, match="unknown target 'sm_42'; expected one of sm_50"):
        occupancy(32, 256, "sm_42")
    with pytest.raises(PtxforgeError, match="no occupancy table for sm_88: "):
        occupancy(32, 256, "sm_88")
    with pytest.raises(PtxforgeError, match="block_size"):
        occupancy(32, 0, "sm_80")
    with pytest.raises(PtxforgeError, match="carveout"):
        occupancy(32, 64, "sm_80", carveout=150)


def test_to_dict_stable_keys():
    d = occupancy(64, 128, "sm_90a").to_dict()
    assert list(d) == ["arch", "registers", "block_size", "shared_per_block", "active_blocks",
                       "active_warps", "max_warps", "occupancy", "limiting", "limits",
                       "launchable", "reason"]
    assert d["arch"] == "sm_90" and d["active_blocks"] == 8
    assert d["launchable"] is True and d["reason"] is None


@pytest.mark.parametrize("kwargs, limiter, words", [
    (dict(registers=32, block_size=256, shared=300000), "shared_memory",
     ["shared memory", "300000 bytes", "301056", "167936"]),
    (dict(registers=255, block_size=1024), "registers",
     ["registers", "262144 registers", "65536", "at most 64 registers/thread"]),
    (dict(registers=32, block_size=1024,
          kernel_limits=KernelLimits(required_threads=128)), "reqntid",
     ["exactly 128 threads", "a block of 1024"]),
    (dict(registers=32, block_size=512, kernel_limits=KernelLimits(max_threads=256)), "block_size",
     ["at most 256 threads", "a block of 512"]),
])
def test_a_block_that_cannot_launch_says_why(kwargs, limiter, words):
    o = occupancy(target="sm_80", **kwargs)
    assert o.active_blocks == 0 and o.occupancy == 0 and not o.launchable
    assert o.limiting[0] == limiter
    for w in words:
        assert w in o.reason, (w, o.reason)
    # the kernel's own limits only bind when they forbid the block size
    both = KernelLimits(required_threads=128, max_threads=128)
    assert occupancy(32, 128, "sm_80", kernel_limits=both).active_blocks == 16


def test_unknown_arch_reason():
    from ptxforge.arch.occupancy import unknown_arch_reason

    assert unknown_arch_reason("sm_90a") is None
    assert "no occupancy table for sm_110" in unknown_arch_reason("sm_110")


@pytest.mark.parametrize("field, value", [("max_threads", -5), ("max_threads", "x"),
                                          ("required_threads", 0), ("max_dynamic_shared", -1),
                                          ("max_threads", True)])
def test_kernel_limits_refuse_bad_values_with_a_clear_error(field, value):
    with pytest.raises(PtxforgeError, match=rf"KernelLimits\.{field}: expected None or an int"):
        KernelLimits(**{field: value})
    assert KernelLimits(max_dynamic_shared=0).max_dynamic_shared == 0
