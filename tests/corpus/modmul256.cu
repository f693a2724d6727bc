// 256-bit modular multiplication (Montgomery form) with explicit carry chains in inline PTX.
struct u256 { unsigned int w[8]; };

__device__ __forceinline__ void mul_add_row(unsigned int* acc, const unsigned int* a, unsigned int b)
{
    // acc[0..8] += a[0..7] * b, low halves then high halves, with carry propagation.
    asm volatile(
        "mad.lo.cc.u32  %0, %9,  %17, %0;\n\t"
        "madc.lo.cc.u32 %1, %10, %17, %1;\n\t"
        "madc.lo.cc.u32 %2, %11, %17, %2;\n\t"
        "madc.lo.cc.u32 %3, %12, %17, %3;\n\t"
        "madc.lo.cc.u32 %4, %13, %17, %4;\n\t"
        "madc.lo.cc.u32 %5, %14, %17, %5;\n\t"
        "madc.lo.cc.u32 %6, %15, %17, %6;\n\t"
        "madc.lo.cc.u32 %7, %16, %17, %7;\n\t"
        "addc.u32       %8, %8, 0;\n\t"
        "mad.hi.cc.u32  %1, %9,  %17, %1;\n\t"
        "madc.hi.cc.u32 %2, %10, %17, %2;\n\t"
        "madc.hi.cc.u32 %3, %11, %17, %3;\n\t"
        "madc.hi.cc.u32 %4, %12, %17, %4;\n\t"
        "madc.hi.cc.u32 %5, %13, %17, %5;\n\t"
        "madc.hi.cc.u32 %6, %14, %17, %6;\n\t"
        "madc.hi.cc.u32 %7, %15, %17, %7;\n\t"
        "madc.hi.u32    %8, %16, %17, %8;"
        : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3]), "+r"(acc[4]), "+r"(acc[5]),
          "+r"(acc[6]), "+r"(acc[7]), "+r"(acc[8])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]),
          "r"(b));
}

__device__ __forceinline__ void sub_if_ge(unsigned int* x, const unsigned int* m)
{
    unsigned int d[8];
    unsigned int borrow;
    asm("sub.cc.u32  %0, %9,  %17;\n\t"
        "subc.cc.u32 %1, %10, %18;\n\t"
        "subc.cc.u32 %2, %11, %19;\n\t"
        "subc.cc.u32 %3, %12, %20;\n\t"
        "subc.cc.u32 %4, %13, %21;\n\t"
        "subc.cc.u32 %5, %14, %22;\n\t"
        "subc.cc.u32 %6, %15, %23;\n\t"
        "subc.cc.u32 %7, %16, %24;\n\t"
        "subc.u32    %8, 0, 0;"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]),
          "=r"(d[7]), "=r"(borrow)
        : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(x[4]), "r"(x[5]), "r"(x[6]), "r"(x[7]),
          "r"(m[0]), "r"(m[1]), "r"(m[2]), "r"(m[3]), "r"(m[4]), "r"(m[5]), "r"(m[6]), "r"(m[7]));
    for (int k = 0; k < 8; ++k)
        x[k] = borrow ? x[k] : d[k];
}

extern "C" __global__ void montgomery_mul256(const u256* a, const u256* b, const u256* modulus,
                                             unsigned int m_inv, u256* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    u256 x = a[i], y = b[i], m = *modulus;
    unsigned int t[10] = {0};
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        mul_add_row(t, x.w, y.w[k]);
        unsigned int q = t[0] * m_inv;
        mul_add_row(t, m.w, q);
        t[9] += t[8] < q ? 1u : 0u;
#pragma unroll
        for (int s = 0; s < 9; ++s)
            t[s] = t[s + 1];
        t[9] = 0;
    }
    sub_if_ge(t, m.w);
    u256 r;
#pragma unroll
    for (int k = 0; k < 8; ++k)
        r.w[k] = t[k];
    out[i] = r;
}

extern "C" __global__ void wide_mul_u64(const unsigned long long* a, const unsigned long long* b,
                                        unsigned long long* lo, unsigned long long* hi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned long long x = a[i], y = b[i];
        lo[i] = x * y;
        hi[i] = __umul64hi(x, y) + (x >> 63) * 3ull;
    }
}
