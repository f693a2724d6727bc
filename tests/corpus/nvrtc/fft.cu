// FFT butterflies: radix-2, radix-4 and radix-8 passes over global memory (Stockham order),
// and a whole shared-memory FFT of N points per block, in float and double.

template <typename T> struct cplx { T re, im; };

template <typename T>
__device__ __forceinline__ cplx<T> cmul(cplx<T> a, cplx<T> b)
{
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <typename T> __device__ __forceinline__ cplx<T> cadd(cplx<T> a, cplx<T> b) { return {a.re + b.re, a.im + b.im}; }
template <typename T> __device__ __forceinline__ cplx<T> csub(cplx<T> a, cplx<T> b) { return {a.re - b.re, a.im - b.im}; }

template <typename T>
__device__ __forceinline__ cplx<T> twiddle(int k, int n)
{
    T s, c;
    if (sizeof(T) == 4) { float sf, cf; __sincosf(-6.2831853f * k / n, &sf, &cf); s = sf; c = cf; }
    else { double sd, cd; sincospi(-2.0 * k / n, &sd, &cd); s = sd; c = cd; }
    return {c, s};
}

// One Stockham pass of radix R: each thread does one R-point DFT on strided inputs.
template <typename T, int R>
__global__ void stockham_pass(const cplx<T>* __restrict__ in, cplx<T>* __restrict__ out, int n, int stride)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n / R) return;
    int k = t % stride, j = t / stride;
    cplx<T> v[R];
#pragma unroll
    for (int r = 0; r < R; ++r) v[r] = cmul(in[t + r * (n / R)], twiddle<T>(r * k, R * stride));
    cplx<T> y[R];
#pragma unroll
    for (int q = 0; q < R; ++q) {
        y[q] = v[0];
#pragma unroll
        for (int r = 1; r < R; ++r) y[q] = cadd(y[q], cmul(v[r], twiddle<T>(q * r, R)));
    }
#pragma unroll
    for (int q = 0; q < R; ++q) out[j * R * stride + q * stride + k] = y[q];
}

template __global__ void stockham_pass<float, 2>(const cplx<float>*, cplx<float>*, int, int);
template __global__ void stockham_pass<float, 4>(const cplx<float>*, cplx<float>*, int, int);
template __global__ void stockham_pass<float, 8>(const cplx<float>*, cplx<float>*, int, int);
template __global__ void stockham_pass<double, 2>(const cplx<double>*, cplx<double>*, int, int);
template __global__ void stockham_pass<double, 4>(const cplx<double>*, cplx<double>*, int, int);
template __global__ void stockham_pass<double, 8>(const cplx<double>*, cplx<double>*, int, int);

// Hand-written radix-4 butterfly (no inner twiddle multiplies: the +-i rotations are swaps).
template <typename T>
__device__ __forceinline__ void bfly4(cplx<T>& a, cplx<T>& b, cplx<T>& c, cplx<T>& d)
{
    cplx<T> s0 = cadd(a, c), s1 = csub(a, c), s2 = cadd(b, d), s3 = csub(b, d);
    cplx<T> s3r = {s3.im, -s3.re};
    a = cadd(s0, s2); c = csub(s0, s2); b = cadd(s1, s3r); d = csub(s1, s3r);
}

// N-point FFT in shared memory, N / 4 threads, radix-4 stages (N a power of 4).
template <typename T, int N>
__global__ void fft_shared_radix4(cplx<T>* data)
{
    __shared__ cplx<T> s[N];
    cplx<T>* x = data + (size_t)blockIdx.x * N;
    for (int i = threadIdx.x; i < N; i += N / 4) s[i] = x[i];
    __syncthreads();
    for (int span = N / 4; span >= 1; span /= 4) {
        int t = threadIdx.x, grp = t / span, k = t % span;
        int base = grp * span * 4 + k;
        cplx<T> a = s[base], b = s[base + span], c = s[base + 2 * span], d = s[base + 3 * span];
        __syncthreads();
        bfly4(a, b, c, d);
        s[base] = a;
        s[base + span] = cmul(b, twiddle<T>(k, 4 * span));
        s[base + 2 * span] = cmul(c, twiddle<T>(2 * k, 4 * span));
        s[base + 3 * span] = cmul(d, twiddle<T>(3 * k, 4 * span));
        __syncthreads();
    }
    for (int i = threadIdx.x; i < N; i += N / 4) x[i] = s[i];
}

template __global__ void fft_shared_radix4<float, 64>(cplx<float>*);
template __global__ void fft_shared_radix4<float, 256>(cplx<float>*);
template __global__ void fft_shared_radix4<float, 1024>(cplx<float>*);
template __global__ void fft_shared_radix4<double, 256>(cplx<double>*);

// A register FFT of 8 or 16 points per thread (batched tiny FFTs), unrolled.
template <int N>
__global__ void fft_register(cplx<float>* data, int batch)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch) return;
    cplx<float> v[N];
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = data[(size_t)b * N + i];
#pragma unroll
    for (int len = N; len >= 2; len >>= 1)
#pragma unroll
        for (int i = 0; i < N; i += len)
#pragma unroll
            for (int k = 0; k < len / 2; ++k) {
                cplx<float> a = v[i + k], c = v[i + k + len / 2];
                v[i + k] = cadd(a, c);
                v[i + k + len / 2] = cmul(csub(a, c), twiddle<float>(k, len));
            }
#pragma unroll
    for (int i = 0; i < N; ++i) data[(size_t)b * N + (__brev(i) >> (32 - __ffs(N) + 1))] = v[i];
}

template __global__ void fft_register<8>(cplx<float>*, int);
template __global__ void fft_register<16>(cplx<float>*, int);
template __global__ void fft_register<32>(cplx<float>*, int);
