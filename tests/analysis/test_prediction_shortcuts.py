"""The prediction's shortcuts against the slow paths they replace, on every corpus kernel:
a second SASS view built on the first (``sass_view(..., base=view)``) is the view built from
scratch, and the bottom-up scheduler's heap of choice keys gives the peak of the linear
scan it replaced (tests/support/bottomup_reference.py)."""

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
