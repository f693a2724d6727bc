"""CUDA C++ of the tensor-core GEMM class: wmma and inline ``mma.sync`` PTX, register-blocked.

Example::

    >>> sorted(gemm_sources())
    ['gemm_mma_asm', 'gemm_wmma']
"""

from __future__ import annotations

__all__ = ["gemm_sources"]

_WMMA = r"""
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

template <typename Frag> __device__ void round_tf32(Frag&) {}
template <> __device__ void round_tf32(wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major>& f) {
  for (int t = 0; t < f.num_elements; ++t) f.x[t] = wmma::__float_to_tf32(f.x[t]);
}
template <> __device__ void round_tf32(wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major>& f) {
  for (int t = 0; t < f.num_elements; ++t) f.x[t] = wmma::__float_to_tf32(f.x[t]);
}

// A is m x k row-major, B is k x n stored column-major (n x k), C is m x n row-major.
template <typename TIn, typename TFrag, typename TAcc, int M, int N, int K, int WM, int WN, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) wmma_gemm(const TIn* __restrict__ A, const TIn* __restrict__ B,
                                                       TAcc* __restrict__ C, int m, int n, int k, TAcc alpha) {
  const int warp = threadIdx.x / 32;
  const int tm = (blockIdx.y * WARPS + warp) * WM * M;
  const int tn = blockIdx.x * WN * N;
  if (tm >= m || tn >= n) return;
  wmma::fragment<wmma::accumulator, M, N, K, TAcc> acc[WM][WN];
#pragma unroll
  for (int i = 0; i < WM; ++i)
#pragma unroll
    for (int j = 0; j < WN; ++j) wmma::fill_fragment(acc[i][j], TAcc(0));
  for (int kk = 0; kk < k; kk += K) {
    wmma::fragment<wmma::matrix_a, M, N, K, TFrag, wmma::row_major> a[WM];
    wmma::fragment<wmma::matrix_b, M, N, K, TFrag, wmma::col_major> b[WN];
#pragma unroll
    for (int i = 0; i < WM; ++i) { wmma::load_matrix_sync(a[i], A + (tm + i * M) * k + kk, k); round_tf32(a[i]); }
#pragma unroll
    for (int j = 0; j < WN; ++j) { wmma::load_matrix_sync(b[j], B + (tn + j * N) * k + kk, k); round_tf32(b[j]); }
#pragma unroll
    for (int i = 0; i < WM; ++i)
#pragma unroll
      for (int j = 0; j < WN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
  }
#pragma unroll
  for (int i = 0; i < WM; ++i)
#pragma unroll
    for (int j = 0; j < WN; ++j) {
      for (int t = 0; t < acc[i][j].num_elements; ++t) acc[i][j].x[t] *= alpha;
      wmma::store_matrix_sync(C + (tm + i * M) * n + tn + j * N, acc[i][j], n, wmma::mem_row_major);
    }
}
"""

# m16n8k{16,16,8,32}: A, B and the k step laid out alike in 32-bit words (8 words per step).
_MMA_WORDS = r"""
template <int MT, int NT, int WARPS, int KT>
__global__ void __launch_bounds__(WARPS * 32, 2) mma_{name}(const unsigned* __restrict__ A, const unsigned* __restrict__ B,
                                                           {acc}* __restrict__ C, int m, int n, int kw) {{
  __shared__ unsigned sa[WARPS * MT * 16][KT + 4];
  __shared__ unsigned sb[NT * 8][KT + 4];
  {acc} acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.y * WARPS * MT * 16, col0 = blockIdx.x * NT * 8;
  for (int k0 = 0; k0 < kw; k0 += KT) {{
    for (int i = threadIdx.x; i < WARPS * MT * 16 * KT; i += WARPS * 32) sa[i / KT][i % KT] = A[(row0 + i / KT) * kw + k0 + i % KT];
    for (int i = threadIdx.x; i < NT * 8 * KT; i += WARPS * 32) sb[i / KT][i % KT] = B[(col0 + i / KT) * kw + k0 + i % KT];
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < KT; kk += 8) {{
      unsigned a[MT][4], b[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i) {{
        const int r = warp * MT * 16 + i * 16 + g;
        a[i][0] = sa[r][kk + t]; a[i][1] = sa[r + 8][kk + t]; a[i][2] = sa[r][kk + t + 4]; a[i][3] = sa[r + 8][kk + t + 4];
      }}
#pragma unroll
      for (int j = 0; j < NT; ++j) {{ b[j][0] = sb[j * 8 + g][kk + t]; b[j][1] = sb[j * 8 + g][kk + t + 4]; }}
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
          asm volatile("mma.sync.aligned.{shape}.row.col.{types} {{%0,%1,%2,%3}}, {{%4,%5,%6,%7}}, {{%8,%9}}, {{%0,%1,%2,%3}};"
                       : "+{c}"(acc[i][j][0]), "+{c}"(acc[i][j][1]), "+{c}"(acc[i][j][2]), "+{c}"(acc[i][j][3])
                       : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]), "r"(b[j][1]));
    }}
    __syncthreads();
  }}
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) {{
      const int r = row0 + warp * MT * 16 + i * 16 + g, c = col0 + j * 8 + 2 * t;
      if (r < m && c < n) {{ C[r * n + c] = acc[i][j][0]; C[r * n + c + 1] = acc[i][j][1]; }}
      if (r + 8 < m && c < n) {{ C[(r + 8) * n + c] = acc[i][j][2]; C[(r + 8) * n + c + 1] = acc[i][j][3]; }}
    }}
}}
"""

_MMA_F64 = r"""
template <int MT, int NT, int WARPS, int KT>
__global__ void __launch_bounds__(WARPS * 32) mma_f64(const double* __restrict__ A, const double* __restrict__ B,
                                                     double* __restrict__ C, int m, int n, int k) {
  __shared__ double sa[WARPS * MT * 8][KT + 1];
  __shared__ double sb[NT * 8][KT + 1];
  double acc[MT][NT][2] = {};
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.y * WARPS * MT * 8, col0 = blockIdx.x * NT * 8;
  for (int k0 = 0; k0 < k; k0 += KT) {
    for (int i = threadIdx.x; i < WARPS * MT * 8 * KT; i += WARPS * 32) sa[i / KT][i % KT] = A[(row0 + i / KT) * k + k0 + i % KT];
    for (int i = threadIdx.x; i < NT * 8 * KT; i += WARPS * 32) sb[i / KT][i % KT] = B[(col0 + i / KT) * k + k0 + i % KT];
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < KT; kk += 4) {
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
          asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                       : "+d"(acc[i][j][0]), "+d"(acc[i][j][1])
                       : "d"(sa[warp * MT * 8 + i * 8 + g][kk + t]), "d"(sb[j * 8 + g][kk + t]));
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int r = row0 + warp * MT * 8 + i * 8 + g, c = col0 + j * 8 + 2 * t;
      if (r < m && c + 1 < n) { C[r * n + c] = acc[i][j][0]; C[r * n + c + 1] = acc[i][j][1]; }
    }
}
"""

# (name, shape, type string, accumulator C type, asm constraint of the accumulator)
_MMA_KINDS = [("f16", "m16n8k16", "f32.f16.f16.f32", "float", "f"),
              ("bf16", "m16n8k16", "f32.bf16.bf16.f32", "float", "f"),
              ("tf32", "m16n8k8", "f32.tf32.tf32.f32", "float", "f"),
              ("s8", "m16n8k32", "s32.s8.s8.s32", "int", "r")]

# (input C type, fragment type, accumulator, shapes)
_WMMA_KINDS = [("half", "half", "float", [(16, 16, 16), (32, 8, 16), (8, 32, 16)]),
               ("__nv_bfloat16", "__nv_bfloat16", "float", [(16, 16, 16), (32, 8, 16), (8, 32, 16)]),
               ("float", "wmma::precision::tf32", "float", [(16, 16, 8)]),
               ("signed char", "signed char", "int", [(16, 16, 16), (32, 8, 16), (8, 32, 16)]),
               ("double", "double", "double", [(8, 8, 4)])]


def gemm_sources() -> dict:
    """Two files: wmma GEMMs (f16, bf16, tf32, int8, f64) and inline mma.sync GEMMs."""
    wmma = [_WMMA]
    for tin, frag, acc, shapes in _WMMA_KINDS:
        for m, n, k in shapes:
            for wm, wn in ((1, 1), (2, 2), (2, 4), (4, 2)):
                for warps in (4, 8):
                    wmma.append(f"template __global__ void wmma_gemm<{tin}, {frag}, {acc}, {m}, {n}, {k}, "
                                f"{wm}, {wn}, {warps}>(const {tin}*, const {tin}*, {acc}*, int, int, "
                                f"int, {acc});\n")
    asm = []
    tiles = ((1, 4, 4, 16), (2, 4, 4, 32), (2, 8, 2, 32), (4, 4, 4, 16), (4, 8, 2, 16))
    for name, shape, types, acc, c in _MMA_KINDS:
        asm.append(_MMA_WORDS.format(name=name, shape=shape, types=types, acc=acc, c=c))
        for mt, nt, warps, kt in tiles:
            asm.append(f"template __global__ void mma_{name}<{mt}, {nt}, {warps}, {kt}>(const unsigned*, "
                       f"const unsigned*, {acc}*, int, int, int);\n")
    asm.append(_MMA_F64)
    for mt, nt, warps, kt in ((1, 2, 4, 8), (2, 2, 4, 16), (2, 4, 2, 16), (4, 2, 4, 8)):
        asm.append(f"template __global__ void mma_f64<{mt}, {nt}, {warps}, {kt}>(const double*, "
                   "const double*, double*, int, int, int);\n")
    return {"gemm_wmma": "".join(wmma), "gemm_mma_asm": "".join(asm)}
