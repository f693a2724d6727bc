"""The prediction on code it has never seen (issue 29): a fast slice of the family corpus
(``tests/support/family_corpus.py``, one family or more per compiler, held-out and training
families both), whole-program ptxas as the truth; the figures must not drop below the ones
measured for ptxforge-predict/13 and stated in docs/prediction.md (the full table:
``python bench/bench_prediction_families.py``)."""

from __future__ import annotations

from family_corpus import FAMILY_ROOT, FAST, HELD_OUT, _body, _compiler, family_corpus, role
from prediction_table import figures, measure, size_class

from ptxforge.analysis.prediction import BAND, DEEP_BAND, MODEL

#: Measured on the slice (ptxforge-predict/11, ptxas 13.5, sm_80): held-out families 71 kernels,
#: 41 within +-10% (57.7%), median error 9.375%, Spearman 0.943, band coverage 87.3%; training
#: families 41 kernels, 26 within +-10% (63.4%), median error 10.0%, Spearman 0.946, coverage
#: 97.6%.  (Model 10: 42 of 71, Spearman 0.938, coverage 85.9%: model 11's vector loads gain
#: cub_small's grid_stride_sum<int,512> (15 to 24, ptxas 24) and lose its
#: single_tile_sum<float,256> and grid_stride_sum<float,256> (15 to 16, ptxas 14: the
#: scheduled peak is the SASS peak, 9, the holes are 2 where the model says 4).  Models 8 and 9:
#: 41 of 71, coverage 87.3%, the training part the same.  Models 6
#: and 7: 39 of 71, coverage 90.1%; 26 of 41, coverage 100%.  Model 5, the
#: same as model 4: 34 of 71, 12.0%; 27 of 41, 5.0%: model 6's tie rule loses
#: stencil3d_zqueue<4,double>.  ptxforge-predict/3 on the held-out slice: docs/prediction.md.)
HELD_OUT_SLICE = {"within10": 41 / 71, "median_error": 0.09375, "spearman": 0.943}
#: Model 12 (integer division's temporaries): the held-out part the same (coverage 85.9%: the
#: band, re-measured, is narrower), the training part 26 of 41, Spearman 0.9446 (model 11:
#: 0.946; coverage 95.1%): iota_mod's remainder by a parameter lifts its scheduled peak from 3
#: to 8 (the SASS peak is 6: the store address, computed before the remainder in the PTX,
#: follows it in the SASS) past the small kernels' holes, 8 to 15 against ptxas 10.
TRAIN_SLICE = {"within10": 26 / 41, "median_error": 0.10, "spearman": 0.9446}
#: The band claims 90% (5th to 95th percentile of ptxas / prediction on the training split);
#: the issue asks it to hold within 5 points.
CLAIMED_COVERAGE = 0.90


def test_the_split_holds_out_whole_families_of_every_compiler():
    kernels = family_corpus(only=FAST)
    assert {k.family for k in kernels} == set(FAST)
    for k in kernels:
        assert (k.role == "held-out") == (k.family in HELD_OUT)
        assert k.role == role(k.kernel.id, k.family)
    held = {_compiler(next(FAMILY_ROOT.glob(f + ".*"))) for f in HELD_OUT}
    assert held == {"nvrtc", "triton", "numba"}
    # each distinct kernel once: no two kernels share a body (template instances that compile
    # to the same code count once)
    bodies = [_body(k.kernel.ptx, k.kernel.kernel) for k in kernels]
    assert len(set(bodies)) == len(bodies)


def test_figures_on_a_slice_do_not_drop():
    rows = measure(only=FAST, fixed=False)
    held = figures([r for r in rows if r.role == "held-out"])
    train = figures([r for r in rows if r.role != "held-out"])
    assert held["n"] >= 60 and train["n"] >= 30, (held["n"], train["n"])
    for got, want in ((held, HELD_OUT_SLICE), (train, TRAIN_SLICE)):
        assert got["within10"] >= want["within10"] - 1e-9, got
        assert got["median_error"] <= want["median_error"] + 1e-9, got
        assert got["spearman"] >= want["spearman"] - 5e-4, got
        # never off by 2x where the live count was within 25%
        assert got["twox"] == 0, got
        assert got["coverage"] >= CLAIMED_COVERAGE - 0.05, got
    # the prediction beats the live count it starts from
    assert held["within10"] > held["live_within10"] + 0.2, held


def test_the_band_and_the_out_of_depth_flag():
    rows = measure(only=("wavelets", "small_kernels"), fixed=False)
    assert all(r.low <= r.predicted <= r.high for r in rows)
    deep = [r for r in rows if r.out_of_depth]
    calm = [r for r in rows if not r.out_of_depth]
    assert deep and calm  # long straight-line wavelets are flagged, small kernels are not
    assert all("cdf97" in r.id or "haar" in r.id or "cdf53" in r.id for r in deep)
    assert BAND[0] < 1 < BAND[1] and DEEP_BAND[0] < 1 < DEEP_BAND[1]
    # model 13 (loops ptxas unrolls) moves no kernel of the slice: its figures are model 12's
    assert MODEL.startswith("ptxforge-predict/13")
    assert [size_class(n) for n in (8, 16, 17, 64, 65, 129)] == [
        "<=16", "<=16", "17-32", "33-64", "65-128", ">128"]


def test_the_division_slow_path_on_a_training_family():
    # numba_kernels (a training family): poly_fit3_f32/f64 divide in double precision with 26
    # units live across the division; ptxas 48, model 4 predicted 39, model 5 49
    rows = [r for r in measure(only=("numba_kernels",), fixed=False) if r.role == "train"]
    f = figures(rows)
    assert f["n"] == 9 and round(f["within10"] * 9) >= 7, f
    fit = [r for r in rows if "poly_fit3" in r.id]
    assert fit and all(abs(r.predicted - r.truth) <= 0.1 * r.truth for r in fit), fit


def test_squeezed_to_the_budget_where_a_bottom_up_order_fits():
    # model 6: above the budget, a kernel whose bottom-up pressure order keeps at most the
    # room + SQUEEZE_SLACK units live is predicted at the budget (32 on sm_80)
    rows = {r.id.split(":", 1)[1]: r
            for r in measure(only=("wavelets", "cub_block", "dsp_blocks"), fixed=False)}
    lifting = rows["fam::cdf97<32,float>"]  # held-out: the view keeps 40 units, bottom-up 13
    scan = next(r for k, r in rows.items() if k.startswith("fam::tile_scan<float,512,4,"))
    for r in (lifting, scan):
        assert r.live > 32 and r.predicted == 32 == r.truth, r
    # model 7: fir_run<16,16> keeps its 16 taps (loaded from a warp-uniform address, read in
    # the same block) in uniform registers: at the budget, as ptxas (model 6: 55)
    fir = rows["fam::fir_run<16,16>"]
    assert fir.live > 50 and fir.predicted == 32 == fir.truth, fir
    # a sorting network whose bottom-up order is no better: left above the budget (ptxas 48)
    net = rows["fam::bitonic_regs<16,double>"]
    assert net.predicted > 40 and abs(net.predicted - net.truth) <= 0.15 * net.truth, net


def _running_sum(n: int, labels: str) -> str:
    """PTX: ``n`` loads from a per-thread address, each added to a running sum, a label after
    each add (``labels``: ``"none"``, ``"debug"``: labels nothing names, as Triton's
    ``$L__tmp`` line labels, or ``"branch"``: each named by a ``bra.uni`` to it)."""
    lines = ["ld.param.u64 %rd1, [p];", "cvta.to.global.u64 %rd2, %rd1;", "mov.u32 %r1, %tid.x;",
             "mul.wide.u32 %rd3, %r1, 256;", "add.s64 %rd4, %rd2, %rd3;", "mov.f32 %f0, 0f00000000;"]
    for k in range(1, n + 1):
        lines += [f"ld.global.f32 %g{k}, [%rd4+{4 * k}];", f"add.f32 %f{k}, %f{k - 1}, %g{k};"]
        if labels == "branch":
            lines.append(f"bra.uni $L__tmp{k};")
        if labels != "none":
            lines.append(f"$L__tmp{k}:")
    lines += [f"st.global.f32 [%rd4], %f{n};", "ret;"]
    body = "\n  ".join(lines)
    return (".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n"
            f"{{\n  .reg .f32 %f<{n + 1}>;\n  .reg .f32 %g<{n + 1}>;\n  .reg .b32 %r<2>;\n"
            "  .reg .b64 %rd<5>;\n  " + body + "\n}\n")


def test_labels_that_nothing_names_do_not_split_the_schedule():
    # model 10: Triton puts a $L__tmp label before every source line's code; ptxas schedules
    # across them (softmax_fp32_b4096_w8: the store address of PTX line 330, after
    # $L__tmp19, is computed at SASS 0x0250, before the loads of line 110); a label a branch
    # names still ends a block
    from ptxforge import parse
    from ptxforge.analysis.prediction import out_of_depth, predict_registers

    def predicted(labels: str, n: int = 8):
        return predict_registers(parse(_running_sum(n, labels)).kernel("k"))

    plain, debug, branch = (predicted(x) for x in ("none", "debug", "branch"))
    # the eight loads issue together in one block (latency first below the budget)
    assert plain.component("scheduling").registers >= 6, plain.summary()
    assert debug.registers == plain.registers, (debug.summary(), plain.summary())
    assert branch.component("scheduling").registers == 0, branch.summary()
    assert branch.registers < plain.registers
    # the long-block flag counts the block ptxas schedules: 2 x 160 instructions joined
    long = parse(_running_sum(160, "debug")).kernel("k")
    assert any(r.startswith("a block of") for r in out_of_depth(long)), out_of_depth(long)
    assert not any(r.startswith("a block of")
                   for r in out_of_depth(parse(_running_sum(160, "branch")).kernel("k")))


def test_triton_kernels_scheduled_across_their_line_labels_against_ptxas():
    # training split (triton_fused, tests/corpus/triton/reductions.py): model 9 scheduled each
    # run between two $L__tmp labels alone: argmax_rows_b2048 44 and cross_entropy_b8192 110
    # (ptxas 32 and 80); across them the bottom-up order fits the budget (argmax) and the
    # pressure order frees what the line-by-line one kept (cross entropy)
    from ptxforge import parse
    from ptxforge.analysis.prediction import predict_registers

    from kernel_corpus import corpus, ground_truths

    rows = {r.id: r for r in measure(only=("triton_fused",), fixed=False)}
    argmax = rows["families/triton_fused.py:argmax_rows_b2048"]
    assert argmax.predicted == 32 == argmax.truth, argmax
    ks = [k for k in corpus("sm_80") if k.id == "triton/reductions.py:cross_entropy_b8192"]
    assert len(ks) == 1
    truth = ground_truths(ks)[ks[0].id].registers
    p = predict_registers(parse(ks[0].ptx, ks[0].file).kernel(ks[0].kernel))
    assert abs(p.registers - truth) <= 0.1 * truth, (p.summary(), truth)


#: Block reductions that write one partial per warp to shared memory and let thread 0 add them
#: up (cub::BlockReduce's default algorithm, and the same by hand): compiled here, not in any
#: split.  ptxas issues the partials as LDS.128 before the first add and fuses the integer adds
#: in pairs (IADD3), so the count grows with the warps.
_BLOCK_SUMS = r"""
#include <cub/block/block_reduce.cuh>
template <typename T, int THREADS>
__global__ void __launch_bounds__(THREADS) cub_sum(const T* __restrict__ in, T* __restrict__ out, int n)
{
    using BR = cub::BlockReduce<T, THREADS>;
    __shared__ typename BR::TempStorage tmp;
    int i = blockIdx.x * THREADS + threadIdx.x;
    T s = BR(tmp).Sum(i < n ? in[i] : T(0));
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
template <typename T, int THREADS>
__global__ void __launch_bounds__(THREADS) smem_sum(const T* __restrict__ in, T* __restrict__ out, int n)
{
    __shared__ T part[THREADS / 32];
    int i = blockIdx.x * THREADS + threadIdx.x;
    T v = i < n ? in[i] : T(0);
    for (int o = 16; o; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        T s = part[0];
#pragma unroll
        for (int w = 1; w < THREADS / 32; ++w) s += part[w];
        out[blockIdx.x] = s;
    }
}
template __global__ void cub_sum<int, 512>(const int*, int*, int);
template __global__ void smem_sum<int, 512>(const int*, int*, int);
template __global__ void smem_sum<int, 1024>(const int*, int*, int);
template __global__ void smem_sum<float, 512>(const float*, float*, int);
template __global__ void smem_sum<float, 1024>(const float*, float*, int);
"""


def test_block_reductions_read_their_warp_partials_as_vector_loads_against_ptxas():
    # model 11 (forms.py): tile_sum<int,512,4> (training) loads its 16 warp partials with four
    # LDS.128 before the first IADD3 (SASS peak 18, ptxas 24; model 10 predicted 17, the list
    # scheduler interleaving the 15 scalar loads with the 15 adds); as vector loads and fused
    # adds the scheduler issues them together too
    from ptxforge import parse
    from ptxforge.analysis.prediction import predict_registers
    from ptxforge.frontends.cuda_source import compile_cuda

    from prediction_variants import _ptxas

    ptx = compile_cuda(_BLOCK_SUMS, "block_sums.cu", "sm_80", ["-std=c++17"])
    truth = _ptxas(ptx, "sm_80")
    preds = {k.name: predict_registers(k) for k in parse(ptx).kernels}
    got = {n: (p.registers, truth[n]) for n, p in preds.items()}
    ints = [v for n, v in got.items() if "IiLi512" in n]
    assert len(ints) == 2 and len(got) == 5, got
    # measured: 24 and 24 against ptxas 24 and 22 (model 10: 15 and 15)
    for pred, want in ints:
        assert abs(pred - want) <= 0.1 * want, got
    # the others move towards ptxas (1024 int partials: 24 against 30; floats: 18 against 22;
    # model 10: 15 for all three, off by 32% to 50%)
    for pred, want in got.values():
        assert abs(pred - want) <= 0.2 * want, got
    assert all("vector loads" in p.component("scheduling").detail for p in preds.values())


def test_sass_forms_fuse_adds_and_group_shared_loads_only_where_ptxas_can():
    from ptxforge.analysis.prediction.forms import sass_forms
    from ptxforge.ptx import ir
    from ptxforge.ptx import types as T

    r = [ir.Register(f"%r{i}", T.u32) for i in range(12)]
    tmp = ir.Symbol("tmp")

    def ld(dst, off):
        return ir.Instruction("ld.shared.u32", (dst, ir.Address(tmp, off)), 1)

    def add(d, a, b):
        return ir.Instruction("add.s32", (d, a, b), 1)

    ret = ir.Instruction("ret")
    # eight loads in two 16-byte windows, summed: two vector loads, the adds fused in pairs
    body = [ld(r[k], 16 + 4 * k) for k in range(8)] + [add(r[8], r[0], r[1])]
    body += [add(r[9], r[8], r[2]), add(r[10], r[9], r[3]), add(r[11], r[10], r[4]), ret]
    k, counts = sass_forms(ir.Kernel("k", body=tuple(body)))
    assert counts == {"fused adds": 2, "vector loads": 2, "loads": 8}, counts
    assert [len(i.operands[0].elements) for i in k.instructions[:2]] == [4, 4]
    # a store to shared memory between two loads orders them: no window spans it
    st = ir.Instruction("st.shared.u32", (ir.Address(tmp, 64), r[7]))
    split = sass_forms(ir.Kernel("k", body=(ld(r[0], 16), st, ld(r[1], 20), ret)))
    assert split is None
    # an operand written between the two adds keeps them apart (the first add's value of it)
    mov = ir.Instruction("mov.u32", (r[1], ir.Immediate(7)), 1)
    apart = (add(r[8], r[0], r[1]), mov, add(r[9], r[8], r[2]), ret)
    assert sass_forms(ir.Kernel("k", body=apart)) is None
    # 64-bit adds are not IADD3
    wide = [ir.Register(f"%rd{i}", T.u64) for i in range(4)]
    chain = (ir.Instruction("add.s64", (wide[2], wide[0], wide[1]), 1),
             ir.Instruction("add.s64", (wide[3], wide[2], wide[0]), 1), ret)
    assert sass_forms(ir.Kernel("k", body=chain)) is None
