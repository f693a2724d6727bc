"""Triton matmuls (block-tiled with grouped ordering, several BLOCK sizes and warps), a
batched matmul with a fused bias + activation epilogue, and an attention-like kernel."""

import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(tl.cdiv(K, BLOCK_K)):
        av = tl.load(a, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        bv = tl.load(b, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(av, bv, acc)
        a += BLOCK_K * stride_ak
        b += BLOCK_K * stride_bk
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def linear_act_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACT: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(x_ptr + rm[:, None] * K + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + (k0 + rk)[:, None],
                    mask=(rn[None, :] < N) & ((k0 + rk)[:, None] < K), other=0.0)
        acc += tl.dot(x, w)
    acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0)[None, :].to(tl.float32)
    if ACT == 1:
        acc = tl.maximum(acc, 0.0)
    elif ACT == 2:
        acc = acc * tl.sigmoid(acc)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale, HEAD: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    base = bh * seq * HEAD
    rm = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, HEAD)
    q = tl.load(q_ptr + base + rm[:, None] * HEAD + rd[None, :], mask=rm[:, None] < seq, other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD], tl.float32)
    for start in range(0, seq, BLOCK_N):
        rn = start + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + base + rn[None, :] * HEAD + rd[:, None], mask=rn[None, :] < seq,
                    other=0.0)
        s = tl.dot(q, k) * scale
        s = tl.where(rn[None, :] < seq, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + rn[:, None] * HEAD + rd[None, :], mask=rn[:, None] < seq,
                    other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(o_ptr + base + rm[:, None] * HEAD + rd[None, :], (acc / l_i[:, None]).to(o_ptr.dtype.element_ty),
             mask=rm[:, None] < seq)


def _mm(dtype):
    s = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{dtype}"}
    s.update({k: "i32" for k in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn",
                                 "stride_cm", "stride_cn")})
    s.update({k: "constexpr" for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")})
    return s


def _lin(dtype):
    s = {"x_ptr": f"*{dtype}", "w_ptr": f"*{dtype}", "bias_ptr": f"*{dtype}", "y_ptr": f"*{dtype}",
         "M": "i32", "N": "i32", "K": "i32"}
    s.update({k: "constexpr" for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "ACT")})
    return s


_ATT = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16", "seq": "i32",
        "scale": "fp32", "HEAD": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"}

_MM_CONFIGS = (("fp16", 32, 32, 32, 2, 2), ("fp16", 64, 64, 32, 4, 3), ("fp16", 128, 64, 32, 4, 3),
               ("fp16", 128, 128, 32, 8, 3), ("fp16", 64, 128, 64, 4, 4), ("bf16", 64, 64, 32, 4, 3),
               ("bf16", 128, 128, 64, 8, 3), ("fp32", 32, 32, 16, 4, 2), ("fp32", 64, 64, 32, 4, 2),
               ("fp32", 128, 64, 32, 8, 2))

CORPUS = (
    [(f"matmul_{d}_{bm}x{bn}x{bk}_w{w}_s{s}", matmul_kernel, _mm(d),
      {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
      {"num_warps": w, "num_stages": s}) for d, bm, bn, bk, w, s in _MM_CONFIGS]
    + [(f"linear_act{act}_{d}_{bm}x{bn}", linear_act_kernel, _lin(d),
        {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 32, "ACT": act}, {"num_warps": 4})
       for d, bm, bn, act in (("fp16", 64, 64, 1), ("fp16", 128, 64, 2), ("bf16", 64, 128, 0),
                              ("fp32", 32, 64, 1))]
    + [(f"attention_h{h}_{bm}x{bn}_w{w}", attention_fwd_kernel, _ATT,
        {"HEAD": h, "BLOCK_M": bm, "BLOCK_N": bn}, {"num_warps": w})
       for h, bm, bn, w in ((64, 64, 64, 4), (64, 128, 64, 8), (128, 64, 32, 4), (32, 32, 32, 2))]
)
