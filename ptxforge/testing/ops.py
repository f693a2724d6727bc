"""The op catalogue behind :mod:`ptxforge.testing.strategies`: one small entry per (op form, type), each a
function that performs that op through the public KernelBuilder API against a pool of live
values.  Private: use :mod:`ptxforge.testing.strategies`.

An entry is called as ``entry.run(ctx, picks, guard)``: ``picks`` are small ints choosing
operands (``pool[pick % len(pool)]``), immediates and options; ``guard`` is a predicate
register (or None) for ``pred=``.  Entries never guess: an operand of type T always comes from
the pool of T (created on demand by :meth:`_Ctx.fresh`), so the generated kernels are
well-typed by construction.  :class:`Entry` and :class:`_Ctx` live in
:mod:`ptxforge.testing.ctx`; the bit-twiddling entries (prmt, lop3, shf, dp4a, ...) in
:mod:`ptxforge.testing.bits`.
"""

from __future__ import annotations

import functools
from typing import Optional

from ptxforge.dsl.builder import SPECIAL_REGISTERS, KernelBuilder
from ptxforge.errors import BuildError, PtxforgeError
from ptxforge.ptx import isa
from ptxforge.ptx import types as T

from .bits import bit_entries
from .ctx import _NO_IMM, KINDS, REGION_EXTRA, REGION_MEM, REGION_SINK, Entry, _Ctx, _size
from .tensor_ops import tensor_entries

__all__ = ["Entry", "CATALOGUE", "ENTRIES", "KINDS", "REGION_EXTRA", "REGION_MEM", "REGION_SINK",
           "available_entries", "excluded_entries"]

_I16, _I32, _I64 = (T.u16, T.s16), (T.u32, T.s32), (T.u64, T.s64)
_INTS = _I32 + _I64 + _I16
_F = (T.f32, T.f64)
_HALF = (T.f16, T.bf16, T.f16x2, T.bf16x2)
_BITS = (T.b32, T.b64, T.b16)
_SIGNED = (T.s32, T.s64, T.s16)
_WIDE = {T.u16: T.u32, T.s16: T.s32, T.u32: T.u64, T.s32: T.s64}
_MEM = (T.u32, T.f32, T.s32, T.u64, T.s64, T.f64, T.b32, T.b64, T.u16, T.s16, T.b16,
        T.u8, T.s8, T.b8, T.f16, T.bf16, T.f16x2, T.bf16x2, T.b128)
_NUMERIC = (T.u32, T.s32, T.f32, T.u64, T.s64, T.f64, T.u16, T.s16, T.u8, T.s8, T.f16, T.bf16)


# --- entry factories -------------------------------------------------------------------------

_ENTRIES: list = []


def _entry(key: str, kind: str = "def"):
    def deco(fn):
        _ENTRIES.append(Entry(key=key, kind=kind, run=fn))
        return fn
    return deco


def _method(name: str):
    return getattr(KernelBuilder, {"and": "and_", "or": "or_", "not": "not_"}.get(name, name))


def _arith(family: str, ty: T.PtxType, arity: int, suffix: str = "", **kw) -> None:
    meth = _method(family)
    key = ".".join(p for p in (family, suffix, ty.name) if p)

    def run(ctx, p, guard):
        srcs = [ctx.get(ty, p[0])]
        for k in range(1, arity):
            if family in ("shl", "shr") or (family == "bfe" and k >= 1) or (family == "bfi" and k >= 2):
                srcs.append(ctx.u32(p[k % 4], ty.bits))
            elif kw.get("mode") == "wide" and k == 2:
                srcs.append(ctx.get(_WIDE[ty], p[k]))
            else:
                srcs.append(ctx.src(ty, p[k % 4]))
        ctx.add(meth(ctx.kb, *srcs, pred=guard, **kw))

    _ENTRIES.append(Entry(key=key, kind="def", run=run))


def _inplace(family: str, ty: T.PtxType, arity: int) -> None:
    meth = getattr(KernelBuilder, "i" + family)

    def run(ctx, p, guard):
        dst = ctx.get(ty, p[0], writable=True)
        srcs = [ctx.u32(p[k + 1], ty.bits) if family in ("shl", "shr") else ctx.src(ty, p[k + 1])
                for k in range(arity)]
        meth(ctx.kb, dst, *srcs, pred=guard)

    _ENTRIES.append(Entry(key=f"i{family}.{ty.name}", kind="inplace", run=run))


# simplest first: hypothesis shrinks a sampled key towards the first entry
for _ty in (T.u32, T.f32, T.s32, T.u64, T.s64, T.f64, T.u16, T.s16) + _HALF:
    for _fam in ("add", "sub", "mul", "min", "max"):
        _arith(_fam, _ty, 2)
for _ty in _F + _HALF:
    _arith("fma", _ty, 3)
for _ty in _INTS + _F:
    _arith("mad", _ty, 3)
    _arith("div", _ty, 2)
for _ty in _INTS:
    _arith("rem", _ty, 2)
    _arith("mul", _ty, 2, "hi", mode="hi")
    _arith("mad", _ty, 3, "hi", mode="hi")
for _ty in _WIDE:
    _arith("mul", _ty, 2, "wide", mode="wide")
    _arith("mad", _ty, 3, "wide", mode="wide")
for _ty in _SIGNED + _F + _HALF:
    _arith("abs", _ty, 1)
    _arith("neg", _ty, 1)
for _ty in _F:
    for _fam in ("sqrt", "rcp", "rsqrt"):
        _arith(_fam, _ty, 1)
    _arith("add", _ty, 2, "rz", rnd="rz")
    _arith("fma", _ty, 3, "rm", rnd="rm")
    _arith("div", _ty, 2, "rp", rnd="rp")
for _fam in ("ex2", "lg2", "sin", "cos"):
    _arith(_fam, T.f32, 1)
for _ty in (T.f16, T.f16x2):
    _arith("ex2", _ty, 1)
_arith("div", T.f32, 2, "approx", mode="approx")
_arith("div", T.f32, 2, "full", mode="full")
_arith("sqrt", T.f32, 1, "approx", mode="approx")
_arith("rcp", T.f32, 1, "approx", mode="approx")
_arith("add", T.f32, 2, "ftz", ftz=True)
_arith("mul", T.f32, 2, "sat", sat=True)
_arith("add", T.s32, 2, "sat", sat=True)
for _ty in (T.pred,) + _BITS + _INTS:
    for _fam in ("and", "or", "xor"):
        _arith(_fam, _ty, 2)
    _arith("not", _ty, 1)
for _ty in _BITS + _INTS:
    _arith("cnot", _ty, 1)
    _arith("shl", _ty, 2)
    _arith("shr", _ty, 2)
for _ty in (T.b32, T.b64) + _I32 + _I64:
    _arith("popc", _ty, 1)
    _arith("clz", _ty, 1)
    _arith("brev", _ty, 1)
for _ty in _I32 + _I64:
    _arith("bfe", _ty, 3)
for _ty in (T.b32, T.b64):
    _arith("bfi", _ty, 4)
_ENTRIES.extend(bit_entries())

for _ty in (T.u32, T.f32, T.s32, T.u64, T.f64):
    for _fam in ("add", "sub", "mul", "min", "max"):
        _inplace(_fam, _ty, 1)
for _ty in (T.f32, T.f64):
    _inplace("fma", _ty, 2)
    _inplace("div", _ty, 1)
for _ty in (T.u32, T.s32, T.u64, T.s64):
    _inplace("mad", _ty, 2)
    _inplace("rem", _ty, 1)
for _ty in (T.u32, T.b32, T.u64, T.b64):
    for _fam in ("and", "or", "xor", "shl", "shr"):
        _inplace(_fam, _ty, 1)


# --- carry chains ----------------------------------------------------------------------------

def _carry(kind: str, ty: T.PtxType) -> None:
    def run(ctx, p, guard):
        kb = ctx.kb
        a = [ctx.get(ty, p[k]) for k in range(4)]
        length = 2 + p[3] % 3
        outs = []
        if kind == "add":
            outs.append(kb.add_cc(a[0], a[1], pred=guard))
            for k in range(1, length):
                outs.append(kb.addc(a[k % 4], a[(k + 1) % 4], cc=k < length - 1, pred=guard))
        elif kind == "sub":
            outs.append(kb.sub_cc(a[0], a[1], pred=guard))
            for k in range(1, length):
                outs.append(kb.subc(a[k % 4], a[(k + 1) % 4], cc=k < length - 1, pred=guard))
        else:
            outs.append(kb.mad_cc(a[0], a[1], a[2], hi=bool(p[0] & 1), pred=guard))
            for k in range(1, length):
                outs.append(kb.madc(a[k % 4], a[(k + 1) % 4], a[(k + 2) % 4], hi=bool(p[k % 4] & 1),
                                    cc=k < length - 1, pred=guard))
        ctx.add(tuple(outs))

    _ENTRIES.append(Entry(key=f"carry.{kind}.{ty.name}", kind="def", run=run))


for _ty in (T.u32, T.u64, T.s32, T.s64):
    for _kind in ("add", "sub", "mad"):
        _carry(_kind, _ty)


# --- compare, select, convert, move ------------------------------------------------------------

def _setp(ty: T.PtxType, form: str) -> None:
    def run(ctx, p, guard):
        cmps = isa.comparisons_for(ty)
        cmp = cmps[p[2] % len(cmps)]
        a, b = ctx.get(ty, p[0]), ctx.src(ty, p[1])
        if form == "combine":
            c = ctx.get(T.pred, p[3])
            ctx.add(ctx.kb.setp(cmp, a, b, combine=(("and", "or", "xor")[p[3] % 3], c), pred=guard))
        elif form == "both":
            ctx.add(ctx.kb.setp(cmp, a, b, both=True, pred=guard))
        else:
            ctx.add(ctx.kb.setp(cmp, a, b, ftz=(ty is T.f32 and p[3] % 2 == 1), pred=guard))

    _ENTRIES.append(Entry(key=f"setp.{form}.{ty.name}", kind="def", run=run))


for _ty in _BITS + _INTS + _F + (T.f16, T.bf16):
    _setp(_ty, "plain")
for _ty in (T.u32, T.f32, T.s64, T.f64):
    _setp(_ty, "combine")
    _setp(_ty, "both")


def _selp(ty: T.PtxType) -> None:
    def run(ctx, p, guard):
        ctx.add(ctx.kb.selp(ctx.get(ty, p[0]), ctx.src(ty, p[1]), ctx.get(T.pred, p[2]), pred=guard))

    _ENTRIES.append(Entry(key=f"selp.{ty.name}", kind="def", run=run))


for _ty in _BITS + _INTS + _F + _HALF:
    _selp(_ty)


def _cvt_rnd(src: T.PtxType, to: T.PtxType, pick: int):
    if src.is_float and to.is_int:
        return isa.ROUNDING_INT[pick % 4]
    if src.is_float and to is src:
        return isa.ROUNDING_INT[pick % 4]
    if (src.is_int and to.is_float) or (src.is_float and to.is_float and to.bits < src.bits):
        return isa.ROUNDING_FLOAT[pick % 4]
    return None


def _cvt(to: T.PtxType, src: T.PtxType) -> None:
    def run(ctx, p, guard):
        a = ctx.get(src, p[0])
        rnd = _cvt_rnd(src, to, p[1]) if p[1] % 3 else None
        if src is to and rnd is None:
            rnd = "rni"
        # no .sat from .bf16: ptxas refuses it while the builder accepts it (reported bug)
        sat = p[2] % 4 == 0 and to.is_int and src is not T.bf16
        try:  # rounding and .sat are optional: where the builder refuses them, convert plainly
            out = ctx.kb.cvt(a, to.name, rnd=rnd, sat=sat, pred=guard)
        except BuildError:
            out = ctx.kb.cvt(a, to.name, rnd="rni" if src is to else None, pred=guard)
        ctx.add(out)

    _ENTRIES.append(Entry(key=f"cvt.{to.name}.{src.name}", kind="def", run=run))


for _to in _NUMERIC:
    for _src in _NUMERIC:
        if _to is not _src or _to.is_float:
            _cvt(_to, _src)


def _mov(ty: T.PtxType) -> None:
    def run(ctx, p, guard):
        ctx.add(ctx.kb.mov(ctx.get(ty, p[0]), pred=guard))

    def const(ctx, p, guard):
        value = (p[0] % 17) * 0.25 - 1.0 if ty.is_float else p[0] % 61
        ctx.add(ctx.kb.mov(value, type=ty.name, pred=guard))

    _ENTRIES.append(Entry(key=f"mov.{ty.name}", kind="def", run=run))
    if ty is not T.b128 and ty is not T.pred:
        _ENTRIES.append(Entry(key=f"const.{ty.name}", kind="def", run=const))


for _ty in (T.pred,) + _BITS + _INTS + _F + _HALF + (T.b128,):
    _mov(_ty)


def _assign(ty: T.PtxType) -> None:
    def run(ctx, p, guard):
        ctx.kb.assign(ctx.get(ty, p[0], writable=True), ctx.src(ty, p[1]), pred=guard)

    _ENTRIES.append(Entry(key=f"assign.{ty.name}", kind="inplace", run=run))


for _ty in (T.u32, T.f32, T.u64, T.f64, T.pred):
    _assign(_ty)

_PACKS = ((T.u32, 2, T.u64), (T.u32, 2, T.b64), (T.u32, 4, T.b128), (T.u64, 2, T.b128),
          (T.u16, 2, T.u32), (T.b16, 2, T.b32), (T.f32, 2, T.b64))


def _pack(part: T.PtxType, n: int, to: T.PtxType) -> None:
    def run(ctx, p, guard):
        parts = tuple(ctx.get(part, p[k % 4] + k) for k in range(n))
        ctx.add(ctx.kb.pack(parts, to.name, pred=guard))

    def unpack(ctx, p, guard):
        ctx.add(ctx.kb.unpack(ctx.get(to, p[0]), n, type=part.name, pred=guard))

    _ENTRIES.append(Entry(key=f"pack.{to.name}.{n}x{part.name}", kind="def", run=run))
    _ENTRIES.append(Entry(key=f"unpack.{to.name}.{n}x{part.name}", kind="def", run=unpack))


for _row in _PACKS:
    _pack(*_row)


# --- memory ------------------------------------------------------------------------------------

def _ld(ty: T.PtxType, vec: int) -> None:
    def run(ctx, p, guard):
        flag = p[1] % 4
        out = ctx.kb.ld(ctx.ptr, type=ty.name, space="global", offset=ctx.offset(p[0]), vec=vec,
                        volatile=flag == 1, nc=flag == 2, pred=guard)
        ctx.add(out)

    _ENTRIES.append(Entry(key=f"ld{'.v%d' % vec if vec > 1 else ''}.{ty.name}", kind="def",
                          run=run))


def _st(ty: T.PtxType, vec: int) -> None:
    def run(ctx, p, guard):
        vals = tuple(ctx.get(ty, p[k % 4] + k) for k in range(vec))
        if vec == 1 and ty not in _NO_IMM and p[1] % 7 == 6:
            vals = ((p[2] % 17) * 0.5 if ty.is_float else p[2] % 61,)
        ctx.kb.st(ctx.ptr, vals if vec > 1 else vals[0], type=ty.name, space="global",
                  offset=ctx.offset(p[0]), volatile=p[3] % 4 == 1, pred=guard)

    _ENTRIES.append(Entry(key=f"st{'.v%d' % vec if vec > 1 else ''}.{ty.name}", kind="nodef",
                          run=run))


for _ty in _MEM:
    _ld(_ty, 1)
    _st(_ty, 1)
    if _ty.bits <= 64 and _ty is not T.b128:
        _ld(_ty, 2)
        _st(_ty, 2)
    if _ty.bits <= 32:
        _ld(_ty, 4)
        _st(_ty, 4)


def _array_ops(space: str, ty: T.PtxType) -> None:
    size = _size(ty)

    def st(ctx, p, guard):
        arr = ctx.array(space, ty)
        ctx.kb.st(arr, ctx.get(ty, p[1]), offset=(p[0] % 64) * size, pred=guard)

    def ld(ctx, p, guard):
        arr = ctx.array(space, ty)
        ctx.add(ctx.kb.ld(arr, offset=(p[0] % 64) * size, pred=guard))

    def ptr(ctx, p, guard):
        arr = ctx.array(space, ty)
        q = ctx.kb.elem_ptr(arr, ctx.get(T.u32, p[0]))
        ctx.kb.st(q, ctx.get(ty, p[1]), pred=guard)
        ctx.add(ctx.kb.ld(q, offset=size * (p[2] % 4), pred=guard))

    _ENTRIES.append(Entry(key=f"{space}.st.{ty.name}", kind="nodef", run=st))
    _ENTRIES.append(Entry(key=f"{space}.ld.{ty.name}", kind="def", run=ld))
    _ENTRIES.append(Entry(key=f"{space}.ptr.{ty.name}", kind="def", run=ptr))


for _space in ("shared", "local"):
    for _ty in (T.f32, T.u32, T.f64, T.u64, T.u16, T.s8, T.f16, T.b128):
        _array_ops(_space, _ty)


@_entry("const.ld.u32")
def _const_ld(ctx, p, guard):
    key = ("const", T.u32)
    if key not in ctx.arrays:
        ctx.arrays[key] = ctx.kb.const_array(f"lut_{ctx.kb.name}", "u32", [1, 2, 4, 8, 16, 32, 64, 128])
    ctx.add(ctx.kb.ld(ctx.arrays[key], offset=4 * (p[0] % 8), pred=guard))


@_entry("elem_ptr.global")
def _elem_ptr(ctx, p, guard):
    q = ctx.kb.elem_ptr(ctx.ptr, ctx.get((T.u32, T.s32, T.u64)[p[1] % 3], p[0]), elem="f32")
    ctx.add(ctx.kb.ld(q, type="f32", space="global", pred=guard))


@_entry("cvta.generic")
def _cvta_generic(ctx, p, guard):
    kb = ctx.kb
    space = ("shared", "global", "local")[p[0] % 3]
    if space == "global":
        g = kb.cvta(ctx.ptr, "global", to_generic=True, pred=guard)
    else:
        g = kb.cvta(kb.address_of(ctx.array(space, T.f32)), space, to_generic=True, pred=guard)
    ctx.add(kb.ld(g, type="f32", offset=4 * (p[1] % 16), pred=guard))


_ATOM = {
    "add": (T.u32, T.s32, T.u64, T.f32, T.f64, T.f16x2, T.f16, T.bf16, T.bf16x2),
    "min": (T.u32, T.s32, T.u64, T.s64), "max": (T.u32, T.s32, T.u64, T.s64),
    "inc": (T.u32,), "dec": (T.u32,),
    "exch": (T.u32, T.u64, T.f32), "cas": (T.u32, T.u64),
    "and": (T.u32, T.u64), "or": (T.u32, T.b64), "xor": (T.b32, T.u64),
}


def _atomic(family: str, op: str, ty: T.PtxType, space: str) -> None:
    def run(ctx, p, guard):
        kb = ctx.kb
        if space == "shared":
            addr = ctx.array("shared", ty) if ty in (T.f32, T.u32, T.f64, T.u64) else None
            if addr is None:
                return
            kw = {"offset": _size(ty) * (p[0] % 64)}
        else:
            addr, kw = ctx.ptr, {"space": "global", "offset": ctx.offset(p[0])}
        order = (None, "relaxed.gpu", "cta", "acq_rel.sys")[p[3] % 4]
        if family == "red" and order == "acq_rel.sys":
            order = "release.gpu"
        bitwise = op in ("exch", "cas", "and", "or", "xor")  # .bN: integer immediates only
        operand = ctx.get if bitwise and ty.is_float else ctx.src
        val = operand(ty, p[1])
        if family == "atom":
            if op == "cas":
                val = (operand(ty, p[2]), val)
            ctx.add(kb.atom(op, addr, val, type=ty.name, order=order, pred=guard, **kw))
        else:
            kb.red(op, addr, val, type=ty.name, order=order, pred=guard, **kw)

    _ENTRIES.append(Entry(key=f"{family}.{space}.{op}.{ty.name}",
                          kind="def" if family == "atom" else "nodef",
                          run=run))


for _op, _tys in _ATOM.items():
    for _ty in _tys:
        _atomic("atom", _op, _ty, "global")
        if _op != "cas" and _op != "exch":
            _atomic("red", _op, _ty, "global")
        if _ty in (T.u32, T.f32, T.u64) and _op in ("add", "cas", "exch", "min"):
            _atomic("atom", _op, _ty, "shared")


@_entry("bar.sync", "nodef")
def _bar(ctx, p, guard):
    ctx.kb.bar_sync(0, pred=guard)


@_entry("membar", "nodef")
def _membar(ctx, p, guard):
    ctx.kb.membar(("cta", "gl", "sys")[p[0] % 3], pred=guard)


@_entry("fence", "nodef")
def _fence(ctx, p, guard):
    ctx.kb.fence(("sc", "acq_rel")[p[0] % 2], ("cta", "gpu", "sys")[p[1] % 3], pred=guard)


def _shfl(mode: str, ty: T.PtxType) -> None:
    def run(ctx, p, guard):
        kb, a = ctx.kb, ctx.get(ty, p[0])
        if mode == "pred":
            ctx.add(kb.shfl_sync(("up", "down", "bfly", "idx")[p[1] % 4], a, ctx.u32(p[2]), 31,
                                 with_pred=True, pred=guard))
        else:
            fn = getattr(kb, f"shfl_{mode}")
            ctx.add(fn(a, ctx.u32(p[1]), width=(32, 16, 8)[p[2] % 3], pred=guard))

    _ENTRIES.append(Entry(key=f"shfl.{mode}.{ty.name}", kind="def", run=run))


for _ty in (T.u32, T.f32, T.s32, T.b32):
    for _mode in ("down", "up", "bfly", "idx", "pred"):
        _shfl(_mode, _ty)


def _vote(mode: str) -> None:
    def run(ctx, p, guard):
        ctx.add(ctx.kb.vote_sync(mode, ctx.get(T.pred, p[0]), pred=guard))

    _ENTRIES.append(Entry(key=f"vote.{mode}", kind="def", run=run))


for _mode in ("all", "any", "uni", "ballot"):
    _vote(_mode)


@_entry("activemask")
def _activemask(ctx, p, guard):
    ctx.add(ctx.kb.activemask(pred=guard))


def _redux(op: str, ty: T.PtxType) -> None:
    def run(ctx, p, guard):
        ctx.add(ctx.kb.redux_sync(op, ctx.get(ty, p[0]), pred=guard))

    _ENTRIES.append(Entry(key=f"redux.{op}.{ty.name}", kind="def", run=run))


for _op in ("add", "min", "max", "and", "or", "xor"):
    for _ty in (T.u32, T.s32):
        _redux(_op, _ty)


def _special(name: str) -> None:
    def run(ctx, p, guard):
        ctx.add(ctx.kb.special(name))

    _ENTRIES.append(Entry(key=f"special.{name}", kind="def", run=run))


for _name in SPECIAL_REGISTERS:
    _special(_name)


@_entry("global_id")
def _global_id(ctx, p, guard):
    ctx.add(ctx.kb.global_id(("x", "y", "z")[p[0] % 3]))


@_entry("call")
def _call(ctx, p, guard):
    if not ctx.funcs:
        return
    fb, ptypes = ctx.funcs[p[0] % len(ctx.funcs)]
    args = [ctx.get(ty, p[(k + 1) % 4] + k) for k, ty in enumerate(ptypes)]
    ctx.add(ctx.kb.call(fb, *args, ctx.ptr, uni=bool(p[3] % 2)))


_ENTRIES.extend(tensor_entries())

#: Every entry, keyed by name, in catalogue order (simplest first).
CATALOGUE: dict = {}
for _e in _ENTRIES:
    if _e.key in CATALOGUE:  # pragma: no cover - a catalogue bug
        raise PtxforgeError(f"duplicate catalogue key {_e.key}")
    CATALOGUE[_e.key] = _e
ENTRIES: tuple = tuple(CATALOGUE.values())


def _probe_one(entry: Entry, target: str, picks: tuple) -> Optional[str]:
    """None when the builder accepts ``entry`` on ``target`` with ``picks``, else why not."""
    from ptxforge.dsl.builder import ModuleBuilder

    mb = ModuleBuilder(target=target)
    try:
        kb = mb.kernel("probe")   # in a kernel (a tagged global pointer) and in a .func
        entry.run(_Ctx(kb, kb.load_param(kb.param_ptr("data", "b128")), [], 0), picks, None)
        fb = mb.func("probe_f", params=[("ptr", "u64")])
        entry.run(_Ctx(fb, fb.load_param("ptr"), [], 0), picks, None)
        mb.build()
    except PtxforgeError as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return None


@functools.lru_cache(maxsize=None)
def _probe(target: str) -> tuple:
    ok, excluded = [], []
    for e in ENTRIES:
        why = _probe_one(e, target, (0, 1, 2, 3)) or _probe_one(e, target, (5, 6, 7, 9))
        (excluded.append((e.key, why)) if why else ok.append(e.key))
    return tuple(ok), tuple(excluded)


def available_entries(target: str) -> tuple:
    """Keys of the entries the builder accepts on ``target`` (probed once, cached)."""
    return _probe(target)[0]


def excluded_entries(target: str) -> tuple:
    """(key, reason) for the catalogue entries the builder refuses on ``target``."""
    return _probe(target)[1]
