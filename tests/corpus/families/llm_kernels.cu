// llm.c-style fused transformer kernels: encoder (token + position embedding), layernorm
// forward and backward, fused residual + layernorm, GELU forward and backward, bias + GELU,
// AdamW, fused classifier (softmax + cross-entropy), written with warp shuffles and vectors.
#include <cuda_bf16.h>

namespace fam {

#define INF __int_as_float(0x7f800000)

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

template <typename T> __device__ __forceinline__ float tof(T x) { return static_cast<float>(x); }
template <> __device__ __forceinline__ float tof(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T fromf(float x) { return static_cast<T>(x); }
template <> __device__ __forceinline__ __nv_bfloat16 fromf(float x) { return __float2bfloat16(x); }

template <typename T, int VEC>
__global__ void encoder_forward(T* __restrict__ out, const int* __restrict__ tokens, const T* __restrict__ wte,
                                const T* __restrict__ wpe, int B, int S, int C)
{
    int idx = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    if (idx >= B * S * C) return;
    int bt = idx / C, c = idx % C, t = bt % S;
    const T* w = wte + (size_t)tokens[bt] * C + c;
    const T* p = wpe + (size_t)t * C + c;
#pragma unroll
    for (int k = 0; k < VEC; ++k) out[idx + k] = fromf<T>(tof(w[k]) + tof(p[k]));
}

// one warp per row
template <typename T>
__global__ void layernorm_forward(T* __restrict__ out, float* __restrict__ mean, float* __restrict__ rstd,
                                  const T* __restrict__ inp, const T* __restrict__ w, const T* __restrict__ b,
                                  int N, int C)
{
    int lane = threadIdx.x % 32, row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= N) return;
    const T* x = inp + (size_t)row * C;
    float s = 0.f;
    for (int i = lane; i < C; i += 32) s += tof(x[i]);
    float m = warp_sum(s) / C;
    float v = 0.f;
    for (int i = lane; i < C; i += 32) { float d = tof(x[i]) - m; v += d * d; }
    float r = rsqrtf(warp_sum(v) / C + 1e-5f);
    for (int i = lane; i < C; i += 32)
        out[(size_t)row * C + i] = fromf<T>((tof(x[i]) - m) * r * tof(w[i]) + tof(b[i]));
    if (lane == 0) { mean[row] = m; rstd[row] = r; }
}

// residual add fused with layernorm, the row cached in registers (C = 32 * ITEMS)
template <int ITEMS>
__global__ void fused_residual_layernorm(float* __restrict__ res_out, float* __restrict__ ln_out,
                                         const float* __restrict__ a, const float* __restrict__ b,
                                         const float* __restrict__ w, const float* __restrict__ bias, int N)
{
    int lane = threadIdx.x % 32, row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= N) return;
    constexpr int C = 32 * ITEMS;
    float x[ITEMS];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        size_t i = (size_t)row * C + lane + 32 * k;
        x[k] = a[i] + b[i];
        res_out[i] = x[k];
        s += x[k];
    }
    float m = warp_sum(s) / C, v = 0.f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) { x[k] -= m; v += x[k] * x[k]; }
    float r = rsqrtf(warp_sum(v) / C + 1e-5f);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        int c = lane + 32 * k;
        ln_out[(size_t)row * C + c] = x[k] * r * w[c] + bias[c];
    }
}

template <typename T>
__global__ void layernorm_backward(T* __restrict__ dinp, float* __restrict__ dweight, float* __restrict__ dbias,
                                   const T* __restrict__ dout, const T* __restrict__ inp, const T* __restrict__ weight,
                                   const float* __restrict__ mean, const float* __restrict__ rstd, int N, int C)
{
    int lane = threadIdx.x % 32, row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= N) return;
    const T* d = dout + (size_t)row * C;
    const T* x = inp + (size_t)row * C;
    float m = mean[row], r = rstd[row], dn = 0.f, dnx = 0.f;
    for (int i = lane; i < C; i += 32) {
        float n = (tof(x[i]) - m) * r, dl = tof(weight[i]) * tof(d[i]);
        dn += dl; dnx += dl * n;
    }
    dn = warp_sum(dn) / C; dnx = warp_sum(dnx) / C;
    for (int i = lane; i < C; i += 32) {
        float n = (tof(x[i]) - m) * r, dl = tof(weight[i]) * tof(d[i]);
        atomicAdd(dbias + i, tof(d[i]));
        atomicAdd(dweight + i, n * tof(d[i]));
        dinp[(size_t)row * C + i] = fromf<T>(tof(dinp[(size_t)row * C + i]) + (dl - dn - n * dnx) * r);
    }
}

__device__ __forceinline__ float gelu(float x)
{
    float c = 0.7978845608f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.f + tanhf(c));
}
__device__ __forceinline__ float gelu_grad(float x)
{
    float c = 0.7978845608f * (x + 0.044715f * x * x * x), t = tanhf(c);
    float sech2 = 1.f - t * t;
    return 0.5f * (1.f + t) + 0.5f * x * sech2 * 0.7978845608f * (1.f + 3.f * 0.044715f * x * x);
}

template <typename T, int VEC>
__global__ void gelu_forward(T* __restrict__ out, const T* __restrict__ in, int n)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    if (i >= n) return;
#pragma unroll
    for (int k = 0; k < VEC; ++k) out[i + k] = fromf<T>(gelu(tof(in[i + k])));
}

template <typename T, int VEC>
__global__ void gelu_backward(T* __restrict__ dinp, const T* __restrict__ inp, const T* __restrict__ dout, int n)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    if (i >= n) return;
#pragma unroll
    for (int k = 0; k < VEC; ++k) dinp[i + k] = fromf<T>(gelu_grad(tof(inp[i + k])) * tof(dout[i + k]));
}

template <int VEC>
__global__ void bias_gelu(float* __restrict__ out, const float* __restrict__ bias, int rows, int C)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    if (i >= rows * C) return;
#pragma unroll
    for (int k = 0; k < VEC; ++k) out[i + k] = gelu(out[i + k] + bias[(i + k) % C]);
}

template <typename P>
__global__ void adamw(P* __restrict__ params, float* __restrict__ master, const P* __restrict__ grads,
                      float* __restrict__ m, float* __restrict__ v, size_t n, float lr, float b1, float b2,
                      float b1c, float b2c, float eps, float wd)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = tof(grads[i]);
    float mi = b1 * m[i] + (1.f - b1) * g, vi = b2 * v[i] + (1.f - b2) * g * g;
    m[i] = mi; v[i] = vi;
    float p = master ? master[i] : tof(params[i]);
    p -= lr * ((mi / b1c) / (sqrtf(vi / b2c) + eps) + wd * p);
    params[i] = fromf<P>(p);
    if (master) master[i] = p;
}

// softmax + cross-entropy + its gradient over the vocabulary, one block per row
template <int THREADS>
__global__ void __launch_bounds__(THREADS) fused_classifier(float* __restrict__ logits, float* __restrict__ losses,
                                                            const int* __restrict__ targets, int V, int Vp)
{
    __shared__ float red[THREADS / 32];
    int row = blockIdx.x, lane = threadIdx.x % 32, w = threadIdx.x / 32;
    float* x = logits + (size_t)row * Vp;
    float mx = -INF;
    for (int i = threadIdx.x; i < V; i += THREADS) mx = fmaxf(mx, x[i]);
    mx = warp_max(mx);
    if (lane == 0) red[w] = mx;
    __syncthreads();
    mx = lane < THREADS / 32 ? red[lane] : -INF;
    mx = warp_max(mx);
    __syncthreads();
    float s = 0.f;
    for (int i = threadIdx.x; i < V; i += THREADS) s += expf(x[i] - mx);
    s = warp_sum(s);
    if (lane == 0) red[w] = s;
    __syncthreads();
    s = warp_sum(lane < THREADS / 32 ? red[lane] : 0.f);
    int t = targets[row];
    if (threadIdx.x == 0) losses[row] = logf(s) + mx - x[t];
    for (int i = threadIdx.x; i < V; i += THREADS) {
        float p = expf(x[i] - mx) / s;
        x[i] = p - (i == t ? 1.f : 0.f);
    }
}

template __global__ void encoder_forward<float, 1>(float*, const int*, const float*, const float*, int, int, int);
template __global__ void encoder_forward<float, 4>(float*, const int*, const float*, const float*, int, int, int);
template __global__ void encoder_forward<__nv_bfloat16, 8>(__nv_bfloat16*, const int*, const __nv_bfloat16*, const __nv_bfloat16*, int, int, int);
template __global__ void layernorm_forward<float>(float*, float*, float*, const float*, const float*, const float*, int, int);
template __global__ void layernorm_forward<__nv_bfloat16>(__nv_bfloat16*, float*, float*, const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, int, int);
template __global__ void fused_residual_layernorm<4>(float*, float*, const float*, const float*, const float*, const float*, int);
template __global__ void fused_residual_layernorm<8>(float*, float*, const float*, const float*, const float*, const float*, int);
template __global__ void fused_residual_layernorm<24>(float*, float*, const float*, const float*, const float*, const float*, int);
template __global__ void fused_residual_layernorm<48>(float*, float*, const float*, const float*, const float*, const float*, int);
template __global__ void layernorm_backward<float>(float*, float*, float*, const float*, const float*, const float*, const float*, const float*, int, int);
template __global__ void layernorm_backward<__nv_bfloat16>(__nv_bfloat16*, float*, float*, const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, const float*, const float*, int, int);
template __global__ void gelu_forward<float, 1>(float*, const float*, int);
template __global__ void gelu_forward<float, 4>(float*, const float*, int);
template __global__ void gelu_forward<__nv_bfloat16, 8>(__nv_bfloat16*, const __nv_bfloat16*, int);
template __global__ void gelu_backward<float, 4>(float*, const float*, const float*, int);
template __global__ void gelu_backward<__nv_bfloat16, 8>(__nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, int);
template __global__ void bias_gelu<1>(float*, const float*, int, int);
template __global__ void bias_gelu<8>(float*, const float*, int, int);
template __global__ void adamw<float>(float*, float*, const float*, float*, float*, size_t, float, float, float, float, float, float, float);
template __global__ void adamw<__nv_bfloat16>(__nv_bfloat16*, float*, const __nv_bfloat16*, float*, float*, size_t, float, float, float, float, float, float, float);
template __global__ void fused_classifier<256>(float*, float*, const int*, int, int);
template __global__ void fused_classifier<1024>(float*, float*, const int*, int, int);

}  // namespace fam
