"""A numba-cuda kernel for the front-end tests: a 1-D 9-point stencil whose taps are all live at
once, compiled without a GPU by ``numba.cuda.compile_ptx`` (``lineinfo=True``)."""

from __future__ import annotations

from numba import cuda

__all__ = ["stencil9"]


@cuda.jit
def stencil9(out, x, w):
    i = cuda.grid(1)
    if i >= 4 and i < x.size - 4:
        t0 = x[i - 4] * w[0]
        t1 = x[i - 3] * w[1]
        t2 = x[i - 2] * w[2]
        t3 = x[i - 1] * w[3]
        t4 = x[i] * w[4]
        t5 = x[i + 1] * w[5]
        t6 = x[i + 2] * w[6]
        t7 = x[i + 3] * w[7]
        t8 = x[i + 4] * w[8]
        out[i] = (t0 * t8 + t1 * t7) / (t2 * t6 + t3 * t5 + t4)
