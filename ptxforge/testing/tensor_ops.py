"""Catalogue entries for the tensor-core and asynchronous-copy ops of
:mod:`ptxforge.dsl.tensor` and :mod:`ptxforge.dsl.async_copy` (mma, ldmatrix / stmatrix,
cp.async and its groups, cp.async.bulk, wgmma, setmaxnreg), in the form of
:mod:`ptxforge.testing.ops`.  Private: use :mod:`ptxforge.testing.strategies`.

Fragments are drawn from the pools (``.b32`` for A and B, the accumulator type for C), so the
generated mma reads values the kernel computed; the targets that lack a form drop its entry
when the catalogue is probed.
"""

from __future__ import annotations

from ptxforge.dsl.async_copy import entry_register_ceiling
from ptxforge.dsl.tensor import MMA_FORMS
from ptxforge.ptx import types as T

from .ctx import Entry

__all__ = ["tensor_entries"]

_ACC = {"f32": T.f32, "f16": T.f16x2, "s32": T.s32, "f64": T.f64}


def _distinct(ctx, ty, count: int, pick: int, writable: bool = False) -> tuple:
    """``count`` different live values of type ``ty`` (fresh ones when the pool runs short)."""
    pool = [v for v in ctx.pools.get(ty, []) if not writable or v.name not in ctx.readonly]
    out = []
    for k in range(len(pool)):
        v = pool[(pick + k) % len(pool)]
        if v not in out:
            out.append(v)
        if len(out) == count:
            return tuple(out)
    while len(out) < count:
        out.append(ctx.fresh(ty, pick + len(out)))
    return tuple(out)


def _mma(shape: str, atype: str, dtype: str, inplace: bool) -> Entry:
    na, nb, nc, _ = MMA_FORMS[(shape, atype)]
    ab = T.f64 if atype == "f64" else T.b32
    ncr = nc // 2 if dtype == "f16" else nc

    def run(ctx, p, guard):
        a = _distinct(ctx, ab, na, p[0])
        b = _distinct(ctx, ab, nb, p[1])
        c = _distinct(ctx, _ACC[dtype], ncr, p[2], writable=inplace)
        if inplace:
            ctx.kb.imma(c, a, b, shape=shape, atype=atype, dtype=dtype, pred=guard)
        else:
            ctx.add(tuple(ctx.kb.mma(a, b, c, shape=shape, atype=atype, dtype=dtype, pred=guard)))

    prefix = "imma" if inplace else "mma"
    return Entry(key=f"{prefix}.{shape}.{dtype}.{atype}", kind="inplace" if inplace else "def",
                 run=run)


def _ldmatrix(num: int, trans: bool) -> Entry:
    def run(ctx, p, guard):
        kb = ctx.kb
        tile = kb.address_of(ctx.array("shared", T.b16))
        ctx.add(tuple(kb.ldmatrix(tile, num, trans=trans, offset=16 * (p[0] % 4), pred=guard)))

    return Entry(key=f"ldmatrix.x{num}{'.trans' if trans else ''}", kind="def", run=run)


def _stmatrix(num: int, trans: bool) -> Entry:
    def run(ctx, p, guard):
        kb = ctx.kb
        tile = kb.address_of(ctx.array("shared", T.b16))
        kb.stmatrix(tile, _distinct(ctx, T.b32, num, p[0]), trans=trans,
                    offset=16 * (p[1] % 4), pred=guard)

    return Entry(key=f"stmatrix.x{num}{'.trans' if trans else ''}", kind="nodef", run=run)


def _cp_async(size: int, cache: str) -> Entry:
    def run(ctx, p, guard):
        kb = ctx.kb
        tile = ctx.array("shared", T.f32)
        dst = kb.address_of(tile)
        kb.cp_async(dst, ctx.ptr, size, cache=cache, pred=guard)
        if p[0] % 2:
            kb.cp_async_commit()
            kb.cp_async_wait(p[1] % 2)

    return Entry(key=f"cp.async.{cache}.{size}", kind="nodef", run=run)


def _cp_async_bulk(direction: str) -> Entry:
    def run(ctx, p, guard):
        kb = ctx.kb
        tile = kb.address_of(ctx.array("shared", T.f32))
        size = 16 * (p[0] % 4 + 1)
        if direction == "g2s":
            bar = kb.address_of(ctx.array("shared", T.b64))
            kb.cp_async_bulk(tile, ctx.ptr, size, mbar=bar, pred=guard)
        else:
            kb.cp_async_bulk(ctx.ptr, tile, size, pred=guard)
            kb.cp_async_bulk_commit()
            kb.cp_async_bulk_wait(p[1] % 2)

    return Entry(key=f"cp.async.bulk.{direction}", kind="nodef", run=run)


def _wgmma(n: int, atype: str) -> Entry:
    def run(ctx, p, guard):
        kb = ctx.kb
        ety = T.f32 if atype == "tf32" else T.f16
        da = kb.wgmma_desc(kb.address_of(ctx.array("shared", ety)), lbo=128, sbo=256)
        db = kb.wgmma_desc(kb.address_of(ctx.array("shared", ety)), lbo=16 * (p[0] % 8 + 1),
                           sbo=256)
        acc = _distinct(ctx, T.f32, n // 2, p[1], writable=True)
        kb.wgmma_fence()
        kb.iwgmma(acc, da, db, n=n, atype=atype, scale_d=p[2] % 2)
        kb.wgmma_commit()
        kb.wgmma_wait(p[3] % 2)

    return Entry(key=f"wgmma.m64n{n}.{atype}", kind="inplace", run=run)


def _setmaxnreg(ctx, p, guard):
    # ptxas refuses a .dec above the kernel's largest .inc count (else its entry budget):
    # raises go to 64 .. 256 and lowerings to 24 .. 64, within the entry budget
    inc = bool(p[1] % 2)
    count = 64 + 8 * (p[0] % 25) if inc else 24 + 8 * (p[0] % 6)
    ceiling = entry_register_ceiling(ctx.kb._directives, ctx.kb.target)
    if not inc and ceiling is not None:
        count = min(count, ceiling // 8 * 8)
    ctx.kb.setmaxnreg(count, inc=inc)


def tensor_entries() -> list:
    """Every tensor-core and async-copy entry, simplest first."""
    out = [_cp_async(size, "ca") for size in (4, 8, 16)] + [_cp_async(16, "cg")]
    out += [_ldmatrix(num, trans) for num in (1, 2, 4) for trans in (False, True)]
    for (shape, atype), form in MMA_FORMS.items():
        for dtype in form[3]:
            out += [_mma(shape, atype, dtype, False), _mma(shape, atype, dtype, True)]
    out += [_stmatrix(num, trans) for num in (1, 2, 4) for trans in (False, True)]
    out += [_cp_async_bulk("g2s"), _cp_async_bulk("s2g")]
    out += [_wgmma(8, "f16"), _wgmma(16, "bf16"), _wgmma(8, "tf32")]
    out.append(Entry(key="setmaxnreg", kind="nodef", run=_setmaxnreg))
    return out
