"""NVRTC-compiled corpus kernels (tests/corpus/*.cu) run on the interpreter against NumPy.

Each kernel is compiled by NVRTC for sm_80 with -lineinfo, loaded with
``load(ptx, device="emulator")`` and launched with the same call a GPU would take; the result
is compared with a NumPy reference computed independently here (float64 where the kernel sums
in float32, with a tolerance that bounds the rounding of the kernel's own order).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ptxforge.launch.loader import load
from ptxforge.ptx.parse import parse

from corpus_util import corpus_ptx

RNG = np.random.default_rng(19)
EPS32 = np.finfo(np.float32).eps


def kernel(source: str, prefix: str):
    """The corpus kernel whose (possibly mangled) name contains ``prefix``, on the emulator."""
    ptx = corpus_ptx(source, "sm_80", True)
    names = [k.name for k in parse(ptx).entries if prefix in k.name]
    assert len(names) == 1, names
    return load(ptx, device="emulator")[names[0]]


def close32(got, ref, terms=1, scale=None):
    """float32 result within ``terms`` roundings of ``ref`` (relative to ``scale``)."""
    scale = np.abs(ref) if scale is None else scale
    tol = terms * EPS32 * (scale + 1e-30)
    assert np.all(np.abs(got.astype(np.float64) - ref) <= tol), np.max(np.abs(got - ref) / tol)


# --- reductions --------------------------------------------------------------------------

def test_block_reduce_sum():
    n, grid = 3000, 5
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.full(grid, np.nan, np.float32)
    kernel("reduce", "block_reduce_sum")(x, out, n, grid=grid, block=256)
    close32(out.sum(dtype=np.float64), x.astype(np.float64).sum(), terms=n,
            scale=np.abs(x).astype(np.float64).sum())
    # each block's partial is the sum of the elements it strides over
    for b in range(grid):
        part = np.concatenate([x[s:s + 256] for s in range(b * 256, n, grid * 256)])
        close32(out[b], part.astype(np.float64).sum(), terms=part.size,
                scale=np.abs(part).astype(np.float64).sum())


def test_warp_reduce_max():
    n = 200
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(256 // 32, np.float32)
    kernel("reduce", "warp_reduce_max")(x, out, n, grid=2, block=128)
    padded = np.concatenate([x, np.full(256 - n, -3.0e38, np.float32)])
    np.testing.assert_array_equal(out, padded.reshape(-1, 32).max(axis=1))


def test_reduce_f64_atomic():
    n = 1000
    x = RNG.standard_normal(n)
    total = np.zeros(1, np.float64)
    kernel("reduce", "reduce_f64_atomic")(x, total, n, grid=4, block=256)
    assert abs(total[0] - np.sum(x * x)) <= 1e-12 * np.sum(x * x)


def test_dot_block_atomic_add():
    n = 1500
    a, b = (RNG.standard_normal(n).astype(np.float32) for _ in range(2))
    out = np.zeros(1, np.float32)
    kernel("templates", "dot_block")(a, b, out, n, grid=3, block=128)
    ref = np.dot(a.astype(np.float64), b.astype(np.float64))
    close32(out[0], ref, terms=2 * n, scale=np.abs(a * b).astype(np.float64).sum())


# --- scans and transposes ------------------------------------------------------------------

def test_block_exclusive_scan():
    n = 1000
    x = RNG.integers(-8, 8, n).astype(np.float32)  # small integers: every partial sum exact
    out = np.full(n, np.nan, np.float32)
    sums = np.zeros(2, np.float32)
    kernel("scan_transpose", "block_exclusive_scan")(x, out, sums, n, grid=2, block=256)
    for b in range(2):
        chunk = x[b * 512:(b + 1) * 512]
        np.testing.assert_array_equal(out[b * 512:b * 512 + chunk.size],
                                      np.concatenate([[0], np.cumsum(chunk)[:-1]]))
        assert sums[b] == chunk.sum()


def test_warp_inclusive_scan():
    n = 150
    x = RNG.integers(-1000, 1000, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    kernel("warp", "warp_inclusive_scan")(x, out, n, grid=3, block=64)
    padded = np.concatenate([x, np.zeros(192 - n, np.int32)]).reshape(-1, 32)
    np.testing.assert_array_equal(out, np.cumsum(padded, axis=1).ravel()[:n])


@pytest.mark.parametrize("rows,cols", [(64, 96), (40, 70)])
def test_transpose_smem(rows, cols):
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    out = np.full((cols, rows), np.nan, np.float32)
    grid = (-(-cols // 32), -(-rows // 32))
    kernel("scan_transpose", "transpose_smem")(x, out, rows, cols, grid=grid, block=(32, 8))
    np.testing.assert_array_equal(out, x.T)


# --- stencils ------------------------------------------------------------------------------

def test_stencil1d():
    n = 300
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    kernel("stencil", "stencil1d")(x, out, n, grid=3, block=128)
    w = np.array([0.05, 0.1, 0.2, 0.3, 0.2, 0.1, 0.05], np.float32).astype(np.float64)
    padded = np.concatenate([np.zeros(3), x.astype(np.float64), np.zeros(3)])
    ref = np.array([np.dot(w, padded[i:i + 7]) for i in range(n)])
    close32(out, ref, terms=8, scale=np.convolve(np.abs(padded), w[::-1], "valid"))


def test_stencil2d_5pt():
    nx, ny, c = 37, 21, 0.1
    u = RNG.standard_normal((ny, nx)).astype(np.float32)
    v = np.zeros_like(u)
    kernel("stencil", "stencil2d_5pt")(u, v, nx, ny, c, grid=(3, 3), block=(16, 8))
    U = u.astype(np.float64)
    lap = U[1:-1, :-2] + U[1:-1, 2:] + U[:-2, 1:-1] + U[2:, 1:-1] - 4 * U[1:-1, 1:-1]
    ref = U[1:-1, 1:-1] + np.float32(c) * lap
    close32(v[1:-1, 1:-1], ref, terms=8, scale=np.abs(U[1:-1, 1:-1]) + 8 * np.abs(U).max() * c)
    assert not v[0].any() and not v[-1].any() and not v[:, 0].any() and not v[:, -1].any()


def test_stencil3d_7pt_f64():
    nx, ny, nz, dt = 12, 10, 6, 0.05
    u = RNG.standard_normal((nz, ny, nx))
    v = np.zeros_like(u)
    kernel("stencil", "stencil3d_7pt")(u, v, nx, ny, nz, dt, grid=(2, 2), block=(8, 8))
    lap = (u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:] + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1]
           + u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] - 6 * u[1:-1, 1:-1, 1:-1])
    np.testing.assert_allclose(v[1:-1, 1:-1, 1:-1], u[1:-1, 1:-1, 1:-1] + dt * lap, rtol=1e-13,
                               atol=1e-13)


# --- atomics and histograms ----------------------------------------------------------------

def test_histogram256():
    n = 5000
    data = RNG.integers(0, 256, n).astype(np.uint8)
    bins = np.zeros(256, np.uint32)
    kernel("atomics", "histogram256")(data, bins, n, grid=4, block=128)
    np.testing.assert_array_equal(bins, np.bincount(data, minlength=256))


def test_atomic_mix():
    n = 300
    v = RNG.uniform(-50, 50, n).astype(np.float32)
    maxv = np.full(1, -1e30, np.float32)
    ring = np.zeros(17, np.uint32)
    minv = np.full(8, 1 << 30, np.int32)
    total = np.zeros(1, np.uint64)
    kernel("atomics", "atomic_mix")(v, maxv, ring, minv, total, n, grid=3, block=128)
    assert maxv[0] == v.max()
    assert ring[0] == n % 1024  # atomicInc wraps at 1023: n increments from 0
    # (unsigned long long)(v * 16): cvt.rzi.u64.f32 saturates negative values to 0
    assert total[0] == np.sum(np.maximum(np.trunc(v * np.float32(16)), 0).astype(np.uint64))
    # every thread took a distinct slot: slot & 7 picks its min bucket
    assert minv.min() == int(np.trunc(v).min())
    assert set(ring[1:]) <= set(range(n))


def test_warp_vote_compact():
    n, thr = 200, 0.3
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.full(n + 4, np.nan, np.float32)
    count = np.zeros(1, np.int32)
    kernel("warp", "warp_vote_compact")(x, out, count, np.float32(thr), n, grid=4, block=64)
    keep = x[x > thr]
    assert count[0] == keep.size
    np.testing.assert_array_equal(np.sort(out[:keep.size]), np.sort(keep))
    # a block whose every lane rejected writes -1 at out[n + block]; block 3's warps have lanes >= n
    all_rejected = [not np.any(np.concatenate([x, np.zeros(56)])[b * 64:(b + 1) * 64][:32] > thr)
                    for b in range(4)]
    for b in range(4):
        if all_rejected[b]:
            assert out[n + b] == -1.0


# --- elementwise, templates and bit tricks ---------------------------------------------------

@pytest.mark.parametrize("ty,dtype", [("float", np.float32), ("double", np.float64),
                                      ("int", np.int32)])
def test_map2_saxpy_functor(ty, dtype):
    n = 77
    name = {"float": "map2If", "double": "map2Id", "int": "map2Ii"}[ty]
    x = (RNG.standard_normal(n) * 100).astype(dtype)
    y = (RNG.standard_normal(n) * 100).astype(dtype)
    z = np.zeros(n, dtype)
    a = dtype(3)
    functor = np.array([a]).tobytes()  # Saxpy<T> {T a;} passed by value as .b8 bytes
    kernel("templates", name)(x, y, z, functor, n, grid=2, block=64)
    if dtype is np.int32:
        np.testing.assert_array_equal(z, (a * x + y).astype(dtype))
        return
    # NVRTC contracts a*x + y into one fma: one rounding of the exact value
    exact = [Fraction(float(a)) * Fraction(float(u)) + Fraction(float(v)) for u, v in zip(x, y)]
    ulp = np.spacing(np.abs(np.array([float(e) for e in exact], dtype)))
    assert all(abs(Fraction(float(got)) - e) <= Fraction(float(h)) / 2
               for got, e, h in zip(z, exact, ulp))


def test_int_select_cascade():
    n = 64
    mode = RNG.integers(0, 5, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    kernel("misc", "int_select_cascade")(mode, out, n, grid=1, block=64)
    a = np.select([mode == 1, mode == 2, mode == 3], [13, -7, 21], 0)
    b = np.where(mode > 2, a, 5)
    c = np.where(mode & 1, a, b)
    np.testing.assert_array_equal(out, a * 3 + b * 5 + c + 1)


def test_wide_mul_u64():
    n = 50
    a = RNG.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b = RNG.integers(0, 2**63, n, dtype=np.uint64)
    lo, hi = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    kernel("modmul256", "wide_mul_u64")(a, b, lo, hi, n, grid=1, block=64)
    prods = [int(x) * int(y) for x, y in zip(a, b)]
    assert [int(v) for v in lo] == [p % 2**64 for p in prods]
    assert [int(v) for v in hi] == [(p >> 64) + (int(x) >> 63) * 3 for p, x in zip(prods, a)]


def _limbs(values):
    return np.array([[(v >> (32 * j)) & 0xFFFFFFFF for j in range(8)] for v in values], np.uint32)


def _mul_add_row(acc, a, b):
    """The inline-PTX row of montgomery_mul256, limb by limb in Python integers."""
    m32 = 0xFFFFFFFF
    carry = 0
    for j in range(8):
        s = acc[j] + ((a[j] * b) & m32) + carry
        acc[j], carry = s & m32, s >> 32
    acc[8] = (acc[8] + carry) & m32
    carry = 0
    for j in range(8):
        s = acc[j + 1] + ((a[j] * b) >> 32) + carry
        acc[j + 1], carry = s & m32, s >> 32
    # the last madc.hi has no .cc: its carry out is dropped (acc[8] wrapped above)


def _montgomery_reference(x, y, m, m_inv):
    """montgomery_mul256's C++ algorithm (including its t[9] shortcut), in Python integers."""
    t = [0] * 10
    for k in range(8):
        _mul_add_row(t, x, y[k])
        q = (t[0] * m_inv) & 0xFFFFFFFF
        _mul_add_row(t, m, q)
        t[9] = (t[9] + (1 if t[8] < q else 0)) & 0xFFFFFFFF
        t = t[1:] + [0]
    value = sum(t[j] << (32 * j) for j in range(8))
    modulus = sum(m[j] << (32 * j) for j in range(8))
    return value if value < modulus else value - modulus  # sub_if_ge ignores t[8]


def test_montgomery_mul256():
    n = 20
    m = (1 << 255) - 19  # odd modulus
    m_inv = (-pow(m, -1, 1 << 32)) % (1 << 32)
    xs = [int(RNG.integers(0, 2**62)) ** 4 % m for _ in range(n)]
    ys = [int(RNG.integers(0, 2**62)) ** 4 % m for _ in range(n)]
    out = np.zeros((n, 8), np.uint32)
    kernel("modmul256", "montgomery_mul256")(_limbs(xs), _limbs(ys), _limbs([m]), m_inv, out, n,
                                             grid=1, block=32)
    ml = [int(v) for v in _limbs([m])[0]]
    ref = [_montgomery_reference([int(v) for v in _limbs([x])[0]],
                                 [int(v) for v in _limbs([y])[0]], ml, m_inv)
           for x, y in zip(xs, ys)]
    np.testing.assert_array_equal(out, _limbs(ref))


def test_softmax_rows():
    rows, cols = 5, 70
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    y = np.zeros_like(x)
    kernel("softmax", "softmax_rows")(x, y, rows, cols, grid=2, block=128)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("name,tile,tm", [("sgemm_4x4", 16, 4), ("sgemm_8x8", 8, 8)])
def test_sgemm_register_tile(name, tile, tm):
    m, n, k = 70, 72, 40  # not multiples of the tile: the bounds checks matter
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    span = tile * tm
    kernel("gemm", name)(a, b, c, m, n, k, grid=(-(-n // span), -(-m // span)),
                         block=(tile, tile))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    close32(c, ref, terms=k, scale=np.abs(a).astype(np.float64) @ np.abs(b))


def test_log_softmax_f64():
    rows, cols = 3, 50
    x = RNG.standard_normal((rows, cols)) * 4
    y = np.zeros_like(x)
    kernel("softmax", "log_softmax_f64")(x, y, cols, grid=rows, block=32)
    m = x.max(axis=1, keepdims=True)
    ref = x - (np.log(np.exp(x - m).sum(axis=1, keepdims=True)) + m)
    np.testing.assert_allclose(y, ref, rtol=1e-14, atol=1e-14)


def _bits_reference(x: int, n: int) -> int:
    m32 = 0xFFFFFFFF
    brev = int(f"{x:032b}"[::-1], 2)
    clz = 32 - x.bit_length()
    b = x.to_bytes(4, "little")
    perm = int.from_bytes(bytes([b[1], b[0], b[3], b[2]]), "little")
    r = brev ^ ((bin(x).count("1") << 24) & m32) ^ clz ^ perm
    funnel = ((((r << 32) | x) << 7) >> 32) & m32
    ffs = (x & -x).bit_length()
    return (r + funnel + x // (n | 1) + ffs) & m32


def test_bits_and_halves():
    n, block = 64, 32
    x = RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    x[:3] = (0, 1, 0x80000000)
    halves = RNG.standard_normal(2 * n).astype(np.float16)
    h = halves.view(np.uint32)
    out = np.zeros(n, np.uint32)
    hf = np.zeros(n, np.float32)
    kernel("misc", "bits_and_halves")(x, out, h, hf, n, grid=n // block, block=block,
                                      shared_mem=4 * block)
    r = np.array([_bits_reference(int(v), n) for v in x], np.uint64)
    rotated = np.roll(r.reshape(-1, block), -1, axis=1).ravel()  # dyn[(tid + 1) % blockDim]
    np.testing.assert_array_equal(out, ((rotated + 7) & 0xFFFFFFFF).astype(np.uint32))
    sq = (halves * halves).reshape(-1, 2)  # f16 products, one rounding each
    gauss = np.array([0.0625, 0.25, 0.375, 0.25, 0.0625], np.float32)
    ref = (sq[:, 0].astype(np.float32) + sq[:, 1].astype(np.float32)) + gauss[np.arange(n) % 5]
    np.testing.assert_array_equal(hf, ref)
