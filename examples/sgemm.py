"""Tiled SGEMM on the GPU: C = A @ B with ptxforge's shared-memory tiled kernel, checked
against NumPy (float64), on square and non-square shapes.

Each element of C is a K-term dot product accumulated in float32 with FMA, so its error is at
most gamma_K * (|A| @ |B|) with gamma_K ~ K * u, u = eps/2: the check allows K * eps * (|A| @ |B|)
per element (the relative tolerance grows with K), and C is pre-filled with NaN so an element
the kernel never writes fails.  Without a GPU it prints what it built and exits 0.
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

TILE = 16


def run(kernel, m: int, n: int, k: int, rng) -> float:
    """Multiply random matrices; return the worst error relative to its rounding bound."""
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)           # every element must be written
    kernel(a, b, c, m, n, k, grid=(n // TILE, m // TILE), block=(TILE, TILE))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    bound = k * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b)) + 1e-30
    return float(np.max(np.abs(c - ref) / bound))      # nan (unwritten) compares as failure


def main() -> int:
    module, _info = _common.build_for_device(kernels.sgemm_tiled, tile=TILE)
    if _common.report_no_gpu("sgemm", module):
        return 0
    kernel = load(module)["sgemm_tiled"]
    rng = np.random.default_rng(3)
    ok = True
    for m, n, k in ((16, 16, 16), (256, 256, 256), (128, 384, 512), (512, 64, 1024)):
        err = run(kernel, m, n, k, rng)
        good = err <= 1.0
        ok &= good
        print(f"M={m:4d} N={n:4d} K={k:4d}: worst error {err:.4f} of the bound  {'ok' if good else 'WRONG'}")
    size = 2048
    with DeviceArray.from_host(rng.standard_normal((size, size), dtype=np.float32)) as a, \
            DeviceArray.zeros((size, size), np.float32) as c:
        t = time_launch(kernel, a, a, c, size, size, size,
                        config=LaunchConfig(grid=(size // TILE, size // TILE), block=(TILE, TILE)),
                        flops=2 * size**3)
    print(f"  {t}")
    print(f"sgemm: registers {kernel.num_regs}; {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
