"""Each thread's value of a register that is not affine: the integer ops run per thread.

When an address goes through an operation that is no polynomial of the thread index
(``tid.x >> 3``, ``tid.x & 7``, ``(tid.x / 4) % 8``, an ``xor`` swizzle ...), it is still a
function of the thread index alone; :class:`LaneEvaluator` computes it for every thread of the
block (x fastest), with every uniform symbol at 0 (block 0, the first loop iteration: the
same assumption the affine figures make), with the register's type width and signedness.
What comes from memory, from ``selp`` or a predicate, or from a register written more than
once with a non-affine value, is left to :mod:`ptxforge.analysis.affine`'s reason.

Example::

    >>> from ptxforge.ptx.parse import parse
    >>> from ptxforge.analysis.address_eval import AddressEvaluator
    >>> k = parse('''.version 8.0
    ... .target sm_80
    ... .address_size 64
    ... .visible .entry k()
    ... {
    ...     .reg .b32 %r<3>;
    ...     mov.u32 %r1, %tid.x;
    ...     shr.u32 %r2, %r1, 3;
    ...     ret;
    ... }''').kernel("k")
    >>> lanes = LaneEvaluator(AddressEvaluator(k, (32, 1, 1)))
    >>> lanes.register(k.instructions[1].operands[0])[6:10]
    [0, 0, 1, 1]
"""

from __future__ import annotations

import operator
import re
from typing import TYPE_CHECKING

from ptxforge.ptx import ir

from .affine import THREAD_SYMBOLS, Affine, NotAffine
from .warp_access import warps

if TYPE_CHECKING:  # the evaluator asks this module back for warp-uniform predicates
    from .address_eval import AddressEvaluator

__all__ = ["LaneEvaluator", "warp_uniform_predicate"]

_TYPE = re.compile(r"^([bsu])(8|16|32|64)$")


def _wrap(value: int, bits: int, signed: bool) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if signed and value >> (bits - 1) else value


def _div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _rem(a: int, b: int) -> int:
    return a - b * _div(a, b)


def _divide(op):
    def run(a: int, b: int):
        return None if b == 0 else op(a, b)
    return run


#: The integer ops run per thread, by family: (operand count, function of the operands,
#: already read with the source type's sign; None for a value it cannot give).
_OPS = {
    "mov": (1, lambda a: a), "cvt": (1, lambda a: a), "cvta": (1, lambda a: a),
    "not": (1, lambda a: ~a), "neg": (1, lambda a: -a), "abs": (1, abs),
    "add": (2, lambda a, b: a + b), "sub": (2, lambda a, b: a - b),
    "mul": (2, lambda a, b: a * b), "mul24": (2, lambda a, b: a * b),
    "and": (2, lambda a, b: a & b), "or": (2, lambda a, b: a | b),
    "xor": (2, lambda a, b: a ^ b), "shl": (2, lambda a, b: a << min(b, 64)),
    "shr": (2, lambda a, b: a >> min(b, 64)), "min": (2, min), "max": (2, max),
    "div": (2, _divide(_div)), "rem": (2, _divide(_rem)),
    "mad": (3, lambda a, b, c: a * b + c), "mad24": (3, lambda a, b, c: a * b + c),
}


class LaneEvaluator:
    """Per-thread values of registers (lists in thread order, x fastest), or NotAffine."""

    def __init__(self, ev: AddressEvaluator) -> None:
        self.ev = ev
        self.threads = [t for w in warps(ev.block) for t in w]
        self.n = len(self.threads)
        self._memo: dict = {}

    def per_warp(self, values: list) -> list:
        """``values`` (one per thread) split into the warps of the block."""
        return [values[i:i + 32] for i in range(0, self.n, 32)]

    def address(self, address: ir.Address, at: int | None = None):
        """Each thread's value of a memory operand of instruction ``at``, or NotAffine."""
        if address.base is None:
            return [address.offset] * self.n
        base = self.operand(address.base, at)
        if isinstance(base, NotAffine):
            return base
        return [b + address.offset for b in base]

    def operand(self, operand, at: int | None = None):
        """Each thread's value of an operand read by instruction ``at``, or NotAffine."""
        if isinstance(operand, ir.Register):
            return self.register(operand, at)
        value = self.ev.operand_value(operand, at)
        return self._from_affine(value) if isinstance(value, Affine) else value

    def register(self, reg: ir.Register, at: int | None = None):
        """Each thread's value of ``reg`` read by instruction ``at``, or NotAffine (see the
        module docstring)."""
        defs = self.ev.reach.reaching(at, reg.name)
        key = (reg.name, defs)
        got = self._memo.get(key)
        if got is None:
            value = self.ev.register_value(reg, at)
            if isinstance(value, Affine):
                got = self._from_affine(value)
            elif len(defs) == 1:
                self._memo[key] = NotAffine(reason=f"{reg.name} depends on itself")
                got = self._define(defs[0], value)
            else:
                got = value
            self._memo[key] = got
        return got

    def _from_affine(self, value: Affine):
        coeff = {s: 0 for s in THREAD_SYMBOLS}
        for mono, c in value.thread_part().items():
            if len(mono) != 1:
                return NotAffine(reason="a thread index's stride depends on a parameter")
            coeff[mono[0]] += c
        base, cx, cy, cz = value.offset(), coeff["tid.x"], coeff["tid.y"], coeff["tid.z"]
        return [base + cx * x + cy * y + cz * z for x, y, z in self.threads]

    def _define(self, index: int, why: NotAffine):
        """The values instruction ``index`` writes, by its integer op, or ``why``."""
        inst = self.ev.insts[index]
        fam, types = inst.op.family, inst.op.types
        if inst.op.info is not None and inst.op.info.memory is not None:
            return why
        kinds = [_TYPE.match(t) for t in types]
        if not types or not all(kinds) or inst.op.has("hi", "cc", "sat"):
            return why
        dest = kinds[0]
        assert dest is not None
        src = kinds[-1]
        assert src is not None
        bits = int(dest.group(2)) * (2 if inst.op.has("wide") else 1)
        signed_src = src.group(1) == "s"
        srcs = []
        for operand in inst.operands[1:]:
            vals = self.operand(operand, index)
            if isinstance(vals, NotAffine):
                return vals
            srcs.append([_wrap(v, int(src.group(2)), signed_src) for v in vals])
        out = self._apply(fam, inst, srcs)
        if out is None:
            return why
        return [_wrap(v, bits, dest.group(1) == "s") for v in out]

    def _apply(self, fam: str, inst: ir.Instruction, srcs: list):
        """The op on per-thread sources; None when it is not one this evaluator runs."""
        arity, fn = _OPS.get(fam, (0, None))
        if fn is None or len(srcs) != arity:
            return None
        out = [fn(*args) for args in zip(*srcs)]
        return None if any(v is None for v in out) else out


#: ``setp`` comparisons on integers (the unsigned ones read their operands unsigned).
_CMP = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
        "gt": operator.gt, "ge": operator.ge, "lo": operator.lt, "ls": operator.le,
        "hi": operator.gt, "hs": operator.ge}


class _ExactLanes(LaneEvaluator):
    """Per-thread values that hold in every block and every iteration: a value with a uniform
    symbol (block index, a parameter not given a value, a loop-carried term) is refused."""

    def register(self, reg: ir.Register, at: int | None = None):
        """Each thread's value of ``reg`` at ``at``: from its affine form when that names
        thread indices only, else by running its one write per thread, else NotAffine."""
        defs = self.ev.reach.reaching(at, reg.name)
        key = (reg.name, defs)
        got = self._memo.get(key)
        if got is None:
            value = self.ev.register_value(reg, at)
            why = NotAffine(reason=f"{reg.name} is not known before launch")
            if isinstance(value, Affine) and value.symbols() <= set(THREAD_SYMBOLS):
                got = self._from_affine(value)
            elif len(defs) == 1:
                self._memo[key] = NotAffine(reason=f"{reg.name} depends on itself")
                got = self._define(defs[0], why)
            else:
                got = why
            self._memo[key] = got
        return got

    def _from_affine(self, value: Affine):
        if not value.symbols() <= set(THREAD_SYMBOLS):
            return NotAffine(reason="a uniform value not known before launch")
        return super()._from_affine(value)


def warp_uniform_predicate(ev: AddressEvaluator, index: int) -> bool:
    """True when the integer ``setp`` at ``index`` gives one answer in each warp of the block,
    its operands computed exactly for every thread (from thread indices, constants and
    parameters given a value only): a peeled loop's remainder test
    ``(((N - 1 - tid.x) >> 5) + 1) & 3`` with N known.

    Example: for ``setp.lt.u32 %p1, %r1, 64`` with ``%r1 = tid.x`` and a block of 128, True."""
    inst = ev.insts[index]
    kind = _TYPE.match(inst.op.types[-1]) if inst.op.types else None
    cmp = _CMP.get(inst.op.parts[0]) if inst.op.parts else None
    if kind is None or cmp is None or inst.ndefs != 1 or len(inst.operands) != 3 \
            or inst.guard is not None:
        return False
    if ev.exact_lanes is None:
        ev.exact_lanes = _ExactLanes(ev)
    lanes = ev.exact_lanes
    assert isinstance(lanes, _ExactLanes)
    bits, signed = int(kind.group(2)), kind.group(1) == "s"
    sides = []
    for operand in inst.operands[1:]:
        vals = lanes.operand(operand, index)
        if isinstance(vals, NotAffine):
            return False
        sides.append([_wrap(v, bits, signed) for v in vals])
    answers = [cmp(a, b) for a, b in zip(*sides)]
    return all(len(set(w)) == 1 for w in lanes.per_warp(answers))
