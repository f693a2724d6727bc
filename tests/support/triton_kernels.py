"""Triton kernels for the front-end tests: a fused row softmax and a tiled matmul (fp16 in,
fp32 accumulate).  Compiled without a GPU by ``triton.compile`` for a ``GPUTarget``."""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["MATMUL_SIGNATURE", "SOFTMAX_SIGNATURE", "fused_softmax", "matmul"]

SOFTMAX_SIGNATURE = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32",
                     "out_stride": "i32", "n_cols": "i32"}
MATMUL_SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32",
                    "N": "i32", "K": "i32", "stride_am": "i32", "stride_bk": "i32",
                    "stride_cm": "i32"}


@triton.jit
def fused_softmax(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    shifted = x - tl.max(x, axis=0)
    num = tl.exp(shifted)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, num / den, mask=mask)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    c = acc.to(tl.float16)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], c,
             mask=(rm[:, None] < M) & (rn[None, :] < N))
