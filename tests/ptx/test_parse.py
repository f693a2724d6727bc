"""Parser: constructs, directives, scopes, calls, comments, and every corpus kernel."""

from __future__ import annotations

import pytest

import ptxforge
from ptxforge.errors import CompileError, ParseError
from ptxforge.ptx import ir, types
from ptxforge.ptx.emit import emit
from ptxforge.ptx.parse import parse, parse_file

from corpus_util import VARIANTS, corpus_ptx, corpus_sources

HEADER = ".version 8.5\n.target sm_90a\n.address_size 64\n"


def kernel_of(body: str, params: str = "", name: str = "k", strict: bool = True) -> ir.Kernel:
    return parse(HEADER + f".visible .entry {name}({params})\n{{\n{body}\n}}\n",
                 strict=strict).kernel(name)


def test_header_and_raw_target():
    m = parse(".version 7.8\n.target sm_80, debug\n.address_size 64\n")
    assert (m.version, m.target, m.address_size) == ("7.8", "sm_80, debug", 64)
    assert m.kernels == () and m.globals == ()


def test_register_declarations_parametrised_and_plain():
    k = kernel_of(".reg .b32 %r<5>;\n.reg .f64 %acc, %tmp;\n.reg .pred %p<2>;\n"
                  "add.s32 %r4, %r1, %r2;\nadd.f64 %acc, %tmp, %acc;\nret;")
    assert k.reg_decls == (ir.RegDecl("b32", "%r", 5), ir.RegDecl("f64", "%acc"),
                           ir.RegDecl("f64", "%tmp"), ir.RegDecl("pred", "%p", 2))
    add = k.instructions[0]
    assert add.opcode == "add.s32" and add.ndefs == 1
    assert add.defs == (ir.Register("%r4", types.b32),)
    assert [r.name for r in add.uses] == ["%r1", "%r2"]
    f = k.instructions[1]
    assert [r.name for r in f.defs] == ["%acc"] and [r.name for r in f.uses] == ["%tmp", "%acc"]
    assert f.defs[0].type is types.f64


def test_parameters_alignment_arrays_pointers_and_returns():
    m = parse(HEADER + """
.visible .entry k(
    .param .u64 .ptr .global .align 16 k_p0,
    .param .align 8 .b8 k_p1[24],
    .param .u32 k_p2
)
.maxntid 128, 1, 1
.minnctapersm 2
{
    ret;
}
.visible .func (.param .align 16 .b8 rv[16]) f(.param .b32 a) .noreturn
{
    ret;
}
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 p0, .param .b64 p1);
""")
    k = m.kernel("k")
    assert k.params[0] == ir.Param("k_p0", types.u64, pointer=True, state_space="global", ptr_align=16)
    assert k.params[1] == ir.Param("k_p1", types.b8, align=8, dims=(24,))
    assert k.params[2] == ir.Param("k_p2", types.u32)
    assert k.directives == ((".maxntid", (128, 1, 1)), (".minnctapersm", (2,)))
    f = m.kernel("f")
    assert not f.is_entry and f.returns == (ir.Param("rv", types.b8, align=16, dims=(16,)),)
    assert f.attributes == (".noreturn",)
    proto = [x for x in m.kernels if x.name == "vprintf"][0]
    assert proto.body is None and proto.linkage == ".extern" and len(proto.params) == 2


def test_module_variables_keep_initialisers_verbatim():
    m = parse(HEADER + """
.global .align 1 .b8 $str[4] = {37, 100, 10, 0};
.const .align 8 .f64 coeffs[3] = {0d3FF0000000000000, 0d0000000000000000,0d4000000000000000};
.global .align 8 .u64 ptr = generic($str);
.extern .shared .align 16 .b8 smem[];
.visible .global .u32 a, b;
""")
    g = {v.name: v for v in m.globals}
    assert g["$str"] == ir.VarDecl("global", types.b8, "$str", 1, (4,), "{37, 100, 10, 0}", "")
    assert g["coeffs"].init == "{0d3FF0000000000000, 0d0000000000000000,0d4000000000000000}"
    assert g["ptr"].init == "generic($str)"
    assert g["smem"].dims == (None,) and g["smem"].linkage == ".extern" and g["smem"].align == 16
    assert g["a"].linkage == ".visible" and g["b"].type is types.u32


def test_labels_guards_branches_and_special_registers():
    k = kernel_of(""".reg .pred %p<3>;
.reg .b32 %r<4>;
.reg .b64 %rd<2>;
    mov.u32 %r1, %tid.x;
    mov.u64 %rd1, %clock64;
    setp.lt.u32 %p1|%p2, %r1, %envreg3;
$L__BB0_1:
    @%p1 bra $L__BB0_1;
    @!%p2 bra.uni $L__BB0_2;
$L__BB0_2:
    ret;""")
    labels = [s.name for s in k.body if isinstance(s, ir.Label)]
    assert labels == ["$L__BB0_1", "$L__BB0_2"]
    mov, mov64, setp, bra1, bra2, ret = k.instructions
    assert mov.operands[1] == ir.SpecialReg("%tid.x", types.u32)
    assert mov64.operands[1] == ir.SpecialReg("%clock64", types.u64)
    assert setp.operands[0] == ir.Vector((ir.Register("%p1", types.pred), ir.Register("%p2", types.pred)), "pipe")
    assert [r.name for r in setp.defs] == ["%p1", "%p2"]
    assert bra1.guard == ir.Guard(ir.Register("%p1", types.pred), False)
    assert bra1.operands == (ir.LabelRef("$L__BB0_1"),) and bra1.ndefs == 0
    assert bra2.guard.negated and bra2.opcode == "bra.uni"


def test_operands_addresses_vectors_immediates():
    k = kernel_of(""".reg .b64 %rd<3>;
.reg .f32 %f<5>;
.reg .b32 %r<3>;
    ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+16];
    st.global.f32 [%rd2+-8], %f1;
    ld.param.u64 %rd1, [k_p];
    shfl.sync.down.b32 %r1, %r2, 16, 31, -1;
    mov.b32 %r2, 0x7fffffff;
    fma.rn.f32 %f1, %f2, 0f3F800000, %f3;
    mov.b64 {%r1, %r2}, %rd1;
    ret;""", params=".param .u64 k_p")
    ld, st, ldp, shfl, movx, fma, unpack, _ = k.instructions
    assert ld.operands[0].style == "brace" and len(ld.defs) == 4
    assert ld.operands[1] == ir.Address(ir.Register("%rd1", types.b64), 16)
    assert st.operands[0] == ir.Address(ir.Register("%rd2", types.b64), -8) and st.ndefs == 0
    assert [r.name for r in st.uses] == ["%rd2", "%f1"]
    assert ldp.operands[1] == ir.Address(ir.Symbol("k_p"), 0)
    assert shfl.operands[4] == ir.Immediate(-1, None, "-1")
    assert movx.operands[1].value == 0x7FFFFFFF and movx.operands[1].text == "0x7fffffff"
    imm = fma.operands[2]
    assert imm.value == 1.0 and imm.type is types.f32 and imm.text == "0f3F800000"
    assert [r.name for r in unpack.defs] == ["%r1", "%r2"]


def test_call_sequence_scope_and_param_block():
    m = parse(HEADER + """
.func (.param .b32 rv) f(.param .b32 a)
{
    .reg .b32 %r<2>;
    ld.param.b32 %r1, [a];
    st.param.b32 [rv+0], %r1;
    ret;
}
.visible .entry k()
{
    .reg .b32 %r<3>;
    { // callseq 0, 0
    .reg .b32 temp_param_reg;
    .param .b32 param0;
    st.param.b32 [param0+0], %r1;
    .param .b32 retval0;
    call.uni (retval0),
    f,
    (
    param0
    );
    ld.param.b32 %r2, [retval0+0];
    } // callseq 0
    ret;
}
""")
    k = m.kernel("k")
    kinds = [type(s).__name__ for s in k.body]
    assert kinds == ["Scope", "VarDecl", "VarDecl", "Instruction", "VarDecl", "Instruction",
                     "Instruction", "Scope", "Instruction"]
    assert k.body[1] == ir.VarDecl("reg", types.b32, "temp_param_reg")
    assert k.body[2] == ir.VarDecl("param", types.b32, "param0")
    call = k.body[5]
    assert call.opcode == "call.uni" and call.ndefs == 0 and call.defs == ()
    assert call.operands == (ir.Vector((ir.Symbol("retval0"),), "paren"), ir.Symbol("f"),
                             ir.Vector((ir.Symbol("param0"),), "paren"))


def test_comments_pragmas_and_unknown_opcodes():
    body = """/* block
comment */ .reg .b32 %r<4>; // trailing
    .pragma "nounroll";
    frobnicate.sync.b32 %r1, %r2, /* inline */ %r3;
    ret;"""
    with pytest.raises(ParseError, match="unknown opcode 'frobnicate'"):
        kernel_of(body)  # strict by default; lenient keeps it as a generic instruction
    k = kernel_of(body, strict=False)
    assert k.body[0] == ir.Directive('.pragma "nounroll";')
    inst = k.instructions[0]
    assert inst.opcode == "frobnicate.sync.b32" and inst.ndefs == 1
    assert [r.name for r in inst.defs] == ["%r1"] and [r.name for r in inst.uses] == ["%r2", "%r3"]


def test_loc_file_and_inlined_function_names():
    m = parse(HEADER + """
.visible .entry k()
{
    .reg .f32 %f<3>;
    .loc 1 12 3
    mov.f32 %f1, 0f00000000;
    .loc 2 40 7, function_name $L__info_string0+2, inlined_at 1 13 5
    add.f32 %f2, %f1, %f1;
    ret;
}
.file 1 "/src/kern.cu"
.file 2 "/src/helpers.cuh", 1700000000, 1234
.section .debug_str
{
$L__info_string0:
.b8 95,95,104,101,108,112,101,114,0
}
""")
    assert m.files == ((1, "/src/kern.cu"), (2, "/src/helpers.cuh"))
    mov, add, ret = m.kernel("k").instructions
    assert mov.loc == ir.SourceLoc("/src/kern.cu", 12, 3)
    assert add.loc.file == "/src/helpers.cuh" and add.loc.line == 40 and add.loc.column == 7
    assert add.loc.function == "helper"
    assert (add.loc.inlined_at.file, add.loc.inlined_at.line) == ("/src/kern.cu", 13)
    assert ret.loc == add.loc  # .loc applies until the next one


def test_parse_file_names_the_file(tmp_path):
    p = tmp_path / "x.ptx"
    p.write_text(HEADER)
    assert parse_file(p).target == "sm_90a"


@pytest.mark.parametrize("arch,lineinfo", VARIANTS)
@pytest.mark.parametrize("name", corpus_sources())
def test_corpus_parses(name, arch, lineinfo):
    ptx = corpus_ptx(name, arch, lineinfo)
    m = parse(ptx, f"{name}.ptx")
    entries = [k.name for k in m.entries]
    assert entries and len(entries) == ptx.count(".entry ")
    for k in m.kernels:
        if k.body is None:
            continue
        n_text = sum(1 for line in k.body if isinstance(line, ir.Instruction))
        assert n_text == len(k.instructions) > 0
        if lineinfo and k.is_entry:
            located = [i for i in k.instructions if i.loc is not None]
            assert len(located) >= 0.9 * len(k.instructions)
            assert all(i.loc.file.endswith(f"{name}.cu") for i in located)
        elif not lineinfo:
            assert all(i.loc is None for i in k.instructions)


def test_corpus_instruction_count_matches_text():
    # Count instruction statements in the text independently: lines ending in ';' that are not
    # declarations or directives (call sequences span lines: count 'call' once).
    ptx = corpus_ptx("reduce", "sm_80", False)
    expected = 0
    for line in ptx.splitlines():
        s = line.split("//")[0].strip()
        if s.endswith(";") and not s.startswith((".", ")", "(")) and s not in (");",):
            expected += 1
        elif s.startswith("call"):
            expected += 1
    got = sum(len(k.instructions) for k in parse(ptx).kernels if k.body)
    assert got == expected


def test_inlined_helper_is_named_in_corpus():
    m = parse(corpus_ptx("reduce", "sm_90", True))
    k = m.kernel("warp_reduce_max")
    inlined = [i for i in k.instructions if i.loc and i.loc.function]
    assert inlined, "the shuffle loop of warp_max is inlined and .loc names it"
    assert any("warp_max" in i.loc.function for i in inlined)
    assert all(i.loc.inlined_at is not None for i in inlined)


def test_large_module_parses_in_linear_time():
    """A 1 MB module parses; per byte it costs less than 1.6x what half of its kernels cost (a
    ratio in one run, in this process's CPU time, the least of three interleaved parses of each
    with the cyclic collector paused, as the analysis runs it: the machine's load cancels, and
    the collector's passes over a heap that grows with the module do not count).  A step that
    costs the whole file per kernel makes it about 2; under load a linear parse measured
    0.9-1.35 here."""
    import time

    from ptxforge.analysis.gc_pause import gc_paused

    src = corpus_ptx("gemm", "sm_90", True)
    head = src.split(".visible .entry", 1)[0]
    body = ".visible .entry" + src.split(".visible .entry", 1)[1].split(".file")[0]
    tail = ".file" + src.split(".file", 1)[1]
    copies = 1_000_000 // len(body) + 1
    bodies = [body.replace("sgemm_", f"sgemm{j}_") for j in range(copies)]
    small = head + "".join(bodies[:copies // 2]) + tail
    big = head + "".join(bodies) + tail
    assert len(big) > 1_000_000

    def cost(text: str) -> tuple:
        with gc_paused():
            t = time.process_time()
            module = parse(text)
            return time.process_time() - t, module

    parse(small)                                # warm the parser's lazy tables first
    t_small = t_big = float("inf")
    for _ in range(3):                          # interleaved, so a change of load hits both
        took, m_small = cost(small)
        t_small = min(t_small, took)
        took, m = cost(big)
        t_big = min(t_big, took)
    assert len(m.entries) >= 2 * copies
    assert len(m.entries) == len(m_small.entries) * copies // (copies // 2)
    ratio = (t_big / max(t_small, 1e-6)) / (len(big) / len(small))
    assert ratio < 1.6, f"per byte the 1 MB module costs {ratio:.2f}x the small one"


# --- registers named without '%', scoped declarations, module-level directives, vector and
# opaque variables, branch targets.  Every accepted construct round-trips: ``emit(parse(text))``
# compiles (real ptxas through nvJitLink) to the same register count as ``text``, and emission
# is a fixed point.

HEADER_80 = ".version 8.0\n.target sm_80\n.address_size 64\n"


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


# -- registers declared without '%' -------------------------------------------------------
PLAIN = HEADER_80 + """
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


MMA = HEADER_80 + """
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


SHADOW = HEADER_80 + """
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


NESTED = HEADER_80 + """
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
    k = parse(HEADER_80 + ".visible .entry k()\n{\n{\n.reg .b32 x;\nmov.b32 x, 1;\n}\n"
              "mov.b32 x, 1;\nret;\n}\n").kernel("k")
    assert k.instructions[0].defs == (ir.Register("x", types.b32),)
    assert k.instructions[1].defs == () and k.instructions[1].operands[0] == ir.Symbol("x")



# -- module-level directives, vector and opaque variables ---------------------------------
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
    ptx = HEADER_80 + decl + "\n.global .v2 .f32 vv;\n" + KERNEL
    m = assert_round_trip(ptx)
    assert m.directives == (ir.Directive(decl),)
    assert m.layout == (("directive", 0), ("global", 0), ("kernel", 0))
    assert decl + "\n.global .v2 .f32 vv;\n\n.visible .entry k(" in emit(m)


def test_samplerref_with_initialiser():
    decl = ".global .samplerref smp = { addr_mode_0 = clamp_to_edge, filter_mode = nearest };"
    ptx = HEADER_80.replace("sm_80", "sm_80, texmode_independent") + decl + "\n.global .v2 .f32 vv;\n" + KERNEL
    m = assert_round_trip(ptx)
    assert m.directives == (ir.Directive(decl),)


def test_vector_variables():
    ptx = HEADER_80 + ".global .align 8 .v2 .f32 vv = {1.0, 2.0};\n.const .v4 .b32 cv[2];\n" + KERNEL
    m = assert_round_trip(ptx)
    assert m.globals == (
        ir.VarDecl("global", types.f32, "vv", align=8, init="{1.0, 2.0}", vector=2),
        ir.VarDecl("const", types.b32, "cv", dims=(2,), vector=4),
    )
    assert ".global .align 8 .v2 .f32 vv = {1.0, 2.0};\n.const .v4 .b32 cv[2];\n" in emit(m)
    body = parse(HEADER_80 + ".visible .entry k()\n{\n\t.local .align 16 .v4 .f32 lv[4];\n\tret;\n}\n")
    assert body.kernel("k").body[0] == ir.VarDecl("local", types.f32, "lv", align=16, dims=(4,),
                                                 vector=4)


def test_module_order_is_kept_a_table_of_function_pointers_follows_its_function():
    ptx = (HEADER_80 + ".visible .func f()\n{\n\tret;\n}\n\n.global .u64 tbl[1] = {f};\n"
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



def with_body(body: str) -> str:
    return (HEADER_80 + ".visible .entry k(.param .u32 a)\n{\n\t.reg .b32 %r<3>;\n\t.reg .pred %p;\n"
            "\tld.param.u32 %r1, [a];\n" + body + "\n}\n")



def test_valid_branch_targets_parse_and_round_trip():
    ptx = with_body("\tsetp.eq.u32 %p, %r1, 0;\n\t@%p bra $L__end;\n"
                    "ts: .branchtargets L0, L1;\n\tbrx.idx %r1, ts;\nL0:\n\tadd.s32 %r1, %r1, 1;\n"
                    "{\n\tbra.uni L1;\n}\nL1:\n\tbra $L__end;\n$L__end:\n\tret;")
    m = assert_round_trip(ptx)
    assert [s.name for s in m.kernel("k").body if isinstance(s, ir.Label)] == ["ts", "L0", "L1", "$L__end"]
