"""``fma64`` (exact f64 fma by error-free transformations) against an exact Fraction reference
on random, cancelling, subnormal, overflowing and special inputs, in every rounding mode."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ptxforge.emulator.fma64 import fma64

MAX = np.finfo(np.float64).max
# beyond the largest double by half its last place, round-to-nearest overflows
OVERFLOW = Fraction(MAX) + Fraction(2.0 ** 970)


def _pick(q: Fraction, lo: float, hi: float, mode: str) -> float:
    """The double ``q`` rounds to in ``mode``, given its neighbours ``lo < q < hi``."""
    if mode == "rm" or (mode == "rz" and q > 0):
        return lo
    if mode == "rp" or mode == "rz":
        return hi
    if np.isinf(hi):
        return hi if q >= OVERFLOW else lo
    if np.isinf(lo):
        return lo if q <= -OVERFLOW else hi
    dl, dh = q - Fraction(lo), Fraction(hi) - q
    if dl != dh:
        return lo if dl < dh else hi
    return lo if int(np.array(lo).view(np.uint64)) % 2 == 0 else hi


def reference(a: float, b: float, c: float, mode: str) -> float:
    """IEEE 754 fusedMultiplyAdd in ``mode``, by exact rationals."""
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        with np.errstate(all="ignore"):
            return c if np.isfinite(a) and np.isfinite(b) else a * b + c
    q = Fraction(a) * Fraction(b) + Fraction(c)
    if q == 0:
        p = a * b
        if p == 0 and c == 0 and np.signbit(p) == np.signbit(c):
            return c
        return -0.0 if mode == "rm" else 0.0
    try:
        x = float(q)
    except OverflowError:
        x = float(np.copysign(np.inf, float(q > 0) - 0.5))
    with np.errstate(over="ignore"):
        steps = (x, np.nextafter(x, np.inf), np.nextafter(x, -np.inf))
    near = sorted({float(v) for v in steps if np.isfinite(v)})
    if np.isfinite(x) and Fraction(x) == q:
        r = x
    else:
        lo = max((v for v in near if Fraction(v) < q), default=-np.inf)
        hi = min((v for v in near if Fraction(v) > q), default=np.inf)
        r = _pick(q, lo, hi, mode)
    if r == 0:
        r = float(np.copysign(0.0, float(q > 0) - 0.5))
    if np.isinf(r) and mode != "rn" and (mode == "rz" or (mode == "rm") == (r > 0)):
        r = float(np.copysign(MAX, r))
    return r


def _inputs(seed: int, n: int = 400):
    rng = np.random.default_rng(seed)
    wide = np.ldexp(rng.standard_normal((3, n)), rng.integers(-1080, 1024, (3, n)))
    a, b, c = wide
    k = n // 3  # c cancels most of a * b
    with np.errstate(over="ignore"):
        c[:k] = -(a[:k] * b[:k]) * (1 + rng.standard_normal(k) * 2.0 ** -rng.integers(1, 60, k))
    near = [rng.standard_normal(n) * 2.0 ** rng.integers(lo, lo + 120, n) for lo in (-60, -60, -120)]
    sub = np.ldexp(rng.standard_normal((3, n)), rng.integers(-1075, -1000, (3, n)))
    root = np.sqrt(2.0 ** -1022)  # products landing on the subnormal boundary
    edge = [root * rng.standard_normal(n), root * rng.standard_normal(n),
            2.0 ** -1022 * rng.standard_normal(n)]
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, MAX, -MAX, 2.0 ** -1074, -2.0 ** -1074,
                        2.0 ** -1022, 1.0, -1.0, 3.0, 2.0 ** 1000, 2.0 ** 24, -1.5 * 2.0 ** 1023])
    spec = rng.choice(special, (3, n))
    ints = rng.integers(-40, 40, (3, n)).astype(np.float64)
    return [np.concatenate(cols) for cols in zip(wide, near, sub, edge, spec, ints)]


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_fma64_matches_exact_rationals(mode):
    a, b, c = _inputs(25)
    got = fma64(a, b, c, mode)
    want = np.array([reference(x, y, z, mode) for x, y, z in zip(a, b, c)])
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    bad = np.flatnonzero(~same)
    assert not len(bad), [(a[i], b[i], c[i], got[i], want[i]) for i in bad[:5]]


def test_fma64_issue_cases():
    a = np.array([2.0 ** 1000, MAX, 2.0 ** 1000])
    b = np.array([2.0 ** 24, 2.0, 2.0 ** 24])
    c = np.array([-1.5 * 2.0 ** 1023, -MAX, -np.inf])
    assert fma64(a, b, c).tolist() == [2.0 ** 1022, MAX, -np.inf]
