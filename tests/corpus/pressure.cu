// Kernels built to stress registers: a wide live set, one with a low register cap that spills.
// The 32 loads on the LOADS line are all live at once before the reduction below them.
extern "C" __global__ void live_window(const float* in, float* out, int stride)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[32];
#pragma unroll
    for (int k = 0; k < 32; ++k)
        v[k] = in[i + k * stride]; // LOADS
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < 32; ++k)
        acc += v[k] * v[31 - k] + v[(k * 7) & 31];
    out[i] = acc;
}

extern "C" __global__ void __maxnreg__(32) spill_capped(const double* in, double* out, int stride)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v[24];
#pragma unroll
    for (int k = 0; k < 24; ++k)
        v[k] = in[i + k * stride];
    double acc = 0.0;
#pragma unroll
    for (int k = 0; k < 24; ++k)
        acc += v[k] * v[23 - k] * v[(k * 5) % 24];
    out[i] = acc;
}
