"""Calls and predicates: register costs that are not a value in the kernel's own body.

* **Calls.**  A ``call`` that ptxas does not inline (``vprintf``, ``__assertfail``, a
  ``.noinline`` function, recursion, a function pointer) follows the calling convention: the
  caller's values live across the call go to callee-saved registers, arguments and results
  to R4 onwards, and the kernel's count is the maximum over its call graph.  Measured with
  whole-program ptxas 13.5 on sm_80: every corpus kernel with a call gets at least
  :data:`CALL_FLOOR` registers (call_indirect 24, sobel_fnptr 26, call_chain 30).
* **Predicates** live in their own file of 7 (P0..P6) and do not count, except when more
  than 7 are live at once: the excess is kept in general registers.

Example::

    >>> from ptxforge.ptx import ir
    >>> has_call(ir.Kernel("k", body=(ir.Instruction("call", (ir.Symbol("f"),)),)))
    True
"""

from __future__ import annotations

# measured with ptxas; see ptxforge.arch.ptxas_model
from ptxforge.arch.ptxas_model import CALL_FLOOR, PREDICATE_FILE
from ptxforge.ptx import ir

__all__ = ["CALL_FLOOR", "PREDICATE_FILE", "call_targets", "has_call"]


def call_targets(kernel: ir.Kernel) -> tuple[str, ...]:
    """Names of the functions ``kernel`` calls (sorted; ``"<indirect>"`` for a pointer)."""
    names = set()
    for inst in kernel.instructions:
        if inst.family != "call":
            continue
        target = next((op for op in inst.operands if isinstance(op, (ir.Symbol, ir.Register))),
                      None)
        names.add(target.name if isinstance(target, ir.Symbol) else "<indirect>")
    return tuple(sorted(names))


def has_call(kernel: ir.Kernel) -> bool:
    """Whether ``kernel`` has a ``call`` instruction."""
    return any(inst.family == "call" for inst in kernel.instructions)
