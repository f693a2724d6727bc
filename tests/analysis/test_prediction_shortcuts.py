"""The prediction's shortcuts against the slow paths they replace, on every corpus kernel:
a second SASS view built on the first (``sass_view(..., base=view)``) is the view built from
scratch, the bottom-up scheduler's heap of choice keys gives the peak of the linear
scan it replaced (tests/support/bottomup_reference.py), the forms' counts read from operands
are the defs and uses, a sunk body's permuted scan is its own scan, and the remembered label
and trait answers are the computed ones."""

from __future__ import annotations

import functools

from bottomup_reference import reference_bottom_up_peak

from ptxforge.analysis.liveness import analyze_liveness
from ptxforge.analysis.prediction import bottom_up_peak, if_convert, sass_view
from ptxforge.analysis.prediction.view import KINDS
from ptxforge.ptx import ir
from ptxforge.ptx import types as T

from kernel_corpus import corpus, corpus_modules


@functools.cache
def _kernels() -> list:
    modules = corpus_modules("sm_80")
    return [(k.id, modules[k.ptx].kernel(k.kernel)) for k in corpus("sm_80")]


def _ops(kernel) -> list:
    return [(i.opcode, i.operands, i.guard) for i in kernel.instructions]


def test_a_view_built_on_another_is_the_view_built_from_scratch():
    folds = {"uniform": 0, "warp-uniform": 0}
    same = 0
    for kid, k in _kernels():
        view = sass_view(k)
        cfg = analyze_liveness(k).cfg
        for extra in folds:
            kinds = KINDS + (extra,)
            fresh = sass_view(k, kinds=kinds, cfg=cfg)
            reused = sass_view(k, kinds=kinds, cfg=cfg, base=view)
            assert reused.folded == fresh.folded, (kid, extra)
            assert _ops(reused.kernel) == _ops(fresh.kernel), (kid, extra)
            if fresh.folded.get(extra):
                folds[extra] += 1
                assert reused is not view
            else:  # the extra kind folds nothing: the base itself is the answer
                assert reused is view and _ops(fresh.kernel) == _ops(view.kernel)
                same += 1
    # both paths are taken: some kernels fold each extra kind, some fold nothing
    assert folds["uniform"] > 0 and folds["warp-uniform"] > 20 and same > 100, (folds, same)


def test_a_base_of_another_kernel_or_other_kinds_is_not_reused():
    (_, a), (_, b) = _kernels()[:2]
    view_a = sass_view(a)
    for k, kinds in ((b, KINDS + ("uniform",)), (a, KINDS[:-1]), (a, ("parameter",))):
        got = sass_view(k, kinds=kinds, base=view_a)
        fresh = sass_view(k, kinds=kinds)
        assert (got.folded, _ops(got.kernel)) == (fresh.folded, _ops(fresh.kernel))


def test_the_bottom_up_peak_is_the_linear_scans_on_the_corpus():
    bigger = 0
    for kid, k in _kernels():
        conv = if_convert(sass_view(k).kernel)[0]
        lv = analyze_liveness(conv)
        got = bottom_up_peak(conv, lv)
        assert got == reference_bottom_up_peak(conv, lv), kid
        bigger += got > max(lv.series("at"), default=0)
    assert bigger > 0   # some orders are worse than the PTX one: real reorderings


def _wide_block(n: int, reused: bool) -> ir.Kernel:
    """One block of ``n`` loads, each added into a running sum (``reused``: every load
    writes the same register, which dies and is born ``n`` times), the sum stored."""
    base = ir.Register("%rd1", T.u64)
    acc = ir.Register("%f0", T.f32)
    body = [ir.Instruction("ld.param.u64", (base, ir.Address(ir.Symbol("p"))), 1),
            ir.Instruction("mov.f32", (acc, ir.Immediate(0.0, T.f32)), 1)]
    for j in range(1, n + 1):
        v = ir.Register(f"%f{1 if reused else 2 * j - 1}", T.f32)
        s = ir.Register(f"%f{2 * j}", T.f32)
        body.append(ir.Instruction("ld.global.f32", (v, ir.Address(base, 4 * j)), 1))
        body.append(ir.Instruction("add.f32", (s, acc, v), 1))
        acc = s
    body += [ir.Instruction("st.global.f32", (ir.Address(base), acc)), ir.Instruction("ret")]
    return ir.Kernel("wide", body=tuple(body))


def test_the_bottom_up_peak_on_wide_blocks_is_the_linear_scans():
    for reused in (False, True):
        k = _wide_block(200, reused)
        got = bottom_up_peak(k)
        assert got == reference_bottom_up_peak(k) and got > 2, reused


def _reference_counts(body) -> tuple:
    """Definitions and reads per register name, from each instruction's defs and uses."""
    from collections import Counter

    defs: Counter = Counter()
    uses: Counter = Counter()
    for st in body:
        if isinstance(st, ir.Instruction):
            defs.update(r.name for r in st.defs)
            uses.update(r.name for r in st.uses)
    return defs, uses


def test_the_forms_counts_are_the_defs_and_uses_on_the_corpus():
    from ptxforge.analysis.prediction.forms import _counts

    vectors = 0
    for kid, k in _kernels():
        for body in (k.body, sass_view(k).kernel.body):
            got, want = _counts(body), _reference_counts(body)
            assert got == want, kid
            # the same names in the same order (the counts are read by name only, but a
            # Counter's order is what a caller iterating it would see)
            assert [list(c) for c in got] == [list(c) for c in want], kid
        vectors += any(type(o) is ir.Vector for i in k.instructions for o in i.operands)
    assert vectors > 0   # the general path (vector operands) is taken too


def _offsets_between_shuffles() -> ir.Kernel:
    """Two store offsets computed between two dependent shuffles (model 9: held and sunk)."""
    p, a, b = (ir.Register(f"%rd{i}", T.u64) for i in (1, 2, 3))
    v, s1, s2 = (ir.Register(f"%r{i}", T.u32) for i in (1, 2, 3))

    def shfl(d, x, lane):
        return ir.Instruction("shfl.sync.bfly.b32", (d, x, ir.Immediate(lane), ir.Immediate(31),
                                                     ir.Immediate(-1)), 1)

    return ir.Kernel("k", body=(
        ir.Instruction("ld.param.u64", (p, ir.Address(ir.Symbol("x"))), 1),
        ir.Instruction("ld.global.u32", (v, ir.Address(p)), 1),
        shfl(s1, v, 16),
        ir.Instruction("add.s64", (a, p, ir.Immediate(128)), 1),
        ir.Instruction("add.s64", (b, p, ir.Immediate(256)), 1),
        shfl(s2, s1, 8),
        ir.Instruction("st.global.u32", (ir.Address(a), s2)),
        ir.Instruction("st.global.u32", (ir.Address(b), s2)),
        ir.Instruction("ret")))


def test_a_sunk_view_keeps_the_scan_of_its_own_body():
    # the offsets held between shuffles are sunk; the body's scan is permuted, not redone:
    # it must be the scan of the sunk body
    from ptxforge.analysis.prediction.view import _prepare, _scan

    kernels = [("shuffled", _offsets_between_shuffles())] + _kernels()
    sunk = 0
    for kid, k in kernels:
        prep = _prepare(k, True)
        assert prep.insts == [s for s in prep.body if isinstance(s, ir.Instruction)], kid
        ndefs, uses, reads = _scan(prep.insts)
        assert (prep.ndefs, prep.reads) == (ndefs, reads), kid
        assert {n: sorted(u) for n, u in prep.uses.items()} == \
            {n: sorted(u) for n, u in uses.items()}, kid
        sunk += bool(prep.held)
    assert sunk >= 1


def test_named_labels_answers_each_body_afresh():
    from ptxforge.analysis.prediction.labels import named_labels

    body = (ir.Label("$L__tmp0"), ir.Label("L"), ir.Instruction("bra", (ir.LabelRef("L"),)))
    first = named_labels(body)
    first.add("$L__tmp0")   # the caller's set is its own
    assert named_labels(body) == {"L"}
    other = list(body) + [ir.Instruction("bra", (ir.LabelRef("$L__tmp0"),))]
    assert named_labels(other) == {"L", "$L__tmp0"}
    other.pop()   # a list is not remembered: the same list, changed, is read again
    assert named_labels(other) == {"L"}


def test_opcode_traits_are_the_rows_traits():
    from ptxforge.ptx import opcodes

    traits = (opcodes.Terminator, opcodes.Barrier, opcodes.Call, opcodes.OrdersMemory,
              opcodes.WarpCollective, opcodes.Return)
    for family, row in opcodes.FAMILIES.items():
        op = opcodes.opcode_of(family)
        for t in traits:
            assert op.has_trait(t) == row.has(t) == op.has_trait(t), (family, t)
    assert not opcodes.opcode_of("notanop.u32").has_trait(opcodes.Terminator)
