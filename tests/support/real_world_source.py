"""The real-world-style CUDA C++ kernels of tests/emulator/test_real_world_kernels.py (and the GPU
check in tests/launch/test_gpu_shared_args.py), compiled once by NVRTC with the cccl headers."""

from __future__ import annotations

import functools

from corpus_util import compile_cu, cuda_include_dirs

__all__ = ["SOURCE", "real_world_ptx"]

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



@functools.cache
def real_world_ptx() -> str:
    """PTX of :data:`SOURCE` for sm_80 (disk-cached)."""
    return compile_cu(SOURCE, "real_world", options=tuple(f"-I{d}" for d in cuda_include_dirs()))
