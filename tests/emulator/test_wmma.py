"""``wmma`` through NVRTC (``nvcuda::wmma``) on the interpreter against NumPy: f16 to f32 and to
f16, bf16, tf32, s8 to s32 and f64 tiles, row- and column-major loads with a leading
dimension, stores in both layouts, and element-wise work on an accumulator fragment between
``mma_sync`` calls.  Inputs are small integers, so every product and sum is exact and the
comparison is bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from ptxforge.launch.loader import load

from corpus_util import compile_cu, cuda_include_dirs

SOURCE = r"""
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

template <int M, int N, int K, typename AT, typename BL, typename CT>
__device__ void gemm(const AT *a, const AT *b, CT *c, int kt, int lda, int ldb, int ldc,
                     int bstep) {
    wmma::fragment<wmma::matrix_a, M, N, K, AT, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, AT, BL> fb;
    wmma::fragment<wmma::accumulator, M, N, K, CT> fc;
    wmma::fill_fragment(fc, (CT)0);
    for (int t = 0; t < kt; ++t) {
        wmma::load_matrix_sync(fa, a + t * K, lda);
        wmma::load_matrix_sync(fb, b + t * bstep, ldb);
        wmma::mma_sync(fc, fa, fb, fc);
        for (int i = 0; i < fc.num_elements; ++i) fc.x[i] = fc.x[i] * (CT)2;
    }
    wmma::store_matrix_sync(c, fc, ldc, wmma::mem_row_major);
}

extern "C" __global__ void h16(const half *a, const half *b, float *c, int kt) {
    gemm<16, 16, 16, half, wmma::col_major, float>(a, b, c, kt, 16 * kt, 16 * kt, 16, 16);
}
extern "C" __global__ void h32x8(const half *a, const half *b, half *c, int kt) {
    gemm<32, 8, 16, half, wmma::row_major, half>(a, b, c, kt, 16 * kt, 8, 8, 16 * 8);
}
extern "C" __global__ void b8x32(const __nv_bfloat16 *a, const __nv_bfloat16 *b, float *c,
                                 int kt) {
    gemm<8, 32, 16, __nv_bfloat16, wmma::row_major, float>(a, b, c, kt, 16 * kt, 32, 32, 16 * 32);
}
extern "C" __global__ void i8(const signed char *a, const signed char *b, int *c, int kt) {
    gemm<16, 16, 16, signed char, wmma::col_major, int>(a, b, c, kt, 16 * kt, 16 * kt, 16,
                                                        16);
}
extern "C" __global__ void tf(const float *a, const float *b, float *c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
    wmma::fill_fragment(fc, 1.0f);
    wmma::load_matrix_sync(fa, a, 8);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_col_major);
}
extern "C" __global__ void d64(const double *a, const double *b, double *c) {
    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> fc;
    wmma::load_matrix_sync(fc, c, 8, wmma::mem_row_major);
    wmma::load_matrix_sync(fa, a, 4);
    wmma::load_matrix_sync(fb, b, 4);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 8, wmma::mem_row_major);
}
"""

RNG = np.random.default_rng(77)


@pytest.fixture(scope="module")
def module():
    opts = tuple(f"-I{d}" for d in cuda_include_dirs())
    return load(compile_cu(SOURCE, "wmma", options=opts), device="emulator")


def _ints(shape, lo=-4, hi=5):
    return RNG.integers(lo, hi, shape).astype(np.float64)


def _chain(a_tiles, b_tiles):
    """The kernels' accumulation: c = 2 * (c + a_t @ b_t) for each k-tile t."""
    c = 0
    for at, bt in zip(a_tiles, b_tiles):
        c = 2 * (c + at @ bt)
    return c


def test_wmma_f16_col_major_b(module):
    kt = 3
    a, b = _ints((16, 16 * kt)), _ints((16 * kt, 16))
    c = np.zeros((16, 16), np.float32)
    # b is column-major: element (k, n) at n * ldb + k
    module["h16"](a.astype(np.float16), np.ascontiguousarray(b.T).astype(np.float16), c, kt,
                  grid=1, block=32)
    want = _chain([a[:, 16 * t:16 * t + 16] for t in range(kt)],
                  [b[16 * t:16 * t + 16] for t in range(kt)])
    assert c.tolist() == want.tolist()


def test_wmma_f16_accumulator_m32n8k16(module):
    kt = 2
    a, b = _ints((32, 16 * kt), -2, 3), _ints((16 * kt, 8), -2, 3)
    c = np.zeros((32, 8), np.float16)
    module["h32x8"](a.astype(np.float16), b.astype(np.float16), c, kt, grid=1, block=32)
    want = _chain([a[:, 16 * t:16 * t + 16] for t in range(kt)],
                  [b[16 * t:16 * t + 16] for t in range(kt)])
    assert c.astype(np.float64).tolist() == want.tolist()


def test_wmma_bf16_m8n32k16(module):
    from ptxforge.emulator.floats import f32_to_bf16_bits

    kt = 2
    a, b = _ints((8, 16 * kt)), _ints((16 * kt, 32))
    c = np.zeros((8, 32), np.float32)
    module["b8x32"](f32_to_bf16_bits(a.astype(np.float32)),
                    f32_to_bf16_bits(b.astype(np.float32)), c, kt, grid=1, block=32)
    want = _chain([a[:, 16 * t:16 * t + 16] for t in range(kt)],
                  [b[16 * t:16 * t + 16] for t in range(kt)])
    assert c.tolist() == want.tolist()


def test_wmma_s8_to_s32(module):
    kt = 2
    a, b = _ints((16, 16 * kt), -100, 100), _ints((16 * kt, 16), -100, 100)
    c = np.zeros((16, 16), np.int32)
    module["i8"](a.astype(np.int8), np.ascontiguousarray(b.T).astype(np.int8), c, kt,
                 grid=1, block=32)
    want = _chain([a[:, 16 * t:16 * t + 16] for t in range(kt)],
                  [b[16 * t:16 * t + 16] for t in range(kt)])
    assert c.tolist() == want.astype(np.int64).tolist()


def test_wmma_tf32_stores_column_major(module):
    a, b = _ints((16, 8)), _ints((8, 16))
    c = np.zeros(256, np.float32)
    module["tf"](a.astype(np.float32), b.astype(np.float32), c, grid=1, block=32)
    assert c.reshape(16, 16).T.tolist() == (a @ b + 1).tolist()


def test_wmma_f64_loads_the_accumulator(module):
    a, b, c0 = _ints((8, 4)), _ints((4, 8)), _ints((8, 8))
    c = c0.copy()
    module["d64"](a, np.ascontiguousarray(b.T), c, grid=1, block=32)
    assert c.tolist() == (a @ b + c0).tolist()
