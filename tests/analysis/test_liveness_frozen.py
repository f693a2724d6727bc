"""``Liveness`` is truly frozen and keyword-only; what it computes on demand lives in a private
cache that equality, hashing and repr never see."""

from __future__ import annotations

import attrs
import pytest

from ptxforge.analysis.liveness import Liveness, analyze_liveness
from ptxforge.analysis.liveness.operands import RegisterFacts, register_facts
from ptxforge.ptx import ir, types


def _kernel() -> ir.Kernel:
    a, b = ir.Register("%rd1", types.u64), ir.Register("%rd2", types.u64)
    p = ir.Register("%p1", types.pred)
    body = (ir.Instruction("mov.u64", (a, ir.Immediate(1)), 1),
            ir.Instruction("setp.eq.u64", (p, a, ir.Immediate(0)), 1),
            ir.Instruction("add.u64", (b, a, a), 1, guard=ir.Guard(p)),
            ir.Instruction("st.global.u64", (ir.Address(b), a)),
            ir.Instruction("ret"))
    return ir.Kernel("k", body=body)


def test_every_field_is_keyword_only():
    assert all(f.kw_only for f in attrs.fields(Liveness))
    with pytest.raises(TypeError):
        Liveness(*[None] * 21)  # type: ignore[misc]


def test_no_field_can_be_assigned():
    lv = analyze_liveness(_kernel())
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        lv.registers = ()  # type: ignore[misc]


def test_queries_do_not_change_equality_or_repr():
    k = _kernel()
    fresh, used = analyze_liveness(k), analyze_liveness(k)
    before = repr(used)
    got = (used.series("at"), used.series("before"), used.at_counts.tolist(),
           used.instruction_defs, used.instruction_uses, used.live_in_bits, used.class_peaks())
    assert got[0] == [2, 2, 4, 0, 0]  # (the predicate is counted apart)
    assert repr(used) == before == repr(fresh)
    assert used == fresh
    # the cache is the only place the on-demand views go, and it is private
    assert "cache" not in before and all(f.name != "_memo" for f in attrs.fields(Liveness))


def test_register_facts_is_a_frozen_result():
    facts = register_facts(_kernel().instructions)
    assert isinstance(facts, RegisterFacts)
    assert (facts.index, facts.first_def, facts.def_count, facts.guarded) == (
        {"%rd1": 0, "%p1": 1, "%rd2": 2}, [0, 1, 2], [1, 1, 1], bytes([0, 0, 1, 0, 0]))
    assert facts.early == {2}  # defined under a guard
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        facts.index = {}  # type: ignore[misc]
