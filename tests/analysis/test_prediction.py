"""The register prediction (ptxforge.analysis.prediction): its rules on hand-made IR, its
components, its place in ``analyze --json``, DSL variant pairs against whole-program ptxas,
and its accuracy on the corpus's validation split."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from ptxforge import emit, parse
from ptxforge.analysis.liveness import analyze_liveness
from ptxforge.analysis.prediction import (
    CALL_FLOOR,
    DEEP_BAND,
    FIXED_OVERHEAD,
    HOLES,
    MODEL,
    REGISTER_LIMIT,
    SQUEEZE_SLACK,
    bottom_up_peak,
    if_convert,
    kernel_budget,
    list_schedule,
    occupancy_budget,
    out_of_depth,
    predict_registers,
    sass_view,
)
from ptxforge.analysis.prediction.view import KINDS
from ptxforge.arch.ptxas_model import DIVISION_SLOW_PATH, SMALL_HOLES
from ptxforge.dsl import kernels
from ptxforge.ptx import ir
from ptxforge.ptx import types as T

from cli_util import run_json
from prediction_variants import FAMILIES, _ptxas, ptxas_registers

ROOT = Path(__file__).resolve().parents[2]

#: Validation-split figures reported in docs/prediction.md (bench/bench_estimate_accuracy.py,
#: ptxforge-predict/13: 331 non-spilling kernels, 118 in validation, sm_80: 68 within +-10%,
#: Spearman 0.9737): the test fails below them (the figures are deterministic).  Model 13's
#: loops that ptxas unrolls gain softmax_rows (19 to 31, ptxas 32) and log_softmax_f64 (27 to
#: 32, ptxas 32) and lose reduce_single_pass<256> (16 to 19, ptxas 17: ptxas unrolls its
#: volatile loop too); model 12 had 67 and 0.9686 (its integer division temporaries cost
#: poly_bounded<128,8>, 40 to 44 against ptxas 38), models 9 to 11 68 and 0.970,
#: model 8 68 and 0.971, models 6 and 7 65 and 0.956, model 5 61 and 0.954, model 4 58 and
#: 0.948.
REPORTED_WITHIN10 = 68 / 118
REPORTED_SPEARMAN = 0.9737


def _peak(kernel) -> int:
    s = analyze_liveness(kernel).series("at")
    return max(s) if s else 0


def _r(name, t=T.u64):
    return ir.Register(name, t)


def test_parameters_cvta_and_offsets_need_no_register():
    p, g, a, v = _r("%rd1"), _r("%rd2"), _r("%rd3"), ir.Register("%r1", T.u32)
    body = (ir.Instruction("ld.param.u64", (p, ir.Address(ir.Symbol("x"))), 1),
            ir.Instruction("cvta.to.global.u64", (g, p), 1),
            ir.Instruction("add.s64", (a, g, ir.Immediate(4096)), 1),
            ir.Instruction("ld.global.u32", (v, ir.Address(a)), 1),
            ir.Instruction("st.global.u32", (ir.Address(g), v)),
            ir.Instruction("ret"))
    k = ir.Kernel("k", body=body)
    view = sass_view(k)
    assert view.folded == {"parameter": 1, "alias": 1, "offset": 1}
    assert _peak(k) == 4            # %rd2 and %rd3 at the add, in the PTX order
    assert _peak(view.kernel) == 3  # the pointer, re-read where it is an address, and %r1
    # an offset used as a value (not only as an address) is not folded
    body2 = body[:4] + (ir.Instruction("st.global.u64", (ir.Address(g), a)), body[5])
    assert "offset" not in sass_view(ir.Kernel("k", body=body2)).folded


def _shuffled_stores(offsets_first: bool) -> ir.Kernel:
    """A pointer, a load, two dependent shuffles and two stores at constant offsets from the
    pointer; the offsets are computed before the first shuffle or between the two."""
    p, a, b = _r("%rd1"), _r("%rd2"), _r("%rd3")
    v, s1, s2 = (ir.Register(f"%r{i}", T.u32) for i in (1, 2, 3))
    adds = (ir.Instruction("add.s64", (a, p, ir.Immediate(128)), 1),
            ir.Instruction("add.s64", (b, p, ir.Immediate(256)), 1))

    def shfl(d, x, lane):
        return ir.Instruction("shfl.sync.bfly.b32", (d, x, ir.Immediate(lane), ir.Immediate(31),
                                                     ir.Immediate(-1)), 1)

    body = (ir.Instruction("ld.param.u64", (p, ir.Address(ir.Symbol("x"))), 1),
            ir.Instruction("ld.global.u32", (v, ir.Address(p)), 1),
            *(adds if offsets_first else ()),
            shfl(s1, v, 16),
            *(() if offsets_first else adds),
            shfl(s2, s1, 8),
            ir.Instruction("st.global.u32", (ir.Address(a), s2)),
            ir.Instruction("st.global.u32", (ir.Address(b), s2)),
            ir.Instruction("ret"))
    return ir.Kernel("k", body=body)


def test_offsets_computed_between_shuffles_keep_their_registers():
    # Triton's softmax_fp32_b256_w1: the store offsets computed between the two shuffle chains
    # stay in registers (IADD3 R8, P5, R2, 0x100, RZ / STG.E [R8.64]); moved before the first
    # chain, ptxas folds them (STG.E [R2.64+0x100]) and the count drops from 30 to 22
    before = sass_view(_shuffled_stores(True))
    assert before.folded.get("offset") == 2
    between = sass_view(_shuffled_stores(False))
    assert "offset" not in between.folded
    # each is computed after the last shuffle before its first use, as ptxas places them
    ops = [i.opcode for i in between.kernel.instructions]
    assert ops.index("add.s64") > max(k for k, o in enumerate(ops) if o.startswith("shfl"))
    # at the first store: the shuffled value and both addresses (folded: the value and the
    # pointer, re-read where it is an address)
    assert (_peak(between.kernel), _peak(before.kernel)) == (1 + 2 + 2, 1 + 2)


def test_widenings_take_no_register_pair():
    i, w, a, b = ir.Register("%r1", T.u32), _r("%rd1"), _r("%rd3"), _r("%rd4")
    src, dst, v = _r("%rd5"), _r("%rd6"), ir.Register("%f1", T.f32)
    body = (ir.Instruction("mov.u32", (i, ir.SpecialReg("%tid.x")), 1),
            ir.Instruction("ld.param.u64", (src, ir.Address(ir.Symbol("x"))), 1),
            ir.Instruction("ld.param.u64", (dst, ir.Address(ir.Symbol("y"))), 1),
            ir.Instruction("cvt.u64.u32", (w, i), 1),
            ir.Instruction("add.s64", (a, src, w), 1),
            ir.Instruction("ld.global.f32", (v, ir.Address(a)), 1),
            ir.Instruction("add.s64", (b, dst, w), 1),
            ir.Instruction("st.global.f32", (ir.Address(b), v)),
            ir.Instruction("ret"))
    k = ir.Kernel("k", body=body)
    view = sass_view(k)
    assert view.folded == {"parameter": 2, "widen": 1}
    # at the first add: %rd3 and the index, a pair as %rd1, one unit as its source %r1
    assert _peak(view.kernel) == 3
    assert _peak(sass_view(k, kinds=KINDS[:-1]).kernel) == 4
    # a narrowing is a value of its own
    body2 = body[:3] + (ir.Instruction("cvt.u32.u64", (i, w), 1),) + body[4:]
    assert "widen" not in sass_view(ir.Kernel("k", body=body2)).folded


def test_immediates_are_free_and_special_registers_are_kept():
    c, t, x = (ir.Register(f"%r{i}", T.u32) for i in (1, 2, 3))
    body = (ir.Instruction("mov.u32", (c, ir.Immediate(7)), 1),
            ir.Instruction("mov.u32", (t, ir.SpecialReg("%tid.x")), 1),
            *(ir.Instruction("add.u32", (x, x, c), 1) for _ in range(3)),
            ir.Instruction("add.u32", (x, x, t), 1),
            ir.Instruction("ret"))
    k = ir.Kernel("k", body=body)
    view = sass_view(k)
    assert view.folded == {"immediate": 1}       # %tid.x is read once (S2R) and kept
    assert [i.opcode for i in view.kernel.instructions] == ["mov.u32"] + ["add.u32"] * 4 + ["ret"]
    assert _peak(view.kernel) == 2                # %r2 (tid) and %r3
    # asked for, the re-read model puts the special register right before its one use
    reread = sass_view(k, kinds=KINDS + ("special",))
    assert reread.folded == {"immediate": 1, "special": 1}
    ops = [i.opcode for i in reread.kernel.instructions]
    assert ops == ["add.u32"] * 3 + ["mov.b32", "add.u32", "ret"]


def test_occupancy_budget_follows_the_register_file():
    # sm_80: 16 warps per sub-partition x 32 threads x 32 registers = its 16384 registers
    assert occupancy_budget("sm_80") == 32
    assert occupancy_budget("sm_86") == 40     # 12 warps per sub-partition
    assert occupancy_budget("sm_75") == 64     # 8 warps per sub-partition


def test_the_schedule_raises_pressure_only_under_the_occupancy_budget():
    """Eight independent loads, each summed at the end: issued early they are all live at
    once.  Under the budget the scheduling component is what hoisting adds; with the budget
    below the natural count (a register file that holds fewer warps) it is 0."""
    a = _r("%rd1")
    acc = ir.Register("%f0", T.f32)
    vals = [ir.Register(f"%f{i}", T.f32) for i in range(1, 9)]
    body = [ir.Instruction("ld.param.u64", (a, ir.Address(ir.Symbol("p"))), 1),
            ir.Instruction("mov.f32", (acc, ir.Immediate(0.0)), 1)]
    for k, v in enumerate(vals):
        body += [ir.Instruction("ld.global.f32", (v, ir.Address(a, 4 * k)), 1),
                 ir.Instruction("add.f32", (acc, acc, v), 1)]
    body += [ir.Instruction("st.global.f32", (ir.Address(a), acc)), ir.Instruction("ret")]
    k = ir.Kernel("k", body=tuple(body))
    p = predict_registers(k)
    # the view in PTX order: 3 at most (the pointer, re-read for each load, and %f0 or a
    # value); hoisted: the 8 loaded values and %f0 = 9
    assert p.component("ptx live").registers + p.component("no-register values").registers == 3
    assert p.component("scheduling").registers == 6
    q = predict_registers(k, holes=30)                      # natural 37: above the budget
    assert q.component("scheduling").registers == 0
    r = predict_registers(k, holes=21)                      # natural 27: capped at 32
    assert r.registers == 32 and r.component("scheduling").registers == 5
    big = predict_registers(k, holes=300)
    assert big.registers == REGISTER_LIMIT == big.high
    assert big.component("register limit").registers == REGISTER_LIMIT - (3 + 3 + 300)


def _ops(kernel) -> list:
    return [i.opcode for i in kernel.instructions]


def test_list_schedule_issues_loads_early_within_the_dependences():
    a = _r("%rd1")
    v1, v2, x = (ir.Register(f"%f{i}", T.f32) for i in (1, 2, 3))
    body = (ir.Instruction("ld.global.f32", (v1, ir.Address(a)), 1),
            ir.Instruction("add.f32", (x, v1, v1), 1),
            ir.Instruction("st.shared.f32", (ir.Address(ir.Symbol("s")), x)),
            ir.Instruction("mul.f32", (x, x, x), 1),
            ir.Instruction("ld.global.f32", (v2, ir.Address(a, 4)), 1),
            ir.Instruction("st.global.f32", (ir.Address(a), v2)),
            ir.Instruction("ret"))
    k = ir.Kernel("k", body=body)
    # a global load passes the shared store and the multiply, and issues with the first load
    assert _ops(list_schedule(k, 25).kernel) == ["ld.global.f32", "ld.global.f32", "add.f32",
                                          "st.shared.f32", "mul.f32", "st.global.f32", "ret"]
    # a barrier and a global store that may write what it reads keep it below them (a store
    # at another offset of the same base does not: model 6, the test below)
    for fence in (ir.Instruction("bar.sync", (ir.Immediate(0),)),
                  ir.Instruction("st.global.f32", (ir.Address(a, 4), x)),
                  ir.Instruction("st.global.f32", (ir.Address(_r("%rd9"), 8), x))):
        fenced = ir.Kernel("k", body=body[:3] + (fence,) + body[3:])
        order = list(list_schedule(fenced, 25).kernel.instructions)
        assert order.index(fence) < order.index(body[4]), _ops(fenced)
    # with no room (budget 0), the block keeps the order that frees registers first
    assert _ops(list_schedule(k, 0).kernel) == [i.opcode for i in body]


def test_the_schedule_stops_growing_at_the_budget_and_counts_its_peak_exactly():
    build, sizes = FAMILIES["unrolling"]
    peaks = {}
    for size in sizes:
        k = if_convert(sass_view(build(size).kernels[-1]).kernel)[0]
        for budget in (0, 25, 1000):
            s = list_schedule(k, budget)
            assert s.peak == _peak(s.kernel), (size, budget)   # the solver on the new order
            peaks[size, budget] = s.peak
    # latency first: every unrolled load issued early (unroll 24: 57 units); with a budget of
    # 25 the block stops growing there; with none, loads wait for their uses (model 6: of the
    # instructions that open as many units, the one on the longest path first, so each use
    # follows its load and the block does not grow with the unrolling; model 5's PTX-order
    # ties gave 15, 19, 23, 31)
    assert [peaks[u, 1000] for u in (8, 12, 16, 24)] == [25, 33, 41, 57]
    assert [peaks[u, 25] for u in (8, 12, 16, 24)] == [25, 25, 25, 25]
    assert [peaks[u, 0] for u in (8, 12, 16, 24)] == [8, 8, 8, 8]


def test_short_guarded_branches_are_predicated():
    p, a = ir.Register("%p1", T.pred), ir.Register("%r1", T.u32)
    ld = ir.Instruction("ld.global.u32", (a, ir.Address(_r("%rd1"))), 1)
    body = (ir.Instruction("bra.uni", (ir.LabelRef("L"),), guard=ir.Guard(p)), ld,
            ir.Instruction("st.global.u32", (ir.Address(_r("%rd2")), a)),
            ir.Label("L"), ir.Instruction("ret"))
    out, n = if_convert(ir.Kernel("k", body=body))
    assert n == 1 and _ops(out) == ["ld.global.u32", "st.global.u32", "ret"]
    assert all(i.guard == ir.Guard(p, True) for i in out.instructions[:2])
    assert not any(isinstance(s, ir.Label) for s in out.body)
    # too long a body, or a barrier in it, stays a branch
    assert if_convert(ir.Kernel("k", body=body), max_body=1)[1] == 0
    barred = body[:2] + (ir.Instruction("bar.sync", (ir.Immediate(0),)),) + body[2:]
    assert if_convert(ir.Kernel("k", body=barred))[1] == 0


def test_launch_bounds_set_the_budget():
    def k(*directives):
        return ir.Kernel("k", body=(ir.Instruction("ret"),), directives=directives)

    assert kernel_budget(k()) == 32
    assert kernel_budget(k((".reqntid", (128,)))) == 32     # 16 blocks of 4 warps: 64 warps
    assert kernel_budget(k((".reqntid", (32,)))) == 64      # 32 blocks of 1 warp: 32 warps
    assert kernel_budget(k((".maxntid", (256, 1, 1)), (".minnctapersm", (8,)))) == 32
    assert kernel_budget(k((".maxntid", (128, 1, 1)), (".minnctapersm", (1,)))) == 255
    assert kernel_budget(k((".maxntid", (512, 1, 1)), (".minnctapersm", (3,)))) == 40


def test_components_add_up_and_the_call_floor_applies():
    p = predict_registers(kernels.saxpy().kernels[0])
    assert p.registers == sum(c.registers for c in p.components)
    assert [c.name for c in p.components] == ["ptx live", "no-register values",
                                              "scheduling", "fixed overhead",
                                              "allocation holes"]
    assert p.component("fixed overhead").registers == FIXED_OVERHEAD
    # saxpy has at most SMALL_PEAK units live once scheduled: a small kernel's holes
    assert p.component("allocation holes").registers == SMALL_HOLES < HOLES
    assert p.out_of_depth == ()
    assert p.low <= p.registers <= p.high and p.model == MODEL
    call = ir.Kernel("k", body=(ir.Instruction("call.uni", (ir.Symbol("f"),)),
                                ir.Instruction("ret")))
    q = predict_registers(call)
    assert q.registers == CALL_FLOOR and q.components[-1].name == "call ABI"
    assert q.registers == sum(c.registers for c in q.components)
    assert q.out_of_depth == ("calls",) and q.high <= math.ceil(CALL_FLOOR * DEEP_BAND[1])


def _divide(t: str, op: str, kept: int) -> str:
    """PTX: two values loaded and divided with ``op``; ``kept`` more loaded before the division
    and added to the quotient after it (live across it)."""
    w = 8 if t == "f64" else 4
    loads = "".join(f" ld.global.{t} %v{i}, [%rd1+{(i + 2) * w}];\n" for i in range(kept))
    adds = "".join(f" add.{t} %a3, %a3, %v{i};\n" for i in range(kept))
    return (".version 8.0\n.target sm_80\n.address_size 64\n"
            ".visible .entry k(.param .u64 p, .param .u64 q)\n{\n"
            f" .reg .{t} %a<4>;\n .reg .{t} %v<{kept + 1}>;\n .reg .u64 %rd<3>;\n"
            " ld.param.u64 %rd1, [p];\n ld.param.u64 %rd2, [q];\n"
            " cvta.to.global.u64 %rd1, %rd1;\n cvta.to.global.u64 %rd2, %rd2;\n"
            f" ld.global.{t} %a1, [%rd1];\n ld.global.{t} %a2, [%rd1+{w}];\n{loads}"
            f" {op} %a3, %a1, %a2;\n{adds} st.global.{t} [%rd2], %a3;\n ret;\n}}\n")


def test_ieee_division_gets_its_slow_path_floor():
    # the table is what whole-program ptxas gives a kernel that only divides
    for op in DIVISION_SLOW_PATH:
        t = op.rsplit(".", 1)[1]
        assert _ptxas(_divide(t, op, 0), "sm_80")["k"] == DIVISION_SLOW_PATH[op], op
    one = predict_registers(parse(_divide("f64", "div.rn.f64", 0)).kernel("k"))
    slow = one.component("division slow path")
    assert slow.registers > 0 and "div.rn.f64" in slow.detail
    assert one.registers == sum(c.registers for c in one.components)
    # values live across the division sit above the subroutine's registers: 4 doubles, 8 units
    four = predict_registers(parse(_divide("f64", "div.rn.f64", 4)).kernel("k"))
    assert four.registers - one.registers == 8
    # inline divisions have no slow path
    for op in ("div.full.f32", "div.approx.f32"):
        p = predict_registers(parse(_divide("f32", op, 0)).kernel("k"))
        assert "division slow path" not in [c.name for c in p.components], op
    # against ptxas: within 10% with 8 floats live across (23 and 23, measured)
    eight = _divide("f32", "div.rn.f32", 8)
    want = _ptxas(eight, "sm_80")["k"]
    assert abs(predict_registers(parse(eight).kernel("k")).registers - want) <= 0.1 * want


def test_analyze_json_has_the_prediction_with_and_without_compiling(capsys, tmp_path):
    path = tmp_path / "saxpy.ptx"
    path.write_text(emit(kernels.saxpy()))
    for extra in (("--no-compile",), ()):
        (k,) = run_json(capsys, "analyze", path, *extra)["kernels"]
        pred = k["prediction"]
        assert set(pred) == {"registers", "low", "high", "components", "model", "out_of_depth"}
        assert pred["out_of_depth"] == []
        assert pred["model"] == MODEL
        assert [set(c) for c in pred["components"]] == [{"name", "registers", "detail"}] * 5
        assert pred["registers"] == sum(c["registers"] for c in pred["components"])
        assert pred["components"][0]["registers"] == k["estimate"]["registers"]
        # saxpy: 6 live in the PTX order; 4 parameters and 2 cvta out, special registers kept
        assert (pred["registers"], pred["low"], pred["high"]) == (9, 7, 12)
        assert [c["registers"] for c in pred["components"]] == [6, -2, 0, 3, 2]


def _pairs():
    out = []
    for family, (build, sizes) in FAMILIES.items():
        prev = None
        for size in sizes:
            module = build(size)
            cur = (predict_registers(module.kernels[-1]).registers, ptxas_registers(module))
            if prev is not None:
                out.append((family, size, cur[0] - prev[0], cur[1] - prev[1]))
            prev = cur
    return out


def test_variant_pairs_move_with_ptxas():
    """Where ptxas's count moves between two variants, the prediction moves the same way in
    at least 80% of pairs (measured, model 6: 16 of 20; models 3 to 5: 18 of 20: the squeeze to
    the budget flattens 40 to 48 live values, where ptxas moves from 30 to 32 and the
    prediction is 32 for both, and squeezes the 24-wide tile, 32 against ptxas's 40).  Pairs
    where ptxas stays put (its scheduler reorders to stay at 32) are listed in
    docs/prediction.md; counting them, 20 of 25."""
    pairs = _pairs()
    moved = [(f, s, dp, dt) for f, s, dp, dt in pairs if dt]
    agree = [p for p in moved if p[2] * p[3] > 0]
    assert len(moved) >= 15
    assert len(agree) / len(moved) >= 0.8, [p for p in moved if p not in agree]
    same_or_flat = [p for p in pairs if p[2] * p[3] > 0 or p[2] == p[3] == 0]
    assert len(same_or_flat) / len(pairs) >= 0.7


def test_validation_accuracy_does_not_drop():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_estimate_accuracy as bench
    finally:
        sys.path.remove(str(ROOT / "bench"))
    from kernel_corpus import corpus_modules

    # the corpus parsed once per session (shared with the other tests that walk it)
    rows = bench.measure("sm_80", modules=corpus_modules("sm_80"))
    val = [r for r in rows if r[0].split == "validation"]
    assert len(val) >= 40
    acc = bench.accuracy([r[3].registers for r in val], [r[1] for r in val])
    assert acc["within10"] >= REPORTED_WITHIN10 - 1e-9, acc
    assert acc["spearman"] >= REPORTED_SPEARMAN - 5e-4, acc
    live = bench.accuracy([r[2] for r in val], [r[1] for r in val])
    assert acc["median_error"] < live["median_error"], (acc, live)


def _loads_then(n: int, all_at_once: bool) -> ir.Kernel:
    """``n`` read-only loads in a row from a per-thread address (not warp-uniform: no uniform
    loads), then either neighbour sums stored one by one (a chain that needs few values at a
    time in a good order) or every value scaled by the total of all (every value live at once
    in any order)."""
    x0, t, w, p = _r("%rd1"), ir.Register("%r1", T.u32), _r("%rd2"), _r("%rd3")
    xs = [ir.Register(f"%f{i}", T.f32) for i in range(n)]
    body = [ir.Instruction("ld.param.u64", (x0, ir.Address(ir.Symbol("x"))), 1),
            ir.Instruction("mov.u32", (t, ir.SpecialReg("%tid.x")), 1),
            ir.Instruction("mul.wide.u32", (w, t, ir.Immediate(4)), 1),
            ir.Instruction("add.s64", (p, x0, w), 1)]
    body += [ir.Instruction("ld.global.nc.f32", (x, ir.Address(p, 4 * i)), 1)
             for i, x in enumerate(xs)]
    if all_at_once:
        t = ir.Register("%f1000", T.f32)
        body.append(ir.Instruction("add.f32", (t, xs[0], xs[1]), 1))
        body += [ir.Instruction("add.f32", (t, t, x), 1) for x in xs[2:]]
        outs = [(i, ir.Register(f"%f{2000 + i}", T.f32), (x, t)) for i, x in enumerate(xs)]
    else:
        outs = [(i, ir.Register(f"%f{2000 + i}", T.f32), (xs[i], xs[i + 1]))
                for i in range(n - 1)]
    for i, y, (a, b) in outs:
        body.append(ir.Instruction("mul.f32" if all_at_once else "add.f32", (y, a, b), 1))
        body.append(ir.Instruction("st.global.f32", (ir.Address(p, 4096 + 4 * i), y)))
    body.append(ir.Instruction("ret"))
    return ir.Kernel("k", body=tuple(body))


def test_squeezed_to_the_budget_when_a_bottom_up_order_fits():
    # 40 values loaded in a row: above the budget in the PTX order either way; the neighbour
    # sums fit in a few units bottom-up and are predicted at the budget, the scaled values
    # need every value at once and are not
    chain, wide = _loads_then(40, False), _loads_then(40, True)
    assert _peak(chain) >= 40 and _peak(wide) >= 40
    assert bottom_up_peak(chain) <= 4 and bottom_up_peak(wide) >= 40
    p, q = predict_registers(chain), predict_registers(wide)
    # (with a per-thread address the top-down order already reaches the room here; the squeeze
    # itself is checked on cdf97<32,float> and tile_scan in test_prediction_families.py)
    assert p.registers == occupancy_budget("sm_80") == 32
    assert q.registers > 32 + SQUEEZE_SLACK
    assert "squeezed" not in q.component("scheduling").detail


def test_a_store_at_another_offset_of_the_same_base_does_not_hold_a_load_back():
    a, b = _r("%rd1"), _r("%rd2")
    v, x = ir.Register("%f1", T.f32), ir.Register("%f3", T.f32)

    def kernel(load_at):
        return ir.Kernel("k", body=(
            ir.Instruction("add.f32", (x, x, x), 1),
            ir.Instruction("st.global.f32", (ir.Address(a), x)),
            ir.Instruction("ld.global.f32", (v, load_at), 1),
            ir.Instruction("st.global.f32", (ir.Address(a, 8), v)),
            ir.Instruction("ret")))
    # [%rd1+4] after a store to [%rd1]: the bytes differ, the load issues first (latency)
    assert _ops(list_schedule(kernel(ir.Address(a, 4)), 25).kernel)[0] == "ld.global.f32"
    # the same bytes, overlapping ones, or another base register (it may alias): kept after
    for at in (ir.Address(a), ir.Address(a, 2), ir.Address(b, 4)):
        assert _ops(list_schedule(kernel(at), 25).kernel)[:3] == [
            "add.f32", "st.global.f32", "ld.global.f32"], at


def _uniform_taps(n: int, taps_across_block: bool = False) -> ir.Kernel:
    """``n`` taps loaded (ld.global.nc) from a parameter's address (warp-uniform) and ``n``
    samples from a per-thread address, all live before ``n`` products are stored."""
    h, x, xi, t = _r("%rd1"), _r("%rd2"), _r("%rd3"), ir.Register("%r1", T.u32)
    w = _r("%rd4")
    taps = [ir.Register(f"%f{k}", T.f32) for k in range(n)]
    xs = [ir.Register(f"%f{100 + k}", T.f32) for k in range(n)]
    ys = [ir.Register(f"%f{200 + k}", T.f32) for k in range(n)]
    body = [ir.Instruction("ld.param.u64", (h, ir.Address(ir.Symbol("h"))), 1),
            ir.Instruction("ld.param.u64", (x, ir.Address(ir.Symbol("x"))), 1),
            ir.Instruction("mov.u32", (t, ir.SpecialReg("%tid.x")), 1),
            ir.Instruction("mul.wide.u32", (w, t, ir.Immediate(4)), 1),
            ir.Instruction("add.s64", (xi, x, w), 1)]
    body += [ir.Instruction("ld.global.nc.f32", (f, ir.Address(h, 4 * k)), 1)
             for k, f in enumerate(taps)]
    body += [ir.Instruction("ld.global.nc.f32", (f, ir.Address(xi, 4 * k)), 1)
             for k, f in enumerate(xs)]
    if taps_across_block:  # a branch names the label, so a block ends there (model 10)
        body += [ir.Instruction("bra.uni", (ir.LabelRef("$L__next"),)), ir.Label("$L__next")]
    body += [ir.Instruction("mul.f32", (y, a, b), 1) for y, a, b in zip(ys, taps, xs)]
    body += [ir.Instruction("st.global.f32", (ir.Address(xi, 4 * k), y)) for k, y in enumerate(ys)]
    body.append(ir.Instruction("ret"))
    return ir.Kernel("k", body=tuple(body))


def test_uniform_loads_leave_the_count_above_the_budget_only():
    # fir_run<16,16> (docs/prediction.md, "Uniform loads"): the taps go to uniform registers
    big = sass_view(_uniform_taps(24), kinds=KINDS + ("uniform",))
    assert big.folded["uniform"] == 24
    p = predict_registers(_uniform_taps(24))
    assert "uniform loads" in p.component("no-register values").detail
    assert p.registers < predict_registers(_uniform_taps(24, True)).registers
    # read in another block: kept in a register
    across = sass_view(_uniform_taps(24, True), kinds=KINDS + ("uniform",))
    assert "uniform" not in across.folded
    # below the budget the prediction does not ask for them
    small = predict_registers(_uniform_taps(4))
    assert "uniform" not in small.component("no-register values").detail


_UNIFORM_LOOP = """.version 8.0
.target sm_80
.address_size 64
.visible .entry rows(.param .u64 p, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<9>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mul.lo.s32 %r3, %r2, %r1;
    mov.u32 %r4, %tid.x;
    mov.u32 %r5, 0;
LOOP:
    add.s32 %r6, %r3, %r5;
    add.s32 %r7, %r6, %r4;
    mul.wide.s32 %rd2, %r7, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r5;
    add.s32 %r5, %r5, 1;
    setp.lt.s32 %p1, %r5, %r1;
    @%p1 bra LOOP;
    ret;
}
"""


def test_warp_uniform_values_read_in_a_loop_leave_the_count_below_the_budget():
    # model 8 (docs/prediction.md, "Warp-uniform values in loops"): the row base ctaid * n,
    # the loop counter and what is computed from them only are the same in every thread
    k = parse(_UNIFORM_LOOP, "rows.ptx").kernel("rows")
    v = sass_view(k, kinds=KINDS + ("warp-uniform",))
    # %r2 (%ctaid.x), %r3, the counter %r5 and %r6; %r7 reads %tid.x; the parameters keep
    # their own kind
    assert v.folded["warp-uniform"] == 4 and v.folded["parameter"] == 2, v.folded
    assert _peak(v.kernel) < _peak(sass_view(k).kernel)
    p = predict_registers(k)
    assert "warp-uniform values" in p.component("no-register values").detail
    # straight-line code: nothing is read in a loop, nothing is taken out
    flat = parse(_UNIFORM_LOOP.replace("@%p1 bra LOOP;", ""), "flat.ptx").kernel("rows")
    assert "warp-uniform" not in sass_view(flat, kinds=KINDS + ("warp-uniform",)).folded


def test_warp_uniform_values_on_corpus_kernels_against_ptxas():
    # training split: a shared-memory sort and a row argmax whose loops run over uniform
    # bounds and counters (SASS: S2UR UR6, SR_CTAID.X / UIMAD.WIDE.U32 UR4, UR6, UR4, URZ;
    # LDS.128 R4, [UR4]); model 7 predicted 17 for both, ptxas 12
    from kernel_corpus import corpus, ground_truths

    ids = ("nvrtc/sorting.cu:odd_even_transposition<int>", "nvrtc/reductions.cu:argmax_rows<float>")
    ks = [k for k in corpus("sm_80") if k.id in ids]
    assert len(ks) == 2
    truth = ground_truths(ks)
    for k in ks:
        p = predict_registers(parse(k.ptx, k.file).kernel(k.kernel))
        assert "warp-uniform" in p.component("no-register values").detail, k.id
        assert abs(p.registers - truth[k.id].registers) <= 0.1 * truth[k.id].registers, (
            k.id, p.registers, truth[k.id].registers)


_SETMAXNREG = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p)
.maxntid 384, 1, 1
{
  .reg .b32 %r<2>;
  .reg .pred %p<2>;
  .reg .b64 %rd<3>;
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 128;
  @%p1 bra $L1;
  setmaxnreg.inc.sync.aligned.u32 232;
  bra.uni $L2;
$L1:
  setmaxnreg.dec.sync.aligned.u32 40;
$L2:
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  st.global.u32 [%rd2], %r1;
  ret;
}
"""


def test_setmaxnreg_puts_the_prediction_out_of_its_depth():
    # warpgroups that set their own register counts: ptxas may give the kernel every register
    # its launch bounds allow, which the rules do not model
    text = _SETMAXNREG
    kernel = parse(text).kernel("k")
    assert out_of_depth(kernel) == ("setmaxnreg",)
    p = predict_registers(kernel, target="sm_90a")
    assert p.out_of_depth == ("setmaxnreg",)
    assert p.high == math.ceil(p.registers * DEEP_BAND[1])


@pytest.mark.parametrize("threads,blocks,inc", [(384, 1, 232), (384, 1, 104), (256, 1, 232),
                                                (512, 1, 96), (192, 2, 232), (256, 1, None)])
def test_setmaxnreg_under_launch_bounds_gives_ptxas_its_count(threads, blocks, inc):
    # with .minnctapersm, ptxas gives the kernel what its bounds allow, capped by the largest
    # .inc (checked here against whole-program ptxas, not a table)
    text = _SETMAXNREG.replace(".maxntid 384, 1, 1",
                               f".maxntid {threads}, 1, 1\n.minnctapersm {blocks}")
    text = (text.replace("232;", f"{inc};") if inc is not None
            else text.replace("  setmaxnreg.inc.sync.aligned.u32 232;\n", ""))
    kernel = parse(text).kernel("k")
    p = predict_registers(kernel, target="sm_90a")
    assert p.out_of_depth == () and p.components[-1].name == "setmaxnreg"
    assert p.registers == _ptxas(text, "sm_90a")["k"]
