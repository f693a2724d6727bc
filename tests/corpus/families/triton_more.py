"""More Triton kernels (held-out family): RMSNorm forward, dropout with Philox random numbers,
rotary embeddings, cross-entropy forward and backward, group norm, a fused linear layer with a
bias and activation epilogue, and a flash-attention forward."""

import triton
import triton.language as tl


@triton.jit
def rmsnorm_fwd(x_ptr, w_ptr, y_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
    r = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * stride + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def dropout(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=m)


@triton.jit
def rotary(x_ptr, cos_ptr, sin_ptr, out_ptr, stride, HALF: tl.constexpr):
    row = tl.program_id(0)
    d = tl.arange(0, HALF)
    x1 = tl.load(x_ptr + row * stride + d).to(tl.float32)
    x2 = tl.load(x_ptr + row * stride + HALF + d).to(tl.float32)
    c = tl.load(cos_ptr + row * HALF + d)
    s = tl.load(sin_ptr + row * HALF + d)
    tl.store(out_ptr + row * stride + d, (x1 * c - x2 * s).to(out_ptr.dtype.element_ty))
    tl.store(out_ptr + row * stride + HALF + d, (x1 * s + x2 * c).to(out_ptr.dtype.element_ty))


@triton.jit
def xent_fwd_bwd(logits_ptr, tgt_ptr, loss_ptr, grad_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    t = tl.load(tgt_ptr + row)
    mx = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        mn = tl.maximum(mx, tl.max(x, axis=0))
        s = s * tl.exp(mx - mn) + tl.sum(tl.exp(x - mn), axis=0)
        mx = mn
    xt = tl.load(logits_ptr + row * stride + t).to(tl.float32)
    tl.store(loss_ptr + row, tl.log(s) + mx - xt)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        g = tl.exp(x - mx) / s - tl.where(cols == t, 1.0, 0.0)
        tl.store(grad_ptr + row * stride + cols, g.to(grad_ptr.dtype.element_ty), mask=cols < n_cols)


@triton.jit
def group_norm(x_ptr, y_ptr, w_ptr, b_ptr, hw, C, eps, GROUP: tl.constexpr, BLOCK: tl.constexpr):
    n = tl.program_id(0)
    g = tl.program_id(1)
    c = g * GROUP + tl.arange(0, GROUP)[:, None]
    p = tl.arange(0, BLOCK)[None, :]
    m = p < hw
    x = tl.load(x_ptr + n * C * hw + c * hw + p, mask=m, other=0.0).to(tl.float32)
    cnt = GROUP * hw
    mean = tl.sum(tl.sum(x, axis=1), axis=0) / cnt
    d = tl.where(m, x - mean, 0.0)
    r = tl.rsqrt(tl.sum(tl.sum(d * d, axis=1), axis=0) / cnt + eps)
    w = tl.load(w_ptr + c)
    b = tl.load(b_ptr + c)
    tl.store(y_ptr + n * C * hw + c * hw + p, d * r * w + b, mask=m)


@triton.jit
def linear_bias_act(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                    BK: tl.constexpr, ACT: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(x_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + (k + rk)[:, None], mask=(rn[None, :] < N), other=0.0)
        acc += tl.dot(x, w)
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    if ACT == 1:
        acc = tl.maximum(acc, 0.0)
    elif ACT == 2:
        acc = acc * tl.sigmoid(1.702 * acc)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def flash_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale, D: tl.constexpr, BM: tl.constexpr,
              BN: tl.constexpr):
    pm = tl.program_id(0)
    head = tl.program_id(1) * seq * D
    rm = pm * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + head + rm[:, None] * D + rd[None, :], mask=rm[:, None] < seq, other=0.0)
    m_i = tl.full([BM], -float("inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for start in range(0, seq, BN):
        rn = start + tl.arange(0, BN)
        k = tl.load(k_ptr + head + rn[None, :] * D + rd[:, None], mask=rn[None, :] < seq, other=0.0)
        s = tl.dot(q, k) * scale
        s = tl.where(rn[None, :] < seq, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + head + rn[:, None] * D + rd[None, :], mask=rn[:, None] < seq, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(o_ptr + head + rm[:, None] * D + rd[None, :], (acc / l_i[:, None]).to(o_ptr.dtype.element_ty),
             mask=rm[:, None] < seq)


def _sig(fn, types):
    return dict(zip(fn.arg_names, types.split()))


CORPUS = (
    [(f"rmsnorm_fwd_{d}_b{b}", rmsnorm_fwd, _sig(rmsnorm_fwd, f"*{d} *{d} *{d} i32 i32 fp32 constexpr"),
      {"BLOCK": b}, {"num_warps": w}) for d, b, w in (("fp32", 1024, 4), ("bf16", 4096, 8), ("fp16", 512, 2))]
    + [(f"dropout_b{b}", dropout, _sig(dropout, "*fp32 *fp32 i32 fp32 i32 constexpr"), {"BLOCK": b},
        {"num_warps": 4}) for b in (1024, 256)]
    + [(f"rotary_{d}_h{h}", rotary, _sig(rotary, f"*{d} *fp32 *fp32 *{d} i32 constexpr"), {"HALF": h},
        {"num_warps": 1}) for d, h in (("fp32", 32), ("fp16", 64))]
    + [(f"xent_fwd_bwd_b{b}", xent_fwd_bwd, _sig(xent_fwd_bwd, "*fp32 *i64 *fp32 *fp32 i32 i32 constexpr"),
        {"BLOCK": b}, {"num_warps": w}) for b, w in ((1024, 4), (4096, 8))]
    + [(f"group_norm_g{g}_b{b}", group_norm, _sig(group_norm, "*fp32 *fp32 *fp32 *fp32 i32 i32 fp32 constexpr constexpr"),
        {"GROUP": g, "BLOCK": b}, {"num_warps": 4}) for g, b in ((4, 256), (8, 128))]
    + [(f"linear_{d}_{bm}x{bn}x{bk}_act{a}", linear_bias_act,
        _sig(linear_bias_act, f"*{d} *{d} *fp32 *{d} i32 i32 i32 constexpr constexpr constexpr constexpr"),
        {"BM": bm, "BN": bn, "BK": bk, "ACT": a}, {"num_warps": 4, "num_stages": 3})
       for d, bm, bn, bk, a in (("fp16", 64, 64, 32, 1), ("bf16", 128, 64, 32, 2), ("fp16", 32, 128, 64, 0))]
    + [(f"flash_fwd_{d}_d{dd}_{bm}x{bn}", flash_fwd,
        _sig(flash_fwd, f"*{d} *{d} *{d} *{d} i32 fp32 constexpr constexpr constexpr"),
        {"D": dd, "BM": bm, "BN": bn}, {"num_warps": 4, "num_stages": 2})
       for d, dd, bm, bn in (("fp16", 64, 64, 64), ("bf16", 64, 128, 32), ("fp16", 32, 64, 32))]
)
