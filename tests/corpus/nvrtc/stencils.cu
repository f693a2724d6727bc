// Finite-difference stencils: 1D with radius R in shared memory, 2D 5/9-point with halos,
// 3D 7-point, and the register-streaming 3D high-order stencil (a z-column kept in registers).

template <int R, typename T>
__global__ void stencil1d(const T* __restrict__ in, T* __restrict__ out, int n, const T* __restrict__ c)
{
    extern __shared__ unsigned char raw[];
    T* s = reinterpret_cast<T*>(raw);
    int g = blockIdx.x * blockDim.x + threadIdx.x, l = threadIdx.x + R;
    s[l] = g < n ? in[g] : T(0);
    if (threadIdx.x < R) {
        s[l - R] = g >= R ? in[g - R] : T(0);
        s[l + blockDim.x] = g + blockDim.x < n ? in[g + blockDim.x] : T(0);
    }
    __syncthreads();
    T acc = c[0] * s[l];
#pragma unroll
    for (int k = 1; k <= R; ++k) acc += c[k] * (s[l - k] + s[l + k]);
    if (g < n) out[g] = acc;
}

template __global__ void stencil1d<1, float>(const float*, float*, int, const float*);
template __global__ void stencil1d<2, float>(const float*, float*, int, const float*);
template __global__ void stencil1d<4, float>(const float*, float*, int, const float*);
template __global__ void stencil1d<8, float>(const float*, float*, int, const float*);
template __global__ void stencil1d<4, double>(const double*, double*, int, const double*);
template __global__ void stencil1d<8, double>(const double*, double*, int, const double*);

template <int BX, int BY, bool NINE>
__global__ void stencil2d(const float* __restrict__ in, float* __restrict__ out, int nx, int ny, float w0, float w1, float w2)
{
    __shared__ float s[BY + 2][BX + 2];
    int x = blockIdx.x * BX + threadIdx.x, y = blockIdx.y * BY + threadIdx.y;
    for (int j = threadIdx.y; j < BY + 2; j += BY)
        for (int i = threadIdx.x; i < BX + 2; i += BX) {
            int gx = min(max(blockIdx.x * BX + i - 1, 0), nx - 1);
            int gy = min(max(blockIdx.y * BY + j - 1, 0), ny - 1);
            s[j][i] = in[gy * nx + gx];
        }
    __syncthreads();
    int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
    float v = w0 * s[ty][tx] + w1 * (s[ty - 1][tx] + s[ty + 1][tx] + s[ty][tx - 1] + s[ty][tx + 1]);
    if (NINE) v += w2 * (s[ty - 1][tx - 1] + s[ty - 1][tx + 1] + s[ty + 1][tx - 1] + s[ty + 1][tx + 1]);
    if (x < nx && y < ny) out[y * nx + x] = v;
}

template __global__ void stencil2d<32, 8, false>(const float*, float*, int, int, float, float, float);
template __global__ void stencil2d<32, 8, true>(const float*, float*, int, int, float, float, float);
template __global__ void stencil2d<16, 16, false>(const float*, float*, int, int, float, float, float);
template __global__ void stencil2d<64, 4, true>(const float*, float*, int, int, float, float, float);

// Jacobi with an unrolled inner time loop in registers (COARSEN rows per thread).
template <int COARSEN>
__global__ void jacobi2d_coarse(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * COARSEN;
    if (x < 1 || x >= nx - 1) return;
    float up = in[max(y0 - 1, 0) * nx + x], mid = in[y0 * nx + x];
#pragma unroll
    for (int k = 0; k < COARSEN; ++k) {
        int y = y0 + k;
        if (y >= ny - 1) break;
        float down = in[(y + 1) * nx + x];
        float v = 0.25f * (up + down + in[y * nx + x - 1] + in[y * nx + x + 1]);
        if (y > 0) out[y * nx + x] = v;
        up = mid;
        mid = down;
    }
}

template __global__ void jacobi2d_coarse<1>(const float*, float*, int, int);
template __global__ void jacobi2d_coarse<4>(const float*, float*, int, int);
template __global__ void jacobi2d_coarse<8>(const float*, float*, int, int);

template <typename T>
__global__ void stencil3d_7pt(const T* __restrict__ in, T* __restrict__ out, int nx, int ny, int nz, T c0, T c1)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z;
    if (x < 1 || y < 1 || z < 1 || x >= nx - 1 || y >= ny - 1 || z >= nz - 1) return;
    size_t sx = 1, sy = nx, sz = (size_t)nx * ny, i = z * sz + y * sy + x;
    out[i] = c0 * in[i] + c1 * (in[i - sx] + in[i + sx] + in[i - sy] + in[i + sy] + in[i - sz] + in[i + sz]);
}

template __global__ void stencil3d_7pt<float>(const float*, float*, int, int, int, float, float);
template __global__ void stencil3d_7pt<double>(const double*, double*, int, int, int, double, double);

// Order-2R stencil streaming along z: the 2R+1 values of the z column live in registers and
// shift every step; the xy plane goes through shared memory.
template <int R, int BX, int BY>
__global__ void stencil3d_stream(const float* __restrict__ in, float* __restrict__ out, int nx, int ny, int nz,
                                 const float* __restrict__ coef)
{
    __shared__ float plane[BY + 2 * R][BX + 2 * R];
    const int x = blockIdx.x * BX + threadIdx.x + R, y = blockIdx.y * BY + threadIdx.y + R;
    const size_t sz = (size_t)nx * ny;
    float col[2 * R + 1];
#pragma unroll
    for (int k = 0; k < 2 * R; ++k) col[k + 1] = in[k * sz + y * nx + x];
    for (int z = R; z < nz - R; ++z) {
#pragma unroll
        for (int k = 0; k < 2 * R; ++k) col[k] = col[k + 1];
        col[2 * R] = in[(z + R) * sz + y * nx + x];
        __syncthreads();
        plane[threadIdx.y + R][threadIdx.x + R] = col[R];
        if (threadIdx.x < R) {
            plane[threadIdx.y + R][threadIdx.x] = in[z * sz + y * nx + x - R];
            plane[threadIdx.y + R][threadIdx.x + BX + R] = in[z * sz + y * nx + x + BX];
        }
        if (threadIdx.y < R) {
            plane[threadIdx.y][threadIdx.x + R] = in[z * sz + (y - R) * nx + x];
            plane[threadIdx.y + BY + R][threadIdx.x + R] = in[z * sz + (y + BY) * nx + x];
        }
        __syncthreads();
        float v = coef[0] * col[R];
#pragma unroll
        for (int k = 1; k <= R; ++k)
            v += coef[k] * (col[R - k] + col[R + k] + plane[threadIdx.y + R][threadIdx.x + R - k] +
                            plane[threadIdx.y + R][threadIdx.x + R + k] + plane[threadIdx.y + R - k][threadIdx.x + R] +
                            plane[threadIdx.y + R + k][threadIdx.x + R]);
        out[z * sz + y * nx + x] = v;
    }
}

template __global__ void stencil3d_stream<1, 32, 8>(const float*, float*, int, int, int, const float*);
template __global__ void stencil3d_stream<2, 32, 8>(const float*, float*, int, int, int, const float*);
template __global__ void stencil3d_stream<4, 32, 8>(const float*, float*, int, int, int, const float*);
template __global__ void stencil3d_stream<6, 16, 16>(const float*, float*, int, int, int, const float*);

// 27-point box filter, double precision.
__global__ void box27_f64(const double* __restrict__ in, double* __restrict__ out, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y, z = blockIdx.z;
    if (x < 1 || y < 1 || z < 1 || x >= nx - 1 || y >= ny - 1 || z >= nz - 1) return;
    double s = 0;
#pragma unroll
    for (int dz = -1; dz <= 1; ++dz)
#pragma unroll
        for (int dy = -1; dy <= 1; ++dy)
#pragma unroll
            for (int dx = -1; dx <= 1; ++dx)
                s += in[((size_t)(z + dz) * ny + y + dy) * nx + x + dx] * (dx == 0 && dy == 0 && dz == 0 ? 2.0 : 1.0);
    out[((size_t)z * ny + y) * nx + x] = s / 28.0;
}
