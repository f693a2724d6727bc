// Sorting networks: bitonic sort of N keys in shared memory, a warp bitonic sort through
// shuffles, odd-even transposition sort, and per-thread register sorting networks.

template <typename K, int N>
__global__ void bitonic_shared(K* keys)
{
    __shared__ K s[N];
    K* p = keys + (size_t)blockIdx.x * N;
    for (int i = threadIdx.x; i < N; i += blockDim.x) s[i] = p[i];
    __syncthreads();
    for (int k = 2; k <= N; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int i = threadIdx.x; i < N; i += blockDim.x) {
                int l = i ^ j;
                if (l > i) {
                    K a = s[i], b = s[l];
                    bool up = (i & k) == 0;
                    if ((a > b) == up) { s[i] = b; s[l] = a; }
                }
            }
            __syncthreads();
        }
    for (int i = threadIdx.x; i < N; i += blockDim.x) p[i] = s[i];
}

template __global__ void bitonic_shared<int, 512>(int*);
template __global__ void bitonic_shared<int, 2048>(int*);
template __global__ void bitonic_shared<float, 1024>(float*);
template __global__ void bitonic_shared<unsigned long long, 1024>(unsigned long long*);
template __global__ void bitonic_shared<double, 512>(double*);

// Key-value bitonic sort across a warp (32 pairs), as radix-sort and top-k kernels do.
template <typename K, typename V>
__global__ void bitonic_warp_kv(K* keys, V* vals)
{
    const int lane = threadIdx.x & 31;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    K k = keys[i];
    V v = vals[i];
#pragma unroll
    for (int size = 2; size <= 32; size <<= 1)
#pragma unroll
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            K ok = __shfl_xor_sync(0xffffffffu, k, stride);
            V ov = __shfl_xor_sync(0xffffffffu, v, stride);
            bool up = ((lane & size) == 0) == ((lane & stride) == 0);
            if (up ? ok < k : ok > k) { k = ok; v = ov; }
        }
    keys[i] = k;
    vals[i] = v;
}

template __global__ void bitonic_warp_kv<float, int>(float*, int*);
template __global__ void bitonic_warp_kv<unsigned, unsigned>(unsigned*, unsigned*);
template __global__ void bitonic_warp_kv<double, int>(double*, int*);

template <typename K>
__global__ void odd_even_transposition(K* keys, int n)
{
    extern __shared__ unsigned char raw[];
    K* s = reinterpret_cast<K*>(raw);
    K* p = keys + (size_t)blockIdx.x * n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = p[i];
    __syncthreads();
    for (int phase = 0; phase < n; ++phase) {
        for (int i = 2 * threadIdx.x + (phase & 1); i + 1 < n; i += 2 * blockDim.x)
            if (s[i] > s[i + 1]) { K t = s[i]; s[i] = s[i + 1]; s[i + 1] = t; }
        __syncthreads();
    }
    for (int i = threadIdx.x; i < n; i += blockDim.x) p[i] = s[i];
}

template __global__ void odd_even_transposition<int>(int*, int);
template __global__ void odd_even_transposition<float>(float*, int);

// K keys per thread sorted in registers with Batcher's odd-even merge network (fully unrolled:
// the indices are compile-time, so the array stays in registers).
template <typename T>
__device__ __forceinline__ void cswap(T& a, T& b) { T lo = a < b ? a : b; b = a < b ? b : a; a = lo; }

template <typename T, int K>
__global__ void register_sort(T* data)
{
    T v[K];
    T* p = data + ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * K;
#pragma unroll
    for (int i = 0; i < K; ++i) v[i] = p[i];
#pragma unroll
    for (int size = 2; size <= K; size <<= 1)
#pragma unroll
        for (int stride = size >> 1; stride > 0; stride >>= 1)
#pragma unroll
            for (int i = 0; i < K; ++i) {
                int j = i ^ stride;
                if (j > i) {
                    if ((i & size) == 0) cswap(v[i], v[j]);
                    else cswap(v[j], v[i]);
                }
            }
#pragma unroll
    for (int i = 0; i < K; ++i) p[i] = v[i];
}

template __global__ void register_sort<float, 4>(float*);
template __global__ void register_sort<float, 8>(float*);
template __global__ void register_sort<float, 16>(float*);
template __global__ void register_sort<float, 32>(float*);
template __global__ void register_sort<int, 16>(int*);
template __global__ void register_sort<double, 8>(double*);
template __global__ void register_sort<double, 16>(double*);

// One pass of an LSD radix sort: per-block digit histograms with shared atomics.
template <int BITS>
__global__ void radix_histogram(const unsigned* __restrict__ keys, int n, int shift, unsigned* __restrict__ hist)
{
    __shared__ unsigned h[1 << BITS];
    for (int i = threadIdx.x; i < (1 << BITS); i += blockDim.x) h[i] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&h[(keys[i] >> shift) & ((1 << BITS) - 1)], 1u);
    __syncthreads();
    for (int i = threadIdx.x; i < (1 << BITS); i += blockDim.x) hist[i * gridDim.x + blockIdx.x] = h[i];
}

template __global__ void radix_histogram<4>(const unsigned*, int, int, unsigned*);
template __global__ void radix_histogram<8>(const unsigned*, int, int, unsigned*);
