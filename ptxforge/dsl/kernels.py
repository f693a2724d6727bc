"""Ready-made kernels written with the builder, used by examples, tests, launch code and
benchmarks.  Each function returns an :class:`ptxforge.ptx.ir.Module` holding one ``.entry``.

Example::

    >>> from ptxforge.dsl import kernels

    >>> from ptxforge import emit
    >>> module = kernels.saxpy(target="sm_90")
    >>> [p.name for p in module.kernel("saxpy").params]
    ['n', 'a', 'x', 'y']
"""

from __future__ import annotations

from ptxforge.errors import BuildError
from ptxforge.ptx import ir
from ptxforge.ptx import types as T

from .builder import KernelBuilder

__all__ = ["saxpy", "block_reduce_sum", "sgemm_tiled", "modadd256"]


def saxpy(target: str = "sm_80") -> ir.Module:
    """``saxpy(n: u32, a: f32, x: f32*, y: f32*)``: y[i] = a*x[i] + y[i] for i < n, one thread
    per element (launch at least n threads in a 1-D grid)."""
    kb = KernelBuilder("saxpy", target=target)
    n = kb.param("n", T.u32)
    a = kb.param("a", T.f32)
    x = kb.param_ptr("x", T.f32)
    y = kb.param_ptr("y", T.f32)
    i = kb.global_id()
    with kb.if_(kb.setp("lt", i, kb.load_param(n))):
        px = kb.elem_ptr(kb.load_param(x), i)
        py = kb.elem_ptr(kb.load_param(y), i)
        kb.st(py, kb.fma(kb.load_param(a), kb.ld(px), kb.ld(py)))
    kb.ret()
    return kb.build()


def block_reduce_sum(block: int = 256, target: str = "sm_80") -> ir.Module:
    """``block_reduce_sum(x: f32*, out: f32*, n: u32)``: out[ctaid.x] = the sum of the
    elements of x this block visits in a grid-stride loop.

    Launch with ``block`` threads per block (a multiple of 32, at most 1024) and any grid; the
    final result is ``sum(out[:grid])``.  Threads accumulate in place, reduce in their warp
    with ``shfl.sync.bfly``, write one partial per warp to shared memory, and the first warp
    reduces those with ``shfl.sync.down``.
    """
    if block % 32 or not 32 <= block <= 1024:
        raise BuildError(f"block_reduce_sum: block must be a multiple of 32 in [32, 1024], got {block}")
    nwarps = block // 32
    kb = KernelBuilder("block_reduce_sum", target=target)
    x = kb.param_ptr("x", T.f32)
    out = kb.param_ptr("out", T.f32)
    n = kb.param("n", T.u32)
    kb.maxntid(block)
    partial = kb.shared_array("warp_sums", T.f32, nwarps, align=4)

    tid = kb.tid()
    xp = kb.load_param(x)
    stride = kb.mul(kb.nctaid(), kb.ntid())
    acc = kb.mov(0.0, type=T.f32)
    with kb.loop(kb.global_id(), kb.load_param(n), stride) as i:
        kb.iadd(acc, kb.ld(kb.elem_ptr(xp, i)))
    for lanes in (16, 8, 4, 2, 1):
        kb.iadd(acc, kb.shfl_bfly(acc, lanes))

    lane = kb.and_(tid, 31)
    warp = kb.shr(tid, 5)
    with kb.if_(kb.setp("eq", lane, 0)):
        kb.st(kb.elem_ptr(partial, warp), acc)
    kb.bar_sync()

    with kb.if_(kb.setp("lt", tid, 32)):
        total = kb.mov(0.0, type=T.f32)
        with kb.if_(kb.setp("lt", tid, nwarps)):
            kb.assign(total, kb.ld(kb.elem_ptr(partial, tid)))
        delta = (1 << (nwarps - 1).bit_length()) // 2
        while delta:
            kb.iadd(total, kb.shfl_down(total, delta))
            delta //= 2
        with kb.if_(kb.setp("eq", tid, 0)):
            kb.st(kb.elem_ptr(kb.load_param(out), kb.ctaid()), total)
    kb.ret()
    return kb.build()


def sgemm_tiled(tile: int = 16, target: str = "sm_80") -> ir.Module:
    """``sgemm_tiled(A, B, C: f32*, M, N, K: u32)``: row-major C[M,N] = A[M,K] @ B[K,N].

    Launch with block (tile, tile) and grid (N/tile, M/tile).  M, N and K must be multiples
    of ``tile`` (there are no bounds checks).  Each block stages a tile of A and of B in
    shared memory, synchronises, and runs a fully unrolled inner loop of ``tile`` in-place
    FMAs into one accumulator per thread.
    """
    if tile < 1 or tile * tile > 1024:
        raise BuildError(f"sgemm_tiled: tile*tile must be in [1, 1024], got tile={tile}")
    kb = KernelBuilder("sgemm_tiled", target=target)
    a_param = kb.param_ptr("A", T.f32)
    b_param = kb.param_ptr("B", T.f32)
    c_param = kb.param_ptr("C", T.f32)
    kb.param("M", T.u32)
    n_param = kb.param("N", T.u32)
    k_param = kb.param("K", T.u32)
    kb.reqntid(tile, tile)
    a_tile = kb.shared_array("a_tile", T.f32, tile * tile, align=16)
    b_tile = kb.shared_array("b_tile", T.f32, tile * tile, align=16)

    a, b = kb.load_param(a_param), kb.load_param(b_param)
    n, k = kb.load_param(n_param), kb.load_param(k_param)
    tx, ty = kb.tid("x"), kb.tid("y")
    row = kb.mad(kb.ctaid("y"), tile, ty)
    col = kb.mad(kb.ctaid("x"), tile, tx)
    slot = kb.mad(ty, tile, tx)
    a_slot, b_slot = kb.elem_ptr(a_tile, slot), kb.elem_ptr(b_tile, slot)
    a_row = kb.elem_ptr(a_tile, kb.mul(ty, tile))
    b_col = kb.elem_ptr(b_tile, tx)
    acc = kb.mov(0.0, type=T.f32)
    # Keep the K loop rolled: ptxas would otherwise unroll it and hoist the shared loads of
    # several iterations, which takes sgemm_tiled from ~36 to ~111 registers on sm_80.
    with kb.loop(0, k, tile, unroll=False) as t:
        kb.st(a_slot, kb.ld(kb.elem_ptr(a, kb.mad(row, k, kb.add(t, tx)))))
        kb.st(b_slot, kb.ld(kb.elem_ptr(b, kb.mad(kb.add(t, ty), n, col))))
        kb.bar_sync()
        for j in range(tile):
            kb.ifma(acc, kb.ld(a_row, offset=4 * j), kb.ld(b_col, offset=4 * j * tile))
        kb.bar_sync()
    kb.st(kb.elem_ptr(kb.load_param(c_param), kb.mad(row, n, col)), acc)
    kb.ret()
    return kb.build()


def modadd256(target: str = "sm_80") -> ir.Module:
    """``modadd256(a, b, p, out: u32*, n: u32)``: for i < n, out[i] = (a[i] + b[i]) mod p[i]
    on 256-bit numbers stored as 8 little-endian u32 limbs at byte offset 32*i (16-byte
    aligned), assuming a[i], b[i] < p[i].

    The sum is an add.cc/addc carry chain (with the carry out kept in a ninth limb), then a
    trial subtraction of p with sub.cc/subc; selp keeps the sum where the subtraction
    borrowed past the ninth limb, else the difference.
    """
    kb = KernelBuilder("modadd256", target=target)
    ptrs = [kb.param_ptr(name, T.u32) for name in ("a", "b", "p", "out")]
    n = kb.param("n", T.u32)
    i = kb.global_id()
    kb.ret(pred=kb.setp("ge", i, kb.load_param(n)))
    limb = kb.shl(i, 3)
    pa, pb, pp, po = (kb.elem_ptr(kb.load_param(p), limb) for p in ptrs)

    def load8(ptr):
        return kb.ld(ptr, vec=4) + kb.ld(ptr, vec=4, offset=16)

    a, b, p = load8(pa), load8(pb), load8(pp)
    s = [kb.add_cc(a[0], b[0])] + [kb.addc(a[j], b[j], cc=True) for j in range(1, 8)]
    carry = kb.addc(0, 0, type=T.u32)
    d = [kb.sub_cc(s[0], p[0])] + [kb.subc(s[j], p[j], cc=True) for j in range(1, 8)]
    top = kb.subc(carry, 0)
    borrowed = kb.setp("ne", top, 0)
    r = [kb.selp(s[j], d[j], borrowed) for j in range(8)]
    kb.st(po, tuple(r[:4]))
    kb.st(po, tuple(r[4:]), offset=16)
    kb.ret()
    return kb.build()
