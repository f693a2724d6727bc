"""The fast list scheduler (heaps, register indices, implicit terminator edges, early stops)
against the scheduler as first written (tests/support/listsched_reference.py): the same
order and the same peak on every corpus kernel, and the early stops (``stop_at``,
``floor``) never change what ``predict_registers`` reads from the peak."""

from __future__ import annotations

import functools
import time

import pytest
from listsched_reference import digest_of, reference_schedule, remembered_reference_schedule

from ptxforge.analysis.liveness import analyze_liveness
from ptxforge.analysis.prediction import if_convert, list_schedule, sass_view
from ptxforge.ptx import ir
from ptxforge.ptx import types as T

from kernel_corpus import corpus, corpus_modules
from prediction_variants import FAMILIES

BUDGETS = (0, 16, 25, 57, 1000)


@functools.cache
def _scheduled_kernels() -> list:
    """Every corpus kernel (sm_80) as the prediction schedules it: the SASS view with short
    branches predicated."""
    modules = corpus_modules("sm_80")   # parsed once per session, shared
    out = []
    for k in corpus("sm_80"):
        kernel = modules[k.ptx].kernel(k.kernel)
        out.append((k.id, if_convert(sass_view(kernel).kernel)[0]))
    return out


def _ops(kernel) -> list:
    return [(i.opcode, i.operands, i.guard) for i in kernel.instructions]


def test_the_corpus_schedules_match_the_reference_instruction_for_instruction():
    kernels = _scheduled_kernels()
    assert len(kernels) > 300
    reordered = 0
    for kid, k in kernels:
        lv = analyze_liveness(k)
        digest = digest_of(k)
        for budget in BUDGETS:
            # the reference's answer for this very kernel, budget and code is remembered on
            # disk (tests/support/content_memo.py); list_schedule runs every time
            ref_kernel, ref_peak = remembered_reference_schedule(k, budget, liveness=lv,
                                                                 kernel_digest=digest)
            got = list_schedule(k, budget, liveness=lv)
            assert got.peak == ref_peak, (kid, budget)
            assert _ops(got.kernel) == _ops(ref_kernel), (kid, budget)
            reordered += _ops(ref_kernel) != _ops(k)
    assert reordered > 100  # the comparison is about real reorderings


def test_the_remembered_reference_is_the_reference():
    """The disk memo of the reference (above) answers what the reference computes now."""
    for kid, k in _scheduled_kernels()[::40]:
        lv = analyze_liveness(k)
        for budget in BUDGETS:
            fresh_kernel, fresh_peak = reference_schedule(k, budget, liveness=lv)
            kept_kernel, kept_peak = remembered_reference_schedule(k, budget, liveness=lv)
            assert (kept_peak, _ops(kept_kernel)) == (fresh_peak, _ops(fresh_kernel)), kid


def test_early_stops_keep_what_the_prediction_reads():
    """``stop_at``: the peak capped there is the full schedule's, capped; ``floor``: the peak
    raised to it is the full schedule's, raised."""
    for kid, k in _scheduled_kernels()[::3]:
        lv = analyze_liveness(k)
        for budget in (16, 25):
            full = list_schedule(k, budget, liveness=lv).peak
            for stop in (8, 25, full, full + 1):
                s = list_schedule(k, budget, stop_at=stop, liveness=lv)
                assert min(s.peak, stop) == min(full, stop), (kid, budget, stop)
                if s.peak < stop:  # it ran to the end: the order is the full schedule's
                    assert s.peak == full
            for floor in (8, 25, full, full + 5):
                s = list_schedule(k, budget, liveness=lv, floor=floor)
                assert max(s.peak, floor) == max(full, floor), (kid, budget, floor)


def _wide_block(n: int, in_place: bool = False, reused: bool = False) -> ir.Kernel:
    """One basic block: ``n`` independent global loads, each added into a running sum, the
    sum stored (every load is ready at once: the ready list holds ``n``); ``in_place``: the
    sum is one register written ``n`` times (the DSL's in-place accumulator); ``reused``:
    every load writes the same register (it dies and is born ``n`` times)."""
    base = ir.Register("%rd1", T.u64)
    body = [ir.Instruction("ld.param.u64", (base, ir.Address(ir.Symbol("p"))), 1)]
    acc = ir.Register("%f0", T.f32)
    body.append(ir.Instruction("mov.f32", (acc, ir.Immediate(0.0, T.f32)), 1))
    for j in range(1, n + 1):
        v = ir.Register(f"%f{1 if reused else 2 * j - 1}", T.f32)
        s = acc if in_place else ir.Register(f"%f{2 * j}", T.f32)
        body.append(ir.Instruction("ld.global.f32", (v, ir.Address(base, 4 * j)), 1))
        body.append(ir.Instruction("add.f32", (s, acc, v), 1))
        acc = s
    body += [ir.Instruction("st.global.f32", (ir.Address(base), acc)), ir.Instruction("ret")]
    return ir.Kernel("wide", body=tuple(body))


def _best(f, repeat: int = 3) -> float:
    """The least CPU time of ``repeat`` runs of ``f`` (CPU, not wall-clock: a busy machine
    stretched the wall-clock figure of one size and not the other)."""
    times = []
    for _ in range(repeat):
        t = time.process_time()
        f()
        times.append(time.process_time() - t)
    return min(times)


@pytest.mark.parametrize(("budget", "shape"), [(0, {}), (25, {}), (0, {"in_place": True}),
                                               (25, {"reused": True})])
def test_a_huge_block_schedules_in_near_linear_time(budget, shape):
    # budget 0: the pressure-first pick on every step, the path that scanned the whole ready
    # list (quadratic: 2048 loads took 3 s); in place and reused: one register written n
    # times; the same order as the reference on a small block
    small = _wide_block(300, **shape)
    ref_kernel, ref_peak = reference_schedule(small, budget)
    got = list_schedule(small, budget)
    assert (got.peak, _ops(got.kernel)) == (ref_peak, _ops(ref_kernel))
    k1, k4 = _wide_block(2000, **shape), _wide_block(8000, **shape)
    lv1, lv4 = analyze_liveness(k1), analyze_liveness(k4)
    t1 = _best(lambda: list_schedule(k1, budget, liveness=lv1))
    t4 = _best(lambda: list_schedule(k4, budget, liveness=lv4))
    # 4x the instructions: a linear scheduler takes ~4x (n log n a little more), the
    # quadratic one took 16x; the margin absorbs a busy machine
    assert t4 < 8 * t1 + 0.05, (t1, t4)


def test_the_unrolled_variants_schedule_as_the_reference():
    build, sizes = FAMILIES["unrolling"]
    for size in sizes:
        k = if_convert(sass_view(build(size).kernels[-1]).kernel)[0]
        for budget in BUDGETS:
            ref_kernel, ref_peak = reference_schedule(k, budget)
            got = list_schedule(k, budget)
            assert (got.peak, _ops(got.kernel)) == (ref_peak, _ops(ref_kernel)), (size, budget)
