"""Triton row kernels: fused softmax, layernorm, rmsnorm, row sums and cross-entropy."""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


@triton.jit
def online_softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    mx = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - mx), axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
        tl.store(out_ptr + row * stride + cols, tl.exp(x - mx) / total, mask=cols < n_cols)


@triton.jit
def layernorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * stride + cols, (d * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_kernel(x_ptr, y_ptr, w_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def cross_entropy_kernel(logits_ptr, target_ptr, loss_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(logits_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    t = tl.load(target_ptr + row)
    mx = tl.max(x, axis=0)
    lse = mx + tl.log(tl.sum(tl.exp(x - mx), axis=0))
    xt = tl.sum(tl.where(cols == t, x, 0.0), axis=0)
    tl.store(loss_ptr + row, lse - xt)


def _sig(names, types):
    return dict(zip(names, types.split()))


_SOFTMAX = ("out_ptr", "in_ptr", "in_stride", "out_stride", "n_cols", "BLOCK")
_ONLINE = ("out_ptr", "in_ptr", "stride", "n_cols", "BLOCK")
_LN = ("x_ptr", "y_ptr", "w_ptr", "b_ptr", "stride", "n_cols", "eps", "BLOCK")
_RMS = ("x_ptr", "y_ptr", "w_ptr", "stride", "n_cols", "eps", "BLOCK")
_ROW = ("x_ptr", "out_ptr", "stride", "n_cols", "BLOCK")
_CE = ("logits_ptr", "target_ptr", "loss_ptr", "stride", "n_cols", "BLOCK")

CORPUS = (
    [(f"softmax_{d}_b{b}_w{w}", softmax_kernel,
      _sig(_SOFTMAX, f"*{d} *{d} i32 i32 i32 constexpr"), {"BLOCK": b}, {"num_warps": w})
     for d, b, w in (("fp32", 256, 1), ("fp32", 1024, 4), ("fp32", 4096, 8), ("fp16", 2048, 4),
                     ("fp32", 8192, 16))]
    + [(f"online_softmax_b{b}_w{w}", online_softmax_kernel,
        _sig(_ONLINE, "*fp32 *fp32 i32 i32 constexpr"), {"BLOCK": b}, {"num_warps": w})
       for b, w in ((512, 2), (1024, 4), (2048, 8))]
    + [(f"layernorm_{d}_b{b}_w{w}", layernorm_kernel,
        _sig(_LN, f"*{d} *{d} *fp32 *fp32 i32 i32 fp32 constexpr"), {"BLOCK": b}, {"num_warps": w})
       for d, b, w in (("fp32", 512, 2), ("fp32", 2048, 4), ("fp16", 4096, 8), ("bf16", 1024, 4))]
    + [(f"rmsnorm_{d}_b{b}", rmsnorm_kernel, _sig(_RMS, f"*{d} *{d} *{d} i32 i32 fp32 constexpr"),
        {"BLOCK": b}, {"num_warps": 4}) for d, b in (("fp32", 1024), ("fp16", 2048))]
    + [(f"row_sum_b{b}", row_sum_kernel, _sig(_ROW, "*fp32 *fp32 i32 i32 constexpr"),
        {"BLOCK": b}, {"num_warps": 4}) for b in (256, 2048)]
    + [(f"cross_entropy_b{b}", cross_entropy_kernel,
        _sig(_CE, "*fp32 *i64 *fp32 i32 i32 constexpr"), {"BLOCK": b}, {"num_warps": w})
       for b, w in ((1024, 4), (8192, 8))]
)
