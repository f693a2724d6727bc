// Device functions kept as calls (__noinline__), none recursive: scalar and struct arguments
// and returns, a call under a divergent branch, nested calls, and a helper with a loop.

struct Pair { float lo; float hi; };

__device__ __noinline__ float poly3(float x, float a, float b, float c)
{
    return fmaf(fmaf(a, x, b), x, c);
}

__device__ __noinline__ Pair minmax(Pair p, float v)
{
    Pair r = { fminf(p.lo, v), fmaxf(p.hi, v) };
    return r;
}

__device__ __noinline__ unsigned int collatz_steps(unsigned int n)
{
    unsigned int steps = 0;
    while (n > 1 && steps < 1000) {
        n = (n & 1) ? 3 * n + 1 : n / 2;
        ++steps;
    }
    return steps;
}

__device__ __noinline__ float twice_poly(float x)
{
    return poly3(x, 0.5f, -1.0f, 2.0f) + poly3(-x, 0.25f, 1.0f, -3.0f);
}

extern "C" __global__ void calls_scalar(const float* x, float* y, unsigned int* steps, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    y[i] = (i & 1) ? twice_poly(x[i]) : poly3(x[i], 1.5f, 0.0f, -1.0f);
    steps[i] = collatz_steps((unsigned int)i + 1);
}

extern "C" __global__ void calls_struct(const float* x, float* lo, float* hi, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    Pair p = { x[i * m], x[i * m] };
    for (int j = 1; j < m; ++j)
        p = minmax(p, x[i * m + j]);
    lo[i] = p.lo;
    hi[i] = p.hi;
}
