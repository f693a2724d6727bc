// cub block-wide algorithms as a library user writes them: load a tile (direct, striped,
// vectorized or transposed), reduce or scan it, store it.  Templated on the block size, items
// per thread, element type and the cub algorithm.
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

namespace fam {

template <typename T, int THREADS, int ITEMS, cub::BlockLoadAlgorithm LOAD, cub::BlockReduceAlgorithm RED>
__global__ void __launch_bounds__(THREADS) tile_sum(const T* __restrict__ in, T* __restrict__ out, int n)
{
    using Load = cub::BlockLoad<T, THREADS, ITEMS, LOAD>;
    using Reduce = cub::BlockReduce<T, THREADS, RED>;
    __shared__ union { typename Load::TempStorage load; typename Reduce::TempStorage reduce; } tmp;
    T items[ITEMS];
    int base = blockIdx.x * THREADS * ITEMS;
    Load(tmp.load).Load(in + base, items, n - base, T(0));
    __syncthreads();
    T total = Reduce(tmp.reduce).Sum(items);
    if (threadIdx.x == 0) out[blockIdx.x] = total;
}

struct MaxAbs {
    template <typename T> __device__ T operator()(const T& a, const T& b) const {
        T x = a < T(0) ? -a : a, y = b < T(0) ? -b : b;
        return x > y ? x : y;
    }
};

template <typename T, int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS) tile_maxabs(const T* __restrict__ in, T* __restrict__ out, int n)
{
    using Reduce = cub::BlockReduce<T, THREADS>;
    __shared__ typename Reduce::TempStorage tmp;
    T items[ITEMS];
    int base = blockIdx.x * THREADS * ITEMS;
    cub::LoadDirectStriped<THREADS>(threadIdx.x, in + base, items, n - base, T(0));
    T m = Reduce(tmp).Reduce(items, MaxAbs());
    if (threadIdx.x == 0) out[blockIdx.x] = m;
}

template <typename T, int THREADS, int ITEMS, cub::BlockScanAlgorithm SCAN, bool EXCLUSIVE>
__global__ void __launch_bounds__(THREADS) tile_scan(const T* __restrict__ in, T* __restrict__ out, int n)
{
    using Load = cub::BlockLoad<T, THREADS, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using Store = cub::BlockStore<T, THREADS, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
    using Scan = cub::BlockScan<T, THREADS, SCAN>;
    __shared__ union {
        typename Load::TempStorage load; typename Store::TempStorage store;
        typename Scan::TempStorage scan;
    } tmp;
    T items[ITEMS];
    int base = blockIdx.x * THREADS * ITEMS;
    Load(tmp.load).Load(in + base, items, n - base, T(0));
    __syncthreads();
    if (EXCLUSIVE) Scan(tmp.scan).ExclusiveSum(items, items);
    else Scan(tmp.scan).InclusiveSum(items, items);
    __syncthreads();
    Store(tmp.store).Store(out + base, items, n - base);
}

// running prefix over tiles: one block walks the whole array (a decoupled single-pass scan
// replaced by a serial carry, as small inputs are handled)
struct Carry {
    int running;
    __device__ int operator()(int block_total) { int old = running; running += block_total; return old; }
};

template <int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS) serial_tile_scan(const int* __restrict__ in, int* __restrict__ out, int n)
{
    using Scan = cub::BlockScan<int, THREADS>;
    __shared__ typename Scan::TempStorage tmp;
    Carry carry{0};
    for (int base = 0; base < n; base += THREADS * ITEMS) {
        int items[ITEMS];
        cub::LoadDirectBlocked(threadIdx.x, in + base, items, n - base, 0);
        Scan(tmp).ExclusiveSum(items, items, carry);
        cub::StoreDirectBlocked(threadIdx.x, out + base, items, n - base);
        __syncthreads();
    }
}

// stream compaction: flags from a predicate, an exclusive scan, a scatter
template <typename T, int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS) tile_select(const T* __restrict__ in, T* __restrict__ out,
                                                       int* __restrict__ counts, T threshold, int n)
{
    using Scan = cub::BlockScan<int, THREADS>;
    __shared__ typename Scan::TempStorage tmp;
    T items[ITEMS];
    int flags[ITEMS], pos[ITEMS];
    int base = blockIdx.x * THREADS * ITEMS;
    cub::LoadDirectBlocked(threadIdx.x, in + base, items, n - base, threshold);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) flags[i] = items[i] > threshold;
    int total;
    Scan(tmp).ExclusiveSum(flags, pos, total);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
        if (flags[i]) out[base + pos[i]] = items[i];
    if (threadIdx.x == 0) counts[blockIdx.x] = total;
}

#define TS(T, TH, IT, L, R) template __global__ void tile_sum<T, TH, IT, cub::L, cub::R>(const T*, T*, int);
TS(float, 128, 4, BLOCK_LOAD_DIRECT, BLOCK_REDUCE_WARP_REDUCTIONS)
TS(float, 256, 8, BLOCK_LOAD_VECTORIZE, BLOCK_REDUCE_RAKING)
TS(float, 256, 16, BLOCK_LOAD_WARP_TRANSPOSE, BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY)
TS(double, 128, 4, BLOCK_LOAD_TRANSPOSE, BLOCK_REDUCE_WARP_REDUCTIONS)
TS(double, 256, 8, BLOCK_LOAD_DIRECT, BLOCK_REDUCE_RAKING)
TS(int, 512, 4, BLOCK_LOAD_STRIPED, BLOCK_REDUCE_WARP_REDUCTIONS)
TS(int, 64, 32, BLOCK_LOAD_DIRECT, BLOCK_REDUCE_RAKING)
TS(long long, 128, 8, BLOCK_LOAD_WARP_TRANSPOSE, BLOCK_REDUCE_WARP_REDUCTIONS)
#define TM(T, TH, IT) template __global__ void tile_maxabs<T, TH, IT>(const T*, T*, int);
TM(float, 128, 8) TM(float, 512, 2) TM(double, 256, 4) TM(int, 256, 16)
#define SC(T, TH, IT, S, E) template __global__ void tile_scan<T, TH, IT, cub::S, E>(const T*, T*, int);
SC(int, 128, 4, BLOCK_SCAN_RAKING, true)
SC(int, 256, 8, BLOCK_SCAN_WARP_SCANS, false)
SC(int, 256, 16, BLOCK_SCAN_RAKING_MEMOIZE, true)
SC(float, 128, 8, BLOCK_SCAN_WARP_SCANS, true)
SC(float, 512, 4, BLOCK_SCAN_RAKING, false)
SC(double, 128, 4, BLOCK_SCAN_WARP_SCANS, false)
SC(long long, 256, 4, BLOCK_SCAN_RAKING, true)
SC(unsigned, 64, 12, BLOCK_SCAN_WARP_SCANS, true)
template __global__ void serial_tile_scan<128, 4>(const int*, int*, int);
template __global__ void serial_tile_scan<256, 11>(const int*, int*, int);
#define SEL(T, TH, IT) template __global__ void tile_select<T, TH, IT>(const T*, T*, int*, T, int);
SEL(float, 128, 4) SEL(float, 256, 8) SEL(int, 128, 16) SEL(double, 256, 4)

}  // namespace fam
