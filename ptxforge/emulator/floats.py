"""IEEE rounding for the interpreter: PTX's .rn/.rz/.rm/.rp on f32, f64, f16 and bf16, .ftz.

NumPy computes in round-to-nearest-even only.  The directed modes are recovered exactly from
error-free transformations: :func:`two_sum` and :func:`two_prod` give the rounding error of
an f64 sum or product, :func:`round_to_odd` folds it into the last bit, and an f64 value
rounded to odd rounds to any narrower format (f32, f16, bf16) in any mode exactly as the
infinitely precise value would (53 >= 24 + 2 bits).  f32 add, sub, mul, div and sqrt done in
f64 and rounded once to f32 are correctly rounded in round-to-nearest (53 >= 2*24 + 2).

Example::

    >>> import numpy as np
    >>> from ptxforge.emulator import floats
    >>> a, b = np.array([1.0], np.float64), np.array([2.0 ** -30], np.float64)
    >>> [float(floats.add(a, b, np.float32, m)[0]) for m in ("rn", "rz", "rp")]
    [1.0, 1.0, 1.0000001192092896]
"""

from __future__ import annotations

import numpy as np

from .fma64 import fma64

__all__ = [
    "MODES",
    "two_sum",
    "two_prod",
    "round_to_odd",
    "narrow",
    "directed",
    "add",
    "mul",
    "fma",
    "div",
    "sqrt",
    "flush",
    "f32_to_bf16_bits",
    "bf16_bits_to_f32",
]

MODES = ("rn", "rz", "rm", "rp")
_SPLIT = 134217729.0  # 2**27 + 1, Veltkamp's splitter for f64


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``s = fl(a + b)`` and the exact error ``e`` with ``a + b = s + e`` (Knuth)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, np.where(np.isfinite(s), e, 0.0)


def two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``p = fl(a * b)`` and the exact error ``e`` with ``a * b = p + e`` (Dekker)."""
    p = a * b

    def split(x):
        t = _SPLIT * x
        hi = t - (t - x)
        return hi, x - hi

    ah, al = split(a)
    bh, bl = split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, np.where(np.isfinite(p) & np.isfinite(e), e, 0.0)


def round_to_odd(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``s`` (f64, with exact error ``e``) rounded to odd: inexact results get an odd last bit."""
    even = (s.view(np.uint64) & np.uint64(1)) == 0
    fix = (e != 0) & even
    if not fix.any():
        return s
    toward = np.where(e > 0, np.inf, -np.inf)
    return np.where(fix, np.nextafter(s, toward), s)


def directed(r: np.ndarray, err_sign: np.ndarray, mode: str) -> np.ndarray:
    """Correct a round-to-nearest result ``r`` to ``mode`` given the sign of (exact - r)."""
    if mode == "rn":
        return r
    inf = np.array(np.inf, r.dtype)
    if mode == "rp":
        return np.where(err_sign > 0, np.nextafter(r, inf), r)
    if mode == "rm":
        return np.where(err_sign < 0, np.nextafter(r, -inf), r)
    # rz: step toward zero where rounding went away from zero
    away = ((r > 0) & (err_sign < 0)) | ((r < 0) & (err_sign > 0))
    return np.where(away, np.nextafter(r, np.zeros_like(r)), r)


def narrow(x: np.ndarray, dtype, mode: str = "rn") -> np.ndarray:
    """Round f64 values (exact, or rounded to odd) to ``dtype`` (f32 or f16) in ``mode``."""
    with np.errstate(all="ignore"):
        r = x.astype(dtype)
        if mode == "rn":
            return r
        diff = x - r.astype(np.float64)  # sign of (exact - r); inf - inf is nan: no step
        sign = np.where(np.isnan(diff), 0.0, np.sign(diff))
        return directed(r, sign, mode).astype(dtype)


def _finish(s: np.ndarray, e: np.ndarray, dtype, mode: str) -> np.ndarray:
    """An f64 result ``s`` with exact error ``e``, delivered as ``dtype`` in ``mode``."""
    if dtype == np.float64:
        return directed(s, np.sign(e), mode)
    return narrow(round_to_odd(s, e), dtype, mode)


def add(a: np.ndarray, b: np.ndarray, dtype, mode: str = "rn") -> np.ndarray:
    """``a + b`` (operands already in f64) rounded to ``dtype`` in ``mode``."""
    with np.errstate(all="ignore"):
        if mode == "rn":
            return (a + b).astype(dtype)
        return _finish(*two_sum(a, b), dtype, mode)


def mul(a: np.ndarray, b: np.ndarray, dtype, mode: str = "rn") -> np.ndarray:
    """``a * b`` rounded to ``dtype`` in ``mode`` (f32 and narrower: exact in f64)."""
    with np.errstate(all="ignore"):
        if dtype == np.float64:
            if mode == "rn":
                return a * b
            return _finish(*two_prod(a, b), dtype, mode)
        return narrow(a * b, dtype, mode)


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, dtype, mode: str = "rn") -> np.ndarray:
    """``a * b + c`` with a single rounding to ``dtype`` in ``mode``."""
    with np.errstate(all="ignore"):
        if dtype != np.float64:
            p = a * b  # exact: 2 x 24 bits fit in 53
            return _finish(*two_sum(p, c), dtype, mode)
        return fma64(a, b, c, mode)


def div(a: np.ndarray, b: np.ndarray, dtype, mode: str = "rn") -> np.ndarray:
    """``a / b`` rounded to ``dtype`` in ``mode``."""
    with np.errstate(all="ignore"):
        q = a / b
        if mode == "rn":
            return q.astype(dtype)
        ph, pl = two_prod(q, b)
        rem = (a - ph) - pl  # sign of a - q*b, exact sign
        e = np.where(np.isfinite(q) & (b != 0), np.sign(rem) * np.sign(b), 0.0)
        return _finish(q, e, dtype, mode)


def sqrt(a: np.ndarray, dtype, mode: str = "rn") -> np.ndarray:
    """``sqrt(a)`` rounded to ``dtype`` in ``mode``."""
    with np.errstate(all="ignore"):
        r = np.sqrt(a)
        if mode == "rn":
            return r.astype(dtype)
        ph, pl = two_prod(r, r)
        e = np.where(np.isfinite(r) & (r > 0), np.sign((a - ph) - pl), 0.0)
        return _finish(r, e, dtype, mode)


def flush(x: np.ndarray) -> np.ndarray:
    """``.ftz``: f32 subnormals become zero of the same sign."""
    tiny = np.abs(x) < np.float32(np.finfo(np.float32).tiny)
    if not tiny.any():
        return x
    return np.where(tiny & (x != 0), np.copysign(np.zeros_like(x), x), x)


def f32_to_bf16_bits(x: np.ndarray, mode: str = "rn") -> np.ndarray:
    """The bf16 bit patterns (uint16) of f32 values (f64 given: rounded to odd first)."""
    if x.dtype == np.float64:
        x32 = narrow(x, np.float32, "rz")
        odd = (x32.astype(np.float64) != x) & ((x32.view(np.uint32) & 1) == 0)
        bits = x32.view(np.uint32) | odd.astype(np.uint32)
    else:
        bits = x.astype(np.float32).view(np.uint32)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    low = bits & 0xFFFF
    hi = bits >> 16
    neg = (bits >> 31) == 1
    if mode == "rn":
        up = (low > 0x8000) | ((low == 0x8000) & ((hi & 1) == 1))
    elif mode == "rz":
        up = np.zeros(bits.shape, bool)
    elif mode == "rp":
        up = (low != 0) & ~neg
    else:
        up = (low != 0) & neg
    out = (hi + up.astype(np.uint32)).astype(np.uint32)
    return np.where(nan, 0x7FFF, out).astype(np.uint16)


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """f32 values of bf16 bit patterns (exact)."""
    return (bits.astype(np.uint32) << 16).view(np.float32)
