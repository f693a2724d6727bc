// Tensor-core matrix multiply-accumulate through inline mma.sync (sm_80 and newer).
extern "C" __global__ void mma_m16n8k16_f16(const unsigned int* a_frag, const unsigned int* b_frag,
                                            float* d_out, int tiles)
{
    int t = blockIdx.x;
    if (t >= tiles)
        return;
    int lane = threadIdx.x & 31;
    unsigned a0 = a_frag[(t * 32 + lane) * 4 + 0], a1 = a_frag[(t * 32 + lane) * 4 + 1];
    unsigned a2 = a_frag[(t * 32 + lane) * 4 + 2], a3 = a_frag[(t * 32 + lane) * 4 + 3];
    unsigned b0 = b_frag[(t * 32 + lane) * 2 + 0], b1 = b_frag[(t * 32 + lane) * 2 + 1];
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
    for (int rep = 0; rep < 4; ++rep) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
            "{%8, %9}, {%0, %1, %2, %3};"
            : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        a0 ^= b1;
    }
    float* d = d_out + (t * 32 + lane) * 4;
    d[0] = d0; d[1] = d1; d[2] = d2; d[3] = d3;
}

extern "C" __global__ void mma_tf32_ldmatrix(const float* a, const float* b, float* c)
{
    __shared__ unsigned short tile[16 * 16];
    int lane = threadIdx.x & 31;
    for (int k = lane; k < 256; k += 32)
        tile[k] = (unsigned short)(a[k] * 100.0f);
    __syncwarp();
    unsigned r0, r1, r2, r3;
    unsigned addr = (unsigned)__cvta_generic_to_shared(&tile[(lane & 15) * 16 + (lane >> 4) * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    unsigned ta = __float_as_uint(a[lane]) & 0xffffe000u;
    unsigned tb = __float_as_uint(b[lane]) & 0xffffe000u;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(ta), "r"(r0), "r"(r1 ^ ta), "r"(r2), "r"(tb), "r"(r3));
    for (int k = 0; k < 4; ++k)
        c[lane * 4 + k] = acc[k];
}
