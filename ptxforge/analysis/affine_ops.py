"""The PTX integer operations on :class:`~ptxforge.analysis.affine.Affine` values.

One function per opcode family (``HANDLERS``), each given the evaluator (for the block shape
and the state spaces it learnt), the instruction and its source values; it returns the
result, or None when the operation is no polynomial of its sources (the evaluator then makes
a uniform value of uniform sources, or NotAffine).  ``and``/``or`` are followed where they
provably act as a mask or an add: the bits a value can have are known from the block shape.

Example::

    >>> from ptxforge.analysis.affine_ops import HANDLERS
    >>> sorted(HANDLERS)[:4]
    ['add', 'and', 'cvt', 'cvta']
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ptxforge.ptx import ir

from .affine import THREAD_SYMBOLS, Affine, NotAffine, Value

if TYPE_CHECKING:
    from .address_eval import AddressEvaluator

__all__ = ["AXES", "HANDLERS", "is_int", "where"]

#: Thread-index axis names to the block dimension they index.
AXES = {"x": 0, "y": 1, "z": 2}

_INT_TYPE = re.compile(r"^[bsu](8|16|32|64)$")


def is_int(inst: ir.Instruction) -> bool:
    """True when every type of the opcode is an integer or bit type (``cvt.u64.u32``)."""
    return all(_INT_TYPE.match(t) for t in inst.op.types) and bool(inst.op.types)


def where(inst: ir.Instruction) -> str:
    """`` (line N)`` for an instruction with a source line, else empty."""
    loc = inst.loc
    return f" (line {loc.line})" if loc is not None and loc.line > 0 else ""


def _first_bad(srcs) -> NotAffine | None:
    return next((v for v in srcs if isinstance(v, NotAffine)), None)


def _mov(ev: AddressEvaluator, inst, srcs) -> Value | None:
    if len(srcs) != 1 or isinstance(inst.operands[1], ir.Vector):
        return None
    return srcs[0]


def _cvta(ev: AddressEvaluator, inst, srcs) -> Value | None:
    value = srcs[0]
    space = inst.op.space
    if isinstance(value, Affine) and space in ("global", "shared", "local"):
        for m, c in value.terms:
            if len(m) == 1 and c == 1 and m[0] not in THREAD_SYMBOLS:
                ev.term_space[m[0]] = space
    return value


def _add(ev: AddressEvaluator, inst, srcs) -> Value | None:
    if inst.op.has("cc", "sat") or len(srcs) != 2:
        return None
    return _first_bad(srcs) or srcs[0] + srcs[1]


def _sub(ev: AddressEvaluator, inst, srcs) -> Value | None:
    if inst.op.has("cc", "sat") or len(srcs) != 2:
        return None
    return _first_bad(srcs) or srcs[0] - srcs[1]


def _neg(ev: AddressEvaluator, inst, srcs) -> Value | None:
    return _first_bad(srcs) or srcs[0].scale(-1)


def _mul(ev: AddressEvaluator, inst, srcs) -> Value | None:
    if inst.op.has("hi") or len(srcs) != 2:
        return None
    return _first_bad(srcs) or srcs[0].times(srcs[1])


def _mad(ev: AddressEvaluator, inst, srcs) -> Value | None:
    if inst.op.has("hi", "cc", "sat") or len(srcs) != 3:
        return None
    bad = _first_bad(srcs)
    if bad is not None:
        return bad
    prod = srcs[0].times(srcs[1])
    return prod if isinstance(prod, NotAffine) else prod + srcs[2]


def _shl(ev: AddressEvaluator, inst, srcs) -> Value | None:
    bad = _first_bad(srcs)
    if bad is not None:
        return bad
    k = srcs[1].constant
    return None if k is None else srcs[0].scale(1 << k)


def _aligned_window(ev: AddressEvaluator, value: Affine, k: int) -> bool:
    """True when ``value`` = tid.x + c with c a multiple of 32, 2**k >= 32 and the block's x
    a multiple of 32: every warp's values lie in one 32-aligned window inside one 2**k block."""
    d = value.as_dict()
    rest = {m: c for m, c in d.items() if m not in ((), ("tid.x",))}
    return (d.get(("tid.x",)) == 1 and not any(s in THREAD_SYMBOLS for m in rest for s in m)
            and (1 << k) >= 32 and ev.block[0] % 32 == 0
            and all(c % 32 == 0 for c in rest.values()))


def _shr(ev: AddressEvaluator, inst, srcs) -> Value | None:
    """``x >> k``: uniform within a warp when x = tid.x + (a multiple of 32), k >= 5."""
    bad = _first_bad(srcs)
    if bad is not None:
        return bad
    k = srcs[1].constant
    if k is not None and not srcs[0].uniform and _aligned_window(ev, srcs[0], k):
        return Affine.symbol(inst.operands[0].name)
    return None


def _and(ev: AddressEvaluator, inst, srcs) -> Value | None:
    """``x & m``: x when m keeps every bit x can have, 0 when it keeps none; for
    m = 2**k - 1 (k >= 5) and x = tid.x + 32n, x - (a value uniform within the warp)."""
    bad = _first_bad(srcs)
    if bad is not None:
        return bad
    for x, m in ((srcs[0], srcs[1]), (srcs[1], srcs[0])):
        mask, bits = m.constant, _possible_bits(ev, x)
        if mask is not None and bits is not None and not x.uniform:
            if bits & ~mask == 0:
                return x
            if bits & mask == 0:
                return Affine.const(0)
    for x, m in ((srcs[0], srcs[1]), (srcs[1], srcs[0])):
        mask = m.constant
        if mask is None or x.uniform or mask & (mask + 1):
            continue
        k = mask.bit_length()
        if _aligned_window(ev, x, k):
            return Affine.symbol("tid.x") + Affine.symbol(inst.operands[0].name)
    return None


_ALL_BITS = (1 << 64) - 1


def _possible_bits(ev: AddressEvaluator, value: Affine) -> int | None:
    """The bits ``value`` can have, when its terms can never carry into each other (each
    term's possible bits disjoint from the others'), else None.  A thread index t of a block
    of size b gives c*t < c*b; a uniform symbol times c keeps c's trailing zero bits."""
    bits = 0
    for mono, c in value.terms:
        if c < 0:
            return None
        if not mono:
            term = c
        elif len(mono) == 1 and mono[0] in THREAD_SYMBOLS:
            top = c * (ev.block[AXES[mono[0][-1]]] - 1)
            term = ((1 << top.bit_length()) - 1) & ~((c & -c) - 1)
        else:
            term = _ALL_BITS & ~((c & -c) - 1)
        if bits & term:
            return None
        bits |= term
    return bits


def _or(ev: AddressEvaluator, inst, srcs) -> Value | None:
    """``x | y`` = x + y when no bit can be set in both (Triton's ``or`` of a block offset
    and the thread index)."""
    bad = _first_bad(srcs)
    if bad is not None:
        return bad
    a, b = _possible_bits(ev, srcs[0]), _possible_bits(ev, srcs[1])
    if a is not None and b is not None and not a & b:
        return srcs[0] + srcs[1]
    return None


#: The operations followed, by opcode family.
HANDLERS = {"mov": _mov, "cvta": _cvta, "cvt": _mov, "add": _add, "sub": _sub, "neg": _neg,
             "mul": _mul, "mul24": _mul, "mad": _mad, "mad24": _mad, "shl": _shl,
             "shr": _shr, "and": _and, "or": _or}
