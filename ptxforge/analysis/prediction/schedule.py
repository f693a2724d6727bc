"""Scheduling: ptxas issues independent loads early to hide their latency.

A load's result is live from the load to its last use; ptxas moves loads up, as far as their
address operands allow, so that several are in flight at once (in the corpus SASS, four
guarded ``LDG.E`` of a transpose tile issue back to back before the first ``STS``; an
unrolled stencil's seven ``LDS`` issue before the first ``FFMA``).  Every hoisted load widens
its live range, which is what raises the count above the PTX order's.

:func:`hoist_loads` moves each load up within its basic block to just after the last
instruction it depends on (the definition of an address register, of its guard, or any
instruction writing or reading its destination), never across a barrier, a fence, an atomic,
a store or a call, and at most ``window`` instructions.

Example::

    >>> from ptxforge.ptx import ir, types as T
    >>> a, b, x = (ir.Register(f"%r{i}", T.u32) for i in (1, 2, 3))
    >>> body = (ir.Instruction("add.u32", (x, x, x), 1),
    ...         ir.Instruction("ld.shared.u32", (a, ir.Address(ir.Symbol("s"))), 1),
    ...         ir.Instruction("ret"))
    >>> k, moved = hoist_loads(ir.Kernel("k", body=body))
    >>> [i.opcode for i in k.instructions], moved
    (['ld.shared.u32', 'add.u32', 'ret'], 1)
"""

from __future__ import annotations

import attrs

from ptxforge.ptx import ir

__all__ = ["hoist_loads", "is_load", "WINDOW"]

#: How far (instructions) a load may move up.  Chosen on the training split (0, 2, 4, 8 and
#: 16 were tried; see docs/prediction.md).
WINDOW = 4
#: The longest branch body (instructions) ptxas if-converts (predicates) in this model.
IF_CONVERT = 0
_BARRIERS = frozenset({"bar", "barrier", "call", "bra", "brx", "ret", "exit", "trap"})
_LOAD_FAMILIES = frozenset({"ld", "ldu", "tex", "tld4", "ldmatrix"})
_FENCES = frozenset({"bar", "barrier", "membar", "fence", "atom", "red", "st", "call", "cp",
                     "mbarrier", "wgmma", "stmatrix", "vote", "shfl", "match", "redux",
                     "bra", "ret", "exit", "trap", "brx"})


def is_load(inst: ir.Instruction) -> bool:
    """A memory load whose result ptxas may issue early (not ``ld.param``, not volatile)."""
    if inst.family not in _LOAD_FAMILIES or inst.ndefs == 0:
        return False
    op = inst.opcode
    return not op.startswith("ld.param") and ".volatile" not in op and ".acquire" not in op


def if_convertible(body, limit: int = IF_CONVERT) -> frozenset:
    """Indices in ``body`` of the guarded forward branches, and of their target labels, that
    ptxas if-converts: the branch skips at most ``limit`` instructions with no other label,
    branch, barrier or call between, and every branch to the label is such a branch."""
    index = {s.name: k for k, s in enumerate(body) if isinstance(s, ir.Label)}
    good: dict = {}
    bad: set = set()
    for k, stmt in enumerate(body):
        if not isinstance(stmt, ir.Instruction) or stmt.family != "bra":
            continue
        target = next((op.name for op in stmt.operands if isinstance(op, (ir.LabelRef,
                                                                          ir.Symbol))), None)
        end = index.get(target, -1)
        inner = body[k + 1:end] if end > k else ()
        ok = (stmt.guard is not None and end > k
              and len(inner) <= limit and all(isinstance(x, ir.Instruction)
                                               and x.family not in _BARRIERS for x in inner))
        (good.setdefault(target, []).append(k) if ok else bad.add(target))
    out = set()
    for target, branches in good.items():
        if target not in bad:
            out.update(branches)
            out.add(index[target])
    return frozenset(out)


def hoist_loads(kernel: ir.Kernel, window: int = WINDOW,
                if_convert: int = IF_CONVERT) -> tuple[ir.Kernel, int]:
    """``kernel`` with loads moved up (module docstring) and how many moved."""
    body = tuple(kernel.body or ())
    soft = if_convertible(body, if_convert) if if_convert else frozenset()
    soft_ids = {id(body[k]) for k in soft}
    out: list = []
    block_start = 0  # index in ``out`` where the current basic block starts
    moved = 0
    for at, stmt in enumerate(body):
        if not isinstance(stmt, ir.Instruction):
            out.append(stmt)
            if isinstance(stmt, ir.Label) and at not in soft:
                block_start = len(out)
            continue
        if is_load(stmt):
            reads = {r.name for r in stmt.uses}
            writes = {r.name for r in stmt.defs}
            pos = len(out)
            lo = max(block_start, len(out) - window)
            while pos > lo:
                prev = out[pos - 1]
                if isinstance(prev, ir.Label) or (isinstance(prev, ir.Instruction)
                                                  and prev.family == "bra"):
                    if id(prev) in soft_ids:
                        pos -= 1
                        continue
                    break
                if not isinstance(prev, ir.Instruction) or prev.family in _FENCES:
                    break
                if any(r.name in reads or r.name in writes for r in prev.defs) or \
                        any(r.name in writes for r in prev.uses):
                    break
                pos -= 1
            if pos < len(out):
                moved += 1
            out.insert(pos, stmt)
        else:
            out.append(stmt)
        if stmt.family in ("bra", "ret", "exit", "trap", "brx") and at not in soft:
            block_start = len(out)
    return attrs.evolve(kernel, body=tuple(out)), moved
