// Numerical stencils: 1D, 2D and 3D finite-difference stencils of radius R, a register-queue
// 3D stencil walking z, an explicit heat step and a 2D Laplacian with shared-memory halos.
namespace fam {

template <int R, typename T>
__global__ void stencil1d(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < R || i >= n - R) return;
    T acc = c[0] * in[i];
#pragma unroll
    for (int k = 1; k <= R; ++k) acc += c[k] * (in[i - k] + in[i + k]);
    out[i] = acc;
}

template <int R, int BX, int BY, typename T>
__global__ void __launch_bounds__(BX * BY) stencil2d_smem(const T* __restrict__ in, T* __restrict__ out, int nx, int ny)
{
    __shared__ T tile[BY + 2 * R][BX + 2 * R];
    int x = blockIdx.x * BX + threadIdx.x, y = blockIdx.y * BY + threadIdx.y;
    for (int dy = threadIdx.y; dy < BY + 2 * R; dy += BY)
        for (int dx = threadIdx.x; dx < BX + 2 * R; dx += BX) {
            int gx = min(max(blockIdx.x * BX + dx - R, 0), nx - 1);
            int gy = min(max(blockIdx.y * BY + dy - R, 0), ny - 1);
            tile[dy][dx] = in[(size_t)gy * nx + gx];
        }
    __syncthreads();
    if (x >= nx || y >= ny) return;
    T acc = T(-4 * R) * tile[threadIdx.y + R][threadIdx.x + R];
#pragma unroll
    for (int k = 1; k <= R; ++k)
        acc += (tile[threadIdx.y + R][threadIdx.x + R - k] + tile[threadIdx.y + R][threadIdx.x + R + k]
                + tile[threadIdx.y + R - k][threadIdx.x + R] + tile[threadIdx.y + R + k][threadIdx.x + R]) / T(k);
    out[(size_t)y * nx + x] = acc;
}

// a 3D stencil that keeps the z column in a register queue (2R+1 values) and walks z
template <int R, typename T>
__global__ void stencil3d_zqueue(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ c,
                                 int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x + R, y = blockIdx.y * blockDim.y + threadIdx.y + R;
    if (x >= nx - R || y >= ny - R) return;
    size_t plane = (size_t)nx * ny, idx = (size_t)y * nx + x;
    T q[2 * R + 1];
#pragma unroll
    for (int k = 0; k < 2 * R + 1; ++k) q[k] = in[idx + k * plane];
    for (int z = R; z < nz - R; ++z) {
        size_t at = idx + z * plane;
        T acc = c[0] * q[R];
#pragma unroll
        for (int k = 1; k <= R; ++k)
            acc += c[k] * (q[R - k] + q[R + k] + in[at - k] + in[at + k] + in[at - k * nx] + in[at + k * nx]);
        out[at] = acc;
#pragma unroll
        for (int k = 0; k < 2 * R; ++k) q[k] = q[k + 1];
        if (z + R + 1 < nz) q[2 * R] = in[at + (R + 1) * plane];
    }
}

template <typename T>
__global__ void heat_step(const T* __restrict__ u, T* __restrict__ v, T alpha, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1) return;
    size_t i = (size_t)y * nx + x;
    v[i] = u[i] + alpha * (u[i - 1] + u[i + 1] + u[i - nx] + u[i + nx] - T(4) * u[i]);
}

// red-black Gauss-Seidel sweep with a variable coefficient
template <typename T>
__global__ void redblack_sweep(T* __restrict__ u, const T* __restrict__ f, const T* __restrict__ k,
                               T h2, int color, int nx, int ny)
{
    int y = blockIdx.y * blockDim.y + threadIdx.y + 1;
    int x = 2 * (blockIdx.x * blockDim.x + threadIdx.x) + 1 + ((y + color) & 1);
    if (x >= nx - 1 || y >= ny - 1) return;
    size_t i = (size_t)y * nx + x;
    T kw = T(0.5) * (k[i] + k[i - 1]), ke = T(0.5) * (k[i] + k[i + 1]);
    T ks = T(0.5) * (k[i] + k[i - nx]), kn = T(0.5) * (k[i] + k[i + nx]);
    u[i] = (kw * u[i - 1] + ke * u[i + 1] + ks * u[i - nx] + kn * u[i + nx] + h2 * f[i]) / (kw + ke + ks + kn);
}

template __global__ void stencil1d<1, float>(const float*, float*, const float*, int);
template __global__ void stencil1d<3, float>(const float*, float*, const float*, int);
template __global__ void stencil1d<6, float>(const float*, float*, const float*, int);
template __global__ void stencil1d<4, double>(const double*, double*, const double*, int);
template __global__ void stencil1d<8, double>(const double*, double*, const double*, int);
template __global__ void stencil2d_smem<1, 32, 8, float>(const float*, float*, int, int);
template __global__ void stencil2d_smem<2, 32, 8, float>(const float*, float*, int, int);
template __global__ void stencil2d_smem<4, 16, 16, float>(const float*, float*, int, int);
template __global__ void stencil2d_smem<2, 32, 4, double>(const double*, double*, int, int);
template __global__ void stencil3d_zqueue<1, float>(const float*, float*, const float*, int, int, int);
template __global__ void stencil3d_zqueue<2, float>(const float*, float*, const float*, int, int, int);
template __global__ void stencil3d_zqueue<4, float>(const float*, float*, const float*, int, int, int);
template __global__ void stencil3d_zqueue<2, double>(const double*, double*, const double*, int, int, int);
template __global__ void stencil3d_zqueue<4, double>(const double*, double*, const double*, int, int, int);
template __global__ void heat_step<float>(const float*, float*, float, int, int);
template __global__ void heat_step<double>(const double*, double*, double, int, int);
template __global__ void redblack_sweep<float>(float*, const float*, const float*, float, int, int, int);
template __global__ void redblack_sweep<double>(double*, const double*, const double*, double, int, int, int);

}  // namespace fam
