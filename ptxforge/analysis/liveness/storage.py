"""How the liveness modules store register sets and per-class numbers.

Register sets are Python ints used as bitsets over a register index (:func:`mask_of`,
:func:`bits_of`).  Both cost time in proportion to the set's size plus, for sparse sets, the
highest bit's position in machine words (never one Python step per possible bit), so that a
block-level set of a few values stays cheap in a kernel with many registers.  Every per-class
array is in the fixed order of :data:`CLASS_NAMES`; ``CLASS_POS`` maps a class name to its
position, ``CLASS_UNITS`` gives its width in 32-bit general-register units (0 for predicates,
which are a separate file).
"""

from __future__ import annotations

from collections import deque
from itertools import compress, repeat
from typing import Iterable

from ptxforge.ptx.types import REG_CLASSES

__all__ = [
    "CLASS_NAMES",
    "CLASS_POS",
    "CLASS_UNITS",
    "N_CLASSES",
    "PRED_POS",
    "TO_DIGITS",
    "bits_of",
    "mask_of",
]

#: Register class names in the fixed order used by every per-class array.
CLASS_NAMES: tuple[str, ...] = tuple(c.name for c in REG_CLASSES)
N_CLASSES = len(REG_CLASSES)
CLASS_POS = {c.name: k for k, c in enumerate(REG_CLASSES)}
CLASS_UNITS = tuple(0 if c.is_pred else c.units for c in REG_CLASSES)
PRED_POS = CLASS_POS["pred"]
TO_DIGITS = bytes.maketrans(b"\x00\x01", b"01")  # one byte per bit -> base-2 digits
_FROM_DIGITS = bytes.maketrans(b"01", b"\x00\x01")
_FEW = 24  # up to this many bits, shifts beat the one-byte-per-bit buffer


def mask_of(indices: Iterable[int], nbits: int = 0) -> int:
    """A bitset (Python int) with the given bit indices set (``nbits`` is only a size hint).

    Example::

        >>> mask_of([0, 3], 8), mask_of([], 8)
        (9, 0)
    """
    idx = indices if isinstance(indices, (list, tuple)) else list(indices)
    if len(idx) <= _FEW:
        x = 0
        for i in idx:
            x |= 1 << i
        return x
    lo, hi = min(idx), max(idx)
    buf = bytearray(hi - lo + 1)  # one byte per bit of [lo, hi], then read as base-2 digits
    deque(map(buf.__setitem__, [i - lo for i in idx] if lo else idx, repeat(1)), maxlen=0)
    return int(buf[::-1].translate(TO_DIGITS), 2) << lo


def bits_of(x: int) -> list[int]:
    """The set bit indices of a non-negative int, ascending.

    Example::

        >>> bits_of(9), bits_of(1 << 70)
        ([0, 3], [70])
    """
    if not x:
        return []
    if x.bit_count() <= _FEW:  # sparse: peel the top bit off, one word-sized step per bit
        out = []
        while x:
            b = x.bit_length() - 1
            out.append(b)
            x ^= 1 << b
        out.reverse()
        return out
    digits = bin(x).encode()[:1:-1].translate(_FROM_DIGITS)  # lowest bit first
    return list(compress(range(len(digits)), digits))
