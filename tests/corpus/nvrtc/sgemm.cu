// Register-tiled GEMMs the way CUTLASS-era hand kernels write them: a block tile in shared
// memory, a TM x TN register tile per thread, the K loop staged through shared memory.

template <int BM, int BN, int BK, int TM, int TN>
__global__ void sgemm_regtile(int M, int N, int K, float alpha, const float* __restrict__ A,
                              const float* __restrict__ B, float beta, float* __restrict__ C)
{
    constexpr int THREADS = (BM / TM) * (BN / TN);
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {};
    float ra[TM], rb[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += THREADS) {
            int r = i / BK, c = i % BK;
            As[c][r] = (row0 + r < M && k0 + c < K) ? A[(row0 + r) * K + k0 + c] : 0.f;
        }
        for (int i = threadIdx.x; i < BK * BN; i += THREADS) {
            int r = i / BN, c = i % BN;
            Bs[r][c] = (k0 + r < K && col0 + c < N) ? B[(k0 + r) * N + col0 + c] : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
            for (int i = 0; i < TM; ++i) ra[i] = As[kk][ty * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) rb[j] = Bs[kk][tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            int r = row0 + ty * TM + i, c = col0 + tx * TN + j;
            if (r < M && c < N) C[r * N + c] = alpha * acc[i][j] + beta * C[r * N + c];
        }
}

template __global__ void sgemm_regtile<32, 32, 8, 2, 2>(int, int, int, float, const float*, const float*, float, float*);
template __global__ void sgemm_regtile<64, 64, 8, 4, 4>(int, int, int, float, const float*, const float*, float, float*);
template __global__ void sgemm_regtile<64, 64, 16, 8, 4>(int, int, int, float, const float*, const float*, float, float*);
template __global__ void sgemm_regtile<128, 64, 8, 8, 4>(int, int, int, float, const float*, const float*, float, float*);
template __global__ void sgemm_regtile<128, 128, 8, 8, 8>(int, int, int, float, const float*, const float*, float, float*);
template __global__ void sgemm_regtile<64, 128, 8, 4, 8>(int, int, int, float, const float*, const float*, float, float*);
template __global__ void sgemm_regtile<32, 64, 16, 4, 2>(int, int, int, float, const float*, const float*, float, float*);

// float4 global loads into registers first (a software pipeline: the next tile's loads are in
// flight while the current tile is multiplied), then stored to shared memory transposed.
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_vec4_prefetch(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C)
{
    constexpr int THREADS = (BM / TM) * (BN / TN);
    constexpr int A_LOADS = BM * BK / 4 / THREADS;
    constexpr int B_LOADS = BK * BN / 4 / THREADS;
    __shared__ float As[BK][BM];
    __shared__ __align__(16) float Bs[BK][BN];
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    const float* Ab = A + blockIdx.y * BM * K;
    const float* Bb = B + blockIdx.x * BN;
    float4 pa[A_LOADS], pb[B_LOADS];
    float acc[TM][TN] = {};
    auto fetch = [&](int k0) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            int i = (threadIdx.x + l * THREADS) * 4;
            pa[l] = *reinterpret_cast<const float4*>(Ab + (i / BK) * K + k0 + i % BK);
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            int i = (threadIdx.x + l * THREADS) * 4;
            pb[l] = *reinterpret_cast<const float4*>(Bb + (k0 + i / BN) * N + i % BN);
        }
    };
    fetch(0);
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            int i = (threadIdx.x + l * THREADS) * 4;
            As[i % BK + 0][i / BK] = pa[l].x; As[i % BK + 1][i / BK] = pa[l].y;
            As[i % BK + 2][i / BK] = pa[l].z; As[i % BK + 3][i / BK] = pa[l].w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            int i = (threadIdx.x + l * THREADS) * 4;
            *reinterpret_cast<float4*>(&Bs[i / BN][i % BN]) = pb[l];
        }
        __syncthreads();
        if (k0 + BK < K) fetch(k0 + BK);
#pragma unroll
        for (int kk = 0; kk < BK; ++kk)
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] = fmaf(As[kk][ty * TM + i], Bs[kk][tx * TN + j], acc[i][j]);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            *reinterpret_cast<float4*>(&C[(blockIdx.y * BM + ty * TM + i) * N + blockIdx.x * BN + tx * TN + j]) =
                make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
}

template __global__ void sgemm_vec4_prefetch<64, 64, 16, 4, 4>(int, int, int, const float*, const float*, float*);
template __global__ void sgemm_vec4_prefetch<128, 128, 8, 8, 8>(int, int, int, const float*, const float*, float*);
template __global__ void sgemm_vec4_prefetch<128, 64, 16, 8, 4>(int, int, int, const float*, const float*, float*);
template __global__ void sgemm_vec4_prefetch<64, 128, 16, 4, 8>(int, int, int, const float*, const float*, float*);

// Double precision, smaller register tiles (each accumulator is a register pair).
template <int BM, int BN, int BK, int TM, int TN>
__global__ void dgemm_regtile(int M, int N, int K, const double* __restrict__ A,
                              const double* __restrict__ B, double* __restrict__ C)
{
    constexpr int THREADS = (BM / TM) * (BN / TN);
    __shared__ double As[BK][BM + 1];
    __shared__ double Bs[BK][BN];
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    double acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += THREADS)
            As[i % BK][i / BK] = A[(blockIdx.y * BM + i / BK) * K + k0 + i % BK];
        for (int i = threadIdx.x; i < BK * BN; i += THREADS)
            Bs[i / BN][i % BN] = B[(k0 + i / BN) * N + blockIdx.x * BN + i % BN];
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk)
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] = fma(As[kk][ty * TM + i], Bs[kk][tx * TN + j], acc[i][j]);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            C[(blockIdx.y * BM + ty * TM + i) * N + blockIdx.x * BN + tx * TN + j] = acc[i][j];
}

template __global__ void dgemm_regtile<32, 32, 8, 2, 2>(int, int, int, const double*, const double*, double*);
template __global__ void dgemm_regtile<64, 64, 8, 4, 4>(int, int, int, const double*, const double*, double*);
template __global__ void dgemm_regtile<64, 32, 8, 4, 2>(int, int, int, const double*, const double*, double*);
template __global__ void dgemm_regtile<128, 64, 4, 8, 4>(int, int, int, const double*, const double*, double*);
template __global__ void dgemm_regtile<64, 64, 8, 8, 8>(int, int, int, const double*, const double*, double*);

// Batched GEMV (one warp per row, a shuffle reduction), for float and double.
template <typename T, int VEC>
__global__ void gemv_warp_row(int rows, int cols, const T* __restrict__ A, const T* __restrict__ x,
                              T* __restrict__ y)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x & 31;
    if (row >= rows) return;
    T sum = 0;
    for (int c = lane * VEC; c < cols; c += 32 * VEC)
#pragma unroll
        for (int v = 0; v < VEC; ++v) sum += A[(size_t)row * cols + c + v] * x[c + v];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) y[row] = sum;
}

template __global__ void gemv_warp_row<float, 1>(int, int, const float*, const float*, float*);
template __global__ void gemv_warp_row<float, 4>(int, int, const float*, const float*, float*);
template __global__ void gemv_warp_row<double, 2>(int, int, const double*, const double*, double*);
