// mma.sync through inline PTX, fed by ldmatrix from shared memory, as hand-tuned libraries do:
// f16 and bf16 m16n8k16, tf32 m16n8k8, f64 m8n8k4, s8 m16n8k32; WM x WN mma tiles per warp.
#include <cuda_fp16.h>

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], const void* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(smem_u32(p)));
}

template <bool BF16>
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    if (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// 16-bit inputs: A tile [WM*16][32], B tile [WN*8][32] in shared memory (k contiguous).
template <bool BF16, int WM, int WN, int STAGES>
__global__ void mma_h16_gemm(int M, int N, int K, const unsigned short* __restrict__ A,
                             const unsigned short* __restrict__ B, float* __restrict__ C)
{
    constexpr int BK = 32, LD = BK + 8;
    __shared__ __align__(16) unsigned short As[STAGES][WM * 16][LD];
    __shared__ __align__(16) unsigned short Bs[STAGES][WN * 8][LD];
    const int lane = threadIdx.x;
    const size_t arow = (size_t)blockIdx.y * WM * 16, bcol = (size_t)blockIdx.x * WN * 8;
    float acc[WM][WN][4] = {};
    for (int k0 = 0, s = 0; k0 < K; k0 += BK, s = (s + 1) % STAGES) {
        for (int i = lane; i < WM * 16 * BK / 8; i += 32) {
            int r = i / (BK / 8), c = (i % (BK / 8)) * 8;
            *reinterpret_cast<uint4*>(&As[s][r][c]) = *reinterpret_cast<const uint4*>(&A[(arow + r) * K + k0 + c]);
        }
        for (int i = lane; i < WN * 8 * BK / 8; i += 32) {
            int r = i / (BK / 8), c = (i % (BK / 8)) * 8;
            *reinterpret_cast<uint4*>(&Bs[s][r][c]) = *reinterpret_cast<const uint4*>(&B[(bcol + r) * K + k0 + c]);
        }
        __syncwarp();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[WM][4], b[WN][2];
#pragma unroll
            for (int i = 0; i < WM; ++i)
                ldmatrix_x4(a[i], &As[s][i * 16 + (lane % 16)][kk + (lane / 16) * 8]);
#pragma unroll
            for (int j = 0; j < WN; ++j)
                ldmatrix_x2(b[j], &Bs[s][j * 8 + (lane % 8)][kk + ((lane / 8) % 2) * 8]);
#pragma unroll
            for (int i = 0; i < WM; ++i)
#pragma unroll
                for (int j = 0; j < WN; ++j) mma16816<BF16>(acc[i][j], a[i], b[j]);
        }
        __syncwarp();
    }
#pragma unroll
    for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int j = 0; j < WN; ++j) {
            size_t r = arow + i * 16 + lane / 4, c = bcol + j * 8 + (lane % 4) * 2;
            *reinterpret_cast<float2*>(&C[r * N + c]) = make_float2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<float2*>(&C[(r + 8) * N + c]) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}

#define H16(BF, WM, WN, ST) template __global__ void mma_h16_gemm<BF, WM, WN, ST>(int, int, int, const unsigned short*, const unsigned short*, float*);
H16(false, 1, 1, 1)
H16(false, 2, 2, 1)
H16(false, 2, 4, 2)
H16(false, 4, 4, 2)
H16(false, 4, 8, 1)
H16(true, 2, 2, 1)
H16(true, 4, 4, 2)
H16(true, 2, 8, 1)

// tf32 m16n8k8 straight from global memory (fragments loaded by lane arithmetic).
template <int WM, int WN>
__global__ void mma_tf32_gemm(int M, int N, int K, const float* __restrict__ A,
                              const float* __restrict__ B, float* __restrict__ C)
{
    const int lane = threadIdx.x & 31, g = lane / 4, t = lane % 4;
    const int row0 = blockIdx.y * WM * 16, col0 = blockIdx.x * WN * 8;
    float acc[WM][WN][4] = {};
    for (int k = 0; k < K; k += 8) {
        unsigned a[WM][4], b[WN][2];
#pragma unroll
        for (int i = 0; i < WM; ++i) {
            const float* p = A + (size_t)(row0 + i * 16 + g) * K + k + t;
            asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a[i][0]) : "f"(p[0]));
            asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a[i][1]) : "f"(p[8 * K]));
            asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a[i][2]) : "f"(p[4]));
            asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a[i][3]) : "f"(p[8 * K + 4]));
        }
#pragma unroll
        for (int j = 0; j < WN; ++j) {
            const float* p = B + (size_t)(col0 + j * 8 + g) * K + k + t;
            asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(b[j][0]) : "f"(p[0]));
            asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(b[j][1]) : "f"(p[4]));
        }
#pragma unroll
        for (int i = 0; i < WM; ++i)
#pragma unroll
            for (int j = 0; j < WN; ++j)
                asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                             "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                             : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
                             : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]),
                               "r"(b[j][0]), "r"(b[j][1]));
    }
#pragma unroll
    for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int j = 0; j < WN; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                C[(size_t)(row0 + i * 16 + g + (e / 2) * 8) * N + col0 + j * 8 + t * 2 + e % 2] = acc[i][j][e];
}

template __global__ void mma_tf32_gemm<1, 1>(int, int, int, const float*, const float*, float*);
template __global__ void mma_tf32_gemm<2, 2>(int, int, int, const float*, const float*, float*);
template __global__ void mma_tf32_gemm<2, 4>(int, int, int, const float*, const float*, float*);
template __global__ void mma_tf32_gemm<4, 4>(int, int, int, const float*, const float*, float*);

// f64 m8n8k4: double-precision tensor cores (each accumulator fragment is 2 doubles).
template <int WM, int WN>
__global__ void mma_f64_gemm(int M, int N, int K, const double* __restrict__ A,
                             const double* __restrict__ B, double* __restrict__ C)
{
    const int lane = threadIdx.x & 31, g = lane / 4, t = lane % 4;
    const int row0 = blockIdx.y * WM * 8, col0 = blockIdx.x * WN * 8;
    double acc[WM][WN][2] = {};
    for (int k = 0; k < K; k += 4) {
        double a[WM], b[WN];
#pragma unroll
        for (int i = 0; i < WM; ++i) a[i] = A[(size_t)(row0 + i * 8 + g) * K + k + t];
#pragma unroll
        for (int j = 0; j < WN; ++j) b[j] = B[(size_t)(col0 + j * 8 + g) * K + k + t];
#pragma unroll
        for (int i = 0; i < WM; ++i)
#pragma unroll
            for (int j = 0; j < WN; ++j)
                asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                             : "+d"(acc[i][j][0]), "+d"(acc[i][j][1]) : "d"(a[i]), "d"(b[j]));
    }
#pragma unroll
    for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int j = 0; j < WN; ++j) {
            size_t r = row0 + i * 8 + g, c = col0 + j * 8 + t * 2;
            C[r * N + c] = acc[i][j][0];
            C[r * N + c + 1] = acc[i][j][1];
        }
}

template __global__ void mma_f64_gemm<1, 1>(int, int, int, const double*, const double*, double*);
template __global__ void mma_f64_gemm<2, 2>(int, int, int, const double*, const double*, double*);
template __global__ void mma_f64_gemm<4, 4>(int, int, int, const double*, const double*, double*);
template __global__ void mma_f64_gemm<4, 8>(int, int, int, const double*, const double*, double*);

// int8 m16n8k32 with an int32 accumulator and a per-row dequantisation scale.
template <int WM, int WN>
__global__ void mma_s8_gemm(int M, int N, int K, const int* __restrict__ A, const int* __restrict__ B,
                            const float* __restrict__ scale, float* __restrict__ C)
{
    const int lane = threadIdx.x & 31, g = lane / 4, t = lane % 4;
    const int row0 = blockIdx.y * WM * 16, col0 = blockIdx.x * WN * 8, K4 = K / 4;
    int acc[WM][WN][4] = {};
    for (int k = 0; k < K4; k += 8) {
        unsigned a[WM][4], b[WN][2];
#pragma unroll
        for (int i = 0; i < WM; ++i) {
            const int* p = A + (size_t)(row0 + i * 16 + g) * K4 + k + t;
            a[i][0] = p[0]; a[i][1] = p[8 * K4]; a[i][2] = p[4]; a[i][3] = p[8 * K4 + 4];
        }
#pragma unroll
        for (int j = 0; j < WN; ++j) {
            const int* p = B + (size_t)(col0 + j * 8 + g) * K4 + k + t;
            b[j][0] = p[0]; b[j][1] = p[4];
        }
#pragma unroll
        for (int i = 0; i < WM; ++i)
#pragma unroll
            for (int j = 0; j < WN; ++j)
                asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
                             "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                             : "+r"(acc[i][j][0]), "+r"(acc[i][j][1]), "+r"(acc[i][j][2]), "+r"(acc[i][j][3])
                             : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]),
                               "r"(b[j][0]), "r"(b[j][1]));
    }
#pragma unroll
    for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int j = 0; j < WN; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                int r = row0 + i * 16 + g + (e / 2) * 8;
                C[(size_t)r * N + col0 + j * 8 + t * 2 + e % 2] = acc[i][j][e] * scale[r];
            }
}

template __global__ void mma_s8_gemm<1, 1>(int, int, int, const int*, const int*, const float*, float*);
template __global__ void mma_s8_gemm<2, 2>(int, int, int, const int*, const int*, const float*, float*);
template __global__ void mma_s8_gemm<2, 4>(int, int, int, const int*, const int*, const float*, float*);
template __global__ void mma_s8_gemm<4, 4>(int, int, int, const int*, const int*, const float*, float*);
