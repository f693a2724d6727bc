// cub block radix sort, histogram, exchange and discontinuity: the building blocks of
// onesweep sorting, run-length encoding and segmented work, templated as libraries use them.
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_histogram.cuh>
#include <cub/block/block_discontinuity.cuh>
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>

namespace fam {

template <typename K, int THREADS, int ITEMS, int RADIX_BITS>
__global__ void __launch_bounds__(THREADS) sort_keys(K* __restrict__ keys, int begin_bit, int end_bit)
{
    using Sort = cub::BlockRadixSort<K, THREADS, ITEMS, cub::NullType, RADIX_BITS>;
    __shared__ typename Sort::TempStorage tmp;
    K k[ITEMS];
    int base = blockIdx.x * THREADS * ITEMS;
    cub::LoadDirectStriped<THREADS>(threadIdx.x, keys + base, k);
    Sort(tmp).Sort(k, begin_bit, end_bit);
    cub::StoreDirectStriped<THREADS>(threadIdx.x, keys + base, k);
}

template <typename K, typename V, int THREADS, int ITEMS, bool DESCENDING>
__global__ void __launch_bounds__(THREADS) sort_pairs(K* __restrict__ keys, V* __restrict__ vals)
{
    using Sort = cub::BlockRadixSort<K, THREADS, ITEMS, V>;
    __shared__ typename Sort::TempStorage tmp;
    K k[ITEMS];
    V v[ITEMS];
    int base = blockIdx.x * THREADS * ITEMS;
    cub::LoadDirectBlocked(threadIdx.x, keys + base, k);
    cub::LoadDirectBlocked(threadIdx.x, vals + base, v);
    if (DESCENDING) Sort(tmp).SortDescendingBlockedToStriped(k, v);
    else Sort(tmp).SortBlockedToStriped(k, v);
    cub::StoreDirectStriped<THREADS>(threadIdx.x, keys + base, k);
    cub::StoreDirectStriped<THREADS>(threadIdx.x, vals + base, v);
}

template <int THREADS, int ITEMS, int BINS, cub::BlockHistogramAlgorithm ALGO>
__global__ void __launch_bounds__(THREADS) histogram(const unsigned char* __restrict__ in,
                                                     unsigned* __restrict__ bins, int n)
{
    using Hist = cub::BlockHistogram<unsigned char, THREADS, ITEMS, BINS, ALGO>;
    __shared__ typename Hist::TempStorage tmp;
    __shared__ unsigned smem[BINS];
    unsigned char s[ITEMS];
    int base = blockIdx.x * THREADS * ITEMS;
    cub::LoadDirectStriped<THREADS>(threadIdx.x, in + base, s, n - base, (unsigned char)0);
    Hist(tmp).Histogram(s, smem);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += THREADS) atomicAdd(bins + b, smem[b]);
}

struct NotEqual { template <typename T> __device__ bool operator()(const T& a, const T& b) const { return a != b; } };

// run heads (run-length encoding's first step)
template <typename T, int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS) run_heads(const T* __restrict__ in, int* __restrict__ heads, int n)
{
    using Disc = cub::BlockDiscontinuity<T, THREADS>;
    __shared__ typename Disc::TempStorage tmp;
    T items[ITEMS];
    int flags[ITEMS];
    int base = blockIdx.x * THREADS * ITEMS;
    cub::LoadDirectBlocked(threadIdx.x, in + base, items, n - base, T(0));
    Disc(tmp).FlagHeads(flags, items, NotEqual());
    int count = 0;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) count += flags[i];
    atomicAdd(heads + blockIdx.x, count);
}

template <typename T, int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS) blocked_to_striped(const T* __restrict__ in, T* __restrict__ out)
{
    using Ex = cub::BlockExchange<T, THREADS, ITEMS>;
    __shared__ typename Ex::TempStorage tmp;
    T items[ITEMS];
    int base = blockIdx.x * THREADS * ITEMS;
    cub::LoadDirectBlocked(threadIdx.x, in + base, items);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) items[i] = items[i] * T(2) + T(i);
    Ex(tmp).BlockedToStriped(items, items);
    cub::StoreDirectStriped<THREADS>(threadIdx.x, out + base, items);
}

template __global__ void sort_keys<unsigned, 128, 4, 4>(unsigned*, int, int);
template __global__ void sort_keys<unsigned, 256, 8, 4>(unsigned*, int, int);
template __global__ void sort_keys<unsigned, 128, 16, 5>(unsigned*, int, int);
template __global__ void sort_keys<int, 256, 4, 6>(int*, int, int);
template __global__ void sort_keys<float, 128, 8, 4>(float*, int, int);
template __global__ void sort_keys<unsigned long long, 128, 4, 4>(unsigned long long*, int, int);
template __global__ void sort_keys<double, 64, 8, 5>(double*, int, int);
template __global__ void sort_pairs<unsigned, unsigned, 128, 4, false>(unsigned*, unsigned*);
template __global__ void sort_pairs<unsigned, float, 256, 8, true>(unsigned*, float*);
template __global__ void sort_pairs<int, double, 128, 4, false>(int*, double*);
template __global__ void sort_pairs<unsigned long long, int, 64, 8, false>(unsigned long long*, int*);
template __global__ void histogram<128, 4, 256, cub::BLOCK_HISTO_ATOMIC>(const unsigned char*, unsigned*, int);
template __global__ void histogram<256, 16, 256, cub::BLOCK_HISTO_ATOMIC>(const unsigned char*, unsigned*, int);
template __global__ void histogram<128, 8, 256, cub::BLOCK_HISTO_SORT>(const unsigned char*, unsigned*, int);
template __global__ void histogram<256, 4, 64, cub::BLOCK_HISTO_SORT>(const unsigned char*, unsigned*, int);
template __global__ void run_heads<int, 128, 4>(const int*, int*, int);
template __global__ void run_heads<float, 256, 8>(const float*, int*, int);
template __global__ void run_heads<long long, 128, 16>(const long long*, int*, int);
template __global__ void blocked_to_striped<float, 128, 4>(const float*, float*);
template __global__ void blocked_to_striped<double, 256, 8>(const double*, double*);
template __global__ void blocked_to_striped<int, 64, 16>(const int*, int*);

}  // namespace fam
