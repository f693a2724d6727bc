// Warp, bit, video, integer-dot and timing intrinsics: one kernel per family so NVRTC keeps
// every instruction (results are stored, nothing folds away).
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void warp_ops(const int* in, int* out, float* fout, unsigned mask_in)
{
    int t = threadIdx.x;
    int v = in[t];
    unsigned m = __activemask();
    int a = __shfl_sync(0xffffffffu, v, 3);
    int b = __shfl_up_sync(0xffffffffu, v, 1);
    int c = __shfl_down_sync(0xffffffffu, v, 2, 16);
    int d = __shfl_xor_sync(0xffffffffu, v, 4);
    float f = __shfl_xor_sync(0xffffffffu, (float)v * 0.5f, 1);
    double g = __shfl_sync(0xffffffffu, (double)v, 0);
    unsigned bal = __ballot_sync(mask_in, v > 3);
    int any = __any_sync(0xffffffffu, v == 7);
    int all = __all_sync(0xffffffffu, v != 9);
    int uni = __uni_sync(0xffffffffu, v & 1);
#if __CUDA_ARCH__ >= 700
    unsigned ma = __match_any_sync(0xffffffffu, v);
    int pred;
    unsigned mall = __match_all_sync(0xffffffffu, (long long)v, &pred);
#else
    unsigned ma = 0, mall = 0; int pred = 0;
#endif
#if __CUDA_ARCH__ >= 800
    unsigned ra = __reduce_add_sync(0xffffffffu, (unsigned)v);
    int rmin = __reduce_min_sync(0xffffffffu, v);
    int rmax = __reduce_max_sync(0xffffffffu, v);
    unsigned rand_ = __reduce_and_sync(0xffffffffu, (unsigned)v);
    unsigned ror = __reduce_or_sync(0xffffffffu, (unsigned)v);
    unsigned rxor = __reduce_xor_sync(0xffffffffu, (unsigned)v);
#else
    unsigned ra = 0, rand_ = 0, ror = 0, rxor = 0; int rmin = 0, rmax = 0;
#endif
    __syncwarp(m);
    out[t] = a + b + c + d + (int)bal + any + all + uni + (int)ma + (int)mall + pred
             + (int)ra + rmin + rmax + (int)rand_ + (int)ror + (int)rxor;
    fout[t] = f + (float)g;
}

extern "C" __global__ void bit_ops(const unsigned* in, const unsigned long long* in64,
                                   unsigned* out, unsigned long long* out64)
{
    int t = threadIdx.x;
    unsigned x = in[t], y = in[t + 32], z = in[t + 64];
    unsigned long long w = in64[t];
    unsigned r = __brev(x) ^ __byte_perm(x, y, 0x5410) ^ __funnelshift_l(x, y, z)
                 ^ __funnelshift_r(x, y, z) ^ __funnelshift_lc(x, y, 7) ^ __funnelshift_rc(x, y, z)
                 ^ __clz(x) ^ __ffs(y) ^ __popc(z) ^ __fns(x, 3, 2) ^ __clzll(w) ^ __ffsll(w)
                 ^ __popcll(w) ^ __usad(x, y, z) ^ __sad((int)x, (int)y, z) ^ __mul24((int)x, (int)y)
                 ^ __umul24(x, y) ^ __mulhi((int)x, (int)y) ^ __umulhi(x, y) ^ __uhadd(x, y)
                 ^ __urhadd(x, y) ^ (unsigned)__hadd((int)x, (int)y) ^ (unsigned)__rhadd((int)x, (int)z);
#if defined(__CUDACC_DEBUG__) && __CUDA_ARCH__ < 1000
    // NVRTC 13.x -G stops with "unsupported operation" on __dp4a/__dp2a below sm_100
    unsigned dp;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(dp) : "r"(x), "r"(y), "r"(z));
    r ^= dp;
    asm("dp2a.hi.s32.u32 %0, %1, %2, %3;" : "=r"(dp) : "r"(x), "r"(y), "r"(z));
    r ^= dp;
#else
    r ^= (unsigned)__dp4a((int)x, (int)y, (int)z) ^ __dp4a(x, y, z)
         ^ (unsigned)__dp2a_lo((int)x, (int)y, (int)z) ^ __dp2a_hi(x, y, z);
#endif
    r ^= __vadd2(x, y) ^ __vadd4(x, z) ^ __vsub2(x, y) ^ __vsub4(y, z) ^ __vabsdiffu2(x, y)
         ^ __vabsdiffs4(x, y) ^ __vavgu2(x, y) ^ __vavgs4(x, y) ^ __vmaxu4(x, z) ^ __vmins2(x, z)
         ^ __vcmpeq2(x, y) ^ __vcmpgtu4(x, z) ^ __vsetles2(x, y) ^ __vaddss4(x, y) ^ __vsads2(x, y)
         ^ __vnegss2(x) ^ __vabsss4(y);
    out[t] = r;
    out64[t] = __brevll(w) ^ __umul64hi(w, (unsigned long long)x) ^ (unsigned long long)__mul64hi((long long)w, 3)
               ^ ((w << (x & 63)) | (w >> (y & 63)));
}

extern "C" __global__ void float_ops(const float* in, const double* ind, float* out, double* outd)
{
    int t = threadIdx.x;
    float x = in[t], y = in[t + 32];
    double p = ind[t], q = ind[t + 32];
    float r = __fadd_rn(x, y) + __fadd_rz(x, y) + __fmul_ru(x, y) + __fmul_rd(x, y)
              + __fmaf_rn(x, y, 1.f) + __fmaf_rz(x, y, 2.f) + __fdividef(x, y) + __fdiv_rn(x, y)
              + __frcp_rn(x) + __fsqrt_rn(y) + __frsqrt_rn(x) + __expf(x) + __logf(y) + __sinf(x)
              + __cosf(y) + __exp10f(x) + __log2f(y) + __powf(x, y) + __saturatef(x)
              + sqrtf(x) + rsqrtf(y) + exp2f(x) + tanhf(y) + erff(x) + lgammaf(y) + fmodf(x, y)
              + copysignf(x, y) + fminf(x, y) + fmaxf(x, y) + fabsf(x) + truncf(y) + roundf(x)
              + rintf(y) + floorf(x) + ceilf(y) + (float)isnan(x) + (float)isinf(y)
              + (float)__float2int_rn(x) + (float)__float2uint_rz(y) + __int_as_float(__float_as_int(x))
              + (float)__float2ll_rd(x) + (float)__float2ull_ru(y) + __ll2float_rn((long long)t)
              + __uint2float_rz((unsigned)t) + (float)__double2float_rd(p);
    double s = __dadd_rn(p, q) + __dmul_rz(p, q) + __fma_rn(p, q, 1.0) + __ddiv_rn(p, q)
               + __drcp_rn(p) + __dsqrt_rn(q) + sqrt(p) + rsqrt(q) + exp(p) + log(q) + sin(p)
               + cos(q) + pow(p, q) + fmod(p, q) + fmin(p, q) + fmax(p, q) + fabs(p) + trunc(q)
               + floor(p) + ceil(q) + rint(p) + copysign(p, q) + (double)__double2int_rz(p)
               + (double)__double2ll_rn(q) + __longlong_as_double(__double_as_longlong(p))
               + (double)__double2hiint(q) + __hiloint2double(__double2hiint(p), __double2loint(q));
    out[t] = r;
    outd[t] = s;
}

extern "C" __global__ void half_ops(const __half2* h, const __nv_bfloat162* b, __half2* oh,
                                    __nv_bfloat162* ob, float* of)
{
    int t = threadIdx.x;
    __half2 x = h[t], y = h[t + 32];
    __nv_bfloat162 u = b[t], v = b[t + 32];
    __half2 r = __hadd2(x, y);
    r = __hfma2(r, x, y);
    r = __hmul2(r, __hsub2(x, y));
    r = __hmax2(r, x);
    r = __hmin2(r, y);
    r = __habs2(r);
    r = __hneg2(r);
    r = __hfma2_sat(r, x, y);
    r = __hadd2_sat(r, x);
    r = h2exp(r) + h2log(x) + h2sqrt(y) + h2rcp(r) + h2sin(x) + h2cos(y) + h2exp2(x) + h2rsqrt(y);
    r = __h2div(r, y);
    __half hx = __hadd(__low2half(x), __high2half(y));
    hx = __hfma(hx, __low2half(r), __float2half(1.5f));
    bool c = __hlt(hx, __low2half(y)) || __hbgt2(x, y) || __hisnan(hx);
#if __CUDA_ARCH__ >= 800
    __nv_bfloat162 s = __hadd2(u, v);
    s = __hfma2(s, u, v);
    s = __hmul2(s, __hsub2(u, v));
    s = __hmax2(s, u);
    s = __hmin2_nan(s, v);
    s = __hfma2_relu(s, u, v);
    s = h2exp(s) + h2sqrt(u);
    __nv_bfloat16 bx = __hadd(__low2bfloat16(u), __high2bfloat16(v));
    float fb = __bfloat162float(bx) + __low2float(s);
    r = __hfma2_relu(r, x, y);
    r = __hmax2_nan(r, y);
#else
    __nv_bfloat162 s = u; float fb = 0.f;
#endif
    oh[t] = r;
    ob[t] = s;
    of[t] = __half2float(hx) + __high2float(r) + fb + (float)c
            + __half2float(__float2half_rz(of[t])) + __bfloat162float(__float2bfloat16_rn(of[t + 1]))
            + (float)__half2int_rn(hx) + __half2float(__int2half_rd(t)) + __half2float(__ushort_as_half((unsigned short)t));
}

extern "C" __global__ void time_fence(unsigned long long* out, int* flag)
{
    long long c0 = clock64();
    unsigned c1 = clock();
    unsigned long long gt;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(gt));
    unsigned smid, warpid, lane, nsmid;
    asm("mov.u32 %0, %%smid;" : "=r"(smid));
    asm("mov.u32 %0, %%warpid;" : "=r"(warpid));
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    asm("mov.u32 %0, %%nsmid;" : "=r"(nsmid));
    unsigned lt;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
#if __CUDA_ARCH__ >= 700
    __nanosleep(100);
#endif
    __threadfence_block();
    __threadfence();
    __threadfence_system();
    atomicAdd(flag, 1);
    __syncthreads();
    int n = __syncthreads_count(flag[0] > 0);
    int a = __syncthreads_and(flag[1] > 0);
    int o = __syncthreads_or(flag[2] > 0);
    out[threadIdx.x] = c0 + c1 + gt + smid + warpid + lane + nsmid + lt + n + a + o;
}
