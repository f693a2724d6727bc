"""A conformance corpus of real-world-style CUDA C++ kernels on the interpreter, against NumPy:
cub's BlockReduce / BlockScan / WarpReduce (NVRTC with the nvidia-cuda-cccl headers),
cooperative-groups tiles (narrower and wider than a warp), ``warpSize``, ``cuda::barrier`` and
``cuda::pipeline`` (``mbarrier``, ``cp.async``), a grid-wide sync in a cooperative launch,
``__constant__`` / ``__device__`` variables set through ``module.set``, a double-precision
stencil, and a texture fetch refused with a clear error.

Every kernel lives in one source compiled once per session (and cached on disk by
tests/support/corpus_util.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxforge.emulator import EmulationError
from ptxforge.launch.loader import load

from corpus_util import compile_cu, cuda_include_dirs

SOURCE = r"""
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda/functional>
namespace cg = cooperative_groups;

__constant__ float coef[4];
__device__ int bias;

extern "C" __global__ void warp_size(int *out) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = warpSize * 100 + threadIdx.x % warpSize;
}

extern "C" __global__ void cub_block_sum(const float *in, float *out, int *scan, float *wmax) {
    typedef cub::BlockReduce<float, 128> Reduce;
    typedef cub::BlockScan<int, 128> Scan;
    typedef cub::WarpReduce<float> WarpMax;
    __shared__ typename Reduce::TempStorage rs;
    __shared__ typename Scan::TempStorage ss;
    __shared__ typename WarpMax::TempStorage ws[4];
    int i = blockIdx.x * 128 + threadIdx.x;
    float v = in[i];
    float total = Reduce(rs).Sum(v);
    if (threadIdx.x == 0) out[blockIdx.x] = total;
    int x = (int)(v * 10.0f) & 7, prefix;
    Scan(ss).ExclusiveSum(x, prefix);
    scan[i] = prefix;
    float m = WarpMax(ws[threadIdx.x / 32]).Reduce(v, cuda::maximum<float>());
    if (threadIdx.x % 32 == 0) wmax[i / 32] = m;
}

extern "C" __global__ void tiles(const int *in, int *sum16, int *tile64) {
    auto block = cg::this_thread_block();
    auto t16 = cg::tiled_partition<16>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    sum16[i] = cg::reduce(t16, in[i], cg::plus<int>());
    auto t64 = cg::tiled_partition<64>(block);
    t64.sync();
    tile64[i] = t64.meta_group_rank() * 1000 + t64.thread_rank();
}

extern "C" __global__ void barrier_rotate(const float *in, float *out) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ float s[256];
    auto block = cg::this_thread_block();
    if (block.thread_rank() == 0) init(&bar, block.size());
    block.sync();
    for (int round = 0; round < 2; ++round) {
        s[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x] + round;
        bar.arrive_and_wait();
        float v = s[(threadIdx.x + 1) % blockDim.x] * coef[threadIdx.x % 4] + bias;
        bar.arrive_and_wait();
        if (round == 1) out[blockIdx.x * blockDim.x + threadIdx.x] = v;
    }
}

extern "C" __global__ void pipeline_sum(const float *in, float *out, int chunks) {
    __shared__ float s[2][128];
    auto p = cuda::make_pipeline();
    float acc = 0;
    cuda::memcpy_async(&s[0][threadIdx.x], &in[threadIdx.x], sizeof(float), p);
    p.producer_commit();
    for (int k = 1; k <= chunks; ++k) {
        if (k < chunks) {
            p.producer_acquire();
            cuda::memcpy_async(&s[k % 2][threadIdx.x], &in[k * 128 + threadIdx.x],
                               sizeof(float), p);
            p.producer_commit();
        }
        cuda::pipeline_consumer_wait_prior<0>(p);
        acc += s[(k - 1) % 2][threadIdx.x];
        p.consumer_release();
    }
    out[threadIdx.x] = acc;
}

extern "C" __global__ void grid_rotate(int *data, int *out) {
    auto g = cg::this_grid();
    data[g.thread_rank()] = (int)g.thread_rank() * 3;
    g.sync();
    out[g.thread_rank()] = data[(g.thread_rank() + 1) % g.size()];
}

extern "C" __global__ void stencil5(const double *u, double *v, int n, double a, double b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 2 && i < n - 2)
        v[i] = fma(a, u[i], b * ((u[i - 1] + u[i + 1]) - 0.25 * (u[i - 2] + u[i + 2])));
}

extern "C" __global__ void texture_fetch(cudaTextureObject_t tex, float *out) {
    out[threadIdx.x] = tex1Dfetch<float>(tex, threadIdx.x);
}
"""


@pytest.fixture(scope="module")
def module():
    opts = tuple(f"-I{d}" for d in cuda_include_dirs())
    return load(compile_cu(SOURCE, "real_world", options=opts), device="emulator")


RNG = np.random.default_rng(2025)


def test_warp_size(module):
    out = np.zeros(96, np.int32)
    module["warp_size"](out, grid=1, block=96)
    assert out.tolist() == [3200 + t % 32 for t in range(96)]


def test_cub_block_reduce_scan_and_warp_reduce(module):
    blocks = 3
    x = RNG.random(128 * blocks).astype(np.float32)
    out = np.zeros(blocks, np.float32)
    scan = np.zeros(128 * blocks, np.int32)
    wmax = np.zeros(4 * blocks, np.float32)
    module["cub_block_sum"](x, out, scan, wmax, grid=blocks, block=128)
    ref = x.reshape(blocks, 128).astype(np.float64).sum(axis=1)
    assert np.all(np.abs(out - ref) <= 128 * np.finfo(np.float32).eps * ref)
    digits = (x * np.float32(10)).astype(np.int32) & 7
    want = np.cumsum(digits.reshape(blocks, 128), axis=1) - digits.reshape(blocks, 128)
    assert scan.tolist() == want.ravel().tolist()
    assert wmax.tolist() == x.reshape(-1, 32).max(axis=1).tolist()


def test_cooperative_group_tiles(module):
    x = RNG.integers(-50, 50, 256).astype(np.int32)
    sum16, tile64 = np.zeros(256, np.int32), np.zeros(256, np.int32)
    module["tiles"](x, sum16, tile64, grid=2, block=128)
    assert sum16.tolist() == np.repeat(x.reshape(-1, 16).sum(axis=1), 16).tolist()
    t = np.arange(256) % 128
    assert tile64.tolist() == ((t // 64) * 1000 + t % 64).tolist()


def test_cuda_barrier_with_constant_and_device_variables(module):
    coef = np.array([1.0, 2.0, -0.5, 4.0], np.float32)
    module.set("coef", coef)
    module.set("bias", np.int32(7))
    assert module.get("coef", np.float32).tolist() == coef.tolist()
    assert module.get("bias", np.int32).tolist() == [7]
    x = RNG.integers(0, 100, 512).astype(np.float32)
    out = np.zeros(512, np.float32)
    module["barrier_rotate"](x, out, grid=2, block=256)
    blocks = x.reshape(2, 256) + 1
    want = np.roll(blocks, -1, axis=1) * np.tile(coef, 64) + 7
    assert out.tolist() == want.ravel().tolist()


def test_cuda_pipeline_double_buffer(module):
    chunks = 5
    x = RNG.integers(0, 1000, 128 * chunks).astype(np.float32)
    out = np.zeros(128, np.float32)
    module["pipeline_sum"](x, out, chunks, grid=1, block=128)
    assert out.tolist() == x.reshape(chunks, 128).sum(axis=0).tolist()


def test_grid_sync_in_a_cooperative_launch(module):
    n = 4 * 64
    data, out = np.zeros(n, np.int32), np.zeros(n, np.int32)
    module["grid_rotate"](data, out, grid=4, block=64, cooperative=True)
    assert out.tolist() == [3 * ((i + 1) % n) for i in range(n)]


def test_grid_sync_without_a_cooperative_launch_says_so(module):
    data, out = np.zeros(64, np.int32), np.zeros(64, np.int32)
    with pytest.raises(EmulationError, match=r"envreg.*cooperative=True"):
        module["grid_rotate"](data, out, grid=1, block=64)


def test_double_precision_stencil(module):
    n = 700
    u = RNG.standard_normal(n)
    v = np.zeros(n)
    a, b = 0.37, -1.25
    module["stencil5"](u, v, n, a, b, grid=3, block=256)
    inner = b * ((u[1:-3] + u[3:-1]) - 0.25 * (u[:-4] + u[4:]))
    # fma(a, u, inner) rounded once: exact product plus inner, then one rounding
    from fractions import Fraction

    want = [float(Fraction(a) * Fraction(float(x)) + Fraction(float(y)))
            for x, y in zip(u[2:-2], inner)]
    assert v[2:-2].tolist() == want
    assert v[:2].tolist() == [0, 0] and v[-2:].tolist() == [0, 0]


def test_textures_are_refused_with_a_clear_error(module):
    out = np.zeros(32, np.float32)
    with pytest.raises(EmulationError, match="textures and surfaces are not emulated"):
        module["texture_fetch"](0, out, grid=1, block=32)
