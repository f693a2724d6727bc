// Small kernels (a handful of registers): copies, fills, scales, clamps, index maps, a warp
// reduction, a shared-memory histogram, a transpose through shared memory, masks and counts.
namespace fam {

template <typename T> __global__ void copy_n(const T* __restrict__ a, T* __restrict__ b, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = a[i]; }

template <typename T> __global__ void scale_inplace(T* __restrict__ a, T s, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= s; }

template <typename T> __global__ void clamp(T* __restrict__ a, T lo, T hi, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = min(max(a[i], lo), hi); }

template <typename T> __global__ void grid_fill(T* __restrict__ a, T v, size_t n)
{ for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) a[i] = v; }

template <typename T> __global__ void axpby(const T* __restrict__ x, T* __restrict__ y, T a, T b, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + b * y[i]; }

__global__ void gather_idx(const float* __restrict__ src, const int* __restrict__ idx, float* __restrict__ dst, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) dst[i] = src[idx[i]]; }

__global__ void scatter_add(const float* __restrict__ src, const int* __restrict__ idx, float* __restrict__ dst, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) atomicAdd(dst + idx[i], src[i]); }

__global__ void count_if_positive(const float* __restrict__ a, int* __restrict__ count, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned m = __ballot_sync(0xffffffffu, i < n && a[i] > 0.f);
    if ((threadIdx.x & 31) == 0) atomicAdd(count, __popc(m));
}

template <typename T> __global__ void warp_reduce_sum(const T* __restrict__ a, T* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    T v = i < n ? a[i] : T(0);
#pragma unroll
    for (int o = 16; o; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}

template <int BINS> __global__ void smem_hist(const unsigned* __restrict__ a, unsigned* __restrict__ h, int n)
{
    __shared__ unsigned s[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) s[b] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&s[a[i] & (BINS - 1)], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) atomicAdd(&h[b], s[b]);
}

template <int TILE> __global__ void transpose_tile(const float* __restrict__ in, float* __restrict__ out, int w, int h)
{
    __shared__ float t[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    if (x < w && y < h) t[threadIdx.y][threadIdx.x] = in[(size_t)y * w + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x; y = blockIdx.x * TILE + threadIdx.y;
    if (x < h && y < w) out[(size_t)y * h + x] = t[threadIdx.x][threadIdx.y];
}

__global__ void relu_mask(const float* __restrict__ a, float* __restrict__ b, unsigned char* __restrict__ mask, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { float v = a[i]; mask[i] = v > 0.f; b[i] = v > 0.f ? v : 0.f; } }

__global__ void iota_mod(int* __restrict__ a, int m, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = i % m; }

__global__ void block_sum_smem(const float* __restrict__ a, float* __restrict__ out)
{
    __shared__ float s[256];
    s[threadIdx.x] = a[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

template __global__ void copy_n<float>(const float*, float*, int);
template __global__ void copy_n<double>(const double*, double*, int);
template __global__ void copy_n<float4>(const float4*, float4*, int);
template __global__ void scale_inplace<float>(float*, float, int);
template __global__ void scale_inplace<double>(double*, double, int);
template __global__ void clamp<int>(int*, int, int, int);
template __global__ void clamp<float>(float*, float, float, int);
template __global__ void grid_fill<float>(float*, float, size_t);
template __global__ void grid_fill<double>(double*, double, size_t);
template __global__ void axpby<float>(const float*, float*, float, float, int);
template __global__ void axpby<double>(const double*, double*, double, double, int);
template __global__ void warp_reduce_sum<float>(const float*, float*, int);
template __global__ void warp_reduce_sum<int>(const int*, int*, int);
template __global__ void smem_hist<256>(const unsigned*, unsigned*, int);
template __global__ void smem_hist<32>(const unsigned*, unsigned*, int);
template __global__ void transpose_tile<32>(const float*, float*, int, int);
template __global__ void transpose_tile<16>(const float*, float*, int, int);

}  // namespace fam
