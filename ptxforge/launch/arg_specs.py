"""Kernel arguments written as text (``ptxforge profile --arg NAME=VALUE --arg NAME=TYPE[N]``).

A spec names a parameter (its PTX name, or its position: ``0``, ``1``, ...) and gives either a
scalar (``n=4096``, ``alpha=0.5``, ``mask=0xff``) or an array (``x=f32[1024]``): N elements of
TYPE, zeros, or filled (``x=f32[1024]:iota`` 0, 1, 2, ...; ``x=u32[64]:7`` every element 7;
``x=f32[256]:random`` uniform in [0, 1) from a fixed seed, so two runs see the same data).
TYPE is one of f16, f32, f64, s8/s16/s32/s64 (or i8 ... i64), u8/u16/u32/u64.  Grid and block
shapes are written ``4``, ``4x2`` or ``4,2,1``.

Example::

    >>> parse_arg("x=f32[4]:iota")
    ('x', ArraySpec(dtype='float32', count=4, fill='iota'))
    >>> make_value(parse_arg("x=f32[4]:iota")[1]).tolist(), parse_arg("n=0x10")
    ([0.0, 1.0, 2.0, 3.0], ('n', 16))
    >>> parse_dims("16x16", "block")
    (16, 16, 1)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import attrs

from ptxforge.errors import LaunchError

__all__ = ["DTYPES", "ArraySpec", "bind_specs", "make_value", "parse_arg", "parse_dims"]

#: The element types an array spec may name, as NumPy dtypes.
DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64",
          **{f"{p}{b}": f"int{b}" for p in ("s", "i") for b in (8, 16, 32, 64)},
          **{f"u{b}": f"uint{b}" for b in (8, 16, 32, 64)}}

_ARRAY = re.compile(r"^([a-z]\d+)\[(\d+)\](?::(.+))?$")
_MAX_ELEMENTS = 1 << 26


@attrs.frozen(slots=True, kw_only=True)
class ArraySpec:
    """An array argument: ``count`` elements of NumPy ``dtype``, filled by ``fill`` (None:
    zeros; "iota"; "random"; or a number)."""

    dtype: str
    count: int
    fill: Any = None


def _number(text: str) -> int | float:
    try:
        return int(text, 0)
    except ValueError:
        return float(text)


def parse_arg(text: str) -> tuple:
    """``(name, value)`` of an ``--arg`` spec: value an int, a float or an :class:`ArraySpec`;
    a :class:`~ptxforge.errors.LaunchError` saying what was expected otherwise."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    expected = ("expected NAME=VALUE (a number) or NAME=TYPE[N] (an array, e.g. x=f32[1024], "
                "x=f32[1024]:iota)")
    if not sep or not name or not value:
        raise LaunchError(f"--arg {text!r}: {expected}")
    m = _ARRAY.match(value)
    if m:
        ty, count, fill = m.group(1), int(m.group(2)), m.group(3)
        if ty not in DTYPES:
            raise LaunchError(f"--arg {text!r}: unknown element type {ty!r}; expected one of "
                              f"{', '.join(sorted(DTYPES))}")
        if not 0 < count <= _MAX_ELEMENTS:
            raise LaunchError(f"--arg {text!r}: expected 1 .. {_MAX_ELEMENTS} elements, got "
                              f"{count}")
        if fill is not None and fill not in ("iota", "random"):
            try:
                fill = _number(fill)
            except ValueError:
                raise LaunchError(f"--arg {text!r}: expected a fill of iota, random or a "
                                  f"number after ':', got {fill!r}") from None
        return name, ArraySpec(dtype=DTYPES[ty], count=count, fill=fill)
    try:
        return name, _number(value)
    except ValueError:
        raise LaunchError(f"--arg {text!r}: {expected}, got {value!r}") from None


def parse_dims(text: str, what: str) -> tuple:
    """A grid or block shape ``4``, ``4x2`` or ``4,2,1`` as a 3-tuple."""
    parts = [p for p in re.split(r"[x,]", text.strip().lower())]
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        dims = ()
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise LaunchError(f"--{what} {text!r}: expected one to three positive integers such as "
                          "256, 16x16 or 4,2,1")
    return dims + (1,) * (3 - len(dims))


def make_value(value: Any) -> Any:
    """The argument a spec stands for: the number, or a fresh NumPy array."""
    if not isinstance(value, ArraySpec):
        return value
    import numpy as np

    dt = np.dtype(value.dtype)
    if value.fill is None:
        return np.zeros(value.count, dt)
    if value.fill == "iota":
        return np.arange(value.count).astype(dt)
    if value.fill == "random":
        rng = np.random.default_rng(0)
        if dt.kind == "f":
            return rng.random(value.count).astype(dt)
        hi = min(np.iinfo(dt).max, 1 << 16)
        return rng.integers(0, hi, value.count).astype(dt)
    return np.full(value.count, value.fill).astype(dt)


def bind_specs(kernel: str, params: Sequence, specs: Sequence[str]) -> dict:
    """Keyword arguments (parameter name -> value) for ``params`` from ``--arg`` texts; every
    parameter must be given once, by name or position."""
    names = [p.name for p in params]
    out: dict = {}
    for text in specs:
        name, value = parse_arg(text)
        if name.isdigit() and name not in names:
            pos = int(name)
            if pos >= len(names):
                raise LaunchError(f"--arg {text!r}: kernel {kernel!r} has {len(names)} "
                                  f"parameters (positions 0 .. {len(names) - 1})")
            name = names[pos]
        if name not in names:
            raise LaunchError(f"--arg {text!r}: kernel {kernel!r} has no parameter {name!r} "
                              f"(parameters: {', '.join(names) or 'none'})")
        if name in out:
            raise LaunchError(f"--arg {text!r}: parameter {name!r} is given twice")
        out[name] = make_value(value)
    missing = [f"{k} {p.name} ({p.type}{' pointer' if p.pointer else ''})"
               for k, p in enumerate(params) if p.name not in out]
    if missing:
        raise LaunchError(f"kernel {kernel!r} needs --arg for {', '.join(missing)}: give "
                          "--arg NAME=VALUE for a scalar, --arg NAME=TYPE[N] for an array (NAME "
                          "may be the position)")
    return out
