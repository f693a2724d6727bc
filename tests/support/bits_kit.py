"""Helpers shared by the bit-op builder tests: the caller's line and file:line (what a
BuildError must name) and a register holding a small value."""

from __future__ import annotations

import sys


def line() -> int:
    """The caller's line number."""
    return sys._getframe(1).f_lineno


def where(n: int) -> str:
    """``file:n`` in the caller's file, as the builder's errors spell a user's line."""
    return f"{sys._getframe(1).f_code.co_filename}:{n}"


def val(kb, ty, v=3):
    """A register of type ``ty`` holding a small value."""
    return kb.mov(float(v) if ty.is_float else v, type=ty)
