// Reductions: warp shuffles, block reductions through shared memory, multi-block two-pass and
// single-pass (last block finishes), argmax pairs, and Welford mean/variance.

template <typename T>
__device__ __forceinline__ T warp_sum(T v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <typename T, int BLOCK>
__device__ T block_sum(T v)
{
    __shared__ T partial[BLOCK / 32];
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x < BLOCK / 32 ? partial[threadIdx.x] : T(0);
    if (threadIdx.x < 32) v = warp_sum(v);
    return v;
}

// Each thread first accumulates ITEMS strided elements (grid-stride), then the block reduces.
template <typename T, int BLOCK, int ITEMS>
__global__ void __launch_bounds__(BLOCK) reduce_sum(const T* __restrict__ in, T* __restrict__ out, long n)
{
    T acc[ITEMS] = {};
    for (long base = (long)blockIdx.x * BLOCK * ITEMS + threadIdx.x; base < n;
         base += (long)gridDim.x * BLOCK * ITEMS)
#pragma unroll
        for (int i = 0; i < ITEMS; ++i)
            if (base + i * BLOCK < n) acc[i] += in[base + i * BLOCK];
    T v = 0;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) v += acc[i];
    v = block_sum<T, BLOCK>(v);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}

template __global__ void reduce_sum<float, 128, 1>(const float*, float*, long);
template __global__ void reduce_sum<float, 256, 4>(const float*, float*, long);
template __global__ void reduce_sum<float, 512, 8>(const float*, float*, long);
template __global__ void reduce_sum<double, 256, 2>(const double*, double*, long);
template __global__ void reduce_sum<double, 128, 8>(const double*, double*, long);
template __global__ void reduce_sum<int, 256, 4>(const int*, int*, long);
template __global__ void reduce_sum<long long, 256, 4>(const long long*, long long*, long);

// Single pass: every block writes its partial, the last block to finish sums the partials.
template <int BLOCK>
__global__ void reduce_single_pass(const float* __restrict__ in, float* partial, unsigned* counter,
                                   float* out, int n)
{
    __shared__ bool last;
    float v = 0.f;
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) v += in[i];
    v = block_sum<float, BLOCK>(v);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = v;
        __threadfence();
        last = atomicInc(counter, gridDim.x) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {
        float s = 0.f;
        for (int i = threadIdx.x; i < gridDim.x; i += BLOCK) s += ((volatile float*)partial)[i];
        s = block_sum<float, BLOCK>(s);
        if (threadIdx.x == 0) { *out = s; *counter = 0; }
    }
}

template __global__ void reduce_single_pass<256>(const float*, float*, unsigned*, float*, int);
template __global__ void reduce_single_pass<1024>(const float*, float*, unsigned*, float*, int);

// Argmax with (value, index) pairs through shuffles.
template <typename T>
__global__ void argmax_rows(const T* __restrict__ x, int cols, int* __restrict__ idx, T* __restrict__ best)
{
    const T* row = x + (size_t)blockIdx.x * cols;
    T bv = row[threadIdx.x % cols];
    int bi = threadIdx.x % cols;
    for (int c = threadIdx.x + blockDim.x; c < cols; c += blockDim.x)
        if (row[c] > bv) { bv = row[c]; bi = c; }
    for (int o = 16; o > 0; o >>= 1) {
        T ov = __shfl_xor_sync(0xffffffffu, bv, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (ov > bv || (ov == bv && oi < bi)) { bv = ov; bi = oi; }
    }
    __shared__ T sv[32];
    __shared__ int si[32];
    if ((threadIdx.x & 31) == 0) { sv[threadIdx.x / 32] = bv; si[threadIdx.x / 32] = bi; }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < blockDim.x / 32; ++w)
            if (sv[w] > bv || (sv[w] == bv && si[w] < bi)) { bv = sv[w]; bi = si[w]; }
        idx[blockIdx.x] = bi;
        best[blockIdx.x] = bv;
    }
}

template __global__ void argmax_rows<float>(const float*, int, int*, float*);
template __global__ void argmax_rows<double>(const double*, int, int*, double*);
template __global__ void argmax_rows<int>(const int*, int, int*, int*);

// Welford mean and M2 per block, combined across the warp with Chan's formula.
template <typename T>
__global__ void welford_block(const T* __restrict__ x, int n, T* __restrict__ mean, T* __restrict__ m2)
{
    T mu = 0, s = 0, cnt = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        cnt += 1;
        T d = x[i] - mu;
        mu += d / cnt;
        s += d * (x[i] - mu);
    }
    for (int o = 16; o > 0; o >>= 1) {
        T c2 = __shfl_xor_sync(0xffffffffu, cnt, o);
        T m2b = __shfl_xor_sync(0xffffffffu, s, o);
        T mub = __shfl_xor_sync(0xffffffffu, mu, o);
        T tot = cnt + c2;
        T d = mub - mu;
        if (tot > 0) {
            mu += d * c2 / tot;
            s += m2b + d * d * cnt * c2 / tot;
        }
        cnt = tot;
    }
    if ((threadIdx.x & 31) == 0) {
        int w = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
        mean[w] = mu;
        m2[w] = s;
    }
}

template __global__ void welford_block<float>(const float*, int, float*, float*);
template __global__ void welford_block<double>(const double*, int, double*, double*);

// Column sums of a row-major matrix: a block of 32 x ROWS threads, transposed through shared.
template <int ROWS>
__global__ void column_sums(const float* __restrict__ x, int rows, int cols, float* __restrict__ out)
{
    __shared__ float tile[ROWS][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    float v = 0.f;
    for (int r = threadIdx.y; r < rows; r += ROWS) v += c < cols ? x[(size_t)r * cols + c] : 0.f;
    tile[threadIdx.y][threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.y == 0) {
        float s = 0.f;
#pragma unroll
        for (int r = 0; r < ROWS; ++r) s += tile[r][threadIdx.x];
        if (c < cols) out[c] = s;
    }
}

template __global__ void column_sums<8>(const float*, int, int, float*);
template __global__ void column_sums<32>(const float*, int, int, float*);
