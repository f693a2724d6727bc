"""Block reduction on the GPU: per-block partial sums with ptxforge's kernel, checked against NumPy.

The kernel walks the input with a grid-stride loop (thread t of block b reads elements
b*block + t, then + grid*block, ...) and writes each block's sum to out[b].  Every partial sum
is checked against the same partition computed in float64, and the total against x.sum().
Without a GPU it prints what it built and exits 0.
"""

from __future__ import annotations

import sys

import numpy as np

import _common
from ptxforge import kernels
from ptxforge.device import device_info
from ptxforge.launch import load
from ptxforge.timing import time_launch

BLOCK = 256


def reference_partials(x: np.ndarray, grid: int, block: int) -> np.ndarray:
    """float64 per-block sums of the grid-stride partition of ``x``."""
    stride = grid * block
    padded = np.zeros(-(-x.size // stride) * stride, np.float64)
    padded[: x.size] = x
    return padded.reshape(-1, grid, block).sum(axis=(0, 2))


def main() -> int:
    module, _info = _common.build_for_device(kernels.block_reduce_sum, block=BLOCK)
    if _common.report_no_gpu("block_reduction", module):
        return 0
    kernel = load(module)["block_reduce_sum"]
    n = (1 << 24) + 77
    x = np.random.default_rng(2).random(n, dtype=np.float32)
    ok = True
    for grid in (1, 7, 160, 1024):
        out = np.zeros(grid, np.float32)
        kernel(x, out, n, grid=grid, block=BLOCK)
        ref = reference_partials(x, grid, BLOCK)
        # float32 accumulation of ~n/grid terms: allow a relative error of a few 1e-5
        rel = np.max(np.abs(out - ref) / np.maximum(np.abs(ref), 1.0))
        total = float(out.astype(np.float64).sum())
        good = rel < 1e-4 and abs(total - float(x.sum(dtype=np.float64))) < 1e-4 * n
        ok &= good
        print(f"grid {grid:5d}: worst partial relative error {rel:.2e}, total {total:.3f} "
              f"vs {float(x.sum(dtype=np.float64)):.3f}  {'ok' if good else 'WRONG'}")
    grid = 4 * device_info().multiprocessors
    out = np.zeros(grid, np.float32)
    print(f"  {time_launch(kernel, x, out, n, grid=grid, block=BLOCK, bytes=4 * n)}"
          "  (includes no copies; x stays on the device between runs)")
    print(f"block_reduction: registers {kernel.num_regs}; {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
