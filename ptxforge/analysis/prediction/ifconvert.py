"""If-conversion: short guarded branches become predicated straight-line code, as ptxas does.

NVCC and Triton guard a short body with a branch over it (``@%p1 bra $L__BB0_2; ld ...; st
...; $L__BB0_2:``).  ptxas turns such a body into predicated instructions (``@!P0 LDG.E``) so
that it joins the block around it, and its scheduler then moves the body's loads together
with the rest (in the corpus SASS, the four guarded tile loads of ``transpose_smem`` issue
back to back as ``@!P2 LDG.E`` before the first ``STS``).

:func:`if_convert` rewrites every forward branch over at most :data:`MAX_BODY` unguarded
instructions (no label, branch, call, barrier or warp-collective among them) into those
instructions guarded by the negated branch condition; the label goes too when nothing else
branches to it.

Example::

    >>> from ptxforge.ptx import ir, types as T
    >>> p, a = ir.Register("%p1", T.pred), ir.Register("%r1", T.u32)
    >>> body = (ir.Instruction("bra.uni", (ir.LabelRef("L"),), guard=ir.Guard(p)),
    ...         ir.Instruction("ld.global.u32", (a, ir.Address(ir.Symbol("g"))), 1),
    ...         ir.Label("L"), ir.Instruction("ret"))
    >>> k, n = if_convert(ir.Kernel("k", body=body))
    >>> [(i.opcode, i.guard.negated if i.guard else None) for i in k.instructions], n
    ([('ld.global.u32', True), ('ret', None)], 1)
"""

from __future__ import annotations

from collections import Counter

import attrs

from ptxforge.ptx import ir
from ptxforge.ptx.opcodes import FAMILIES, Barrier, Call, Terminator, WarpCollective

__all__ = ["MAX_BODY", "if_convert"]

#: The longest body (instructions) that is predicated instead of branched over (chosen on
#: the training split: 0, 4, 8, 16 and 32 were tried; docs/prediction.md).
MAX_BODY = 8
#: What ends a predicable body: terminators, calls, barriers and warp collectives (predicating
#: one changes which lanes take part).
_STOP = frozenset(name for name, row in FAMILIES.items()
                  if any(row.has(t) for t in (Terminator, Call, Barrier, WarpCollective)))


def _target(inst: ir.Instruction) -> str | None:
    for op in inst.operands:
        if isinstance(op, ir.LabelRef):
            return op.name
    return None


def _guarded(inst: ir.Instruction, guard: ir.Guard) -> ir.Instruction:
    """``inst`` under ``guard`` (``attrs.evolve`` without its cost: one per body instruction)."""
    if type(inst) is not ir.Instruction:
        return attrs.evolve(inst, guard=guard)
    return ir.Instruction(inst.opcode, inst.operands, inst.ndefs, guard, inst.loc)


def if_convert(kernel: ir.Kernel, max_body: int = MAX_BODY) -> tuple[ir.Kernel, int]:
    """``kernel`` with short guarded branches predicated (module docstring) and how many."""
    body = list(kernel.body or ())
    insts = [s for s in body if isinstance(s, ir.Instruction)]
    if not any(s.guard is not None and s.family == "bra" for s in insts):
        return kernel, 0  # no guarded branch: nothing to predicate
    refs = Counter(t for s in insts for t in [_target(s)] if t is not None)
    out: list = []
    converted = 0
    i = 0
    while i < len(body):
        stmt = body[i]
        # a guarded bra with a label operand (the label looked up for those only)
        target = _target(stmt) if isinstance(stmt, ir.Instruction) \
            and stmt.guard is not None and stmt.family == "bra" else None
        if target is None:
            out.append(stmt)
            i += 1
            continue
        j, n = i + 1, 0
        while j < len(body) and n <= max_body:
            s = body[j]
            if isinstance(s, ir.Label) or (isinstance(s, ir.Instruction)
                                           and (s.family in _STOP or s.guard is not None)):
                break
            n += isinstance(s, ir.Instruction)
            j += 1
        if not (j < len(body) and isinstance(body[j], ir.Label) and body[j].name == target
                and 0 < n <= max_body):
            out.append(stmt)
            i += 1
            continue
        guard = ir.Guard(stmt.guard.register, not stmt.guard.negated)
        out.extend(_guarded(s, guard) if isinstance(s, ir.Instruction) else s
                   for s in body[i + 1:j])
        refs[target] -= 1
        if refs[target] > 0:
            out.append(body[j])
        converted += 1
        i = j + 1
    return attrs.evolve(kernel, body=tuple(out)), converted
