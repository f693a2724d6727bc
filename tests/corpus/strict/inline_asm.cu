// Inline PTX for the instructions no C++ intrinsic emits directly: bit manipulation, video,
// float tests, approximate transcendentals, narrow conversions, cache-policy loads, prefetch.
#include <cuda_fp16.h>

extern "C" __global__ void bit_asm(const unsigned* in, unsigned* out, unsigned long long* out64)
{
    int t = threadIdx.x;
    unsigned a = in[t], b = in[t + 32], c = in[t + 64], r, s;
    unsigned long long w;
    asm("prmt.b32 %0, %1, %2, 0x3210;" : "=r"(r) : "r"(a), "r"(b));
    asm("prmt.b32.f4e %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("prmt.b32.rc16 %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("shf.l.wrap.b32 %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("shf.r.clamp.b32 %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("bfe.u32 %0, %1, 4, 8;" : "=r"(s) : "r"(a)); r ^= s;
    asm("bfe.s32 %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("bfi.b32 %0, %1, %2, 8, 4;" : "=r"(s) : "r"(a), "r"(b)); r ^= s;
    asm("bfind.u32 %0, %1;" : "=r"(s) : "r"(a)); r ^= s;
    asm("bfind.shiftamt.s32 %0, %1;" : "=r"(s) : "r"(b)); r ^= s;
#if __CUDA_ARCH__ >= 700
    asm("bmsk.clamp.b32 %0, %1, %2;" : "=r"(s) : "r"(a), "r"(b)); r ^= s;
    asm("bmsk.wrap.b32 %0, %1, %2;" : "=r"(s) : "r"(a), "r"(b)); r ^= s;
    asm("szext.clamp.s32 %0, %1, %2;" : "=r"(s) : "r"(a), "r"(b)); r ^= s;
    asm("szext.wrap.u32 %0, %1, %2;" : "=r"(s) : "r"(a), "r"(b)); r ^= s;
#endif
    asm("mul24.lo.u32 %0, %1, %2;" : "=r"(s) : "r"(a), "r"(b)); r ^= s;
    asm("mul24.hi.s32 %0, %1, %2;" : "=r"(s) : "r"(a), "r"(b)); r ^= s;
    asm("mad24.lo.u32 %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("sad.u32 %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("mul.hi.u32 %0, %1, %2;" : "=r"(s) : "r"(a), "r"(b)); r ^= s;
    asm("mad.hi.sat.s32 %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("add.sat.s32 %0, %1, %2;" : "=r"(s) : "r"(a), "r"(b)); r ^= s;
    asm("{ .reg .u32 lo; add.cc.u32 lo, %1, %2; addc.cc.u32 %0, %2, %3; }"
        : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("{ .reg .u32 lo; sub.cc.u32 lo, %1, %2; subc.u32 %0, %2, %3; }"
        : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("{ .reg .u32 lo; mad.lo.cc.u32 lo, %1, %2, %3; madc.hi.u32 %0, %1, %2, %3; }"
        : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("mul.wide.u32 %0, %1, %2;" : "=l"(w) : "r"(a), "r"(b));
    asm("vadd.u32.u32.u32.sat %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("vabsdiff4.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("vmax2.s32.s32.s32 %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("vshl.u32.u32.u32.clamp.add %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("vset4.u32.u32.ne %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("{ .reg .pred p, q; setp.lt.u32 p|q, %1, %2; selp.u32 %0, %1, %2, q; }"
        : "=r"(s) : "r"(a), "r"(b)); r ^= s;
    asm("{ .reg .pred p; setp.ne.and.u32 p, %1, %2, 1; @!p mov.u32 %0, %1; @p not.b32 %0, %2; }"
        : "=r"(s) : "r"(a), "r"(b)); r ^= s;
    asm("{ .reg .pred p; setp.eq.u32 p, %1, 0; set.gt.or.u32.u32 %0, %1, %2, p; }"
        : "=r"(s) : "r"(a), "r"(b)); r ^= s;
    asm("slct.u32.s32 %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(c)); r ^= s;
    asm("cnot.b32 %0, %1;" : "=r"(s) : "r"(a)); r ^= s;
    out[t] = r;
    out64[t] = w;
}

extern "C" __global__ void float_asm(const float* in, float* out, unsigned* bits)
{
    int t = threadIdx.x;
    float x = in[t], y = in[t + 32], r, s;
    unsigned p, q;
    asm("{ .reg .pred p; testp.finite.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(p) : "f"(x));
    asm("{ .reg .pred p; testp.notanumber.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(q) : "f"(y));
    p += q;
    asm("{ .reg .pred p; testp.subnormal.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(q) : "f"(y));
    p += q;
    asm("copysign.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y));
#if __CUDA_ARCH__ >= 750
    asm("tanh.approx.f32 %0, %1;" : "=f"(s) : "f"(x)); r += s;
    asm("ex2.approx.f16x2 %0, %1;" : "=r"(q) : "r"(p)); p ^= q;
#endif
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(s) : "f"(x)); r += s;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(s) : "f"(y)); r += s;
    asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(*(double*)&out[64]) : "d"((double)x));
    asm("sin.approx.ftz.f32 %0, %1;" : "=f"(s) : "f"(x)); r += s;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(s) : "f"(y)); r += s;
    asm("sqrt.approx.f32 %0, %1;" : "=f"(s) : "f"(y)); r += s;
    asm("div.approx.ftz.f32 %0, %1, %2;" : "=f"(s) : "f"(x), "f"(y)); r += s;
    asm("div.full.f32 %0, %1, %2;" : "=f"(s) : "f"(x), "f"(y)); r += s;
    asm("max.f32 %0, %1, %2;" : "=f"(s) : "f"(x), "f"(y)); r += s;
    asm("fma.rn.sat.f32 %0, %1, %2, %1;" : "=f"(s) : "f"(x), "f"(y)); r += s;
    asm("cvt.rni.f32.f32 %0, %1;" : "=f"(s) : "f"(x)); r += s;
    asm("cvt.rzi.s32.f32 %0, %1;" : "=r"(q) : "f"(x)); p ^= q;
    asm("{ .reg .f16 h; cvt.rn.f16.f32 h, %1; cvt.f32.f16 %0, h; }" : "=f"(s) : "f"(x)); r += s;
#if __CUDA_ARCH__ >= 800
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(q) : "f"(x)); p ^= q;
    asm("cvt.rn.relu.bf16x2.f32 %0, %1, %2;" : "=r"(q) : "f"(x), "f"(y)); p ^= q;
    asm("min.NaN.bf16x2 %0, %1, %2;" : "=r"(q) : "r"(p), "r"(q)); p ^= q;
    asm("fma.rn.relu.f16x2 %0, %1, %2, %1;" : "=r"(q) : "r"(p), "r"(q)); p ^= q;
#endif
#if __CUDA_ARCH__ >= 800
    asm("min.ftz.NaN.f32 %0, %1, %2;" : "=f"(s) : "f"(x), "f"(y)); r += s;
#endif
#if __CUDA_ARCH__ >= 800
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(q) : "f"(x), "f"(y)); p ^= q;
#endif
#if __CUDA_ARCH__ >= 860
    asm("max.xorsign.abs.f32 %0, %1, %2;" : "=f"(s) : "f"(x), "f"(y)); r += s;
#endif
#if __CUDA_ARCH__ >= 890
    { unsigned short e; asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(e) : "f"(x), "f"(y));
      p ^= e;
      asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(e) : "f"(y), "f"(x)); p ^= e;
      asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(q) : "h"(e)); p ^= q; }
#endif
#if __CUDA_ARCH__ >= 900
    asm("ex2.approx.ftz.bf16x2 %0, %1;" : "=r"(q) : "r"(p)); p ^= q;
    asm("tanh.approx.bf16x2 %0, %1;" : "=r"(q) : "r"(p)); p ^= q;
#endif
#if __CUDA_ARCH__ >= 1000
    asm("cvt.rn.satfinite.tf32.f32 %0, %1;" : "=r"(q) : "f"(x)); p ^= q;
#endif
    out[t] = r;
    bits[t] = p;
}

extern "C" __global__ void policy_loads(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a, b, c;
    asm volatile("prefetch.global.L2 [%0];" :: "l"(in + i + 256));
    asm volatile("prefetch.global.L1 [%0];" :: "l"(in + i + 128));
    asm volatile("prefetchu.L1 [%0];" :: "l"(in + i + 64));
    asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(a) : "l"(in + i));
    { float u0, u1;
      asm volatile("ldu.global.v2.f32 {%0, %1}, [%2];" : "=f"(u0), "=f"(u1) : "l"(in));
      a += u0 * u1; }
#if __CUDA_ARCH__ >= 800
    unsigned long long pol;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    asm volatile("createpolicy.fractional.L2::evict_first.L2::evict_unchanged.b64 %0, 0.5;"
                 : "=l"(pol));
    asm volatile("ld.global.L1::no_allocate.L2::256B.f32 %0, [%1];" : "=f"(b) : "l"(in + i + 1));
    asm volatile("ld.global.L1::evict_last.L2::cache_hint.f32 %0, [%1], %2;"
                 : "=f"(c) : "l"(in + i + 2), "l"(pol));
    asm volatile("ld.global.nc.L1::no_allocate.L2::128B.v2.f32 {%0, %1}, [%2];"
                 : "=f"(b), "=f"(c) : "l"(in + i + 4));
    asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(in + i + 512));
    asm volatile("prefetch.global.L2::evict_normal [%0];" :: "l"(in + i + 1024));
    asm volatile("applypriority.global.L2::evict_normal [%0], 128;" :: "l"(in + i));
    asm volatile("discard.global.L2 [%0], 128;" :: "l"(out + i * 32));
    asm volatile("st.global.L1::no_allocate.f32 [%0], %1;" :: "l"(out + i + 1), "f"(b));
    asm volatile("st.global.L2::cache_hint.f32 [%0], %1, %2;" :: "l"(out + i + 2), "f"(c), "l"(pol));
    asm volatile("ld.relaxed.gpu.global.f32 %0, [%1];" : "=f"(b) : "l"(in + i + 3));
    asm volatile("ld.acquire.sys.global.f32 %0, [%1];" : "=f"(c) : "l"(in + i + 5));
    asm volatile("st.release.cta.global.f32 [%0], %1;" :: "l"(out + i + 3), "f"(b));
    asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;" :: "l"(out + i + 4), "f"(c));
    asm volatile("atom.acq_rel.sys.global.cas.b32 %0, [%1], 0, 1;" : "=r"(*(unsigned*)&a)
                 : "l"(out + i + 5));
    asm volatile("fence.acq_rel.gpu;");
    asm volatile("fence.sc.cta;");
    asm volatile("membar.sys;");
#else
    b = c = 0.f;
#endif
    asm volatile("ld.volatile.global.f32 %0, [%1];" : "=f"(c) : "l"(in + i + 6));
    asm volatile("st.volatile.global.f32 [%0], %1;" :: "l"(out + i + 6), "f"(c));
    if (i < n) out[i] = a + b + c;
}
