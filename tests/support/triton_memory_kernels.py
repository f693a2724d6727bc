"""Triton kernels for the memory-analysis tests: a copy and a stride-2 gather."""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["SIGNATURE", "copy", "strided"]

SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}


@triton.jit
def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@triton.jit
def strided(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + 2 * offs, mask=m), mask=m)
