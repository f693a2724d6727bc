// Texture and surface objects, a sparse-texture residency predicate and __syncthreads_count
// for the operand tests (test_parse_operands.py).
extern "C" __global__ void k_tex(float* out, cudaTextureObject_t t, cudaSurfaceObject_t s, int n)
{
    float x = threadIdx.x, y = blockIdx.x;
    float4 v = tex2D<float4>(t, x + 0.5f, y + 0.5f);
    float4 g = tex2Dgather<float4>(t, x, y, 1);
    float l = tex1Dfetch<float>(t, threadIdx.x);
    bool resident;
    float4 sp = tex2D<float4>(t, x, y, &resident);
    int w;
    surf2Dread(&w, s, threadIdx.x * 4, blockIdx.x);
    surf2Dwrite(w + n, s, threadIdx.x * 4, blockIdx.y);
    out[threadIdx.x] = v.x + v.w + g.y + l + (resident ? sp.z : 0.0f);
}

extern "C" __global__ void k_count(int* out, const float* in)
{
    int n = __syncthreads_count(in[threadIdx.x] > 0.0f);
    out[threadIdx.x] = n;
}
