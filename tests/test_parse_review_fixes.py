"""Parser review fixes: registers named without '%', module-level directives and vector or
opaque variables, and label errors with a PTX position.

Every accepted construct round-trips: ``emit(parse(text))`` compiles (real ptxas through
nvJitLink) to the same register count as ``text``, and emission is a fixed point.  Every
refused label construct is refused by ptxas too (the parser only reports it earlier, with a
position).
"""

from __future__ import annotations

import pytest

import ptxforge
from ptxforge.ptx import ir, types
from ptxforge.ptx.emit import emit
from ptxforge.errors import CompileError, ParseError
from ptxforge.ptx.parse import parse

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"


def registers(ptx: str) -> dict:
    return {k.name: k.registers for k in ptxforge.compile_ptx(ptx, "sm_80")}


def assert_round_trip(ptx: str) -> ir.Module:
    """emit(parse(ptx)) compiles to the same register counts, and emission is a fixed point."""
    module = parse(ptx)
    once = emit(module)
    assert emit(parse(once)) == once
    assert registers(once) == registers(ptx)
    return module


def uses_defs(inst: ir.Instruction) -> tuple:
    return [r.name for r in inst.defs], [r.name for r in inst.uses]


# -- 1. registers declared without '%' -------------------------------------------------------
PLAIN = HEADER + """
.visible .entry k(.param .u64 out, .param .u64 inp)
{
\t.reg .f32 a, b, c;
\t.reg .b64 addr, oaddr;
\t.reg .pred p;
\t.reg .b32 t;
\tld.param.u64 addr, [inp];
\tld.param.u64 oaddr, [out];
\tmov.u32 t, %tid.x;
\tsetp.eq.u32 p, t, 0;
\tld.global.f32 a, [addr];
\tld.global.f32 b, [addr+4];
\tadd.f32 c, a, b;
\t@p st.global.f32 [oaddr], c;
\tret;
}
"""
# The same kernel with '%' names: the analysis must not depend on how names look.
PERCENT = (PLAIN.replace("a, b, c;", "%a, %b, %c;").replace("addr, oaddr;", "%addr, %oaddr;")
           .replace(".pred p;", ".pred %p;").replace(".b32 t;", ".b32 %t;"))
for _old, _new in [("u64 addr,", "u64 %addr,"), ("u64 oaddr,", "u64 %oaddr,"), ("u32 t,", "u32 %t,"),
                   ("u32 p, t,", "u32 %p, %t,"), ("f32 a, [addr]", "f32 %a, [%addr]"),
                   ("f32 b, [addr+4]", "f32 %b, [%addr+4]"), ("f32 c, a, b", "f32 %c, %a, %b"),
                   ("@p st.global.f32 [oaddr], c", "@%p st.global.f32 [%oaddr], %c")]:
    PERCENT = PERCENT.replace(_old, _new)


def test_plain_register_names_get_defs_and_uses():
    k = parse(PLAIN).kernel("k")
    got = [uses_defs(i) for i in k.instructions]
    assert got == [
        (["addr"], []), (["oaddr"], []), (["t"], []), (["p"], ["t"]),
        (["a"], ["addr"]), (["b"], ["addr"]), (["c"], ["a", "b"]),
        ([], ["oaddr", "c", "p"]), ([], []),
    ]
    assert k.instructions[4].operands[1] == ir.Address(ir.Register("addr", types.b64), 0)
    assert k.instructions[0].operands[1] == ir.Address(ir.Symbol("inp"), 0)  # params stay symbols


def test_plain_register_names_pressure_by_hand():
    # live at `ld.global.f32 a, [addr]`: addr (2) + oaddr (2) + a (1) = 5 units (p is a
    # predicate); nothing later is higher (b: oaddr 2 + a + b = 4; c: oaddr 2 + c = 3).
    plain = ptxforge.analyze_pressure(parse(PLAIN).kernel("k"))
    percent = ptxforge.analyze_pressure(parse(PERCENT).kernel("k"))
    assert plain.peak.units == 5
    assert percent.peak.units == plain.peak.units


def test_plain_register_names_round_trip():
    assert "%a" not in PLAIN and "%a" in PERCENT
    assert registers(PLAIN) == registers(PERCENT)
    assert_round_trip(PLAIN)


MMA = HEADER + """
.visible .entry k(.param .u64 out)
{
\t.reg .b32 fa<4>;
\t.reg .b32 fb<2>;
\t.reg .f32 fc<4>;
\t.reg .b64 o;
\t.reg .pred p, q;
\tmov.b32 fa0, 1;
\tmov.b32 fa1, 2;
\tmov.b32 fa2, 3;
\tmov.b32 fa3, 4;
\tmov.b32 fb0, 5;
\tmov.b32 fb1, 6;
\tmov.f32 fc0, 0f00000000;
\tmov.f32 fc1, 0f00000000;
\tmov.f32 fc2, 0f00000000;
\tmov.f32 fc3, 0f00000000;
\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {fc0,fc1,fc2,fc3}, {fa0,fa1,fa2,fa3}, {fb0,fb1}, {fc0,fc1,fc2,fc3};
\tsetp.lt.f32 p|q, fc0, fc1;
\tld.param.u64 o, [out];
\t@!q st.global.f32 [o+4], fc2;
\t@p st.global.v2.f32 [o], {fc0, fc3};
\tret;
}
"""


def test_plain_names_in_vectors_ranges_pipes_and_guards():
    k = parse(MMA).kernel("k")
    mma, setp, _, st1, st2, _ = k.instructions[10:]
    fc = [f"fc{i}" for i in range(4)]
    assert uses_defs(mma) == (fc, ["fa0", "fa1", "fa2", "fa3", "fb0", "fb1", *fc])
    assert all(r.type is types.f32 for r in mma.defs)
    assert uses_defs(setp) == (["p", "q"], ["fc0", "fc1"])
    assert setp.defs[0].type is types.pred
    assert uses_defs(st1) == ([], ["o", "fc2", "q"]) and st1.guard.negated
    assert uses_defs(st2) == ([], ["o", "fc0", "fc3", "p"])
    # at the mma every fa, fb and fc value is live: 4 + 2 + 4 units
    assert ptxforge.analyze_pressure(k).peak.units == 10
    assert_round_trip(MMA)


SHADOW = HEADER + """
.global .f32 g;

.visible .entry k(.param .u64 out)
{
\t.reg .f32 g;
\t.reg .b64 o;
\tmov.f32 g, 0f3F800000;
\tld.param.u64 o, [out];
\tst.global.f32 [o], g;
\tret;
}

.visible .entry k2(.param .u64 out)
{
\t.reg .f32 %f;
\t.reg .b64 o;
\tld.global.f32 %f, [g];
\tld.param.u64 o, [out];
\tst.global.f32 [o], %f;
\tret;
}
"""


def test_declared_name_shadows_a_module_symbol_only_in_its_function():
    m = parse(SHADOW)
    assert uses_defs(m.kernel("k").instructions[0]) == (["g"], [])
    assert uses_defs(m.kernel("k").instructions[2]) == ([], ["o", "g"])
    assert m.kernel("k2").instructions[0].operands[1] == ir.Address(ir.Symbol("g"), 0)
    assert_round_trip(SHADOW)


NESTED = HEADER + """
.visible .entry k(.param .u64 out)
{
\t.reg .b32 %r<3>;
\t.reg .b64 o;
\tmov.b32 %r1, 7;
\t{
\t.reg .f32 %r<3>;
\t.reg .b32 t;
\tmov.f32 %r1, 0f3F800000;
\tcvt.rzi.s32.f32 t, %r1;
\tadd.s32 t, t, 1;
\tmov.b32 %r2, t;
\t}
\tld.param.u64 o, [out];
\tst.global.u32 [o], %r1;
\tret;
}
"""


def test_scoped_register_declarations_count_only_in_their_scope():
    k = parse(NESTED).kernel("k")
    outer, inner, cvt, add, mov, _, st, _ = k.instructions
    assert outer.defs == (ir.Register("%r1", types.b32),)
    assert inner.defs == (ir.Register("%r1", types.f32),)  # the block's %r<3> shadows
    assert uses_defs(cvt) == (["t"], ["%r1"]) and cvt.uses[0].type is types.f32
    assert add.defs == (ir.Register("t", types.b32),)
    assert mov.defs == (ir.Register("%r2", types.f32),)
    assert st.uses[1] == ir.Register("%r1", types.b32)  # the outer one again after '}'
    assert_round_trip(NESTED)


def test_scoped_plain_register_is_a_symbol_after_its_scope():
    k = parse(HEADER + ".visible .entry k()\n{\n{\n.reg .b32 x;\nmov.b32 x, 1;\n}\n"
              "mov.b32 x, 1;\nret;\n}\n").kernel("k")
    assert k.instructions[0].defs == (ir.Register("x", types.b32),)
    assert k.instructions[1].defs == () and k.instructions[1].operands[0] == ir.Symbol("x")


def test_vector_registers_are_refused_by_name():
    with pytest.raises(ParseError) as info:
        parse(HEADER + ".visible .entry k()\n{\n\t.reg .v4 .f32 %v;\n\tret;\n}\n", "v.ptx")
    err = info.value
    assert (err.file, err.line, err.column) == ("v.ptx", 6, 7)
    assert "vector registers (.reg .v4" in err.message and "not supported" in err.message
    assert err.text == "\t.reg .v4 .f32 %v;"


# -- 2. module-level directives, vector and opaque variables ---------------------------------
KERNEL = """
.visible .entry k(.param .u64 out)
{
\t.reg .b64 %rd<3>;
\t.reg .f32 %f<3>;
\tld.param.u64 %rd1, [out];
\tld.global.v2.f32 {%f1, %f2}, [vv];
\tst.global.f32 [%rd1], %f1;
\tret;
}
"""


@pytest.mark.parametrize("decl", [
    '.pragma "nounroll";',
    ".global .texref tex;",
    ".global .surfref s;",
    ".global .attribute(.managed) .s32 m;",
    ".visible .global .attribute(.managed) .align 4 .s32 m;",  # linkage kept
    ".extern .global .texref ext;",
])
def test_module_level_directives_are_kept_verbatim(decl):
    ptx = HEADER + decl + "\n.global .v2 .f32 vv;\n" + KERNEL
    m = assert_round_trip(ptx)
    assert m.directives == (ir.Directive(decl),)
    assert m.layout == (("directive", 0), ("global", 0), ("kernel", 0))
    assert decl + "\n.global .v2 .f32 vv;\n\n.visible .entry k(" in emit(m)


def test_samplerref_with_initialiser():
    decl = ".global .samplerref smp = { addr_mode_0 = clamp_to_edge, filter_mode = nearest };"
    ptx = HEADER.replace("sm_80", "sm_80, texmode_independent") + decl + "\n.global .v2 .f32 vv;\n" + KERNEL
    m = assert_round_trip(ptx)
    assert m.directives == (ir.Directive(decl),)


def test_vector_variables():
    ptx = HEADER + ".global .align 8 .v2 .f32 vv = {1.0, 2.0};\n.const .v4 .b32 cv[2];\n" + KERNEL
    m = assert_round_trip(ptx)
    assert m.globals == (
        ir.VarDecl("global", types.f32, "vv", align=8, init="{1.0, 2.0}", vector=2),
        ir.VarDecl("const", types.b32, "cv", dims=(2,), vector=4),
    )
    assert ".global .align 8 .v2 .f32 vv = {1.0, 2.0};\n.const .v4 .b32 cv[2];\n" in emit(m)
    body = parse(HEADER + ".visible .entry k()\n{\n\t.local .align 16 .v4 .f32 lv[4];\n\tret;\n}\n")
    assert body.kernel("k").body[0] == ir.VarDecl("local", types.f32, "lv", align=16, dims=(4,),
                                                 vector=4)


def test_module_order_is_kept_a_table_of_function_pointers_follows_its_function():
    ptx = (HEADER + ".visible .func f()\n{\n\tret;\n}\n\n.global .u64 tbl[1] = {f};\n"
           + KERNEL.replace("[vv]", "[tbl]").replace("v2.f32 {%f1, %f2}", "f32 %f1"))
    m = assert_round_trip(ptx)
    assert m.layout == (("kernel", 0), ("global", 0), ("kernel", 1))
    text = emit(m)
    assert text.index(".func f()") < text.index(".global .u64 tbl") < text.index(".entry k(")
    # in the default order (globals first) ptxas refuses the table: the order is what matters
    with pytest.raises(CompileError):
        ptxforge.compile_ptx(emit(ir.Module(m.version, m.target, globals=m.globals,
                                            kernels=m.kernels)), "sm_80")


def test_a_layout_that_does_not_match_the_module_falls_back_to_the_default_order():
    g = ir.VarDecl("global", types.f32, "x")
    k = ir.Kernel("k", body=(ir.Instruction("ret"),))
    good = ir.Module("8.0", "sm_80", globals=(g,), kernels=(k,), layout=(("kernel", 0), ("global", 0)))
    assert good.items() == (k, g)
    for layout in [(("kernel", 0),), (("kernel", 0), ("kernel", 0)), (("kernel", 0), ("global", 1))]:
        assert ir.Module("8.0", "sm_80", globals=(g,), kernels=(k,), layout=layout).items() == (g, k)


# -- 3. label errors with a PTX position -----------------------------------------------------
def with_body(body: str) -> str:
    return (HEADER + ".visible .entry k(.param .u32 a)\n{\n\t.reg .b32 %r<3>;\n\t.reg .pred %p;\n"
            "\tld.param.u32 %r1, [a];\n" + body + "\n}\n")


LABEL_ERRORS = [
    # (body, line, column, message fragment)
    ("\tbra L1;\n\tret;", 9, 6, "branch target L1 is not a label of function k"),
    ("\t@%p bra.uni L2;\n\tret;", 9, 14, "branch target L2 is not a label"),
    ("L1:\n\tadd.s32 %r1, %r1, 1;\nL1:\n\tret;", 11, 1, "label L1 is defined twice in function k (first at line 9)"),
    ("ts: .branchtargets L0, L9;\n\tbrx.idx %r1, ts;\nL0:\n\tret;", 9, 24, "branch target L9 is not a label"),
    ("ts: .branchtargets L0, L9;\nL0:\n\tret;", 9, 24, "branch target L9"),  # a list used by no brx
    ("\tbrx.idx %r1, ts;\nL0:\n\tret;", 9, 15, "branch target ts is not a label"),
    ("\tbra L1;\n{\nL1:\n\tret;\n}\n\tret;", 9, 6, "inside a { } block that does not enclose this use"),
]


@pytest.mark.parametrize("body,line,column,needle", LABEL_ERRORS)
def test_label_errors_have_a_position(body, line, column, needle):
    ptx = with_body(body)
    lines = ptx.splitlines()
    with pytest.raises(ParseError) as info:
        parse(ptx, "lab.ptx")
    err = info.value
    assert (err.file, err.line, err.column) == ("lab.ptx", line, column), str(err)
    assert needle in err.message
    assert err.text == lines[line - 1]
    with pytest.raises(CompileError):  # ptxas refuses it too
        ptxforge.compile_ptx(ptx, "sm_80")


def test_label_defined_in_two_sibling_blocks_is_refused_with_a_reason():
    ptx = with_body("{\nL1:\n\tadd.s32 %r1, %r1, 1;\n}\n{\nL1:\n\tret;\n}\n\tret;")
    registers(ptx)  # legal PTX ...
    with pytest.raises(ParseError) as info:
        parse(ptx)
    assert info.value.line == 14 and "in another { } block" in info.value.message
    assert "unique within a function" in info.value.message


def test_valid_branch_targets_parse_and_round_trip():
    ptx = with_body("\tsetp.eq.u32 %p, %r1, 0;\n\t@%p bra $L__end;\n"
                    "ts: .branchtargets L0, L1;\n\tbrx.idx %r1, ts;\nL0:\n\tadd.s32 %r1, %r1, 1;\n"
                    "{\n\tbra.uni L1;\n}\nL1:\n\tbra $L__end;\n$L__end:\n\tret;")
    m = assert_round_trip(ptx)
    assert [s.name for s in m.kernel("k").body if isinstance(s, ir.Label)] == ["ts", "L0", "L1", "$L__end"]
