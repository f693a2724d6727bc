"""Tensor-core and asynchronous-copy instructions on the interpreter, bit-exact against NumPy:
``mma.sync`` in every form the DSL emits, ``ldmatrix`` / ``stmatrix`` (x1/x2/x4, .trans),
``cp.async`` with its commit and wait groups, and 128-bit vector loads and stores.

The per-lane fragment layouts below are written out operand by operand from the PTX ISA's
"Matrix Fragments for mma.m16n8k*" sections (the element lists a0, a1, ... and their row and
column formulas), separately from the interpreter's single rule, so a wrong index on either
side fails.  mma inputs are integer-valued, so every sum is exact whatever the order.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxforge.dsl.builder import KernelBuilder
from ptxforge.emulator import EmulationError
from ptxforge.launch.loader import load

RNG = np.random.default_rng(2019)

# (shape, atype, btype, dtype): every mma form of ptxforge.dsl.tensor.MMA_FORMS
FORMS = [
    ("m16n8k4", "tf32", "tf32", "f32"), ("m16n8k8", "tf32", "tf32", "f32"),
    ("m16n8k8", "f16", "f16", "f32"), ("m16n8k8", "f16", "f16", "f16"),
    ("m16n8k8", "bf16", "bf16", "f32"), ("m16n8k16", "f16", "f16", "f32"),
    ("m16n8k16", "f16", "f16", "f16"), ("m16n8k16", "bf16", "bf16", "f32"),
    ("m16n8k16", "s8", "s8", "s32"), ("m16n8k16", "u8", "s8", "s32"),
    ("m16n8k32", "s8", "s8", "s32"), ("m16n8k32", "s8", "u8", "s32"),
    ("m16n8k32", "u8", "u8", "s32"), ("m8n8k16", "s8", "s8", "s32"),
    ("m8n8k16", "u8", "u8", "s32"), ("m8n8k4", "f64", "f64", "f64"),
]
_PER_REG = {"f16": 2, "bf16": 2, "tf32": 1, "s8": 4, "u8": 4, "f64": 1}


def _dims(shape):
    m, rest = shape[1:].split("n")
    n, k = rest.split("k")
    return int(m), int(n), int(k)


def isa_a(shape, ty, lane, i):
    """(row, col) of A element a_i of ``lane`` (PTX ISA 9.7.14.5)."""
    g, t = lane >> 2, lane % 4
    if ty in ("f16", "bf16"):
        row = g if (i < 2 or 4 <= i < 6) else g + 8
        return row, t * 2 + (i & 1) + (8 if i >= 4 else 0)
    if ty == "tf32":
        return (g if i in (0, 2) else g + 8), t + (4 if i >= 2 else 0)
    if ty == "f64":
        return g, t
    if shape == "m8n8k16":
        return g, t * 4 + i
    row = g if (i < 4 or 8 <= i < 12) else g + 8
    return row, t * 4 + (i & 3) + (16 if i >= 8 else 0)


def isa_b(shape, ty, lane, i):
    """(row, col) of B element b_i of ``lane``."""
    g, t = lane >> 2, lane % 4
    if ty in ("f16", "bf16"):
        return t * 2 + (i & 1) + (8 if i >= 2 else 0), g
    if ty == "tf32":
        return t + (4 if i == 1 else 0), g
    if ty == "f64":
        return t, g
    return t * 4 + (i & 3) + (16 if i >= 4 else 0), g


def isa_c(shape, lane, i):
    """(row, col) of accumulator element c_i of ``lane``."""
    g, t = lane >> 2, lane % 4
    return (g if i < 2 else g + 8), t * 2 + (i & 1)


def _encode(values, ty):
    """Matrix elements as the raw little-endian words they occupy in registers."""
    if ty == "f16":
        return values.astype(np.float16).view(np.uint16)
    if ty == "bf16":
        return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    if ty == "tf32":
        return values.astype(np.float32).view(np.uint32)
    if ty == "f64":
        return values.astype(np.float64).view(np.uint64)
    return values.astype(np.int8 if ty == "s8" else np.uint8).view(np.uint8)


def _pack(mat, ty, coords, nelem, word):
    """Per-lane register words (32, nregs) of ``mat`` laid out by ``coords(lane, i)``."""
    per = _PER_REG.get(ty, 1)
    bits = _encode(mat, ty)
    out = np.zeros((32, nelem // per), word)
    for lane in range(32):
        for i in range(nelem):
            r, c = coords(lane, i)
            out[lane, i // per] |= word(int(bits[r, c])) << word(8 * bits.itemsize * (i % per))
    return out


def _mma_kernel(shape, atype, btype, dtype, nwarps, satfinite=False):
    m, n, k = _dims(shape)
    per = _PER_REG[atype]
    na, nb = m * k // 32 // per, n * k // 32 // per
    nc = m * n // 32 // (2 if dtype == "f16" else 1)
    ab = "f64" if atype == "f64" else "b32"
    ct = {"f32": "f32", "f16": "f16x2", "s32": "s32", "f64": "f64"}[dtype]
    kb = KernelBuilder("mma_t", target="sm_80")
    pa, pb = kb.load_param(kb.param_ptr("a", ab)), kb.load_param(kb.param_ptr("b", ab))
    pc, pd = kb.load_param(kb.param_ptr("c", ct)), kb.load_param(kb.param_ptr("d", ct))
    tid = kb.tid()

    def regs(p, count):
        return [kb.ld(kb.elem_ptr(p, kb.add(kb.mul(tid, count), j))) for j in range(count)]

    a, b, c = regs(pa, na), regs(pb, nb), regs(pc, nc)
    d = kb.mma(a, b, c, shape=shape, atype=(atype, btype or atype), dtype=dtype,
               satfinite=satfinite)
    for j, r in enumerate(d):
        kb.st(kb.elem_ptr(pd, kb.add(kb.mul(tid, nc), j)), r)
    return load(kb.build(), device="emulator")["mma_t"], (na, nb, nc)


def _ints(ty, shape):
    if ty == "s8":
        return RNG.integers(-128, 128, shape)
    if ty == "u8":
        return RNG.integers(0, 256, shape)
    return RNG.integers(-4, 5, shape).astype(np.float64)


def _run_mma(shape, atype, btype, dtype, nwarps=2, c=None, satfinite=False):
    m, n, k = _dims(shape)
    kernel, (na, nb, nc) = _mma_kernel(shape, atype, btype, dtype, nwarps, satfinite)
    A = [_ints(atype, (m, k)) for _ in range(nwarps)]
    B = [_ints(btype, (k, n)) for _ in range(nwarps)]
    if c is None:
        c = [RNG.integers(-50, 51, (m, n)) for _ in range(nwarps)]
    word = np.uint64 if atype == "f64" else np.uint32
    cword = np.uint64 if dtype == "f64" else np.uint32
    cty = {"f32": "tf32", "f16": "f16", "s32": "s32", "f64": "f64"}[dtype]
    ne_c = m * n // 32
    pa = np.concatenate([_pack(x, atype, lambda ln, i: isa_a(shape, atype, ln, i), m * k // 32,
                               word) for x in A]).ravel()
    pb = np.concatenate([_pack(x, btype, lambda ln, i: isa_b(shape, btype, ln, i), n * k // 32,
                               word) for x in B]).ravel()
    if cty == "s32":
        pc = np.concatenate([np.array([[np.int64(x[isa_c(shape, ln, i)]) for i in range(ne_c)]
                                       for ln in range(32)]) for x in c]).astype(np.int32)
        pc = pc.view(np.uint32).ravel()
    else:
        pc = np.concatenate([_pack(x.astype(np.float64), cty, lambda ln, i: isa_c(shape, ln, i),
                                   ne_c, cword) for x in c]).ravel()
    pd = np.zeros_like(pc)
    kernel(pa, pb, pc, pd, grid=1, block=32 * nwarps)
    got = []
    for w in range(nwarps):
        words = pd.reshape(nwarps, 32, nc)[w]
        out = np.zeros((m, n), np.float64 if dtype != "s32" else np.int64)
        for ln in range(32):
            for i in range(ne_c):
                if dtype == "f16":
                    half = (int(words[ln, i // 2]) >> (16 * (i % 2))) & 0xFFFF
                    v = float(np.uint16(half).view(np.float16))
                elif dtype == "f32":
                    v = float(np.uint32(words[ln, i]).view(np.float32))
                elif dtype == "f64":
                    v = float(np.uint64(words[ln, i]).view(np.float64))
                else:
                    v = int(np.uint32(words[ln, i]).view(np.int32))
                out[isa_c(shape, ln, i)] = v
        got.append(out)
    return A, B, c, got


@pytest.mark.parametrize("shape, atype, btype, dtype", FORMS)
def test_mma_matches_numpy_exactly(shape, atype, btype, dtype):
    A, B, C, got = _run_mma(shape, atype, btype, dtype)
    for a, b, c, d in zip(A, B, C, got):
        ref = a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64)
        np.testing.assert_array_equal(d, ref)


def test_mma_s32_wraps_and_satfinite_clamps():
    shape, m, n = "m16n8k32", 16, 8
    big = [np.full((m, n), 2**31 - 100, np.int64)]
    for sat in (False, True):
        A, B, C, got = _run_mma(shape, "u8", "u8", "s32", nwarps=1, c=big, satfinite=sat)
        exact = A[0] @ B[0] + C[0]
        assert exact.max() > 2**31
        want = np.clip(exact, -2**31, 2**31 - 1) if sat else \
            ((exact + 2**31) % 2**32) - 2**31
        np.testing.assert_array_equal(got[0], want)


def test_mma_rounds_the_f32_sum_once():
    """Non-integer f16 inputs: D is the exact sum rounded once to f32."""
    shape, m, n, k = "m16n8k16", 16, 8, 16
    kernel, _ = _mma_kernel(shape, "f16", "f16", "f32", 1)
    a = (RNG.standard_normal((m, k)) * 3).astype(np.float16)
    b = (RNG.standard_normal((k, n)) * 3).astype(np.float16)
    pa = _pack(a.astype(np.float64), "f16", lambda ln, i: isa_a(shape, "f16", ln, i), 8,
               np.uint32).ravel()
    pb = _pack(b.astype(np.float64), "f16", lambda ln, i: isa_b(shape, "f16", ln, i), 4,
               np.uint32).ravel()
    pc = np.zeros(128, np.float32)
    pd = np.zeros(128, np.float32)
    kernel(pa, pb, pc, pd, grid=1, block=32)
    ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    for ln in range(32):
        for i in range(4):
            assert pd[ln * 4 + i] == ref[isa_c(shape, ln, i)]


def test_mma_needs_a_whole_warp():
    kernel, _ = _mma_kernel("m16n8k8", "f16", "f16", "f32", 1)
    z = np.zeros(64, np.uint32)
    with pytest.raises(EmulationError, match="all 32 threads"):
        kernel(z, z, np.zeros(64, np.float32), np.zeros(64, np.float32), grid=1, block=16)


# --- ldmatrix / stmatrix ---------------------------------------------------------------------

STRIDE = 24    # halves per shared row (16 used + 8 padding), so row addresses are not contiguous


def _ldmatrix_kernel(num, trans):
    """Shared tile of 32 rows x STRIDE halves from global; lane l points at row l of it."""
    kb = KernelBuilder("ldm", target="sm_80")
    src = kb.load_param(kb.param_ptr("src", "u16"))
    out = kb.load_param(kb.param_ptr("out", "b32"))
    tile = kb.shared_array("tile", "u16", 32 * STRIDE, align=16)
    tid = kb.tid()
    with kb.loop(0, STRIDE) as j:
        i = kb.add(kb.mul(tid, STRIDE), j)
        kb.st(kb.elem_ptr(tile, i), kb.ld(kb.elem_ptr(src, i)))
    kb.bar_sync()
    lane = kb.laneid()
    # lane l gives row l % 8 of matrix l // 8; matrix j sits at rows 8j.. and column 8 * (j & 1)
    row = kb.add(kb.mul(kb.shr(lane, 3), 8), kb.and_(lane, 7))
    col = kb.mul(kb.and_(kb.shr(lane, 3), 1), 8)
    frag = kb.ldmatrix(kb.elem_ptr(tile, kb.add(kb.mul(row, STRIDE), col)), num, trans=trans)
    for j, r in enumerate(frag):
        kb.st(kb.elem_ptr(out, kb.add(kb.mul(tid, num), j)), r)
    return load(kb.build(), device="emulator")["ldm"]


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("num", [1, 2, 4])
def test_ldmatrix(num, trans):
    src = RNG.integers(0, 2**16, (32, STRIDE)).astype(np.uint16)
    out = np.zeros(32 * num, np.uint32)
    _ldmatrix_kernel(num, trans)(src.ravel(), out, grid=1, block=32)
    for j in range(num):
        mat = src[8 * j: 8 * j + 8, 8 * (j & 1): 8 * (j & 1) + 8]
        if trans:
            mat = mat.T
        for lane in range(32):
            lo, hi = mat[lane // 4, 2 * (lane % 4)], mat[lane // 4, 2 * (lane % 4) + 1]
            assert out[lane * num + j] == int(lo) | (int(hi) << 16), (j, lane)


def _stmatrix_kernel(num, trans):
    kb = KernelBuilder("stm", target="sm_90")
    src = kb.load_param(kb.param_ptr("src", "b32"))
    out = kb.load_param(kb.param_ptr("out", "u16"))
    tile = kb.shared_array("tile", "u16", 32 * STRIDE, align=16)
    tid = kb.tid()
    regs = [kb.ld(kb.elem_ptr(src, kb.add(kb.mul(tid, num), j))) for j in range(num)]
    row = kb.add(kb.mul(kb.shr(tid, 3), 8), kb.and_(tid, 7))
    col = kb.mul(kb.and_(kb.shr(tid, 3), 1), 8)
    kb.stmatrix(kb.elem_ptr(tile, kb.add(kb.mul(row, STRIDE), col)), regs, trans=trans)
    kb.bar_sync()
    with kb.loop(0, STRIDE) as j:
        i = kb.add(kb.mul(tid, STRIDE), j)
        kb.st(kb.elem_ptr(out, i), kb.ld(kb.elem_ptr(tile, i)))
    return load(kb.build(), device="emulator")["stm"]


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("num", [1, 2, 4])
def test_stmatrix_inverts_ldmatrix(num, trans):
    src = RNG.integers(0, 2**16, (32, STRIDE)).astype(np.uint16)
    frags = np.zeros(32 * num, np.uint32)
    _ldmatrix_kernel(num, trans)(src.ravel(), frags, grid=1, block=32)
    back = np.zeros(32 * STRIDE, np.uint16)
    _stmatrix_kernel(num, trans)(frags, back, grid=1, block=32)
    back = back.reshape(32, STRIDE)
    for j in range(num):
        rows, cols = slice(8 * j, 8 * j + 8), slice(8 * (j & 1), 8 * (j & 1) + 8)
        np.testing.assert_array_equal(back[rows, cols], src[rows, cols])
    untouched = np.ones((32, STRIDE), bool)
    for j in range(num):
        untouched[8 * j: 8 * j + 8, 8 * (j & 1): 8 * (j & 1) + 8] = False
    assert not back[untouched].any()


# --- cp.async --------------------------------------------------------------------------------

def _cp_kernel(size, cache, wait):
    """Two cp.async groups (halves 0 and 1 of the tile); read before and after waiting."""
    kb = KernelBuilder("cpa", target="sm_80")
    src = kb.load_param(kb.param_ptr("src", "u8"))
    before = kb.load_param(kb.param_ptr("before", "u8"))
    after = kb.load_param(kb.param_ptr("after", "u8"))
    tile = kb.shared_array("tile", "u8", 2 * 64 * size, align=16)
    tid = kb.tid()
    for g in range(2):
        off = kb.add(kb.mul(tid, size), g * 64 * size)
        kb.cp_async(kb.elem_ptr(tile, off), kb.elem_ptr(src, off), size, cache=cache)
        kb.cp_async_commit()

    def copy_out(dst):
        for g in range(2):
            off = kb.add(kb.mul(tid, size), g * 64 * size)
            for b in range(size):
                kb.st(kb.elem_ptr(dst, off), kb.ld(kb.elem_ptr(tile, off), offset=b), offset=b)

    copy_out(before)
    if wait == "all":
        kb.cp_async_wait_all()
    else:
        kb.cp_async_wait(wait)
    copy_out(after)
    return load(kb.build(), device="emulator")["cpa"]


@pytest.mark.parametrize("size, cache", [(4, "ca"), (8, "ca"), (16, "ca"), (16, "cg")])
@pytest.mark.parametrize("wait", [0, 1, "all"])
def test_cp_async_lands_at_its_wait(size, cache, wait):
    n = 2 * 64 * size
    src = RNG.integers(1, 256, n).astype(np.uint8)
    before, after = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    _cp_kernel(size, cache, wait)(src, before, after, grid=1, block=64)
    assert not before.any()                       # nothing lands before the wait
    half = n // 2
    np.testing.assert_array_equal(after[:half], src[:half])
    if wait == 1:                                  # the newest group may still be in flight
        assert not after[half:].any()
    else:
        np.testing.assert_array_equal(after[half:], src[half:])


# --- 128-bit vector loads and stores ---------------------------------------------------------

@pytest.mark.parametrize("ty, vec", [("b32", 4), ("f32", 4), ("u64", 2), ("f64", 2)])
def test_128_bit_vector_copy(ty, vec):
    kb = KernelBuilder("v128", target="sm_80")
    x = kb.load_param(kb.param_ptr("x", ty))
    y = kb.load_param(kb.param_ptr("y", ty))
    at = kb.mul(kb.tid(), vec)
    vals = kb.ld(kb.elem_ptr(x, at), vec=vec)
    kb.st(kb.elem_ptr(y, at), tuple(reversed(vals)))
    dt = {"b32": np.uint32, "f32": np.float32, "u64": np.uint64, "f64": np.float64}[ty]
    src = RNG.integers(0, 2**31, 64 * vec).astype(dt)
    dst = np.zeros_like(src)
    load(kb.build(), device="emulator")["v128"](src, dst, grid=1, block=64)
    np.testing.assert_array_equal(dst.reshape(64, vec), src.reshape(64, vec)[:, ::-1])
    assert "v%d" % vec in kb.ptx()


def test_mma_tf32_ignores_the_low_13_bits():
    """A .tf32 operand is an f32 word whose 13 low mantissa bits the tensor core does not read."""
    shape, m, n, k = "m16n8k8", 16, 8, 8
    kernel, _ = _mma_kernel(shape, "tf32", "tf32", "f32", 1)
    a = RNG.integers(-4, 5, (m, k)).astype(np.float32)
    b = RNG.integers(-4, 5, (k, n)).astype(np.float32)
    noisy = (a.view(np.uint32) | np.uint32(0x1FFF)).view(np.float32)     # below tf32 precision
    pa = _pack(noisy.astype(np.float64), "tf32", lambda ln, i: isa_a(shape, "tf32", ln, i), 4,
               np.uint32).ravel()
    pb = _pack(b.astype(np.float64), "tf32", lambda ln, i: isa_b(shape, "tf32", ln, i), 2,
               np.uint32).ravel()
    pd = np.zeros(128, np.float32)
    kernel(pa, pb, np.zeros(128, np.float32), pd, grid=1, block=32)
    ref = a.astype(np.float64) @ b
    assert not np.array_equal(noisy.astype(np.float64) @ b, ref)
    for ln in range(32):
        for i in range(4):
            assert pd[ln * 4 + i] == ref[isa_c(shape, ln, i)]


def test_cp_async_src_size_fills_the_rest_with_zeros():
    import re

    from ptxforge import emit

    kb = KernelBuilder("cpz", target="sm_80")
    src = kb.load_param(kb.param_ptr("src", "u8"))
    out = kb.load_param(kb.param_ptr("out", "u32"))
    tile = kb.shared_array("tile", "u32", 4 * 32, align=16)
    tid = kb.tid()
    kb.cp_async(kb.elem_ptr(tile, kb.mul(tid, 4)), kb.elem_ptr(src, kb.mul(tid, 16)), 16)
    kb.cp_async_wait_all()
    for j in range(4):
        at = kb.add(kb.mul(tid, 4), j)
        kb.st(kb.elem_ptr(out, at), kb.ld(kb.elem_ptr(tile, at)))
    text, count = re.subn(r"(cp\.async\.ca\.shared\.global \[[^]]+\], \[[^]]+\], 16);",
                          r"\1, 5;", emit(kb.build()))
    assert count == 1
    data = RNG.integers(1, 256, 32 * 16).astype(np.uint8)
    got = np.zeros(32 * 4, np.uint32)
    load(text, device="emulator")["cpz"](data, got, grid=1, block=32)
    want = data.reshape(32, 16).copy()
    want[:, 5:] = 0                                   # bytes past src-size are zeros
    np.testing.assert_array_equal(got.view(np.uint8).reshape(32, 16), want)


@pytest.mark.parametrize("old, new, why", [
    (".row.col.", ".col.col.", r"mma\.sync\.aligned\.<shape>\.row\.col only"),
    ("cp.async.commit_group", "cp.async.bulk.commit_group", r"cp\.async \(ca/cg"),
])
def test_unsupported_forms_are_clear_errors(old, new, why):
    from ptxforge import emit

    kb = KernelBuilder("bad", target="sm_90")
    p = kb.load_param(kb.param_ptr("p", "f32"))
    tile = kb.shared_array("tile", "f32", 64, align=16)
    kb.cp_async(kb.elem_ptr(tile, kb.tid()), kb.elem_ptr(p, kb.tid()), 4)
    kb.cp_async_commit()
    a = kb.mma_fragment("a", "m16n8k8", "f16", fill=0)
    b = kb.mma_fragment("b", "m16n8k8", "f16", fill=0)
    c = kb.mma_fragment("c", "m16n8k8", "f16", fill=0.0)
    d = kb.mma(a, b, c, shape="m16n8k8", atype="f16")
    kb.st(kb.elem_ptr(p, kb.tid()), d[0])
    text = emit(kb.build())
    assert old in text
    kernel = load(text.replace(old, new), device="emulator")["bad"]
    with pytest.raises(EmulationError, match=rf"<ptx>:\d+: .*does not support.*{why}"):
        kernel(np.zeros(64, np.float32), grid=1, block=32)
