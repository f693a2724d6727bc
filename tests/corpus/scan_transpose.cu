// Block-wide exclusive scan (work-efficient up-sweep / down-sweep) and a shared-memory transpose.
extern "C" __global__ void block_exclusive_scan(const float* in, float* out, float* block_sums, int n)
{
    __shared__ float buf[512];
    int t = threadIdx.x;
    int base = blockIdx.x * 512;
    buf[2 * t] = base + 2 * t < n ? in[base + 2 * t] : 0.0f;
    buf[2 * t + 1] = base + 2 * t + 1 < n ? in[base + 2 * t + 1] : 0.0f;
    int offset = 1;
    for (int d = 256; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d)
            buf[offset * (2 * t + 2) - 1] += buf[offset * (2 * t + 1) - 1];
        offset <<= 1;
    }
    if (t == 0) {
        block_sums[blockIdx.x] = buf[511];
        buf[511] = 0.0f;
    }
    for (int d = 1; d < 512; d <<= 1) {
        offset >>= 1;
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
            float tmp = buf[ai];
            buf[ai] = buf[bi];
            buf[bi] += tmp;
        }
    }
    __syncthreads();
    if (base + 2 * t < n) out[base + 2 * t] = buf[2 * t];
    if (base + 2 * t + 1 < n) out[base + 2 * t + 1] = buf[2 * t + 1];
}

extern "C" __global__ void transpose_smem(const float* in, float* out, int rows, int cols)
{
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < cols && y + j < rows)
            tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < rows && y + j < cols)
            out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
