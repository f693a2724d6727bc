"""A conformance corpus of real-world-style CUDA C++ kernels on the interpreter, against NumPy:
cub's BlockReduce / BlockScan / WarpReduce (NVRTC with the nvidia-cuda-cccl headers),
cooperative-groups tiles (narrower and wider than a warp), ``warpSize``, ``cuda::barrier`` and
``cuda::pipeline`` (``mbarrier``, ``cp.async``), a grid-wide sync in a cooperative launch,
``__constant__`` / ``__device__`` variables set through ``module.set``, a double-precision
stencil, and a texture fetch refused with a clear error.

Every kernel lives in one source (tests/support/real_world_source.py, which the GPU test runs
too) compiled once per session and cached on disk by tests/support/corpus_util.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from real_world_source import real_world_ptx

from ptxforge.emulator import EmulationError
from ptxforge.launch.loader import load


@pytest.fixture(scope="module")
def module():
    return load(real_world_ptx(), device="emulator")


RNG = np.random.default_rng(2025)


def test_warp_size(module):
    out = np.zeros(96, np.int32)
    module["warp_size"](out, grid=1, block=96)
    assert out.tolist() == [3200 + t % 32 for t in range(96)]


def test_cub_block_reduce_scan_and_warp_reduce(module):
    blocks = 3
    x = RNG.random(128 * blocks).astype(np.float32)
    out = np.zeros(blocks, np.float32)
    scan = np.zeros(128 * blocks, np.int32)
    wmax = np.zeros(4 * blocks, np.float32)
    module["cub_block_sum"](x, out, scan, wmax, grid=blocks, block=128)
    ref = x.reshape(blocks, 128).astype(np.float64).sum(axis=1)
    assert np.all(np.abs(out - ref) <= 128 * np.finfo(np.float32).eps * ref)
    digits = (x * np.float32(10)).astype(np.int32) & 7
    want = np.cumsum(digits.reshape(blocks, 128), axis=1) - digits.reshape(blocks, 128)
    assert scan.tolist() == want.ravel().tolist()
    assert wmax.tolist() == x.reshape(-1, 32).max(axis=1).tolist()


def test_cooperative_group_tiles(module):
    x = RNG.integers(-50, 50, 256).astype(np.int32)
    sum16, tile64 = np.zeros(256, np.int32), np.zeros(256, np.int32)
    module["tiles"](x, sum16, tile64, grid=2, block=128)
    assert sum16.tolist() == np.repeat(x.reshape(-1, 16).sum(axis=1), 16).tolist()
    t = np.arange(256) % 128
    assert tile64.tolist() == ((t // 64) * 1000 + t % 64).tolist()


def test_cuda_barrier_with_constant_and_device_variables(module):
    coef = np.array([1.0, 2.0, -0.5, 4.0], np.float32)
    module.set("coef", coef)
    module.set("bias", np.int32(7))
    assert module.get("coef", np.float32).tolist() == coef.tolist()
    assert module.get("bias", np.int32).tolist() == [7]
    x = RNG.integers(0, 100, 512).astype(np.float32)
    out = np.zeros(512, np.float32)
    module["barrier_rotate"](x, out, grid=2, block=256)
    blocks = x.reshape(2, 256) + 1
    want = np.roll(blocks, -1, axis=1) * np.tile(coef, 64) + 7
    assert out.tolist() == want.ravel().tolist()


def test_cuda_pipeline_double_buffer(module):
    chunks = 5
    x = RNG.integers(0, 1000, 128 * chunks).astype(np.float32)
    out = np.zeros(128, np.float32)
    module["pipeline_sum"](x, out, chunks, grid=1, block=128)
    assert out.tolist() == x.reshape(chunks, 128).sum(axis=0).tolist()


def test_grid_sync_in_a_cooperative_launch(module):
    n = 4 * 64
    data, out = np.zeros(n, np.int32), np.zeros(n, np.int32)
    module["grid_rotate"](data, out, grid=4, block=64, cooperative=True)
    assert out.tolist() == [3 * ((i + 1) % n) for i in range(n)]


def test_grid_sync_without_a_cooperative_launch_says_so(module):
    data, out = np.zeros(64, np.int32), np.zeros(64, np.int32)
    with pytest.raises(EmulationError, match=r"envreg.*cooperative=True"):
        module["grid_rotate"](data, out, grid=1, block=64)


def test_double_precision_stencil(module):
    n = 700
    u = RNG.standard_normal(n)
    v = np.zeros(n)
    a, b = 0.37, -1.25
    module["stencil5"](u, v, n, a, b, grid=3, block=256)
    inner = b * ((u[1:-3] + u[3:-1]) - 0.25 * (u[:-4] + u[4:]))
    # fma(a, u, inner) rounded once: exact product plus inner, then one rounding
    from fractions import Fraction

    want = [float(Fraction(a) * Fraction(float(x)) + Fraction(float(y)))
            for x, y in zip(u[2:-2], inner)]
    assert v[2:-2].tolist() == want
    assert v[:2].tolist() == [0, 0] and v[-2:].tolist() == [0, 0]


def test_textures_are_refused_with_a_clear_error(module):
    out = np.zeros(32, np.float32)
    with pytest.raises(EmulationError, match="textures and surfaces are not emulated"):
        module["texture_fetch"](0, out, grid=1, block=32)
