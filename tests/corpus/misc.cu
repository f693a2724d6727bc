// Odds and ends real code contains: constant tables with initialisers, device globals,
// dynamic shared memory, bit tricks, half precision, integer division, int32 selects.

__constant__ float kGauss[5] = {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f};
__device__ int gCounter = 7;
__device__ const char* gTag = "tag";

extern "C" __global__ void bits_and_halves(const unsigned* in, unsigned* out, const unsigned* h, float* hf, int n)
{
    extern __shared__ unsigned dyn[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned x = in[i];
    unsigned r = __brev(x) ^ (__popc(x) << 24) ^ __clz(x) ^ __byte_perm(x, x >> 3, 0x2301);
    r += __funnelshift_l(x, r, 7) + (x / (unsigned)(n | 1)) + __ffs(x);
    dyn[threadIdx.x] = r;
    __syncthreads();
    out[i] = dyn[(threadIdx.x + 1) % blockDim.x] + (unsigned)gCounter;
    unsigned p;
    float lo, hi;
    asm("mul.rn.f16x2 %0, %1, %1;" : "=r"(p) : "r"(h[i]));
    asm("{ .reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h; }"
        : "=f"(lo), "=f"(hi) : "r"(p));
    hf[i] = lo + hi + kGauss[i % 5];
}

extern "C" __global__ void int_select_cascade(const int* mode, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int m = mode[i];
    int a = m == 1 ? 13 : m == 2 ? -7 : m == 3 ? 21 : 0;
    int b = m > 2 ? a : 5;
    int c = (m & 1) ? a : b;
    out[i] = a * 3 + b * 5 + c + (gTag[0] == 't');
}
