// Wavelet transforms by lifting, straight-line per thread: Haar, CDF 5/3 and CDF 9/7 on a
// run of samples read at once (long runs of loads), several levels unrolled, and a 2D
// Haar step on a 2x2 block of tiles.
namespace fam {

template <int N, typename T>
__global__ void haar_levels(const T* __restrict__ in, T* __restrict__ out, int n)
{
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * N;
    if (base + N > n) return;
    T v[N];
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = in[base + i];
#pragma unroll
    for (int len = N; len > 1; len /= 2) {
        T t[N];
#pragma unroll
        for (int i = 0; i < len / 2; ++i) {
            t[i] = (v[2 * i] + v[2 * i + 1]) * T(0.7071067811865476);
            t[len / 2 + i] = (v[2 * i] - v[2 * i + 1]) * T(0.7071067811865476);
        }
#pragma unroll
        for (int i = 0; i < len; ++i) v[i] = t[i];
    }
#pragma unroll
    for (int i = 0; i < N; ++i) out[base + i] = v[i];
}

// CDF 5/3 (LeGall) lifting on N samples with one halo sample each side
template <int N, typename T>
__global__ void cdf53(const T* __restrict__ in, T* __restrict__ lo, T* __restrict__ hi, int n)
{
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * N;
    if (base < 2 || base + N + 2 > n) return;
    T x[N + 4];
#pragma unroll
    for (int i = 0; i < N + 4; ++i) x[i] = in[base - 2 + i];
#pragma unroll
    for (int i = 1; i < N + 4 - 1; i += 2) x[i] -= T(0.5) * (x[i - 1] + x[i + 1]);
#pragma unroll
    for (int i = 2; i < N + 4 - 1; i += 2) x[i] += T(0.25) * (x[i - 1] + x[i + 1]);
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
        lo[base / 2 + i] = x[2 + 2 * i];
        hi[base / 2 + i] = x[3 + 2 * i];
    }
}

// CDF 9/7 lifting: four lifting steps and a scaling, N samples, two halo samples each side
template <int N, typename T>
__global__ void cdf97(const T* __restrict__ in, T* __restrict__ out, int n)
{
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * N;
    if (base < 4 || base + N + 4 > n) return;
    T x[N + 8];
#pragma unroll
    for (int i = 0; i < N + 8; ++i) x[i] = in[base - 4 + i];
    const T a = T(-1.586134342), b = T(-0.05298011854), c = T(0.8829110762), d = T(0.4435068522);
#pragma unroll
    for (int i = 1; i < N + 7; i += 2) x[i] += a * (x[i - 1] + x[i + 1]);
#pragma unroll
    for (int i = 2; i < N + 7; i += 2) x[i] += b * (x[i - 1] + x[i + 1]);
#pragma unroll
    for (int i = 3; i < N + 7; i += 2) x[i] += c * (x[i - 1] + x[i + 1]);
#pragma unroll
    for (int i = 4; i < N + 7; i += 2) x[i] += d * (x[i - 1] + x[i + 1]);
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
        out[base / 2 + i] = x[4 + 2 * i] * T(1.149604398);
        out[n / 2 + base / 2 + i] = x[5 + 2 * i] * T(0.8698644523);
    }
}

// 2D Haar on a KxK tile per thread: rows then columns, all in registers
template <int K, typename T>
__global__ void haar2d_tile(const T* __restrict__ img, T* __restrict__ out, int width)
{
    int tx = (blockIdx.x * blockDim.x + threadIdx.x) * K, ty = (blockIdx.y * blockDim.y + threadIdx.y) * K;
    T v[K][K];
#pragma unroll
    for (int r = 0; r < K; ++r)
#pragma unroll
        for (int c = 0; c < K; ++c) v[r][c] = img[(size_t)(ty + r) * width + tx + c];
#pragma unroll
    for (int r = 0; r < K; ++r)
#pragma unroll
        for (int c = 0; c < K / 2; ++c) {
            T s = v[r][2 * c] + v[r][2 * c + 1], d = v[r][2 * c] - v[r][2 * c + 1];
            v[r][2 * c] = s; v[r][2 * c + 1] = d;
        }
#pragma unroll
    for (int r = 0; r < K / 2; ++r)
#pragma unroll
        for (int c = 0; c < K; ++c) {
            T s = v[2 * r][c] + v[2 * r + 1][c], d = v[2 * r][c] - v[2 * r + 1][c];
            v[2 * r][c] = s * T(0.5); v[2 * r + 1][c] = d * T(0.5);
        }
#pragma unroll
    for (int r = 0; r < K; ++r)
#pragma unroll
        for (int c = 0; c < K; ++c) out[(size_t)(ty + r) * width + tx + c] = v[r][c];
}

template __global__ void haar_levels<8, float>(const float*, float*, int);
template __global__ void haar_levels<16, float>(const float*, float*, int);
template __global__ void haar_levels<32, float>(const float*, float*, int);
template __global__ void haar_levels<16, double>(const double*, double*, int);
template __global__ void cdf53<8, float>(const float*, float*, float*, int);
template __global__ void cdf53<16, float>(const float*, float*, float*, int);
template __global__ void cdf53<32, float>(const float*, float*, float*, int);
template __global__ void cdf53<16, int>(const int*, int*, int*, int);
template __global__ void cdf97<8, float>(const float*, float*, int);
template __global__ void cdf97<16, float>(const float*, float*, int);
template __global__ void cdf97<32, float>(const float*, float*, int);
template __global__ void cdf97<64, float>(const float*, float*, int);
template __global__ void cdf97<16, double>(const double*, double*, int);
template __global__ void haar2d_tile<2, float>(const float*, float*, int);
template __global__ void haar2d_tile<4, float>(const float*, float*, int);
template __global__ void haar2d_tile<8, float>(const float*, float*, int);
template __global__ void haar2d_tile<4, double>(const double*, double*, int);

}  // namespace fam
