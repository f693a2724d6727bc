// Loads and stores with cache operators, atomics of every type and operation, local arrays,
// printf / assert, launch bounds, maxnreg and __grid_constant__.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

struct Params { const float* src; float* dst; int n; float scale[4]; };

extern "C" __global__ void __launch_bounds__(256, 2)
cache_ops(const float* __restrict__ a, const float4* __restrict__ a4, float* out, float4* out4,
          const double* ad, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = __ldg(a + i) + __ldcs(a + i + 1) + __ldlu(a + i + 2) + __ldcv(a + i + 3)
              + __ldca(a + i + 4) + __ldcg(a + i + 5);
    float4 v = __ldg(a4 + i);
    float4 w = __ldcs(a4 + i + 1);
    double d = __ldg(ad + i) + __ldcg(ad + i + 1);
    int2 ii = __ldg(reinterpret_cast<const int2*>(a) + i);
    __stcs(out + i, x);
    __stwb(out + i + 1, (float)d);
    __stcg(out + i + 2, (float)ii.x);
    __stwt(out + i + 3, (float)ii.y);
    __stcs(out4 + i, make_float4(v.x + w.x, v.y + w.y, v.z + w.z, v.w + w.w));
    volatile float* vol = out;
    vol[i + 4] = x * 2.f;
}

extern "C" __global__ void atomics(int* ip, unsigned* up, unsigned long long* ullp, long long* llp,
                                   float* fp, double* dp, __half* hp, __half2* h2p,
                                   __nv_bfloat16* bp, __nv_bfloat162* b2p, unsigned short* usp,
                                   int v)
{
    int t = threadIdx.x;
    int r = atomicAdd(ip, v) + atomicSub(ip + 1, v) + atomicExch(ip + 2, v) + atomicMin(ip + 3, v)
            + atomicMax(ip + 4, v) + atomicAnd(ip + 5, v) + atomicOr(ip + 6, v)
            + atomicXor(ip + 7, v) + atomicCAS(ip + 8, v, t);
    unsigned u = atomicInc(up, 17u) + atomicDec(up + 1, 9u) + atomicAdd(up + 2, 1u)
                 + atomicMin(up + 3, (unsigned)v) + atomicMax(up + 4, (unsigned)t)
                 + atomicCAS(up + 5, 1u, 2u);
    unsigned long long q = atomicAdd(ullp, 1ull) + atomicCAS(ullp + 1, 3ull, 4ull)
                           + atomicExch(ullp + 2, 5ull) + atomicMin(ullp + 3, 6ull)
                           + atomicMax(ullp + 4, 7ull) + atomicAnd(ullp + 5, 8ull)
                           + atomicOr(ullp + 6, 9ull) + atomicXor(ullp + 7, 10ull);
    long long s = atomicMin(llp, (long long)v) + atomicMax(llp + 1, (long long)t);
    float f = atomicAdd(fp, 1.5f) + atomicExch(fp + 1, 2.5f);
    double d = atomicAdd(dp, 0.25);
    __half h = atomicAdd(hp, __float2half(1.0f));
    __half2 h2 = atomicAdd(h2p, __floats2half2_rn(1.f, 2.f));
#if __CUDA_ARCH__ >= 800
    __nv_bfloat16 b = atomicAdd(bp, __float2bfloat16(1.0f));
    __nv_bfloat162 b2 = atomicAdd(b2p, __floats2bfloat162_rn(1.f, 2.f));
    float fb = __bfloat162float(b) + __low2float(b2);
#else
    float fb = 0.f;
#endif
#if __CUDA_ARCH__ >= 700
    unsigned short old = atomicCAS(usp, (unsigned short)1, (unsigned short)t);
#else
    unsigned short old = 0;
#endif
    int b1 = atomicAdd_block(ip + 9, 1) + atomicAdd_system(ip + 10, 1)
             + atomicCAS_block(ip + 11, 0, 1) + atomicExch_system(ip + 12, 3);
    float fs = atomicAdd_block(fp + 2, 1.f) + atomicMax_system(ip + 13, t);
    atomicAdd(ip + 14, 1);  // result unused: red.global.add
    atomicOr(up + 6, 1u);
    atomicAdd(fp + 3, 1.f);
    atomicAdd(dp + 1, 1.0);
    __shared__ int sh[32];
    __shared__ float shf[32];
    __shared__ double shd[32];
    sh[t & 31] = 0;
    __syncthreads();
    int sr = atomicAdd(&sh[t & 31], 1) + atomicCAS(&sh[(t + 1) & 31], 0, 1)
             + atomicMax(&sh[(t + 2) & 31], t);
    float sf = atomicAdd(&shf[t & 31], 1.f);
    double sd = atomicAdd(&shd[t & 31], 1.0);
    __syncthreads();
    ip[100 + t] = r + (int)u + (int)q + (int)s + (int)f + (int)d + (int)__half2float(h)
                  + (int)__low2float(h2) + (int)fb + old + b1 + (int)fs + sr + (int)sf + (int)sd;
}

__device__ __noinline__ float helper(float* buf, int k)
{
    float s = 0.f;
    for (int j = 0; j < k; ++j) s += buf[j] * buf[(j * 7) & 63];
    return s;
}

extern "C" __global__ void __maxnreg__(40) local_arrays(const float* in, float* out, int k)
{
    float buf[64];
    int idx[16];
    for (int j = 0; j < 64; ++j) buf[j] = in[j * blockDim.x + threadIdx.x];
    for (int j = 0; j < 16; ++j) idx[j] = (int)in[j] & 63;
    float s = helper(buf, k);
    for (int j = 0; j < 16; ++j) s += buf[idx[(j + k) & 15]];
    out[threadIdx.x] = s;
}

extern "C" __global__ void print_assert(const int* in, int n)
{
    int v = in[threadIdx.x];
    if (v < 0) printf("negative %d at %u (%f, %lld)\n", v, threadIdx.x, 1.5 * v, (long long)n);
    assert(v < n);
}

extern "C" __global__ void grid_const(const __grid_constant__ Params p)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float* s = &p.scale[i & 3];  // address of the parameter: stays in param space
    if (i < p.n) p.dst[i] = p.src[i] * *s;
}

extern "C" __global__ void dynamic_shared(const float* in, float* out)
{
    extern __shared__ float dyn[];
    dyn[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = dyn[blockDim.x - 1 - threadIdx.x];
}
