"""Triton elementwise kernels with masks: vector add, axpy, fused activations, clamp, where."""

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def axpy_kernel(a, x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, a * x + y, mask=mask)


@triton.jit
def gelu_bias_kernel(x_ptr, b_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs % cols, mask=mask, other=0.0).to(tl.float32)
    v = x + b
    inner = 0.7978845608 * (v + 0.044715 * v * v * v)
    e = tl.exp(-2.0 * tl.abs(inner))
    t = (1.0 - e) / (1.0 + e)
    t = tl.where(inner >= 0, t, -t)
    tl.store(out_ptr + offs, (0.5 * v * (1.0 + t)).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def silu_mul_kernel(g_ptr, u_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    s = g / (1.0 + tl.exp(-g))
    tl.store(out_ptr + offs, (s * u).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def clamp_where_kernel(x_ptr, lo, hi, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.minimum(tl.maximum(x, lo), hi)
    y = tl.where(x != x, 0.0, y)  # noqa: PLR0124 (NaN to 0)
    tl.store(out_ptr + offs, y, mask=mask)


_F32 = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
_AXPY = {"a": "fp32", "x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}


def _act(dtype):
    return {"x_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "n": "i32",
            "cols": "i32", "BLOCK": "constexpr"}


def _silu(dtype):
    return {"g_ptr": f"*{dtype}", "u_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "n": "i32",
            "BLOCK": "constexpr"}


_CLAMP = {"x_ptr": "*fp32", "lo": "fp32", "hi": "fp32", "out_ptr": "*fp32", "n": "i32",
          "BLOCK": "constexpr"}

CORPUS = (
    [(f"add_b{b}_w{w}", add_kernel, _F32, {"BLOCK": b}, {"num_warps": w})
     for b, w in ((256, 2), (1024, 4), (4096, 8))]
    + [(f"axpy_b{b}", axpy_kernel, _AXPY, {"BLOCK": b}, {"num_warps": 4}) for b in (512, 2048)]
    + [(f"gelu_bias_{d}_b{b}", gelu_bias_kernel, _act(d), {"BLOCK": b}, {"num_warps": 4})
       for d, b in (("fp32", 1024), ("fp16", 2048), ("bf16", 1024))]
    + [(f"silu_mul_{d}", silu_mul_kernel, _silu(d), {"BLOCK": 1024}, {"num_warps": 4})
       for d in ("fp32", "fp16")]
    + [("clamp_where", clamp_where_kernel, _CLAMP, {"BLOCK": 1024}, {"num_warps": 4})]
)
