"""CUDA C++ kernels whose memory behaviour is known by construction, for the interpreter's
profile and race check (tests/launch/test_profile.py, test_races.py, tests/cli/test_profile.py).

Compiled once by NVRTC with ``-lineinfo`` (disk-cached by tests/support/corpus_util.py).
``line_of(marker)`` gives the source line holding a ``// @marker`` comment, so the tests
check the lines the profile and the race check report against the source itself.
"""

from __future__ import annotations

import functools

from corpus_util import compile_cu

__all__ = ["NAME", "SOURCE", "SYNCWARP", "WARP_UNIFORM", "line_of", "memory_ptx",
           "syncwarp_ptx", "warp_uniform_ptx"]

NAME = "memory_kernels"

SOURCE = r"""
extern "C" __global__ void copy(const float *in, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i];                                   // @copy
}

extern "C" __global__ void strided(const float *in, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[2 * i];                               // @strided
}

extern "C" __global__ void broadcast(const float *in, float *out) {
    __shared__ float s[32];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (t < 32) s[t] = in[t];
    __syncthreads();
    out[i] = in[0] + s[0];                            // @broadcast
}

extern "C" __global__ void transpose_naive(const float *in, float *out, int n) {
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    out[x * n + y] = in[y * n + x];                   // @naive
}

extern "C" __global__ void transpose_tile(const float *in, float *out, int n) {
    __shared__ float tile[32][32];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];   // @tile_store
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
    out[y * n + x] = tile[threadIdx.x][threadIdx.y];  // @tile_load
}

extern "C" __global__ void transpose_padded(const float *in, float *out, int n) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];   // @padded_store
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
    out[y * n + x] = tile[threadIdx.x][threadIdx.y];  // @padded_load
}

extern "C" __global__ void doubles(const double *in, double *out) {
    __shared__ double d[128];
    int t = threadIdx.x;
    d[t] = in[t];                                     // @double_store
    d[t + 64] = in[t] + 1.0;
    __syncthreads();
    out[t] = d[2 * t];                                // @double_stride2
}

extern "C" __global__ void diverge(const float *in, float *out, int reps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[i];
    if (threadIdx.x % 2) {                            // @diverge
        for (int k = 0; k < reps; ++k)
            v = v * 0.5f + 1.0f;
    }
    out[i] = v;
}

extern "C" __global__ void raw_race(const float *in, float *out) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = in[i];                                     // @raw_store
    out[i] = s[(t + 1) % blockDim.x];                 // @raw_load
}

extern "C" __global__ void raw_fixed(const float *in, float *out) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = in[i];
    __syncthreads();
    out[i] = s[(t + 1) % blockDim.x];
}

extern "C" __global__ void war_race(const float *in, float *out, int tiles) {
    __shared__ float s[256];
    int t = threadIdx.x, n = blockDim.x;
    float acc = 0.0f;
    for (int k = 0; k < tiles; ++k) {
        s[t] = in[k * n + t];                         // @war_store
        __syncthreads();
        acc += s[(t + 1) % n];                        // @war_load
    }
    out[t] = acc;
}

extern "C" __global__ void war_fixed(const float *in, float *out, int tiles) {
    __shared__ float s[256];
    int t = threadIdx.x, n = blockDim.x;
    float acc = 0.0f;
    for (int k = 0; k < tiles; ++k) {
        s[t] = in[k * n + t];
        __syncthreads();
        acc += s[(t + 1) % n];
        __syncthreads();
    }
    out[t] = acc;
}

extern "C" __global__ void global_race(float *data) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    data[i] = data[i + 1] + 1.0f;                     // @global_race
}

extern "C" __global__ void same_value(int *flag) {
    flag[0] = 1;                                      // @same_value
}

extern "C" __global__ void histogram(const int *in, int *bins, float *total) {
    __shared__ int local[16];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (t < 16) local[t] = 0;
    __syncthreads();
    atomicAdd(&local[in[i] & 15], 1);
    __syncthreads();
    if (t < 16) atomicAdd(&bins[t], local[t]);
    atomicAdd(total, 1.0f);
}
"""


#: Loops whose writes of the index differ by a branch that every thread of a warp takes the
#: same way, and ``selp`` of two indices by a predicate the same in a warp (or not: pick_odd) (the static analysis's warp-uniform branches: tests/launch/test_memory_agreement.py,
#: tests/analysis/test_memory_warp_uniform.py).  NVRTC peels each loop by its trip count.
WARP_UNIFORM = r"""
// trip count set by threadIdx.y only: with 32 threads along x, one per warp
extern "C" __global__ void rows_by_y(const float *in, float *out) {
    float acc = 0.0f;
    for (int j = 0; j <= threadIdx.y; ++j)
        acc += in[j * 32 + threadIdx.x];
    out[threadIdx.y * 32 + threadIdx.x] = acc;
}

// a stride of 96 over a constant 1024 elements: NVRTC peels it by the thread's trip count
extern "C" __global__ void block_stride(const float *in, float *out) {
    float acc = 0.0f;
    for (int i = threadIdx.x; i < 1024; i += 96)
        acc += in[i];
    out[threadIdx.x] = acc;
}

// a warp per row, its lanes striding the row by 32: the trip count is known once cols is
extern "C" __global__ void warp_rows(const float *x, float *y, int cols) {
    int row = threadIdx.x / 32, lane = threadIdx.x & 31;
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32)
        s += x[row * cols + c];
    y[row * 32 + lane] = s;
}

// selp of two indices with the same thread stride, by a parameter: the same in every thread
extern "C" __global__ void pick_half(const float *in, float *out, int flip) {
    int t = threadIdx.x;
    int i = flip ? t + 256 : t;
    out[t] = in[i];
}

// the same by threadIdx.y, one value per warp with 32 threads along x
extern "C" __global__ void pick_by_y(const float *in, float *out) {
    int t = threadIdx.x, y = threadIdx.y;
    long i = (y & 1) ? (long)(t + 512) : (long)t;
    out[y * 32 + t] = in[i] + in[i + 64];
}

// the same by the thread's parity: the lanes of a warp pick differently
extern "C" __global__ void pick_odd(const float *in, float *out) {
    int t = threadIdx.x;
    int i = (t & 1) ? t + 256 : t;
    out[t] = in[i];
}
"""


@functools.cache
def warp_uniform_ptx(arch: str = "sm_80") -> str:
    """The PTX of :data:`WARP_UNIFORM` (``-lineinfo``)."""
    return compile_cu(WARP_UNIFORM, "memory_warp_uniform", arch, lineinfo=True)


#: Warp-synchronous reductions through shared memory with ``__syncwarp`` only (the race check,
#: tests/launch/test_races_syncwarp.py): inside one warp they are ordered, across two warps not.
SYNCWARP = r"""
// each warp sums its own 32 values: the lanes only read slots of their own warp
extern "C" __global__ void warp_sum(const float *in, float *out) {
    __shared__ float s[256];
    int t = threadIdx.x, lane = t % 32;
    s[t] = in[blockIdx.x * blockDim.x + t];
    __syncwarp();
    for (int o = 16; o > 0; o >>= 1) {
        float v = lane < o ? s[t + o] : 0.0f;
        __syncwarp();
        s[t] += v;
        __syncwarp();
    }
    if (lane == 0) out[blockIdx.x * (blockDim.x / 32) + t / 32] = s[t];
}

// the same without __syncwarp: the lanes of one warp race
extern "C" __global__ void warp_sum_unsynced(const float *in, float *out) {
    __shared__ float s[256];
    int t = threadIdx.x, lane = t % 32;
    s[t] = in[blockIdx.x * blockDim.x + t];
    for (int o = 16; o > 0; o >>= 1) {
        float v = lane < o ? s[t + o] : 0.0f;
        s[t] += v;
    }
    if (lane == 0) out[blockIdx.x * (blockDim.x / 32) + t / 32] = s[t];
}

// a block of 64 summed with __syncwarp only: warp 0 reads what warp 1 wrote
extern "C" __global__ void block_sum_syncwarp(const float *in, float *out) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * 64 + t];                  // @sw_store
    __syncwarp();
    for (int o = 32; o > 0; o >>= 1) {
        float v = t < o ? s[t + o] : 0.0f;           // @sw_load
        __syncwarp();
        s[t] += v;
        __syncwarp();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
"""


@functools.cache
def syncwarp_ptx(arch: str = "sm_80") -> str:
    """The PTX of :data:`SYNCWARP` (``-lineinfo``)."""
    return compile_cu(SYNCWARP, "memory_syncwarp", arch, lineinfo=True)


@functools.cache
def memory_ptx(arch: str = "sm_80") -> str:
    """The PTX of :data:`SOURCE` (``-lineinfo``)."""
    return compile_cu(SOURCE, NAME, arch, lineinfo=True)


def line_of(marker: str, source: str = SOURCE) -> int:
    """The 1-based line of ``source`` (:data:`SOURCE`) holding ``// @marker``."""
    hits = [k + 1 for k, text in enumerate(source.splitlines())
            if text.rstrip().endswith(f"// @{marker}")]
    assert len(hits) == 1, marker
    return hits[0]
