// Histograms and atomic read-modify-write patterns.
extern "C" __global__ void histogram256(const unsigned char* data, unsigned int* bins, int n)
{
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (local[b])
            atomicAdd(&bins[b], local[b]);
}

__device__ float atomic_max_float(float* addr, float value)
{
    int* p = (int*)addr;
    int old = *p, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= value)
            break;
        old = atomicCAS(p, assumed, __float_as_int(value));
    } while (old != assumed);
    return __int_as_float(old);
}

extern "C" __global__ void atomic_mix(const float* v, float* maxv, unsigned int* ring, int* minv,
                                      unsigned long long* sum, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    atomic_max_float(maxv, v[i]);
    unsigned slot = atomicInc(ring, 1023u);
    atomicMin(minv + (slot & 7), (int)v[i]);
    atomicAdd(sum, (unsigned long long)(v[i] * 16.0f));
    atomicExch(ring + 1 + (slot & 15), (unsigned)i);
}
