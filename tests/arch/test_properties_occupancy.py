"""Property: the occupancy calculator is monotone for every architecture it supports: more
registers per thread, more threads per block or more shared memory per block never give more
resident blocks per SM (all other inputs held fixed)."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from ptxforge.arch.occupancy import ARCHS, occupancy

import hypothesis_profiles  # noqa: F401  (registers and loads the profiles)

_ARCH = st.sampled_from(sorted(ARCHS))
_REGS = st.integers(0, 255)
_BLOCK = st.integers(1, 1024)
_SMEM = st.integers(0, 232 * 1024)


@st.composite
def _case(draw):
    """An architecture and a launch configuration (carveout: the driver default or a %)."""
    return dict(arch=draw(_ARCH), registers=draw(_REGS), block_size=draw(_BLOCK),
                shared=draw(_SMEM), dynamic_shared=draw(st.sampled_from((0, 0, 4096, 40000))),
                barriers=draw(st.integers(1, 16)),
                carveout=draw(st.one_of(st.none(), st.integers(0, 100))))


def _blocks(case: dict, **change) -> int:
    c = {**case, **change}
    arch = "sm_" + c.pop("arch").replace(".", "")
    return occupancy(c.pop("registers"), c.pop("block_size"), arch, **c).active_blocks


def _launchable(case: dict) -> int:
    """The case's resident blocks, assuming at least one: a case that fits no block would make
    "never more blocks" hold trivially (0 <= 0), so it is not an example."""
    base = _blocks(case)
    assume(base > 0)
    return base


@given(_case(), st.integers(1, 255))
def test_more_registers_never_give_more_blocks(case, more):
    base = _launchable(case)
    bigger = min(case["registers"] + more, 255)
    assert _blocks(case, registers=bigger) <= base


@given(_case(), st.integers(1, 1024))
def test_more_threads_never_give_more_blocks(case, more):
    base = _launchable(case)
    assert _blocks(case, block_size=case["block_size"] + more) <= base


@given(_case(), st.integers(1, 64 * 1024))
def test_more_shared_memory_never_gives_more_blocks(case, more):
    base = _launchable(case)
    assert _blocks(case, shared=case["shared"] + more) <= base
    assert _blocks(case, dynamic_shared=case["dynamic_shared"] + more) <= base


@given(_ARCH, _BLOCK)
def test_blocks_fall_to_zero_only_past_a_hard_limit(arch, block):
    """A tiny kernel always fits at least one block of a legal size."""
    assert _blocks(dict(arch=arch, registers=16, block_size=block, shared=0, dynamic_shared=0,
                        barriers=1, carveout=None)) >= 1
