"""CUDA C++ sources for the compile, cubin and sweep tests, and NVRTC with extra options.

Kept out of tests/corpus/ on purpose: the corpus is enumerated by every analysis test, and
these kernels exist to provoke ptxas (a crash, a refused cap, launch bounds, calls, -G).
"""

from __future__ import annotations

import functools

__all__ = ["OCTREE_WALK", "MMA_AND_COPY", "LIVE64", "CALLS", "SHARED", "nvrtc"]

# nvJitLink 13.5 segfaults on this kernel for sm_75/sm_80 at --maxrregcount <= 28 (not at 32,
# not for sm_86/sm_90); the ptxas 12.9 and 13.0 executables compile it (24 registers at 24).
OCTREE_WALK = r"""
// Octree walk with an explicit per-thread stack, ray slab test, hit record.
struct Node { unsigned mask; unsigned first; };
struct Ray { float ox, oy, oz, dx, dy, dz, tmin, tmax; };
struct Hit { int hit; float t; int steps; int node; };
extern "C" __global__ void walk(const Node* __restrict__ nodes, const Ray* __restrict__ rays,
                                Hit* __restrict__ hits, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Ray r = rays[i];
    unsigned todo[32];
    int top = 0;
    todo[top++] = 0;
    Hit h; h.hit = 0; h.t = r.tmax; h.node = -1;
    float ix = 1.0f / r.dx, iy = 1.0f / r.dy, iz = 1.0f / r.dz;
    while (top > 0) {
        unsigned id = todo[--top];
        Node nd = nodes[id];
        if (nd.mask == 0) {
            float t = r.tmin + (id & 255) * 0.01f;
            if (t < h.t) { h.t = t; h.hit = 1; }
            continue;
        }
        for (int c = 0; c < 8; ++c) {
            if (nd.mask & (1u << c)) {
                float t0 = fmaxf(fmaxf(((c & 1) - r.ox) * ix, (((c >> 1) & 1) - r.oy) * iy),
                                 (((c >> 2) & 1) - r.oz) * iz);
                if (t0 < h.t && top < 32) todo[top++] = nd.first + __popc(nd.mask & ((1u << c) - 1));
            }
        }
    }
    hits[i] = h;
}
"""

# tile_mma needs 28 registers for its mma.sync: ptxas refuses --maxrregcount=24 ("Insufficient
# registers (24) ... Try to compile with register target of 28 or higher"); copy needs 8.
MMA_AND_COPY = r"""
// A tf32 tensor-core tile loop next to a plain copy kernel.
extern "C" __global__ void tile_mma(const float* a, const float* b, float* c, int ktiles)
{
    int lane = threadIdx.x & 31;
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    for (int t = 0; t < ktiles; ++t) {
        unsigned a0 = __float_as_uint(a[(t * 32 + lane) * 4 + 0]);
        unsigned a1 = __float_as_uint(a[(t * 32 + lane) * 4 + 1]);
        unsigned a2 = __float_as_uint(a[(t * 32 + lane) * 4 + 2]);
        unsigned a3 = __float_as_uint(a[(t * 32 + lane) * 4 + 3]);
        unsigned b0 = __float_as_uint(b[(t * 32 + lane) * 2 + 0]);
        unsigned b1 = __float_as_uint(b[(t * 32 + lane) * 2 + 1]);
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    for (int i = 0; i < 4; ++i) c[lane * 4 + i] = d[i];
}

extern "C" __global__ void copy(const float* src, float* dst, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}
"""

# 72 registers uncapped on sm_80; BOUNDS is replaced by __launch_bounds__(...) / __maxnreg__.
LIVE64 = r"""
// 64 values live across four rounds.
extern "C" __global__ void BOUNDS live64(const float* __restrict__ in, float* __restrict__ out)
{
    const float* p = in + (blockIdx.x * blockDim.x + threadIdx.x) * 64;
    float v[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) v[i] = p[i];
    float acc = 0.f;
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int i = 0; i < 64; ++i) acc = fmaf(acc, v[i], v[(i * 7 + r) & 63]);
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
"""

# A kernel whose callee has a stack frame and spills (nvJitLink 13.5, sm_80: gather has a
# 136-byte frame with 56/56 bytes of spills, fail 24 bytes; calls needs 160 bytes of stack).
CALLS = r"""
extern "C" __device__ int vprintf(const char*, const char*);
__device__ __noinline__ void fail(long i, long n)
{
    long args[2] = {i, n};
    vprintf("index %ld out of %ld\n", (const char*)args);
    __trap();
}
__device__ __noinline__ double gather(const double* p, long i, long n)
{
    if (i >= n) fail(i, n);
    double window[8];
    for (int k = 0; k < 8; ++k) window[k] = p[(i + k) % n];
    double s = 0;
    for (int k = 0; k < 8; ++k) s += window[(k * 3 + (int)i) & 7] * k;
    return s;
}
extern "C" __global__ void calls(const double* p, double* out, long n)
{
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    out[i] = gather(p, i, n) + gather(p, i + 1, n);
}
extern "C" __global__ void leaf(double* out) { out[threadIdx.x] = 1.0; }
"""

# Own static shared bytes: none 0, bar 0 (a barrier, no shared), dyn 0 (extern only),
# stat 400, both 256 (+ dynamic).
SHARED = r"""
extern "C" __global__ void none(float* out) { out[threadIdx.x] = 1.0f; }
extern "C" __global__ void bar(float* out)
{
    out[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x + 1] = 2.0f;
}
extern "C" __global__ void dyn(float* out)
{
    extern __shared__ float d[];
    d[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = d[(threadIdx.x + 1) % blockDim.x];
}
extern "C" __global__ void stat(float* out)
{
    __shared__ float s[100];
    s[threadIdx.x % 100] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[(threadIdx.x + 1) % 100];
}
extern "C" __global__ void both(float* out)
{
    __shared__ float s[64];
    extern __shared__ float d[];
    s[threadIdx.x % 64] = threadIdx.x;
    d[threadIdx.x] = 2.0f;
    __syncthreads();
    out[threadIdx.x] = s[(threadIdx.x + 1) % 64] + d[threadIdx.x ^ 1];
}
"""


@functools.lru_cache(maxsize=None)
def nvrtc(source: str, name: str, arch: str = "sm_80", *options: str) -> str:
    """PTX of CUDA C++ ``source`` from NVRTC with extra ``options`` (e.g. ``-G``)."""
    from cuda.bindings import nvrtc as rtc

    from corpus_util import _check

    opts = [f"-arch=compute_{arch[3:]}", "--std=c++17", "-default-device", *options]
    err, prog = rtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
    _check(err, what=f"creating {name}.cu")
    try:
        raw = [o.encode() for o in opts]
        (err,) = rtc.nvrtcCompileProgram(prog, len(raw), raw)
        _check(err, prog, f"compiling {name}.cu for {arch}")
        err, size = rtc.nvrtcGetPTXSize(prog)
        _check(err, prog)
        buf = b" " * size
        (err,) = rtc.nvrtcGetPTX(prog, buf)
        _check(err, prog)
    finally:
        rtc.nvrtcDestroyProgram(prog)
    return buf.rstrip(b"\0").decode()
