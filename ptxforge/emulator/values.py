"""Typed views of register bits: PTX types to NumPy dtypes, truncation and extension rules.

Registers hold raw bits in unsigned arrays as wide as their declaration (predicates: bool).
An instruction reads a register as its own type: a wider register is truncated to the low
bits, and a write into a wider register is sign-extended for signed integer types and
zero-extended otherwise (the PTX ISA's rules for operand size exceeding the instruction type).

Example::

    >>> import numpy as np
    >>> from ptxforge.ptx import types as T
    >>> from ptxforge.emulator.values import to_bits, from_bits
    >>> to_bits(np.array([-1], np.int16), T.s16, 32)
    array([4294967295], dtype=uint32)
    >>> from_bits(np.array([0x3f800000], np.uint32), T.f32)
    array([1.], dtype=float32)
"""

from __future__ import annotations

import functools

import numpy as np

from ptxforge.ptx.types import PtxType

__all__ = ["UINT", "SINT", "dtype_of", "to_bits", "from_bits", "immediate", "spread",
           "type_of_token"]

UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
SINT = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
_FLOAT = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def spread(value, shape) -> np.ndarray:
    """``value`` (a scalar, or one value per thread) as an array of ``shape``, read only:
    ``np.broadcast_to``, except that an array of that shape already is returned as it is (its
    checks cost more than most instructions on a warp).  Callers never write into it.

    Example::

        >>> spread(3, (2,)).tolist(), spread(np.arange(2), (2,)).tolist()
        ([3, 3], [0, 1])
    """
    if type(value) is np.ndarray and value.shape == shape:
        return value
    return np.broadcast_to(value, shape)


def dtype_of(ty: PtxType):
    """The NumPy dtype an instruction of type ``ty`` computes in (bf16 and packed: raw bits)."""
    if ty.is_pred:
        return np.bool_
    if ty.name in _FLOAT:
        return _FLOAT[ty.name]
    if ty.is_signed:
        return SINT[ty.bits]
    return UINT[ty.bits]


def from_bits(bits: np.ndarray, ty: PtxType) -> np.ndarray:
    """Register bits (any unsigned width) read as ``ty``: truncated or widened, then viewed."""
    pred, want, dt = _reading(ty)
    if pred:
        return bits.astype(bool)
    if bits.dtype != want:
        bits = bits.astype(want)
    return bits.view(dt)


@functools.lru_cache(maxsize=None)
def _reading(ty: PtxType) -> tuple:
    """``(is a predicate, the unsigned dtype of its width, its dtype)``: asked on every
    register read, worked out once per type."""
    if ty.is_pred:
        return True, None, np.bool_
    return False, np.dtype(UINT[ty.bits]), np.dtype(dtype_of(ty))


def to_bits(values, ty: PtxType, reg_bits: int) -> np.ndarray:
    """Values of type ``ty`` as the bits of a ``reg_bits``-wide register (extension rules)."""
    vals = np.asarray(values)
    dt = dtype_of(ty)
    if vals.dtype != dt:
        vals = vals.astype(dt)
    bits = vals.view(UINT[ty.bits])
    if reg_bits == ty.bits:
        return bits
    if reg_bits > ty.bits and ty.is_signed:
        return vals.astype(SINT[reg_bits]).view(UINT[reg_bits])
    return bits.astype(UINT[reg_bits])


def immediate(value, ty: PtxType):
    """A literal as a 0-d array of ``ty`` (ints wrap modulo 2**bits; floats round)."""
    if ty.is_pred:
        return np.array(bool(value))
    dt = dtype_of(ty)
    if ty.is_float and ty.name in _FLOAT:
        return np.array(value, np.float64).astype(dt)
    if isinstance(value, float) and not ty.is_float:
        if value != int(value):
            raise ValueError(f"float literal {value!r} for an integer type {ty}")
        value = int(value)
    bits = ty.bits
    return np.array(int(value) % (1 << bits), UINT[bits]).view(dt) if bits in UINT \
        else np.array(value)


_TYPE_TOKENS = {"pred", "b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8",
                "s16", "s32", "s64", "f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32"}


def type_of_token(token: str):
    """The PtxType named by an opcode token, or None when the token is not a type."""
    if token in _TYPE_TOKENS and token != "tf32":
        return PtxType.get(token)
    return None
