// Stencils in one, two and three dimensions.
#define RADIUS 3

extern "C" __global__ void stencil1d(const float* in, float* out, int n)
{
    __shared__ float tile[128 + 2 * RADIUS];
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int l = threadIdx.x + RADIUS;
    tile[l] = g < n ? in[g] : 0.0f;
    if (threadIdx.x < RADIUS) {
        tile[l - RADIUS] = g >= RADIUS ? in[g - RADIUS] : 0.0f;
        tile[l + blockDim.x] = g + blockDim.x < n ? in[g + blockDim.x] : 0.0f;
    }
    __syncthreads();
    const float w[2 * RADIUS + 1] = {0.05f, 0.1f, 0.2f, 0.3f, 0.2f, 0.1f, 0.05f};
    float s = 0.0f;
#pragma unroll
    for (int k = -RADIUS; k <= RADIUS; ++k)
        s += w[k + RADIUS] * tile[l + k];
    if (g < n)
        out[g] = s;
}

extern "C" __global__ void stencil2d_5pt(const float* u, float* v, int nx, int ny, float c)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1)
        return;
    int i = y * nx + x;
    float lap = u[i - 1] + u[i + 1] + u[i - nx] + u[i + nx] - 4.0f * u[i];
    v[i] = u[i] + c * lap;
}

extern "C" __global__ void stencil3d_7pt(const double* __restrict__ u, double* __restrict__ v,
                                         int nx, int ny, int nz, double dt)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1)
        return;
    long plane = (long)nx * ny;
    double below = u[plane * 0 + y * nx + x];
    double here = u[plane * 1 + y * nx + x];
    for (int z = 1; z < nz - 1; ++z) {
        long i = plane * z + y * nx + x;
        double above = u[i + plane];
        double lap = u[i - 1] + u[i + 1] + u[i - nx] + u[i + nx] + below + above - 6.0 * here;
        v[i] = here + dt * lap;
        below = here;
        here = above;
    }
}
