"""Labels that nothing names: Triton's ``$L__tmpN`` debug-line labels, which no branch targets.

ptxas schedules the code on both sides of such a label as one block, so the prediction's view
drops them before its other rules (model 10; docs/prediction.md, "Labels that nothing names
do not end a block").

Example::

    >>> from ptxforge.ptx import ir
    >>> body = (ir.Label("$L__tmp0"), ir.Label("L"), ir.Instruction("bra", (ir.LabelRef("L"),)))
    >>> [s.name for s in named_labels_only(body) if isinstance(s, ir.Label)]
    ['L']
"""

from __future__ import annotations

from ptxforge.ptx import ir

__all__ = ["named_labels", "named_labels_only"]


def named_labels(body) -> set:
    """The names of the labels in ``body`` that something names: a branch operand (or any
    label or symbol operand), or a directive's text (``.branchtargets``).  The others
    (Triton's ``$L__tmp`` debug-line labels) end no basic block in SASS (model 10).

    Example::

        >>> from ptxforge.ptx import ir
        >>> body = (ir.Label("$L__tmp0"), ir.Label("L"),
        ...         ir.Instruction("bra", (ir.LabelRef("L"),)))
        >>> sorted(named_labels(body))
        ['L']
    """
    if body is _LAST[0]:   # the view and the prediction's block length ask for one body
        return set(_LAST[1])
    named: set = set()
    texts = []
    add = named.add
    Instruction, naming, plain = ir.Instruction, (ir.LabelRef, ir.Symbol), _PLAIN
    for stmt in body:
        if type(stmt) is Instruction or isinstance(stmt, Instruction):
            for op in stmt.operands:
                if type(op) not in plain and isinstance(op, naming):
                    add(op.name)
        elif isinstance(stmt, ir.Directive):
            texts.append(stmt.text)
    if texts:
        joined = " ".join(texts)
        named.update(s.name for s in body if isinstance(s, ir.Label) and s.name in joined)
    if type(body) is tuple:   # immutable, and kept alive here: its identity is not reused
        _LAST[:] = [body, frozenset(named)]
    return named


#: Operand classes that are never a label or symbol (the fast path of :func:`named_labels`).
_PLAIN = frozenset({ir.Register, ir.Immediate, ir.Address, ir.SpecialReg, ir.Vector,
                    ir.Negated})
#: :func:`named_labels`' last ``[body, names]``.
_LAST: list = [None, frozenset()]


def named_labels_only(body: tuple) -> tuple:
    """``body`` without the labels that nothing names (:func:`named_labels`): ptxas schedules
    the code on both sides of such a label as one block (model 10).

    Example::

        >>> named_labels_only((ir.Label("$L__tmp3"), ir.Instruction("ret", ())))
        (Instruction(opcode='ret', operands=(), ndefs=0, guard=None, loc=None),)
    """
    named = named_labels(body)
    if all(s.name in named for s in body if isinstance(s, ir.Label)):
        return body
    return tuple(s for s in body if not isinstance(s, ir.Label) or s.name in named)
