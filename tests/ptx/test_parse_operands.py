"""Operands liveness must see: read-write destinations (wgmma's accumulator), texture and
surface references, sparse-texture residency predicates, ``bar.red`` results, and a UTF-8
byte order mark before the PTX.

Real PTX comes from CUDA C++ compiled with NVRTC (``tests/data/cu/textures.cu``; the wgmma
kernel, inline assembly with 64 accumulators, is written below and compiled for compute_90a);
hand-written PTX covers the forms NVRTC does not produce.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from ptxforge.analysis.liveness import analyze_liveness
from ptxforge.errors import ParseError
from ptxforge.ptx import ir
from ptxforge.ptx.emit import emit
from ptxforge.ptx.parse import parse

from corpus_util import compile_cu

CU = Path(__file__).parents[1] / "data" / "cu"


def names(regs) -> list:
    return [r.name for r in regs]


def live_before(lv, k: ir.Kernel, index: int) -> set:
    """Registers live just before instruction ``index`` (after the one before it)."""
    return {lv.register(r).name for r in lv.live_at(index - 1)}


@functools.lru_cache(maxsize=None)
def textures_ptx(arch: str = "sm_80") -> str:
    return compile_cu((CU / "textures.cu").read_text(), "textures", arch, False)


def ptxas_registers(text: str, arch: str) -> dict:
    from ptxforge.toolchain.compile import compile_ptx

    return {k.name: k.registers for k in compile_ptx(text, arch, backend="nvjitlink")}


# -- wgmma.mma_async: D is read and written ---------------------------------------------------
def wgmma_source() -> str:
    acc = ", ".join(f"%{i}" for i in range(64))
    tied = ", ".join(f'"+f"(acc[{i}])' for i in range(64))
    return f"""
extern "C" __global__ void __launch_bounds__(128) wg(float* out, unsigned long long da,
                                                     unsigned long long db, int n)
{{
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
    for (int it = 0; it < n; ++it) {{
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
                     "{{{acc}}}, %64, %65, 1, 1, 1, 0, 0;"
                     : {tied} : "l"(da + 32 * it), "l"(db + 32 * it));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }}
#pragma unroll
    for (int i = 0; i < 64; ++i) out[threadIdx.x * 64 + i] = acc[i];
}}
"""


@functools.lru_cache(maxsize=None)
def wgmma_ptx() -> str:
    return compile_cu(wgmma_source(), "wgmma_acc", "sm_90a", False)


def test_wgmma_accumulators_are_live_into_every_wgmma():
    text = wgmma_ptx()
    k = parse(text).kernel("wg")
    lv = analyze_liveness(k)
    series = lv.series()
    mmas = [j for j, i in enumerate(k.instructions) if i.opcode.startswith("wgmma.mma_async")]
    assert len(mmas) >= 2  # the loop is unrolled: several wgmma in a row
    acc = set(names(k.instructions[mmas[0]].defs))
    assert len(acc) == 64
    for j in mmas:
        inst = k.instructions[j]
        assert set(names(inst.uses)) >= acc  # read ...
        assert set(names(inst.defs)) == acc  # ... and written
        assert acc <= live_before(lv, k, j)
    # the zero-initialising movs are not dead: all 64 values are live before the first wgmma
    # (with D taken as write-only, 11 units were live there)
    assert series[mmas[0] - 1] >= 64 + 6
    assert max(series) == series[mmas[0] - 1]
    # ptxas needs at least the 64 accumulators too (and accepts the PTX as parsed and emitted)
    regs = ptxas_registers(text, "sm_90a")["wg"]
    assert regs >= 64
    assert ptxas_registers(emit(parse(text)), "sm_90a")["wg"] == regs


WG_HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"


def wgmma_kernel(line: str) -> ir.Instruction:
    text = (WG_HEADER + ".visible .entry k()\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<8>;\n"
            "\t.reg .f32 %f<8>;\n\t.reg .b64 %rd<4>;\n\t" + line + "\n\tret;\n}\n")
    return parse(text).kernel("k").instructions[0]


@pytest.mark.parametrize("line,reads", [
    # dense f16 with descriptors: scale-d is the 4th operand
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, "
     "1, 1, 1, 0, 0;", True),
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, "
     "%p1, 1, 1, 0, 0;", True),   # a predicate scale-d may be true: read
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, "
     "0, 1, 1, 0, 0;", False),    # D = A*B: the old D is not read
    # A from registers
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, "
     "{%r1, %r2, %r3, %r4}, %rd2, 1, 1, 1, 0;", True),
    # integer: d, a-desc, b-desc, scale-d
    ("wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.s8 {%r5, %r6, %r7, %r1}, %rd1, %rd2, 0;", False),
    # sparse: scale-d comes after sp-meta and sp-sel
    ("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, "
     "%r1, 0, 1, 1, 1, 0, 0;", True),
    ("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, "
     "%r1, 0, 0, 1, 1, 0, 0;", False),
])
def test_wgmma_forms(line, reads):
    inst = wgmma_kernel(line)
    d = names(inst.defs)
    assert len(d) == 4 and inst.ndefs == 1
    assert ir.reads_destination(inst) is reads
    assert (set(d) <= set(names(inst.uses))) is reads
    assert "%rd2" in names(inst.uses)


def test_wgmma_control_ops_and_mma_sync_are_unchanged():
    fence = wgmma_kernel("wgmma.fence.sync.aligned;")
    assert fence.defs == () and fence.uses == ()
    mma = wgmma_kernel("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, "
                       "{%r1, %r2}, {%r3}, {%f5, %f6, %f7, %f1};")
    assert names(mma.defs) == ["%f1", "%f2", "%f3", "%f4"]
    assert names(mma.uses) == ["%r1", "%r2", "%r3", "%f5", "%f6", "%f7", "%f1"]  # C, not D


# -- textures and surfaces ----------------------------------------------------------------------
def by_family(k: ir.Kernel, family: str) -> list:
    return [(j, i) for j, i in enumerate(k.instructions) if i.family == family]


def test_texture_and_surface_operands_are_defs_and_uses():
    k = parse(textures_ptx()).kernel("k_tex")
    handle_t = k.instructions[1].defs[0].name  # ld.param of the texture object
    handle_s = k.instructions[2].defs[0].name  # ... and of the surface object
    tex = by_family(k, "tex")
    assert len(tex) == 3
    for _, inst in tex + by_family(k, "tld4"):
        assert inst.uses[0].name == handle_t  # [%rd2, {…}]
        assert len(inst.defs) in (4, 5)
        coords = inst.operands[1].elements[1]
        assert isinstance(coords, ir.Vector) and coords.style == "brace"
        assert names(inst.uses)[1:] == names(ir.registers_in(coords))
    sparse = [i for _, i in tex if len(i.defs) == 5]
    assert len(sparse) == 1 and sparse[0].defs[4].type.is_pred  # {…}|%p: residency
    ((_, suld),) = by_family(k, "suld")
    assert len(suld.defs) == 1 and names(suld.uses)[0] == handle_s
    ((_, sust),) = by_family(k, "sust")
    assert sust.defs == () and names(sust.uses)[0] == handle_s and len(sust.uses) == 4


def test_texture_handle_is_live_until_its_last_fetch():
    k = parse(textures_ptx()).kernel("k_tex")
    lv = analyze_liveness(k)
    handle = k.instructions[1].defs[0].name
    fetches = [j for j, i in by_family(k, "tex") + by_family(k, "tld4")]
    for j in fetches:
        assert handle in live_before(lv, k, j)
    assert handle not in live_before(lv, k, max(fetches) + 1)
    # the residency predicate lives from the sparse fetch to the selp that reads it
    (sparse,) = [j for j, i in by_family(k, "tex") if len(i.defs) == 5]
    pred = k.instructions[sparse].defs[4].name
    use = next(j for j, i in enumerate(k.instructions) if pred in names(i.uses))
    assert all(pred in live_before(lv, k, j) for j in range(sparse + 1, use + 1))


def test_texture_instructions_round_trip_verbatim():
    text = textures_ptx()
    out = emit(parse(text))
    assert emit(parse(out)) == out
    for line in text.splitlines():
        s = line.strip()
        if s.split(".", 1)[0] in ("tex", "tld4", "suld", "sust"):
            assert " ".join(s.split()) in " ".join(out.split()), s
    assert ptxas_registers(out, "sm_80") == ptxas_registers(text, "sm_80")


HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"


def test_texref_with_sampler_and_queries():
    text = (HEADER.replace("sm_80", "sm_80, texmode_independent")
            + ".global .texref tr;\n.global .samplerref sr;\n.global .surfref sf;\n"
            ".visible .entry k(.param .u64 out)\n{\n\t.reg .f32 %f<8>;\n\t.reg .b32 %r<4>;\n"
            "\t.reg .b64 %rd<3>;\n\tmov.f32 %f1, 0f3F000000;\n"
            "\ttex.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [tr, sr, {%f1, %f1}];\n"
            "\ttxq.width.b32 %r1, [tr];\n\tsuq.width.b32 %r2, [sf];\n"
            "\tld.param.u64 %rd1, [out];\n\tst.global.f32 [%rd1], %f5;\n"
            "\tst.global.u32 [%rd1+4], %r1;\n\tst.global.u32 [%rd1+8], %r2;\n\tret;\n}\n")
    m = parse(text)
    tex, txq, suq = m.kernel("k").instructions[1:4]
    assert tex.operands[1] == ir.Vector((ir.Symbol("tr"), ir.Symbol("sr"),
                                         ir.Vector((tex.uses[0], tex.uses[1]), "brace")),
                                        "bracket")
    assert names(tex.uses) == ["%f1", "%f1"] and len(tex.defs) == 4
    assert txq.operands[1] == ir.Address(ir.Symbol("tr"), 0) and names(txq.defs) == ["%r1"]
    assert names(suq.defs) == ["%r2"]
    out = emit(m)
    assert "[tr, sr, {%f1, %f1}]" in out and emit(parse(out)) == out
    assert ptxas_registers(out, "sm_80") == ptxas_registers(text, "sm_80")


def test_bracket_operand_in_first_position_is_read_not_written():
    k = parse(HEADER + ".visible .entry k(.param .u64 s)\n{\n\t.reg .b32 %r<4>;\n"
              "\t.reg .b64 %rd<2>;\n\tld.param.u64 %rd1, [s];\n\tmov.b32 %r1, 0;\n"
              "\tsust.b.1d.b32.trap [%rd1, {%r1}], {%r2};\n\tret;\n}\n").kernel("k")
    sust = k.instructions[2]
    ir_form = ir.Instruction(sust.opcode, sust.operands, ndefs=1)  # even if counted as a def
    assert ir_form.defs == () and names(ir_form.uses) == ["%rd1", "%r1", "%r2"]


@pytest.mark.parametrize("operand,at,needle", [
    ("[%rd1, {%f1} %f2]", "%f2]", "expected ',' or ']' in a texture or surface operand"),
    ("[%rd1, {%f1}", ";", "expected ',' or ']'"),
    ("[%rd1, %q9]", "%q9", "undeclared register %q9"),
])
def test_malformed_texture_operands_are_parse_errors(operand, at, needle):
    line = f"\ttex.1d.v4.f32.f32 {{%f2, %f3, %f4, %f5}}, {operand};"
    text = (HEADER + ".visible .entry k()\n{\n\t.reg .f32 %f<8>;\n\t.reg .b64 %rd<2>;\n"
            f"{line}\n\tret;\n}}\n")
    with pytest.raises(ParseError) as info:
        parse(text, "t.ptx")
    err = info.value
    assert (err.file, err.line, err.column) == ("t.ptx", 8, line.rindex(at) + 1), str(err)
    assert needle in err.message and err.text == line


# -- bar.red writes its result; stackrestore writes nothing -------------------------------------
def test_syncthreads_count_result_is_defined_by_bar_red():
    k = parse(textures_ptx()).kernel("k_count")
    ((j, red),) = by_family(k, "bar")
    assert red.opcode == "bar.red.popc.u32"
    (count,) = red.defs
    assert count.type.name in ("b32", "u32", "s32") and names(red.uses) == ["%p1"]
    lv = analyze_liveness(k)
    store = next(i for i, inst in enumerate(k.instructions) if inst.family == "st")
    assert count.name in live_before(lv, k, store)
    assert count.name not in live_before(lv, k, j)  # not live before it is made


def test_barrier_forms_without_red_define_nothing():
    k = parse(HEADER + ".visible .entry k()\n{\n\t.reg .b32 %r<4>;\n\t.reg .pred %p<3>;\n"
              "\t.reg .b64 %rd<2>;\n\tmov.b32 %r1, 3;\n\tbar.sync 0;\n\tbarrier.sync.aligned %r1;\n"
              "\tbarrier.red.or.pred %p1, 0, %p2;\n"
              "\tbarrier.cta.red.popc.aligned.u32 %r2, 1, %p2;\n"
              "\tstacksave.u64 %rd1;\n\tstackrestore.u64 %rd1;\n\tret;\n}\n").kernel("k")
    _, bar, barrier, red_pred, red_cta, save, restore, _ = k.instructions
    assert bar.defs == () and barrier.defs == () and names(barrier.uses) == ["%r1"]
    assert names(red_pred.defs) == ["%p1"] and names(red_pred.uses) == ["%p2"]
    assert names(red_cta.defs) == ["%r2"]
    assert names(save.defs) == ["%rd1"] and save.uses == ()
    assert restore.defs == () and names(restore.uses) == ["%rd1"]


# -- a UTF-8 byte order mark -----------------------------------------------------------------------
def test_byte_order_mark_is_skipped():
    text = textures_ptx()
    plain = emit(parse(text))
    assert emit(parse("\ufeff" + text)) == plain
    assert emit(parse(b"\xef\xbb\xbf" + text.encode())) == plain


def test_errors_after_a_byte_order_mark_keep_their_position():
    bad = HEADER + ".visible .entry k()\n{\n\t.frobnicate 3;\n}\n"
    for data in ("\ufeff" + bad, b"\xef\xbb\xbf" + bad.encode()):
        with pytest.raises(ParseError) as info:
            parse(data, "b.ptx")
        assert (info.value.line, info.value.column) == (6, 2)
        assert ".frobnicate" in info.value.message
    with pytest.raises(ParseError) as info:  # a BOM anywhere else is still an error
        parse(HEADER + "\ufeff.visible .entry k()\n{\n\tret;\n}\n", "b.ptx")
    assert (info.value.line, info.value.column) == (4, 1)
