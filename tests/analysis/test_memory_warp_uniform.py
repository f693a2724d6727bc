"""Warp-uniform branches in the static memory analysis: a register written on both sides of a
branch that every thread of a warp takes the same way (NVRTC's loops peeled by a trip count
set by ``tid.y``, or by ``tid.x`` against a bound known before launch) keeps its figure; the
same loop whose trip count differs between the lanes of a warp stays data-dependent.  A
``selp`` of two indices with the same thread stride, by a predicate one per warp, keeps the
figure too.  The figures are checked against the interpreter in
tests/launch/test_memory_agreement.py."""

from __future__ import annotations

import numpy as np
import pytest

from ptxforge.analysis.memory_access import analyze_memory
from ptxforge.launch.loader import load as load_module
from ptxforge.launch.profile import profile_kernel
from ptxforge.ptx.parse import parse

from memory_kernels import warp_uniform_ptx


@pytest.fixture(scope="module")
def module():
    return parse(warp_uniform_ptx())


def _loads(rep):
    return [a for a in rep.accesses if a.space == "global" and a.direction == "load"]


def _branchy(rep):
    return [a for a in rep.accesses if "thread-dependent branch" in (a.reason or "")]


def test_trip_count_by_tid_y_is_uniform_with_32_threads_along_x(module):
    rep = analyze_memory(module.kernel("rows_by_y"), block=(32, 4))
    assert not _branchy(rep)
    assert [a.sectors_per_request for a in _loads(rep)] == [4.0] * len(_loads(rep))
    assert len(_loads(rep)) >= 5


def test_trip_count_by_tid_y_diverges_when_a_warp_spans_two_rows(module):
    rep = analyze_memory(module.kernel("rows_by_y"), block=(16, 8))
    assert _branchy(rep) and all(a.sectors_per_request is None for a in _branchy(rep))


def test_constant_bound_gives_each_warp_one_trip_count(module):
    rep = analyze_memory(module.kernel("block_stride"), block=96)
    loads = _loads(rep)
    assert len(loads) >= 4 and not _branchy(rep)
    assert {a.sectors_per_request for a in loads} == {4.0}


def test_lane_loop_needs_the_bound_and_a_multiple_of_32(module):
    k = module.kernel("warp_rows")
    unknown = analyze_memory(k, block=128)
    known = analyze_memory(k, block=128, params={"warp_rows_param_2": 288})
    ragged = analyze_memory(k, block=128, params={"warp_rows_param_2": 100})
    assert len(_branchy(unknown)) >= 4 and len(_branchy(ragged)) == len(_branchy(unknown))
    assert not _branchy(known)
    assert {a.sectors_per_request for a in _loads(known)} == {4.0}


def test_ragged_lane_loop_really_differs_on_the_interpreter(module):
    """cols = 100: lanes 0-3 run one more iteration than lanes 4-31, so the unrolled loop's
    requests mix two iterations: the caution above is needed."""
    ptx = warp_uniform_ptx()
    k = module.kernel("warp_rows")
    ragged = {a.index for a in _branchy(analyze_memory(k, block=128,
                                                       params={"warp_rows_param_2": 100}))}
    x = np.arange(8192, dtype=np.float32)
    prof = profile_kernel(load_module(ptx, device="emulator")["warp_rows"], x, np.zeros_like(x),
                          100, grid=1, block=128)
    figures = {r.sectors_per_request for r in prof.instructions
               if r.index in ragged and r.requests}
    assert figures and figures != {4.0}


def test_select_by_a_warp_uniform_predicate_keeps_the_figure(module):
    half = analyze_memory(module.kernel("pick_half"), block=128)
    by_y = analyze_memory(module.kernel("pick_by_y"), block=(32, 4))
    for rep in (half, by_y):
        loads = _loads(rep)
        assert loads and {a.sectors_per_request for a in loads} == {4.0}
        assert all("4*tid.x" in a.address for a in loads)


def test_select_by_the_lane_parity_stays_data_dependent(module):
    rep = analyze_memory(module.kernel("pick_odd"), block=128)
    (load,) = _loads(rep)
    assert load.sectors_per_request is None and load.reason.startswith("data-dependent")
    x = np.arange(8192, dtype=np.float32)
    prof = profile_kernel(load_module(warp_uniform_ptx(), device="emulator")["pick_odd"], x, np.zeros_like(x),
                          grid=1, block=128)
    row = next(r for r in prof.instructions if r.index == load.index)
    assert row.sectors_per_request == 8.0      # odd lanes 1 KiB away: two runs of 4 sectors
