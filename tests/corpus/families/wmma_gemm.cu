// Warp-matrix (wmma) GEMMs, templated on the element type, the fragments per warp and the
// block's warps: staged through shared memory, accumulators kept across the K loop, an
// alpha/beta epilogue through shared memory.  f16, bf16, tf32, int8 and f64 fragments.
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

namespace fam {

template <class In, class Acc, int FM, int FN, int FK> struct Shape {
    using A = wmma::fragment<wmma::matrix_a, FM, FN, FK, In, wmma::row_major>;
    using B = wmma::fragment<wmma::matrix_b, FM, FN, FK, In, wmma::col_major>;
    using C = wmma::fragment<wmma::accumulator, FM, FN, FK, Acc>;
    static constexpr int M = FM, N = FN, K = FK;
};
template <int FM, int FN, int FK> struct ShapeTf32 {
    using A = wmma::fragment<wmma::matrix_a, FM, FN, FK, wmma::precision::tf32, wmma::row_major>;
    using B = wmma::fragment<wmma::matrix_b, FM, FN, FK, wmma::precision::tf32, wmma::col_major>;
    using C = wmma::fragment<wmma::accumulator, FM, FN, FK, float>;
    static constexpr int M = FM, N = FN, K = FK;
};

template <class S, class In, class Acc, int WARPS_M, int WARPS_N, int TM, int TN, int KSTEPS>
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32)
wmma_gemm(int M, int N, int K, const In* __restrict__ A, const In* __restrict__ B,
          Acc* __restrict__ C, Acc alpha, Acc beta)
{
    constexpr int BM = WARPS_M * TM * S::M, BN = WARPS_N * TN * S::N, BK = KSTEPS * S::K;
    constexpr int THREADS = WARPS_M * WARPS_N * 32;
    __shared__ __align__(32) In As[BM * BK];
    __shared__ __align__(32) In Bs[BN * BK];
    const int warp = threadIdx.x / 32, wm = warp % WARPS_M, wn = warp / WARPS_M;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    typename S::C acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) wmma::fill_fragment(acc[i][j], Acc(0));
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += THREADS)
            As[i] = A[(size_t)(m0 + i / BK) * K + k0 + i % BK];
        for (int i = threadIdx.x; i < BN * BK; i += THREADS)
            Bs[i] = B[(size_t)(n0 + i / BK) * K + k0 + i % BK];
        __syncthreads();
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks) {
            typename S::A a[TM];
            typename S::B b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                wmma::load_matrix_sync(a[i], As + ((wm * TM + i) * S::M) * BK + ks * S::K, BK);
#pragma unroll
            for (int j = 0; j < TN; ++j)
                wmma::load_matrix_sync(b[j], Bs + ((wn * TN + j) * S::N) * BK + ks * S::K, BK);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            Acc* out = C + (size_t)(m0 + (wm * TM + i) * S::M) * N + n0 + (wn * TN + j) * S::N;
            typename S::C old;
            wmma::load_matrix_sync(old, out, N, wmma::mem_row_major);
#pragma unroll
            for (int e = 0; e < old.num_elements; ++e) old.x[e] = alpha * acc[i][j].x[e] + beta * old.x[e];
            wmma::store_matrix_sync(out, old, N, wmma::mem_row_major);
        }
}

using H16 = Shape<__half, float, 16, 16, 16>;
using H32 = Shape<__half, float, 32, 8, 16>;
using H8 = Shape<__half, float, 8, 32, 16>;
using HH = Shape<__half, __half, 16, 16, 16>;
using B16 = Shape<__nv_bfloat16, float, 16, 16, 16>;
using I8 = Shape<signed char, int, 16, 16, 16>;
using U8 = Shape<unsigned char, int, 32, 8, 16>;
using T32 = ShapeTf32<16, 16, 8>;
using D64 = Shape<double, double, 8, 8, 4>;

template __global__ void wmma_gemm<H16, __half, float, 2, 2, 2, 2, 2>(int, int, int, const __half*, const __half*, float*, float, float);
template __global__ void wmma_gemm<H16, __half, float, 4, 2, 2, 4, 1>(int, int, int, const __half*, const __half*, float*, float, float);
template __global__ void wmma_gemm<H16, __half, float, 2, 2, 1, 1, 4>(int, int, int, const __half*, const __half*, float*, float, float);
template __global__ void wmma_gemm<H32, __half, float, 2, 2, 2, 2, 2>(int, int, int, const __half*, const __half*, float*, float, float);
template __global__ void wmma_gemm<H8, __half, float, 2, 1, 4, 1, 2>(int, int, int, const __half*, const __half*, float*, float, float);
template __global__ void wmma_gemm<HH, __half, __half, 2, 2, 2, 2, 2>(int, int, int, const __half*, const __half*, __half*, __half, __half);
template __global__ void wmma_gemm<B16, __nv_bfloat16, float, 2, 2, 2, 2, 2>(int, int, int, const __nv_bfloat16*, const __nv_bfloat16*, float*, float, float);
template __global__ void wmma_gemm<B16, __nv_bfloat16, float, 2, 4, 4, 2, 1>(int, int, int, const __nv_bfloat16*, const __nv_bfloat16*, float*, float, float);
template __global__ void wmma_gemm<I8, signed char, int, 2, 2, 2, 2, 2>(int, int, int, const signed char*, const signed char*, int*, int, int);
template __global__ void wmma_gemm<I8, signed char, int, 2, 2, 4, 4, 1>(int, int, int, const signed char*, const signed char*, int*, int, int);
template __global__ void wmma_gemm<U8, unsigned char, int, 2, 2, 2, 4, 2>(int, int, int, const unsigned char*, const unsigned char*, int*, int, int);
template __global__ void wmma_gemm<T32, float, float, 2, 2, 2, 2, 2>(int, int, int, const float*, const float*, float*, float, float);
template __global__ void wmma_gemm<T32, float, float, 2, 2, 1, 2, 4>(int, int, int, const float*, const float*, float*, float, float);
template __global__ void wmma_gemm<D64, double, double, 2, 2, 2, 2, 2>(int, int, int, const double*, const double*, double*, double, double);
template __global__ void wmma_gemm<D64, double, double, 2, 2, 4, 2, 1>(int, int, int, const double*, const double*, double*, double, double);

}  // namespace fam
