// Reductions: shared-memory tree, warp shuffles, double-precision atomics.
extern "C" __global__ void block_reduce_sum(const float* __restrict__ in, float* out, int n)
{
    __shared__ float partial[256];
    int tid = threadIdx.x;
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + tid; i < n; i += gridDim.x * blockDim.x)
        acc += in[i];
    partial[tid] = acc;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride)
            partial[tid] += partial[tid + stride];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = partial[0];
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int offset = 16; offset > 0; offset /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

extern "C" __global__ void warp_reduce_max(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : -3.0e38f;
    v = warp_max(v);
    if ((threadIdx.x & 31) == 0)
        out[i >> 5] = v;
}

extern "C" __global__ void reduce_f64_atomic(const double* in, double* total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v = i < n ? in[i] * in[i] : 0.0;
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(total, v);
}
