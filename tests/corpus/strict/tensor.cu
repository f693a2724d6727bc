// Tensor cores and asynchronous copies up to sm_89: wmma (C++ API), mma.sync in several
// shapes and types, sparse mma, ldmatrix, cp.async with groups, mbarrier, fp8 mma on sm_89.
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
using namespace nvcuda;

extern "C" __global__ void wmma_f16(const half* a, const half* b, float* c, int lda)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    for (int k = 0; k < lda; k += 16) {
        wmma::load_matrix_sync(fa, a + k, lda);
        wmma::load_matrix_sync(fb, b + k, lda);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

extern "C" __global__ void wmma_int(const signed char* a, const signed char* b, int* c)
{
    wmma::fragment<wmma::matrix_a, 32, 8, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 32, 8, 16, signed char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 32, 8, 16, int> fc;
    wmma::fill_fragment(fc, 0);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc, true);
    wmma::store_matrix_sync(c, fc, 8, wmma::mem_col_major);
}

#if __CUDA_ARCH__ >= 800
extern "C" __global__ void wmma_tf32_bf16_f64(const float* a, const float* b, float* c,
                                              const __nv_bfloat16* p, const __nv_bfloat16* q,
                                              float* r, const double* x, const double* y,
                                              double* z)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
    wmma::load_matrix_sync(fa, a, 8);
    wmma::load_matrix_sync(fb, b, 16);
    for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    wmma::fill_fragment(fc, 0.f);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> ga;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> gb;
    wmma::load_matrix_sync(ga, p, 16);
    wmma::load_matrix_sync(gb, q, 16);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> gc;
    wmma::fill_fragment(gc, 0.f);
    wmma::mma_sync(gc, ga, gb, gc);
    wmma::store_matrix_sync(r, gc, 16, wmma::mem_col_major);
    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> da;
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> db;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> dc;
    wmma::load_matrix_sync(da, x, 4);
    wmma::load_matrix_sync(db, y, 4);
    wmma::fill_fragment(dc, 0.0);
    wmma::mma_sync(dc, da, db, dc);
    wmma::store_matrix_sync(z, dc, 8, wmma::mem_row_major);
}
#endif

extern "C" __global__ void mma_ptx(const unsigned* a, float* d, int* di, int k)
{
    __shared__ unsigned tile[32 * 8];
    int lane = threadIdx.x & 31;
    for (int j = lane; j < 256; j += 32) tile[j] = a[j];
    __syncthreads();
    unsigned a0, a1, a2, a3, b0, b1;
    unsigned sa = (unsigned)__cvta_generic_to_shared(&tile[(lane & 15) * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(sa));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
                 : "=r"(b0), "=r"(b1) : "r"(sa));
    float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
    int i0 = 0, i1 = 0;
    for (int t = 0; t < k; ++t) {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                     "{%0,%1,%2,%3};" : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
                     : "r"(a0), "r"(a1), "r"(b0));
        asm volatile("mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%0,%1}, {%2}, {%3}, {%0,%1};"
                     : "+r"(i0), "+r"(i1) : "r"(a2), "r"(b1));
#if __CUDA_ARCH__ >= 800
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        asm volatile("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+r"(i0), "+r"(i1), "+r"(*(int*)&c2), "+r"(*(int*)&c3)
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        asm volatile("mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0x0;"
                     : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(a0), "r"(a1),
                       "r"(a3));
        asm volatile("mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.xor.popc {%0,%1}, {%2}, "
                     "{%3}, {%0,%1};" : "+r"(i0), "+r"(i1) : "r"(a1), "r"(b0));
#endif
#if __CUDA_ARCH__ >= 890
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
    }
    d[lane * 4 + 0] = c0; d[lane * 4 + 1] = c1; d[lane * 4 + 2] = c2; d[lane * 4 + 3] = c3;
    di[lane * 2] = i0; di[lane * 2 + 1] = i1;
}

#if __CUDA_ARCH__ >= 800
extern "C" __global__ void async_copy(const float4* src, float4* dst, int tiles)
{
    __shared__ float4 buf[2][128];
    __shared__ unsigned long long bar;
    int t = threadIdx.x;
    unsigned sbar = (unsigned)__cvta_generic_to_shared(&bar);
    if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(sbar), "r"(blockDim.x));
    __syncthreads();
    __pipeline_memcpy_async(&buf[0][t], &src[t], sizeof(float4));
    __pipeline_commit();
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int i = 1; i < tiles; ++i) {
        unsigned s = (unsigned)__cvta_generic_to_shared(&buf[i & 1][t]);
        asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;"
                     :: "r"(s), "l"(&src[i * 128 + t]));
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8, 4;" :: "r"(s), "l"(&src[i * 128 + t]));
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 1;");
        __pipeline_wait_prior(0);
        float4 v = buf[(i - 1) & 1][t];
        acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
    }
    asm volatile("cp.async.wait_all;");
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" :: "r"(sbar));
    unsigned long long state;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(sbar));
    asm volatile("{ .reg .pred p; W: mbarrier.test_wait.shared.b64 p, [%0], %1; @!p bra W; }"
                 :: "r"(sbar), "l"(state));
    unsigned cnt;
    asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(cnt) : "l"(state));
    asm volatile("mbarrier.inval.shared.b64 [%0];" :: "r"(sbar));
    acc.x += cnt;
    dst[t] = acc;
}
#endif
