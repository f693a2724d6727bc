// Device functions that stay calls: __noinline__, recursion, function pointers, printf.

__device__ __noinline__ float poly3(float x, float a, float b, float c)
{
    return fmaf(fmaf(a, x, b), x, c);
}

__device__ __noinline__ double2 rotate(double2 v, double angle)
{
    double s, c;
    sincos(angle, &s, &c);
    return make_double2(c * v.x - s * v.y, s * v.x + c * v.y);
}

__device__ __noinline__ int fib_recursive(int n)
{
    return n < 2 ? n : fib_recursive(n - 1) + fib_recursive(n - 2);
}

__device__ float op_add(float a, float b) { return a + b; }
__device__ float op_mul(float a, float b) { return a * b; }
typedef float (*binop_t)(float, float);

extern "C" __global__ void call_chain(const float* x, double2* v, float* y, int* f, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    y[i] = poly3(x[i], 0.5f, -1.0f, 2.0f);
    v[i] = rotate(v[i], (double)x[i]);
    f[i] = fib_recursive(i & 7);
}

extern "C" __global__ void call_indirect(const float* a, const float* b, float* c, int which, int n)
{
    __shared__ binop_t table[2];
    if (threadIdx.x == 0) {
        table[0] = op_add;
        table[1] = op_mul;
    }
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = table[which & 1](a[i], b[i]);
    if (i == 0)
        printf("which=%d first=%f\n", which, c[0]);
}
