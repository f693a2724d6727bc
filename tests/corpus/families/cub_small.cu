// Small cub kernels (few registers): single-tile warp and block reductions, per-warp
// histograms, warp scans and segment counts, as the tails of bigger algorithms launch them.
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cub/block/block_reduce.cuh>

namespace fam {

template <typename T, int WIDTH>
__global__ void warp_sum(const T* __restrict__ in, T* __restrict__ out, int n)
{
    using WR = cub::WarpReduce<T, WIDTH>;
    __shared__ typename WR::TempStorage tmp[32 / WIDTH];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    T v = i < n ? in[i] : T(0);
    T s = WR(tmp[threadIdx.x / WIDTH]).Sum(v);
    if (threadIdx.x % WIDTH == 0) out[i / WIDTH] = s;
}

template <typename T, int THREADS>
__global__ void __launch_bounds__(THREADS) single_tile_sum(const T* __restrict__ in, T* __restrict__ out, int n)
{
    using BR = cub::BlockReduce<T, THREADS>;
    __shared__ typename BR::TempStorage tmp;
    T v = threadIdx.x < n ? in[threadIdx.x] : T(0);
    T s = BR(tmp).Sum(v, n < THREADS ? n : THREADS);
    if (threadIdx.x == 0) *out = s;
}

template <typename T, int THREADS>
__global__ void __launch_bounds__(THREADS) grid_stride_sum(const T* __restrict__ in, T* __restrict__ partial, int n)
{
    using BR = cub::BlockReduce<T, THREADS>;
    __shared__ typename BR::TempStorage tmp;
    T acc = T(0);
    for (int i = blockIdx.x * THREADS + threadIdx.x; i < n; i += gridDim.x * THREADS) acc += in[i];
    T s = BR(tmp).Sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

template <int BINS>
__global__ void warp_private_histogram(const unsigned char* __restrict__ in, unsigned* __restrict__ bins, int n)
{
    __shared__ unsigned h[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) h[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&h[in[i] % BINS], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        if (h[b]) atomicAdd(&bins[b], h[b]);
}

template <typename T>
__global__ void warp_inclusive_scan(const T* __restrict__ in, T* __restrict__ out, int n)
{
    using WS = cub::WarpScan<T>;
    __shared__ typename WS::TempStorage tmp[8];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    T v = i < n ? in[i] : T(0);
    WS(tmp[threadIdx.x / 32]).InclusiveSum(v, v);
    if (i < n) out[i] = v;
}

__global__ void count_segments(const int* __restrict__ offsets, int* __restrict__ lengths, int segments)
{
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s < segments) lengths[s] = offsets[s + 1] - offsets[s];
}

__global__ void fill_sequence(int* __restrict__ out, int start, int step, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = start + i * step;
}

template <typename T>
__global__ void arg_max_pairs(const T* __restrict__ val, const int* __restrict__ idx, T* out_v, int* out_i, int n)
{
    cub::KeyValuePair<int, T> kv(threadIdx.x < n ? idx[threadIdx.x] : -1,
                                 threadIdx.x < n ? val[threadIdx.x] : T(-1e30));
    using WR = cub::WarpReduce<cub::KeyValuePair<int, T>>;
    __shared__ typename WR::TempStorage tmp;
    auto best = WR(tmp).Reduce(kv, cub::ArgMax());
    if (threadIdx.x == 0) { *out_v = best.value; *out_i = best.key; }
}

template __global__ void warp_sum<int, 32>(const int*, int*, int);
template __global__ void warp_sum<float, 32>(const float*, float*, int);
template __global__ void warp_sum<float, 8>(const float*, float*, int);
template __global__ void warp_sum<double, 16>(const double*, double*, int);
template __global__ void warp_sum<unsigned, 4>(const unsigned*, unsigned*, int);
template __global__ void single_tile_sum<int, 128>(const int*, int*, int);
template __global__ void single_tile_sum<float, 256>(const float*, float*, int);
template __global__ void single_tile_sum<double, 64>(const double*, double*, int);
template __global__ void grid_stride_sum<float, 256>(const float*, float*, int);
template __global__ void grid_stride_sum<int, 512>(const int*, int*, int);
template __global__ void grid_stride_sum<double, 128>(const double*, double*, int);
template __global__ void warp_private_histogram<256>(const unsigned char*, unsigned*, int);
template __global__ void warp_private_histogram<64>(const unsigned char*, unsigned*, int);
template __global__ void warp_private_histogram<16>(const unsigned char*, unsigned*, int);
template __global__ void warp_inclusive_scan<int>(const int*, int*, int);
template __global__ void warp_inclusive_scan<float>(const float*, float*, int);
template __global__ void warp_inclusive_scan<long long>(const long long*, long long*, int);
template __global__ void arg_max_pairs<float>(const float*, const int*, float*, int*, int);
template __global__ void arg_max_pairs<double>(const double*, const int*, double*, int*, int);

}  // namespace fam
