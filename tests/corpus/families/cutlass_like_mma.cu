// CUTLASS-like templated tensor-core GEMMs: a block of WARPS_M x WARPS_N warps, each warp
// computing MT x NT mma.sync tiles, a multi-stage cp.async pipeline from global to shared
// memory, fragments from ldmatrix (16- and 8-bit inputs) or plain shared loads (tf32, f64),
// and a linear-combination epilogue (alpha * acc + beta * C).
#include <cuda_fp16.h>
#include <cuda_bf16.h>

namespace fam {

__device__ __forceinline__ unsigned saddr(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool pred)
{
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %2, 0;\n"
                 "  @p cp.async.cg.shared.global [%0], [%1], 16; }\n"
                 :: "r"(saddr(dst)), "l"(src), "r"((int)pred));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }

__device__ __forceinline__ void ldsm4(unsigned* r, const void* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(saddr(p)));
}
__device__ __forceinline__ void ldsm2(unsigned* r, const void* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(saddr(p)));
}

// One mma.sync shape per element type: fragment sizes, K per instruction, the instruction.
struct F16 {
    using Elem = __half; using Acc = float;
    static constexpr int K = 16, A = 4, B = 2, C = 4, MI = 16, NI = 8, LDSM = 1;
    __device__ static void mma(Acc* d, const unsigned* a, const unsigned* b) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};
struct BF16 {
    using Elem = __nv_bfloat16; using Acc = float;
    static constexpr int K = 16, A = 4, B = 2, C = 4, MI = 16, NI = 8, LDSM = 1;
    __device__ static void mma(Acc* d, const unsigned* a, const unsigned* b) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};
struct S8 {
    using Elem = signed char; using Acc = int;
    static constexpr int K = 32, A = 4, B = 2, C = 4, MI = 16, NI = 8, LDSM = 1;
    __device__ static void mma(Acc* d, const unsigned* a, const unsigned* b) {
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};
struct TF32 {
    using Elem = float; using Acc = float;
    static constexpr int K = 8, A = 4, B = 2, C = 4, MI = 16, NI = 8, LDSM = 0;
    __device__ static void mma(Acc* d, const unsigned* a, const unsigned* b) {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};
struct F64 {
    using Elem = double; using Acc = double;
    static constexpr int K = 4, A = 2, B = 2, C = 2, MI = 8, NI = 8, LDSM = 0;
    __device__ static void mma(Acc* d, const unsigned* a, const unsigned* b) {
        double x = __hiloint2double(a[1], a[0]), y = __hiloint2double(b[1], b[0]);
        asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                     : "+d"(d[0]), "+d"(d[1]) : "d"(x), "d"(y));
    }
};

// Bytes of one row of the K slice, padded so ldmatrix rows fall in different banks.
template <class Op, int BK> struct Smem {
    static constexpr int ROW = BK * sizeof(typename Op::Elem) + 16;
};

template <class Op, int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES>
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32)
gemm_tc(int M, int N, int K, const typename Op::Elem* __restrict__ A,
        const typename Op::Elem* __restrict__ B, typename Op::Acc* __restrict__ C,
        typename Op::Acc alpha, typename Op::Acc beta)
{
    using Elem = typename Op::Elem;
    using Acc = typename Op::Acc;
    constexpr int THREADS = WARPS_M * WARPS_N * 32;
    constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;
    constexpr int MT = WTM / Op::MI, NT = WTN / Op::NI;
    constexpr int ROW = Smem<Op, BK>::ROW;
    constexpr int VEC = 16 / sizeof(Elem);
    extern __shared__ __align__(16) unsigned char smem[];
    unsigned char* sa = smem;
    unsigned char* sb = smem + STAGES * BM * ROW;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp % WARPS_M, wn = warp / WARPS_M;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int ktiles = K / BK;

    auto load_stage = [&](int stage, int kt) {
#pragma unroll
        for (int i = tid; i < BM * BK / VEC; i += THREADS) {
            int r = i / (BK / VEC), c = (i % (BK / VEC)) * VEC;
            cp_async16(sa + stage * BM * ROW + r * ROW + c * sizeof(Elem),
                       A + (size_t)(m0 + r) * K + kt * BK + c, m0 + r < M);
        }
#pragma unroll
        for (int i = tid; i < BN * BK / VEC; i += THREADS) {
            int r = i / (BK / VEC), c = (i % (BK / VEC)) * VEC;
            cp_async16(sb + stage * BN * ROW + r * ROW + c * sizeof(Elem),
                       B + (size_t)(n0 + r) * K + kt * BK + c, n0 + r < N);
        }
    };

    Acc acc[MT][NT][Op::C];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int c = 0; c < Op::C; ++c) acc[i][j][c] = Acc(0);

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load_stage(s, s);
        cp_commit();
    }
    for (int kt = 0; kt < ktiles; ++kt) {
        cp_wait<STAGES - 2>();
        __syncthreads();
        int next = kt + STAGES - 1;
        if (next < ktiles) load_stage(next % STAGES, next);
        cp_commit();
        const unsigned char* a_s = sa + (kt % STAGES) * BM * ROW + wm * WTM * ROW;
        const unsigned char* b_s = sb + (kt % STAGES) * BN * ROW + wn * WTN * ROW;
#pragma unroll
        for (int kk = 0; kk < BK; kk += Op::K) {
            unsigned af[MT][Op::A], bf[NT][Op::B];
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                if (Op::LDSM) {
                    ldsm4(af[i], a_s + (i * Op::MI + (lane & 15)) * ROW
                                 + (kk + (lane >> 4) * (Op::K / 2)) * sizeof(Elem));
                } else {
                    const unsigned* p = reinterpret_cast<const unsigned*>(
                        a_s + (i * Op::MI + (lane >> 2)) * ROW + (kk + (lane & 3)) * sizeof(Elem));
#pragma unroll
                    for (int r = 0; r < Op::A; ++r) af[i][r] = p[(r & 1) * 8 * ROW / 4 + (r >> 1) * 4 / (sizeof(Elem) / 4)];
                }
            }
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                if (Op::LDSM) {
                    ldsm2(bf[j], b_s + (j * Op::NI + (lane & 7)) * ROW
                                 + (kk + ((lane >> 3) & 1) * (Op::K / 2)) * sizeof(Elem));
                } else {
                    const unsigned* p = reinterpret_cast<const unsigned*>(
                        b_s + (j * Op::NI + (lane >> 2)) * ROW + (kk + (lane & 3)) * sizeof(Elem));
#pragma unroll
                    for (int r = 0; r < Op::B; ++r) bf[j][r] = p[r * 4 / (sizeof(Elem) / 4)];
                }
            }
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j) Op::mma(acc[i][j], af[i], bf[j]);
        }
    }
    cp_wait<0>();
    // epilogue: linear combination, each thread's fragment rows
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int c = 0; c < Op::C; ++c) {
                int row = m0 + wm * WTM + i * Op::MI + (lane >> 2) + (Op::C == 4 ? (c >> 1) * 8 : 0);
                int col = n0 + wn * WTN + j * Op::NI + (lane & 3) * 2 + (c & 1);
                if (row < M && col < N) {
                    Acc* out = C + (size_t)row * N + col;
                    *out = alpha * acc[i][j][c] + beta * *out;
                }
            }
}

template __global__ void gemm_tc<F16, 128, 128, 32, 2, 2, 3>(int, int, int, const __half*, const __half*, float*, float, float);
template __global__ void gemm_tc<F16, 128, 64, 32, 2, 2, 4>(int, int, int, const __half*, const __half*, float*, float, float);
template __global__ void gemm_tc<F16, 64, 64, 64, 2, 2, 2>(int, int, int, const __half*, const __half*, float*, float, float);
template __global__ void gemm_tc<F16, 256, 128, 32, 4, 2, 3>(int, int, int, const __half*, const __half*, float*, float, float);
template __global__ void gemm_tc<F16, 64, 32, 32, 2, 1, 3>(int, int, int, const __half*, const __half*, float*, float, float);
template __global__ void gemm_tc<BF16, 128, 128, 32, 2, 2, 3>(int, int, int, const __nv_bfloat16*, const __nv_bfloat16*, float*, float, float);
template __global__ void gemm_tc<BF16, 128, 256, 32, 2, 4, 3>(int, int, int, const __nv_bfloat16*, const __nv_bfloat16*, float*, float, float);
template __global__ void gemm_tc<BF16, 64, 64, 32, 2, 2, 5>(int, int, int, const __nv_bfloat16*, const __nv_bfloat16*, float*, float, float);
template __global__ void gemm_tc<S8, 128, 128, 64, 2, 2, 3>(int, int, int, const signed char*, const signed char*, int*, int, int);
template __global__ void gemm_tc<S8, 128, 256, 64, 2, 2, 3>(int, int, int, const signed char*, const signed char*, int*, int, int);
template __global__ void gemm_tc<S8, 64, 64, 64, 2, 2, 4>(int, int, int, const signed char*, const signed char*, int*, int, int);
template __global__ void gemm_tc<S8, 256, 128, 64, 4, 2, 3>(int, int, int, const signed char*, const signed char*, int*, int, int);
template __global__ void gemm_tc<TF32, 128, 128, 16, 2, 2, 3>(int, int, int, const float*, const float*, float*, float, float);
template __global__ void gemm_tc<TF32, 64, 64, 16, 2, 2, 4>(int, int, int, const float*, const float*, float*, float, float);
template __global__ void gemm_tc<TF32, 128, 64, 32, 2, 2, 3>(int, int, int, const float*, const float*, float*, float, float);
template __global__ void gemm_tc<F64, 64, 64, 16, 2, 2, 3>(int, int, int, const double*, const double*, double*, double, double);
template __global__ void gemm_tc<F64, 32, 32, 16, 2, 2, 4>(int, int, int, const double*, const double*, double*, double, double);
template __global__ void gemm_tc<F64, 128, 64, 16, 4, 2, 3>(int, int, int, const double*, const double*, double*, double, double);

}  // namespace fam
