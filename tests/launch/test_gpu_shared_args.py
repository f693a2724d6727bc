"""The GPU launcher on issue 25's cases: one host array passed as two pointer arguments (and
overlapping views of one buffer) is one device allocation, as on the interpreter.

Marked ``gpu``; tests/conftest.py skips them when no GPU or driver is present.
"""

from __future__ import annotations

import numpy as np
import pytest

from corpus_util import compile_cu

pytestmark = pytest.mark.gpu

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
    from ptxforge.launch.loader import load

    module = load(compile_cu(INPLACE, "inplace"))
    yield module
    module.unload()


def test_gpu_one_array_passed_twice_is_one_allocation(inplace):
    x = np.arange(100, dtype=np.float32)
    inplace["axpy2"](x, x, 100, grid=1, block=128, sync=True)
    np.testing.assert_array_equal(x, 3 * np.arange(100, dtype=np.float32))


def test_gpu_overlapping_views_share_memory(inplace):
    buf = np.arange(64, dtype=np.float32)
    inplace["shift"](buf[:32], buf[8:40], 32, grid=1, block=32, sync=True)
    want = np.arange(64, dtype=np.float32)
    want[:32] = 10 * np.arange(8, 40, dtype=np.float32)
    np.testing.assert_array_equal(buf, want)
