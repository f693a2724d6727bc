"""Integer and bit instructions for the interpreter: wrap-around arithmetic, carry chains,
``mul.hi``/``.wide``, ``mad``, ``bfe``/``bfi``/``prmt``/``lop3``/``shf``, ``dp4a`` and friends.

Each builder takes the :class:`~.operands.Decoded` opcode, the instruction and the program's
symbols and returns an executor ``f(m, idx)``; :data:`FAMILIES` maps the family name to it.
Semantics follow the PTX ISA's pseudocode (CC.CF is one carry bit per thread).

Example::

    >>> import numpy as np
    >>> from ptxforge.emulator.ops_int import wide_product
    >>> lo, hi = wide_product(np.array([2**63 + 5], np.uint64), np.array([6], np.uint64), 64)
    >>> int(lo[0]), int(hi[0])
    (30, 3)
"""

from __future__ import annotations

import numpy as np

from ptxforge.ptx import types as T

from .operands import Unsupported, reader, writer
from .values import SINT, UINT, spread

__all__ = ["FAMILIES", "wide_product", "bits_of", "as_type"]


def bits_of(values, ty) -> np.ndarray:
    """Typed values as unsigned bits of the same width."""
    return np.asarray(values).astype(SINT[ty.bits] if ty.is_signed else UINT[ty.bits],
                                      copy=False).view(UINT[ty.bits])


def as_type(bits, ty) -> np.ndarray:
    """Unsigned bits as values of ``ty``."""
    from .values import dtype_of
    return np.asarray(bits).astype(UINT[ty.bits]).view(dtype_of(ty))


def wide_product(a, b, width: int, signed: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The low and high ``width`` bits (unsigned arrays) of the full product ``a * b``."""
    ua = np.atleast_1d(np.asarray(a)).astype(SINT[width] if signed else UINT[width])
    ub = np.atleast_1d(np.asarray(b)).astype(SINT[width] if signed else UINT[width])
    ua, ub = ua.view(UINT[width]), ub.view(UINT[width])
    if width <= 32:
        if signed:
            p = (ua.view(SINT[width]).astype(np.int64)
                 * ub.view(SINT[width]).astype(np.int64)).view(np.uint64)
        else:
            p = ua.astype(np.uint64) * ub.astype(np.uint64)
        mask = np.uint64((1 << width) - 1)
        return (p & mask).astype(UINT[width]), ((p >> np.uint64(width)) & mask).astype(UINT[width])
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a0, a1, b0, b1 = ua & m32, ua >> s32, ub & m32, ub >> s32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> s32) + (p01 & m32) + (p10 & m32)
    hi = p11 + (p01 >> s32) + (p10 >> s32) + (mid >> s32)
    lo = ua * ub
    if signed:
        hi = hi - np.where(ua.view(np.int64) < 0, ub, 0).astype(np.uint64) \
                - np.where(ub.view(np.int64) < 0, ua, 0).astype(np.uint64)
    return lo, hi


def _srcs(inst, tys, symbols, first=1):
    return [reader(op, ty, symbols) for op, ty in zip(inst.operands[first:], tys)]


def _simple(fn, nsrc, src_types=None, dst_type=None):
    """A builder for ``d = fn(d_type, *sources)`` with sources read as the instruction type."""
    def build(d, inst, symbols):
        ty = d.type
        tys = src_types(ty) if src_types else [ty] * nsrc
        srcs = _srcs(inst, tys, symbols)
        out_ty = dst_type(ty) if dst_type else ty
        put = writer(inst.operands[0], out_ty)

        def run(m, idx):
            put(m, idx, fn(d, ty, *[s(m, idx) for s in srcs]))
        return run
    return build


def _sat32(d, ty, wide):
    """Clamp an int64 result for ``.sat`` (s32 only) or wrap."""
    if d.has("sat") and ty is T.s32:
        return np.clip(wide, -(1 << 31), (1 << 31) - 1).astype(np.int32)
    return wide


def _add(d, ty, a, b):
    if d.has("sat") and ty is T.s32:
        return _sat32(d, ty, np.asarray(a).astype(np.int64) + b)
    return np.asarray(a) + b


def _sub(d, ty, a, b):
    if d.has("sat") and ty is T.s32:
        return _sat32(d, ty, np.asarray(a).astype(np.int64) - b)
    return np.asarray(a) - b


def _carry_op(kind):
    """add/sub/addc/subc with ``.cc``: CC.CF in and out (a borrow for subtraction)."""
    def build(d, inst, symbols):
        ty = d.type
        if ty.is_float:
            raise Unsupported("carry ops are integer-only")
        srcs = _srcs(inst, [ty, ty], symbols)
        put = writer(inst.operands[0], ty)
        use_cf = kind in ("addc", "subc")
        set_cf = d.has("cc")
        ut = UINT[ty.bits]

        def run(m, idx):
            a, b = (spread(bits_of(s(m, idx), ty), idx.shape) for s in srcs)
            cf = m.cc[idx].astype(ut) if use_cf else np.zeros(idx.shape, ut)
            if kind in ("add", "addc"):
                r = a + b + cf
                out = (r < a) | ((cf == 1) & (r == a))
            else:
                r = a - b - cf
                out = (a < b) | ((cf == 1) & (a == b))
            put(m, idx, as_type(r, ty))
            if set_cf:
                m.cc[idx] = out
        return run
    return build


def _mul(d, ty, a, b):
    if ty.bits == 64 or d.has("lo") or not (d.has("hi") or d.has("wide")):
        return np.asarray(a) * b
    return None


def _build_mul(d, inst, symbols):
    ty = d.type
    srcs = _srcs(inst, [ty, ty], symbols)
    wide = d.has("wide")
    if wide:
        out_ty = T.PtxType.get(("s" if ty.is_signed else "u") + str(ty.bits * 2))
    else:
        out_ty = ty
    put = writer(inst.operands[0], out_ty)
    hi = d.has("hi")

    def run(m, idx):
        a, b = (spread(s(m, idx), idx.shape) for s in srcs)
        lo_bits, hi_bits = wide_product(a, b, ty.bits, ty.is_signed)
        if wide:
            full = lo_bits.astype(UINT[ty.bits * 2]) | (hi_bits.astype(UINT[ty.bits * 2])
                                                        << UINT[ty.bits * 2](ty.bits))
            put(m, idx, as_type(full, out_ty))
        else:
            put(m, idx, as_type(hi_bits if hi else lo_bits, ty))
    return run


def _build_mad(d, inst, symbols):
    """mad.lo/.hi/.wide (with .cc, and madc), mad.hi.sat.s32."""
    ty = d.type
    wide = d.has("wide")
    out_ty = T.PtxType.get(("s" if ty.is_signed else "u") + str(ty.bits * 2)) if wide else ty
    srcs = _srcs(inst, [ty, ty, out_ty], symbols)
    put = writer(inst.operands[0], out_ty)
    use_cf, set_cf = d.family == "madc", d.has("cc")
    hi, sat = d.has("hi"), d.has("sat")
    uo = UINT[out_ty.bits]

    def run(m, idx):
        a, b, c = (spread(s(m, idx), idx.shape) for s in srcs)
        lo_bits, hi_bits = wide_product(a, b, ty.bits, ty.is_signed)
        if wide:
            prod = lo_bits.astype(uo) | (hi_bits.astype(uo) << uo(ty.bits))
        else:
            prod = (hi_bits if hi else lo_bits).astype(uo)
        if sat and hi and ty is T.s32:
            r = np.clip(prod.view(np.int32).astype(np.int64) + c.astype(np.int64),
                        -(1 << 31), (1 << 31) - 1)
            put(m, idx, r.astype(np.int32))
            return
        cb = bits_of(c, out_ty)
        cf = m.cc[idx].astype(uo) if use_cf else np.zeros(idx.shape, uo)
        r = prod + cb + cf
        if set_cf:
            m.cc[idx] = (r < prod) | ((cf == 1) & (r == prod))
        put(m, idx, as_type(r, out_ty))
    return run


def _div(d, ty, a, b):
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    if ty.is_signed:
        sa, sb = a.astype(np.int64), b.astype(np.int64)
        safe = np.where(sb == 0, 1, sb)
        q = np.abs(sa) // np.abs(safe) * np.sign(sa) * np.sign(safe)
        return np.where(sb == 0, -1, q).astype(a.dtype)
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, np.iinfo(a.dtype).max, a // safe).astype(a.dtype)


def _rem(d, ty, a, b):
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    q = _div(d, ty, a, b)
    return np.where(b == 0, a, a - q * b).astype(a.dtype)


def _shift(kind):
    def fn(d, ty, a, n):
        width = ty.bits
        a = np.asarray(a)
        n = np.minimum(np.asarray(n).astype(np.uint64), width)
        full = n >= width
        nn = np.where(full, 0, n).astype(np.uint64)
        ub = bits_of(a, ty).astype(np.uint64)
        if kind == "shl":
            r = np.where(full, 0, ub << nn)
        elif ty.is_signed:
            sa = a.astype(np.int64)
            r = np.where(full, np.where(sa < 0, -1, 0), sa >> nn.astype(np.int64)).view(np.uint64)
        else:
            r = np.where(full, 0, ub >> nn)
        return as_type(r & np.uint64((1 << width) - 1) if width < 64 else r, ty)
    return fn


def _shift_types(ty):
    return [ty, T.u32]


def _bfe(d, ty, a, pos, length):
    w = ty.bits
    ub = spread(bits_of(a, ty).astype(np.uint64), np.broadcast(a, pos, length).shape)
    pos = (np.asarray(pos).astype(np.uint64) & np.uint64(0xFF)).astype(np.int64)
    ln = (np.asarray(length).astype(np.uint64) & np.uint64(0xFF)).astype(np.int64)
    eff = np.clip(np.minimum(ln, w - pos), 0, w)
    shifted = np.where(pos >= w, 0, ub >> np.minimum(pos, w - 1).astype(np.uint64))
    mask = np.where(eff >= 64, np.uint64(2**64 - 1),
                    (np.uint64(1) << np.minimum(eff, 63).astype(np.uint64)) - np.uint64(1))
    field: np.ndarray = shifted & mask
    if ty.is_signed:
        top = np.minimum(pos + ln - 1, w - 1)
        sbit = (ln > 0) & (((ub >> np.maximum(top, 0).astype(np.uint64)) & np.uint64(1)) == 1)
        field = np.where(sbit, field | ~mask, field)
    if w < 64:
        field = field & np.uint64((1 << w) - 1)
    return as_type(field, ty)


def _bfi(d, ty, a, b, pos, length):
    w = ty.bits
    ua = bits_of(a, ty).astype(np.uint64)
    ub = bits_of(b, ty).astype(np.uint64)
    pos = (np.asarray(pos).astype(np.int64) & 0xFF)
    ln = (np.asarray(length).astype(np.int64) & 0xFF)
    eff = np.clip(np.minimum(ln, w - pos), 0, w)
    mask = np.where(eff >= 64, np.uint64(2**64 - 1),
                    (np.uint64(1) << np.minimum(eff, 63).astype(np.uint64)) - np.uint64(1))
    p = np.minimum(pos, w - 1).astype(np.uint64)
    placed = np.where(eff > 0, (ua & mask) << p, 0).astype(np.uint64)
    hole = np.where(eff > 0, mask << p, 0).astype(np.uint64)
    r = (ub & ~hole) | placed
    if w < 64:
        r &= np.uint64((1 << w) - 1)
    return as_type(r, ty)


def _prmt(d, ty, a, b, c):
    mode = next((mm for mm in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16") if d.has(mm)), "")
    ua = np.asarray(a).astype(np.uint64)
    ub = np.asarray(b).astype(np.uint64)
    src = ua | (ub << np.uint64(32))
    sel = np.asarray(c).astype(np.uint64)
    src, sel = np.broadcast_arrays(src, sel)

    def byte(k):
        return (src >> (np.asarray(k).astype(np.uint64) * np.uint64(8))) & np.uint64(0xFF)

    out = np.zeros(src.shape, np.uint64)
    s = (sel & np.uint64(3)).astype(np.int64)
    for i in range(4):
        if mode == "":
            nib = (sel >> np.uint64(4 * i)) & np.uint64(0xF)
            v = byte(nib & np.uint64(7))
            v = np.where((nib & np.uint64(8)) != 0, np.where(v & np.uint64(0x80), 0xFF, 0), v)
        elif mode == "f4e":
            v = byte((s + i) % 8)
        elif mode == "b4e":
            v = byte((s - i) % 8)
        elif mode == "rc8":
            v = byte(s)
        elif mode == "ecl":
            v = byte(np.maximum(s, i))
        elif mode == "ecr":
            v = byte(np.minimum(s, i))
        else:  # rc16
            v = byte(((s & 1) * 2) + (i & 1))
        out |= v.astype(np.uint64) << np.uint64(8 * i)
    return out.astype(np.uint32)


def _lop3(d, ty, a, b, c, lut):
    lut = int(np.asarray(lut).flat[0]) & 0xFF
    a, b, c = (np.asarray(x).astype(np.uint32) for x in (a, b, c))
    out = np.zeros(np.broadcast(a, b, c).shape, np.uint32)
    for k in range(8):
        if lut >> k & 1:
            out |= (a if k & 4 else ~a) & (b if k & 2 else ~b) & (c if k & 1 else ~c)
    return out


def _shf(d, ty, a, b, n):
    n = np.asarray(n).astype(np.uint64)
    n = n & np.uint64(31) if d.has("wrap") else np.minimum(n, np.uint64(32))
    pair = np.asarray(a).astype(np.uint64) | (np.asarray(b).astype(np.uint64) << np.uint64(32))
    if d.has("l"):
        return ((pair << n) >> np.uint64(32)).astype(np.uint32)
    return ((pair >> n) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def _bytes(x, signed):
    x = np.asarray(x).astype(np.uint32)
    out = [((x >> np.uint32(8 * i)) & np.uint32(0xFF)).astype(np.int64) for i in range(4)]
    return [np.where(v >= 128, v - 256, v) if signed else v for v in out]


def _build_dp(d, inst, symbols):
    if len(d.types) != 2:
        raise Unsupported("dp4a/dp2a need .atype.btype")
    at, bt = d.types
    out_ty = T.s32 if (at.is_signed or bt.is_signed) else T.u32
    srcs = _srcs(inst, [at, bt, out_ty], symbols)
    put = writer(inst.operands[0], out_ty)
    two = d.family == "dp2a"
    high = d.has("hi")

    def run(m, idx):
        a, b, c = (s(m, idx) for s in srcs)
        bb = _bytes(b, bt.is_signed)
        if two:
            ua = np.asarray(a).astype(np.uint32)
            halves = [((ua >> np.uint32(16 * i)) & np.uint32(0xFFFF)).astype(np.int64)
                      for i in range(2)]
            if at.is_signed:
                halves = [np.where(h >= 32768, h - 65536, h) for h in halves]
            base = 2 if high else 0
            acc = halves[0] * bb[base] + halves[1] * bb[base + 1]
        else:
            ab = _bytes(a, at.is_signed)
            acc = sum(x * y for x, y in zip(ab, bb))
        total = (np.asarray(c).astype(np.int64) + acc) & 0xFFFFFFFF
        put(m, idx, as_type(total.astype(np.uint64), out_ty))
    return run


def _popc(d, ty, a):
    ub = bits_of(a, ty).astype(np.uint64)
    count = np.zeros(ub.shape, np.uint32)
    for i in range(ty.bits):
        count += ((ub >> np.uint64(i)) & np.uint64(1)).astype(np.uint32)
    return count


def _clz(d, ty, a):
    ub = bits_of(a, ty).astype(np.uint64)
    out = np.full(ub.shape, ty.bits, np.uint32)
    for i in range(ty.bits):
        out = np.where((ub >> np.uint64(i)) & np.uint64(1), ty.bits - 1 - i, out)
    return out.astype(np.uint32)


def _brev(d, ty, a):
    ub = bits_of(a, ty).astype(np.uint64)
    out = np.zeros(ub.shape, np.uint64)
    for i in range(ty.bits):
        out |= ((ub >> np.uint64(i)) & np.uint64(1)) << np.uint64(ty.bits - 1 - i)
    return as_type(out, ty)


def _bfind(d, ty, a):
    ub = bits_of(a, ty).astype(np.uint64)
    if ty.is_signed:
        neg = (ub >> np.uint64(ty.bits - 1)) & np.uint64(1)
        ub = np.where(neg == 1, ~ub & np.uint64((1 << ty.bits) - 1 if ty.bits < 64 else 2**64 - 1),
                      ub)
    out = np.full(ub.shape, 0xFFFFFFFF, np.int64)
    for i in range(ty.bits):
        out = np.where((ub >> np.uint64(i)) & np.uint64(1), i, out)
    if d.has("shiftamt"):
        out = np.where(out == 0xFFFFFFFF, out, ty.bits - 1 - out)
    return out.astype(np.uint32)


def _logic(op):
    def fn(d, ty, a, b):
        return op(np.asarray(a), np.asarray(b))
    return fn


def _not(d, ty, a):
    return ~np.asarray(a)


def _cnot(d, ty, a):
    return (np.asarray(a) == 0).astype(np.asarray(a).dtype)


def _minmax(fn):
    def f(d, ty, a, b):
        return fn(np.asarray(a), np.asarray(b))
    return f


def _abs(d, ty, a):
    return np.abs(np.asarray(a))


def _neg(d, ty, a):
    return -np.asarray(a)


def _sad(d, ty, a, b, c):
    a, b = np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)
    return (np.asarray(c) + np.abs(a - b).astype(np.asarray(c).dtype))


def _mul24(d, ty, a, b):
    a24 = bits_of(a, ty).astype(np.int64) & 0xFFFFFF
    b24 = bits_of(b, ty).astype(np.int64) & 0xFFFFFF
    if ty.is_signed:
        a24 = np.where(a24 >= 1 << 23, a24 - (1 << 24), a24)
        b24 = np.where(b24 >= 1 << 23, b24 - (1 << 24), b24)
    p = (a24 * b24).view(np.uint64)
    r = (p >> np.uint64(16)) if d.has("hi") else p
    return as_type(r & np.uint64(0xFFFFFFFF), ty)


def _mad24(d, ty, a, b, c):
    return np.asarray(_mul24(d, ty, a, b)) + c


def _szext(d, ty, a, n):
    n = np.asarray(n).astype(np.int64)
    n = n & 31 if d.has("wrap") else np.minimum(n, 32)
    ua = bits_of(a, ty).astype(np.uint64)
    mask = (np.uint64(1) << n.astype(np.uint64)) - np.uint64(1)
    low = ua & mask
    if ty.is_signed:
        sign = (n > 0) & (((ua >> np.maximum(n - 1, 0).astype(np.uint64)) & np.uint64(1)) == 1)
        low = np.where(sign & (n < 32), low | (~mask & np.uint64(0xFFFFFFFF)), low)
    return as_type(np.where(n >= 32, ua, low), ty)


def _bmsk(d, ty, a, b):
    a = np.asarray(a).astype(np.int64)
    b = np.asarray(b).astype(np.int64)
    if d.has("wrap"):
        a, b = a & 31, b & 31
    else:
        a, b = np.minimum(a, 32), np.minimum(b, 32)
    ones = np.where(b >= 32, 2**32 - 1, (1 << np.minimum(b, 31)) - 1)
    return ((ones << np.minimum(a, 32)) & 0xFFFFFFFF).astype(np.uint32) * (a < 32)


FAMILIES = {
    "add": _simple(_add, 2), "sub": _simple(_sub, 2),
    "addc": _carry_op("addc"), "subc": _carry_op("subc"),
    "mul": _build_mul, "mad": _build_mad, "madc": _build_mad,
    "div": _simple(_div, 2), "rem": _simple(_rem, 2),
    "shl": _simple(_shift("shl"), 2, _shift_types), "shr": _simple(_shift("shr"), 2, _shift_types),
    "bfe": _simple(_bfe, 3, lambda t: [t, T.u32, T.u32]),
    "bfi": _simple(_bfi, 4, lambda t: [t, t, T.u32, T.u32]),
    "prmt": _simple(_prmt, 3, lambda t: [T.b32] * 3),
    "lop3": _simple(_lop3, 4, lambda t: [T.b32] * 4),
    "shf": _simple(_shf, 3, lambda t: [T.b32, T.b32, T.u32]),
    "dp4a": _build_dp, "dp2a": _build_dp,
    "popc": _simple(_popc, 1, None, lambda t: T.u32),
    "clz": _simple(_clz, 1, None, lambda t: T.u32),
    "brev": _simple(_brev, 1),
    "bfind": _simple(_bfind, 1, None, lambda t: T.u32),
    "and": _simple(_logic(np.bitwise_and), 2), "or": _simple(_logic(np.bitwise_or), 2),
    "xor": _simple(_logic(np.bitwise_xor), 2), "not": _simple(_not, 1),
    "cnot": _simple(_cnot, 1),
    "min": _simple(_minmax(np.minimum), 2), "max": _simple(_minmax(np.maximum), 2),
    "abs": _simple(_abs, 1), "neg": _simple(_neg, 1),
    "sad": _simple(_sad, 3),
    "mul24": _simple(_mul24, 2), "mad24": _simple(_mad24, 3),
    "szext": _simple(_szext, 2, lambda t: [t, T.u32]),
    "bmsk": _simple(_bmsk, 2, lambda t: [T.u32, T.u32]),
}

#: Families whose ``.cc`` form (and plain add/sub) go through the carry path.
CARRY_FORMS = {"add": _carry_op("add"), "sub": _carry_op("sub")}
