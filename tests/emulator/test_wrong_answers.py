"""The interpreter's three wrong answers of issue 25, each checked on a kernel that ptxas accepts:
warp instructions that honour each thread's membermask, ``fma.rn.f64`` whose product overflows
while the fused result is finite, and one host buffer passed as several pointer arguments.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxforge.launch.loader import load

from corpus_util import compile_cu

HALVES = r"""
extern "C" __global__ void halves(unsigned *sum, unsigned *ballot, unsigned *bucket_max,
                                  const unsigned *key, const unsigned *val) {
    unsigned lane = threadIdx.x % 32;
    unsigned mask = lane < 16 ? 0x0000FFFFu : 0xFFFF0000u;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    sum[i] = __reduce_add_sync(mask, 1u);
    ballot[i] = __ballot_sync(mask, (val[i] & 1u) != 0);
    unsigned peers = __match_any_sync(0xFFFFFFFFu, key[i]);
    bucket_max[i] = __reduce_max_sync(peers, val[i]);
}
"""


@pytest.fixture(scope="module")
def halves():
    return load(compile_cu(HALVES, "halves"), device="emulator")["halves"]


def test_redux_vote_and_match_honour_each_threads_membermask(halves):
    rng = np.random.default_rng(25)
    n = 64
    key = rng.integers(0, 3, n).astype(np.uint32)
    val = rng.integers(0, 1000, n).astype(np.uint32)
    total, ballot, best = (np.zeros(n, np.uint32) for _ in range(3))
    halves(total, ballot, best, key, val, grid=1, block=n)
    assert total.tolist() == [16] * n
    for w in range(2):
        odd = val[32 * w: 32 * w + 32] & 1
        low = sum(1 << i for i in range(16) if odd[i])
        high = sum(1 << i for i in range(16, 32) if odd[i])
        assert ballot[32 * w: 32 * w + 32].tolist() == [low] * 16 + [high] * 16
        k, v = key[32 * w: 32 * w + 32], val[32 * w: 32 * w + 32]
        expect = [int(v[k == k[i]].max()) for i in range(32)]
        assert best[32 * w: 32 * w + 32].tolist() == expect


FMA = r"""
extern "C" __global__ void fma64(const double *a, const double *b, const double *c,
                                 double *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __fma_rn(a[i], b[i], c[i]);
}
"""


def test_fma_f64_is_exact_when_the_product_overflows():
    big, dmax = 2.0 ** 1000, np.finfo(np.float64).max
    a = np.array([big, dmax, big, -dmax, 2.0 ** 1023])
    b = np.array([2.0 ** 24, 2.0, 2.0 ** 24, 2.0, 4.0])
    c = np.array([-1.5 * 2.0 ** 1023, -dmax, -np.inf, dmax, -np.inf])
    out = np.zeros(5)
    ptx = compile_cu(FMA, "fma64")
    assert "fma.rn.f64" in ptx
    load(ptx, device="emulator")["fma64"](a, b, c, out, 5, grid=1, block=32)
    # 2**1024 - 1.5 * 2**1023 = 2**1022 (4.49e307); 2 * DBL_MAX - DBL_MAX = DBL_MAX
    assert out.tolist() == [2.0 ** 1022, dmax, -np.inf, -dmax, -np.inf]


INPLACE = r"""
extern "C" __global__ void axpy2(float *y, const float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + y[i];
}
extern "C" __global__ void shift(float *dst, const float *src, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i] * 10.0f;
}
"""


@pytest.fixture(scope="module")
def inplace():
    return load(compile_cu(INPLACE, "inplace"), device="emulator")


def test_one_array_passed_twice_is_one_allocation(inplace):
    x = np.arange(100, dtype=np.float32)
    inplace["axpy2"](x, x, 100, grid=1, block=128)
    np.testing.assert_array_equal(x, 3 * np.arange(100, dtype=np.float32))


def test_overlapping_views_share_memory(inplace):
    buf = np.arange(64, dtype=np.float32)
    src, dst = buf[8:40], buf[:32]  # dst[i] = 10 * buf[i + 8]: every read precedes every write
    inplace["shift"](dst, src, 32, grid=1, block=32)
    want = np.arange(64, dtype=np.float32)
    want[:32] = 10 * np.arange(8, 40, dtype=np.float32)
    np.testing.assert_array_equal(buf, want)


def test_non_contiguous_view_that_overlaps_is_refused(inplace):
    from ptxforge.errors import LaunchError

    buf = np.arange(64, dtype=np.float32)
    with pytest.raises(LaunchError, match="non-contiguous array that shares memory"):
        inplace["shift"](buf[:32], buf[::2], 32, grid=1, block=32)


def test_heap_is_flat_across_launches(inplace):
    x = np.arange(3 << 18, dtype=np.float32)  # 3 MB in, 3 MB out
    y = np.zeros_like(x)
    emu = inplace.emulator
    inplace["shift"](y, x, 16, grid=1, block=32)
    size = len(emu.memory.heap)
    for _ in range(100):
        inplace["shift"](y, x, 16, grid=1, block=32)
    assert len(emu.memory.heap) == size
    assert y[:16].tolist() == (10 * x[:16]).tolist() and y[16] == 0
