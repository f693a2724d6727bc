"""The register prediction (ptxforge.analysis.prediction): its rules on hand-made IR, its
components, its place in ``analyze --json``, DSL variant pairs against whole-program ptxas,
and its accuracy on the corpus's validation split."""

from __future__ import annotations

import sys
from pathlib import Path

from ptxforge import emit
from ptxforge.analysis.liveness import analyze_liveness
from ptxforge.analysis.prediction import (
    CALL_FLOOR,
    FIXED_OVERHEAD,
    HOLES,
    MODEL,
    REGISTER_LIMIT,
    hoist_loads,
    occupancy_budget,
    predict_registers,
    sass_view,
)
from ptxforge.analysis.prediction.view import KINDS
from ptxforge.dsl import kernels
from ptxforge.ptx import ir
from ptxforge.ptx import types as T

from cli_util import run_json
from prediction_variants import FAMILIES, ptxas_registers

ROOT = Path(__file__).resolve().parents[2]

#: Validation-split figures reported in docs/prediction.md (bench/bench_estimate_accuracy.py,
#: ptxforge-predict/2: 329 non-spilling kernels, 117 in validation, sm_80): the test fails
#: 5 points below.
REPORTED_WITHIN10 = 0.46
REPORTED_SPEARMAN = 0.949


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


def test_loads_rise_only_under_the_occupancy_budget():
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
    assert p.component("load scheduling").registers == 6
    q = predict_registers(k, holes=30)                      # natural 37: above the budget
    assert q.component("load scheduling").registers == 0
    r = predict_registers(k, holes=21)                      # natural 27: capped at 32
    assert r.registers == 32 and r.component("load scheduling").registers == 5
    big = predict_registers(k, holes=300)
    assert big.registers == REGISTER_LIMIT == big.high
    assert big.component("register limit").registers == REGISTER_LIMIT - (3 + 3 + 300)


def test_loads_move_up_to_their_address_but_not_across_a_barrier_or_beyond_the_window():
    a = _r("%rd1")
    v1, v2, x = (ir.Register(f"%f{i}", T.f32) for i in (1, 2, 3))
    ld = ir.Instruction("ld.global.f32", (v2, ir.Address(a, 4)), 1)
    body = (ir.Instruction("ld.global.f32", (v1, ir.Address(a)), 1),
            ir.Instruction("add.f32", (x, v1, v1), 1),
            ir.Instruction("bar.sync", (ir.Immediate(0),)),
            ir.Instruction("mul.f32", (x, x, x), 1),
            ld, ir.Instruction("ret"))
    out, moved = hoist_loads(ir.Kernel("k", body=body))
    assert moved == 1 and out.instructions.index(ld) == 3
    out, moved = hoist_loads(ir.Kernel("k", body=body), window=0)
    assert moved == 0 and out.instructions.index(ld) == 4


def test_components_add_up_and_the_call_floor_applies():
    p = predict_registers(kernels.saxpy().kernels[0])
    assert p.registers == sum(c.registers for c in p.components)
    assert [c.name for c in p.components] == ["ptx live", "no-register values",
                                              "load scheduling", "fixed overhead",
                                              "allocation holes"]
    assert p.component("fixed overhead").registers == FIXED_OVERHEAD
    assert p.component("allocation holes").registers == HOLES
    assert p.low <= p.registers <= p.high and p.model == MODEL
    call = ir.Kernel("k", body=(ir.Instruction("call.uni", (ir.Symbol("f"),)),
                                ir.Instruction("ret")))
    q = predict_registers(call)
    assert q.registers == CALL_FLOOR and q.components[-1].name == "call ABI"
    assert q.registers == sum(c.registers for c in q.components)


def test_analyze_json_has_the_prediction_with_and_without_compiling(capsys, tmp_path):
    path = tmp_path / "saxpy.ptx"
    path.write_text(emit(kernels.saxpy()))
    for extra in (("--no-compile",), ()):
        (k,) = run_json(capsys, "analyze", path, *extra)["kernels"]
        pred = k["prediction"]
        assert set(pred) == {"registers", "low", "high", "components", "model"}
        assert pred["model"] == MODEL
        assert [set(c) for c in pred["components"]] == [{"name", "registers", "detail"}] * 5
        assert pred["registers"] == sum(c["registers"] for c in pred["components"])
        assert pred["components"][0]["registers"] == k["estimate"]["registers"]
        # saxpy: 6 live in the PTX order; 4 parameters and 2 cvta out, special registers kept
        assert (pred["registers"], pred["low"], pred["high"]) == (11, 8, 14)
        assert [c["registers"] for c in pred["components"]] == [6, -2, 0, 3, 4]


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
    at least 90% of pairs (measured: 19 of 20).  Pairs where ptxas stays put (its scheduler
    reorders to stay at 32) are listed in docs/prediction.md; counting them, 20 of 25."""
    pairs = _pairs()
    moved = [(f, s, dp, dt) for f, s, dp, dt in pairs if dt]
    agree = [p for p in moved if p[2] * p[3] > 0]
    assert len(moved) >= 15
    assert len(agree) / len(moved) >= 0.9, [p for p in moved if p not in agree]
    same_or_flat = [p for p in pairs if p[2] * p[3] > 0 or p[2] == p[3] == 0]
    assert len(same_or_flat) / len(pairs) >= 0.7


def test_validation_accuracy_does_not_drop():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_estimate_accuracy as bench
    finally:
        sys.path.remove(str(ROOT / "bench"))
    rows = bench.measure("sm_80")
    val = [r for r in rows if r[0].split == "validation"]
    assert len(val) >= 40
    acc = bench.accuracy([r[3].registers for r in val], [r[1] for r in val])
    assert acc["within10"] >= REPORTED_WITHIN10 - 0.05, acc
    assert acc["spearman"] >= 0.93, acc
    live = bench.accuracy([r[2] for r in val], [r[1] for r in val])
    assert acc["median_error"] < live["median_error"], (acc, live)
