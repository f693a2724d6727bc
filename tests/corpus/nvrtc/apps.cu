// Application kernels: __launch_bounds__ variants, transcendental-heavy math in float and
// double, multi-limb bignum arithmetic, private stacks in local memory, row normalisation
// (softmax, layernorm, rmsnorm) with VEC values per thread, transposes, SpMV, n-body, Mandelbrot.
#include <cuda_fp16.h>

// The same fused kernel under several launch bounds: ptxas caps registers by min blocks per SM.
template <int THREADS, int MIN_BLOCKS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
poly_bounded(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i >= n) return;
    float v[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) v[k] = x[(i + k * 97) % n];
    float acc = 0.f;
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int k = 0; k < 16; ++k) acc = fmaf(acc, v[k], v[(k * 5 + r) & 15]);
    y[i] = acc;
}

template __global__ void poly_bounded<128, 1>(const float*, float*, int);
template __global__ void poly_bounded<128, 8>(const float*, float*, int);
template __global__ void poly_bounded<256, 4>(const float*, float*, int);
template __global__ void poly_bounded<256, 8>(const float*, float*, int);
template __global__ void poly_bounded<1024, 1>(const float*, float*, int);
template __global__ void poly_bounded<512, 3>(const float*, float*, int);

template <typename T>
__global__ void transcendental_mix(const T* __restrict__ x, T* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    T a = x[i];
    T r = sin(a) * cos(a * T(0.5)) + exp(-a * a) + log1p(fabs(a)) + pow(fabs(a) + T(1), T(0.37));
    r += erf(a) + tanh(a) + atan2(a, T(1.5)) + cbrt(a) + lgamma(fabs(a) + T(1));
    y[i] = r;
}

template __global__ void transcendental_mix<float>(const float*, float*, int);
template __global__ void transcendental_mix<double>(const double*, double*, int);

__global__ void fast_math_intrinsics(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i];
    y[i] = __sinf(a) * __cosf(a) + __expf(a) * __logf(a + 2.f) + __powf(a * a + 1.f, 0.25f) + rsqrtf(a * a + 1.f);
}

template <typename T>
__global__ void black_scholes(const T* __restrict__ S, const T* __restrict__ K, const T* __restrict__ Tm,
                              T r, T v, T* __restrict__ call, T* __restrict__ put, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        T sq = v * sqrt(Tm[i]);
        T d1 = (log(S[i] / K[i]) + (r + T(0.5) * v * v) * Tm[i]) / sq, d2 = d1 - sq;
        T nd1 = normcdf(d1), nd2 = normcdf(d2), disc = K[i] * exp(-r * Tm[i]);
        call[i] = S[i] * nd1 - disc * nd2;
        put[i] = disc * (T(1) - nd2) - S[i] * (T(1) - nd1);
    }
}

template __global__ void black_scholes<float>(const float*, const float*, const float*, float, float, float*, float*, int);
template __global__ void black_scholes<double>(const double*, const double*, const double*, double, double, double*, double*, int);

// Multi-limb unsigned integers: schoolbook product with carry chains, LIMBS 32-bit words.
template <int LIMBS>
__global__ void bignum_mul(const unsigned* __restrict__ a, const unsigned* __restrict__ b, unsigned* __restrict__ c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x[LIMBS], y[LIMBS], z[2 * LIMBS] = {};
#pragma unroll
    for (int k = 0; k < LIMBS; ++k) { x[k] = a[i * LIMBS + k]; y[k] = b[i * LIMBS + k]; }
#pragma unroll
    for (int p = 0; p < LIMBS; ++p) {
        unsigned long long carry = 0;
#pragma unroll
        for (int q = 0; q < LIMBS; ++q) {
            unsigned long long t = (unsigned long long)x[p] * y[q] + z[p + q] + carry;
            z[p + q] = (unsigned)t;
            carry = t >> 32;
        }
        z[p + LIMBS] = (unsigned)carry;
    }
#pragma unroll
    for (int k = 0; k < 2 * LIMBS; ++k) c[i * 2 * LIMBS + k] = z[k];
}

template __global__ void bignum_mul<2>(const unsigned*, const unsigned*, unsigned*, int);
template __global__ void bignum_mul<4>(const unsigned*, const unsigned*, unsigned*, int);
template __global__ void bignum_mul<8>(const unsigned*, const unsigned*, unsigned*, int);
template __global__ void bignum_mul<12>(const unsigned*, const unsigned*, unsigned*, int);

template <int LIMBS>
__global__ void bignum_add_sub(const unsigned* __restrict__ a, const unsigned* __restrict__ b, unsigned* __restrict__ s,
                               unsigned* __restrict__ d, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned carry = 0, borrow = 0;
#pragma unroll
    for (int k = 0; k < LIMBS; ++k) {
        unsigned x = a[i * LIMBS + k], y = b[i * LIMBS + k];
        asm("add.cc.u32 %0, %1, %2;\n\taddc.u32 %1, 0, 0;" : "=r"(s[i * LIMBS + k]), "+r"(carry) : "r"(x + carry), "r"(y));
        unsigned t = x - y - borrow;
        borrow = (x < y) || (x == y && borrow);
        d[i * LIMBS + k] = t;
    }
}

template __global__ void bignum_add_sub<4>(const unsigned*, const unsigned*, unsigned*, unsigned*, int);
template __global__ void bignum_add_sub<16>(const unsigned*, const unsigned*, unsigned*, unsigned*, int);

// Private stacks: a depth-first walk of an implicit binary tree with a local array of DEPTH
// entries (dynamically indexed, so it lives in local memory).
template <int DEPTH>
__global__ void tree_walk_stack(const float* __restrict__ node_val, int nodes, const float* __restrict__ q,
                                int* __restrict__ hits, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int stack[DEPTH], top = 0, count = 0;
    float t = q[i];
    stack[top++] = 0;
    while (top > 0) {
        int nd = stack[--top];
        if (node_val[nd] > t) continue;
        ++count;
        int l = 2 * nd + 1, r = l + 1;
        if (r < nodes && top < DEPTH) stack[top++] = r;
        if (l < nodes && top < DEPTH) stack[top++] = l;
    }
    hits[i] = count;
}

template __global__ void tree_walk_stack<16>(const float*, int, const float*, int*, int);
template __global__ void tree_walk_stack<64>(const float*, int, const float*, int*, int);

template <int K>
__global__ void topk_insertion(const float* __restrict__ x, int cols, float* __restrict__ out)
{
    float best[K];
#pragma unroll
    for (int k = 0; k < K; ++k) best[k] = -1e30f;
    const float* row = x + (size_t)(blockIdx.x * blockDim.x + threadIdx.x) * cols;
    for (int c = 0; c < cols; ++c) {
        float v = row[c];
        int p = K - 1;
        if (v <= best[p]) continue;
        while (p > 0 && best[p - 1] < v) { best[p] = best[p - 1]; --p; }
        best[p] = v;
    }
#pragma unroll
    for (int k = 0; k < K; ++k) out[(blockIdx.x * blockDim.x + threadIdx.x) * K + k] = best[k];
}

template __global__ void topk_insertion<4>(const float*, int, float*);
template __global__ void topk_insertion<16>(const float*, int, float*);

// One warp per row, VEC values per lane kept in registers between the passes.
template <typename T, int VEC>
__global__ void layernorm_warp(const T* __restrict__ x, const float* __restrict__ g, const float* __restrict__ b,
                               T* __restrict__ y, int rows, float eps)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (row >= rows) return;
    constexpr int COLS = 32 * VEC;
    float v[VEC], s = 0.f;
#pragma unroll
    for (int k = 0; k < VEC; ++k) { v[k] = (float)x[(size_t)row * COLS + k * 32 + lane]; s += v[k]; }
#pragma unroll
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    float mean = s / COLS, q = 0.f;
#pragma unroll
    for (int k = 0; k < VEC; ++k) { v[k] -= mean; q += v[k] * v[k]; }
#pragma unroll
    for (int o = 16; o; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
    float rstd = rsqrtf(q / COLS + eps);
#pragma unroll
    for (int k = 0; k < VEC; ++k)
        y[(size_t)row * COLS + k * 32 + lane] = (T)(v[k] * rstd * g[k * 32 + lane] + b[k * 32 + lane]);
}

template __global__ void layernorm_warp<float, 4>(const float*, const float*, const float*, float*, int, float);
template __global__ void layernorm_warp<float, 16>(const float*, const float*, const float*, float*, int, float);
template __global__ void layernorm_warp<float, 32>(const float*, const float*, const float*, float*, int, float);
template __global__ void layernorm_warp<__half, 8>(const __half*, const float*, const float*, __half*, int, float);
template __global__ void layernorm_warp<__half, 32>(const __half*, const float*, const float*, __half*, int, float);

template <int VEC>
__global__ void softmax_warp(const float* __restrict__ x, float* __restrict__ y, int rows, int cols)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (row >= rows) return;
    float v[VEC], m = -__int_as_float(0x7f800000);
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
        int c = k * 32 + lane;
        v[k] = c < cols ? x[(size_t)row * cols + c] : -__int_as_float(0x7f800000);
        m = fmaxf(m, v[k]);
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < VEC; ++k) { v[k] = __expf(v[k] - m); s += v[k]; }
#pragma unroll
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
        int c = k * 32 + lane;
        if (c < cols) y[(size_t)row * cols + c] = v[k] / s;
    }
}

template __global__ void softmax_warp<1>(const float*, float*, int, int);
template __global__ void softmax_warp<8>(const float*, float*, int, int);
template __global__ void softmax_warp<32>(const float*, float*, int, int);

template <typename T, int TILE, int ROWS>
__global__ void transpose_tiled(const T* __restrict__ in, T* __restrict__ out, int w, int h)
{
    __shared__ T tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS)
        if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * w + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS)
        if (x < h && y + j < w) out[(size_t)(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}

template __global__ void transpose_tiled<float, 32, 8>(const float*, float*, int, int);
template __global__ void transpose_tiled<float, 32, 32>(const float*, float*, int, int);
template __global__ void transpose_tiled<double, 32, 8>(const double*, double*, int, int);
template __global__ void transpose_tiled<__half, 64, 8>(const __half*, __half*, int, int);

// CSR SpMV: a warp per row (vector kernel) with THREADS_PER_ROW lanes per row.
template <typename T, int TPR>
__global__ void spmv_csr_vector(const int* __restrict__ rowptr, const int* __restrict__ col, const T* __restrict__ val,
                                const T* __restrict__ x, T* __restrict__ y, int rows)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x, row = t / TPR, lane = t % TPR;
    if (row >= rows) return;
    T s = 0;
    for (int p = rowptr[row] + lane; p < rowptr[row + 1]; p += TPR) s += val[p] * __ldg(&x[col[p]]);
#pragma unroll
    for (int o = TPR / 2; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o, TPR);
    if (lane == 0) y[row] = s;
}

template __global__ void spmv_csr_vector<float, 4>(const int*, const int*, const float*, const float*, float*, int);
template __global__ void spmv_csr_vector<float, 32>(const int*, const int*, const float*, const float*, float*, int);
template __global__ void spmv_csr_vector<double, 8>(const int*, const int*, const double*, const double*, double*, int);

__global__ void spmv_ell(const int* __restrict__ col, const float* __restrict__ val, int width, const float* __restrict__ x,
                         float* __restrict__ y, int rows)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.f;
    for (int k = 0; k < width; ++k) {
        int c = col[k * rows + r];
        if (c >= 0) s += val[k * rows + r] * x[c];
    }
    y[r] = s;
}

// n-body with a shared-memory tile of bodies and an UNROLL-way inner loop.
template <int TILE, int UNROLL>
__global__ void nbody_tiled(const float4* __restrict__ pos, float3* __restrict__ acc, int n, float eps2)
{
    __shared__ float4 sh[TILE];
    int i = blockIdx.x * TILE + threadIdx.x;
    float4 p = pos[min(i, n - 1)];
    float3 a = {0.f, 0.f, 0.f};
    for (int t = 0; t < n; t += TILE) {
        sh[threadIdx.x] = pos[t + threadIdx.x];
        __syncthreads();
#pragma unroll UNROLL
        for (int j = 0; j < TILE; ++j) {
            float4 q = sh[j];
            float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
            float inv = rsqrtf(dx * dx + dy * dy + dz * dz + eps2);
            float s = q.w * inv * inv * inv;
            a.x += dx * s; a.y += dy * s; a.z += dz * s;
        }
        __syncthreads();
    }
    if (i < n) acc[i] = a;
}

template __global__ void nbody_tiled<128, 1>(const float4*, float3*, int, float);
template __global__ void nbody_tiled<128, 4>(const float4*, float3*, int, float);
template __global__ void nbody_tiled<256, 16>(const float4*, float3*, int, float);

template <typename T>
__global__ void mandelbrot(unsigned char* img, int w, int h, T x0, T y0, T dx, T dy, int max_iter)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x, py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= w || py >= h) return;
    T cr = x0 + px * dx, ci = y0 + py * dy, zr = 0, zi = 0;
    int it = 0;
    while (it < max_iter && zr * zr + zi * zi < T(4)) {
        T t = zr * zr - zi * zi + cr;
        zi = T(2) * zr * zi + ci;
        zr = t;
        ++it;
    }
    img[py * w + px] = (unsigned char)(255 * it / max_iter);
}

template __global__ void mandelbrot<float>(unsigned char*, int, int, float, float, float, float, int);
template __global__ void mandelbrot<double>(unsigned char*, int, int, double, double, double, double, int);
