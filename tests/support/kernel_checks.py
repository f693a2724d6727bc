"""The numerical checks of the ready-made kernels, shared by the GPU tests and the emulator tests.

tests/launch/test_gpu.py and tests/emulator/test_dsl_kernels.py call the same functions: a GPU
run and an emulated run check exactly the same thing, only the sizes differ.

Each function takes a launchable kernel (``load(module)[name]`` on a GPU, or
``load(module, device="emulator")[name]``) and asserts; the references come from the examples'
own check functions (examples/*.py), computed independently of ptxforge.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

__all__ = ["block_reduction_case", "modadd256_case", "saxpy_case", "sgemm_case"]


def saxpy_case(kernel, n: int, block: int, a: float = -0.625) -> None:
    """y = a*x + y for n elements, within the fused-or-unfused rounding bound."""
    from saxpy import check_saxpy

    rng = np.random.default_rng(n)
    x = rng.standard_normal(n, dtype=np.float32)
    y0 = rng.standard_normal(n, dtype=np.float32)
    y = y0.copy()
    kernel(n, a, x, y, grid=(n + block - 1) // block, block=block)
    assert check_saxpy(a, x, y0, y) <= 1.0


def block_reduction_case(kernel, grid: int, n: int, block: int) -> None:
    """Exact partials on 0/1 data; on uniform data within the bound and bit-identical to the
    kernel's float32 order replayed in NumPy."""
    from block_reduction import check, emulate_partials, reference_partials

    def run(data):
        out = np.full(grid, np.nan, np.float32)  # every block must write its own partial
        kernel(data, out, data.size, grid=grid, block=block)
        return out

    rng = np.random.default_rng(grid)
    bits = rng.integers(0, 2, n).astype(np.float32)
    np.testing.assert_array_equal(run(bits), reference_partials(bits, grid, block))
    x = rng.random(n, dtype=np.float32)
    out = run(x)
    ratio, _ = check(out, x, grid, block)
    assert ratio <= 1.0
    np.testing.assert_array_equal(out, emulate_partials(x, grid, block))


def sgemm_case(kernel, m: int, n: int, k: int) -> None:
    """C = A @ B within K * eps * (|A| @ |B|) per element, every element written."""
    from sgemm import run

    assert run(kernel, m, n, k, np.random.default_rng(m + n + k)) <= 1.0


def modadd256_case(kernel, count: int, block: int) -> None:
    """(a + b) mod p on 256-bit limbs equals Python's integers, overflow cases included."""
    from modadd256 import cases, from_limbs, to_limbs

    triples = cases(count, seed=11)
    a, b, p = (to_limbs(col) for col in zip(*triples))
    out = np.zeros_like(a)
    n = len(triples)
    kernel(a, b, p, out, n, grid=(n + block - 1) // block, block=block)
    assert from_limbs(out) == [(x + y) % m for x, y, m in triples]
    assert any(x + y >= 1 << 256 for x, y, _ in triples)        # the overflow case is covered
