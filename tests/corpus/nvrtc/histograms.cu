// Histograms with shared-memory atomics: privatised per block and per warp, byte histograms
// read 16 bytes at a time, a float binning histogram and a 2D joint histogram.

template <int BINS>
__global__ void hist_shared(const int* __restrict__ in, int n, unsigned* __restrict__ out)
{
    __shared__ unsigned h[BINS];
    for (int i = threadIdx.x; i < BINS; i += blockDim.x) h[i] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&h[(unsigned)in[i] % BINS], 1u);
    __syncthreads();
    for (int i = threadIdx.x; i < BINS; i += blockDim.x)
        if (h[i]) atomicAdd(&out[i], h[i]);
}

template __global__ void hist_shared<64>(const int*, int, unsigned*);
template __global__ void hist_shared<256>(const int*, int, unsigned*);
template __global__ void hist_shared<4096>(const int*, int, unsigned*);

template <int BINS, int WARPS>
__global__ void hist_per_warp(const unsigned char* __restrict__ in, int n, unsigned* __restrict__ out)
{
    __shared__ unsigned h[WARPS][BINS];
    for (int i = threadIdx.x; i < WARPS * BINS; i += blockDim.x) (&h[0][0])[i] = 0;
    __syncthreads();
    unsigned* mine = h[threadIdx.x / 32];
    const uint4* v = reinterpret_cast<const uint4*>(in);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n / 16; i += gridDim.x * blockDim.x) {
        uint4 q = v[i];
        unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int b = 0; b < 4; ++b) atomicAdd(&mine[((w[j] >> (8 * b)) & 255) % BINS], 1u);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < BINS; i += blockDim.x) {
        unsigned s = 0;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) s += h[w][i];
        atomicAdd(&out[i], s);
    }
}

template __global__ void hist_per_warp<256, 4>(const unsigned char*, int, unsigned*);
template __global__ void hist_per_warp<256, 8>(const unsigned char*, int, unsigned*);
template __global__ void hist_per_warp<64, 8>(const unsigned char*, int, unsigned*);

template <typename T>
__global__ void hist_float_bins(const T* __restrict__ x, int n, T lo, T hi, int bins, unsigned* __restrict__ out)
{
    extern __shared__ unsigned hs[];
    for (int i = threadIdx.x; i < bins; i += blockDim.x) hs[i] = 0;
    __syncthreads();
    T scale = bins / (hi - lo);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        T v = x[i];
        if (v >= lo && v < hi) atomicAdd(&hs[min((int)((v - lo) * scale), bins - 1)], 1u);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < bins; i += blockDim.x) atomicAdd(&out[i], hs[i]);
}

template __global__ void hist_float_bins<float>(const float*, int, float, float, int, unsigned*);
template __global__ void hist_float_bins<double>(const double*, int, double, double, int, unsigned*);

__global__ void joint_hist_2d(const unsigned char* __restrict__ a, const unsigned char* __restrict__ b, int n,
                              unsigned* __restrict__ out)
{
    __shared__ unsigned h[32][32];
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) (&h[0][0])[i] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&h[a[i] >> 3][b[i] >> 3], 1u);
    __syncthreads();
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) atomicAdd(&out[i], (&h[0][0])[i]);
}

// Warp-aggregated atomics: lanes with the same bin elect a leader with __match_any_sync.
__global__ void hist_match_any(const int* __restrict__ in, int n, unsigned* __restrict__ out, int bins)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int bin = in[i] % bins;
        unsigned peers = __match_any_sync(__activemask(), bin);
        int leader = __ffs(peers) - 1;
        if ((threadIdx.x & 31) == leader) atomicAdd(&out[bin], __popc(peers));
    }
}
