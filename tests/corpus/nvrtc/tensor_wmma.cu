// WMMA (nvcuda::wmma) GEMMs: each warp owns a WM x WN grid of fragments; f16, bf16, tf32,
// int8 and f64 inputs.  Shapes and layouts as the CUDA samples and libraries use them.
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

template <typename In, typename Acc, int FM, int FN, int FK, int WM, int WN>
__global__ void wmma_gemm(int M, int N, int K, const In* __restrict__ A, const In* __restrict__ B,
                          Acc* __restrict__ C)
{
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int tiles_n = N / (FN * WN);
    const int wr = warp / tiles_n, wc = warp % tiles_n;
    wmma::fragment<wmma::accumulator, FM, FN, FK, Acc> acc[WM][WN];
#pragma unroll
    for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int j = 0; j < WN; ++j) wmma::fill_fragment(acc[i][j], Acc(0));
    for (int k = 0; k < K; k += FK) {
        wmma::fragment<wmma::matrix_a, FM, FN, FK, In, wmma::row_major> a[WM];
        wmma::fragment<wmma::matrix_b, FM, FN, FK, In, wmma::col_major> b[WN];
#pragma unroll
        for (int i = 0; i < WM; ++i)
            wmma::load_matrix_sync(a[i], A + (size_t)(wr * WM + i) * FM * K + k, K);
#pragma unroll
        for (int j = 0; j < WN; ++j)
            wmma::load_matrix_sync(b[j], B + (size_t)(wc * WN + j) * FN * K + k, K);
#pragma unroll
        for (int i = 0; i < WM; ++i)
#pragma unroll
            for (int j = 0; j < WN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
#pragma unroll
    for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int j = 0; j < WN; ++j)
            wmma::store_matrix_sync(C + (size_t)(wr * WM + i) * FM * N + (wc * WN + j) * FN,
                                    acc[i][j], N, wmma::mem_row_major);
}

#define INST(In, Acc, FM, FN, FK, WM, WN) \
    template __global__ void wmma_gemm<In, Acc, FM, FN, FK, WM, WN>(int, int, int, const In*, const In*, Acc*);
INST(half, float, 16, 16, 16, 1, 1)
INST(half, float, 16, 16, 16, 2, 2)
INST(half, float, 16, 16, 16, 4, 2)
INST(half, float, 32, 8, 16, 2, 4)
INST(half, float, 8, 32, 16, 4, 1)
INST(half, half, 16, 16, 16, 2, 4)
INST(half, half, 16, 16, 16, 4, 4)
INST(__nv_bfloat16, float, 16, 16, 16, 2, 2)
INST(__nv_bfloat16, float, 16, 16, 16, 4, 2)
INST(signed char, int, 16, 16, 16, 2, 2)
INST(unsigned char, int, 16, 16, 16, 4, 2)
INST(double, double, 8, 8, 4, 1, 1)
INST(double, double, 8, 8, 4, 2, 2)
INST(double, double, 8, 8, 4, 4, 2)

// tf32: the inputs are float in memory and rounded to tf32 in the fragment.
template <int WM, int WN>
__global__ void wmma_tf32_gemm(int M, int N, int K, const float* __restrict__ A,
                               const float* __restrict__ B, float* __restrict__ C)
{
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int tiles_n = N / (16 * WN);
    const int wr = warp / tiles_n, wc = warp % tiles_n;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[WM][WN];
#pragma unroll
    for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int j = 0; j < WN; ++j) wmma::fill_fragment(acc[i][j], 0.f);
    for (int k = 0; k < K; k += 8) {
        wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a[WM];
        wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> b[WN];
#pragma unroll
        for (int i = 0; i < WM; ++i) {
            wmma::load_matrix_sync(a[i], A + (size_t)(wr * WM + i) * 16 * K + k, K);
#pragma unroll
            for (int t = 0; t < a[i].num_elements; ++t) a[i].x[t] = wmma::__float_to_tf32(a[i].x[t]);
        }
#pragma unroll
        for (int j = 0; j < WN; ++j) {
            wmma::load_matrix_sync(b[j], B + (size_t)(wc * WN + j) * 16 * K + k, K);
#pragma unroll
            for (int t = 0; t < b[j].num_elements; ++t) b[j].x[t] = wmma::__float_to_tf32(b[j].x[t]);
        }
#pragma unroll
        for (int i = 0; i < WM; ++i)
#pragma unroll
            for (int j = 0; j < WN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
#pragma unroll
    for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int j = 0; j < WN; ++j)
            wmma::store_matrix_sync(C + (size_t)(wr * WM + i) * 16 * N + (wc * WN + j) * 16,
                                    acc[i][j], N, wmma::mem_row_major);
}

template __global__ void wmma_tf32_gemm<1, 1>(int, int, int, const float*, const float*, float*);
template __global__ void wmma_tf32_gemm<2, 2>(int, int, int, const float*, const float*, float*);
template __global__ void wmma_tf32_gemm<4, 2>(int, int, int, const float*, const float*, float*);

// A block-tiled f16 WMMA GEMM staging A and B through shared memory (padded rows), with a
// float epilogue (alpha, beta, ReLU) applied through a shared-memory staging tile.
template <int WARPS_M, int WARPS_N>
__global__ void wmma_smem_gemm(int M, int N, int K, const half* __restrict__ A,
                               const half* __restrict__ B, float* __restrict__ C, float alpha,
                               float beta)
{
    constexpr int BM = 16 * WARPS_M * 2, BN = 16 * WARPS_N * 2, BK = 32, PAD = 8;
    __shared__ __align__(32) half As[BM][BK + PAD];
    __shared__ __align__(32) half Bs[BN][BK + PAD];
    __shared__ __align__(32) float Cs[WARPS_M * WARPS_N][16 * 16];
    const int warp = threadIdx.x / 32, wm = warp / WARPS_N, wn = warp % WARPS_N;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += blockDim.x)
            As[i / BK][i % BK] = A[(size_t)(blockIdx.y * BM + i / BK) * K + k0 + i % BK];
        for (int i = threadIdx.x; i < BN * BK; i += blockDim.x)
            Bs[i / BK][i % BK] = B[(size_t)(blockIdx.x * BN + i / BK) * K + k0 + i % BK];
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b[2];
            for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], &As[(wm * 2 + i) * 16][kk], BK + PAD);
            for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &Bs[(wn * 2 + j) * 16][kk], BK + PAD);
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    const int lane = threadIdx.x & 31;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
            wmma::store_matrix_sync(Cs[warp], acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32) {
                int r = blockIdx.y * BM + (wm * 2 + i) * 16 + e / 16;
                int c = blockIdx.x * BN + (wn * 2 + j) * 16 + e % 16;
                float v = alpha * Cs[warp][e] + beta * C[(size_t)r * N + c];
                C[(size_t)r * N + c] = v > 0.f ? v : 0.f;
            }
            __syncwarp();
        }
}

template __global__ void wmma_smem_gemm<2, 2>(int, int, int, const half*, const half*, float*, float, float);
template __global__ void wmma_smem_gemm<2, 4>(int, int, int, const half*, const half*, float*, float, float);
template __global__ void wmma_smem_gemm<4, 2>(int, int, int, const half*, const half*, float*, float, float);
