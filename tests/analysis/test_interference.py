"""Interference graph: edges, colouring, cliques, the edge budget, and the SSA chordal property."""

from __future__ import annotations

import itertools

import networkx as nx
from hypothesis import given
from hypothesis import strategies as st

from ptxforge.analysis.interference import (
    ClassScope,
    InterferenceGraph,
    build_interference,
    greedy_coloring,
    max_clique,
    verify_coloring,
)
from ptxforge.analysis.liveness import CLASS_NAMES, analyze_liveness
from ptxforge.ptx import ir, types

from liveness_kit import SAMPLES, kernel


def graph_of(name_or_text: str, **kw):
    lv = analyze_liveness(kernel(SAMPLES.get(name_or_text, name_or_text)))
    return lv, build_interference(lv, **kw)


def test_straight_line_edges_and_attributes():
    lv, ig = graph_of("straight")
    assert sorted(tuple(sorted(e)) for e in ig.graph.edges()) == [("%f1", "%f2"), ("%f3", "%f4")]
    assert ig.graph.nodes["%rd1"] == {"type": "u64", "reg_class": "b64", "bits": 64, "units": 2}
    assert ig.graph.nodes["%f1"] == {"type": "f32", "reg_class": "f32", "bits": 32, "units": 1}
    assert not ig.truncated
    assert [s.scope for s in ig.scopes] == ["full"] * len(CLASS_NAMES)


def test_loop_and_two_result_setp_edges():
    _, ig = graph_of("loop")
    assert sorted(tuple(sorted(e)) for e in ig.graph.edges()) == [("%f1", "%f2")]
    _, ig = graph_of("setp2")
    assert sorted(tuple(sorted(e)) for e in ig.graph.edges()) == [("%p1", "%p2")]
    _, ig = graph_of("vector")
    f32 = ig.subgraph("f32")
    # %f1..%f4 are written together: a 4-clique; %f5 meets %f3, %f4; %f6 meets %f5.
    assert max_clique(ig, "f32").nodes == ("%f1", "%f2", "%f3", "%f4")
    assert sorted(f32.neighbors("%f5")) == ["%f3", "%f4", "%f6"]


def test_colouring_is_valid_and_minimal_on_samples():
    for name in SAMPLES:
        lv, ig = graph_of(name)
        coloring = greedy_coloring(ig)
        assert verify_coloring(ig, coloring) == []
        peaks = lv.class_peaks()
        for c, used in coloring.per_class:
            assert used == peaks[c][0], (name, c)


def test_verify_coloring_reports_conflicts_and_missing_nodes():
    g = nx.Graph([("%f1", "%f2"), ("%f2", "%f3")])
    nx.set_node_attributes(g, "f32", "reg_class")
    assert verify_coloring(g, {"%f1": 0, "%f2": 1, "%f3": 0}) == []
    assert verify_coloring(g, {"%f1": 0, "%f2": 0}) == ["%f3 has no colour", "%f1 -- %f2 share colour 0"]


def test_max_clique_on_a_non_chordal_graph():
    g = nx.cycle_graph(["%r1", "%r2", "%r3", "%r4"])  # C4: not chordal, clique 2, needs 2 colours
    g.add_edge("%r1", "%r5")
    g.add_edge("%r2", "%r5")
    nx.set_node_attributes(g, {n: {"reg_class": "b32", "units": 1} for n in g})
    scope = ClassScope(reg_class="b32", scope="full", window=None, nodes=5, edges=6,
                       estimated_edges=6, peak=3, peak_index=0)
    ig = InterferenceGraph(graph=g, scopes=(scope,), max_edges=100,
                           peak_cliques={"b32": ("%r1", "%r2")})
    exact = max_clique(ig, "b32")
    assert (exact.nodes, exact.weight, exact.exact, exact.method) == \
        (("%r1", "%r2", "%r5"), 3, True, "branch-and-bound")
    bound = max_clique(ig, "b32", exact_limit=2)
    assert (bound.nodes, bound.exact) == (("%r1", "%r2"), False)


def test_weighted_clique_uses_units():
    _, ig = graph_of("f64")
    q = max_clique(ig, "f64")
    assert (q.nodes, q.weight, q.method) == (("%fd1", "%fd2"), 4, "chordal")


def wide_kernel(n: int) -> ir.Kernel:
    """n f32 values all live at once, then summed into one accumulator."""
    rd = ir.Register("%rd1", types.u64)
    fs = [ir.Register(f"%f{i}", types.f32) for i in range(n)]
    body = [ir.Instruction("ld.param.u64", (rd, ir.Address(ir.Symbol("p"))), 1)]
    body += [ir.Instruction("ld.global.f32", (f, ir.Address(rd, 4 * i)), 1) for i, f in enumerate(fs)]
    acc = ir.Register("%f_acc", types.f32)
    body.append(ir.Instruction("mov.f32", (acc, ir.Immediate(0.0, types.f32)), 1))
    body += [ir.Instruction("add.f32", (acc, acc, f), 1) for f in fs]
    body.append(ir.Instruction("st.global.f32", (ir.Address(rd), acc)))
    return ir.Kernel("wide", body=tuple(body))


def test_budget_windows_the_big_class_and_keeps_small_ones_whole():
    lv = analyze_liveness(wide_kernel(60))
    full = build_interference(lv)
    assert full.scope("f32").edges == 60 * 61 // 2  # 61 values pairwise live (60 + acc)
    small = build_interference(lv, max_edges=500)
    assert small.graph.number_of_edges() <= 500
    assert small.truncated
    f32 = small.scope("f32")
    assert f32.scope == "window" and f32.window is not None
    lo, hi = f32.window
    assert lo <= lv.class_peaks()["f32"][1] <= hi
    assert small.scope("b64").scope == "full"
    assert f32.estimated_edges >= full.scope("f32").edges
    # The peak clique is still known exactly from the live sets, whatever the budget.
    assert len(small.peak_cliques["f32"]) == 61
    assert "window" in small.describe() and small.to_dict()["truncated"] is True


def test_budget_too_small_for_even_the_peak_instruction_skips_the_class():
    lv = analyze_liveness(wide_kernel(30))
    ig = build_interference(lv, max_edges=5)
    assert ig.scope("f32").scope == "skipped"
    assert ig.graph.number_of_edges() <= 5


def test_class_selection():
    lv = analyze_liveness(kernel(SAMPLES["setp2"]))
    ig = build_interference(lv, classes=["pred"])
    assert ig.classes == ("pred",)
    assert sorted(ig.graph.nodes) == ["%p1", "%p2"]


# ---------------------------------------------------------------------------------------
# Property: strict SSA (straight-line and diamond) → chordal, colours == max live per class.

_TYPES = [types.pred, types.u16, types.u32, types.u64, types.f32, types.f64, types.b128]


@st.composite
def ssa_kernels(draw):
    counter = itertools.count(1)

    def new(ty):
        return ir.Register(f"{ty.reg_class.prefix}{next(counter)}", ty)

    def block(avail: list, lo: int, hi: int) -> list:
        out = []
        for _ in range(draw(st.integers(lo, hi))):
            ty = draw(st.sampled_from(_TYPES))
            uses = draw(st.lists(st.sampled_from(avail), max_size=3)) if avail else []
            if draw(st.integers(0, 5)) == 0:  # a two-result vector definition
                a, b = new(ty), new(ty)
                out.append(ir.Instruction("op.v2", (ir.Vector((a, b)), *uses), 1))
                avail += [a, b]
            else:
                r = new(ty)
                out.append(ir.Instruction("op", (r, *uses), 1))
                avail.append(r)
        return out

    def sink(avail: list) -> list:
        used = draw(st.lists(st.sampled_from(avail), max_size=6)) if avail else []
        return [ir.Instruction("st.sink", tuple(used))] if used else []

    avail: list = []
    body = block(avail, 1, 14)
    if draw(st.booleans()):
        p = new(types.pred)
        body.append(ir.Instruction("setp.op", (p, *avail[-2:]), 1))
        body.append(ir.Instruction("bra", (ir.LabelRef("ELSE"),), guard=ir.Guard(p)))
        then_avail, else_avail = list(avail), list(avail)
        body += block(then_avail, 0, 8) + sink(then_avail)
        body.append(ir.Instruction("bra.uni", (ir.LabelRef("JOIN"),)))
        body.append(ir.Label("ELSE"))
        body += block(else_avail, 0, 8) + sink(else_avail)
        body.append(ir.Label("JOIN"))
        body += block(avail, 0, 8)
    body += sink(avail)
    body.append(ir.Instruction("ret"))
    return ir.Kernel("ssa", body=tuple(body))


@given(ssa_kernels())
def test_ssa_graph_is_chordal_and_smallest_last_is_optimal(k):
    lv = analyze_liveness(k)
    ig = build_interference(lv)
    assert not ig.truncated
    coloring = greedy_coloring(ig)
    assert verify_coloring(ig, coloring) == []
    peaks = lv.class_peaks()
    for c in CLASS_NAMES:
        sub = ig.subgraph(c)
        if sub.number_of_nodes() == 0:
            assert peaks[c][0] == 0
            continue
        assert nx.is_chordal(sub)
        assert coloring.count(c) == peaks[c][0]
        q = max_clique(ig, c)
        assert q.exact and q.size == peaks[c][0]


def test_colouring_is_the_same_in_every_process():
    # networkx's smallest_last pops from sets of nodes; with string nodes that followed
    # PYTHONHASHSEED (sgemm_8x8's f32 class got 75..78 colours).  Two seeds, same bytes.
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = (
        "import sys; sys.path.insert(0, 'tests/support')\n"
        "from corpus_util import corpus_ptx\n"
        "from ptxforge import parse\n"
        "from ptxforge.analysis.liveness import analyze_liveness\n"
        "from ptxforge.analysis.interference import build_interference, greedy_coloring\n"
        "k = parse(corpus_ptx('gemm', 'sm_80')).kernel('sgemm_8x8')\n"
        "c = greedy_coloring(build_interference(analyze_liveness(k)))\n"
        "print(sorted(c.colors.items()))\n")
    outs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(root))
        outs.append(subprocess.run([sys.executable, "-c", script], cwd=root, env=env,
                                   capture_output=True, text=True, check=True).stdout)
    assert outs[0] == outs[1] and outs[0].startswith("[('%")
