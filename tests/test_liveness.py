"""Liveness and pressure per instruction, hand-checked on small kernels built from ir classes."""

from __future__ import annotations

import pytest

from liveness_kit import SAMPLES, kernel, ptx
from ptxforge import ir, types
from ptxforge.liveness import analyze_liveness, bits_of, mask_of


def lv_of(name_or_text: str):
    return analyze_liveness(kernel(SAMPLES.get(name_or_text, name_or_text)))


def names(lv, regs):
    return [lv.registers[r].name for r in regs]


def test_bitset_helpers_round_trip():
    idx = [0, 3, 7, 8, 63, 64, 1000]
    m = mask_of(idx, 1001)
    assert m == sum(1 << i for i in idx)
    assert bits_of(m) == idx
    assert bits_of(0) == []


def test_straight_line():
    lv = lv_of("straight")
    assert lv.series("at") == [2, 3, 4, 3, 4, 3, 0, 0]
    assert lv.series("before") == [0, 2, 3, 4, 3, 4, 3, 0]
    assert lv.series("after") == [2, 3, 4, 3, 4, 3, 0, 0]
    assert names(lv, lv.live_at(2)) == ["%rd1", "%f1", "%f2"]
    assert names(lv, lv.live_at(3, "before")) == ["%rd1", "%f1", "%f2"]
    assert names(lv, lv.live_at(3, "after")) == ["%rd1", "%f3"]
    assert lv.counts(2) == {"pred": 0, "b16": 0, "b32": 0, "b64": 1, "b128": 0, "f32": 2, "f64": 0}


def test_64_bit_values_count_two_units():
    lv = lv_of("f64")
    assert lv.series("at") == [2, 4, 6, 4, 0, 0]
    assert lv.counts(2)["f64"] == 2 and lv.counts(2)["b64"] == 1
    assert lv.class_peaks()["f64"] == (2, 2)


def test_b128_counts_four_units():
    k = kernel("""
        ld.param.u64 %rd1, [p];
        ld.global.b128 %rq1, [%rd1];
        st.global.b128 [%rd1+16], %rq1;
        ret;
    """)
    lv = analyze_liveness(k)
    assert lv.series("at") == [2, 6, 0, 0]


def test_diamond():
    lv = lv_of("diamond")
    assert [(b.start, b.end, b.successors) for b in lv.cfg.blocks] == \
        [(0, 4, (1, 2)), (4, 8, (3,)), (8, 9, (3,)), (9, 11, ())]
    assert lv.series("at") == [2, 3, 3, 3, 4, 4, 3, 3, 3, 0, 0]
    assert lv.series("at", "pred") == [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    # The else arm only needs the pointer; the join needs the pointer and %r3 from either arm.
    assert names(lv, lv.live_in(2)) == ["%rd1"]
    assert names(lv, lv.live_in(3)) == ["%rd1", "%r3"]
    assert names(lv, lv.live_out(0)) == ["%rd1", "%r1"]
    assert lv.series("before")[8] == 2


def test_loop_carried_accumulator_is_live_over_the_whole_loop():
    lv = lv_of("loop")
    assert lv.series("at") == [2, 3, 4, 5, 4, 4, 4, 4, 0, 0]
    assert lv.series("at", "pred") == [0, 0, 0, 0, 0, 0, 1, 0, 0, 0]
    header = lv.cfg.loops[0].header
    assert names(lv, lv.live_in(header)) == ["%rd1", "%f1", "%r1"]
    f1 = lv.index["%f1"]
    assert all(f1 in lv.live_at(i) for i in range(1, 8))
    assert f1 not in lv.live_at(8)
    lengths = lv.live_lengths([lv.index[n] for n in ("%rd1", "%f1", "%r1", "%f2")])
    assert [lengths[lv.index[n]] for n in ("%rd1", "%f1", "%r1", "%f2")] == [8, 7, 6, 1]


def test_predicated_definition_does_not_kill():
    lv = lv_of("guarded")
    assert lv.series("at") == [2, 3, 4, 3, 3, 0, 0]
    assert lv.index["%r1"] in lv.live_at(2)
    # Without the guard the first %r1 is dead at once: only its own instruction counts it.
    plain = lv_of(SAMPLES["guarded"].replace("@%p1 mov", "mov"))
    assert plain.series("at") == [2, 3, 3, 2, 3, 0, 0]
    assert plain.index["%r1"] not in plain.live_at(2)


def test_register_defined_only_under_predicate_is_not_live_from_entry():
    lv = lv_of("guarded_only")
    assert lv.series("at") == [2, 3, 2, 3, 0, 0]
    r2 = lv.index["%r2"]
    # Backward liveness alone reaches the entry (no definition kills it) ...
    assert lv.live_in_bits[0] >> r2 & 1
    # ... but no definition can have happened there, so it is not counted.
    assert r2 not in lv.live_in(0)
    assert [i for i in range(6) if r2 in lv.live_at(i)] == [3]


def test_defined_under_predicate_in_a_branch_and_used_after_the_join():
    lv = lv_of("""
        ld.param.u64 %rd1, [p];
        ld.global.u32 %r1, [%rd1];
        setp.eq.u32 %p1, %r1, 0;
        @%p1 bra SKIP;
        ld.global.u32 %r2, [%rd1+4];
    SKIP:
        @!%p1 st.global.u32 [%rd1], %r2;
        ret;
    """)
    r2 = lv.index["%r2"]
    assert [i for i in range(lv.n_instructions) if r2 in lv.live_at(i)] == [4]
    assert r2 in lv.live_in(2) and r2 not in lv.live_in(0) and r2 not in lv.live_in(1)


def test_vector_load_defines_every_element():
    lv = lv_of("vector")
    assert lv.series("at") == [2, 6, 5, 4, 3, 0, 0]
    assert names(lv, lv.live_at(1)) == ["%rd1", "%f1", "%f2", "%f3", "%f4"]


def test_setp_with_two_results():
    lv = lv_of("setp2")
    assert lv.series("at", "pred") == [0, 0, 2, 1, 0, 0]
    assert lv.series("at") == [2, 3, 3, 3, 0, 0]
    assert names(lv, lv.live_at(2)) == ["%rd1", "%f1", "%p1", "%p2"]


def test_dead_definition_occupies_a_register_at_its_own_instruction():
    lv = lv_of("""
        ld.param.u64 %rd1, [p];
        mov.f32 %f9, 0f3F800000;
        st.global.u64 [%rd1], %rd1;
        ret;
    """)
    assert lv.series("at") == [2, 3, 0, 0]
    assert lv.series("after") == [2, 2, 0, 0]
    assert lv.live_lengths([lv.index["%f9"]]) == {lv.index["%f9"]: 1}


def test_in_place_update_uses_and_defines():
    lv = lv_of("""
        ld.param.u64 %rd1, [p];
        ld.global.f32 %f1, [%rd1];
        add.f32 %f1, %f1, 0f3F800000;
        add.f32 %f1, %f1, 0f3F800000;
        st.global.f32 [%rd1], %f1;
        ret;
    """)
    assert lv.series("at") == [2, 3, 3, 3, 0, 0]
    assert lv.def_count[lv.index["%f1"]] == 3
    assert lv.last_use[lv.index["%f1"]] == 4


def test_use_of_a_never_defined_register_is_never_live():
    lv = lv_of("""
        ld.param.u64 %rd1, [p];
        st.global.u32 [%rd1], %r7;
        ret;
    """)
    assert lv.series("at") == [2, 0, 0]
    assert lv.first_def[lv.index["%r7"]] == -1


def test_counts_match_materialised_sets_everywhere():
    for name in SAMPLES:
        lv = lv_of(name)
        for where in ("at", "before", "after"):
            sets = lv.live_sets(range(lv.n_instructions), where)
            got = [sum(lv.class_of(r).units for r in sets[i] if not lv.class_of(r).is_pred)
                   for i in range(lv.n_instructions)]
            assert got == lv.series(where), (name, where)


def test_block_entry_counts_equal_live_in_sets():
    lv = lv_of("diamond")
    for b in lv.cfg.blocks:
        regs = lv.live_in(b.index)
        assert lv.series("before")[b.start] == sum(lv.class_of(r).units for r in regs
                                                   if not lv.class_of(r).is_pred)


def test_scales_to_many_registers():
    # 3000 f32 values all live at once, then summed: the peak is 3000 + the pointer.
    n = 3000
    rd = ir.Register("%rd1", types.u64)
    body = [ir.Instruction("ld.param.u64", (rd, ir.Address(ir.Symbol("p"))), 1)]
    fs = [ir.Register(f"%f{i}", types.f32) for i in range(n + 1)]
    body += [ir.Instruction("ld.global.f32", (fs[i], ir.Address(rd, 4 * i)), 1) for i in range(n)]
    acc = ir.Register("%f_acc", types.f32)
    body.append(ir.Instruction("mov.f32", (acc, ir.Immediate(0.0, types.f32)), 1))
    body += [ir.Instruction("add.f32", (acc, acc, fs[i]), 1) for i in range(n)]
    body.append(ir.Instruction("st.global.f32", (ir.Address(rd), acc)))
    lv = analyze_liveness(ir.Kernel("big", body=tuple(body)))
    at = lv.series("at")
    assert max(at) == n + 3
    assert at.index(max(at)) == n + 1


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_kernels_are_valid_ptx(name, ptxas_accepts):
    ptxas_accepts(ptx(kernel(SAMPLES[name])), "sm_80")
