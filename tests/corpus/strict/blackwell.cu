// sm_100a: tcgen05 tensor memory (alloc, mma, ld/st, commit, fence, dealloc), cluster launch
// control, and narrow float conversions; sm_100+: the new cvt forms.
struct alignas(64) TensorMap { unsigned char bytes[128]; };

#if defined(__CUDA_ARCH_FEAT_SM100_ALL)  // sm_120 (no "a") has none of these cvt forms
extern "C" __global__ void fp_narrow(const float* in, unsigned* out)
{
    float x = in[threadIdx.x], y = in[threadIdx.x + 32];
    unsigned short e;
    unsigned r;
    asm("cvt.rn.satfinite.e2m3x2.f32 %0, %1, %2;" : "=h"(e) : "f"(x), "f"(y));
    r = e;
    asm("{ .reg .b8 b; cvt.rn.satfinite.e2m1x2.f32 b, %1, %2; cvt.u32.u8 %0, b; }"
        : "=r"(r) : "f"(x), "f"(y));
    asm("cvt.rz.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(e) : "f"(x), "f"(y));
    r ^= e;
    unsigned h;
    asm("cvt.rn.f16x2.e2m3x2 %0, %1;" : "=r"(h) : "h"(e));
    out[threadIdx.x] = r ^ h;
}
#endif

#if defined(__CUDA_ARCH_FEAT_SM100_ALL)
extern "C" __global__ void tcgen05_mma(float* out, unsigned long long adesc,
                                       unsigned long long bdesc, unsigned idesc, int k)
{
    __shared__ unsigned tmem_base;
    __shared__ alignas(8) unsigned long long bar;
    unsigned sbase = (unsigned)__cvta_generic_to_shared(&tmem_base);
    unsigned sbar = (unsigned)__cvta_generic_to_shared(&bar);
    unsigned warp = threadIdx.x / 32;
    if (warp == 0) {
        asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 128;"
                     :: "r"(sbase));
        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");
    }
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sbar));
    asm volatile("tcgen05.fence::before_thread_sync;");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;");
    unsigned taddr = tmem_base;
    if (threadIdx.x == 0) {
        for (int t = 0; t < k; ++t) {
            asm volatile("{ .reg .pred p; setp.ne.b32 p, %4, 0;"
                         " tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p; }"
                         :: "r"(taddr), "l"(adesc + t), "l"(bdesc + t), "r"(idesc), "r"(t));
        }
        asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];"
                     :: "r"(sbar));
    }
    asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;"
                 " @!p bra W; }" :: "r"(sbar));
    unsigned r0, r1, r2, r3;
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(taddr + (warp * 32 << 16)));
    asm volatile("tcgen05.wait::ld.sync.aligned;");
    asm volatile("tcgen05.st.sync.aligned.16x64b.x1.b32 [%0], {%1};" :: "r"(taddr), "r"(r0));
    asm volatile("tcgen05.wait::st.sync.aligned;");
    __syncthreads();
    if (warp == 0)
        asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 128;" :: "r"(taddr));
    out[threadIdx.x * 4 + 0] = __uint_as_float(r0);
    out[threadIdx.x * 4 + 1] = __uint_as_float(r1);
    out[threadIdx.x * 4 + 2] = __uint_as_float(r2);
    out[threadIdx.x * 4 + 3] = __uint_as_float(r3);
}

extern "C" __global__ void cluster_launch_control(int* out)
{
    __shared__ alignas(16) unsigned long long resp[2];
    __shared__ alignas(8) unsigned long long bar;
    unsigned sresp = (unsigned)__cvta_generic_to_shared(resp);
    unsigned sbar = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sbar));
        asm volatile("clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128"
                     " [%0], [%1];" :: "r"(sresp), "r"(sbar));
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 16;" :: "r"(sbar));
    }
    asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;"
                 " @!p bra W; }" :: "r"(sbar));
    unsigned canceled, x;
    asm volatile("{ .reg .b128 r; .reg .pred p; ld.shared.b128 r, [%2];"
                 " clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, r;"
                 " selp.u32 %0, 1, 0, p;"
                 " clusterlaunchcontrol.query_cancel.get_first_ctaid::x.b32.b128 %1, r; }"
                 : "=r"(canceled), "=r"(x) : "r"(sresp));
    out[threadIdx.x] = canceled + x;
}
#endif
