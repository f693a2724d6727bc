// A warp-level inclusive scan by key with shuffles, in the shape of cub's DeviceScanByKey:
// each lane carries (key, value) pairs; a segment restarts where the key changes.

struct KeyValue { int key; float value; };

__device__ __forceinline__ KeyValue scan_step(KeyValue mine, int offset, int lane)
{
    int key = __shfl_up_sync(0xffffffffu, mine.key, offset);
    float value = __shfl_up_sync(0xffffffffu, mine.value, offset);
    if (lane >= offset && key == mine.key)
        mine.value += value;
    return mine;
}

extern "C" __global__ void scan_by_key(const int* __restrict__ keys,
                                       const float* __restrict__ values,
                                       float* __restrict__ out, int* __restrict__ tail_keys,
                                       int n, int items)
{
    int lane = threadIdx.x & 31;
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * items;
    float carry = 0.0f;
    int carry_key = -1;
    for (int it = 0; it < items; ++it) {
        int i = base + it;
        KeyValue kv;
        kv.key = i < n ? keys[i] : -1;
        kv.value = i < n ? values[i] : 0.0f;
        for (int offset = 1; offset < 32; offset <<= 1)
            kv = scan_step(kv, offset, lane);
        int last_key = __shfl_down_sync(0xffffffffu, kv.key, 31 - lane);
        float total = __shfl_down_sync(0xffffffffu, kv.value, 31 - lane);
        if (kv.key == carry_key)
            kv.value += carry;
        if (i < n)
            out[i] = kv.value;
        carry = last_key == carry_key ? carry + total : total;
        carry_key = last_key;
    }
    if (lane == 31)
        tail_keys[blockIdx.x * blockDim.x / 32 + threadIdx.x / 32] = carry_key;
}
