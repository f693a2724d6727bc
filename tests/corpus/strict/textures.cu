// Texture and surface objects (tex, tld4, suld, sust, txq, suq), and module-level texture
// references by handle.
extern "C" __global__ void tex_surf(cudaTextureObject_t t2, cudaTextureObject_t t1,
                                    cudaTextureObject_t t3, cudaTextureObject_t tl,
                                    cudaSurfaceObject_t s2, cudaSurfaceObject_t s1, float* out,
                                    int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    float u = (x + 0.5f) / w, v = (y + 0.5f) / h;
    float a = tex2D<float>(t2, u, v);
    float4 b = tex2D<float4>(t2, u * 2.f, v);
    float c = tex1Dfetch<float>(t1, x);
    float d = tex1D<float>(t1, u);
    float e = tex3D<float>(t3, u, v, 0.5f);
    float f = tex2DLod<float>(t2, u, v, 1.0f);
    float g = tex2DLayered<float>(tl, u, v, 2);
    float4 gg = tex2Dgather<float4>(t2, u, v, 1);
    float gr = tex2DGrad<float>(t2, u, v, make_float2(0.1f, 0.f), make_float2(0.f, 0.1f));
    float4 sv;
    surf2Dread(&sv, s2, x * 16, y);
    float sr = surf1Dread<float>(s1, x * 4, cudaBoundaryModeClamp);
    surf2Dwrite(make_float4(a, b.x, c, d), s2, x * 16, y);
    surf1Dwrite(e + f, s1, x * 4, cudaBoundaryModeZero);
    surf2Dwrite((unsigned char)x, s2, x, y, cudaBoundaryModeTrap);
    int tw;
    asm("txq.width.b32 %0, [%1];" : "=r"(tw) : "l"(t2));
    int sw;
    asm("suq.width.b32 %0, [%1];" : "=r"(sw) : "l"(s2));
    out[y * w + x] = a + b.y + c + d + e + f + g + gg.z + gr + sv.w + sr + tw + sw;
}
