// thrust and libcu++ in device code, as thrust's algorithms run it: complex arithmetic, tuples of
// zipped values, transform and counting iterators feeding a cub block reduction (the inner
// loop of transform_reduce), and functor-composed elementwise maps.
#include <cuda/std/complex>
#include <cuda/std/tuple>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/block/block_reduce.cuh>

namespace fam {

template <typename T>
__global__ void complex_axpy(const cuda::std::complex<T>* __restrict__ x, cuda::std::complex<T>* __restrict__ y,
                             cuda::std::complex<T> a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

template <typename T>
__global__ void complex_exp_phase(const cuda::std::complex<T>* __restrict__ x, cuda::std::complex<T>* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = cuda::std::exp(x[i]) * cuda::std::conj(x[i]) / (cuda::std::abs(x[i]) + T(1));
}

template <typename T>
__global__ void julia(int* __restrict__ out, cuda::std::complex<T> c, int w, int h, int iters)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x, py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= w || py >= h) return;
    cuda::std::complex<T> z(T(3) * px / w - T(1.5), T(2) * py / h - T(1));
    int k = 0;
    while (k < iters && cuda::std::norm(z) < T(4)) { z = z * z + c; ++k; }
    out[py * w + px] = k;
}

struct Saxpy3 {
    float a;
    __device__ cuda::std::tuple<float, float> operator()(const cuda::std::tuple<float, float, float>& t) const {
        return cuda::std::make_tuple(a * cuda::std::get<0>(t) + cuda::std::get<1>(t), cuda::std::get<2>(t) - cuda::std::get<0>(t));
    }
};

__global__ void zipped_map(const float* __restrict__ x, const float* __restrict__ y, const float* __restrict__ z,
                           float* __restrict__ u, float* __restrict__ v, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    auto r = Saxpy3{a}(cuda::std::make_tuple(x[i], y[i], z[i]));
    u[i] = cuda::std::get<0>(r);
    v[i] = cuda::std::get<1>(r);
}

template <typename T> struct SquareOf {
    const T* data;
    __device__ T operator()(int i) const { return data[i] * data[i]; }
};

template <typename T, int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS) transform_reduce_tile(const T* __restrict__ x, T* __restrict__ out, int n)
{
    using BR = cub::BlockReduce<T, THREADS>;
    __shared__ typename BR::TempStorage tmp;
    auto it = thrust::make_transform_iterator(thrust::counting_iterator<int>(0), SquareOf<T>{x});
    T acc = T(0);
    int base = blockIdx.x * THREADS * ITEMS + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        int i = base + k * THREADS;
        if (i < n) acc += it[i];
    }
    T s = BR(tmp).Sum(acc);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// minmax over pairs, as thrust::minmax_element's per-thread step
template <typename T, int ITEMS>
__global__ void minmax_pairs(const T* __restrict__ x, cuda::std::tuple<T, int, T, int>* __restrict__ out, int n)
{
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS;
    T lo = x[min(base, n - 1)], hi = lo;
    int ilo = base, ihi = base;
#pragma unroll
    for (int k = 1; k < ITEMS; ++k) {
        int i = base + k;
        if (i < n) {
            T v = x[i];
            if (v < lo) { lo = v; ilo = i; }
            if (v > hi) { hi = v; ihi = i; }
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = cuda::std::make_tuple(lo, ilo, hi, ihi);
}

template __global__ void complex_axpy<float>(const cuda::std::complex<float>*, cuda::std::complex<float>*, cuda::std::complex<float>, int);
template __global__ void complex_axpy<double>(const cuda::std::complex<double>*, cuda::std::complex<double>*, cuda::std::complex<double>, int);
template __global__ void complex_exp_phase<float>(const cuda::std::complex<float>*, cuda::std::complex<float>*, int);
template __global__ void complex_exp_phase<double>(const cuda::std::complex<double>*, cuda::std::complex<double>*, int);
template __global__ void julia<float>(int*, cuda::std::complex<float>, int, int, int);
template __global__ void julia<double>(int*, cuda::std::complex<double>, int, int, int);
template __global__ void transform_reduce_tile<float, 256, 4>(const float*, float*, int);
template __global__ void transform_reduce_tile<double, 128, 8>(const double*, double*, int);
template __global__ void transform_reduce_tile<int, 512, 2>(const int*, int*, int);
template __global__ void minmax_pairs<float, 4>(const float*, cuda::std::tuple<float, int, float, int>*, int);
template __global__ void minmax_pairs<double, 8>(const double*, cuda::std::tuple<double, int, double, int>*, int);
template __global__ void minmax_pairs<int, 16>(const int*, cuda::std::tuple<int, int, int, int>*, int);

}  // namespace fam
