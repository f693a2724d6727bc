"""Basic blocks, successors and natural loops over kernels built from ir classes."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptxforge.analysis.cfg import build_cfg
from ptxforge.errors import BuildError, PtxforgeError
from ptxforge.ptx import ir, types

import hypothesis_profiles  # noqa: F401  (registers and loads the profiles)
from liveness_kit import SAMPLES, kernel


def shape(cfg):
    return [(b.start, b.end, b.successors) for b in cfg.blocks]


def test_straight_line_is_one_block():
    cfg = build_cfg(kernel(SAMPLES["straight"]))
    assert shape(cfg) == [(0, 8, ())]
    assert cfg.loops == ()
    assert cfg.block_of(5).index == 0


def test_conditional_branch_has_target_and_fall_through_unconditional_only_target():
    cfg = build_cfg(kernel(SAMPLES["diamond"]))
    assert shape(cfg) == [(0, 4, (1, 2)), (4, 8, (3,)), (8, 9, (3,)), (9, 11, ())]
    assert [b.predecessors for b in cfg.blocks] == [(), (0,), (0,), (1, 2)]
    assert [b.name for b in cfg.blocks] == ["bb0", "bb1", "ELSE", "JOIN"]
    assert cfg.loops == ()


def test_leaders_after_branches_and_at_labels():
    cfg = build_cfg(kernel("""
        mov.u32 %r1, 0;
    A:
        add.u32 %r1, %r1, 1;
    B:
        bra.uni C;
        add.u32 %r1, %r1, 2;
    C:
        ret;
        mov.u32 %r2, 1;
    """))
    # The instruction after the unconditional bra is unreachable: its own block, no preds.
    assert shape(cfg) == [(0, 1, (1,)), (1, 2, (2,)), (2, 3, (4,)), (3, 4, (4,)), (4, 5, ()), (5, 6, ())]
    assert cfg.blocks[3].predecessors == ()
    assert cfg.reverse_postorder() == [0, 1, 2, 4, 3, 5]


def test_guarded_ret_and_exit_fall_through():
    cfg = build_cfg(kernel("""
        setp.eq.u32 %p1, 1, 1;
        @%p1 ret;
        @!%p1 exit;
        exit;
    """))
    assert shape(cfg) == [(0, 2, (1,)), (2, 3, (2,)), (3, 4, ())]


def test_unknown_label_is_a_clear_error_naming_it():
    with pytest.raises(BuildError, match="unknown label 'NOWHERE'") as err:
        build_cfg(kernel("""
            bra.uni NOWHERE;
        THERE:
            ret;
        """))
    assert isinstance(err.value, PtxforgeError)
    assert "THERE" in str(err.value)


def test_duplicate_label_is_an_error():
    body = (ir.Label("L"), ir.Instruction("ret"), ir.Label("L"), ir.Instruction("ret"))
    with pytest.raises(BuildError, match="label 'L' is defined twice"):
        build_cfg(ir.Kernel("k", body=body))


def test_branch_to_a_label_at_the_end_of_the_body_has_no_successor_block():
    cfg = build_cfg(kernel("""
        setp.eq.u32 %p1, 1, 1;
        @%p1 bra END;
        mov.u32 %r1, 1;
    END:
    """))
    assert shape(cfg) == [(0, 2, (1,)), (2, 3, ())]


def test_simple_loop():
    cfg = build_cfg(kernel(SAMPLES["loop"]))
    assert shape(cfg) == [(0, 3, (1,)), (3, 8, (1, 2)), (8, 10, ())]
    (loop,) = cfg.loops
    assert (loop.header, loop.blocks, loop.back_edges, loop.depth, loop.parent) == (1, (1,), ((1, 1),), 1, None)


def test_nested_loops_with_depth_and_parent():
    cfg = build_cfg(kernel("""
        mov.u32 %r1, 0;
    OUTER:
        mov.u32 %r2, 0;
    INNER:
        add.u32 %r2, %r2, 1;
        setp.lt.u32 %p1, %r2, 4;
        @%p1 bra INNER;
        add.u32 %r1, %r1, 1;
        setp.lt.u32 %p2, %r1, 4;
        @%p2 bra OUTER;
        ret;
    """))
    assert shape(cfg) == [(0, 1, (1,)), (1, 2, (2,)), (2, 5, (2, 3)), (5, 8, (1, 4)), (8, 9, ())]
    outer, inner = cfg.loops
    assert (outer.header, outer.blocks, outer.depth, outer.parent) == (1, (1, 2, 3), 1, None)
    assert (inner.header, inner.blocks, inner.depth, inner.parent) == (2, (2,), 2, 0)


def test_irreducible_cycle_has_no_natural_loop():
    cfg = build_cfg(kernel("""
        setp.eq.u32 %p1, 1, 1;
        @%p1 bra B;
    A:
        mov.u32 %r1, 1;
        bra.uni B;
    B:
        mov.u32 %r1, 2;
        @%p1 bra A;
        ret;
    """))
    assert shape(cfg) == [(0, 2, (1, 2)), (2, 4, (2,)), (4, 6, (1, 3)), (6, 7, ())]
    assert cfg.loops == ()


def test_brx_idx_uses_its_branchtargets_list():
    body = (
        ir.Instruction("mov.u32", (ir.Register("%r1", types.u32), ir.Immediate(0)), 1),
        ir.Label("ts"),
        ir.Directive(".branchtargets A, B;"),
        ir.Instruction("brx.idx", (ir.Register("%r1", types.u32), ir.Symbol("ts"))),
        ir.Label("A"), ir.Instruction("ret"),
        ir.Label("B"), ir.Instruction("ret"),
        ir.Label("C"), ir.Instruction("ret"),
    )
    cfg = build_cfg(ir.Kernel("k", body=body))
    # "ts" labels the brx instruction's own block (index 1); its targets are A and B only.
    assert shape(cfg) == [(0, 1, (1,)), (1, 2, (2, 3)), (2, 3, ()), (3, 4, ()), (4, 5, ())]


def test_empty_kernel_has_no_blocks():
    cfg = build_cfg(ir.Kernel("k", body=()))
    assert cfg.blocks == () and cfg.loops == ()


def test_networkx_view_matches_successors():
    cfg = build_cfg(kernel(SAMPLES["diamond"]))
    g = cfg.to_networkx()
    assert sorted(g.edges()) == [(0, 1), (0, 2), (1, 3), (2, 3)]


# ---------------------------------------------------------------------------------------
# Property: natural loops (own dominator computation, and none at all when no edge goes back
# in reverse postorder) agree with networkx's dominators and the textbook loop bodies.

@st.composite
def random_cfg_kernels(draw):
    """Blocks B0..Bn-1, each one instruction and a terminator: fall through, ``bra.uni``,
    ``@%p1 bra`` (target and fall through), ``ret`` or ``@%p1 ret``; targets anywhere."""
    nb = draw(st.integers(1, 14))
    lines = []
    for b in range(nb):
        lines += [f"B{b}:", "add.u32 %r1, %r1, 1;"]
        kind = draw(st.sampled_from(["fall", "bra", "cbra", "ret", "cret"]))
        target = draw(st.integers(0, nb - 1))
        lines.append({"fall": "", "bra": f"bra.uni B{target};", "cbra": f"@%p1 bra B{target};",
                      "ret": "ret;", "cret": "@%p1 ret;"}[kind])
    return kernel("\n".join(x for x in lines if x))


def reference_loops(cfg) -> list:
    """(header, blocks, back edges) per natural loop, from networkx's dominators and ancestors."""
    if not cfg.blocks:
        return []
    g = cfg.to_networkx()
    idom = dict(nx.immediate_dominators(g, 0))
    idom[0] = 0  # (networkx 3.5 leaves the start node out)

    def dominates(a: int, b: int) -> bool:
        while True:
            if a == b:
                return True
            if idom[b] == b:
                return False
            b = idom[b]

    back: dict[int, list[int]] = {}
    for u, h in sorted(g.edges):
        if u in idom and dominates(h, u):
            back.setdefault(h, []).append(u)
    out = []
    without_h = {h: g.subgraph([x for x in g if x != h]) for h in back}
    for h in sorted(back):
        body = {h}
        for u in back[h]:
            if u != h:
                body |= {u} | (nx.ancestors(without_h[h], u) & set(idom))
        out.append((h, tuple(sorted(body)), tuple((u, h) for u in sorted(back[h]))))
    return out


@given(random_cfg_kernels())
def test_natural_loops_match_networkx_dominators(k):
    cfg = build_cfg(k)
    assert [(lp.header, lp.blocks, lp.back_edges) for lp in cfg.loops] == reference_loops(cfg)
    order = cfg.reverse_postorder()
    assert sorted(order) == list(range(len(cfg.blocks))) and order[:1] == [0]
    reachable = set(nx.descendants(cfg.to_networkx(), 0)) | {0}
    assert set(order[:len(reachable)]) == reachable
