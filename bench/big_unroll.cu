// Benchmark kernel for bench/bench_parse.py: a fully unrolled WENO-style accumulation whose
// coefficients are chosen at run time by `order` (selp cascades over double literals that
// differ in every unrolled step), with zero-clipping and 16 accumulators live across the
// whole body.  NK steps give roughly 0.5 KB of PTX each; NK is set by the benchmark (-DNK=...).
#ifndef NK
#define NK 2048
#endif

__device__ __forceinline__ double coefficient(int order, int k)
{
    return order == 3 ? (k + 1) * 0.125
         : order == 5 ? 1.0 / (k + 2)
         : order == 7 ? -1.0 / (k + 3)
         : 0.5 / (k + 1);
}

extern "C" __global__ void big_unrolled(const double* __restrict__ q, const int* __restrict__ order_map,
                                        double* __restrict__ out, int n, int stride)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int order = order_map[i];
    double acc[16];
#pragma unroll
    for (int j = 0; j < 16; ++j)
        acc[j] = 0.0;
#pragma unroll
    for (int k = 0; k < NK; ++k) {
        double s = q[i + k * stride];
        double w = s < 0.0 ? 0.0 : s;
        acc[k & 15] = fma(coefficient(order, k), w, acc[k & 15]);
    }
    double r = 0.0;
#pragma unroll
    for (int j = 0; j < 16; ++j)
        r = fma(acc[j], acc[15 - j], r);
    out[i] = r;
}
