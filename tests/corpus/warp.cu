// Warp-level primitives: inclusive scan with shuffles, ballots and match.
extern "C" __global__ void warp_inclusive_scan(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = i < n ? in[i] : 0;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        int up = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d)
            v += up;
    }
    if (i < n)
        out[i] = v;
}

extern "C" __global__ void warp_vote_compact(const float* in, float* out, int* count, float threshold, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool keep = i < n && in[i] > threshold;
    unsigned mask = __ballot_sync(0xffffffffu, keep);
    int lane = threadIdx.x & 31;
    int base = 0;
    if (lane == 0 && mask)
        base = atomicAdd(count, __popc(mask));
    base = __shfl_sync(0xffffffffu, base, 0);
    if (keep)
        out[base + __popc(mask & ((1u << lane) - 1u))] = in[i];
    if (__all_sync(0xffffffffu, !keep) && lane == 0)
        out[n + blockIdx.x] = -1.0f;
}
