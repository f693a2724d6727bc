// Attention as llm.c-style code writes it without tensor cores: QK^T scores per thread, a
// causal softmax per row, the value reduction, a flash-style online softmax over key blocks
// with the query row in registers, rotary embeddings and the head permutes around them.
namespace fam {

#define INF __int_as_float(0x7f800000)

__device__ __forceinline__ float wsum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float wmax(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

template <int HS>
__global__ void attention_scores(float* __restrict__ att, const float* __restrict__ qkv, int B, int T, int NH)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * NH * T * T) return;
    int t2 = idx % T, t = (idx / T) % T, h = (idx / (T * T)) % NH, b = idx / (NH * T * T);
    if (t2 > t) { att[idx] = -INF; return; }
    const float* q = qkv + (size_t)(b * T + t) * 3 * NH * HS + h * HS;
    const float* k = qkv + (size_t)(b * T + t2) * 3 * NH * HS + NH * HS + h * HS;
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < HS; ++i) s += q[i] * k[i];
    att[idx] = s * rsqrtf((float)HS);
}

__global__ void causal_softmax(float* __restrict__ att, int rows, int T)
{
    int lane = threadIdx.x % 32, row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows) return;
    int t = row % T;
    float* x = att + (size_t)row * T;
    float mx = -INF;
    for (int i = lane; i <= t; i += 32) mx = fmaxf(mx, x[i]);
    mx = wmax(mx);
    float s = 0.f;
    for (int i = lane; i <= t; i += 32) s += __expf(x[i] - mx);
    float inv = 1.f / wsum(s);
    for (int i = lane; i < T; i += 32) x[i] = i <= t ? __expf(x[i] - mx) * inv : 0.f;
}

template <int HS>
__global__ void attention_values(float* __restrict__ out, const float* __restrict__ att, const float* __restrict__ qkv,
                                 int B, int T, int NH)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * T * NH) return;
    int h = idx % NH, t = (idx / NH) % T, b = idx / (NH * T);
    const float* a = att + ((size_t)(b * NH + h) * T + t) * T;
    float acc[HS] = {};
    for (int t2 = 0; t2 <= t; ++t2) {
        const float* v = qkv + (size_t)(b * T + t2) * 3 * NH * HS + 2 * NH * HS + h * HS;
#pragma unroll
        for (int i = 0; i < HS; ++i) acc[i] += a[t2] * v[i];
    }
#pragma unroll
    for (int i = 0; i < HS; ++i) out[(size_t)(b * T + t) * NH * HS + h * HS + i] = acc[i];
}

// flash-style: one thread per query, online softmax over keys, q and the output in registers
template <int HS, int KB>
__global__ void flash_rowwise(float* __restrict__ out, const float* __restrict__ q, const float* __restrict__ k,
                              const float* __restrict__ v, int T, float scale)
{
    __shared__ float ks[KB][HS];
    __shared__ float vs[KB][HS];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    size_t head = (size_t)blockIdx.y * T * HS;
    float qr[HS], o[HS];
#pragma unroll
    for (int i = 0; i < HS; ++i) { qr[i] = t < T ? q[head + (size_t)t * HS + i] * scale : 0.f; o[i] = 0.f; }
    float m = -INF, l = 0.f;
    for (int k0 = 0; k0 < T; k0 += KB) {
        for (int e = threadIdx.x; e < KB * HS; e += blockDim.x) {
            int r = e / HS, c = e % HS;
            ks[r][c] = k0 + r < T ? k[head + (size_t)(k0 + r) * HS + c] : 0.f;
            vs[r][c] = k0 + r < T ? v[head + (size_t)(k0 + r) * HS + c] : 0.f;
        }
        __syncthreads();
        for (int j = 0; j < KB && k0 + j <= t; ++j) {
            float s = 0.f;
#pragma unroll
            for (int i = 0; i < HS; ++i) s += qr[i] * ks[j][i];
            float mn = fmaxf(m, s), corr = __expf(m - mn), p = __expf(s - mn);
            l = l * corr + p;
#pragma unroll
            for (int i = 0; i < HS; ++i) o[i] = o[i] * corr + p * vs[j][i];
            m = mn;
        }
        __syncthreads();
    }
    if (t < T)
#pragma unroll
        for (int i = 0; i < HS; ++i) out[head + (size_t)t * HS + i] = o[i] / l;
}

template <int HS>
__global__ void rope(float* __restrict__ x, const float* __restrict__ freqs, int T, int NH)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int pair = idx % (HS / 2), h = (idx / (HS / 2)) % NH, t = idx / (HS / 2 * NH) % T;
    float* p = x + ((size_t)idx / (HS / 2)) * HS + 2 * pair;
    float c, s;
    __sincosf(t * freqs[pair], &s, &c);
    float a = p[0], b = p[1];
    p[0] = a * c - b * s;
    p[1] = a * s + b * c;
    (void)h;
}

__global__ void permute_qkv(float* __restrict__ q, float* __restrict__ k, float* __restrict__ v,
                            const float* __restrict__ inp, int B, int T, int NH, int HS)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * NH * T * HS) return;
    int d = idx % HS, t = (idx / HS) % T, h = (idx / (HS * T)) % NH, b = idx / (HS * T * NH);
    size_t src = (size_t)(b * T + t) * 3 * NH * HS + h * HS + d;
    q[idx] = inp[src];
    k[idx] = inp[src + NH * HS];
    v[idx] = inp[src + 2 * NH * HS];
}

template __global__ void attention_scores<32>(float*, const float*, int, int, int);
template __global__ void attention_scores<64>(float*, const float*, int, int, int);
template __global__ void attention_values<16>(float*, const float*, const float*, int, int, int);
template __global__ void attention_values<32>(float*, const float*, const float*, int, int, int);
template __global__ void attention_values<64>(float*, const float*, const float*, int, int, int);
template __global__ void flash_rowwise<16, 32>(float*, const float*, const float*, const float*, int, float);
template __global__ void flash_rowwise<32, 32>(float*, const float*, const float*, const float*, int, float);
template __global__ void flash_rowwise<64, 16>(float*, const float*, const float*, const float*, int, float);
template __global__ void rope<64>(float*, const float*, int, int);
template __global__ void rope<128>(float*, const float*, int, int);

}  // namespace fam
