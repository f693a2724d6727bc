"""The GPU launcher on issue 25's cases: one host array passed as two pointer arguments (and
overlapping views of one buffer) is one device allocation, as on the interpreter;
``module.set`` / ``module.get`` and cooperative launches; and the real-world kernels of
tests/emulator/test_real_world_kernels.py giving the same bytes on the GPU and the interpreter.

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


@pytest.fixture(scope="module")
def real_world():
    from real_world_source import real_world_ptx

    from ptxforge.launch.loader import load

    gpu = load(real_world_ptx())
    yield gpu, load(real_world_ptx(), device="emulator")
    gpu.unload()


def test_gpu_module_variables_and_barrier_match_the_interpreter(real_world):
    coef = np.array([1.0, 2.0, -0.5, 4.0], np.float32)
    x = np.random.default_rng(3).integers(0, 100, 512).astype(np.float32)
    outs = []
    for module in real_world:
        module.set("coef", coef)
        module.set("bias", np.int32(7))
        assert module.get("coef", np.float32).tolist() == coef.tolist()
        assert module.get("bias", np.int32).tolist() == [7]
        out = np.zeros(512, np.float32)
        module["barrier_rotate"](x, out, grid=2, block=256, sync=True)
        outs.append(out)
    assert outs[0].tolist() == outs[1].tolist()


def test_gpu_cooperative_grid_sync_matches_the_interpreter(real_world):
    n = 4 * 64
    for module in real_world:
        data, out = np.zeros(n, np.int32), np.zeros(n, np.int32)
        module["grid_rotate"](data, out, grid=4, block=64, cooperative=True, sync=True)
        assert out.tolist() == [3 * ((i + 1) % n) for i in range(n)]


@pytest.mark.parametrize("kernel", ["stencil5", "cub_block_sum", "tiles", "warp_size"])
def test_gpu_and_interpreter_agree_bit_for_bit(real_world, kernel):
    results = []
    for module in real_world:
        if kernel == "stencil5":
            u = np.random.default_rng(11).standard_normal(700)
            v = np.zeros(700)
            module[kernel](u, v, 700, 0.37, -1.25, grid=3, block=256, sync=True)
            results.append([v])
        elif kernel == "cub_block_sum":
            x = np.random.default_rng(5).random(384).astype(np.float32)
            outs = [np.zeros(3, np.float32), np.zeros(384, np.int32), np.zeros(12, np.float32)]
            module[kernel](x, *outs, grid=3, block=128, sync=True)
            results.append(outs)
        elif kernel == "tiles":
            x = np.random.default_rng(5).integers(-50, 50, 256).astype(np.int32)
            outs = [np.zeros(256, np.int32), np.zeros(256, np.int32)]
            module[kernel](x, *outs, grid=2, block=128, sync=True)
            results.append(outs)
        else:
            out = np.zeros(96, np.int32)
            module[kernel](out, grid=1, block=96, sync=True)
            results.append([out])
    for gpu, emu in zip(*results):
        assert gpu.tobytes() == emu.tobytes()
