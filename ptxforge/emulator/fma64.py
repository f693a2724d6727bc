"""Exact ``fma.f64`` on whole arrays: error-free transformations, scaled so nothing overflows.

``a * b + c`` is held exactly as three doubles.  When every magnitude (``a``, ``b``, ``c``,
``a * b``) lies between 2**-900 and 2**900, the common case, Dekker's two-product gives
``a * b = uh + ul`` directly and nothing can overflow or land among the subnormals.
Otherwise ``a`` and ``b`` are scaled by powers of two to [0.5, 1) and ``c`` by the same power
(or, when one side is more than 2**200 below the other, replaced by a tiny stand-in of its
sign, which rounds the same way).  Two-sums distil the three terms into ``top + next +
rest``: ``top`` is the round-to-nearest sum and the sign of the remainder steers the directed
modes, both certified by a bound on ``rest`` (further passes for the uncertain elements).
Results in the subnormal range are rounded at their absolute spacing by adding 2**-1022
(whose last bit is that spacing).  An element the certificate cannot settle (in the tests,
only products of two subnormals far below the smallest double) is computed with
:class:`fractions.Fraction`.

Example::

    >>> import numpy as np
    >>> from ptxforge.emulator.fma64 import fma64
    >>> a, b, c = np.array([2.0 ** 1000]), np.array([2.0 ** 24]), np.array([-1.5 * 2.0 ** 1023])
    >>> float(fma64(a, b, c)[0])
    4.49423283715579e+307
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["fma64"]

_SPLIT = 134217729.0  # 2**27 + 1, Veltkamp's splitter
_TINY = 2.0 ** -300   # stands in for a term more than 2**200 below the other one
_FAR = 200
_MIN_NORMAL = 2.0 ** -1022
_MAX = np.finfo(np.float64).max
_HIGH, _LOW = 2.0 ** 900, 2.0 ** -900


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, b):
    """Exact product ``p + e`` of values whose split and partial products neither overflow nor
    underflow (below 2**900 in magnitude with a product above 2**-900, or scaled to [0.5, 1))."""
    p = a * b
    t = _SPLIT * a
    ah = t - (t - a)
    t = _SPLIT * b
    bh = t - (t - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


_EXP = np.uint64(0x7FF0000000000000)
_FRAC = np.uint64(0x000FFFFFFFFFFFFF)


def _half_spacing(top, toward):
    """Half the distance from normal doubles ``top`` to their neighbour in the direction of
    ``toward``'s sign (a quarter of the last place below a power of two); 0 for a zero."""
    bits = top.view(np.uint64)
    half = (bits & _EXP).view(np.float64) * 2.0 ** -53
    down = ((bits & _FRAC) == 0) & ((toward > 0) != (top > 0))
    return np.where(down, half * 0.5, half)


def _certify(t: list) -> tuple:
    """(top, next, ok) of an expansion whose last two-sum left ``t[-1] + t[-2]``."""
    top, nxt = t[-1], t[-2]
    bound = sum(np.abs(x) for x in t[:-2]) * (1 + 2.0 ** -40)
    ok = (bound == 0) | ((np.abs(nxt) > bound) & (np.abs(nxt) + bound < _half_spacing(top, nxt)))
    ok &= ((top != 0) | ((nxt == 0) & (bound == 0))) & np.isfinite(top)
    return top, nxt, ok


def _pass(t: list) -> list:
    t = list(t)
    for i in range(1, len(t)):
        t[i], t[i - 1] = _two_sum(t[i], t[i - 1])
    return t


def _distil(terms: list) -> tuple:
    """Round-to-nearest sum ``top`` of exact ``terms``, the sign of ``sum - top``, and
    whether both are certain (a bound on what the last two-sum left behind).

    Three terms ``[low, product, c]`` start with ``c + product``, its error plus ``low``, and
    the sum of the two leading parts, which settles nearly every element; the rest (and other
    term counts) take further passes of two-sums, only the uncertain elements."""
    if len(terms) == 3:
        low, high, c = terms
        sh, sl = _two_sum(high, c)
        th, tl = _two_sum(sl, low)
        r, e = _two_sum(sh, th)
        t = [tl, e, r]
    else:
        t = _pass(terms)
    top, nxt, ok = _certify(t)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        sub = [x[bad] for x in t]
        for _ in range(3):
            sub = _pass(sub)
            stop, snxt, sok = _certify(sub)
            if sok.all():
                break
        top, nxt, ok = top.copy(), nxt.copy(), ok.copy()
        top[bad], nxt[bad], ok[bad] = stop, snxt, sok
    return top, np.sign(nxt), ok


def _step(r, sign, mode: str):
    """Move a round-to-nearest ``r`` one place in ``mode`` given the sign of (exact - r)."""
    if mode == "rn":
        return r
    if mode == "rp":
        go = sign > 0
    elif mode == "rm":
        go = sign < 0
    else:
        go = ((r > 0) & (sign < 0)) | ((r < 0) & (sign > 0))
    return np.where(go, np.nextafter(r, np.where(sign > 0, np.inf, -np.inf)), r)


def _scaled_terms(a, b, c):
    """Terms whose sum times ``2**scale`` is ``a * b + c`` exactly, all far from overflow."""
    ma, ea = np.frexp(a)
    mb, eb = np.frexp(b)
    mc, ec = np.frexp(c)
    e = ea.astype(np.int64) + eb
    uh, ul = _two_prod(ma, mb)
    gap = np.where(c == 0, 0, ec - e)
    c_far = (gap > _FAR) | (uh == 0)  # the product is a sticky bit below c, or nothing
    p_sign = np.sign(uh)
    scale = np.where(c_far, ec, e)
    cs = np.where(c_far, mc, np.where(gap < -_FAR, np.sign(c) * _TINY,
                                      np.ldexp(c, -np.clip(e, -2000, 2000))))
    uh = np.where(c_far, p_sign * _TINY, uh)
    ul = np.where(c_far, 0.0, ul)
    return [ul, uh, cs], scale


def _round_scaled(terms, scale, mode: str):
    """``sum(terms) * 2**scale`` rounded to f64 in ``mode``; where the rounding was certain;
    where the exact sum is zero; and the sign of the exact sum."""
    r, sign, ok = _distil(terms)
    exact_zero = r == 0
    # a normal round-to-nearest result scales back exactly; step from it at its true spacing
    out = _step(np.ldexp(r, np.clip(scale, -3000, 3000)), sign, mode)
    tiny = np.abs(r) < np.ldexp(1.0, np.clip(-1022 - scale, -1100, 1100))
    if tiny.any():
        # below 2**-1022 the spacing is 2**-1074: add 2**-1022 (whose last bit is that
        # spacing), round the sum in its binade, take 2**-1022 away again
        big = np.where(r < 0, -1.0, 1.0) * np.ldexp(1.0, np.clip(-1022 - scale, -1100, 1100))
        rt, st, okt = _distil(terms + [big])
        sub = np.ldexp(_step(rt, st, mode) - big, np.clip(scale, -3000, 3000))
        out = np.where(tiny, sub, out)
        ok = np.where(tiny, okt, ok)
    # directed modes never round a finite result past the largest double toward infinity
    cap = {"rz": np.isinf(out), "rm": out == np.inf, "rp": out == -np.inf}.get(mode)
    if cap is not None:
        out = np.where(cap, np.copysign(_MAX, out), out)
    return out, ok, exact_zero, np.sign(r)


def _zero_sign(a, b, c, mode: str):
    """The signed zero IEEE gives ``a * b + c`` when the exact value is zero."""
    p = a * b
    zeros = (p == 0) & (c == 0)
    same = np.signbit(p) == np.signbit(c)
    neg = np.where(zeros & same, np.signbit(c), mode == "rm")
    return np.where(neg, -0.0, 0.0)


def _fraction(a: float, b: float, c: float, mode: str) -> float:
    q = Fraction(a) * Fraction(b) + Fraction(c)
    try:
        r = float(q)
    except OverflowError:
        r = float("inf") if q > 0 else float("-inf")
    if q == 0:
        return float(_zero_sign(np.array(a), np.array(b), np.array(c), mode))
    err = q - Fraction(r) if np.isfinite(r) else Fraction(0)
    r = float(_step(np.array([r]), np.array([float((err > 0) - (err < 0))]), mode)[0])
    if np.isinf(r) and mode != "rn" and (mode == "rz" or (mode == "rm") == (r > 0)):
        r = float(np.copysign(_MAX, r))
    return r


def _unscaled(a, b, c, mode: str) -> tuple:
    """Finite inputs whose product and sum stay far from overflow and subnormals."""
    uh, ul = _two_prod(a, b)
    r, sign, ok = _distil([ul, uh, c])
    out = _step(r, sign, mode)
    zero = r == 0
    if zero.any():
        out = np.where(zero, _zero_sign(a, b, c, mode), out)
    return out, ok


def _scaled(a, b, c, mode: str) -> tuple:
    """Any finite inputs: scaled by powers of two, rounded at the result's true spacing."""
    terms, scale = _scaled_terms(a, b, c)
    out, ok, exact_zero, sign = _round_scaled(terms, scale, mode)
    if (out == 0).any():  # an exact zero takes IEEE's sign rule; an underflow keeps its own
        out = np.where(exact_zero, _zero_sign(a, b, c, mode),
                       np.where(out == 0, np.copysign(0.0, sign), out))
    return out, ok


def fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: str = "rn") -> np.ndarray:
    """``a * b + c`` on f64 arrays with one rounding in ``mode`` (rn, rz, rm, rp), exact for
    every input: overflowing products, subnormals, infinities, NaN and signed zeros."""
    a, b, c = np.broadcast_arrays(*(np.asarray(x, np.float64) for x in (a, b, c)))
    with np.errstate(all="ignore"):
        # most inputs need no scaling: |a|, |b|, |c|, |a * b| below 2**900, |a * b| above
        # 2**-900, c zero or above it; then nothing overflows or lands among the subnormals
        # (an infinity or NaN fails these comparisons too)
        p = np.abs(a * b)
        ac = np.abs(c)
        fast = (p > _LOW) & (p < _HIGH) & (np.maximum(np.abs(a), np.abs(b)) < _HIGH) \
            & (ac < _HIGH) & ((ac > _LOW) | (c == 0))
        if fast.all():
            out, ok = _unscaled(a, b, c, mode)
            unsure = ~ok
        else:
            finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
            # a finite product plus an infinite c is c; otherwise IEEE's a * b + c is exact
            out = np.where(np.isfinite(a) & np.isfinite(b), c, a * b + c)
            ok = np.ones(a.shape, bool)
            for sel, run in ((fast, _unscaled), (finite & ~fast, _scaled)):
                if sel.any():
                    got, good = run(a[sel], b[sel], c[sel], mode)
                    out[sel], ok[sel] = got, good
            unsure = finite & ~ok
        for i in np.flatnonzero(unsure):
            out.flat[i] = _fraction(float(a.flat[i]), float(b.flat[i]), float(c.flat[i]), mode)
        return out
