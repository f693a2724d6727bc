"""While loops and the escape hatch: ``kb.while_(cond_fn)`` and ``kb.raw(opcode, ...)``.

``raw`` emits an instruction the builder has no method for.  The caller names the registers
it writes (``dests``) and reads (``srcs``), so liveness, the pressure report and the register
declarations stay right; the target check of :mod:`ptxforge.ptx.isa` still applies when the
opcode is in the table.

Example::

    >>> from ptxforge.dsl.builder import KernelBuilder
    >>> kb = KernelBuilder("k", target="sm_80")
    >>> x = kb.mov(5, type="u32")
    >>> r = kb.raw("brev.b32", dests=["u32"], srcs=[x])
    >>> with kb.while_(lambda: kb.setp(">", x, 0)):
    ...     _ = kb.isub(x, 1)
    >>> "brev.b32 %r2, %r1;" in kb.ptx()
    True
"""

from __future__ import annotations

import contextlib
import re

from ptxforge.errors import BuildError
from ptxforge.ptx import ir
from ptxforge.ptx import types as T

from .checks import _register_internal, _where, caller_loc, type_error
from .core import _Core, _Open

__all__ = ["FlowOps"]

_register_internal(__file__)

_OPCODE = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_:]+)*")


class FlowOps(_Core):
    """Mixin: ``while_`` and ``raw``."""

    @contextlib.contextmanager
    def while_(self, cond_fn):
        """Repeat the block while ``cond_fn()`` holds; ``cond_fn`` is called once, inside the
        loop header, and returns a ``.pred`` (or ``ir.Negated`` of one), so the ops it emits
        are re-run before each trip.

        Example::

            with kb.while_(lambda: kb.setp("<", i, n)):
                kb.iadd(i, stride)
        """
        loc = caller_loc()
        self._no_guard("kb.while_", loc)
        if not callable(cond_fn):
            raise BuildError(f"while_: expected a function returning a predicate (lambda: "
                             f"kb.setp(...)), got {type(cond_fn).__name__}{_where(loc)}")
        head, done = self.new_label("while"), self.new_label("endwhile")
        self._labels[head] = loc
        self._body.append(ir.Label(head))
        self._cc_writer = None
        p = cond_fn()
        negate = False
        if isinstance(p, ir.Negated):
            p, negate = p.operand, True
        self._pred_src("while_ condition", p, loc)
        self._label_uses.append((done, loc))
        self._emit("bra", (ir.LabelRef(done),), 0, loc, ir.Guard(p, not negate))
        self._open.append(_Open("while", (head, done), loc))
        try:
            yield
        finally:
            self._open.pop()
            self._label_uses.append((head, loc))
            self._emit("bra.uni", (ir.LabelRef(head),), 0, caller_loc())
            self._labels[done] = loc
            self._body.append(ir.Label(done))
            self._cc_writer = None

    def raw(self, opcode: str, dests=(), srcs=(), *, pred=None):
        """Emit ``opcode dests..., srcs...;`` verbatim.  Each destination is a register (written
        in place) or a type name (a fresh register is made); each source is a register, an int
        (written in decimal), an ``ir.Address`` (``[reg+off]``, its register is read), an
        ``ir.Vector`` of registers, or an ``ir.Raw`` text that names no register.  Returns the
        destination registers (one register when there is one).

        A destination that the instruction also reads (an accumulator) must be listed in
        ``srcs`` too, or liveness cannot see the read.

        Example: ``hi = kb.raw("mul.hi.u32", dests=["u32"], srcs=[a, b])``
        """
        loc = caller_loc()
        if not isinstance(opcode, str) or not _OPCODE.fullmatch(opcode):
            raise BuildError(f"raw: expected an opcode such as 'brev.b32' (no operands, no "
                             f"';'), got {opcode!r}{_where(loc)}")
        outs: list[ir.Register] = []
        operands: list[ir.Operand] = []
        for d in dests:
            if isinstance(d, ir.Register):
                reg = d
            elif isinstance(d, (str, T.PtxType)):
                reg = self._new(T.as_type(d), loc)
            elif isinstance(d, ir.Vector):
                operands.append(d)
                outs.extend(ir.registers_in(d))
                continue
            else:
                raise type_error("raw", "a destination register or a type name", d, loc)
            outs.append(reg)
            operands.append(reg)
        for s in srcs:
            if isinstance(s, bool) or isinstance(s, float):
                raise type_error("raw", "a source register, int, ir.Address, ir.Vector or "
                                 "ir.Raw (give floats as a register: kb.mov(x, type=...))", s, loc)
            if isinstance(s, int):
                operands.append(ir.Raw(str(s)))
            elif isinstance(s, (ir.Register, ir.Address, ir.Vector, ir.Raw, ir.Immediate,
                                ir.Symbol, ir.SpecialReg, ir.Negated, ir.LabelRef)):
                operands.append(s)
            else:
                raise type_error("raw", "a source register, int, ir.Address, ir.Vector or "
                                 "ir.Raw", s, loc)
        self._emit(opcode, tuple(operands), len(tuple(dests)), loc, pred, "raw")
        return outs[0] if len(outs) == 1 else tuple(outs)

