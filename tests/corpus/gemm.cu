// Tiled single-precision GEMM with a register tile, as a template.
template <int TILE, int TM, int TN>
__device__ void sgemm_tile(const float* __restrict__ A, const float* __restrict__ B,
                           float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE * TM];
    __shared__ float Bs[TILE][TILE * TN];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row0 = blockIdx.y * TILE * TM + ty * TM;
    int col0 = blockIdx.x * TILE * TN + tx * TN;
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += TILE) {
        for (int r = 0; r < TM; ++r)
            As[tx][ty * TM + r] = (row0 + r < M && k0 + tx < K) ? A[(row0 + r) * K + k0 + tx] : 0.0f;
        for (int c = 0; c < TN; ++c)
            Bs[ty][tx * TN + c] = (k0 + ty < K && col0 + c < N) ? B[(k0 + ty) * N + col0 + c] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TILE; ++kk) {
            float a[TM], b[TN];
#pragma unroll
            for (int r = 0; r < TM; ++r) a[r] = As[kk][ty * TM + r];
#pragma unroll
            for (int c = 0; c < TN; ++c) b[c] = Bs[kk][tx * TN + c];
#pragma unroll
            for (int r = 0; r < TM; ++r)
#pragma unroll
                for (int c = 0; c < TN; ++c)
                    acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int c = 0; c < TN; ++c)
            if (row0 + r < M && col0 + c < N)
                C[(row0 + r) * N + col0 + c] = acc[r][c];
}

extern "C" __global__ void sgemm_4x4(const float* A, const float* B, float* C, int M, int N, int K)
{
    sgemm_tile<16, 4, 4>(A, B, C, M, N, K);
}

extern "C" __global__ void __launch_bounds__(64) sgemm_8x8(const float* A, const float* B, float* C,
                                                          int M, int N, int K)
{
    sgemm_tile<8, 8, 8>(A, B, C, M, N, K);
}
