"""Kernels with known memory behaviour for the memory-analysis tests: DSL builders and CUDA
C++ sources (compiled by NVRTC in the tests), each with the per-warp figure it must give."""

from __future__ import annotations

from ptxforge.dsl.builder import KernelBuilder
from ptxforge.ptx import types as T

__all__ = [
    "CUDA_LINES",
    "CUDA_TRANSPOSES",
    "N",
    "broadcast",
    "copy",
    "shared_tile",
    "strided",
    "transpose_naive",
]

#: The matrix side of the transposes (a constant in the code: the strides are known).
N = 1024


def _xy(kb, tile_y: int = 8):
    """(x, y) of a 32 x tile_y block in a 2-D grid."""
    x = kb.mad(kb.ctaid("x"), 32, kb.tid("x"))
    y = kb.mad(kb.ctaid("y"), tile_y, kb.tid("y"))
    return x, y


def transpose_naive():
    """out[x*N + y] = in[y*N + x]: coalesced loads, stores N*4 bytes apart (block 32x8)."""
    kb = KernelBuilder("transpose_naive")
    src, dst = kb.param_ptr("src", T.f32), kb.param_ptr("dst", T.f32)
    kb.reqntid(32, 8)
    x, y = _xy(kb)
    v = kb.ld(kb.elem_ptr(kb.load_param(src), kb.mad(y, N, x)))
    kb.st(kb.elem_ptr(kb.load_param(dst), kb.mad(x, N, y)), v)
    kb.ret()
    return kb.build()


def copy():
    """y[i] = x[i], i the global thread index."""
    kb = KernelBuilder("copy")
    x, y = kb.param_ptr("x", T.f32), kb.param_ptr("y", T.f32)
    i = kb.global_id()
    kb.st(kb.elem_ptr(kb.load_param(y), i), kb.ld(kb.elem_ptr(kb.load_param(x), i)))
    kb.ret()
    return kb.build()


def strided(stride: int = 2):
    """y[i] = x[stride*i]: the load is ``stride`` elements apart."""
    kb = KernelBuilder("strided")
    x, y = kb.param_ptr("x", T.f32), kb.param_ptr("y", T.f32)
    i = kb.global_id()
    v = kb.ld(kb.elem_ptr(kb.load_param(x), kb.mul(i, stride)))
    kb.st(kb.elem_ptr(kb.load_param(y), i), v)
    kb.ret()
    return kb.build()


def broadcast():
    """Every thread reads x[0] and s[0] (shared); y[i] = x[0] + s[0]."""
    kb = KernelBuilder("broadcast")
    x, y = kb.param_ptr("x", T.f32), kb.param_ptr("y", T.f32)
    s = kb.shared_array("s", T.f32, 32, align=4)
    i = kb.global_id()
    v = kb.ld(kb.load_param(x))
    w = kb.ld(kb.elem_ptr(s, 0))
    kb.st(kb.elem_ptr(kb.load_param(y), i), kb.add(v, w))
    kb.ret()
    return kb.build()


def shared_tile(pad: int = 0):
    """A 32 x 32 float tile in shared memory (rows of 32 + ``pad`` floats), written row-wise
    (tile[ty][tx]) and read column-wise (tile[tx][ty]), block 32 x 32."""
    kb = KernelBuilder("tile_pad" if pad else "tile")
    src, dst = kb.param_ptr("src", T.f32), kb.param_ptr("dst", T.f32)
    kb.reqntid(32, 32)
    row = 32 + pad
    tile = kb.shared_array("tile", T.f32, 32 * row, align=4)
    tx, ty = kb.tid("x"), kb.tid("y")
    x, y = _xy(kb, 32)
    kb.st(kb.elem_ptr(tile, kb.mad(ty, row, tx)),
          kb.ld(kb.elem_ptr(kb.load_param(src), kb.mad(y, N, x))))
    kb.bar_sync()
    v = kb.ld(kb.elem_ptr(tile, kb.mad(tx, row, ty)))
    kb.st(kb.elem_ptr(kb.load_param(dst), kb.mad(y, N, x)), v)
    kb.ret()
    return kb.build()


def octets():
    """s[(tid.x & 7) * 32 + (tid.x >> 3)]: a shared read through ``and``/``shr`` (not affine):
    lanes 0..7 read words 0, 32, ..., 224 of bank 0, so 8-way (block 256)."""
    kb = KernelBuilder("octets")
    y = kb.param_ptr("y", T.f32)
    s = kb.shared_array("s", T.f32, 256, align=4)
    tx = kb.tid("x")
    slot = kb.mad(kb.and_(tx, 7), 32, kb.shr(tx, 3))
    kb.st(kb.elem_ptr(kb.load_param(y), tx), kb.ld(kb.elem_ptr(s, slot)))
    kb.ret()
    return kb.build()


#: CUDA C++: a naive transpose and a tiled one through shared memory, unpadded and padded.
CUDA_TRANSPOSES = r"""
#define N 1024
#define TILE 32
extern "C" __global__ void __launch_bounds__(256) naive(const float* in, float* out)
{
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * 8 + threadIdx.y;
    float v = in[y * N + x];      // LOAD_NAIVE
    out[x * N + y] = v;           // STORE_NAIVE
}

template <int PAD>
__device__ void tiled(const float* in, float* out)
{
    __shared__ float tile[TILE][TILE + PAD];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * N + x];   // TILE_STORE
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    out[y * N + x] = tile[threadIdx.x][threadIdx.y];  // TILE_LOAD
}

extern "C" __global__ void __launch_bounds__(1024) tiled_conflict(const float* in, float* out)
{ tiled<0>(in, out); }

extern "C" __global__ void __launch_bounds__(1024) tiled_padded(const float* in, float* out)
{ tiled<1>(in, out); }
"""


#: CUDA C++: the naive transpose with the sizes as parameters (the strides need --param).
CUDA_RUNTIME_SIZES = r"""
extern "C" __global__ void naive_rt(const float* in, float* out, int w, int h)
{
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 8 + threadIdx.y;
    out[x * h + y] = in[y * w + x];
}
"""


def CUDA_LINES(marker: str) -> int:
    """The line of ``CUDA_TRANSPOSES`` that carries the comment ``marker``."""
    return next(n for n, text in enumerate(CUDA_TRANSPOSES.splitlines(), 1)
                if f"// {marker}" in text)
