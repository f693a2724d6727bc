// sm_90+: thread-block clusters, distributed shared memory, TMA bulk copies, mbarrier
// transaction counts, elect, griddepcontrol, st.async / red.async, stmatrix, multimem, and on
// sm_90a wgmma and setmaxnreg.  Everything is guarded so the source compiles on any target.
#include <cuda_fp16.h>

struct alignas(64) TensorMap { unsigned char bytes[128]; };

#if __CUDA_ARCH__ >= 900
extern "C" __global__ void __cluster_dims__(2, 1, 1)
cluster_dsmem(const float* in, float* out)
{
    __shared__ float tile[128];
    unsigned rank, nrank, cid, peer_addr, self_addr;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(nrank));
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
    tile[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x];
    asm volatile("barrier.cluster.arrive.release.aligned;");
    asm volatile("barrier.cluster.wait.acquire.aligned;");
    self_addr = (unsigned)__cvta_generic_to_shared(&tile[threadIdx.x]);
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(peer_addr)
                 : "r"(self_addr), "r"((rank + 1) % nrank));
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(peer_addr));
    unsigned owner;
    asm volatile("getctarank.shared::cluster.u32 %0, %1;" : "=r"(owner) : "r"(peer_addr));
    unsigned long long gen = (unsigned long long)&tile[0], gpeer;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(gpeer) : "l"(gen), "r"(0u));
    unsigned is_dsmem;
    asm volatile("{ .reg .pred p; isspacep.shared::cluster p, %1; selp.u32 %0, 1, 0, p; }"
                 : "=r"(is_dsmem) : "l"(gpeer));
    asm volatile("barrier.cluster.arrive.relaxed.aligned;");
    asm volatile("barrier.cluster.wait;");
    asm volatile("fence.acq_rel.cluster;");
    out[blockIdx.x * 128 + threadIdx.x] = v + owner + cid + is_dsmem;
}

extern "C" __global__ void tma_bulk(const __grid_constant__ TensorMap tmap, const float* src,
                                    float* dst, int rounds)
{
    __shared__ alignas(128) float smem[2048];
    __shared__ alignas(8) unsigned long long full;
    unsigned sfull = (unsigned)__cvta_generic_to_shared(&full);
    unsigned ssmem = (unsigned)__cvta_generic_to_shared(smem);
    unsigned is_leader;
    asm volatile("{ .reg .pred p; elect.sync _|p, 0xffffffff; selp.u32 %0, 1, 0, p; }"
                 : "=r"(is_leader));
    asm volatile("griddepcontrol.wait;");
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sfull));
        asm volatile("fence.mbarrier_init.release.cluster;");
        asm volatile("fence.proxy.async.shared::cta;");
        asm volatile("prefetch.tensormap [%0];" :: "l"(&tmap));
    }
    __syncthreads();
    float acc = 0.f;
    for (int r = 0; r < rounds; ++r) {
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 8192;" :: "r"(sfull));
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3}], [%4];"
                         :: "r"(ssmem), "l"(&tmap), "r"(r * 32), "r"(0), "r"(sfull) : "memory");
            asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];"
                         :: "l"(&tmap), "r"(r * 32 + 32), "r"(0));
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                         " [%0], [%1], 256, [%2];" :: "r"(ssmem + 4096), "l"(src + r * 64), "r"(sfull));
        }
        asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;"
                     " @!p bra W; }" :: "r"(sfull), "r"(r & 1));
        acc += smem[threadIdx.x];
    }
    if (threadIdx.x == 0) {
        asm volatile("fence.proxy.async.shared::cta;");
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 256;"
                     :: "l"(dst), "r"(ssmem));
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], 256;"
                     :: "l"(dst + 64), "r"(ssmem));
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                     :: "l"(&tmap), "r"(0), "r"(0), "r"(ssmem));
        asm volatile("cp.async.bulk.commit_group;");
        asm volatile("cp.async.bulk.wait_group.read 0;");
        asm volatile("cp.async.bulk.wait_group 0;");
    }
    asm volatile("griddepcontrol.launch_dependents;");
    dst[128 + threadIdx.x] = acc + is_leader;
}

extern "C" __global__ void __cluster_dims__(2, 1, 1)
async_stores(float* out, unsigned* counts, const unsigned* mc_ptr)
{
    __shared__ alignas(8) unsigned long long bar;
    __shared__ float box[64];
    __shared__ unsigned cnt[4];
    unsigned sbar = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 64;" :: "r"(sbar));
    asm volatile("barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;");
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    unsigned rbox, rbar, rcnt;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbox)
                 : "r"((unsigned)__cvta_generic_to_shared(&box[threadIdx.x & 63])), "r"(rank ^ 1));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(sbar), "r"(rank ^ 1));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rcnt)
                 : "r"((unsigned)__cvta_generic_to_shared(&cnt[0])), "r"(rank ^ 1));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];"
                 :: "r"(rbox), "f"((float)threadIdx.x), "r"(rbar));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], {%1, %2}, [%3];"
                 :: "r"(rbox), "r"(1u), "r"(2u), "r"(rbar));
    asm volatile("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32"
                 " [%0], 1, [%1];" :: "r"(rcnt), "r"(rbar));
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(rbar));
    unsigned long long st;
    asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(st) : "r"(sbar));
    asm volatile("{ .reg .pred p; W: mbarrier.try_wait.shared::cta.b64 p, [%0], %1, 1000; @!p bra W; }"
                 :: "r"(sbar), "l"(st));
    unsigned m;
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.u32 %0, [%1];" : "=r"(m) : "l"(mc_ptr));
    asm volatile("multimem.red.release.gpu.global.add.u32 [%0], %1;" :: "l"(mc_ptr + 1), "r"(m));
    asm volatile("multimem.st.relaxed.gpu.global.f32 [%0], %1;" :: "l"(mc_ptr + 2), "f"(1.f));
    unsigned r0 = threadIdx.x, r1 = r0 + 1, r2 = r0 + 2, r3 = r0 + 3;
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 :: "r"((unsigned)__cvta_generic_to_shared(&box[0])), "r"(r0), "r"(r1), "r"(r2), "r"(r3));
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};"
                 :: "r"((unsigned)__cvta_generic_to_shared(&box[32])), "r"(r0), "r"(r1));
    asm volatile("barrier.cluster.arrive; barrier.cluster.wait;");
    out[threadIdx.x] = box[threadIdx.x & 63] + m;
    counts[threadIdx.x] = cnt[threadIdx.x & 3];
}
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
extern "C" __global__ void __launch_bounds__(384, 1)
wgmma_ws(const __grid_constant__ TensorMap tmap, float* out, unsigned long long desc_a,
         unsigned long long desc_b, int k)
{
    unsigned warpgroup = threadIdx.x / 128;
    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        asm volatile("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu"
                     ".sync.aligned [%0], [%1], 128;" :: "l"(out), "r"(0u));
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    float d[8];
    for (int i = 0; i < 8; ++i) d[i] = 0.f;
    for (int t = 0; t < k; ++t) {
        asm volatile("wgmma.fence.sync.aligned;");
        asm volatile("{ .reg .pred p; setp.ne.b32 p, %10, 0;"
                     " wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 1; }"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                       "+f"(d[6]), "+f"(d[7])
                     : "l"(desc_a + t), "l"(desc_b + t), "r"(t));
        asm volatile("wgmma.commit_group.sync.aligned;");
        asm volatile("wgmma.wait_group.sync.aligned 0;");
    }
    int acc[4] = {0, 0, 0, 0};
    asm volatile("wgmma.fence.sync.aligned;");
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.s8.satfinite "
                 "{%0, %1, %2, %3}, %4, %5, 0;"
                 : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3])
                 : "l"(desc_a), "l"(desc_b));
    asm volatile("wgmma.commit_group.sync.aligned; wgmma.wait_group.sync.aligned 0;");
    for (int i = 0; i < 8; ++i) out[threadIdx.x * 8 + i] = d[i] + acc[i & 3];
}
#endif
