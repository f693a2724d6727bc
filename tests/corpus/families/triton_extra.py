"""Extra Triton kernels (held-out family, added with prediction model 6 so that Triton's
held-out set is not thin): a fused activation, row-wise int8 quantisation, log-softmax, a row
cumulative sum, a tile transpose, a column sum over a loop, row L2 normalisation and a fused
Adam update."""

import triton
import triton.language as tl


@triton.jit
def leaky_softplus(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    sp = tl.log(1 + tl.exp(-tl.abs(x))) + tl.maximum(x, 0.0)
    y = tl.where(x > 0, sp, alpha * x)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def quantize_rows(x_ptr, q_ptr, s_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    scale = tl.max(tl.abs(x), axis=0) / 127.0 + 1e-12
    q = tl.extra.cuda.libdevice.rint(x / scale)
    tl.store(q_ptr + row * stride + cols, q.to(tl.int8), mask=m)
    tl.store(s_ptr + row, scale)


@triton.jit
def log_softmax(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    y = z - tl.log(tl.sum(tl.exp(z), axis=0))
    tl.store(y_ptr + row * stride + cols, y, mask=m)


@triton.jit
def row_cumsum(x_ptr, y_ptr, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols)
    tl.store(y_ptr + row * stride + cols, tl.cumsum(x, axis=0))


@triton.jit
def transpose_tile(x_ptr, y_ptr, rows, cols, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (rm[:, None] < rows) & (rn[None, :] < cols)
    t = tl.load(x_ptr + rm[:, None] * cols + rn[None, :], mask=m)
    tl.store(y_ptr + rn[None, :] * rows + rm[:, None], t, mask=m)


@triton.jit
def column_sum(x_ptr, y_ptr, rows, cols, BLOCK: tl.constexpr):
    rn = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = rn < cols
    acc = tl.zeros([BLOCK], tl.float32)
    for r in range(rows):
        acc += tl.load(x_ptr + r * cols + rn, mask=m, other=0.0)
    tl.store(y_ptr + rn, acc, mask=m)


@triton.jit
def l2_normalize(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    y = x / tl.maximum(tl.sqrt(tl.sum(x * x, axis=0)), 1e-12)
    tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def adam_step(p_ptr, g_ptr, m_ptr, v_ptr, n, lr, b1, b2, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    m = b1 * tl.load(m_ptr + offs, mask=mask) + (1 - b1) * g
    v = b2 * tl.load(v_ptr + offs, mask=mask) + (1 - b2) * g * g
    tl.store(m_ptr + offs, m, mask=mask)
    tl.store(v_ptr + offs, v, mask=mask)
    tl.store(p_ptr + offs, p - lr * m / (tl.sqrt(v) + eps), mask=mask)


def _sig(fn, types):
    return dict(zip(fn.arg_names, types.split()))


CORPUS = (
    [(f"leaky_softplus_{d}_b{b}", leaky_softplus, _sig(leaky_softplus, f"*{d} *{d} i32 fp32 constexpr"),
      {"BLOCK": b}, {"num_warps": w}) for d, b, w in (("fp32", 512, 4), ("fp16", 2048, 4))]
    + [(f"quantize_rows_{d}_b{b}", quantize_rows, _sig(quantize_rows, f"*{d} *i8 *fp32 i32 i32 constexpr"),
        {"BLOCK": b}, {"num_warps": w}) for d, b, w in (("fp32", 1024, 4), ("fp16", 2048, 8))]
    + [(f"log_softmax_b{b}", log_softmax, _sig(log_softmax, "*fp32 *fp32 i32 i32 constexpr"),
        {"BLOCK": b}, {"num_warps": w}) for b, w in ((512, 2), (2048, 8))]
    + [(f"row_cumsum_b{b}", row_cumsum, _sig(row_cumsum, "*fp32 *fp32 i32 constexpr"),
        {"BLOCK": b}, {"num_warps": w}) for b, w in ((256, 2), (1024, 4))]
    + [(f"transpose_{bm}x{bn}", transpose_tile, _sig(transpose_tile, "*fp32 *fp32 i32 i32 constexpr constexpr"),
        {"BM": bm, "BN": bn}, {"num_warps": 4}) for bm, bn in ((32, 32), (64, 32))]
    + [(f"column_sum_b{b}", column_sum, _sig(column_sum, "*fp32 *fp32 i32 i32 constexpr"),
        {"BLOCK": b}, {"num_warps": 4}) for b in (128, 512)]
    + [(f"l2_normalize_{d}_b{b}", l2_normalize, _sig(l2_normalize, f"*{d} *{d} i32 i32 constexpr"),
        {"BLOCK": b}, {"num_warps": 4}) for d, b in (("fp32", 1024), ("bf16", 4096))]
    + [(f"adam_step_b{b}", adam_step, _sig(adam_step, "*fp32 *fp32 *fp32 *fp32 i32 fp32 fp32 fp32 fp32 constexpr"),
        {"BLOCK": b}, {"num_warps": w}) for b, w in ((1024, 4), (4096, 8))]
)
