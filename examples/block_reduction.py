"""Block reduction on the GPU: per-block partial sums with ptxforge's kernel, checked against NumPy.

The kernel walks the input with a grid-stride loop (thread t of block b reads elements
b*block + t, then + grid*block, ...), reduces each warp with shfl.bfly, then the warp sums
with shfl.down, and writes each block's sum to out[b].  Three checks per grid:

* on 0/1 data every partial sum is an integer below 2**24, so float32 adds it exactly in any
  order: the partials must *equal* the float64 sums of the grid-stride partition (one element
  skipped or read twice changes a partial by 1);
* on uniform [0, 1) data, the partials must lie within the worst-case error of float32
  summation in the kernel's order (m terms one at a time, then a tree of depth d:
  |error| <= (m - 1 + d) * u * sum|x|, u = 2**-24) of the float64 sums;
* on the same data, against :func:`emulate_partials`, the kernel's own order of float32
  additions replayed in NumPy: IEEE addition is deterministic, so the GPU's partials should be
  bit-identical (reported here; asserted in tests/launch/test_gpu.py).

Without a GPU it prints what it built and exits 0.
"""

from __future__ import annotations

import sys

import _common
import numpy as np

from ptxforge.dsl import kernels
from ptxforge.launch.device import device_info
from ptxforge.launch.loader import load
from ptxforge.launch.args import LaunchConfig
from ptxforge.launch.timing import time_launch

BLOCK = 256
U32 = 2.0**-24          # unit roundoff of float32


def _by_thread(x: np.ndarray, grid: int, block: int, dtype) -> np.ndarray:
    """``x`` zero-padded and reshaped to (rounds, grid, block): [r, b, t] is the element thread
    t of block b reads in round r of the grid-stride loop."""
    stride = grid * block
    padded = np.zeros(-(-x.size // stride) * stride, dtype)
    padded[: x.size] = x
    return padded.reshape(-1, grid, block)


def reference_partials(x: np.ndarray, grid: int, block: int) -> np.ndarray:
    """float64 per-block sums of the grid-stride partition of ``x``."""
    return _by_thread(x, grid, block, np.float64).sum(axis=(0, 2))


def error_bounds(x: np.ndarray, grid: int, block: int) -> np.ndarray:
    """Per block, the worst-case error of the kernel's float32 partial (see the module text)."""
    parts = _by_thread(np.abs(x), grid, block, np.float64)
    rounds = parts.shape[0]
    nwarps = block // 32
    depth = 5 + max(nwarps - 1, 0).bit_length()          # bfly over 32 lanes, then the warps
    return (rounds - 1 + depth) * U32 * parts.sum(axis=(0, 2)) * (1 + 1e-6)


def emulate_partials(x: np.ndarray, grid: int, block: int) -> np.ndarray:
    """The kernel's float32 additions in the kernel's order (bit-exact if the GPU adds in IEEE)."""
    parts = _by_thread(x.astype(np.float32), grid, block, np.float32)
    acc = np.zeros((grid, block), np.float32)
    for r in range(parts.shape[0]):                      # acc += x[i], one round at a time
        acc += parts[r]
    lanes = acc.reshape(grid, block // 32, 32)
    index = np.arange(32)
    for offset in (16, 8, 4, 2, 1):                      # acc += shfl.bfly(acc, offset)
        lanes = lanes + lanes[:, :, index ^ offset]
    nwarps = block // 32
    total = np.zeros((grid, 32), np.float32)
    total[:, :nwarps] = lanes[:, :, 0]                   # lane 0 of each warp -> warp_sums
    delta = (1 << (nwarps - 1).bit_length()) // 2
    while delta:                                         # total += shfl.down(total, delta)
        shifted = np.concatenate([total[:, delta:], total[:, 32 - delta:]], axis=1)
        total = total + shifted                          # (lanes >= 32 - delta read themselves)
        delta //= 2
    return total[:, 0]


def check(out: np.ndarray, x: np.ndarray, grid: int, block: int = BLOCK) -> tuple[float, bool]:
    """(worst error as a fraction of its bound, whether the partials equal the emulation)."""
    ref = reference_partials(x, grid, block)
    bound = error_bounds(x, grid, block)
    ratio = float(np.max(np.abs(out.astype(np.float64) - ref) / np.maximum(bound, 1e-300)))
    exact = bool(np.array_equal(out, emulate_partials(x, grid, block)))
    return ratio, exact


def run(kernel, x: np.ndarray, grid: int) -> np.ndarray:
    """The kernel's partials for ``x`` (NaN-filled first: every block must write its own)."""
    out = np.full(grid, np.nan, np.float32)
    kernel(x, out, x.size, grid=grid, block=BLOCK)
    return out


def main() -> int:
    module, _info = _common.build_for_device(kernels.block_reduce_sum, block=BLOCK)
    if _common.report_no_gpu("block_reduction", module):
        return 0
    kernel = load(module)["block_reduce_sum"]
    n = (1 << 24) + 77
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 2, n).astype(np.float32)      # integer partial sums < 2**24: exact
    x = rng.random(n, dtype=np.float32)
    ok = True
    for grid in (1, 7, 160, 1024):
        counted = bool(np.array_equal(run(kernel, bits, grid), reference_partials(bits, grid, BLOCK)))
        out = run(kernel, x, grid)
        ratio, exact = check(out, x, grid)
        good = counted and ratio <= 1.0
        ok &= good
        print(f"grid {grid:5d}: 0/1 data exact: {counted}; uniform data: worst error {ratio:.2e} "
              f"of its bound, bit-identical to the emulated float32 order: {exact}  "
              f"{'ok' if good else 'WRONG'}")
    grid = 4 * device_info().multiprocessors
    out = np.zeros(grid, np.float32)
    timing = time_launch(kernel, x, out, n, config=LaunchConfig(grid=grid, block=BLOCK),
                         bytes=4 * n)
    print(f"  {timing}  (x is copied in once; the timed runs read it on the device)")
    print(f"block_reduction: registers {kernel.num_regs}; {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
