"""The bit-twiddling ops (prmt, lop3, shf, dp4a/dp2a, sad, bfind, fns, mul24/mad24, szext, bmsk,
copysign, testp): every form x legal type x modifier accepted by real ptxas (nvJitLink) for
sm_80 and sm_90; wrong calls raise ptxforge errors naming the op, expected, given and line;
the ISA minimums are tight at ptxas; golden text; liveness and the parser handle them."""

from __future__ import annotations

import doctest
import itertools
import subprocess
import sys
import textwrap

import pytest

from ptxforge import builder_bits, isa
from ptxforge import types as T
from ptxforge.builder import KernelBuilder, lop3_lut
from ptxforge.emit import emit
from ptxforge.errors import BuildError, PtxTypeError, UnsupportedError
from ptxforge.liveness import analyze_liveness
from ptxforge.parse import parse
from ptxforge.pressure import analyze_pressure

ARCHS = ("sm_80", "sm_90")
I32 = (T.u32, T.s32)
INTS = (T.u16, T.u32, T.u64, T.s16, T.s32, T.s64)


def line() -> int:
    """The caller's line number."""
    return sys._getframe(1).f_lineno


def where(n: int) -> str:
    return f"{__file__}:{n}"


def val(kb, ty, v=3):
    """A register of type ``ty`` holding a small value."""
    return kb.mov(float(v) if ty.is_float else v, type=ty)


def accepted(ptxas_accepts, kb, arch, expected):
    """Every expected text is in the PTX, and ptxas accepts it; returns the PTX."""
    ptx = kb.ptx()
    for text in expected:
        assert text in ptx, f"{text!r} missing from:\n{ptx}"
    ptxas_accepts(ptx, arch)
    return ptx


# -- every form, compiled ---------------------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("mode", (None,) + builder_bits.PRMT_MODES)
@pytest.mark.parametrize("ty", (T.b32, T.u32, T.s32), ids=lambda t: t.name)
def test_prmt(ptxas_accepts, arch, mode, ty):
    kb = KernelBuilder("k", target=arch)
    a, b, sel = val(kb, ty, 0x11), val(kb, ty, 0x22), val(kb, T.u32, 1)
    by_reg = kb.prmt(a, b, sel, mode=mode)
    by_imm = kb.prmt(a, b, 0x3210 if mode is None else 3, mode=mode)
    with_imm_source = kb.prmt(a, 7, 0 if mode else 0x4444, mode=mode)
    assert by_reg.type is ty and by_imm.type is ty and with_imm_source.type is ty
    op = "prmt.b32" + (f".{mode}" if mode else "")
    imm = "0x3210" if mode is None else "3"
    accepted(ptxas_accepts, kb, arch, [f"{op} {by_reg.name}, {a.name}, {b.name}, {sel.name};",
                                       f"{op} {by_imm.name}, {a.name}, {b.name}, {imm};",
                                       f"{op} {with_imm_source.name}, {a.name}, 7, "])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", (T.b32, T.u32, T.s32), ids=lambda t: t.name)
def test_lop3(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    a, b, c = val(kb, ty, 1), val(kb, ty, 2), val(kb, ty, 3)
    d = kb.lop3(a, b, c, 0x96)
    e = kb.lop3(d, b, c, lambda x, y, z: (x & y) | (~x & z))
    f = kb.lop3(a, 0xFF00, e, 0)
    assert d.type is e.type is f.type is ty
    accepted(ptxas_accepts, kb, arch, [f"lop3.b32 {d.name}, {a.name}, {b.name}, {c.name}, 0x96;",
                                       f"lop3.b32 {e.name}, {d.name}, {b.name}, {c.name}, 0xca;",
                                       f"lop3.b32 {f.name}, {a.name}, 65280, {e.name}, 0x00;"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("direction", ("l", "r"))
@pytest.mark.parametrize("mode", ("clamp", "wrap"))
def test_shf(ptxas_accepts, arch, direction, mode):
    kb = KernelBuilder("k", target=arch)
    lo, hi, n = val(kb, T.u32, 5), val(kb, T.b32, 9), val(kb, T.u32, 4)
    fn = kb.shf_l if direction == "l" else kb.shf_r
    by_reg = fn(lo, hi, n, mode=mode)
    top = 32 if mode == "clamp" else 31
    by_imm = fn(lo, hi, top, mode=mode)
    zero = fn(hi, lo, 0, mode=mode)
    assert by_reg.type is T.u32 and zero.type is T.b32
    op = f"shf.{direction}.{mode}.b32"
    accepted(ptxas_accepts, kb, arch, [f"{op} {by_reg.name}, {lo.name}, {hi.name}, {n.name};",
                                       f"{op} {by_imm.name}, {lo.name}, {hi.name}, {top};",
                                       f"{op} {zero.name}, {hi.name}, {lo.name}, 0;"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("at,bt", list(itertools.product(I32, I32)), ids=lambda t: t.name)
def test_dp4a_dp2a(ptxas_accepts, arch, at, bt):
    kb = KernelBuilder("k", target=arch)
    acc_t = T.u32 if (at, bt) == (T.u32, T.u32) else T.s32
    a, b, c = val(kb, at, 0x01020304), val(kb, bt, 0x05060708), val(kb, acc_t, 10)
    d4 = kb.dp4a(a, b, c)
    lo, hi = kb.dp2a(a, b, c), kb.dp2a(a, b, c, mode="hi")
    imm = kb.dp4a(a, 0x01010101, 5, btype=bt.name)
    assert {d4.type, lo.type, hi.type, imm.type} == {acc_t}
    assert kb.idp4a(d4, a, b) is d4 and kb.idp2a(lo, a, b, mode="hi") is lo
    types = f"{at.name}.{bt.name}"
    accepted(ptxas_accepts, kb, arch, [
        f"dp4a.{types} {d4.name}, {a.name}, {b.name}, {c.name};",
        f"dp2a.lo.{types} {lo.name}, {a.name}, {b.name}, {c.name};",
        f"dp2a.hi.{types} {hi.name}, {a.name}, {b.name}, {c.name};",
        f"dp4a.{types} {imm.name}, {a.name}, 16843009, 5;",
        f"dp4a.{types} {d4.name}, {a.name}, {b.name}, {d4.name};",
        f"dp2a.hi.{types} {lo.name}, {a.name}, {b.name}, {lo.name};"])


def test_dp4a_types_from_keywords_reinterpret_b32(ptxas_accepts):
    kb = KernelBuilder("k", target="sm_80")
    a, b = val(kb, T.b32, 7), val(kb, T.b32, 9)
    d = kb.dp4a(a, b, 0, atype="s32", btype="u32")
    assert d.type is T.s32
    accepted(ptxas_accepts, kb, "sm_80", [f"dp4a.s32.u32 {d.name}, {a.name}, {b.name}, 0;"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", INTS, ids=lambda t: t.name)
def test_sad(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    a, b, c = val(kb, ty, 9), val(kb, ty, 4), val(kb, ty, 1)
    d = kb.sad(a, b, c)
    assert d.type is ty and kb.isad(d, a, 2) is d
    accepted(ptxas_accepts, kb, arch, [f"sad.{ty.name} {d.name}, {a.name}, {b.name}, {c.name};",
                                       f"sad.{ty.name} {d.name}, {a.name}, 2, {d.name};"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", (T.u32, T.s32, T.u64, T.s64), ids=lambda t: t.name)
def test_bfind(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    a = val(kb, ty, 1000)
    d, s = kb.bfind(a), kb.bfind(a, shiftamt=True)
    assert d.type is T.u32 and s.type is T.u32
    accepted(ptxas_accepts, kb, arch, [f"bfind.{ty.name} {d.name}, {a.name};",
                                       f"bfind.shiftamt.{ty.name} {s.name}, {a.name};"])


@pytest.mark.parametrize("arch", ARCHS)
def test_fns(ptxas_accepts, arch):
    kb = KernelBuilder("k", target=arch)
    mask, base, off = val(kb, T.u32, 0xAAAA), val(kb, T.u32, 2), val(kb, T.s32, -1)
    d = kb.fns(mask, base, off)
    e = kb.fns(mask, 31, -3)
    f = kb.fns(val(kb, T.b32, 5), 0, 1)
    assert d.type is e.type is f.type is T.u32
    accepted(ptxas_accepts, kb, arch, [f"fns.b32 {d.name}, {mask.name}, {base.name}, {off.name};",
                                       f"fns.b32 {e.name}, {mask.name}, 31, -3;"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", I32, ids=lambda t: t.name)
@pytest.mark.parametrize("mode", ("lo", "hi"))
def test_mul24_mad24(ptxas_accepts, arch, ty, mode):
    kb = KernelBuilder("k", target=arch)
    a, b, c = val(kb, ty, 1 << 20), val(kb, ty, 300), val(kb, ty, 7)
    m = kb.mul24(a, b, mode=mode)
    d = kb.mad24(a, b, c, mode=mode)
    assert m.type is d.type is ty and kb.imad24(d, a, b, mode=mode) is d
    expected = [f"mul24.{mode}.{ty.name} {m.name}, {a.name}, {b.name};",
                f"mad24.{mode}.{ty.name} {d.name}, {a.name}, {b.name}, {c.name};",
                f"mad24.{mode}.{ty.name} {d.name}, {a.name}, {b.name}, {d.name};"]
    if mode == "hi" and ty is T.s32:
        s = kb.mad24(a, b, -5, mode="hi", sat=True)
        expected.append(f"mad24.hi.sat.s32 {s.name}, {a.name}, {b.name}, -5;")
    accepted(ptxas_accepts, kb, arch, expected)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", I32, ids=lambda t: t.name)
@pytest.mark.parametrize("mode", ("clamp", "wrap"))
def test_szext(ptxas_accepts, arch, ty, mode):
    kb = KernelBuilder("k", target=arch)
    a, n = val(kb, ty, 0x800), val(kb, T.u32, 12)
    d, e = kb.szext(a, n, mode=mode), kb.szext(a, 8, mode=mode)
    assert d.type is e.type is ty
    assert kb.build().version == ("7.6" if arch == "sm_80" else "7.8")
    accepted(ptxas_accepts, kb, arch, [f"szext.{mode}.{ty.name} {d.name}, {a.name}, {n.name};",
                                       f"szext.{mode}.{ty.name} {e.name}, {a.name}, 8;"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("mode", ("clamp", "wrap"))
def test_bmsk(ptxas_accepts, arch, mode):
    kb = KernelBuilder("k", target=arch)
    pos, width = val(kb, T.u32, 4), val(kb, T.s32, 8)
    d, e = kb.bmsk(pos, width, mode=mode), kb.bmsk(1, 2, mode=mode)
    assert d.type is e.type is T.b32
    accepted(ptxas_accepts, kb, arch, [f"bmsk.{mode}.b32 {d.name}, {pos.name}, {width.name};",
                                       f"bmsk.{mode}.b32 {e.name}, 1, 2;"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", (T.f32, T.f64), ids=lambda t: t.name)
def test_copysign_testp(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    a, b = val(kb, ty, -1.5), val(kb, ty, 2.0)
    c = kb.copysign(a, b)
    d = kb.copysign(-1.0, c)
    assert c.type is d.type is ty
    preds = [kb.testp(cls, d) for cls in builder_bits.TESTP_CLASSES]
    assert all(p.type is T.pred for p in preds)
    imm = "0fBF800000" if ty is T.f32 else "0dBFF0000000000000"
    accepted(ptxas_accepts, kb, arch, [f"copysign.{ty.name} {c.name}, {a.name}, {b.name};",
                                       f"copysign.{ty.name} {d.name}, {imm}, {c.name};"]
             + [f"testp.{cls}.{ty.name} {p.name}, {d.name};"
                for cls, p in zip(builder_bits.TESTP_CLASSES, preds)])


def test_guarded_forms(ptxas_accepts):
    kb = KernelBuilder("k", target="sm_80")
    a = val(kb, T.u32, 5)
    p = kb.testp("finite", val(kb, T.f32, 1.0))
    d = kb.lop3(a, a, a, 0xE8, pred=p)
    with kb.predicated(p, negate=True):
        kb.isad(d, a, 1)
    accepted(ptxas_accepts, kb, "sm_80", [f"@{p.name} lop3.b32 {d.name}", f"@!{p.name} sad.u32"])


# -- lop3's truth table -----------------------------------------------------------------------

@pytest.mark.parametrize("fn,lut", [
    (lambda a, b, c: a & b & c, 0x80), (lambda a, b, c: a ^ b ^ c, 0x96),
    (lambda a, b, c: (a & b) | (~a & c), 0xCA), (lambda a, b, c: a | b | c, 0xFE),
    (lambda a, b, c: a & b & ~c, 0x40), (lambda a, b, c: (a & b | c) ^ a, 0x1A),
    (lambda a, b, c: (a & b) | (a & c) | (b & c), 0xE8), (lambda a, b, c: ~a, 0x0F),
    (lambda a, b, c: a, 0xF0), (lambda a, b, c: b, 0xCC), (lambda a, b, c: c, 0xAA),
    (lambda a, b, c: 0, 0x00), (lambda a, b, c: ~0, 0xFF), (lambda a, b, c: a ^ ~b, 0xC3),
])
def test_lop3_lut_from_function(fn, lut):
    assert lop3_lut(fn) == lut
    kb = KernelBuilder("k")
    a = val(kb, T.u32)
    kb.lop3(a, a, a, fn)
    assert f"lop3.b32 %r2, %r1, %r1, %r1, 0x{lut:02x};" in kb.ptx()


@pytest.mark.parametrize("fn", [lambda a, b, c: a and b, lambda a, b, c: a + b,
                                lambda a, b, c: 1, lambda a, b, c: a | (b or c)],
                         ids=["and-keyword", "plus", "constant-1", "or-keyword"])
def test_lop3_refuses_functions_that_are_not_bitwise(kb, fn):
    a = val(kb, T.u32)
    with pytest.raises(BuildError) as err:
        at = line() + 1
        kb.lop3(a, a, a, fn)
    msg = str(err.value)
    assert msg.startswith("lop3: expected a bitwise function") and "bit by bit" in msg
    assert where(at) in msg


def test_lop3_function_must_return_an_int(kb):
    a = val(kb, T.u32)
    with pytest.raises(BuildError, match=r"lop3: expected the LUT function to return an int, got "
                                         r"float 1\.5"):
        kb.lop3(a, a, a, lambda x, y, z: 1.5)
    with pytest.raises(BuildError, match=r"return an int, got bool False"):
        kb.lop3(a, a, a, lambda x, y, z: not x)


# -- errors -----------------------------------------------------------------------------------

@pytest.fixture
def kb():
    return KernelBuilder("k", target="sm_80")


@pytest.mark.parametrize("call,text", [
    (lambda kb, a: kb.lop3(a, a, a, 256), "lop3: immediate immLut 256 is out of range: expected [0, 255]"),
    (lambda kb, a: kb.lop3(a, a, a, -1), "lop3: immediate immLut -1 is out of range: expected [0, 255]"),
    (lambda kb, a: kb.prmt(a, a, 0x10000), "prmt: immediate selector 65536 is out of range: expected "
                                           "[0, 65535] (four 4-bit byte selectors)"),
    (lambda kb, a: kb.prmt(a, a, 4, mode="f4e"), "prmt: immediate selector 4 is out of range: expected "
                                                 "[0, 3] (.f4e reads only the two low bits)"),
    (lambda kb, a: kb.shf_l(a, a, 33), "shf_l: immediate amount 33 is out of range: expected [0, 32] "
                                       "(.clamp treats larger amounts as 32)"),
    (lambda kb, a: kb.shf_r(a, a, 32, mode="wrap"), "shf_r: immediate amount 32 is out of range: "
                                                    "expected [0, 31] (.wrap takes amounts mod 32)"),
    (lambda kb, a: kb.shf_r(a, a, -1), "shf_r: immediate amount -1 is out of range"),
    (lambda kb, a: kb.szext(a, 40), "szext: immediate amount 40 is out of range: expected [0, 32]"),
    (lambda kb, a: kb.bmsk(0, 32, mode="wrap"), "bmsk: immediate amount 32 is out of range: "
                                                "expected [0, 31]"),
    (lambda kb, a: kb.fns(a, 32, 1), "fns: immediate base bit 32 is out of range: expected [0, 31]"),
    (lambda kb, a: kb.fns(a, 0, 2**31), "fns: immediate 2147483648 is out of range for .s32"),
    (lambda kb, a: kb.prmt(a, a, a, mode="f8e"), "prmt: mode 'f8e' is not valid for prmt; expected one of "
                                                 "'f4e', 'b4e', 'rc8', 'ecl', 'ecr', 'rc16'"),
    (lambda kb, a: kb.shf_l(a, a, 1, mode="lo"), "shf_l: mode 'lo' is not valid for shf; expected one of "
                                                 "'clamp', 'wrap'"),
    (lambda kb, a: kb.mul24(a, a, mode="wide"), "mul24: mode 'wide' is not valid for mul24"),
    (lambda kb, a: kb.sad(a, a, a, mode="hi"), "sad: mode 'hi' is not valid for sad; expected one of none"),
    (lambda kb, a: kb.testp("nan", kb.mov(1.0, type="f32")), "testp: class 'nan' is not valid for testp; "
                                                             "expected one of 'finite', 'infinite'"),
    (lambda kb, a: kb.mad24(a, a, a, sat=True), "mad24: ptxas rejects .sat on mad24.lo (only "
                                                "mad24.hi.sat.s32 exists) (mad24.lo.sat.u32)"),
    (lambda kb, a: kb.mad24(a, a, a, mode="hi", sat=True), "mad24: ptxas rejects .sat on .u32 mad24"),
])
def test_bad_immediates_and_modifiers_raise_build_error(kb, call, text):
    a = val(kb, T.u32)
    with pytest.raises(BuildError) as err:
        call(kb, a)
    msg = str(err.value)
    assert not isinstance(err.value, PtxTypeError)
    assert text in msg and msg.endswith(f" at {where(call.__code__.co_firstlineno)}"), msg


def test_error_names_the_callers_line(kb):
    a = val(kb, T.u32)
    with pytest.raises(BuildError) as err:
        at = line() + 1
        kb.lop3(a, a, a, 300)
    assert str(err.value) == (f"lop3: immediate immLut 300 is out of range: expected [0, 255] "
                              f"(an 8-bit truth table) at {where(at)}")


@pytest.mark.parametrize("call,expected,given", [
    (lambda kb: kb.shf_l(kb.mov(1.0, type="f32"), 0, 1), "operands of type .b32", ".f32 (%f1)"),
    (lambda kb: kb.shf_l(kb.mov(1, type="u64"), 0, 1), "operands of type .b32", ".u64 (%rd1)"),
    (lambda kb: kb.prmt(kb.mov(1, type="u16"), 0, 1), "operands of type .b32", ".u16 (%rs1)"),
    (lambda kb: kb.lop3(kb.mov(1, type="u32"), 1, 1, kb.mov(1, type="u32")),
     "an immediate immLut (an int 0..255, or a function", ".u32 (%r2)"),
    (lambda kb: kb.lop3(kb.mov(1, type="u32"), 1, 1, "0x96"), "an immediate immLut", "str '0x96'"),
    (lambda kb: kb.sad(kb.mov(1.0, type="f32"), 1.0, 1.0), "operands of type one of .u16", ".f32 (%f1)"),
    (lambda kb: kb.bfind(kb.mov(1, type="b32")), "operands of type one of .u32, .s32, .u64, .s64",
     ".b32 (%r1)"),
    (lambda kb: kb.copysign(kb.mov(1, type="u32"), 1), "operands of type one of .f32, .f64", ".u32 (%r1)"),
    (lambda kb: kb.testp("finite", kb.mov(1, type="u32")), "operands of type one of .f32, .f64",
     ".u32 (%r1)"),
    (lambda kb: kb.testp("finite", kb.mov(1.0, type="f16")), "operands of type one of .f32, .f64",
     ".f16 (%rs1)"),
    (lambda kb: kb.szext(kb.mov(1, type="b32"), 3), "operands of type one of .u32, .s32", ".b32 (%r1)"),
    (lambda kb: kb.mul24(kb.mov(1, type="u64"), 3), "operands of type one of .u32, .s32", ".u64 (%rd1)"),
    (lambda kb: kb.dp4a(kb.mov(1, type="b32"), kb.mov(1, type="u32"), 0),
     "a .u32 or .s32 a (or atype='u32'/'s32'", ".b32 (%r1)"),
    (lambda kb: kb.dp4a(kb.mov(1, type="u32"), kb.mov(1, type="u32"), kb.mov(1, type="s32")),
     "an operand of type .u32", ".s32 (%r3)"),
    (lambda kb: kb.dp4a(kb.mov(1, type="u64"), 1, 0, atype="u32"), "a 32-bit integer a for atype=u32",
     ".u64 (%rd1)"),
    (lambda kb: kb.idp4a(kb.mov(1, type="u32"), kb.mov(1, type="s32"), 1),
     "a .s32 accumulator (.atype .s32, .btype .s32)", ".u32 (%r1)"),
    (lambda kb: kb.isad(kb.mov(1, type="u32"), kb.mov(1, type="s32"), 1), "an operand of type .u32",
     ".s32 (%r2)"),
    (lambda kb: kb.shf_l(kb.mov(1, type="u32"), 0, kb.mov(1.0, type="f32")), "an operand of type .u32",
     ".f32 (%f1)"),
])
def test_wrong_types_raise_ptx_type_error(kb, call, expected, given):
    with pytest.raises(PtxTypeError) as err:
        call(kb)
    msg = str(err.value)
    at = where(call.__code__.co_firstlineno)  # the user's line is the one inside the lambda
    assert f"expected {expected}" in msg and f"got {given}" in msg and msg.endswith(at), msg


def test_dot_products_need_a_type_for_immediates(kb):
    with pytest.raises(PtxTypeError, match=r"dp4a: cannot infer \.atype/\.btype from immediates 1, 2; "
                                           r"pass atype= and btype="):
        kb.dp4a(1, 2, 0)
    assert kb.dp4a(1, 2, 0, atype="s32", btype="s32").type is T.s32


def test_testp_needs_a_class(kb):
    with pytest.raises(BuildError, match="testp: class None is not valid for testp; expected one of "
                                         "'finite', 'infinite', 'number', 'notanumber', 'normal', "
                                         "'subnormal' at "):
        kb.testp(None, kb.mov(1.0, type="f32"))


@pytest.mark.parametrize("target,call,need", [
    ("sm_62", lambda kb, a: kb.szext(a, 4), "szext.clamp.u32 needs sm_70 and PTX ISA 7.6"),
    ("sm_62", lambda kb, a: kb.bmsk(a, 4), "bmsk.clamp.b32 needs sm_70 and PTX ISA 7.6"),
    ("sm_60", lambda kb, a: kb.dp4a(a, a, a), "dp4a.u32.u32 needs sm_61 and PTX ISA 5.0"),
    ("sm_60", lambda kb, a: kb.dp2a(a, a, a), "dp2a.lo.u32.u32 needs sm_61 and PTX ISA 5.0"),
])
def test_newer_forms_refused_on_older_targets(target, call, need):
    kb = KernelBuilder("k", target=target)
    a = val(kb, T.u32)
    with pytest.raises(UnsupportedError) as err:
        call(kb, a)
    msg = str(err.value)
    assert need in msg and f"this kernel targets {target} at {where(call.__code__.co_firstlineno)}" \
        in msg, msg


# -- PTX ISA minimums -------------------------------------------------------------------------

@pytest.mark.parametrize("target,build,version", [
    ("sm_50", lambda kb, a: kb.lop3(a, a, a, 0x96), "4.3"),
    ("sm_53", lambda kb, a: kb.lop3(a, a, a, 0x96), "4.3"),
    ("sm_60", lambda kb, a: kb.lop3(a, a, a, 0x96), "5.0"),
    ("sm_50", lambda kb, a: kb.fns(a, 0, 1), "6.0"),
    ("sm_61", lambda kb, a: kb.dp4a(a, a, a), "5.0"),
    ("sm_50", lambda kb, a: (kb.prmt(a, a, 0), kb.shf_l(a, a, 1), kb.sad(a, a, a), kb.bfind(a),
                             kb.mul24(a, a), kb.testp("normal", kb.mov(1.0, type="f32"))), "4.0"),
    ("sm_70", lambda kb, a: kb.szext(a, 4), "7.6"),
    ("sm_75", lambda kb, a: kb.bmsk(a, 4), "7.6"),
    ("sm_87", lambda kb, a: kb.szext(a, 4), "7.6"),
    ("sm_89", lambda kb, a: kb.szext(a, 4), "7.8"),
])
def test_version_is_the_lowest_that_knows_the_op(target, build, version):
    kb = KernelBuilder("k", target=target)
    build(kb, val(kb, T.u32))
    assert kb.build().version == version


def _tight_body(op: str) -> str:
    return {"szext": "szext.clamp.s32 %r3, %r1, %r2;", "bmsk": "bmsk.wrap.b32 %r3, %r1, %r2;",
            "lop3": "lop3.b32 %r3, %r1, %r2, %r1, 0x96;", "dp4a": "dp4a.s32.u32 %r3, %r1, %r2, %r1;",
            "dp2a": "dp2a.hi.u32.u32 %r3, %r1, %r2, %r1;", "fns": "fns.b32 %r3, %r1, %r2, -1;"}[op]


def _tight_ptx(op: str, version: tuple, target: str) -> str:
    return (f".version {version[0]}.{version[1]}\n.target {target}\n.address_size 64\n"
            f".visible .entry k(.param .u64 out)\n{{\n.reg .b32 %r<4>;\n.reg .b64 %rd<2>;\n"
            f"ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nmov.u32 %r2, %ctaid.x;\n"
            f"{_tight_body(op)}\nst.global.u32 [%rd1], %r3;\nret;\n}}\n")


@pytest.mark.parametrize("op", ["szext", "bmsk"])
def test_ptx_minimum_is_tight_at_nvjitlink(ptxas_accepts, op):
    """The table's PTX minimum is accepted and one minor version below is rejected (sm_80)."""
    need = isa.requirement(_tight_body(op).split()[0])
    assert need.ptx == (7, 6) and need.sm == 70
    ptxas_accepts(_tight_ptx(op, need.ptx, "sm_80"), "sm_80")
    with pytest.raises(AssertionError, match="PTX ISA"):
        ptxas_accepts(_tight_ptx(op, (7, 5), "sm_80"), "sm_80")


def _old_ptxas():
    """A ptxas executable that still targets sm_50 (CUDA 12 or older), or None."""
    from ptxforge.backends import find_ptxas, ptxas_version

    return next((p for p in find_ptxas() if (1, 0) <= ptxas_version(p) < (13, 0)), None)


@pytest.mark.skipif(_old_ptxas() is None, reason="no ptxas executable that targets sm_50 (CUDA <= 12)")
@pytest.mark.parametrize("op,target,below", [("lop3", "sm_50", (4, 2)), ("fns", "sm_50", (5, 0)),
                                             ("dp4a", "sm_61", (4, 3)), ("dp2a", "sm_61", (4, 3)),
                                             ("szext", "sm_70", (7, 5))])
def test_ptx_and_sm_minimums_are_tight_at_ptxas(tmp_path, op, target, below):
    """At each minimum ptxas accepts; one PTX version lower, or one SM lower, it refuses."""
    need = isa.requirement(_tight_body(op).split()[0])
    exe = _old_ptxas()

    def run(version, tgt):
        path = tmp_path / f"{op}_{tgt}_{version[0]}{version[1]}.ptx"
        path.write_text(_tight_ptx(op, version, tgt))
        out = subprocess.run([exe, f"-arch={tgt}", str(path), "-o", str(tmp_path / "k.cubin")],
                             capture_output=True, text=True)
        return out.returncode, out.stderr

    assert need.sm <= int(target[3:])
    version = max(need.ptx, isa.parse_target(target).min_ptx)
    assert run(version, target) == (0, "")
    code, log = run(below, target)
    assert code != 0 and "requires PTX ISA .version" in log, log
    lower = {"sm_50": None, "sm_61": "sm_60", "sm_70": "sm_62"}[target]
    if lower is not None:  # the SM minimum is tight too (fns's sm_30 is below every target here)
        assert need.sm == int(target[3:])
        code, log = run(version, lower)
        assert code != 0 and f"requires .target {target}" in log, log


# -- golden text ------------------------------------------------------------------------------

def test_golden_shift_left_64():
    kb = KernelBuilder("shl64", target="sm_80")
    x = kb.load_param(kb.param_ptr("x", "u32"))
    n = kb.load_param(kb.param("n", "u32"))
    lo, hi = kb.ld(x), kb.ld(x, offset=4)
    kb.st(x, kb.shl(lo, n))
    kb.st(x, kb.shf_l(lo, hi, n), offset=4)
    assert kb.ptx() == textwrap.dedent("""\
        //
        // Generated by ptxforge
        //

        .version 7.0
        .target sm_80
        .address_size 64

        .visible .entry shl64(
        \t.param .u64 .ptr.global.align 4 x,
        \t.param .u32 n
        )
        {
        \t.reg .b32 %r<6>;
        \t.reg .b64 %rd<3>;

        \tld.param.u64 %rd1, [x];
        \tcvta.to.global.u64 %rd2, %rd1;
        \tld.param.u32 %r1, [n];
        \tld.global.u32 %r2, [%rd2];
        \tld.global.u32 %r3, [%rd2+4];
        \tshl.b32 %r4, %r2, %r1;
        \tst.global.u32 [%rd2], %r4;
        \tshf.l.clamp.b32 %r5, %r2, %r3, %r1;
        \tst.global.u32 [%rd2+4], %r5;
        \tret;
        }
        """)


def test_golden_byte_and_logic_ops():
    kb = KernelBuilder("bytes", target="sm_90")
    a, b = kb.tid(), kb.ctaid()
    swapped = kb.prmt(a, 0, 0x0123)
    mux = kb.lop3(swapped, a, b, lambda s, x, y: (s & x) | (~s & y))
    low = kb.szext(mux, 12, mode="wrap")
    ok = kb.testp("finite", kb.copysign(kb.cvt(low, "f32"), 1.0))
    kb.exit(pred=ok)
    body = kb.ptx().split("{\n", 1)[1]
    assert body == textwrap.dedent("""\
        \t.reg .pred %p<2>;
        \t.reg .b32 %r<6>;
        \t.reg .f32 %f<3>;

        \tmov.u32 %r1, %tid.x;
        \tmov.u32 %r2, %ctaid.x;
        \tprmt.b32 %r3, %r1, 0, 0x0123;
        \tlop3.b32 %r4, %r3, %r1, %r2, 0xca;
        \tszext.wrap.u32 %r5, %r4, 12;
        \tcvt.rn.f32.u32 %f1, %r5;
        \tcopysign.f32 %f2, %f1, 0f3F800000;
        \ttestp.finite.f32 %p1, %f2;
        \t@%p1 exit;
        \tret;
        }
        """)
    assert ".version 7.8" in kb.ptx()


# -- liveness and the parser ------------------------------------------------------------------

def _pressure_kernel():
    kb = KernelBuilder("live", target="sm_80")
    out = kb.load_param(kb.param_ptr("out", "u32"))
    a, b, c = kb.ld(out), kb.ld(out, offset=4), kb.ld(out, offset=8)
    d = kb.lop3(a, b, c, 0x96)          # a, b, c all live on
    e = kb.prmt(d, a, c)                # selector from a register; d dies
    f = kb.shf_r(e, b, c)               # e and b die
    kb.isad(f, a, c)                    # f = f + |a - c|: reads and writes f; a and c die
    kb.st(out, f)
    return kb


def test_liveness_of_the_new_ops_is_exact():
    kernel = _pressure_kernel().build().kernels[0]
    lv = analyze_liveness(kernel)
    # ld.param, cvta, 3 x ld, lop3, prmt, shf, sad, st, ret (the pointer is 2 units)
    assert lv.series("at") == [2, 2, 3, 4, 5, 6, 6, 5, 3, 0, 0]
    report = analyze_pressure(kernel)
    assert report.peak.units == 6 and report.peak.index == 5
    assert sorted(v.name for v in report.peak.values) == ["%r1", "%r2", "%r3", "%r4", "%rd2"]
    sad = kernel.instructions[8]
    assert sad.opcode == "sad.u32" and [r.name for r in sad.defs] == ["%r6"]
    assert sorted(r.name for r in sad.uses) == ["%r1", "%r3", "%r6"]


def _every_new_op():
    kb = KernelBuilder("every", target="sm_80")
    out = kb.load_param(kb.param_ptr("out", "u32"))
    a, b, c = kb.ld(out), kb.ld(out, offset=4), kb.ld(out, offset=8)
    s = kb.cvt(a, "s32")
    x = kb.cvt(a, "f64")
    vals = [kb.prmt(a, b, c), kb.prmt(a, b, 2, mode="b4e"), kb.lop3(a, b, c, 0x1A),
            kb.shf_l(a, b, c, mode="wrap"), kb.shf_r(a, b, 31, mode="wrap"), kb.dp4a(a, s, s),
            kb.dp2a(s, b, 9, mode="hi"), kb.sad(a, b, c), kb.bfind(s, shiftamt=True),
            kb.fns(a, 3, -2), kb.mul24(s, -7, mode="hi"), kb.mad24(s, s, s, mode="hi", sat=True),
            kb.szext(s, c), kb.bmsk(c, 5), kb.selp(1, 0, kb.testp("subnormal", kb.copysign(x, -0.5)),
                                                    type="u32")]
    acc = kb.mov(0, type="u32")
    for v in vals:
        kb.ixor(acc, v)
    kb.idp4a(acc, a, b)
    kb.st(out, acc)
    return kb


def test_parser_round_trips_every_new_op(ptxas_accepts):
    kb = _every_new_op()
    once = kb.ptx()
    module = parse(once)
    assert emit(module) == once
    built, parsed = kb.build().kernels[0], module.kernels[0]
    assert [i.opcode for i in parsed.instructions] == [i.opcode for i in built.instructions]
    assert [i.ndefs for i in parsed.instructions] == [i.ndefs for i in built.instructions]
    assert analyze_liveness(parsed).series("at") == analyze_liveness(built).series("at")
    ptxas_accepts(once, "sm_80")


def test_builder_bits_doctests():
    assert doctest.testmod(builder_bits).failed == 0


def test_docs_lop3_example(ptxas_accepts):
    """The builder.md lop3 block runs as written and makes the tables it says."""
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "builder.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "lop3" in b)
    namespace: dict = {}
    exec(compile(block, "docs/builder.md", "exec"), namespace)
    ptx = namespace["kb"].ptx()
    assert "lop3.b32 %r4, %r1, %r2, %r3, 0xca;" in ptx and "lop3.b32 %r5, %r1, %r2, %r3, 0xe8;" in ptx
    ptxas_accepts(ptx, "sm_80")
