"""examples/tensor_core_gemm.py run on the interpreter against NumPy: the kernel the example's
own ``build`` makes (``mma.sync`` m16n8k16, ``ldmatrix`` x4/x2 and the double-buffered
``cp.async`` pipeline with ``wait_group 1``), at sizes with several blocks and K steps.

Inputs are small integers in f16, so every dot product is exact in f32 and the result must
equal NumPy's ``a @ b.T`` bit for bit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ptxforge.emulator.observe import Observer
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


class _Steps(Observer):
    """Counts the interpreter's steps and the thread-instructions they run."""

    def __init__(self) -> None:
        self.steps = self.threads = 0

    def step(self, m, pc, idx, take, kind) -> None:
        self.steps += 1
        self.threads += len(idx)


def test_tensor_core_gemm_steps_run_every_thread_at_once(gemm):
    """The interpreter's cost is its steps (one NumPy dispatch each): the warps of the block run
    every step together (mma, ldmatrix and cp.async included), and twice the K steps cost at
    most twice the steps.  (Operation counts, not a time: nothing depends on load.)"""
    rng = np.random.default_rng(1)
    kernel = load(gemm.build(2, 4).build(), device="emulator")["hgemm_2x4"]
    counts = []
    for k in (64, 128):
        a = rng.integers(-3, 4, (64, k)).astype(np.float16)
        b = rng.integers(-3, 4, (64, k)).astype(np.float16)
        c = np.full((64, 64), np.nan, np.float32)
        seen = _Steps()
        kernel.run((a, b, c, 64, k), {}, grid=(1, 1), block=gemm.THREADS, observer=seen)
        np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32).T)
        counts.append(seen)
    threads = int(np.prod(gemm.THREADS))
    for seen in counts:
        assert seen.steps > 20
        assert seen.threads == threads * seen.steps
    assert counts[0].steps < counts[1].steps <= 2 * counts[0].steps
