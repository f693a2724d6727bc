"""Instruction semantics of the interpreter against exact references: IEEE rounding modes
(.rn/.rz/.rm/.rp), .sat, .ftz, conversions, wrap-around, carry chains, wide and high
products, bit-field and byte-permute operations, and warp shuffles and votes.

Float references are exact rationals rounded by comparing neighbours (tests/support/emu_ops.py);
integer references are Python integers following the PTX ISA's pseudocode.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from emu_ops import round_exact, run_op

RNG = np.random.default_rng(1919)
MODES = ("rn", "rz", "rm", "rp")


def _floats(n, dtype):
    """Values whose sums and products round (random mantissas, mixed signs and scales)."""
    x = RNG.standard_normal(n) * np.exp2(RNG.integers(-20, 20, n))
    return x.astype(dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_arith_rounding(op, mode, dtype):
    a, b = _floats(200, dtype), _floats(200, dtype)
    t = "f32" if dtype is np.float32 else "f64"
    got = run_op(f"{op}.{mode}.{t} %d, %a, %b;", [a, b], dtype)
    fn = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
          "div": lambda x, y: x / y}[op]
    ref = [round_exact(fn(Fraction(float(x)), Fraction(float(y))), dtype, mode)
           for x, y in zip(a, b)]
    np.testing.assert_array_equal(got, np.array(ref, dtype))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_rounds_once(mode, dtype):
    a, b = _floats(150, dtype), _floats(150, dtype)
    c = (-(a.astype(np.float64) * b) * (1 + RNG.standard_normal(150) * 1e-6)).astype(dtype)
    t = "f32" if dtype is np.float32 else "f64"
    got = run_op(f"fma.{mode}.{t} %d, %a, %b, %c;", [a, b, c], dtype)
    ref = [round_exact(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), dtype, mode)
           for x, y, z in zip(a, b, c)]
    np.testing.assert_array_equal(got, np.array(ref, dtype))


@pytest.mark.parametrize("mode", MODES)
def test_sqrt_rounding(mode):
    a = np.abs(_floats(200, np.float32))
    got = run_op(f"sqrt.{mode}.f32 %d, %a;", [a], np.float32)
    for x, g in zip(a, got):
        lo, hi = np.nextafter(g, np.float32(0)), np.nextafter(g, np.float32(np.inf))
        q = Fraction(float(x))
        sq = Fraction(float(g)) ** 2
        if mode == "rm" or mode == "rz":
            assert sq <= q < Fraction(float(hi)) ** 2
        elif mode == "rp":
            assert Fraction(float(lo)) ** 2 < q <= sq
        else:  # nearest: the midpoints' squares bracket q
            mid_lo, mid_hi = (Fraction(float(g)) + Fraction(float(lo))) / 2, \
                (Fraction(float(g)) + Fraction(float(hi))) / 2
            assert mid_lo ** 2 <= q <= mid_hi ** 2


def test_sat_and_ftz():
    a = np.array([0.25, 0.9, -3.0, np.nan, 2.0, 1e-40, -1e-40], np.float32)
    b = np.array([0.25, 0.9, 1.0, 1.0, 0.0, 0.0, 0.0], np.float32)
    got = run_op("add.sat.f32 %d, %a, %b;", [a, b], np.float32)
    np.testing.assert_array_equal(got, [0.5, 1.0, 0.0, 0.0, 1.0, np.float32(1e-40), 0.0])
    one = np.ones(2, np.float32)
    got = run_op("mul.ftz.f32 %d, %a, %b;", [a[5:], one], np.float32)
    assert list(got) == [0.0, 0.0] and np.signbit(got[1])  # flushed to a zero of its sign
    got = run_op("mul.f32 %d, %a, %b;", [a[5:], one], np.float32)
    np.testing.assert_array_equal(got, a[5:])  # no .ftz: the subnormals survive
    s = np.array([2**31 - 5, -(2**31) + 5, 7], np.int32)
    t = np.array([10, -10, 3], np.int32)
    np.testing.assert_array_equal(run_op("add.sat.s32 %d, %a, %b;", [s, t], np.int32),
                                  [2**31 - 1, -(2**31), 10])
    np.testing.assert_array_equal(run_op("add.s32 %d, %a, %b;", [s, t], np.int32),
                                  np.array([2**31 + 5 - 2**32, -(2**31) - 5 + 2**32, 10]))


@pytest.mark.parametrize("mode,fn", [("rni", np.rint), ("rzi", np.trunc), ("rmi", np.floor),
                                     ("rpi", np.ceil)])
def test_cvt_float_to_int_rounds_and_saturates(mode, fn):
    a = np.array([2.5, 3.5, -2.5, -0.7, 0.7, 3e9, -3e9, np.nan, np.inf, -np.inf], np.float32)
    got = run_op(f"cvt.{mode}.s32.f32 %d, %a;", [a], np.int32)
    ref = np.where(np.isnan(a), 0, np.clip(fn(a.astype(np.float64)), -2**31, 2**31 - 1))
    np.testing.assert_array_equal(got, ref.astype(np.int64))
    got = run_op(f"cvt.{mode}.u32.f32 %d, %a;", [a], np.uint32)
    ref = np.where(np.isnan(a), 0, np.clip(fn(a.astype(np.float64)), 0, 2**32 - 1))
    np.testing.assert_array_equal(got, ref.astype(np.int64))


@pytest.mark.parametrize("mode", MODES)
def test_cvt_narrowing_float_rounding(mode):
    a = _floats(200, np.float64)
    got = run_op(f"cvt.{mode}.f32.f64 %d, %a;", [a], np.float32)
    np.testing.assert_array_equal(got, [round_exact(Fraction(float(x)), np.float32, mode)
                                        for x in a])
    ints = RNG.integers(-(2**31), 2**31, 200).astype(np.int32)
    got = run_op(f"cvt.{mode}.f32.s32 %d, %a;", [ints], np.float32)
    np.testing.assert_array_equal(got, [round_exact(Fraction(int(x)), np.float32, mode)
                                        for x in ints])


def test_cvt_integer_widths():
    a = np.array([-1, 300, -300, 127, 0x12345678], np.int32)
    np.testing.assert_array_equal(run_op("cvt.sat.u8.s32 %d, %a;", [a], np.uint8),
                                  [0, 255, 0, 127, 255])
    np.testing.assert_array_equal(run_op("cvt.sat.s8.s32 %d, %a;", [a], np.int8),
                                  [-1, 127, -128, 127, 127])
    np.testing.assert_array_equal(run_op("cvt.u16.u32 %d, %a;", [a.view(np.uint32)], np.uint16),
                                  [0xFFFF, 300, (-300) & 0xFFFF, 127, 0x5678])
    np.testing.assert_array_equal(run_op("cvt.s64.s32 %d, %a;", [a], np.int64), a)
    np.testing.assert_array_equal(run_op("cvt.u64.u32 %d, %a;", [a.view(np.uint32)], np.uint64),
                                  a.view(np.uint32))


def test_carry_chain_is_a_128_bit_add_and_sub():
    n = 100
    a = RNG.integers(0, 2**32, (n, 2), dtype=np.uint64).astype(np.uint32)
    b = RNG.integers(0, 2**32, (n, 2), dtype=np.uint64).astype(np.uint32)
    a[:5] = 0xFFFFFFFF
    b[:5, 0] = 1
    av, bv = a.view(np.uint64).ravel(), b.view(np.uint64).ravel()
    got = run_op("""
        { .reg .b32 %al, %ah, %bl, %bh, %lo, %hi;
          mov.b64 {%al, %ah}, %a;
          mov.b64 {%bl, %bh}, %b;
          add.cc.u32 %lo, %al, %bl;
          addc.u32 %hi, %ah, %bh;
          mov.b64 %d, {%lo, %hi}; }""", [av, bv], np.uint64)
    assert [int(g) for g in got] == [(int(p) + int(q)) % 2**64 for p, q in zip(av, bv)]
    got = run_op("""
        { .reg .b32 %al, %ah, %bl, %bh, %lo, %hi;
          mov.b64 {%al, %ah}, %a;
          mov.b64 {%bl, %bh}, %b;
          sub.cc.u32 %lo, %al, %bl;
          subc.u32 %hi, %ah, %bh;
          mov.b64 %d, {%lo, %hi}; }""", [av, bv], np.uint64)
    assert [int(g) for g in got] == [(int(p) - int(q)) % 2**64 for p, q in zip(av, bv)]


@pytest.mark.parametrize("dtype", [np.uint32, np.int32, np.uint64, np.int64])
def test_mul_hi_wide_and_mad(dtype):
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, 100, dtype=dtype, endpoint=True)
    b = RNG.integers(info.min, info.max, 100, dtype=dtype, endpoint=True)
    a[:3] = (info.min, info.max, info.min)
    b[:3] = (info.max, info.max, info.min)
    bits = info.bits
    t = ("s" if info.min < 0 else "u") + str(bits)
    hi = run_op(f"mul.hi.{t} %d, %a, %b;", [a, b], dtype)
    assert [int(h) for h in hi] == [(int(x) * int(y)) >> bits for x, y in zip(a, b)]
    c = RNG.integers(info.min, info.max, 100, dtype=dtype, endpoint=True)
    lo = run_op(f"mad.lo.{t} %d, %a, %b, %c;", [a, b, c], dtype)
    wrap = 1 << bits
    ref = [((int(x) * int(y) + int(z)) % wrap) for x, y, z in zip(a, b, c)]
    assert [int(v) % wrap for v in lo] == ref
    if bits == 32:
        wide = np.int64 if info.min < 0 else np.uint64
        w = run_op(f"mul.wide.{t} %d, %a, %b;", [a, b], wide)
        assert [int(v) for v in w] == [int(x) * int(y) for x, y in zip(a, b)]


def _bfe_ref(a: int, pos: int, length: int, bits: int, signed: bool) -> int:
    """The PTX ISA's bfe pseudocode, bit by bit."""
    msb = bits - 1
    pos, length = pos & 0xFF, length & 0xFF
    sbit = 0 if (not signed or length == 0) else (a >> min(pos + length - 1, msb)) & 1
    d = 0
    for i in range(bits):
        bit = (a >> (pos + i)) & 1 if (i < length and pos + i <= msb) else sbit
        d |= bit << i
    return d


def _bfi_ref(a: int, b: int, pos: int, length: int, bits: int) -> int:
    pos, length = pos & 0xFF, length & 0xFF
    f = b
    for i in range(length):
        if pos + i > bits - 1:
            break
        f = (f & ~(1 << (pos + i))) | (((a >> i) & 1) << (pos + i))
    return f


@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
def test_bfe(t):
    bits = int(t[1:])
    dtype = {"u32": np.uint32, "s32": np.int32, "u64": np.uint64, "s64": np.int64}[t]
    n = 300
    a = RNG.integers(0, 2**bits, n, dtype=np.uint64 if bits == 64 else np.int64,
                     endpoint=False).astype(dtype)
    pos = RNG.integers(0, bits + 8, n).astype(np.uint32)
    ln = RNG.integers(0, bits + 8, n).astype(np.uint32)
    got = run_op(f"bfe.{t} %d, %a, %b, %c;", [a, pos, ln], dtype,)
    mask = (1 << bits) - 1
    ref = [_bfe_ref(int(x) & mask, int(p), int(q), bits, t[0] == "s")
           for x, p, q in zip(a, pos, ln)]
    assert [int(g) & mask for g in got] == ref


def test_bfi_prmt_lop3_shf():
    n = 200
    a = RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    c = RNG.integers(0, 40, n).astype(np.uint32)
    got = run_op("bfi.b32 %d, %a, %b, %c, 9;", [a, b, c], np.uint32)
    assert [int(g) for g in got] == [_bfi_ref(int(x), int(y), int(p), 9, 32)
                                     for x, y, p in zip(a, b, c)]
    sel = RNG.integers(0, 2**16, n).astype(np.uint32)
    got = run_op("prmt.b32 %d, %a, %b, %c;", [a, b, sel], np.uint32)
    for x, y, s, g in zip(a, b, sel, got):
        src = int(x).to_bytes(4, "little") + int(y).to_bytes(4, "little")
        out = bytearray()
        for i in range(4):
            nib = (int(s) >> (4 * i)) & 0xF
            byte = src[nib & 7]
            out.append((0xFF if byte & 0x80 else 0) if nib & 8 else byte)
        assert int(g) == int.from_bytes(out, "little")
    got = run_op("lop3.b32 %d, %a, %b, %c, 0x96;", [a, b, c], np.uint32)  # 0x96: a ^ b ^ c
    np.testing.assert_array_equal(got, a ^ b ^ c)
    got = run_op("lop3.b32 %d, %a, %b, %c, 0xE8;", [a, b, c], np.uint32)  # majority
    np.testing.assert_array_equal(got, (a & b) | (a & c) | (b & c))
    got = run_op("shf.l.wrap.b32 %d, %a, %b, %c;", [a, b, c], np.uint32)
    assert [int(g) for g in got] == [((((int(y) << 32) | int(x)) << (int(s) & 31)) >> 32)
                                     & 0xFFFFFFFF for x, y, s in zip(a, b, c)]
    got = run_op("shf.r.clamp.b32 %d, %a, %b, %c;", [a, b, c], np.uint32)
    assert [int(g) for g in got] == [(((int(y) << 32) | int(x)) >> min(int(s), 32)) & 0xFFFFFFFF
                                     for x, y, s in zip(a, b, c)]


def test_shifts_clamp_and_integer_division():
    a = np.array([0x80000001, 5, 0xFFFFFFFF, 1], np.uint32)
    s = np.array([31, 32, 40, 0], np.uint32)
    np.testing.assert_array_equal(run_op("shl.b32 %d, %a, %b;", [a, s], np.uint32),
                                  [0x80000000, 0, 0, 1])
    np.testing.assert_array_equal(run_op("shr.u32 %d, %a, %b;", [a, s], np.uint32),
                                  [1, 0, 0, 1])
    np.testing.assert_array_equal(run_op("shr.s32 %d, %a, %b;", [a.view(np.int32), s], np.int32),
                                  [-1, 0, -1, 1])
    x = np.array([7, -7, 7, -7, -(2**31)], np.int32)
    y = np.array([2, 2, -2, -2, 3], np.int32)
    np.testing.assert_array_equal(run_op("div.s32 %d, %a, %b;", [x, y], np.int32),
                                  [3, -3, -3, 3, -715827882])
    np.testing.assert_array_equal(run_op("rem.s32 %d, %a, %b;", [x, y], np.int32),
                                  [1, -1, 1, -1, -2])
    v = np.array([0, 1, 0x80000000, 0xF0F0], np.uint32)
    np.testing.assert_array_equal(run_op("popc.b32 %d, %a;", [v], np.uint32), [0, 1, 1, 8])
    np.testing.assert_array_equal(run_op("clz.b32 %d, %a;", [v], np.uint32), [32, 31, 0, 16])
    np.testing.assert_array_equal(run_op("brev.b32 %d, %a;", [v], np.uint32),
                                  [0, 0x80000000, 1, 0x0F0F0000])
    np.testing.assert_array_equal(run_op("bfind.u32 %d, %a;", [v], np.uint32),
                                  [0xFFFFFFFF, 0, 31, 15])


def _shfl_ref(mode, vals, b, c):
    out, ok = [], []
    for lane in range(32):
        seg = (c >> 8) & 0x1F
        max_lane = (lane & seg) | ((c & 0x1F) & ~seg)
        min_lane = lane & seg
        j = {"up": lane - b, "down": lane + b, "bfly": lane ^ b,
             "idx": min_lane | (b & ~seg)}[mode]
        p = j >= max_lane if mode == "up" else j <= max_lane
        out.append(vals[j] if p else vals[lane])
        ok.append(p)
    return out, ok


@pytest.mark.parametrize("mode,b,c", [("up", 3, 0), ("down", 5, 0x1F), ("bfly", 6, 0x1F),
                                      ("idx", 9, 0x1F), ("down", 2, 0x181F), ("idx", 3, 0x1C1F)])
def test_shfl_modes_and_segments(mode, b, c):
    vals = RNG.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    got = run_op(f"""{{ .reg .pred %ok; .reg .b32 %v;
        shfl.sync.{mode}.b32 %v|%ok, %a, {b}, {c}, 0xffffffff;
        selp.b32 %d, %v, 0xdeadbeef, %ok; }}""", [vals], np.uint32)
    for w in range(2):
        ref, ok = _shfl_ref(mode, list(vals[32 * w: 32 * w + 32]), b, c)
        expect = [r if p else 0xDEADBEEF for r, p in zip(ref, ok)]
        assert [int(g) for g in got[32 * w: 32 * w + 32]] == [int(e) for e in expect]


def test_vote_ballot_under_divergence():
    """Only the threads that execute the vote take part: odd lanes branch around it."""
    vals = RNG.integers(0, 2, 64).astype(np.uint32)
    got = run_op("""{ .reg .pred %odd, %v; .reg .b32 %lane;
        mov.u32 %lane, %laneid;
        and.b32 %lane, %lane, 1;
        setp.ne.u32 %odd, %lane, 0;
        mov.u32 %d, 7;
        @%odd bra SKIP;
        setp.ne.u32 %v, %a, 0;
        vote.sync.ballot.b32 %d, %v, 0x55555555;
    SKIP: }""", [vals], np.uint32)
    for w in range(2):
        chunk = vals[32 * w: 32 * w + 32]
        ballot = sum(1 << i for i in range(0, 32, 2) if chunk[i])
        expect = [ballot if i % 2 == 0 else 7 for i in range(32)]
        assert [int(g) for g in got[32 * w: 32 * w + 32]] == expect


def test_divergent_loops_reconverge_before_a_barrier():
    """Each thread loops tid % 7 times; all meet at bar.sync, then read a neighbour's result
    from shared memory (which is only there if the barrier waited for every thread)."""
    tid = np.arange(64, dtype=np.uint32)
    got = run_op("""{ .reg .b32 %k, %acc, %addr, %nb; .reg .pred %more;
        .shared .align 4 .b32 buf[64];
        mov.u32 %acc, 0;
        rem.u32 %k, %a, 7;
    LOOP:
        setp.eq.u32 %more, %k, 0;
        @%more bra END;
        add.u32 %acc, %acc, %k;
        sub.u32 %k, %k, 1;
        bra LOOP;
    END:
        mov.u32 %addr, buf;
        mad.lo.u32 %addr, %a, 4, %addr;
        st.shared.u32 [%addr], %acc;
        bar.sync 0;
        add.u32 %nb, %a, 1;
        rem.u32 %nb, %nb, 64;
        mov.u32 %addr, buf;
        mad.lo.u32 %addr, %nb, 4, %addr;
        ld.shared.u32 %d, [%addr]; }""", [tid], np.uint32, block=64)
    tri = [(k * (k + 1)) // 2 for k in ((tid + 1) % 64 % 7)]
    np.testing.assert_array_equal(got, tri)
