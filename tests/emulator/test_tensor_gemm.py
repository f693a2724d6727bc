"""examples/tensor_core_gemm.py run on the interpreter against NumPy: the kernel the example's
own ``build`` makes (``mma.sync`` m16n8k16, ``ldmatrix`` x4/x2 and the double-buffered
``cp.async`` pipeline with ``wait_group 1``), at sizes with several blocks and K steps.

Inputs are small integers in f16, so every dot product is exact in f32 and the result must
equal NumPy's ``a @ b.T`` bit for bit.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ptxforge.launch.loader import load

EXAMPLES = str(Path(__file__).resolve().parents[2] / "examples")


@pytest.fixture(scope="module")
def gemm():
    if EXAMPLES not in sys.path:
        sys.path.insert(0, EXAMPLES)
    import tensor_core_gemm

    return tensor_core_gemm


def _run(gemm, mt, nt, m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)          # row-major M x K
    b = rng.integers(-3, 4, (n, k)).astype(np.float16)          # B column-major: N rows of K
    c = np.full((m, n), np.nan, np.float32)
    kernel = load(gemm.build(mt, nt).build(), device="emulator")[f"hgemm_{mt}x{nt}"]
    bm, bn = 32 * mt, 16 * nt
    kernel(a, b, c, n, k, grid=(n // bn, m // bm), block=gemm.THREADS)
    return a, b, c


@pytest.mark.parametrize("mt, nt, m, n, k", [
    (1, 2, 64, 64, 64),      # 4 blocks, 2 K steps
    (2, 4, 64, 128, 96),     # 2 blocks, 3 K steps: the odd step reuses stage 0
    (1, 4, 32, 64, 128),     # 4 K steps through both stages twice
])
def test_tensor_core_gemm_matches_numpy(gemm, mt, nt, m, n, k):
    a, b, c = _run(gemm, mt, nt, m, n, k)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32).T)


def test_tensor_core_gemm_is_fast_enough(gemm):
    start = time.perf_counter()
    a, b, c = _run(gemm, 2, 4, 64, 64, 64, seed=1)
    assert time.perf_counter() - start < 10.0
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32).T)
