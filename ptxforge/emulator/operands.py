"""Decoding one instruction for the interpreter: its opcode tokens and operand accessors.

:class:`Decoded` splits a dotted opcode into family, modifiers and types; :func:`reader` and
:func:`writer` turn an IR operand into closures that read or write it for a set of threads.
The op families (:mod:`.ops_int`, :mod:`.ops_float`, :mod:`.ops_mem`, :mod:`.ops_warp`)
build their executors from these.

Example::

    >>> from ptxforge.emulator.operands import Decoded
    >>> d = Decoded.of("cvt.rn.f32.s32")
    >>> d.family, d.mods, [t.name for t in d.types]
    ('cvt', ('rn',), ['f32', 's32'])
"""

from __future__ import annotations

from typing import Callable

import attrs
import numpy as np

from ptxforge.ptx import ir
from ptxforge.ptx.opcodes import Opcode, opcode_of
from ptxforge.ptx.types import PtxType

from .memory import EmulationError
from .values import dtype_of, from_bits, immediate, to_bits, type_of_token

__all__ = ["Decoded", "Unsupported", "reader", "writer", "address", "where", "reg_bits"]


class Unsupported(Exception):
    """Raised by a decoder for a form it does not implement (turned into EmulationError)."""


_decoded: dict = {}


@attrs.frozen(slots=True, kw_only=True)
class Decoded:
    """An opcode split into ``family``, modifier tokens (``mods``) and types as
    :class:`~ptxforge.ptx.types.PtxType` values (``types``), over the IR's parsed opcode
    (:class:`ptxforge.ptx.opcodes.Opcode`, kept as ``op``: the family's row and traits)."""

    family: str
    mods: tuple
    types: tuple
    op: Opcode = attrs.field(eq=False, repr=False)

    @classmethod
    def of(cls, opcode: str) -> "Decoded":
        """The decoded form of a dotted opcode (computed once per opcode text)."""
        d = _decoded.get(opcode)
        if d is None:
            op = opcode_of(opcode)
            mods, types = [], []
            for tok in op.parts:
                ty = type_of_token(tok)
                if ty is not None:
                    types.append(ty)
                elif "::" not in tok:  # cache hints (L1::evict_last) change nothing here
                    mods.append(tok)
            d = _decoded[opcode] = cls(family=op.family, mods=tuple(mods), types=tuple(types),
                                       op=op)
        return d

    def has_trait(self, trait) -> bool:
        """Does the opcode's family have ``trait`` (:mod:`ptxforge.ptx.opcodes`)?"""
        return self.op.has_trait(trait)

    def has(self, *names: str) -> bool:
        """True when any of ``names`` is a modifier."""
        return any(n in self.mods for n in names)

    @property
    def type(self) -> PtxType:
        if not self.types:
            raise Unsupported("no type suffix")
        return self.types[-1]

    def rounding(self, default: str = "rn") -> str:
        """The float rounding modifier (rn/rz/rm/rp), else ``default``."""
        for m in ("rn", "rz", "rm", "rp"):
            if m in self.mods:
                return m
        return default


def reg_bits(reg: ir.Register) -> int:
    """How many bits a register holds (1 for predicates)."""
    return reg.type.reg_class.bits


def where(inst: ir.Instruction, line: "int | None" = None) -> str:
    """``file:line: opcode`` for messages (the builder's Python line, the .loc, or the PTX line)."""
    if inst.loc is not None and inst.loc.known:
        at = str(inst.loc)
    elif line is not None:
        at = f"<ptx>:{line}"
    else:
        at = "<ptx>"
    return f"{at}: {inst.opcode}"


Reader = Callable[..., np.ndarray]


def reader(op, ty: PtxType, symbols: dict) -> Reader:
    """A closure ``f(m, idx)`` giving operand ``op`` as ``ty`` for threads ``idx``."""
    if isinstance(op, ir.Register):
        name = op.name
        if ty.is_pred:
            return lambda m, idx: m.regs[name][idx].astype(bool)
        return lambda m, idx: from_bits(m.regs[name][idx], ty)
    if isinstance(op, ir.Negated):
        inner = reader(op.operand, ty, symbols)
        return lambda m, idx: ~inner(m, idx)
    if isinstance(op, ir.Immediate):
        try:
            value = immediate(op.value, ty)
        except (ValueError, OverflowError) as exc:
            raise Unsupported(f"literal {op.text or op.value!r}: {exc}") from None
        return lambda m, idx: value
    if isinstance(op, ir.SpecialReg):
        name = op.name
        dt = dtype_of(ty)
        return lambda m, idx: m.special(name, idx).astype(dt)
    if isinstance(op, ir.Symbol):
        if op.name == "WARP_SZ":  # what warpSize compiles to
            size = immediate(32, ty)
            return lambda m, idx: size
        if op.name not in symbols:
            raise Unsupported(f"unknown symbol {op.name!r}")
        value = immediate(symbols[op.name][1], ty)
        return lambda m, idx: value
    raise Unsupported(f"operand {op!r}")


def writer(op, ty: PtxType):
    """A closure ``f(m, idx, values)`` storing ``values`` of type ``ty`` into operand ``op``."""
    if isinstance(op, ir.Raw) and op.text == "_":
        return lambda m, idx, values: None
    if not isinstance(op, ir.Register):
        raise Unsupported(f"destination {op!r}")
    name, bits = op.name, reg_bits(op)
    if bits == 1:
        def put_pred(m, idx, values):
            m.regs[name][idx] = np.asarray(values, bool)
        return put_pred
    if bits not in (16, 32, 64):
        raise Unsupported(f"{bits}-bit register {name}")

    def put(m, idx, values):
        m.regs[name][idx] = to_bits(values, ty, bits)  # a 0-d value broadcasts
    return put


def address(op, symbols: dict) -> Callable:
    """A closure ``f(m, idx)`` giving the uint64 addresses of a memory operand ``[base+off]``."""
    if not isinstance(op, ir.Address):
        raise Unsupported(f"memory operand {op!r}")
    off = np.uint64(op.offset % (1 << 64))
    base = op.base
    if isinstance(base, ir.Symbol):
        if base.name not in symbols:
            raise Unsupported(f"unknown symbol {base.name!r}")
        at = np.uint64((symbols[base.name][1] + op.offset) % (1 << 64))
        return lambda m, idx: np.full(len(idx), at, np.uint64)
    if isinstance(base, ir.Register):
        name = base.name
        return lambda m, idx: m.regs[name][idx].astype(np.uint64) + off
    if base is None:
        return lambda m, idx: np.full(len(idx), off, np.uint64)
    raise Unsupported(f"address base {base!r}")


def check(cond: bool, message: str) -> None:
    """Raise :class:`EmulationError` unless ``cond``."""
    if not cond:
        raise EmulationError(message)
