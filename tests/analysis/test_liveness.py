"""Liveness and pressure per instruction, hand-checked on small kernels built from ir classes, and
checked against liveness computed straight from the definitions on generated kernels."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptxforge.analysis.cfg import build_cfg
from ptxforge.analysis.liveness import CLASS_NAMES, analyze_liveness, bits_of, mask_of
from ptxforge.ptx import ir, types
from ptxforge.testing.strategies import modules

import hypothesis_profiles  # noqa: F401  (registers and loads the profiles)
from liveness_kit import SAMPLES, kernel, ptx


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


# ---------------------------------------------------------------------------------------
# The solver (simple registers by their range, block-level sets over complex registers only,
# live sets rebuilt from live-out) against liveness straight from the definitions, per point.

def reference(k: ir.Kernel):
    """Per instruction: the register names live before, after and at it, and the backward-live
    and maybe-defined sets before and after it; by iterating the point-level equations of the
    definitions (ptxforge.analysis.liveness) over the CFG until nothing changes."""
    cfg = build_cfg(k)
    insts = cfg.instructions
    n = len(insts)
    defs = [{r.name for r in i.defs} for i in insts]
    uses = [{r.name for r in i.uses} for i in insts]  # (the guard included)
    succ: list[list[int]] = [[] for _ in range(n)]
    pred: list[list[int]] = [[] for _ in range(n)]
    for b in cfg.blocks:
        for i in range(b.start, b.end - 1):
            succ[i].append(i + 1)
        succ[b.end - 1] += [cfg.blocks[s].start for s in b.successors]
    for i in range(n):
        for j in succ[i]:
            pred[j].append(i)
    back_before: list[set] = [set() for _ in range(n)]
    md_after: list[set] = [set() for _ in range(n)]
    changed = True
    while changed:
        changed = False
        for i in reversed(range(n)):
            after = set().union(*(back_before[j] for j in succ[i]))
            before = uses[i] | (after if insts[i].guard is not None else after - defs[i])
            if before != back_before[i]:
                back_before[i], changed = before, True
        for i in range(n):
            after = set().union(*(md_after[p] for p in pred[i])) | defs[i]
            if after != md_after[i]:
                md_after[i], changed = after, True
    back_after = [set().union(*(back_before[j] for j in succ[i])) for i in range(n)]
    md_before = [set().union(*(md_after[p] for p in pred[i])) for i in range(n)]
    before = [back_before[i] & md_before[i] for i in range(n)]
    after = [back_after[i] & md_after[i] for i in range(n)]
    at = [after[i] | defs[i] for i in range(n)]
    blocks = (back_before, back_after, md_before, md_after)
    return cfg, {"before": before, "after": after, "at": at}, blocks


def assert_matches_reference(k: ir.Kernel) -> None:
    lv = analyze_liveness(k)
    cfg, sets, (bb, ba, mb, ma) = reference(k)
    n = lv.n_instructions
    assert n == len(cfg.instructions)
    ids = lambda names: tuple(sorted(lv.index[x] for x in names))  # noqa: E731
    regs = {r.name: r for r in lv.registers}
    for where, ref in sets.items():
        got = lv.live_sets(range(n), where)
        assert [got[i] for i in range(n)] == [ids(s) for s in ref], where
        for cls in CLASS_NAMES:
            want = [sum(1 for x in s if regs[x].reg_class.name == cls) for s in ref]
            assert lv.series(where, cls) == want, (where, cls)
        assert lv.series(where) == [sum(regs[x].units for x in s if not regs[x].reg_class.is_pred)
                                    for s in ref], where
    for b in cfg.blocks:
        assert lv.live_in(b.index) == ids(sets["before"][b.start])
        assert lv.live_out(b.index) == ids(sets["after"][b.end - 1])
        assert lv.live_in_bits[b.index] == mask_of(ids(bb[b.start]))
        assert lv.live_out_bits[b.index] == mask_of(ids(ba[b.end - 1]))
        assert lv.defined_in_bits[b.index] == mask_of(ids(mb[b.start]))
        assert lv.defined_out_bits[b.index] == mask_of(ids(ma[b.end - 1]))
        walked = {j: set(live) for j, live, _ in lv.iter_points(b.index)}
        assert walked == {**{j: set(ids(sets["after"][j])) for j in range(b.start, b.end)},
                          -1: set(ids(sets["before"][b.start]))}
    lengths = lv.live_lengths(range(len(lv.registers)))
    assert lengths == {r: sum(1 for s in sets["at"] if reg.name in s)
                       for r, reg in enumerate(lv.registers)}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_samples_match_the_reference(name):
    assert_matches_reference(kernel(SAMPLES[name]))


_POOL = ("%r1", "%r2", "%r3", "%rd1", "%rd2", "%f1", "%f2", "%fd1", "%rs1", "%rq1", "%p1", "%p2")
_PREDS = ("%p1", "%p2")
_KINDS = ("def", "def", "def", "use", "vec", "setp", "inplace", "bra", "exit")


@st.composite
def branchy_kernels(draw):
    """Non-SSA kernels over a few registers: guarded and unguarded writes, vector and two-result
    writes, in-place updates, reads of never-written registers, and labels with forward and
    backward branches (guarded or not), ret and exit (guarded or not) anywhere."""
    n_labels = draw(st.integers(0, 4))
    reg = st.sampled_from(_POOL)
    guard = st.sampled_from(["", "", "@%p1 ", "@!%p2 "])
    lines = []
    for _ in range(draw(st.integers(1, 28))):
        kind = draw(st.sampled_from(_KINDS))
        g = draw(guard)
        if kind == "def":
            lines.append(f"{g}add.u32 {draw(reg)}, {draw(reg)}, {draw(reg)}")
        elif kind == "use":
            lines.append(f"{g}st.global.u32 [{draw(reg)}], {draw(reg)}")
        elif kind == "vec":
            lines.append(f"{g}ld.global.v2.u32 {{{draw(reg)}, {draw(reg)}}}, [{draw(reg)}]")
        elif kind == "setp":
            p, q = draw(st.sampled_from(_PREDS)), draw(st.sampled_from(_PREDS))
            lines.append(f"{g}setp.lt.u32 {p}|{q}, {draw(reg)}, {draw(reg)}")
        elif kind == "inplace":
            r = draw(reg)
            lines.append(f"{g}add.u32 {r}, {r}, 1")
        elif kind == "bra" and n_labels:
            lines.append(f"{g}bra L{draw(st.integers(0, n_labels - 1))}")
        else:
            lines.append(f"{g}{draw(st.sampled_from(['ret', 'exit']))}")
    for label in range(n_labels):
        lines.insert(draw(st.integers(0, len(lines))), f"L{label}:")
    return kernel("\n".join(lines))


@given(branchy_kernels())
def test_branchy_kernels_match_the_reference(k):
    assert_matches_reference(k)


@given(modules("sm_80", max_ops=20, max_kernels=1, max_funcs=1))
def test_generated_modules_match_the_reference(gen):
    for k in gen.module.kernels:
        if k.body is not None:
            assert_matches_reference(k)


@given(st.sets(st.integers(0, 3000), max_size=80))
def test_bitsets_round_trip_sparse_and_dense(idx):
    m = mask_of(idx, 3001)
    assert m == sum(1 << i for i in idx)
    assert bits_of(m) == sorted(idx)
