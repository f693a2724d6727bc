// Benchmark source for bench/bench_parse.py: many small template kernels in one file (the shape
// of a Thrust/CUB-heavy translation unit).  KINDS x TYPES x SIZES explicit instantiations, each
// a short unrolled loop with a branch, a shuffle reduction and a shared-memory stage, so the file
// has hundreds of functions with long mangled names and many labels.  The benchmark appends
// TYPES(0) TYPES(1) ... to repeat the whole set (60 kernels) with a distinct first argument.

template <int N, typename T>
__device__ __forceinline__ T step(T a, T b, int k)
{
    return (k & 1) ? a * b + T(k) : a - b * T(N - k);
}

template <int R, int N, typename T>
__global__ void axpy_unrolled(const T* __restrict__ x, T* __restrict__ y, T a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    T acc = T(0);
#pragma unroll
    for (int k = 0; k < N; ++k) {
        int j = i + k * blockDim.x;
        if (j < n)
            acc = step<N, T>(acc, a * x[j], k);
    }
    if (i < n)
        y[i] = acc;
}

template <int R, int N, typename T>
__global__ void block_sum(const T* __restrict__ x, T* __restrict__ out, int n)
{
    __shared__ T part[32];
    T s = T(0);
    for (int i = blockIdx.x * blockDim.x * N + threadIdx.x; i < n; i += blockDim.x * gridDim.x * N) {
#pragma unroll
        for (int k = 0; k < N; ++k)
            if (i + k * blockDim.x < n)
                s += x[i + k * blockDim.x];
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : T(0);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_down_sync(0xffffffffu, s, o);
        if (threadIdx.x == 0)
            atomicAdd(out, s);
    }
}

template <int R, int N, typename T>
__global__ void stencil(const T* __restrict__ in, T* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N || i + N >= n)
        return;
    T acc = T(0);
#pragma unroll
    for (int k = -N; k <= N; ++k)
        acc += in[i + k] * T(k * k + 1);
    out[i] = acc > T(0) ? acc : -acc;
}

#define INSTANTIATE(R, N, T)                                                                    \
    template __global__ void axpy_unrolled<R, N, T>(const T*, T*, T, int);                      \
    template __global__ void block_sum<R, N, T>(const T*, T*, int);                             \
    template __global__ void stencil<R, N, T>(const T*, T*, int);
#define SIZES(R, T) INSTANTIATE(R, 2, T) INSTANTIATE(R, 4, T) INSTANTIATE(R, 8, T)               \
    INSTANTIATE(R, 16, T) INSTANTIATE(R, 32, T)
#define TYPES(R) SIZES(R, float) SIZES(R, double) SIZES(R, int) SIZES(R, unsigned)
