"""Operand checks shared by every KernelBuilder op: the user's source line, error messages,
immediates (range-checked after rounding to the type), register ownership and vector
alignment.

Nothing here holds builder state; :mod:`ptxforge.dsl.core` calls these with its own.
"""

from __future__ import annotations

import contextlib
import math
import re
import struct
import sys
from types import FrameType
from typing import Iterable, Optional

import attrs

from ptxforge.errors import BuildError, PtxTypeError
from ptxforge.ptx import ir
from ptxforge.ptx import types as T
from ptxforge.ptx.layout import natural_align

__all__ = [
    "caller_loc",
    "make_immediate",
    "half_bits",
    "fits",
    "type_error",
    "TypeOnly",
    "check_owned",
    "check_vector_alignment",
]

# Source files whose frames are skipped when finding the user's line.
_INTERNAL: set = {contextlib.__file__}


def _register_internal(path: str) -> None:
    """Mark a module file as builder-internal (its frames are not the user's line)."""
    _INTERNAL.add(path)


_register_internal(__file__)


def caller_loc() -> Optional[ir.SourceLoc]:
    """The first stack frame outside the builder modules, as a SourceLoc."""
    frame: Optional[FrameType] = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename in _INTERNAL:
        frame = frame.f_back
    if frame is None:
        return None
    return ir.SourceLoc(frame.f_code.co_filename, frame.f_lineno)


def _where(loc: Optional[ir.SourceLoc]) -> str:
    """`` at file:line`` or nothing."""
    return f" at {loc}" if loc is not None else ""


@attrs.frozen(slots=True, kw_only=True)
class TypeOnly:
    """A given type with no operand behind it (``type=``, a destination type), for messages."""

    type: T.PtxType
    what: str = "type"


def _describe(value) -> str:
    """How a given operand is named in an error message."""
    if isinstance(value, ir.Register):
        return f"{value.type.ptx} ({value.name})"
    if isinstance(value, TypeOnly):
        return f"{value.what} {value.type.ptx}"
    return f"{type(value).__name__} {value!r}"


def type_error(op: str, expected: str, given, loc) -> PtxTypeError:
    """A PtxTypeError naming the op, the expected and given types, and the user's line."""
    return PtxTypeError(f"{op}: expected {expected}, got {_describe(given)}{_where(loc)}")


def ty_reg(ty: T.PtxType, what: str = "type") -> TypeOnly:
    """Describe a bare type (no operand to name) in an error message."""
    return TypeOnly(type=ty, what=what)


def _expect_list(types: Iterable[T.PtxType]) -> str:
    """``.f32`` or ``one of .u32, .s32``."""
    names = [t.ptx for t in types]
    return names[0] if len(names) == 1 else "one of " + ", ".join(names)


_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_$]*|[_$%][A-Za-z0-9_$]+")


def _check_ident(name: str, what: str, loc) -> str:
    """Validate a PTX identifier (parameter, array or label name)."""
    if not isinstance(name, str) or not _IDENT.fullmatch(name):
        raise BuildError(f"{what} name {name!r} is not a PTX identifier{_where(loc)}")
    return name


def _int_range(ty: T.PtxType) -> tuple:
    """Inclusive range of Python ints accepted as an immediate of integer/bit type ``ty``."""
    bits = ty.bits
    if ty.is_signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if ty.is_bits:
        return -(1 << (bits - 1)), (1 << bits) - 1
    return 0, (1 << bits) - 1


def _out_of_range(op: str, value, ty: T.PtxType, loc) -> BuildError:
    """The error for a number that does not fit ``ty`` once rounded to it."""
    return BuildError(f"{op}: immediate {value!r} is out of range for {ty.ptx} (it rounds to "
                      f"infinity){_where(loc)}")


def _f32_round_to_odd(x: float) -> int:
    """The f32 bit pattern of ``x`` rounded to odd (so a second rounding is exact)."""
    bits = struct.unpack("<I", struct.pack("<f", x))[0]  # round to nearest even
    y = struct.unpack("<f", struct.pack("<I", bits))[0]
    if y == x or not math.isfinite(x):
        return bits
    if abs(y) > abs(x):  # rounded away from zero: step back towards zero
        bits -= 1
    return bits | 1


def half_bits(value, ty: T.PtxType, op: str, loc, shown: Optional[T.PtxType] = None) -> int:
    """The exact 16-bit pattern of a number as ``.f16``/``.bf16`` (round to nearest even);
    BuildError (naming ``shown``, default ``ty``) when a finite number rounds to infinity."""
    fvalue = float(value)
    shown = shown or ty
    try:
        if ty is T.f16:
            return struct.unpack("<H", struct.pack("<e", fvalue))[0]
        bits = _f32_round_to_odd(fvalue)
    except OverflowError:
        raise _out_of_range(op, value, shown, loc) from None
    if math.isnan(fvalue):
        return (bits >> 16) | 0x40  # keep it a quiet NaN
    bits += 0x7FFF + ((bits >> 16) & 1)
    out = (bits >> 16) & 0xFFFF
    if math.isfinite(fvalue) and out & 0x7F80 == 0x7F80:
        raise _out_of_range(op, value, shown, loc)
    return out


def make_immediate(value, ty: T.PtxType, op: str, loc) -> ir.Immediate:
    """A range-checked immediate of type ``ty`` (BuildError when it does not fit)."""
    if isinstance(value, bool) and not ty.is_pred:
        raise type_error(op, f"a {ty.ptx} register or a number (bools are not numbers here)",
                         value, loc)
    if ty.is_pred:
        if value not in (0, 1):
            raise BuildError(f"{op}: predicate immediate must be 0 or 1, got {value!r}{_where(loc)}")
        return ir.Immediate(int(value), ty)
    if ty.is_float:
        if ty.bits == 16 or ty.is_packed:
            raise BuildError(f"{op}: PTX has no {ty.ptx} immediates; make one with "
                             f"kb.mov({value!r}, type='{ty.name}'){_where(loc)}")
        if not isinstance(value, (int, float)):
            raise type_error(op, f"a {ty.ptx} register or a number", value, loc)
        try:
            fvalue = float(value)
            if ty.bits == 32:
                struct.pack("<f", fvalue)  # overflows only if it rounds to infinity
        except OverflowError:
            raise _out_of_range(op, value, ty, loc) from None
        return ir.Immediate(fvalue, ty)
    if isinstance(value, float):
        raise BuildError(f"{op}: float immediate {value!r} given where {ty.ptx} needs an integer"
                         f"{_where(loc)}")
    if not isinstance(value, int):
        raise type_error(op, f"a {ty.ptx} register or an int", value, loc)
    lo, hi = _int_range(ty)
    if not lo <= value <= hi:
        raise BuildError(f"{op}: immediate {value} is out of range for {ty.ptx} "
                         f"[{lo}, {hi}]{_negative_hint(op, value, ty)}{_where(loc)}")
    return ir.Immediate(value, ty)


_OTHER_WAY = {"add": "sub", "iadd": "isub", "sub": "add", "isub": "iadd",
              "shl": "shr", "ishl": "ishr", "shr": "shl", "ishr": "ishl"}


def _negative_hint(op: str, value: int, ty: T.PtxType) -> str:
    """What to write instead of a negative immediate on an unsigned type."""
    if value >= 0 or ty.is_signed:
        return ""
    other = _OTHER_WAY.get(op)
    if other is not None and op.lstrip("i") in ("add", "sub"):
        return f"; to {'subtract' if 'add' in op else 'add'}, use kb.{other}(x, {-value})"
    if other is not None:
        return f"; shift amounts are unsigned: shift the other way with kb.{other}(x, {-value})"
    return f"; for a signed value use type='s{ty.bits}'" if ty.bits >= 16 else ""


def fits(reg_t: T.PtxType, op_t: T.PtxType, relaxed: bool) -> bool:
    """Can a register of type ``reg_t`` be an operand of an instruction of type ``op_t``?

    Always for the same type, and for a ``.bN`` instruction any same-width non-predicate
    register; with ``relaxed`` (an explicit ``type=``) same-width integer/bit registers too.
    """
    if reg_t is op_t:
        return True
    if reg_t.is_pred or op_t.is_pred or reg_t.bits != op_t.bits:
        return False
    if op_t.is_bits and not reg_t.is_packed:
        return True
    return relaxed and not reg_t.is_float and not op_t.is_float


def check_owned(owned: dict, fname: str, op: str, operands: Iterable, loc) -> None:
    """Every register in ``operands`` must be one that this function's builder created
    (``owned`` maps name -> Register; identity, since registers compare by name and type)."""
    for operand in operands:
        for reg in ir.registers_in(operand):
            if owned.get(reg.name) is not reg:
                made = f" (made{_where(reg.loc)})" if reg.loc is not None else ""
                raise BuildError(f"{op}: register {reg.name} {reg.type.ptx}{made} belongs to "
                                 f"another kernel or function, not {fname}; registers cannot "
                                 f"cross functions (pass values as parameters){_where(loc)}")


def check_vector_alignment(op: str, vec: int, ety: T.PtxType, offset: int, array, loc) -> None:
    """A ``.vN`` access needs ``N * size`` alignment: of the declared ``array`` (if any) and of
    the byte ``offset``."""
    if vec == 1:
        return
    need = natural_align(ety, vec)
    if array is not None and array.align < need:
        raise BuildError(f"{op}: .v{vec}{ety.ptx} needs {need}-byte alignment, but {array.space} "
                         f"array {array.name} is declared with align {array.align}; declare it "
                         f"with align={need}{_where(loc)}")
    if offset % need:
        raise BuildError(f"{op}: .v{vec}{ety.ptx} needs {need}-byte alignment, but the offset "
                         f"{offset} is not a multiple of {need}{_where(loc)}")
