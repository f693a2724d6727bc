// Templates instantiated for several types, a functor, and a block-size parameter.
template <typename T>
struct Saxpy {
    T a;
    __device__ T operator()(T x, T y) const { return a * x + y; }
};

template <typename T, typename Op>
__global__ void map2(const T* x, const T* y, T* z, Op op, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        z[i] = op(x[i], y[i]);
}

template __global__ void map2<float, Saxpy<float>>(const float*, const float*, float*, Saxpy<float>, int);
template __global__ void map2<double, Saxpy<double>>(const double*, const double*, double*, Saxpy<double>, int);
template __global__ void map2<int, Saxpy<int>>(const int*, const int*, int*, Saxpy<int>, int);

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) dot_block(const float* a, const float* b, float* out, int n)
{
    __shared__ float s[BLOCK];
    float acc = 0.0f;
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += BLOCK * gridDim.x)
        acc += a[i] * b[i];
    s[threadIdx.x] = acc;
    __syncthreads();
#pragma unroll
    for (int w = BLOCK / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w)
            s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(out, s[0]);
}

template __global__ void dot_block<128>(const float*, const float*, float*, int);
