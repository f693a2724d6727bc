"""Catalogue entries for the bit-twiddling ops of :mod:`ptxforge.dsl.bits` (prmt, lop3,
shf, dp4a/dp2a, sad, bfind, fns, mul24/mad24, szext, bmsk, copysign, testp), in the form of
:mod:`ptxforge.testing.ops`.  Private: use :mod:`ptxforge.testing.strategies`.

Immediates are drawn inside the ranges the builder accepts (selectors, truth tables, shift
amounts), so every entry builds; amounts from registers are whatever the pool holds.
"""

from __future__ import annotations

import itertools

from ptxforge.dsl.bits import PRMT_MODES, TESTP_CLASSES
from ptxforge.ptx import types as T

from .ctx import Entry

__all__ = ["bit_entries"]

_I32 = (T.u32, T.s32)
_I64 = (T.u64, T.s64)
_INTS = _I32 + _I64 + (T.u16, T.s16)
# Bitwise functions for lop3's callable form (their tables: 0x80, 0x96, 0xca, 0xe8, 0x1a).
_LUT_FUNCTIONS = (lambda a, b, c: a & b & c, lambda a, b, c: a ^ b ^ c,
                  lambda a, b, c: (a & b) | (~a & c), lambda a, b, c: (a & b) | (a & c) | (b & c),
                  lambda a, b, c: (a & b | c) ^ a)


def _amount(ctx, pick: int, mode: str):
    """A shift/width amount: an immediate the mode accepts, or a live .u32 value."""
    return ctx.u32(pick, 33 if mode == "clamp" else 32)


def _prmt(ty: T.PtxType, mode):
    def run(ctx, p, guard):
        if p[2] % 2:
            sel = ctx.get(T.u32, p[2])
        else:
            sel = (p[2] * 0x1357) & 0xFFFF if mode is None else p[2] % 4
        ctx.add(ctx.kb.prmt(ctx.get(ty, p[0]), ctx.src(ty, p[1]), sel, mode=mode, pred=guard))

    return Entry(key=".".join(x for x in ("prmt", mode, ty.name) if x), kind="def", run=run)


def _lop3(ty: T.PtxType, callable_lut: bool):
    def run(ctx, p, guard):
        lut = _LUT_FUNCTIONS[p[3] % len(_LUT_FUNCTIONS)] if callable_lut else p[3] % 256
        ctx.add(ctx.kb.lop3(ctx.get(ty, p[0]), ctx.src(ty, p[1]), ctx.get(ty, p[2]), lut,
                            pred=guard))

    return Entry(key=f"lop3{'.fn' if callable_lut else ''}.{ty.name}", kind="def", run=run)


def _shf(direction: str, mode: str, ty: T.PtxType):
    def run(ctx, p, guard):
        fn = ctx.kb.shf_l if direction == "l" else ctx.kb.shf_r
        ctx.add(fn(ctx.get(ty, p[0]), ctx.src(ty, p[1]), _amount(ctx, p[2], mode), mode=mode,
                   pred=guard))

    return Entry(key=f"shf.{direction}.{mode}.{ty.name}", kind="def", run=run)


def _dot(family: str, mode, at: T.PtxType, bt: T.PtxType, inplace: bool = False):
    acc_ty = T.u32 if at is T.u32 and bt is T.u32 else T.s32

    def run(ctx, p, guard):
        kb, a, b = ctx.kb, ctx.get(at, p[0]), ctx.src(bt, p[1])
        if inplace:
            getattr(kb, "i" + family)(ctx.get(acc_ty, p[2], writable=True), a, b, mode=mode,
                                      btype=bt.name, pred=guard)
        else:
            ctx.add(getattr(kb, family)(a, b, ctx.src(acc_ty, p[2]), mode=mode, btype=bt.name,
                                        pred=guard))

    key = ".".join(x for x in ("i" + family if inplace else family, mode, at.name, bt.name) if x)
    return Entry(key=key, kind="inplace" if inplace else "def", run=run)


def _simple(family: str, ty: T.PtxType, arity: int, suffix: str = "", **kw):
    """An op whose sources all have the instruction type (sad, mul24, mad24, copysign)."""
    def run(ctx, p, guard):
        srcs = [ctx.get(ty, p[0])] + [ctx.src(ty, p[k]) for k in range(1, arity)]
        ctx.add(getattr(ctx.kb, family)(*srcs, pred=guard, **kw))

    return Entry(key=".".join(x for x in (family, suffix, ty.name) if x), kind="def", run=run)


def _inplace(family: str, ty: T.PtxType, **kw):
    def run(ctx, p, guard):
        getattr(ctx.kb, "i" + family)(ctx.get(ty, p[0], writable=True), ctx.get(ty, p[1]),
                                      ctx.src(ty, p[2]), pred=guard, **kw)

    return Entry(key=f"i{family}.{ty.name}", kind="inplace", run=run)


def _bfind(ty: T.PtxType, shiftamt: bool):
    def run(ctx, p, guard):
        ctx.add(ctx.kb.bfind(ctx.get(ty, p[0]), shiftamt=shiftamt, pred=guard))

    return Entry(key=f"bfind{'.shiftamt' if shiftamt else ''}.{ty.name}", kind="def", run=run)


def _fns(ctx, p, guard):
    base = p[1] % 32 if p[1] % 2 == 0 else ctx.get(T.u32, p[1])
    offset = (p[2] % 9) - 4 if p[2] % 2 == 0 else ctx.get(T.s32, p[2])
    ctx.add(ctx.kb.fns(ctx.get(T.b32, p[0]), base, offset, pred=guard))


def _szext(mode: str, ty: T.PtxType):
    def run(ctx, p, guard):
        ctx.add(ctx.kb.szext(ctx.get(ty, p[0]), _amount(ctx, p[1], mode), mode=mode, pred=guard))

    return Entry(key=f"szext.{mode}.{ty.name}", kind="def", run=run)


def _bmsk(mode: str):
    def run(ctx, p, guard):
        ctx.add(ctx.kb.bmsk(_amount(ctx, p[0], mode), _amount(ctx, p[1], mode), mode=mode,
                            pred=guard))

    return Entry(key=f"bmsk.{mode}.b32", kind="def", run=run)


def _testp(cls: str, ty: T.PtxType):
    def run(ctx, p, guard):
        ctx.add(ctx.kb.testp(cls, ctx.get(ty, p[0]), pred=guard))

    return Entry(key=f"testp.{cls}.{ty.name}", kind="def", run=run)


def bit_entries() -> list:
    """Every bit-twiddling entry, simplest first."""
    out = [_lop3(T.b32, False), _lop3(T.u32, True), _prmt(T.b32, None), _prmt(T.u32, None)]
    out += [_prmt(T.b32, mode) for mode in PRMT_MODES]
    out += [_shf(d, m, ty) for d in ("l", "r") for m in ("clamp", "wrap") for ty in (T.b32, T.u32)]
    for at, bt in itertools.product(_I32, _I32):
        out.append(_dot("dp4a", None, at, bt))
        out += [_dot("dp2a", m, at, bt) for m in ("lo", "hi")]
    out += [_dot("dp4a", None, T.s32, T.s32, True), _dot("dp2a", "hi", T.u32, T.u32, True)]
    out += [_simple("sad", ty, 3) for ty in _INTS]
    out += [_inplace("sad", ty) for ty in (T.u32, T.s64)]
    out += [_bfind(ty, s) for ty in _I32 + _I64 for s in (False, True)]
    out.append(Entry(key="fns.b32", kind="def", run=_fns))
    for ty in _I32:
        for m in ("lo", "hi"):
            out += [_simple("mul24", ty, 2, m, mode=m), _simple("mad24", ty, 3, m, mode=m)]
    out += [_simple("mad24", T.s32, 3, "hi.sat", mode="hi", sat=True),
            _inplace("mad24", T.u32, mode="hi")]
    out += [_szext(m, ty) for m in ("clamp", "wrap") for ty in _I32]
    out += [_bmsk(m) for m in ("clamp", "wrap")]
    out += [_simple("copysign", ty, 2) for ty in (T.f32, T.f64)]
    out += [_testp(cls, ty) for cls in TESTP_CLASSES for ty in (T.f32, T.f64)]
    return out
