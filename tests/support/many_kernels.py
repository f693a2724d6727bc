"""A template-heavy CUDA file with N kernels, compiled by NVRTC: the shape of a real build's
many-kernel translation unit (mangled names, inlined helpers, ``.loc`` lines), for the tests
that check a command's cost grows in proportion to the kernels (tests/cli/test_scaling.py)."""

from __future__ import annotations

from corpus_util import compile_cu

SOURCE = r"""
template <int N, typename T>
__device__ __forceinline__ T mix(T a, T b, int k)
{
    return (k & 1) ? a * b + T(k) : a - b * T(N - k);
}

template <int V, int N, typename T>
__device__ __noinline__ T tail(const T* x, int i, int n)
{
    T s = T(0);
    for (int k = i; k < n; k += 32)
        s += x[k];
    return s;
}

template <int V, int N, typename T>
__global__ void __launch_bounds__(128) blocked(const T* __restrict__ x, T* __restrict__ y, T a, int n)
{
    __shared__ T tile[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    T acc[N];
#pragma unroll
    for (int k = 0; k < N; ++k)
        acc[k] = i + k * 128 < n ? x[i + k * 128] : T(V);
    tile[threadIdx.x] = acc[0];
    __syncthreads();
#pragma unroll
    for (int k = 1; k < N; ++k)
        acc[k] = mix<N, T>(acc[k], a * tile[(threadIdx.x + k) & 127], k);
    T s = (V & 1) ? tail<V, N, T>(x, i, n) : T(0);   // every other kernel has its own .func
#pragma unroll
    for (int k = 0; k < N; ++k)
        s += acc[k];
    if (i < n)
        y[i] = s;
}
"""


def many_kernels(count: int, arch: str = "sm_80", period: int = 12) -> str:
    """PTX (with line info) of ``count`` instantiations of the ``blocked`` template; the
    (type, unroll) shapes repeat every ``period`` kernels, so ``many_kernels(2 * n,
    period=n)`` is twice the work of ``many_kernels(n, period=n)``."""
    types, sizes = ("float", "double", "int", "unsigned"), (2, 4, 8)
    lines = []
    for v in range(count):
        shape = v % period
        t, n = types[shape % len(types)], sizes[(shape // len(types)) % len(sizes)]
        lines.append(f"template __global__ void blocked<{v}, {n}, {t}>"
                     f"(const {t}*, {t}*, {t}, int);")
    return compile_cu(SOURCE + "\n".join(lines) + "\n", f"many{count}", arch, True)
