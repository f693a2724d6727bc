"""saxpy on the GPU: y = a*x + y with ptxforge's kernel, checked against NumPy.

Runs the kernel twice: once on NumPy arrays (ptxforge copies them in and out), once on
device-resident arrays (passed by address, no copies), then times the device-resident launch.
Without a GPU it prints what it built and exits 0.
"""

from __future__ import annotations

import sys

import _common
import numpy as np

from ptxforge.dsl import kernels
from ptxforge.launch.device import DeviceArray
from ptxforge.launch.loader import load
from ptxforge.launch.args import LaunchConfig
from ptxforge.launch.timing import time_launch


def check_saxpy(a: float, x: np.ndarray, y0: np.ndarray, y: np.ndarray) -> float:
    """Largest error in units of the allowed bound (<= 1 passes), fused or unfused arithmetic.

    fma(a, x, y) rounds once (error <= u*|a*x + y|); a*x then + y rounds twice (error <=
    u*|a*x| + u*(|a*x| + |y|)); 2*eps*(|a*x| + |y|) = 4u*(...) covers both with room.
    """
    a32 = np.float32(a)
    ref = a32.astype(np.float64) * x.astype(np.float64) + y0.astype(np.float64)
    bound = 2 * np.finfo(np.float32).eps * (np.abs(a32 * x).astype(np.float64) + np.abs(y0)) + 1e-30
    return float(np.max(np.abs(y.astype(np.float64) - ref) / bound))


def main() -> int:
    module, _info = _common.build_for_device(kernels.saxpy)
    if _common.report_no_gpu("saxpy", module):
        return 0
    saxpy = load(module)["saxpy"]
    n, a, block = (1 << 22) + 3, 1.75, 256          # n not a multiple of the block: tail check
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n, dtype=np.float32)
    y0 = rng.standard_normal(n, dtype=np.float32)
    grid = (n + block - 1) // block

    y = y0.copy()
    saxpy(n, a, x, y, grid=grid, block=block)                       # NumPy: copied in and out
    err_host = check_saxpy(a, x, y0, y)

    # device arrays: passed by address, no copies; y has a sentinel tail beyond n that the
    # threads of the last, partial block must leave alone
    tail = np.full(block, -7.0, np.float32)
    x_dev, y_dev = DeviceArray.from_host(x), DeviceArray.from_host(np.concatenate([y0, tail]))
    saxpy(n, a, x_dev, y_dev, grid=grid, block=block, sync=True)
    y_dev_all = y_dev.to_host()
    y_dev_result, tail_kept = y_dev_all[:n], bool(np.array_equal(y_dev_all[n:], tail))
    err_dev = check_saxpy(a, x, y0, y_dev_result)
    timing = time_launch(saxpy, n, a, x_dev, y_dev, config=LaunchConfig(grid=grid, block=block),
                         bytes=3 * 4 * n)
    x_dev.free()
    y_dev.free()

    ok = err_host <= 1 and err_dev <= 1 and np.array_equal(y, y_dev_result) and tail_kept
    print(f"saxpy n={n} a={a}: registers {saxpy.num_regs}; max error {max(err_host, err_dev):.3f} "
          f"of the bound; host and device runs identical: {np.array_equal(y, y_dev_result)}; "
          f"elements past n untouched: {tail_kept}")
    print(f"  {timing}")
    print("saxpy: PASS" if ok else "saxpy: FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
