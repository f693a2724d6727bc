// C++ names for the demangler tests (test_demangle.py): templates with type and literal
// arguments, namespaces (an anonymous one too), an operator, a const member function of a
// class template, a lambda, a __shared__ array in a template and a function pointer.
struct half { unsigned short x; };
namespace geo {
struct Vec3 { float x, y, z; };
__device__ __noinline__ Vec3 operator+(const Vec3& a, const Vec3& b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
template <typename T, int N> struct Box {
    T v[N];
    __device__ __noinline__ T sum() const { T s = T(); for (int i = 0; i < N; ++i) s += v[i]; return s; }
};
namespace { __device__ __noinline__ int hidden(int x) { return x * 3; } }
}
template <int BLOCK> __global__ void dot_block(const float* a, const float* b, float* out, int n)
{
    __shared__ float smem[BLOCK];
    smem[threadIdx.x] = a[threadIdx.x] * b[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) { float s = 0; for (int i = 0; i < BLOCK; ++i) s += smem[i]; out[blockIdx.x] = s; }
}
template __global__ void dot_block<128>(const float*, const float*, float*, int);
template <typename T, bool B> __global__ void tk(T* p, unsigned long long n, geo::Box<T, 4> box) { if (B) p[0] = box.sum() + (T)n; }
template __global__ void tk<double, true>(double*, unsigned long long, geo::Box<double, 4>);
template __global__ void tk<float, false>(float*, unsigned long long, geo::Box<float, 4>);
__global__ void vk(geo::Vec3* v, const geo::Vec3& w, void (*fp)(int), half h, char c, long long ll, unsigned short us)
{
    v[0] = v[1] + v[2];
    v[3].x = geo::hidden((int)v[4].y);
    auto lam = [&](int i) { v[i].x += 1.0f; };
    lam(5);
}
template <unsigned U, long L, char C> __global__ void lit(int* p) { p[0] = U + L + C; }
template __global__ void lit<4u, -7l, 'a'>(int*);
