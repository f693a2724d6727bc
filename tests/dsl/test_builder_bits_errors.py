"""Wrong calls of the bit-twiddling ops raise ptxforge errors naming the op, what was expected,
what was given and the user's line; forms a target lacks raise UnsupportedError; the PTX ISA
and SM minimums in the isa table are the lowest ptxas accepts (checked one version below)."""

from __future__ import annotations

import subprocess

import pytest

from ptxforge.arch.targets import target as as_target
from ptxforge.dsl.builder import KernelBuilder
from ptxforge.errors import BuildError, PtxTypeError, UnsupportedError
from ptxforge.ptx import isa
from ptxforge.ptx import types as T

from bits_kit import line, val, where

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
    from ptxforge.toolchain.backends import find_ptxas, ptxas_version

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
    version = max(need.ptx, as_target(target).min_ptx)
    assert run(version, target) == (0, "")
    code, log = run(below, target)
    assert code != 0 and "requires PTX ISA .version" in log, log
    lower = {"sm_50": None, "sm_61": "sm_60", "sm_70": "sm_62"}[target]
    if lower is not None:  # the SM minimum is tight too (fns's sm_30 is below every target here)
        assert need.sm == int(target[3:])
        code, log = run(version, lower)
        assert code != 0 and f"requires .target {target}" in log, log
