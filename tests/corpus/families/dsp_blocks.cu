// Straight-line signal-processing blocks per thread: an FIR filter on a run of samples, an
// 8x8 DCT (rows then columns), a radix-8 FFT butterfly, a bitonic sorting network in
// registers and Horner polynomials: long runs of loads feeding long straight-line arithmetic.
namespace fam {

template <int TAPS, int OUT>
__global__ void fir_run(const float* __restrict__ x, const float* __restrict__ h, float* __restrict__ y, int n)
{
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * OUT;
    if (base + OUT + TAPS > n) return;
    float w[OUT + TAPS - 1];
#pragma unroll
    for (int i = 0; i < OUT + TAPS - 1; ++i) w[i] = x[base + i];
#pragma unroll
    for (int o = 0; o < OUT; ++o) {
        float acc = 0.f;
#pragma unroll
        for (int t = 0; t < TAPS; ++t) acc += h[t] * w[o + t];
        y[base + o] = acc;
    }
}

template <typename T>
__global__ void dct8x8(const T* __restrict__ in, T* __restrict__ out, int width)
{
    int bx = (blockIdx.x * blockDim.x + threadIdx.x) * 8, by = blockIdx.y * 8;
    T v[8][8];
#pragma unroll
    for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int c = 0; c < 8; ++c) v[r][c] = in[(size_t)(by + r) * width + bx + c];
    const T k[8] = {T(0.3535533906), T(0.4903926402), T(0.4619397663), T(0.4157348062),
                    T(0.3535533906), T(0.2777851165), T(0.1913417162), T(0.0975451610)};
#pragma unroll
    for (int pass = 0; pass < 2; ++pass) {
        T t[8][8];
#pragma unroll
        for (int r = 0; r < 8; ++r)
#pragma unroll
            for (int u = 0; u < 8; ++u) {
                T s = T(0);
#pragma unroll
                for (int c = 0; c < 8; ++c) s += v[r][c] * (((u * (2 * c + 1)) & 16) ? -k[(u * (2 * c + 1)) % 16 > 8 ? 16 - (u * (2 * c + 1)) % 16 : (u * (2 * c + 1)) % 16 & 7] : k[((u * (2 * c + 1)) % 16) & 7]);
                t[u][r] = s;
            }
#pragma unroll
        for (int r = 0; r < 8; ++r)
#pragma unroll
            for (int c = 0; c < 8; ++c) v[r][c] = t[r][c];
    }
#pragma unroll
    for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int c = 0; c < 8; ++c) out[(size_t)(by + r) * width + bx + c] = v[r][c];
}

__device__ __forceinline__ void bfly(float2& a, float2& b, float c, float s)
{
    float2 t = make_float2(b.x * c - b.y * s, b.x * s + b.y * c);
    b = make_float2(a.x - t.x, a.y - t.y);
    a = make_float2(a.x + t.x, a.y + t.y);
}

template <int R>
__global__ void fft_radix(float2* __restrict__ data, int stride)
{
    int base = blockIdx.x * blockDim.x + threadIdx.x;
    float2 v[R];
#pragma unroll
    for (int i = 0; i < R; ++i) v[i] = data[base + i * stride];
#pragma unroll
    for (int len = 2; len <= R; len *= 2)
#pragma unroll
        for (int i = 0; i < R; i += len)
#pragma unroll
            for (int j = 0; j < len / 2; ++j) {
                float s, c;
                __sincosf(-6.2831853f * j / len, &s, &c);
                bfly(v[i + j], v[i + j + len / 2], c, s);
            }
#pragma unroll
    for (int i = 0; i < R; ++i) data[base + i * stride] = v[i];
}

template <int N, typename T>
__global__ void bitonic_regs(T* __restrict__ a)
{
    T v[N];
    size_t base = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * N;
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = a[base + i];
#pragma unroll
    for (int k = 2; k <= N; k *= 2)
#pragma unroll
        for (int j = k / 2; j > 0; j /= 2)
#pragma unroll
            for (int i = 0; i < N; ++i) {
                int l = i ^ j;
                if (l > i) {
                    bool up = (i & k) == 0;
                    T x = v[i], y = v[l];
                    if ((x > y) == up) { v[i] = y; v[l] = x; }
                }
            }
#pragma unroll
    for (int i = 0; i < N; ++i) a[base + i] = v[i];
}

template <int DEG, typename T>
__global__ void horner_many(const T* __restrict__ x, const T* __restrict__ coef, T* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    T c[DEG + 1];
#pragma unroll
    for (int d = 0; d <= DEG; ++d) c[d] = coef[d];
    T xv = x[i], acc = c[DEG];
#pragma unroll
    for (int d = DEG - 1; d >= 0; --d) acc = acc * xv + c[d];
    y[i] = acc;
}

template __global__ void fir_run<8, 8>(const float*, const float*, float*, int);
template __global__ void fir_run<16, 8>(const float*, const float*, float*, int);
template __global__ void fir_run<16, 16>(const float*, const float*, float*, int);
template __global__ void fir_run<32, 16>(const float*, const float*, float*, int);
template __global__ void fir_run<4, 32>(const float*, const float*, float*, int);
template __global__ void dct8x8<float>(const float*, float*, int);
template __global__ void dct8x8<double>(const double*, double*, int);
template __global__ void fft_radix<4>(float2*, int);
template __global__ void fft_radix<8>(float2*, int);
template __global__ void fft_radix<16>(float2*, int);
template __global__ void bitonic_regs<8, float>(float*);
template __global__ void bitonic_regs<16, float>(float*);
template __global__ void bitonic_regs<32, int>(int*);
template __global__ void bitonic_regs<16, double>(double*);
template __global__ void horner_many<8, float>(const float*, const float*, float*, int);
template __global__ void horner_many<24, float>(const float*, const float*, float*, int);
template __global__ void horner_many<12, double>(const double*, const double*, double*, int);

}  // namespace fam
