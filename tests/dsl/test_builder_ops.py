"""One small kernel per op family and type, each accepted by real ptxas (nvJitLink) for sm_80
and sm_90; forms that need a newer target are built where they exist and refused below it."""

from __future__ import annotations

import sys

import pytest

from ptxforge.arch.targets import target as as_target
from ptxforge.dsl.builder import KernelBuilder, ModuleBuilder
from ptxforge.errors import BuildError, UnsupportedError
from ptxforge.ptx import ir
from ptxforge.ptx import types as T

ARCHS = ("sm_80", "sm_90")
INTS = (T.u16, T.u32, T.u64, T.s16, T.s32, T.s64)
FLOATS = (T.f32, T.f64)
HALVES = (T.f16, T.f16x2, T.bf16, T.bf16x2)
SIGNED = (T.s16, T.s32, T.s64)
BITS = (T.b16, T.b32, T.b64)
SM90_ONLY = {("add", T.bf16), ("add", T.bf16x2), ("sub", T.bf16), ("sub", T.bf16x2),
             ("mul", T.bf16), ("mul", T.bf16x2), ("setp", T.bf16)}


def val(kb, ty, v=3):
    """A register of type ``ty`` holding a small value."""
    if ty.is_pred:
        return kb.setp("lt", kb.mov(v, type=T.u32), 5)
    if ty.is_packed:
        half = T.f16 if ty is T.f16x2 else T.bf16
        h = kb.mov(float(v), type=half)
        return kb.pack((h, h), ty)
    return kb.mov(float(v) if ty.is_float else v, type=ty)


def compile_case(ptxas_accepts, kb, arch, expected):
    """Build, check every expected opcode text is present, and run ptxas."""
    ptx = kb.ptx()
    for text in expected:
        assert text in ptx, f"{text!r} missing from:\n{ptx}"
    ptxas_accepts(ptx, arch)
    return ptx


def _binary_cases():
    cases = []
    for fam in ("add", "sub", "mul", "min", "max"):
        for ty in INTS + FLOATS + HALVES:
            cases.append((fam, ty))
    for ty in INTS + FLOATS:
        cases.append(("div", ty))
    for ty in INTS:
        cases.append(("rem", ty))
    return cases


def _spell(fam, ty):
    """The opcode text the builder should emit for a plain binary op."""
    mods = {"mul": "lo." if ty.is_int else "", "div": "rn." if ty.is_float else ""}
    return f"{fam}.{mods.get(fam, '')}{ty.name} "


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("fam,ty", _binary_cases(), ids=lambda v: getattr(v, "name", v))
def test_binary_ssa_and_inplace(ptxas_accepts, arch, fam, ty):
    kb = KernelBuilder("k", target=arch)
    if (fam, ty) in SM90_ONLY and arch == "sm_80":
        with pytest.raises(UnsupportedError, match="sm_90"):
            getattr(kb, fam)(val(kb, ty), val(kb, ty))
        return
    a, b = val(kb, ty), val(kb, ty, 2)
    d = getattr(kb, fam)(a, b)
    assert d.type is ty and d.name.startswith(ty.reg_class.prefix)
    out = getattr(kb, "i" + fam)(d, b)
    assert out is d
    ptx = compile_case(ptxas_accepts, kb, arch, [_spell(fam, ty)])
    assert f"{_spell(fam, ty)}{d.name}, {d.name}, {b.name};" in ptx


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", INTS[:2] + INTS[3:5], ids=lambda t: t.name)
def test_mul_mad_hi_wide(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    a, b = val(kb, ty), val(kb, ty, 7)
    hi = kb.mul(a, b, mode="hi")
    wide = kb.mul(a, b, mode="wide")
    assert wide.type.bits == 2 * ty.bits and wide.type.is_signed == ty.is_signed
    mwide = kb.mad(a, b, wide, mode="wide")
    lo = kb.mad(a, b, hi)
    kb.imad(lo, a, b)
    compile_case(ptxas_accepts, kb, arch, [f"mul.hi.{ty.name}", f"mul.wide.{ty.name}",
                                           f"mad.wide.{ty.name} {mwide.name}", f"mad.lo.{ty.name}"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", FLOATS + HALVES, ids=lambda t: t.name)
def test_fma_and_ifma(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    a, b, c = val(kb, ty), val(kb, ty, 2), val(kb, ty, 1)
    d = kb.fma(a, b, c)
    kb.ifma(d, a, b)
    ptx = compile_case(ptxas_accepts, kb, arch, [f"fma.rn.{ty.name} {d.name}, {a.name}, {b.name}, {c.name};"])
    assert f"fma.rn.{ty.name} {d.name}, {a.name}, {b.name}, {d.name};" in ptx
    if ty in FLOATS:
        kb2 = KernelBuilder("k", target=arch)
        m = kb2.mad(val(kb2, ty), val(kb2, ty), val(kb2, ty))
        compile_case(ptxas_accepts, kb2, arch, [f"mad.rn.{ty.name} {m.name}"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("fam,ty", [(f, t) for f in ("abs", "neg") for t in SIGNED + FLOATS + HALVES],
                         ids=lambda v: getattr(v, "name", v))
def test_abs_neg(ptxas_accepts, arch, fam, ty):
    kb = KernelBuilder("k", target=arch)
    d = getattr(kb, fam)(val(kb, ty))
    compile_case(ptxas_accepts, kb, arch, [f"{fam}.{ty.name} {d.name}"])


@pytest.mark.parametrize("arch", ARCHS)
def test_transcendentals_and_divisions(ptxas_accepts, arch):
    kb = KernelBuilder("k", target=arch)
    x, xd = val(kb, T.f32), val(kb, T.f64)
    kb.sqrt(x), kb.sqrt(x, mode="approx"), kb.sqrt(xd)
    kb.rsqrt(x), kb.rsqrt(xd)
    kb.rcp(x), kb.rcp(x, mode="approx", ftz=True), kb.rcp(xd, rnd="rz")
    for fam in ("ex2", "lg2", "sin", "cos"):
        getattr(kb, fam)(x)
    kb.ex2(val(kb, T.f16))
    kb.div(x, x, mode="approx"), kb.div(x, x, mode="full"), kb.div(x, x, rnd="rz", ftz=True)
    kb.add(x, x, rnd="rm", sat=True), kb.mul(x, x, ftz=True)
    compile_case(ptxas_accepts, kb, arch, [
        "sqrt.rn.f32", "sqrt.approx.f32", "sqrt.rn.f64", "rsqrt.approx.f32", "rsqrt.approx.f64",
        "rcp.rn.f32", "rcp.approx.ftz.f32", "rcp.rz.f64", "ex2.approx.f32", "lg2.approx.f32",
        "sin.approx.f32", "cos.approx.f32", "ex2.approx.f16", "div.approx.f32", "div.full.f32",
        "div.rz.ftz.f32", "add.rm.sat.f32", "mul.ftz.f32"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", (T.pred,) + BITS + INTS, ids=lambda t: t.name)
def test_logic(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    a, b = val(kb, ty), val(kb, ty, 1)
    spelled = "pred" if ty.is_pred else f"b{ty.bits}"
    d = kb.and_(a, b)
    assert d.type is ty
    kb.or_(a, b), kb.xor(a, b), kb.not_(a)
    kb.iand(d, b), kb.ior(d, b), kb.ixor(d, b)
    expected = [f"and.{spelled} {d.name}", f"or.{spelled}", f"xor.{spelled}", f"not.{spelled}"]
    if not ty.is_pred:
        kb.cnot(a)
        expected.append(f"cnot.{spelled}")
    compile_case(ptxas_accepts, kb, arch, expected)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", BITS + INTS, ids=lambda t: t.name)
def test_shifts(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    a, n = val(kb, ty), val(kb, T.u32, 1)
    left, right = kb.shl(a, n), kb.shr(a, 2)
    kb.ishl(left, 1), kb.ishr(right, n)
    shr_t = ty.name if not ty.is_bits else f"b{ty.bits}"
    compile_case(ptxas_accepts, kb, arch, [f"shl.b{ty.bits} {left.name}, {a.name}, {n.name}",
                                           f"shr.{shr_t} {right.name}, {a.name}, 2"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", (T.b32, T.b64, T.u32, T.s64), ids=lambda t: t.name)
def test_bit_ops(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    a = val(kb, ty)
    pc, lz, rv = kb.popc(a), kb.clz(a), kb.brev(a)
    assert pc.type is T.u32 and lz.type is T.u32 and rv.type is ty
    ins = kb.bfi(a, rv, 4, 8)
    expected = [f"popc.b{ty.bits}", f"clz.b{ty.bits}", f"brev.b{ty.bits}",
                f"bfi.b{ty.bits} {ins.name}, {a.name}, {rv.name}, 4, 8;"]
    if not ty.is_bits:
        ex = kb.bfe(a, 3, 5)
        expected.append(f"bfe.{ty.name} {ex.name}, {a.name}, 3, 5;")
    compile_case(ptxas_accepts, kb, arch, expected)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", (T.u32, T.s32, T.u64, T.s64), ids=lambda t: t.name)
def test_carry_chains(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    a, b = val(kb, ty), val(kb, ty, 9)
    s0 = kb.add_cc(a, b)
    s1 = kb.addc(a, b, cc=True)
    s2 = kb.addc(a, b)
    d0 = kb.sub_cc(s0, b)
    d1 = kb.subc(s1, b, cc=True)
    kb.subc(s2, b)
    m0 = kb.mad_cc(a, b, d0)
    kb.madc(a, b, d1, hi=True, cc=True)
    kb.madc(a, b, m0)
    n = ty.name
    compile_case(ptxas_accepts, kb, arch, [
        f"add.cc.{n} {s0.name}", f"addc.cc.{n} {s1.name}", f"addc.{n} {s2.name}",
        f"sub.cc.{n}", f"subc.cc.{n}", f"subc.{n}", f"mad.lo.cc.{n}", f"madc.hi.cc.{n}",
        f"madc.lo.{n}"])


def _may_overflow(src, dst):
    """True when some integer value of ``src`` does not fit in ``dst``."""
    def rng(t):
        return (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.is_signed else (0, (1 << t.bits) - 1)
    (ls, hs), (ld, hd) = rng(src), rng(dst)
    return ld > ls or hd < hs


CVT_TYPES = (T.u8, T.u16, T.u32, T.u64, T.s8, T.s16, T.s32, T.s64, T.f16, T.bf16, T.f32, T.f64)


def _cvt_needs_sm90(src, dst):
    """bf16 conversions other than from/to f32 need sm_90."""
    if T.bf16 not in (src, dst):
        return False
    return T.f32 not in (src, dst)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("src", CVT_TYPES, ids=lambda t: t.name)
def test_cvt_all_pairs(ptxas_accepts, arch, src):
    kb = KernelBuilder("k", target=arch)
    a = val(kb, src)
    expected = []
    for dst in CVT_TYPES:
        if dst is src and not src.is_float:
            continue
        if T.bf16 in (src, dst) and 8 in (src.bits, dst.bits):
            with pytest.raises(BuildError, match="8-bit"):
                kb.cvt(a, dst)
            continue
        rnd = "rni" if dst is src else None
        if _cvt_needs_sm90(src, dst) and arch == "sm_80":
            with pytest.raises(UnsupportedError, match="sm_90"):
                kb.cvt(a, dst, rnd=rnd)
            continue
        d = kb.cvt(a, dst, rnd=rnd)
        assert d.type is dst
        expected.append(f" {d.name}, {a.name};")
        if dst.is_int and not src.is_float and _may_overflow(src, dst):
            kb.cvt(a, dst, sat=True)
    ptx = compile_case(ptxas_accepts, kb, arch, expected)
    if src is T.f32:
        assert "cvt.rzi.s32.f32" in ptx and "cvt.rn.f16.f32" in ptx and "cvt.f64.f32" in ptx
    if src is T.u32:
        assert "cvt.rn.f32.u32" in ptx and "cvt.sat.u8.u32" in ptx


@pytest.mark.parametrize("arch", ARCHS)
def test_cvt_rounding_modes(ptxas_accepts, arch):
    kb = KernelBuilder("k", target=arch)
    x, xd = val(kb, T.f32), val(kb, T.f64)
    for r in ("rni", "rzi", "rmi", "rpi"):
        kb.cvt(x, T.s32, rnd=r)
    for r in ("rn", "rz", "rm", "rp"):
        kb.cvt(xd, T.f32, rnd=r)
    kb.cvt(x, T.u8, sat=True), kb.cvt(x, T.f32, rnd="rmi", ftz=True)
    compile_case(ptxas_accepts, kb, arch, ["cvt.rni.s32.f32", "cvt.rpi.s32.f32", "cvt.rm.f32.f64",
                                           "cvt.rp.f32.f64", "cvt.rzi.sat.u8.f32",
                                           "cvt.rmi.ftz.f32.f32"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", BITS + INTS + FLOATS + (T.f16, T.bf16), ids=lambda t: t.name)
def test_mov_selp_setp(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    if ty is T.bf16 and arch == "sm_80":
        with pytest.raises(UnsupportedError, match="sm_90"):
            kb.setp("lt", val(kb, ty), val(kb, ty))
        return
    a, b = val(kb, ty), val(kb, ty, 1)
    c = kb.mov(a)
    kb.assign(c, b)
    cmps = ("eq", "ne") if ty.is_bits else ("eq", "ne", "lt", "le", "gt", "ge")
    if ty.is_float:
        cmps += ("equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
    elif ty.is_int and not ty.is_signed:
        cmps += ("lo", "ls", "hi", "hs")
    preds = [kb.setp(cmp, a, b) for cmp in cmps]
    if ty.bits == 16 and ty.is_float:
        with pytest.raises(BuildError, match="p|q"):
            kb.setp(cmps[0], a, b, both=True)
        p, q = kb.setp(cmps[0], a, b), kb.setp(cmps[1], a, b)
    else:
        p, q = kb.setp(cmps[0], a, b, both=True)
    r = kb.setp(cmps[-1], a, b, combine=("and", p))
    kb.setp(cmps[0], a, b, combine=("or", ir.Negated(q)))
    kb.setp(cmps[0], a, b, combine=("xor", r))
    expected = [f"setp.{cmp}.{ty.name} {pr.name}" for cmp, pr in zip(cmps, preds)]
    expected += [f".and.{ty.name} {r.name}", f"!{q.name};", ".xor."]
    if ty.bits > 16 or not ty.is_float:
        expected.append(f"{p.name}|{q.name}")
    if ty.bits > 16 or not ty.is_float:
        s = kb.selp(a, b, p)
        expected.append(f"selp.{ty.name} {s.name}, {a.name}, {b.name}, {p.name};")
    compile_case(ptxas_accepts, kb, arch, expected)


@pytest.mark.parametrize("arch", ARCHS)
def test_pack_unpack_b128(ptxas_accepts, arch):
    kb = KernelBuilder("k", target=arch)
    lo, hi = val(kb, T.u32), val(kb, T.u32, 4)
    wide = kb.pack((lo, hi), T.u64)
    q = kb.pack((wide, wide), T.b128)
    parts = kb.unpack(q)
    assert [p.type for p in parts] == [T.u64, T.u64]
    a, b = kb.unpack(wide)
    kb.add(a, b)
    module = kb.build()
    assert module.version == "8.3"
    ptx = compile_case(ptxas_accepts, kb, arch, [f"mov.b64 {wide.name}, {{{lo.name}, {hi.name}}};",
                                                 f"mov.b128 {q.name}", ".reg .b128 %rq<2>;"])
    assert ".version 8.3" in ptx


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", (T.u8, T.s8, T.u16, T.u32, T.s32, T.u64, T.f16, T.f32, T.f64, T.bf16x2),
                         ids=lambda t: t.name)
def test_ld_st_every_space(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    g = kb.load_param(kb.param_ptr("g", ty))
    s = kb.param("s", ty if not ty.is_float or ty.bits >= 32 else T.b16)
    sh = kb.shared_array("sh", ty, 16, align=16)
    lo = kb.local_array("lo", ty, 8, align=16)
    cn = kb.const_array("cn", T.u32, [1, 2, 3, 4])
    v = kb.ld(g, offset=8)
    kb.load_param(s)
    v2 = kb.ld(g, vec=2)
    wide = 2 if ty.bits == 64 else 4
    v4 = kb.ld(g, vec=wide, offset=16)
    kb.st(g, v, offset=4)
    kb.st(g, v2)
    kb.st(g, v4, offset=32)
    kb.st(kb.elem_ptr(sh, kb.tid()), v)
    kb.st(sh.at(4), v4)
    w = kb.ld(sh, vec=2, offset=16)  # .v2 needs 2*size alignment
    kb.st(kb.elem_ptr(lo, 3), w[0])
    kb.ld(lo.at(3))
    c = kb.ld(cn.at(2))
    kb.ld(kb.elem_ptr(cn, kb.tid()))
    kb.st(kb.elem_ptr(g, 5), v, volatile=True)
    kb.ld(g, nc=True)
    st_name = {T.f16: "b16", T.bf16x2: "b32"}.get(ty, ty.name)
    ptx = compile_case(ptxas_accepts, kb, arch, [
        f"ld.global.{st_name} {v.name}, [{g.name}+8];", f"ld.global.v2.{st_name}",
        f"ld.global.v{wide}.{st_name}", f"[{g.name}+32]", f"st.shared.v{wide}.{st_name} [sh+{4 * max(ty.bits // 8, 1)}]",
        f"ld.shared.v2.{st_name}", f"st.local.{st_name}", "ld.local", f"ld.const.u32 {c.name}, [cn+8];",
        f"st.volatile.global.{st_name}", f"ld.global.nc.{st_name}", ".const .align 4 .u32 cn[4] = {1, 2, 3, 4};",
        ".shared .align 16"])
    assert ptx.index(".const") < ptx.index(".entry")


@pytest.mark.parametrize("arch", ARCHS)
def test_ld_st_b128_needs_ptx83(ptxas_accepts, arch):
    kb = KernelBuilder("k", target=arch)
    g = kb.load_param(kb.param_ptr("g", T.b128))
    kb.st(g, kb.ld(g), offset=16)
    assert kb.build().version == "8.3"
    compile_case(ptxas_accepts, kb, arch, ["ld.global.b128", "st.global.b128"])


@pytest.mark.parametrize("arch", ARCHS)
def test_cvta_both_directions(ptxas_accepts, arch):
    kb = KernelBuilder("k", target=arch)
    raw = kb.load_param(kb.param_ptr("p", T.f32, space="generic"))
    g = kb.cvta(raw, "global")
    sh = kb.shared_array("buf", T.f32, 4)
    gen = kb.cvta(kb.address_of(sh), "shared", to_generic=True)
    kb.st(gen, kb.ld(g))
    compile_case(ptxas_accepts, kb, arch, [f"cvta.to.global.u64 {g.name}, {raw.name};",
                                           "cvta.shared.u64", "st.f32 ["])


def _atom_cases():
    cases = [("add", t) for t in (T.u32, T.s32, T.u64, T.f32, T.f64, T.f16, T.f16x2, T.bf16, T.bf16x2)]
    cases += [(op, t) for op in ("min", "max") for t in (T.u32, T.s32, T.u64, T.s64)]
    cases += [(op, t) for op in ("inc", "dec") for t in (T.u32,)]
    cases += [(op, t) for op in ("exch", "cas", "and", "or", "xor") for t in (T.u32, T.b64)]
    return cases


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("op,ty", _atom_cases(), ids=lambda v: getattr(v, "name", v))
def test_atom_red_global_shared(ptxas_accepts, arch, op, ty):
    kb = KernelBuilder("k", target=arch)
    g = kb.load_param(kb.param_ptr("g", ty))
    sh = kb.shared_array("sh", ty, 4)
    v = val(kb, ty)
    if ty in (T.bf16, T.bf16x2) and arch == "sm_80":
        with pytest.raises(UnsupportedError, match="sm_90"):
            kb.atom(op, g, v)
        return
    value = (val(kb, ty, 1), v) if op == "cas" else v
    old = kb.atom(op, g, value)
    assert old.type is ty
    kb.atom(op, sh, value)
    expected = [f"atom.global.{op}", f"atom.shared.{op}"]
    if op != "cas" and op != "exch":
        kb.red(op, g, v)
        kb.red(op, kb.elem_ptr(sh, 1), v)
        expected += [f"red.global.{op}", f"red.shared.{op}"]
    if op == "add" and ty is T.u32:
        kb.atom("add", g, 1, order="relaxed.gpu")
        expected.append("atom.relaxed.gpu.global.add.u32")
    compile_case(ptxas_accepts, kb, arch, expected)


@pytest.mark.parametrize("arch", ARCHS)
def test_sync_warp_and_special_registers(ptxas_accepts, arch):
    kb = KernelBuilder("k", target=arch)
    x = kb.cvt(kb.laneid(), T.f32)
    kb.bar_sync(), kb.bar_sync(1, 64), kb.membar("cta"), kb.membar("gl"), kb.membar("sys")
    kb.fence(), kb.fence("sc", "cta")
    kb.shfl_up(x, 1), kb.shfl_down(x, 2, width=16), kb.shfl_bfly(x, 4), kb.shfl_idx(x, 0)
    y, ok = kb.shfl_sync("idx", kb.tid(), 3, 31, with_pred=True)
    assert y.type is T.u32 and ok.type is T.pred
    everyone = kb.vote_sync("all", ok)
    kb.vote_sync("any", ok), kb.vote_sync("uni", everyone)
    ballot = kb.vote_sync("ballot", ok, mask=kb.activemask())
    kb.redux_sync("add", ballot), kb.redux_sync("or", ballot)
    for axis in "xyz":
        kb.tid(axis), kb.ntid(axis), kb.ctaid(axis), kb.nctaid(axis)
    kb.warpid(), kb.smid(), kb.clock()
    assert kb.clock64().type is T.u64
    kb.global_id("y")
    compile_case(ptxas_accepts, kb, arch, [
        "bar.sync 0;", "bar.sync 1, 64;", "membar.cta;", "membar.sys;", "fence.acq_rel.gpu;",
        "fence.sc.cta;", "shfl.sync.up.b32", ", 1, 0, 4294967295;", ", 2, 4127, 4294967295;",
        "shfl.sync.bfly.b32", f"{y.name}|{ok.name}", "vote.sync.all.pred", "vote.sync.uni.pred",
        "vote.sync.ballot.b32", "activemask.b32", "redux.sync.add.u32", "redux.sync.or.b32",
        "%tid.z", "%nctaid.y", "%laneid", "%warpid", "%smid", "%clock;", "%clock64"])


@pytest.mark.parametrize("arch", ARCHS)
def test_control_flow(ptxas_accepts, arch):
    kb = KernelBuilder("k", target=arch)
    out = kb.load_param(kb.param_ptr("out", T.u32))
    n = kb.load_param(kb.param("n", T.u32))
    i = kb.tid()
    small = kb.setp("lt", i, 8)
    kb.exit(pred=kb.setp("ge", i, n))
    acc = kb.mov(0, type=T.u32)
    with kb.loop(0, n, 2) as j:
        kb.iadd(acc, j)
    with kb.loop(10, 0, -3, type=T.s32) as k:
        kb.isub(acc, 1, pred=ir.Negated(small))
        assert k.type is T.s32
    with kb.if_(small):
        kb.add_u32_inplace(acc, 1)
    with kb.else_():
        kb.shr_u32_inplace(acc, 1)
    with kb.if_(small, negate=True):
        kb.imul(acc, 3)
    with kb.predicated(small):
        kb.st(out, acc)
    with kb.predicated(small, negate=True):
        kb.st(out, acc, offset=4)
    kb.bra("done", pred=small)
    kb.iadd(acc, 5)
    kb.label("done")
    kb.ret()
    ptx = compile_case(ptxas_accepts, kb, arch, [
        "@%p", "@!%p", "exit;", "setp.ge.u32", "setp.le.s32", "add.s32", "bra.uni", "done:",
        f"@{small.name} st.global.u32", f"@!{small.name} st.global.u32", f"@{small.name} bra done;"])
    labels = [line for line in ptx.splitlines() if line.endswith(":")]
    assert len(labels) == len(set(labels)) == 8


@pytest.mark.parametrize("arch", ARCHS)
def test_directives(ptxas_accepts, arch):
    for name, args, text in ((".maxntid", (128,), ".maxntid 128, 1, 1"),
                             (".reqntid", (16, 16), ".reqntid 16, 16, 1"),
                             (".minnctapersm", (2,), ".minnctapersm 2"),
                             (".maxnreg", (64,), ".maxnreg 64")):
        kb = KernelBuilder("k", target=arch)
        getattr(kb, name[1:])(*args)
        if name == ".minnctapersm":
            kb.maxntid(256)
        kb.mov(1, type=T.u32)
        compile_case(ptxas_accepts, kb, arch, [text])


@pytest.mark.parametrize("arch", ARCHS)
def test_module_with_funcs_and_calls(ptxas_accepts, arch):
    mb = ModuleBuilder(target=arch)
    sq = mb.func("square", params=[("x", "f32")], returns=[("r", "f32")])
    x = sq.load_param("x")
    sq.set_return("r", sq.mul(x, x))
    sq.ret()
    with pytest.raises(BuildError, match="at most one"):
        mb.func("divmod", params=[("a", "u32")], returns=[("q", "u32"), ("m", "u32")])
    dm = mb.func("hdiv", params=[("a", "u32"), ("b", "f16")], returns=[("q", "f16")])
    a, b = dm.load_param("a"), dm.load_param("b")
    assert b.type is T.f16
    dm.set_return("q", dm.add(dm.cvt(a, T.f16), b))
    nothing = mb.func("nothing")
    nothing.ret()
    k1 = mb.kernel("k1")
    out = k1.load_param(k1.param_ptr("out", T.f32))
    k1.st(out, k1.call(sq, 3.0))
    q = k1.call(dm, k1.tid(), k1.mov(0.5, type=T.f16))
    assert q.type is T.f16
    assert k1.call(nothing) is None
    k2 = mb.kernel("k2")
    k2.call(sq, k2.mov(1.5, type=T.f32))
    module = mb.build()
    assert [k.name for k in module.kernels] == ["square", "hdiv", "nothing", "k1", "k2"]
    ptx = mb.ptx()
    assert ".visible .func (.param .f32 r) square(" in ptx
    assert "call.uni (retval0), square, (param0);" in ptx
    assert "call.uni (retval0), hdiv, (param0, param1);" in ptx
    assert ".visible .func (.param .b16 q) hdiv(" in ptx
    assert "call.uni nothing;" in ptx
    ptxas_accepts(ptx, arch)
    alone = k2.build()
    assert [k.name for k in alone.kernels] == ["square", "k2"]
    ptxas_accepts(k2.ptx(), arch)


def test_registers_never_collide_across_classes():
    kb = KernelBuilder("k")
    regs = [val(kb, t) for t in (T.u64, T.b64, T.s64, T.f64, T.u32, T.f32, T.b16, T.f16, T.pred)]
    names = [r.name for r in regs]
    assert names[:3] == ["%rd1", "%rd2", "%rd3"] and names[3] == "%fd1" and names[5] == "%f1"
    kernel = kb.build().kernels[0]
    decl = {d.name: (d.type, d.count) for d in kernel.reg_decls}
    assert decl["%rd"] == ("b64", 4) and decl["%fd"] == ("f64", 2) and decl["%p"][0] == "pred"
    assert len({d.name for d in kernel.reg_decls}) == len(kernel.reg_decls)


def test_registers_carry_user_locations():
    kb = KernelBuilder("k")
    here = sys._getframe().f_lineno
    r = kb.add(kb.tid(), 1)
    assert r.loc.file == __file__ and r.loc.line == here + 1
    with kb.loop(0, 4) as i:
        kb.iadd(r, i)
    inst = kb.build().kernels[0].instructions
    assert {x.loc.line for x in inst if x.loc} == {here + 1, here + 3, here + 4}
    assert all(x.loc.file == __file__ for x in inst if x.loc)


@pytest.mark.parametrize("target,version", [("sm_75", "6.3"), ("sm_80", "7.0"), ("sm_86", "7.1"),
                                            ("sm_89", "7.8"), ("sm_90", "7.8"), ("sm_90a", "8.0"),
                                            ("sm_100", "8.6"), ("sm_120", "8.7")])
def test_version_is_lowest_for_target(ptxas_accepts, target, version):
    kb = KernelBuilder("k", target=target)
    kb.fence()
    assert kb.build().version == version
    ptxas_accepts(kb.ptx(), target)


@pytest.mark.parametrize("opcode", ["add.rn.bf16", "cvt.f32.bf16", "cvt.rn.bf16.f32",
                                    "redux.sync.add.u32", "ld.global.b128", "atom.global.add.noftz.bf16",
                                    "setp.lt.bf16", "ex2.approx.f16", "cvt.f64.bf16"])
def test_isa_minimum_ptx_is_tight(ptxas_accepts, opcode):
    """The table's PTX minimum is accepted and one minor version below is rejected."""
    from ptxforge.ptx import isa

    need = isa.requirement(opcode)
    target = "sm_90"
    assert need.sm <= 90 and need.ptx > (6, 0)
    regs = {"bf16": "%rs", "f16": "%rs", "u32": "%r", "b128": "%rq", "f32": "%f", "f64": "%fd"}
    parts = opcode.split(".")
    dst = regs[parts[-2] if parts[0] == "cvt" else parts[-1]]
    src = regs[parts[-1]]
    body = {
        "ld": f"{opcode} %rq1, [%rd1];", "atom": f"{opcode} %rs1, [%rd1], %rs2;",
        "setp": f"{opcode} %p1, %rs1, %rs2;", "redux": f"{opcode} %r1, %r2, -1;",
        "add": f"{opcode} %rs1, %rs2, %rs3;",
    }.get(parts[0], f"{opcode} {dst}1, {src}2;")
    decls = ".reg .pred %p<3>; .reg .b16 %rs<4>; .reg .b32 %r<4>; .reg .b64 %rd<3>; " \
            ".reg .f32 %f<3>; .reg .f64 %fd<3>;" + (" .reg .b128 %rq<2>;" if "b128" in opcode else "")

    def ptx(ver):
        return (f".version {ver}\n.target {target}\n.address_size 64\n.visible .entry k() {{\n"
                f"{decls}\n{body}\nret;\n}}\n")

    version = max(need.ptx, as_target(target).min_ptx)
    ptxas_accepts(ptx(f"{version[0]}.{version[1]}"), target)
    if need.ptx > as_target(target).min_ptx:
        with pytest.raises(BaseException):
            ptxas_accepts(ptx(f"{need.ptx[0]}.{need.ptx[1] - 1}"), target)


# --- cvt.ftz from bf16, float const tables, descending u32 loops, narrow func parameters and
# packed-half moves.

def test_cvt_ftz_bf16_to_f32_needs_sm90(ptxas_accepts):
    for target in ("sm_80", "sm_90"):
        kb = KernelBuilder("k", target=target)
        x = kb.ld(kb.load_param(kb.param_ptr("x", "bf16")))
        y = kb.load_param(kb.param_ptr("y", "f32"))
        if target == "sm_80":
            with pytest.raises(UnsupportedError, match=r"cvt\.ftz\.f32\.bf16 needs sm_90 .*"
                                                       r"minimum target sm_90"):
                kb.cvt(x, "f32", ftz=True)
            kb.st(y, kb.cvt(x, "f32"))
        else:
            kb.st(y, kb.cvt(x, "f32", ftz=True))
        ptxas_accepts(kb.ptx(), target)


def test_const_array_of_floats_is_exact(ptxas_accepts):
    kb = KernelBuilder("k")
    c = kb.const_array("c", "f32", [1.0, 0.1, -2])
    d = kb.const_array("d", "f64", [0.1])
    out = kb.load_param(kb.param_ptr("out", "f32"))
    kb.st(out, kb.add(kb.ld(c.at(1)), kb.cvt(kb.ld(d.at(0)), "f32")))
    ptx = kb.ptx()
    assert ".const .align 4 .f32 c[3] = {0f3F800000, 0f3DCCCCCD, 0fC0000000};" in ptx
    assert ".const .align 8 .f64 d[1] = {0d3FB999999999999A};" in ptx
    ptxas_accepts(ptx, "sm_80")
    with pytest.raises(BuildError, match="out of range for .f32"):
        kb.const_array("e", "f32", [1e39])


def _run_u32(ptx: str) -> list:
    """Interpret the straight-line u32 subset of a kernel body; return the values stored."""
    lines = [l.strip().rstrip(";") for l in ptx.split("{", 1)[1].splitlines()]
    lines = [l for l in lines if l and not l.startswith((".reg", "}", "//"))]
    labels = {l[:-1]: i for i, l in enumerate(lines) if l.endswith(":")}
    regs, stored, pc = {}, [], 0

    def val(tok):
        return regs[tok] if tok.startswith("%") else int(tok) % 2 ** 32

    for _ in range(10_000):
        line = lines[pc]
        pc += 1
        guard = None
        if line.startswith("@"):
            guard, line = line.split(None, 1)
        if guard and not regs[guard[1:]]:
            continue
        op, _, rest = line.partition(" ")
        args = [a.strip() for a in rest.split(",")]
        if op in ("bra", "bra.uni"):
            pc = labels[args[0]]
        elif op == "ret":
            return stored
        elif op == "mov.u32":
            regs[args[0]] = val(args[1])
        elif op.startswith("setp."):
            a, b = val(args[1]), val(args[2])
            regs[args[0]] = {"le": a <= b, "lt": a < b, "ge": a >= b}[op.split(".")[1]]
        elif op in ("add.u32", "sub.u32"):
            a, b = val(args[1]), val(args[2])
            regs[args[0]] = (a + b if op == "add.u32" else a - b) % 2 ** 32
        elif op.startswith("st."):
            stored.append(val(args[1]))
    raise AssertionError("the loop does not terminate")


@pytest.mark.parametrize("start,stop,step", [(10, 0, -3), (10, 1, -3), (9, 0, -3), (3, 0, -7),
                                             (0, 5, -1), (5, 0, -1), (0, 10, 3)])
def test_a_u32_loop_with_a_negative_step_runs_the_range(start, stop, step, ptxas_accepts):
    kb = KernelBuilder("k")
    out = kb.load_param(kb.param_ptr("out", "u32"))
    with kb.loop(start, stop, step) as i:
        kb.st(out, i)
    ptx = kb.ptx()
    assert "-" not in ptx.split(".entry", 1)[1]  # no negative u32 immediate
    assert _run_u32(ptx) == list(range(start, stop, step))
    ptxas_accepts(ptx, "sm_80")


@pytest.mark.parametrize("ty", ["u16", "s16", "u8", "s8", "f16", "bf16"])
def test_func_passes_narrow_values_as_bits_params_ptxas_accepts(ty, ptxas_accepts):
    mb = ModuleBuilder("sm_90")
    f = mb.func("f", params=[("a", ty)], returns=[("r", ty)])
    f.set_return("r", f.load_param("a"))
    kb = mb.kernel("k")
    p = kb.load_param(kb.param_ptr("x", ty))
    kb.st(p, kb.call(f, kb.ld(p)))
    ptx = mb.ptx()
    width = 8 if ty.endswith("8") else 16
    assert f".param .b{width} a" in ptx and f".param .b{width} r" in ptx
    ptxas_accepts(ptx, "sm_90")


@pytest.mark.parametrize("ty,bits", [("f16x2", 0x3F003F00), ("bf16x2", 0x3FE03FE0)])
def test_mov_of_packed_halves_from_a_number_and_a_register(ty, bits, ptxas_accepts):
    kb = KernelBuilder("k", target="sm_90")
    p = kb.load_param(kb.param_ptr("x", ty))
    h = kb.mov(1.75, type=ty)          # 1.75 in both halves
    copy = kb.mov(kb.ld(p))
    kb.st(p, h)
    kb.st(p, copy, offset=4)
    ptx = kb.ptx()
    assert f"mov.b32 {h.name}, {bits};" in ptx
    assert copy.type.name == ty
    ptxas_accepts(ptx, "sm_90")
