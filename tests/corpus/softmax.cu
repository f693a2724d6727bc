// Row-wise softmax: one warp per row, two reductions and exponentials.
__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_maximum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

extern "C" __global__ void softmax_rows(const float* x, float* y, int rows, int cols)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= rows)
        return;
    const float* xr = x + (long)row * cols;
    float m = -__int_as_float(0x7f800000);
    for (int c = lane; c < cols; c += 32)
        m = fmaxf(m, xr[c]);
    m = warp_maximum(m);
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32)
        s += __expf(xr[c] - m);
    s = warp_sum(s);
    float inv = 1.0f / s;
    for (int c = lane; c < cols; c += 32)
        y[(long)row * cols + c] = __expf(xr[c] - m) * inv;
}

extern "C" __global__ void log_softmax_f64(const double* x, double* y, int cols)
{
    const double* xr = x + (long)blockIdx.x * cols;
    double m = -1e300;
    for (int c = 0; c < cols; ++c)
        m = fmax(m, xr[c]);
    double s = 0.0;
    for (int c = 0; c < cols; ++c)
        s += exp(xr[c] - m);
    double ls = log(s) + m;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[(long)blockIdx.x * cols + c] = xr[c] - ls;
}
