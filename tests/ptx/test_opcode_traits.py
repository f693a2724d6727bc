"""The one opcode table's traits, modifiers, shapes and parsed opcodes, asserted by value."""

from __future__ import annotations

import pytest

from ptxforge.ptx import ir, isa
from ptxforge.ptx import types as T
from ptxforge.ptx.lexer import is_no_def
from ptxforge.ptx.opcodes import (FAMILIES, Abort, Barrier, Branch, Call, MemoryAccess,
                                  OperandSlot, OrdersMemory, Return, Terminator, WarpCollective,
                                  WritesNoRegister, families_with, info, opcode_of)
from ptxforge.ptx.parse.opcodes import opcode_problem, operand_widths


def test_terminators_and_their_kinds():
    assert set(families_with(Terminator)) == {"bra", "brx", "ret", "exit", "trap"}
    assert set(families_with(Branch)) == {"bra", "brx"}
    assert set(families_with(Return)) == {"ret", "exit"}
    assert families_with(Abort) == ("trap",)
    assert info("bra").is_terminator and not info("call").is_terminator
    assert info("call").has(Call) and info("call").has(OrdersMemory)


def test_collectives_barriers_and_ordering():
    assert set(families_with(WarpCollective)) == {"shfl", "vote", "match", "activemask",
                                                   "redux", "elect"}
    assert set(families_with(Barrier)) == {"bar", "barrier"}
    assert set(families_with(OrdersMemory)) == {"bar", "barrier", "membar", "fence", "call",
                                                "mbarrier", "wgmma", "griddepcontrol", "cp",
                                                "trap"}


def test_memory_access_direction_and_spaces():
    directions = {name: row.memory.direction for name, row in FAMILIES.items() if row.memory}
    assert directions == {
        "ld": "load", "ldu": "load", "ldmatrix": "load", "tex": "load", "tld4": "load",
        "suld": "load", "st": "store", "stmatrix": "store", "sust": "store", "atom": "atomic",
        "red": "atomic", "sured": "atomic", "multimem": "atomic", "prefetch": "prefetch",
        "prefetchu": "prefetch", "cp": "async", "wmma": "fragment"}
    assert info("tex").memory == MemoryAccess(direction="load", texture=True, spaces=("tex",))
    assert info("sust").memory.spaces == ("tex", "global") and info("sust").memory.writes
    assert info("ldmatrix").memory.shared_only and info("ld").memory.reads
    assert not info("cp").memory.reads and not info("cp").memory.writes
    assert info("add").memory is None and info("add").get(MemoryAccess) is None


def test_writes_no_register_with_its_exceptions():
    assert info("st").has(WritesNoRegister) and not info("ld").has(WritesNoRegister)
    assert is_no_def("st.global.f32") and is_no_def("bra.uni") and is_no_def("bar.sync")
    assert not is_no_def("bar.red.popc.u32") and not is_no_def("barrier.cta.red.and.pred")
    assert is_no_def("mbarrier.init.shared.b64") and not is_no_def("mbarrier.try_wait.b64")
    assert is_no_def("wgmma.fence.sync.aligned") and not is_no_def("wgmma.mma_async.f32")
    assert not is_no_def("add.f32") and not is_no_def("nosuch.f32")


def test_latency_classes():
    sfu = {name for name, row in FAMILIES.items() if row.latency == "sfu"}
    assert sfu == {"div", "rem", "rcp", "sqrt", "rsqrt", "sin", "cos", "lg2", "ex2", "tanh"}
    assert info("ld").latency == "memory" and info("mma").latency == "tensor"
    assert info("bra").latency == "control" and info("add").latency == "alu"


def test_operand_shape_is_structure_with_a_text_view():
    assert info("fma").shape == "d, a, b, c"
    assert [s.name for s in info("fma").operands] == ["d", "a", "b", "c"]
    assert info("st").operands == (OperandSlot(name="[a]", form="address"), OperandSlot(name="b"))
    assert info("cp").operands[-1] == OperandSlot(name="[mbar]", form="address", optional=True)
    assert [s.optional for s in info("bar").operands] == [True, True]
    assert info("bra").operands == (OperandSlot(name="label", form="label"),)
    assert info("mma").operands[0].form == "vector"
    assert isa.OPS["fma"].shape == "d, a, b, c" and isa.OPS["fma"].info is info("fma")


def test_modifier_groups():
    groups = dict(info("add").groups)
    assert groups["rounding"] == ("rn", "rz", "rm", "rp") and groups[""] == ("ftz", "sat", "cc")
    assert "L2::cache_hint" in info("ld").modifiers and "v4" in info("ld").modifiers
    assert info("wgmma").loose and not info("add").loose


def test_min_max_modifiers_agree_between_parser_and_builder():
    for family in ("min", "max"):
        assert info(family).modifiers == {"ftz", "NaN", "xorsign", "abs", "relu"}
        assert set(isa.OPS[family].modifiers) == info(family).modifiers
    assert opcode_problem("min.NaN.xorsign.abs.f32") is None
    assert str(isa.requirement("max.xorsign.abs.f16")) == "sm_86 and PTX ISA 7.2"
    assert str(isa.requirement("max.relu.s32")) == "sm_90 and PTX ISA 8.0"
    assert isa.forbidden("min.NaN.s32") == ".NaN on .s32 min/max"
    assert isa.forbidden("max.ftz.bf16") == ".ftz on .bf16 min/max"
    assert isa.forbidden("max.relu.f32").startswith(".relu on .f32")
    assert isa.forbidden("min.ftz.NaN.f32") == ""


@pytest.mark.parametrize("family", sorted(isa.OPS))
def test_builder_modifiers_are_table_modifiers(family):
    """Every modifier the builder may write is one the parser (the table) accepts."""
    for mod in isa.OPS[family].modifiers:
        assert opcode_problem(f"{family}.{mod}") is None, (family, mod)


def test_minimum_target_of_a_family():
    """The minimum target of a family (its form-free rule) is the builder table's rule."""
    assert isa.requirement("lop3") == isa.Requirement(sm=50, ptx=(4, 3))
    assert isa.requirement("wgmma").minimum_target == "sm_90a"
    assert isa.requirement("add") == isa.Requirement()


def test_parsed_opcode_is_interned_and_kept_on_the_ir():
    op = opcode_of("ld.global.nc.v4.f32")
    assert (op.family, op.modifiers, op.types, op.vector, op.space) == (
        "ld", ("global", "nc", "v4"), ("f32",), 4, "global")
    assert op is opcode_of("ld.global.nc.v4.f32") and op.info is FAMILIES["ld"]
    assert opcode_of("st.shared::cta.b32").space == "shared"
    assert opcode_of("ld.f32").space is None and opcode_of("add.f32").vector == 1
    assert opcode_of("frob.f32").info is None and not opcode_of("frob").has_trait(Terminator)
    inst = ir.Instruction("bra.uni", (ir.LabelRef("L"),))
    assert inst.op is opcode_of("bra.uni") and inst.op.has_trait(Terminator)
    assert inst.family == "bra"


def test_operand_widths_follow_the_rows():
    assert operand_widths("add.s32") == (32,)
    assert operand_widths("shl.b64") == (64, 64, 32)
    assert operand_widths("setp.lt.f32") == (1, 32, 32, 1)
    assert operand_widths("selp.b16") == (16, 16, 16, 1)
    assert operand_widths("mul.wide.s32") is None and operand_widths("cvt.f32.s32") is None
    assert operand_widths("lop3.or.b32") is None


def test_bits_spelled_families():
    assert isa.BITS_SPELLED == {"and", "or", "xor", "not", "cnot", "shl", "popc", "clz",
                                "brev", "bfi", "prmt", "lop3", "shf", "fns", "bmsk"}
    assert T.b32 in isa.OPS["and"].types
