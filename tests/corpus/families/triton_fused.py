"""Triton kernels as model code writes them (training family): fused elementwise chains,
SwiGLU, GELU, 2D-blocked softmax, layernorm backward, cumulative sums, arg-max, and
tensor-core matmuls over several tile shapes and dtypes (fp16, bf16, tf32, int8)."""

import triton
import triton.language as tl


@triton.jit
def add_mul_relu(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = tl.load(z_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.maximum((x + y) * z, 0.0), mask=m)


@triton.jit
def swiglu(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=m).to(tl.float32)
    tl.store(out_ptr + offs, (a * tl.sigmoid(a) * b).to(out_ptr.dtype.element_ty), mask=m)


@triton.jit
def gelu_tanh(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    inner = 0.7978845608 * (x + 0.044715 * x * x * x)
    t = 2.0 * tl.sigmoid(2.0 * inner) - 1.0
    tl.store(out_ptr + offs, (0.5 * x * (1.0 + t)).to(out_ptr.dtype.element_ty), mask=m)


@triton.jit
def softmax_rows(x_ptr, out_ptr, n_rows, n_cols, stride, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    m = (rows < n_rows) & (cols < n_cols)
    x = tl.load(x_ptr + rows * stride + cols, mask=m, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=1)[:, None]
    e = tl.exp(x)
    tl.store(out_ptr + rows * stride + cols, e / tl.sum(e, axis=1)[:, None], mask=m)


@triton.jit
def layernorm_bwd_dx(dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, stride, n_cols,
                     BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    xhat = tl.where(m, (x - mean) * rstd, 0.0)
    wdy = tl.where(m, w * dy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / n_cols
    c2 = tl.sum(wdy, axis=0) / n_cols
    tl.store(dx_ptr + row * stride + cols, (wdy - (xhat * c1 + c2)) * rstd, mask=m)


@triton.jit
def cumsum_rows(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row * stride + cols, tl.cumsum(x, axis=0), mask=cols < n_cols)


@triton.jit
def argmax_rows(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.argmax(x, axis=0))


@triton.jit
def matmul_tiles(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    grid_n = tl.cdiv(N, BN)
    width = GROUP * grid_n
    group = pid // width
    first = group * GROUP
    size = min(tl.cdiv(M, BM) - first, GROUP)
    pm = first + (pid % size)
    pn = (pid % width) // size
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.int32 if a_ptr.dtype.element_ty == tl.int8 else tl.float32)
    for k in range(tl.cdiv(K, BK)):
        x = tl.load(a, mask=rk[None, :] < K - k * BK, other=0)
        y = tl.load(b, mask=rk[:, None] < K - k * BK, other=0)
        acc += tl.dot(x, y)
        a += BK * sak
        b += BK * sbk
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _sig(fn, types):
    return dict(zip(fn.arg_names, types.split()))


_MM = "*{a} *{a} *{c} i32 i32 i32 i32 i32 i32 i32 i32 i32 constexpr constexpr constexpr constexpr"

CORPUS = (
    [(f"add_mul_relu_{d}_b{b}", add_mul_relu, _sig(add_mul_relu, f"*{d} *{d} *{d} *{d} i32 constexpr"),
      {"BLOCK": b}, {"num_warps": w}) for d, b, w in (("fp32", 1024, 4), ("fp16", 2048, 8), ("fp32", 256, 1))]
    + [(f"swiglu_{d}_b{b}", swiglu, _sig(swiglu, f"*{d} *{d} *{d} i32 constexpr"), {"BLOCK": b},
        {"num_warps": 4}) for d, b in (("fp32", 1024), ("bf16", 2048), ("fp16", 512))]
    + [(f"gelu_tanh_{d}_b{b}", gelu_tanh, _sig(gelu_tanh, f"*{d} *{d} i32 constexpr"), {"BLOCK": b},
        {"num_warps": 4}) for d, b in (("fp32", 1024), ("bf16", 4096))]
    + [(f"softmax_rows_r{r}_b{b}", softmax_rows,
        _sig(softmax_rows, "*fp32 *fp32 i32 i32 i32 constexpr constexpr"), {"ROWS": r, "BLOCK": b},
        {"num_warps": w}) for r, b, w in ((4, 128, 4), (16, 64, 4), (2, 1024, 8))]
    + [(f"layernorm_bwd_dx_{d}_b{b}", layernorm_bwd_dx,
        _sig(layernorm_bwd_dx, f"*{d} *{d} *{d} *fp32 *fp32 *{d} i32 i32 constexpr"), {"BLOCK": b},
        {"num_warps": w}) for d, b, w in (("fp32", 1024, 4), ("fp16", 4096, 8))]
    + [(f"cumsum_rows_b{b}", cumsum_rows, _sig(cumsum_rows, "*fp32 *fp32 i32 i32 constexpr"),
        {"BLOCK": b}, {"num_warps": w}) for b, w in ((256, 2), (1024, 4))]
    + [(f"argmax_rows_b{b}", argmax_rows, _sig(argmax_rows, "*fp32 *i32 i32 i32 constexpr"),
        {"BLOCK": b}, {"num_warps": 4}) for b in (512, 2048)]
    + [(f"matmul_{a}_{bm}x{bn}x{bk}_w{w}_s{s}", matmul_tiles,
        _sig(matmul_tiles, _MM.format(a=a, c=c)), {"BM": bm, "BN": bn, "BK": bk, "GROUP": 8},
        {"num_warps": w, "num_stages": s})
       for a, c, bm, bn, bk, w, s in (("fp16", "fp16", 128, 128, 32, 4, 3), ("fp16", "fp32", 64, 64, 32, 4, 2),
                                     ("bf16", "bf16", 128, 64, 64, 4, 3), ("fp32", "fp32", 64, 64, 16, 4, 2),
                                     ("i8", "i32", 128, 128, 64, 4, 3), ("fp16", "fp16", 64, 256, 32, 8, 3),
                                     ("i8", "i32", 64, 64, 64, 2, 2))]
)
