"""The static memory analysis (``ptxforge memory``) and the interpreter's profile agree: on every
access where the static analysis gives a figure, the profile of a real launch of the same PTX
with the same block shape measures the same sectors per request (global), or the same
bank-conflict ways and wavefronts per request (shared).

The kernels are the ones both halves were built on: the CUDA C++ kernels of
tests/support/memory_kernels.py and the transposes of tests/support/memory_builders.py
(NVRTC, -lineinfo), and the DSL builders of memory_builders.py."""

from __future__ import annotations

import numpy as np
import pytest
from memory_agreement import agree

from ptxforge.ptx.emit import emit

import memory_builders as mb
from corpus_util import compile_cu
from memory_kernels import memory_ptx, warp_uniform_ptx

N = 64          # the matrix side of the transposes with a runtime size
F32, F64, I32 = np.float32, np.float64, np.int32


def _arr(dtype, n: int = 8192):
    return np.arange(n, dtype=dtype) % 97


#: kernel -> (grid, block, argument makers, {parameter position: value the static analysis
#: is told}); block shapes as the kernels' launch bounds or their indexing want them.
NVRTC = {
    "copy": (2, 128, (lambda: _arr(F32), lambda: _arr(F32)), {}),
    "strided": (2, 128, (lambda: _arr(F32), lambda: _arr(F32)), {}),
    "broadcast": (2, 128, (lambda: _arr(F32), lambda: _arr(F32)), {}),
    "doubles": (2, 128, (lambda: _arr(F64), lambda: _arr(F64)), {}),
    "transpose_naive": ((2, 2), (32, 32), (lambda: _arr(F32, N * N), lambda: _arr(F32, N * N),
                                           lambda: N), {2: N}),
    "transpose_tile": ((2, 2), (32, 32), (lambda: _arr(F32, N * N), lambda: _arr(F32, N * N),
                                          lambda: N), {2: N}),
    "transpose_padded": ((2, 2), (32, 32), (lambda: _arr(F32, N * N),
                                            lambda: _arr(F32, N * N), lambda: N), {2: N}),
}

#: The transposes of memory_builders.CUDA_TRANSPOSES: N = 1024 is a constant there.
TRANSPOSES = {
    "naive": ((2, 2), (32, 8), (lambda: _arr(F32, mb.N * mb.N), lambda: _arr(F32, mb.N * mb.N)),
              {}),
    "tiled_conflict": ((2, 2), (32, 32), (lambda: _arr(F32, mb.N * mb.N),
                                          lambda: _arr(F32, mb.N * mb.N)), {}),
    "tiled_padded": ((2, 2), (32, 32), (lambda: _arr(F32, mb.N * mb.N),
                                        lambda: _arr(F32, mb.N * mb.N)), {}),
}

#: memory_kernels.WARP_UNIFORM: loops peeled by a trip count the same in every thread of a
#: warp (by tid.y with 32 threads along x; by tid.x against a constant; by the lane against a
#: ``cols`` the analysis is told), and ``selp`` of two indices by a warp-uniform predicate.
WARP_UNIFORM = {
    "rows_by_y": (1, (32, 4), (lambda: _arr(F32), lambda: _arr(F32)), {}),
    "block_stride": (1, 96, (lambda: _arr(F32), lambda: _arr(F32)), {}),
    "warp_rows": (2, 128, (lambda: _arr(F32), lambda: _arr(F32), lambda: 288), {2: 288}),
    "pick_half": (2, 128, (lambda: _arr(F32), lambda: _arr(F32), lambda: 1), {}),
    "pick_by_y": (1, (32, 4), (lambda: _arr(F32), lambda: _arr(F32)), {}),
}

DSL = {
    "transpose_naive": (mb.transpose_naive, (2, 2), (32, 8), 2),
    "copy": (mb.copy, 2, 128, 2),
    "strided": (lambda: mb.strided(2), 2, 128, 2),
    "broadcast": (mb.broadcast, 2, 128, 2),
    "tile": (lambda: mb.shared_tile(0), (2, 2), (32, 32), 2),
    "tile_pad": (lambda: mb.shared_tile(1), (2, 2), (32, 32), 2),
    "octets": (mb.octets, 1, 256, 1),
}


@pytest.mark.parametrize("name", sorted(NVRTC))
def test_nvrtc_kernels_static_figures_equal_the_profile(name):
    grid, block, makers, params = NVRTC[name]
    assert agree(memory_ptx(), name, grid, block, [m() for m in makers], params) >= 2


@pytest.mark.parametrize("name", sorted(TRANSPOSES))
def test_transposes_static_figures_equal_the_profile(name):
    ptx = compile_cu(mb.CUDA_TRANSPOSES, "memory_builders_transposes", "sm_80", lineinfo=True)
    grid, block, makers, params = TRANSPOSES[name]
    assert agree(ptx, name, grid, block, [m() for m in makers], params) >= 2


@pytest.mark.parametrize("name", sorted(WARP_UNIFORM))
def test_warp_uniform_branches_static_figures_equal_the_profile(name):
    grid, block, makers, params = WARP_UNIFORM[name]
    least = 2 if name.startswith("pick") else 4
    assert agree(warp_uniform_ptx(), name, grid, block, [m() for m in makers], params) >= least


@pytest.mark.parametrize("name", sorted(DSL))
def test_dsl_kernels_static_figures_equal_the_profile(name):
    build, grid, block, n_arrays = DSL[name]
    module = build()
    ptx = emit(module)
    size = 1024 * 1024 if name.startswith(("transpose", "tile")) else 8192
    args = [_arr(F32, size) for _ in range(n_arrays)]
    assert agree(ptx, module.kernels[0].name, grid, block, args, {}) >= 1
