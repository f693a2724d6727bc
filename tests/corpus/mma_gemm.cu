// Tensor-core GEMM tiles through inline mma.sync: a bf16 one (m16n8k16, f32 accumulators,
// 2x4 warp tile) and a double precision one (m8n8k4, f64 accumulators, 4x4 warp tile).
// Fragments are read with constant offsets from one base pointer; the k loop has a runtime
// trip count, so ptxas decides how far to unroll it.

extern "C" __global__ void mma_gemm_bf16(const unsigned* __restrict__ a,
                                         const unsigned* __restrict__ b,
                                         float* __restrict__ c, int ktiles)
{
    int lane = threadIdx.x & 31;
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const unsigned* pa = a + warp * ktiles * 256 + lane * 4;
    const unsigned* pb = b + warp * ktiles * 256 + lane * 2;
    float acc[2][4][4];
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int n = 0; n < 4; ++n)
#pragma unroll
            for (int q = 0; q < 4; ++q)
                acc[m][n][q] = 0.0f;
    for (int kt = 0; kt < ktiles; ++kt) {
        unsigned af[2][4], bf[4][2];
#pragma unroll
        for (int m = 0; m < 2; ++m)
#pragma unroll
            for (int q = 0; q < 4; ++q)
                af[m][q] = pa[kt * 256 + m * 128 + q];
#pragma unroll
        for (int n = 0; n < 4; ++n)
#pragma unroll
            for (int q = 0; q < 2; ++q)
                bf[n][q] = pb[kt * 256 + n * 64 + q];
#pragma unroll
        for (int m = 0; m < 2; ++m)
#pragma unroll
            for (int n = 0; n < 4; ++n)
                asm volatile(
                    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                    "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                    : "+f"(acc[m][n][0]), "+f"(acc[m][n][1]), "+f"(acc[m][n][2]),
                      "+f"(acc[m][n][3])
                    : "r"(af[m][0]), "r"(af[m][1]), "r"(af[m][2]), "r"(af[m][3]),
                      "r"(bf[n][0]), "r"(bf[n][1]));
    }
    float* pc = c + warp * 1024 + lane * 4;
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int n = 0; n < 4; ++n)
#pragma unroll
            for (int q = 0; q < 4; ++q)
                pc[(m * 4 + n) * 128 + q] = acc[m][n][q];
}

extern "C" __global__ void mma_gemm_f64(const double* __restrict__ a,
                                        const double* __restrict__ b,
                                        double* __restrict__ c, int ktiles)
{
    int lane = threadIdx.x & 31;
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const double* pa = a + warp * ktiles * 128 + lane;
    const double* pb = b + warp * ktiles * 128 + lane;
    double acc[4][4][2];
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
        for (int n = 0; n < 4; ++n)
            acc[m][n][0] = acc[m][n][1] = 0.0;
    for (int kt = 0; kt < ktiles; ++kt) {
        double af[4], bf[4];
#pragma unroll
        for (int m = 0; m < 4; ++m)
            af[m] = pa[kt * 128 + m * 32];
#pragma unroll
        for (int n = 0; n < 4; ++n)
            bf[n] = pb[kt * 128 + n * 32];
#pragma unroll
        for (int m = 0; m < 4; ++m)
#pragma unroll
            for (int n = 0; n < 4; ++n)
                asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, "
                             "{%3}, {%0, %1};"
                             : "+d"(acc[m][n][0]), "+d"(acc[m][n][1])
                             : "d"(af[m]), "d"(bf[n]));
    }
    double* pc = c + warp * 1024 + lane * 2;
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
        for (int n = 0; n < 4; ++n) {
            pc[(m * 4 + n) * 64] = acc[m][n][0];
            pc[(m * 4 + n) * 64 + 1] = acc[m][n][1];
        }
}
