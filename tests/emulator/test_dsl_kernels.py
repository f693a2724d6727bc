"""Every ready-made kernel (ptxforge.dsl.kernels) and every example kernel (examples/*.py) run on
the interpreter, checked with the same functions the GPU tests use (tests/support/kernel_checks.py)
at sizes the interpreter runs in a fraction of a second.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_checks import block_reduction_case, modadd256_case, saxpy_case, sgemm_case

from ptxforge.dsl import kernels
from ptxforge.emulator import EmulationError
from ptxforge.emulator.observe import Observer
from ptxforge.launch.loader import load


def emulated(module, name):
    return load(module, device="emulator")[name]


@pytest.mark.parametrize("n", [1, 255, 256, 257, 3001])
def test_saxpy(n):
    saxpy_case(emulated(kernels.saxpy(), "saxpy"), n, 256)


def test_saxpy_leaves_memory_past_n_alone():
    n, block = 100, 64
    x = np.arange(n, dtype=np.float32)
    y = np.concatenate([np.ones(n, np.float32), np.full(2 * block, 7.0, np.float32)])
    emulated(kernels.saxpy(), "saxpy")(n, 2.0, x, y, grid=4, block=block)
    np.testing.assert_array_equal(y[:n], 2 * x + 1)
    np.testing.assert_array_equal(y[n:], 7.0)


@pytest.mark.parametrize("block", [32, 96, 256])
@pytest.mark.parametrize("grid, n", [(1, 1000), (3, 768), (7, 5000), (16, 77)])
def test_block_reduce_sum(block, grid, n):
    block_reduction_case(emulated(kernels.block_reduce_sum(block=block), "block_reduce_sum"),
                         grid, n, block)


@pytest.mark.parametrize("m, n, k", [(16, 16, 16), (64, 32, 48), (32, 16, 128), (64, 64, 64)])
def test_sgemm_tiled(m, n, k):
    sgemm_case(emulated(kernels.sgemm_tiled(), "sgemm_tiled"), m, n, k)


def test_sgemm_tiled_small_tile_non_square():
    """tile=8 with distinct M, N, K: A's rows, B's columns and the K tiles all differ."""
    kernel = emulated(kernels.sgemm_tiled(tile=8), "sgemm_tiled")
    rng = np.random.default_rng(8)
    m, n, k = 24, 40, 16
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    kernel(a, b, c, m, n, k, grid=(n // 8, m // 8), block=(8, 8))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


class _Steps(Observer):
    """Counts the interpreter's steps and the thread-instructions they run."""

    def __init__(self) -> None:
        self.steps = self.threads = 0

    def step(self, m, pc, idx, take, kind) -> None:
        self.steps += 1
        self.threads += len(idx)


def test_sgemm_64_costs_the_steps_of_one_block():
    """The interpreter's cost is its steps (one NumPy dispatch each), not its threads: 16 blocks
    of 256 threads over K=64 run in as many steps as one block over the same K, and every step
    runs all 4096 threads at once.  (An operation count, not a time: nothing depends on load.)"""
    kernel = emulated(kernels.sgemm_tiled(), "sgemm_tiled")
    sgemm_case(kernel, 64, 64, 64)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 64), dtype=np.float32)
    b = rng.standard_normal((64, 64), dtype=np.float32)
    one, grid = _Steps(), _Steps()
    c1 = np.zeros((16, 16), np.float32)
    kernel.run((a[:16], b[:, :16].copy(), c1, 16, 16, 64), {}, grid=(1, 1), block=(16, 16),
               observer=one)
    c = np.zeros((64, 64), np.float32)
    kernel.run((a, b, c, 64, 64, 64), {}, grid=(4, 4), block=(16, 16), observer=grid)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert one.steps > 50                       # the K loop ran: four tiles of 16
    assert grid.steps == one.steps
    assert grid.threads == 16 * 256 * grid.steps


@pytest.mark.parametrize("count", [10, 700])
def test_modadd256(count):
    modadd256_case(emulated(kernels.modadd256(), "modadd256"), count, 128)


# --- the kernels examples/register_allocation.py builds --------------------------------------

@pytest.fixture(scope="module")
def demo():
    import sys
    from pathlib import Path

    examples = str(Path(__file__).resolve().parents[2] / "examples")
    if examples not in sys.path:
        sys.path.insert(0, examples)
    import register_allocation

    return register_allocation


def test_example_vector_add(demo):
    n = 300
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    c = np.full(n + 5, np.nan, np.float32)
    emulated(demo.vector_add("sm_80"), "vector_add")(a, b, c, n, grid=3, block=128)
    np.testing.assert_array_equal(c[:n], a + b)
    assert np.isnan(c[n:]).all()


@pytest.mark.parametrize("unroll", [1, 4, 8])
def test_example_dot(demo, unroll):
    rows, cols = 64, 32
    rng = np.random.default_rng(unroll)
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    y = rng.standard_normal(cols, dtype=np.float32)
    out = np.zeros(rows, np.float32)
    emulated(demo.dot(unroll, "sm_80"), f"dot_x{unroll}")(x, y, out, cols, grid=2, block=32)
    # one fma per column in order, replayed in NumPy: the float64 product is exact and the
    # float64 sum rounded to float32 equals fma.rn.f32 unless a double rounding hits a tie
    acc = np.zeros(rows, np.float32)
    for j in range(cols):
        acc = (x[:, j].astype(np.float64) * y[j] + acc).astype(np.float32)
    np.testing.assert_array_equal(out, acc)


@pytest.mark.parametrize("style", ["inplace", "ssa"])
def test_example_accumulate(demo, style):
    n = 50
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(1, np.float32)
    emulated(demo.accumulate(style, "sm_80"), f"accumulate_{style}")(x, out, n, grid=1, block=1)
    # inplace sums every element; the "ssa" trap adds only the last value to the first
    expected = x.sum() if style == "inplace" else None
    if expected is not None:
        assert out[0] == expected
    else:
        assert out[0] != x.sum()


def test_unsupported_instruction_is_a_clear_error():
    ptx = kernels.saxpy()
    from ptxforge import emit

    text = emit(ptx).replace("ret;", "trap;")
    kernel = load(text, device="emulator")["saxpy"]
    x = np.zeros(4, np.float32)
    with pytest.raises(EmulationError, match=r"<ptx>:\d+: trap.*does not support.*families"):
        kernel(4, 1.0, x, x.copy(), grid=1, block=4)


def test_out_of_bounds_access_is_reported():
    x, y = np.zeros(4, np.float32), np.zeros(4, np.float32)
    kernel = emulated(kernels.saxpy(), "saxpy")
    with pytest.raises(EmulationError, match="out-of-bounds global access"):
        kernel(64, 1.0, x, y, grid=1, block=64)  # n larger than the arrays


def test_launch_bounds_are_enforced_like_the_driver():
    from ptxforge.errors import LaunchError

    x = np.zeros(4096, np.float32)
    out = np.zeros(1, np.float32)
    reduce = emulated(kernels.block_reduce_sum(block=64), "block_reduce_sum")  # .maxntid 64
    with pytest.raises(LaunchError, match="at most 64"):
        reduce(x, out, x.size, grid=1, block=128)
    sgemm = emulated(kernels.sgemm_tiled(tile=8), "sgemm_tiled")  # .reqntid 8, 8
    with pytest.raises(LaunchError, match=r"requires block \(8, 8, 1\)"):
        sgemm(x, x, x, 8, 8, 8, grid=1, block=(16, 4))


def test_the_documentation_example_runs():
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "emulator.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "docs/emulator.md", "exec"), {})
