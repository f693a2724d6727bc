// Prefix sums: Blelloch work-efficient scan in shared memory, warp-shuffle scans, a block scan
// of several items per thread, and a single-pass scan with decoupled look-back.

template <typename T, int N>
__global__ void blelloch_scan(const T* __restrict__ in, T* __restrict__ out, T* __restrict__ sums)
{
    __shared__ T s[N + N / 32];
    const int t = threadIdx.x;
    const T* src = in + (size_t)blockIdx.x * N;
#define PAD(i) ((i) + ((i) >> 5))
    s[PAD(2 * t)] = src[2 * t];
    s[PAD(2 * t + 1)] = src[2 * t + 1];
    int off = 1;
    for (int d = N >> 1; d > 0; d >>= 1, off <<= 1) {
        __syncthreads();
        if (t < d) s[PAD(off * (2 * t + 2) - 1)] += s[PAD(off * (2 * t + 1) - 1)];
    }
    if (t == 0) { sums[blockIdx.x] = s[PAD(N - 1)]; s[PAD(N - 1)] = 0; }
    for (int d = 1; d < N; d <<= 1) {
        off >>= 1;
        __syncthreads();
        if (t < d) {
            int ai = PAD(off * (2 * t + 1) - 1), bi = PAD(off * (2 * t + 2) - 1);
            T tmp = s[ai];
            s[ai] = s[bi];
            s[bi] += tmp;
        }
    }
    __syncthreads();
    out[(size_t)blockIdx.x * N + 2 * t] = s[PAD(2 * t)];
    out[(size_t)blockIdx.x * N + 2 * t + 1] = s[PAD(2 * t + 1)];
#undef PAD
}

template __global__ void blelloch_scan<float, 512>(const float*, float*, float*);
template __global__ void blelloch_scan<float, 2048>(const float*, float*, float*);
template __global__ void blelloch_scan<int, 1024>(const int*, int*, int*);
template __global__ void blelloch_scan<double, 512>(const double*, double*, double*);

template <typename T>
__device__ __forceinline__ T warp_inclusive(T v)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        T u = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += u;
    }
    return v;
}

// ITEMS consecutive elements per thread: a serial scan in registers, a warp scan of the thread
// totals, a block scan of the warp totals.
template <typename T, int BLOCK, int ITEMS>
__global__ void __launch_bounds__(BLOCK) block_scan_items(const T* __restrict__ in, T* __restrict__ out)
{
    __shared__ T warp_tot[BLOCK / 32];
    const size_t base = ((size_t)blockIdx.x * BLOCK + threadIdx.x) * ITEMS;
    T v[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) v[i] = in[base + i];
#pragma unroll
    for (int i = 1; i < ITEMS; ++i) v[i] += v[i - 1];
    T incl = warp_inclusive(v[ITEMS - 1]);
    if ((threadIdx.x & 31) == 31) warp_tot[threadIdx.x / 32] = incl;
    __syncthreads();
    if (threadIdx.x < 32) {
        T w = threadIdx.x < BLOCK / 32 ? warp_tot[threadIdx.x] : T(0);
        w = warp_inclusive(w);
        if (threadIdx.x < BLOCK / 32) warp_tot[threadIdx.x] = w;
    }
    __syncthreads();
    T prefix = incl - v[ITEMS - 1] + (threadIdx.x >= 32 ? warp_tot[threadIdx.x / 32 - 1] : T(0));
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) out[base + i] = v[i] + prefix;
}

template __global__ void block_scan_items<int, 128, 4>(const int*, int*);
template __global__ void block_scan_items<int, 256, 8>(const int*, int*);
template __global__ void block_scan_items<int, 256, 16>(const int*, int*);
template __global__ void block_scan_items<float, 512, 4>(const float*, float*);
template __global__ void block_scan_items<double, 256, 4>(const double*, double*);
template __global__ void block_scan_items<unsigned long long, 128, 8>(const unsigned long long*, unsigned long long*);

// Decoupled look-back (single-pass): tile status words {flag:2, value:30} published with
// atomics; a tile walks back over its predecessors until it finds an inclusive prefix.
template <int BLOCK, int ITEMS>
__global__ void scan_lookback(const int* __restrict__ in, int* __restrict__ out,
                              unsigned long long* status, unsigned* tile_counter)
{
    __shared__ int tile_id, exclusive, warp_tot[BLOCK / 32];
    if (threadIdx.x == 0) tile_id = atomicAdd(tile_counter, 1u);
    __syncthreads();
    const int tile = tile_id;
    const size_t base = ((size_t)tile * BLOCK + threadIdx.x) * ITEMS;
    int v[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) v[i] = in[base + i];
#pragma unroll
    for (int i = 1; i < ITEMS; ++i) v[i] += v[i - 1];
    int incl = warp_inclusive(v[ITEMS - 1]);
    if ((threadIdx.x & 31) == 31) warp_tot[threadIdx.x / 32] = incl;
    __syncthreads();
    if (threadIdx.x < 32) {
        int w = threadIdx.x < BLOCK / 32 ? warp_tot[threadIdx.x] : 0;
        w = warp_inclusive(w);
        if (threadIdx.x < BLOCK / 32) warp_tot[threadIdx.x] = w;
    }
    __syncthreads();
    const int total = warp_tot[BLOCK / 32 - 1];
    if (threadIdx.x == 0) {
        // flag 1: aggregate available, flag 2: inclusive prefix available
        atomicExch(&status[tile], (tile == 0 ? 2ull : 1ull) << 32 | (unsigned)total);
        int prefix = 0;
        for (int p = tile - 1; p >= 0;) {
            unsigned long long s = atomicAdd(&status[p], 0ull);
            unsigned flag = s >> 32;
            if (flag == 0) continue;
            prefix += (int)(unsigned)s;
            if (flag == 2) break;
            --p;
        }
        if (tile > 0) atomicExch(&status[tile], 2ull << 32 | (unsigned)(prefix + total));
        exclusive = prefix;
    }
    __syncthreads();
    int prefix = exclusive + incl - v[ITEMS - 1] + (threadIdx.x >= 32 ? warp_tot[threadIdx.x / 32 - 1] : 0);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) out[base + i] = v[i] + prefix;
}

template __global__ void scan_lookback<128, 8>(const int*, int*, unsigned long long*, unsigned*);
template __global__ void scan_lookback<256, 4>(const int*, int*, unsigned long long*, unsigned*);
template __global__ void scan_lookback<256, 12>(const int*, int*, unsigned long long*, unsigned*);

// Stream compaction: a ballot-based warp scan of predicate bits.
template <typename T>
__global__ void compact_positive(const T* __restrict__ in, int n, T* __restrict__ out, int* count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool keep = i < n && in[i] > T(0);
    unsigned mask = __ballot_sync(0xffffffffu, keep);
    int lane = threadIdx.x & 31, base = 0;
    if (lane == 0 && mask) base = atomicAdd(count, __popc(mask));
    base = __shfl_sync(0xffffffffu, base, 0);
    if (keep) out[base + __popc(mask & ((1u << lane) - 1))] = in[i];
}

template __global__ void compact_positive<float>(const float*, int, float*, int*);
template __global__ void compact_positive<double>(const double*, int, double*, int*);
