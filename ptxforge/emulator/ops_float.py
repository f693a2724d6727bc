"""Floating-point, comparison, selection and conversion instructions for the interpreter.

f32 and f64 arithmetic honours .rn/.rz/.rm/.rp (:mod:`.floats`), ``.ftz`` flushes f32
subnormal inputs and results, ``.sat`` clamps to [0, 1] (NaN becomes 0).  ``f16`` and the
packed ``f16x2``/``bf16``/``bf16x2`` types are computed per lane in f64 and rounded once.
The ``.approx`` transcendental forms (``ex2``, ``lg2``, ``sin``, ``cos``, ``rsqrt``,
``tanh``) are computed correctly rounded, which is within the ISA's stated error of the
hardware's answer, not bit-identical to it.  ``setp`` covers every comparison, the unordered
forms and the ``.and/.or/.xor`` combination; ``cvt`` covers every integer and float pair
with its rounding, saturation (float to integer always saturates; NaN gives 0) and ``.ftz``.

Example::

    >>> import numpy as np
    >>> from ptxforge.emulator.ops_float import convert
    >>> from ptxforge.ptx import types as T
    >>> convert(np.array([2.5, -2.5, 1e10], np.float32), T.s32, T.f32, "rni", False, False)
    array([         2,         -2, 2147483647], dtype=int32)
"""

from __future__ import annotations

import numpy as np

from ptxforge.ptx import types as T

from . import floats
from .operands import Unsupported, reader, writer
from .values import SINT, UINT, dtype_of, spread

__all__ = ["FAMILIES", "convert", "lanes_in", "lanes_out"]

_HALF = ("f16", "bf16", "f16x2", "bf16x2")


def lanes_in(values, ty) -> list:
    """The lanes of a float operand as f64 arrays (one lane unless packed)."""
    v = np.asarray(values)
    if ty.name == "f16":
        return [v.astype(np.float64)]
    if ty.name == "bf16":
        return [floats.bf16_bits_to_f32(v.view(np.uint16)).astype(np.float64)]
    if ty.name in ("f16x2", "bf16x2"):
        u = v.astype(np.uint32)
        halves = [(u & np.uint32(0xFFFF)).astype(np.uint16), (u >> np.uint32(16)).astype(np.uint16)]
        if ty.name == "f16x2":
            return [h.view(np.float16).astype(np.float64) for h in halves]
        return [floats.bf16_bits_to_f32(h).astype(np.float64) for h in halves]
    return [v.astype(np.float64)]


def _narrow_half(x64, base: str, mode: str) -> np.ndarray:
    """f64 (exact or rounded to odd) to the uint16 bits of f16 or bf16."""
    if base == "f16":
        return floats.narrow(x64, np.float16, mode).view(np.uint16)
    return floats.f32_to_bf16_bits(x64, mode)


def lanes_out(lanes, ty, mode: str = "rn", odd: bool = False):
    """f64 lane results (``odd``: already rounded to odd) as values of ``ty``."""
    if ty.name in ("f32", "f64"):
        return floats.narrow(lanes[0], dtype_of(ty), mode) if ty.name == "f32" else lanes[0]
    base = ty.name[:-2] if ty.name.endswith("x2") else ty.name
    bits = [_narrow_half(np.asarray(x, np.float64), base, mode) for x in lanes]
    if len(bits) == 1:
        return bits[0].view(np.float16) if base == "f16" else bits[0]
    return bits[0].astype(np.uint32) | (bits[1].astype(np.uint32) << np.uint32(16))


def _ftz(d, ty, arrays):
    if d.has("ftz") and ty is T.f32:
        return [floats.flush(np.asarray(a, np.float32)) for a in arrays]
    return arrays


def _sat(d, x):
    if d.has("sat"):
        x = np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0))
    return x


def _arith(kind: str, nsrc: int):
    """add/sub/mul/fma/mad/div/sqrt/rcp in any float type and rounding mode."""
    def build(d, inst, symbols):
        ty = d.type
        srcs = [reader(op, ty, symbols) for op in inst.operands[1:1 + nsrc]]
        put = writer(inst.operands[0], ty)
        mode = d.rounding()
        half = ty.name in _HALF
        target = np.float64 if ty is T.f64 else np.float32 if ty is T.f32 else np.float64

        def compute(args):
            if kind == "add":
                return floats.add(args[0], args[1], target, mode)
            if kind == "sub":
                return floats.add(args[0], -args[1], target, mode)
            if kind == "mul":
                return floats.mul(args[0], args[1], target, mode)
            if kind in ("fma", "mad"):
                return floats.fma(args[0], args[1], args[2], target, mode)
            if kind == "div":
                return floats.div(args[0], args[1], target, mode)
            if kind == "rcp":
                return floats.div(np.ones_like(args[0]), args[0], target, mode)
            return floats.sqrt(args[0], target, mode)

        def run(m, idx):
            vals = _ftz(d, ty, [spread(s(m, idx), idx.shape) for s in srcs])
            if half:
                lanes = list(zip(*[lanes_in(v, ty) for v in vals]))
                outs = [_sat(d, _half_op(kind, list(args))) for args in lanes]
                put(m, idx, lanes_out(outs, ty, mode, odd=True))
                return
            r = compute([np.asarray(v, np.float64) for v in vals])
            r = _sat(d, r).astype(dtype_of(ty))
            put(m, idx, _ftz(d, ty, [r])[0])
        return run
    return build


def _half_op(kind, args):
    """A half-precision lane op in f64, rounded to odd so the final narrowing rounds once."""
    with np.errstate(all="ignore"):
        if kind == "add":
            return floats.round_to_odd(*floats.two_sum(args[0], args[1]))
        if kind == "sub":
            return floats.round_to_odd(*floats.two_sum(args[0], -args[1]))
        if kind == "mul":
            return args[0] * args[1]  # 11 x 11 (8 x 8) bits: exact
        if kind in ("fma", "mad"):
            return floats.round_to_odd(*floats.two_sum(args[0] * args[1], args[2]))
        raise Unsupported(f"{kind} on half types")


def _unary(fn):
    def build(d, inst, symbols):
        ty = d.type
        src = reader(inst.operands[1], ty, symbols)
        put = writer(inst.operands[0], ty)

        def run(m, idx):
            v = _ftz(d, ty, [spread(src(m, idx), idx.shape)])[0]
            with np.errstate(all="ignore"):
                if ty.name in _HALF:
                    put(m, idx, lanes_out([fn(x) for x in lanes_in(v, ty)], ty))
                    return
                r = fn(np.asarray(v, np.float64))
                put(m, idx, _ftz(d, ty, [_sat(d, r).astype(dtype_of(ty))])[0])
        return run
    return build


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


def _minmax(pick):
    def build(d, inst, symbols):
        ty = d.type
        srcs = [reader(op, ty, symbols) for op in inst.operands[1:3]]
        put = writer(inst.operands[0], ty)

        def run(m, idx):
            a, b = (spread(s(m, idx), idx.shape) for s in srcs)
            a, b = _ftz(d, ty, [a, b])
            la, lb = lanes_in(a, ty), lanes_in(b, ty)
            outs = []
            for x, y in zip(la, lb):
                r = pick(x, y)  # fmin/fmax: a NaN operand yields the other
                if d.has("NaN"):
                    r = np.where(np.isnan(x) | np.isnan(y), np.nan, r)
                # -0 < +0 for min/max
                both0 = (x == 0) & (y == 0)
                if pick is np.fmin:
                    r = np.where(both0, np.where(np.signbit(x) | np.signbit(y), -0.0, 0.0), r)
                else:
                    r = np.where(both0, np.where(np.signbit(x) & np.signbit(y), -0.0, 0.0), r)
                outs.append(r)
            put(m, idx, lanes_out(outs, ty) if ty.name in _HALF else outs[0].astype(dtype_of(ty)))
        return run
    return build


_CMP = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal,
    "hi": np.greater, "hs": np.greater_equal,
}


def compare(cmp: str, a, b, ty) -> np.ndarray:
    """``a cmp b`` for ``ty`` (lo/ls/hi/hs unsigned; u-suffixed forms true on NaN)."""
    if cmp in ("lo", "ls", "hi", "hs") and not ty.is_float:
        a = np.asarray(a).astype(SINT[ty.bits] if ty.is_signed else UINT[ty.bits])
        a, b = a.view(UINT[ty.bits]), np.asarray(b).astype(a.dtype).view(UINT[ty.bits])
    if not ty.is_float:
        return _CMP[cmp](a, b)
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    nan = np.isnan(a) | np.isnan(b)
    if cmp == "num":
        return ~nan
    if cmp == "nan":
        return nan
    if cmp.endswith("u") and cmp[:-1] in _CMP:
        return _CMP[cmp[:-1]](a, b) | nan
    result = _CMP[cmp](a, b)
    return result & ~nan  # the ordered comparisons (ne too) are false on NaN


def _build_setp(d, inst, symbols):
    ty = d.type
    cmp = next((m for m in d.mods if m in _CMP or m in ("num", "nan")
                or (m.endswith("u") and m[:-1] in _CMP)), None)
    if cmp is None:
        raise Unsupported("setp without a comparison")
    bop = next((m for m in d.mods if m in ("and", "or", "xor")), None)
    dst = inst.operands[0]
    pair = None
    if hasattr(dst, "elements"):  # p|q
        dst, pair = dst.elements[0], dst.elements[1]
    put_p = writer(dst, T.pred)
    put_q = writer(pair, T.pred) if pair is not None else None
    a, b = (reader(op, ty, symbols) for op in inst.operands[1:3])
    c = reader(inst.operands[3], T.pred, symbols) if bop else None
    combine = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}.get(bop or "")

    def run(m, idx):
        av, bv = a(m, idx), b(m, idx)
        if ty.name in _HALF:
            av, bv = lanes_in(av, ty)[0], lanes_in(bv, ty)[0]
        elif d.has("ftz") and ty is T.f32:
            av, bv = _ftz(d, ty, [av, bv])
        t = spread(compare(cmp, av, bv, ty), idx.shape)
        p, q = t, ~t
        if combine is not None and c is not None:  # both set by a combining setp
            cv = c(m, idx)
            p, q = combine(p, cv), combine(q, cv)
        put_p(m, idx, p)
        if put_q is not None:
            put_q(m, idx, q)
    return run


def _build_selp(d, inst, symbols):
    ty = d.type
    a, b = (reader(op, ty, symbols) for op in inst.operands[1:3])
    c = reader(inst.operands[3], T.pred, symbols)
    put = writer(inst.operands[0], ty)

    def run(m, idx):
        put(m, idx, np.where(c(m, idx), a(m, idx), b(m, idx)))
    return run


_INT_ROUND = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}


def convert(v, dst, src, mode, sat, ftz) -> np.ndarray:
    """``cvt.mode.dst.src`` on values ``v`` of type ``src`` (see the module text)."""
    with np.errstate(all="ignore"):
        if src.is_float:
            x = lanes_in(v, src)[0] if src.name in _HALF else np.asarray(v, np.float64)
            if ftz and src is T.f32:
                x = floats.flush(x.astype(np.float32)).astype(np.float64)
            if dst.is_float:
                if mode in _INT_ROUND:
                    x = _INT_ROUND[mode](x)
                    mode = "rn"
                if sat:
                    x = _sat_values(x)
                r = lanes_out([x], dst, mode if mode in floats.MODES else "rn")
                if ftz and dst is T.f32:
                    r = floats.flush(np.asarray(r, np.float32))
                return r
            x = _INT_ROUND.get(mode, np.trunc)(x)
            lo, hi = _range(dst)
            x = np.where(np.isnan(x), 0, np.clip(x, lo, hi))
            return _exact_int(x, dst)
        iv = np.asarray(v).astype(SINT[src.bits] if src.is_signed else UINT[src.bits])
        if dst.is_float:
            x = iv.astype(np.float64)
            big = src.bits == 64
            if dst is T.f64 and not big:
                return x
            if big:
                # int64 -> f64 may round; redo exactly through Python ints for directed modes
                return _int64_to_float(iv, dst, mode)
            r = lanes_out([x], dst, mode if mode in floats.MODES else "rn")
            return _sat_values(r) if sat else r
        if sat:
            lo, hi = _range(dst)
            wide = iv.astype(np.int64) if iv.dtype != np.uint64 else iv
            if iv.dtype == np.uint64:
                out = np.where(iv > np.uint64(hi), np.uint64(hi), iv) if hi >= 0 else iv
                return out.astype(dtype_of(dst))
            return np.clip(wide, lo, hi).astype(dtype_of(dst))
        return iv.astype(dtype_of(dst))


def _sat_values(x):
    return np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0)).astype(np.asarray(x).dtype)


def _range(ty):
    if ty.is_signed:
        return -(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1
    return 0, (1 << ty.bits) - 1


def _exact_int(x, ty):
    """Clamped integral f64 values to ``ty`` without losing the top of the 64-bit range."""
    if ty.bits < 64:
        return x.astype(np.int64).astype(dtype_of(ty))
    out = np.empty(x.shape, dtype_of(ty))
    flat, o = x.ravel(), out.ravel()
    lo, hi = _range(ty)
    for i, val in enumerate(flat):
        o[i] = max(lo, min(hi, int(val)))
    return out


def _int64_to_float(iv, dst, mode):
    from fractions import Fraction

    out = np.empty(iv.shape, np.float64)
    for i, val in enumerate(iv.ravel()):
        q = Fraction(int(val))
        r = float(q)
        if mode in ("rz", "rm", "rp") and Fraction(r) != q:
            err = np.array([1.0 if q > Fraction(r) else -1.0])
            r = float(floats.directed(np.array([r]), err, mode)[0])
        out.ravel()[i] = r
    if dst is T.f64:
        return out
    return lanes_out([out], dst, mode if mode in floats.MODES else "rn")


def _build_cvt(d, inst, symbols):
    if len(d.types) != 2:
        raise Unsupported("cvt needs a destination and a source type")
    dst, src = d.types
    if dst.name in ("f16x2", "bf16x2"):
        return _build_cvt_pack(d, inst, symbols, dst, src)
    get = reader(inst.operands[1], src, symbols)
    put = writer(inst.operands[0], dst)
    mode = next((m for m in d.mods if m in floats.MODES or m in _INT_ROUND), "rn")
    if src.is_float and not dst.is_float and mode not in _INT_ROUND:
        mode = "rzi"
    sat, ftz = d.has("sat"), d.has("ftz")

    def run(m, idx):
        put(m, idx, spread(convert(get(m, idx), dst, src, mode, sat, ftz), idx.shape))
    return run


def _build_cvt_pack(d, inst, symbols, dst, src):
    """cvt.rn.f16x2.f32 d, a, b: a goes to the upper half, b to the lower."""
    a, b = (reader(op, src, symbols) for op in inst.operands[1:3])
    put = writer(inst.operands[0], dst)
    mode = d.rounding()
    relu = d.has("relu")

    def run(m, idx):
        hi, lo = (spread(np.asarray(f(m, idx), np.float64), idx.shape) for f in (a, b))
        if relu:
            hi, lo = np.maximum(hi, 0), np.maximum(lo, 0)
        put(m, idx, lanes_out([lo, hi], dst, mode))
    return run


def _build_testp(d, inst, symbols):
    ty = d.type
    get = reader(inst.operands[1], ty, symbols)
    put = writer(inst.operands[0], T.pred)
    kind = next(m for m in d.mods)
    tiny = np.finfo(dtype_of(ty)).tiny

    def run(m, idx):
        x = np.asarray(get(m, idx), np.float64)
        test = {"finite": np.isfinite(x), "infinite": np.isinf(x), "number": ~np.isnan(x),
                "notanumber": np.isnan(x),
                "normal": np.isfinite(x) & (np.abs(x) >= tiny),
                "subnormal": (x != 0) & (np.abs(x) < tiny)}[kind]
        put(m, idx, test)
    return run


def _build_copysign(d, inst, symbols):
    ty = d.type
    a, b = (reader(op, ty, symbols) for op in inst.operands[1:3])
    put = writer(inst.operands[0], ty)
    return lambda m, idx: put(m, idx, np.copysign(b(m, idx), a(m, idx)))


FAMILIES = {
    "add": _arith("add", 2), "sub": _arith("sub", 2), "mul": _arith("mul", 2),
    "fma": _arith("fma", 3), "mad": _arith("mad", 3), "div": _arith("div", 2),
    "rcp": _arith("rcp", 1), "sqrt": _arith("sqrt", 1),
    "rsqrt": _unary(_rsqrt), "ex2": _unary(np.exp2), "lg2": _unary(np.log2),
    "sin": _unary(np.sin), "cos": _unary(np.cos), "tanh": _unary(np.tanh),
    "abs": _unary(np.abs), "neg": _unary(np.negative),
    "min": _minmax(np.fmin), "max": _minmax(np.fmax),
    "copysign": _build_copysign, "testp": _build_testp,
}

#: Families taking any type (integers too): comparison, selection, conversion.
ANY_TYPE = {"setp": _build_setp, "selp": _build_selp, "cvt": _build_cvt}
