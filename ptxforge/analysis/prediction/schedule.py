"""Scheduling: ptxas issues independent loads early to hide their latency.

A load's result is live from the load to its last use; ptxas moves loads up, as far as their
address operands allow, so that several are in flight at once (in the corpus SASS, four
guarded ``LDG.E`` of a transpose tile issue back to back before the first ``STS``; an
unrolled stencil's seven ``LDS`` issue before the first ``FFMA``).  Every hoisted load widens
its live range, which is what raises the count above the PTX order's.

:func:`hoist_loads` moves each load up within its basic block to just after the last
instruction it depends on (the definition of an address register, of its guard, or any
instruction writing or reading its destination), never across a barrier, a fence, an atomic,
a store or a call, and at most ``window`` instructions (:data:`WINDOW`: no bound).

ptxas schedules this way only while it has registers to spare: the model
(:func:`~.model.predict_registers`) lets the loads rise only below the kernel's occupancy
budget (the most registers that keep the most warps resident), and caps the rise there.

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

__all__ = ["WINDOW", "hoist_loads", "is_load"]

#: How far (instructions) a load may move up; None: to its dependence.  Chosen on the
#: training split (4, 8, 16 and no bound were tried, each capped at the occupancy budget;
#: docs/prediction.md).
WINDOW = None
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


def _is_reread(inst, reads: set) -> bool:
    """A :func:`~.view.sass_view` re-read (``mov`` of a constant into a fresh register) that
    the load reads."""
    return (isinstance(inst, ir.Instruction) and inst.family == "mov" and inst.ndefs == 1
            and isinstance(inst.operands[1], ir.Immediate)
            and all("%remat" in r.name and r.name in reads for r in inst.defs))


def hoist_loads(kernel: ir.Kernel, window: int | None = WINDOW) -> tuple[ir.Kernel, int]:
    """``kernel`` with loads moved up (module docstring; ``window=None``: no bound) and how
    many moved."""
    window = len(kernel.body or ()) if window is None else window
    out: list = []
    block_start = 0  # index in ``out`` where the current basic block starts
    moved = 0
    for stmt in kernel.body or ():
        if not isinstance(stmt, ir.Instruction):
            out.append(stmt)
            if isinstance(stmt, ir.Label):
                block_start = len(out)
            continue
        if is_load(stmt):
            reads = {r.name for r in stmt.uses}
            writes = {r.name for r in stmt.defs}
            # the view's re-reads of a constant (a parameter pointer) travel with the load
            carried = []
            while len(out) > block_start and _is_reread(out[-1], reads):
                carried.insert(0, out.pop())
            pos = len(out)
            lo = max(block_start, len(out) - window)
            while pos > lo:
                prev = out[pos - 1]
                if not isinstance(prev, ir.Instruction) or prev.family in _FENCES:
                    break
                if any(r.name in reads or r.name in writes for r in prev.defs) or \
                        any(r.name in writes for r in prev.uses):
                    break
                pos -= 1
            if pos < len(out):
                moved += 1
            out[pos:pos] = carried + [stmt]
        else:
            out.append(stmt)
        if stmt.family in ("bra", "ret", "exit", "trap", "brx"):
            block_start = len(out)
    return attrs.evolve(kernel, body=tuple(out)), moved

