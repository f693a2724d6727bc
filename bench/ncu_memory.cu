#include <cstdio>
#include <cuda_runtime.h>

extern "C" __global__ void copy(const float *in, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i];                                   // @copy
}

extern "C" __global__ void strided(const float *in, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[2 * i];                               // @strided
}

extern "C" __global__ void broadcast(const float *in, float *out) {
    __shared__ float s[32];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (t < 32) s[t] = in[t];
    __syncthreads();
    out[i] = in[0] + s[0];                            // @broadcast
}

extern "C" __global__ void transpose_naive(const float *in, float *out, int n) {
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    out[x * n + y] = in[y * n + x];                   // @naive
}

extern "C" __global__ void transpose_tile(const float *in, float *out, int n) {
    __shared__ float tile[32][32];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];   // @tile_store
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
    out[y * n + x] = tile[threadIdx.x][threadIdx.y];  // @tile_load
}

extern "C" __global__ void transpose_padded(const float *in, float *out, int n) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];   // @padded_store
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
    out[y * n + x] = tile[threadIdx.x][threadIdx.y];  // @padded_load
}

extern "C" __global__ void doubles(const double *in, double *out) {
    __shared__ double d[128];
    int t = threadIdx.x;
    d[t] = in[t];                                     // @double_store
    d[t + 64] = in[t] + 1.0;
    __syncthreads();
    out[t] = d[2 * t];                                // @double_stride2
}

extern "C" __global__ void diverge(const float *in, float *out, int reps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[i];
    if (threadIdx.x % 2) {                            // @diverge
        for (int k = 0; k < reps; ++k)
            v = v * 0.5f + 1.0f;
    }
    out[i] = v;
}

extern "C" __global__ void raw_race(const float *in, float *out) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = in[i];                                     // @raw_store
    out[i] = s[(t + 1) % blockDim.x];                 // @raw_load
}

extern "C" __global__ void raw_fixed(const float *in, float *out) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = in[i];
    __syncthreads();
    out[i] = s[(t + 1) % blockDim.x];
}

extern "C" __global__ void war_race(const float *in, float *out, int tiles) {
    __shared__ float s[256];
    int t = threadIdx.x, n = blockDim.x;
    float acc = 0.0f;
    for (int k = 0; k < tiles; ++k) {
        s[t] = in[k * n + t];                         // @war_store
        __syncthreads();
        acc += s[(t + 1) % n];                        // @war_load
    }
    out[t] = acc;
}

extern "C" __global__ void war_fixed(const float *in, float *out, int tiles) {
    __shared__ float s[256];
    int t = threadIdx.x, n = blockDim.x;
    float acc = 0.0f;
    for (int k = 0; k < tiles; ++k) {
        s[t] = in[k * n + t];
        __syncthreads();
        acc += s[(t + 1) % n];
        __syncthreads();
    }
    out[t] = acc;
}

extern "C" __global__ void global_race(float *data) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    data[i] = data[i + 1] + 1.0f;                     // @global_race
}

extern "C" __global__ void same_value(int *flag) {
    flag[0] = 1;                                      // @same_value
}

extern "C" __global__ void histogram(const int *in, int *bins, float *total) {
    __shared__ int local[16];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (t < 16) local[t] = 0;
    __syncthreads();
    atomicAdd(&local[in[i] & 15], 1);
    __syncthreads();
    if (t < 16) atomicAdd(&bins[t], local[t]);
    atomicAdd(total, 1.0f);
}

template <class T> T *iota(int n) { T *h = new T[n]; for (int i = 0; i < n; ++i) h[i] = (T)i; T *d; cudaMalloc(&d, n * sizeof(T)); cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice); delete[] h; return d; }
int main() {
  copy<<<dim3(2, 1), dim3(256, 1)>>>(iota<float>(1024), iota<float>(512));
  strided<<<dim3(2, 1), dim3(256, 1)>>>(iota<float>(1024), iota<float>(512));
  broadcast<<<dim3(2, 1), dim3(256, 1)>>>(iota<float>(1024), iota<float>(512));
  transpose_naive<<<dim3(2, 2), dim3(32, 32)>>>(iota<float>(4096), iota<float>(4096), 64);
  transpose_tile<<<dim3(2, 2), dim3(32, 32)>>>(iota<float>(4096), iota<float>(4096), 64);
  transpose_padded<<<dim3(2, 2), dim3(32, 32)>>>(iota<float>(4096), iota<float>(4096), 64);
  doubles<<<dim3(1, 1), dim3(64, 1)>>>(iota<double>(64), iota<double>(64));
  diverge<<<dim3(2, 1), dim3(256, 1)>>>(iota<float>(512), iota<float>(512), 5);
  cudaError_t e = cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(e)); return e != cudaSuccess; }
