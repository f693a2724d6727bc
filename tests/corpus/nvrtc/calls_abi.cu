// Code that keeps the ABI: printf, assert, function pointers, recursion and __noinline__
// device functions (each call passes arguments in the calling convention's registers).

// NVRTC's built-in header declares __assertfail (what <cassert>'s assert expands to).
#define DEV_ASSERT(c) ((c) ? (void)0 : __assertfail(#c, __FILE__, __LINE__, __func__, 1))

__global__ void printf_progress(const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] != x[i]) printf("NaN at %d (block %d, thread %d)\n", i, blockIdx.x, threadIdx.x);
}

__global__ void printf_stats(const double* x, int n)
{
    double s = 0, m = -1e300;
    for (int i = threadIdx.x; i < n; i += blockDim.x) { s += x[i]; m = fmax(m, x[i]); }
    if (threadIdx.x == 0) printf("sum %f max %g n %d mean %e\n", s, m, n, s / n);
}

template <typename T>
__global__ void assert_bounds(const int* idx, const T* src, T* dst, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int j = idx[i];
    DEV_ASSERT(j >= 0 && j < m);
    dst[i] = src[j];
}

template __global__ void assert_bounds<float>(const int*, const float*, float*, int, int);
template __global__ void assert_bounds<double>(const int*, const double*, double*, int, int);

typedef float (*unary_fn)(float);
__device__ float op_sq(float x) { return x * x; }
__device__ float op_exp(float x) { return __expf(x); }
__device__ float op_tanh(float x) { return tanhf(x); }
__device__ float op_soft(float x) { return logf(1.f + expf(x)); }
__device__ unary_fn op_table[4] = {op_sq, op_exp, op_tanh, op_soft};

__global__ void apply_fnptr(const float* x, float* y, const int* which, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = op_table[which[i] & 3](x[i]);
}

__global__ void apply_fnptr_chain(const float* x, float* y, int n, int a, int b, int c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = op_table[c & 3](op_table[b & 3](op_table[a & 3](x[i])) + x[i]);
}

__device__ int fib_rec(int n) { return n < 2 ? n : fib_rec(n - 1) + fib_rec(n - 2); }
__device__ double ackermann_like(int m, double x) { return m == 0 ? x + 1 : ackermann_like(m - 1, x * 0.5 + m); }

__global__ void recursion_fib(int* out) { out[threadIdx.x] = fib_rec(threadIdx.x % 20); }
__global__ void recursion_float(const double* x, double* out) { out[threadIdx.x] = ackermann_like(threadIdx.x % 12, x[threadIdx.x]); }

__device__ __noinline__ float4 ni_load_scale(const float4* p, int i, float s)
{
    float4 v = p[i];
    return make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
}
__device__ __noinline__ double ni_poly(double x, const double* c, int deg)
{
    double r = c[deg];
    for (int i = deg - 1; i >= 0; --i) r = fma(r, x, c[i]);
    return r;
}
__device__ __noinline__ void ni_swap_rows(float* a, int r0, int r1, int cols)
{
    for (int c = 0; c < cols; ++c) { float t = a[r0 * cols + c]; a[r0 * cols + c] = a[r1 * cols + c]; a[r1 * cols + c] = t; }
}

__global__ void noinline_calls(const float4* p, float4* q, const double* c, double* d, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 a = ni_load_scale(p, i, 2.f), b = ni_load_scale(p, i + 1, 0.5f);
    q[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    d[i] = ni_poly(a.x, c, 7) + ni_poly(b.w, c, 3);
}

__global__ void noinline_pivot(float* a, int rows, int cols)
{
    int r = blockIdx.x;
    int best = r;
    for (int k = r + 1; k < rows; ++k) if (fabsf(a[k * cols + r]) > fabsf(a[best * cols + r])) best = k;
    if (threadIdx.x == 0 && best != r) ni_swap_rows(a, r, best, cols);
}

// A device-side error path: the values needed by the message stay live across the loop.
__global__ void checked_gather(const float* src, const int* idx, float* dst, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.f;
    for (int k = 0; k < 4; ++k) {
        int j = idx[i * 4 + k];
        if (j < 0 || j >= m) { printf("bad index %d at %d/%d (m=%d)\n", j, i, k, m); __trap(); }
        acc += src[j];
    }
    dst[i] = acc;
}
