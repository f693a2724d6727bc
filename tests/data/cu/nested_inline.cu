// Nested inlining for the .loc inlined_at chain tests (test_parse_inlining.py): leaf is
// inlined into mid, mid into top, top into the kernels.  Tests find lines by the markers.
__device__ __forceinline__ float leaf(float x, int k)
{
    return x * x + k;                                  // LEAF
}
__device__ __forceinline__ float mid(const float* p, int i)
{
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k)
        s += leaf(p[i + k], k);                        // MID_CALL
    return s;
}
__device__ __forceinline__ float top(const float* p, int i)
{
    return mid(p, i) * mid(p, i + 8);                  // TOP_CALL
}
extern "C" __global__ void nest(float* out, const float* p)   // NEST_BEGIN
{
    int i = threadIdx.x;
    float a = top(p, i);                               // CALL_A
    float b = top(p, i + 32);                          // CALL_B
    out[i] = a - b;
}                                                      // NEST_END

// A WENO-like shape: a smoothness helper (itself calling coef) inlined at three call sites
// whose results all stay live until the last line.
__device__ __forceinline__ double coef(int s, int k, int ro)
{
    return ro == 5 ? (s * 7 + k) * 0.013 + 0.5 : (s * 5 + k) * 0.021 + 0.25;   // COEF
}
__device__ __forceinline__ double smooth(const double* f, long i, long st, int ro)
{
    double b = 0.0;
#pragma unroll
    for (int k = 0; k < 6; ++k)
        b += coef(1, k, ro) * f[i + k * st] * f[i + (5 - k) * st];            // SMOOTH_CALL
    return b;
}
extern "C" __global__ void gu(double* out, const double* u, const double* v, const int* ro_, long n) // GU_BEGIN
{
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    int ro = ro_[i];
    double r0 = smooth(u, i, 1, ro);                   // GU_CALL0
    double r1 = smooth(u, i, n, ro);                   // GU_CALL1
    double r2 = smooth(v, i, n, ro);                   // GU_CALL2
    out[i] = r0 * r1 + r2;
}                                                      // GU_END
