"""Calls to ``.func`` device functions for the interpreter, by inlining each call site.

Before a kernel is decoded, every direct ``call`` to a function with a body is replaced by a
copy of that function's body: its registers, labels and variables renamed for the call site
(``%r1`` becomes ``%r1@f#3``), its ``ret`` a branch to the end of the copy, and its ``.param``
arguments and return value per-thread ``.local`` variables that the call site copies in and
out (``ld.local`` / ``st.local`` through a scratch register).  The caller's ``.param``
declarations (``param0``, ``retval0``) become ``.local`` variables too, so ``st.param`` /
``ld.param`` on them are per-thread stores and loads.  Inlined code sits between the call and
the instruction after it, so divergent callers reconverge as for any structured code.

Recursive calls (a function already being inlined), indirect calls (through a register) and
calls to functions without a body (``vprintf``, ``.extern``) are left as they are: executing
one is an :class:`~ptxforge.emulator.EmulationError`.

Example::

    >>> from ptxforge.dsl.builder import ModuleBuilder
    >>> mb = ModuleBuilder(target="sm_80")
    >>> sq = mb.func("square", params=[("x", "f32")], returns=[("r", "f32")])
    >>> x = sq.load_param("x"); sq.set_return("r", sq.mul(x, x))
    >>> kb = mb.kernel("k"); _ = kb.call(sq, 3.0)
    >>> module = mb.build()
    >>> body, _ = inline_calls(module.kernel("k"), {"square": module.kernel("square")})
    >>> [s.opcode for s in body if isinstance(s, ir.Instruction)][1:7]
    ['st.param.f32', 'ld.local.b32', 'st.local.b32', 'ld.param.f32', 'mul.f32', 'st.param.f32']
"""

from __future__ import annotations

import attrs

from ptxforge.ptx import ir
from ptxforge.ptx import types as T
from ptxforge.ptx.layout import param_size, var_size

__all__ = ["MAX_DEPTH", "inline_calls"]

#: Nested calls inlined at most this deep (deeper ones are left as calls and refused).
MAX_DEPTH = 16
_CHUNK = {8: (T.b64, "b64"), 4: (T.b32, "b32"), 2: (T.b16, "b16"), 1: (T.u16, "u8")}


def _local(name: str, nbytes: int) -> ir.VarDecl:
    return ir.VarDecl("local", T.b8, name, align=16, dims=(max(nbytes, 1),))


class _Inliner:
    def __init__(self, functions: dict) -> None:
        self.functions = functions
        self.count = 0
        self.origin: dict = {}
        self.locals: dict = {}          # name -> bytes, for the caller-side and callee params

    def body(self, stmts, rename, stack) -> list:
        out: list = []
        for st in stmts:
            if isinstance(st, ir.VarDecl) and st.space == "param":
                name = rename(ir.Symbol(st.name)).name
                size = var_size(st)
                self.locals[name] = max(self.locals.get(name, 0), size)
                continue
            if isinstance(st, ir.VarDecl):
                out.append(attrs.evolve(st, name=rename(ir.Symbol(st.name)).name))
            elif isinstance(st, ir.Label):
                out.append(ir.Label(rename(ir.LabelRef(st.name)).name))
            elif isinstance(st, ir.Instruction):
                new = _rename_inst(st, rename)
                self.origin[id(new)] = self.origin.get(id(st), st)
                callee = self._callee(new, stack)
                out.extend(self.call(new, callee, stack) if callee is not None else [new])
            else:
                out.append(st)
        return out

    def _callee(self, inst, stack):
        if inst.family != "call":
            return None
        ops = [o for o in inst.operands if not isinstance(o, ir.Vector)]
        if not ops or not isinstance(ops[0], ir.Symbol):
            return None
        func = self.functions.get(ops[0].name)
        if func is None or func.body is None or func.name in stack or len(stack) >= MAX_DEPTH:
            return None
        return func

    def call(self, inst, func, stack) -> list:
        self.count += 1
        tag = f"@{func.name}#{self.count}"
        names = {p.name for p in tuple(func.params) + tuple(func.returns)}
        names |= {s.name for s in func.body if isinstance(s, ir.VarDecl)}

        def rename(op):
            if isinstance(op, ir.Register):
                return attrs.evolve(op, name=op.name + tag)
            if isinstance(op, ir.LabelRef):
                return ir.LabelRef(op.name + tag)
            if isinstance(op, ir.Symbol) and op.name in names:
                return ir.Symbol(op.name + tag)
            return op

        ops = inst.operands
        at = next(i for i, o in enumerate(ops) if not isinstance(o, ir.Vector))
        rets = list(ops[at - 1].elements) if at > 0 else []
        args = list(ops[at + 1].elements) if at + 1 < len(ops) and isinstance(
            ops[at + 1], ir.Vector) else []
        if len(rets) != len(func.returns) or len(args) != len(func.params) or not all(
                isinstance(x, ir.Symbol) for x in rets + args):
            return [inst]
        for p in tuple(func.params) + tuple(func.returns):
            self.locals[p.name + tag] = param_size(p)
        out: list = []
        skip, end = ir.LabelRef("$skip" + tag), ir.LabelRef("$end" + tag)
        if inst.guard is not None:
            out.append(self._synth(inst, "bra", (skip,), 0, ir.Guard(inst.guard.register,
                                                                     not inst.guard.negated)))
        for arg, p in zip(args, func.params):
            out.extend(self._copy(inst, p.name + tag, arg.name, param_size(p), tag))
        for st in self.body(func.body, rename, stack + (func.name,)):
            if isinstance(st, ir.Instruction) and st.family == "ret":
                st = self._synth(st, "bra", (end,), 0, st.guard)
            out.append(st)
        out.append(ir.Label(end.name))
        for ret, p in zip(rets, func.returns):
            out.extend(self._copy(inst, ret.name, p.name + tag, param_size(p), tag))
        out.append(ir.Label(skip.name))
        return out

    def _synth(self, like, opcode, operands, ndefs, guard=None):
        new = ir.Instruction(opcode, tuple(operands), ndefs, guard, like.loc)
        self.origin[id(new)] = self.origin.get(id(like), like)
        return new

    def _copy(self, inst, dst: str, src: str, nbytes: int, tag: str) -> list:
        """ld.local / st.local pairs copying ``nbytes`` from variable ``src`` to ``dst``."""
        width = next(w for w in (8, 4, 2, 1) if nbytes % w == 0)
        ty, name = _CHUNK[width]
        tmp = ir.Register(f"%copy{width}{tag}", ty)
        out = []
        for at in range(0, nbytes, width):
            out.append(self._synth(inst, f"ld.local.{name}", (tmp, ir.Address(ir.Symbol(src), at)),
                                   1))
            out.append(self._synth(inst, f"st.local.{name}", (ir.Address(ir.Symbol(dst), at), tmp),
                                   0))
        return out


def _rename_op(op, rename):
    if isinstance(op, ir.Address):
        return attrs.evolve(op, base=_rename_op(op.base, rename)) if op.base is not None else op
    if isinstance(op, ir.Vector):
        return attrs.evolve(op, elements=tuple(_rename_op(e, rename) for e in op.elements))
    if isinstance(op, ir.Negated):
        return attrs.evolve(op, operand=_rename_op(op.operand, rename))
    return rename(op)


def _rename_inst(inst, rename):
    if rename is _same:
        return inst
    guard = inst.guard
    if guard is not None:
        guard = ir.Guard(rename(guard.register), guard.negated)
    return ir.Instruction(inst.opcode, tuple(_rename_op(o, rename) for o in inst.operands),
                          inst.ndefs, guard, inst.loc)


def _same(op):
    return op


def inline_calls(kernel: ir.Kernel, functions: dict) -> tuple[list, dict]:
    """``kernel``'s body with its calls to ``functions`` (name -> ir.Kernel) inlined.

    Returns (statements, origin): the statements, with the ``.param`` variables of calls as
    ``.local`` declarations at the end, and ``id(new instruction) -> the instruction it came
    from`` (for line numbers).
    """
    inliner = _Inliner(functions)
    body = inliner.body(kernel.body or (), _same, (kernel.name,))
    body.extend(_local(name, size) for name, size in sorted(inliner.locals.items()))
    return body, inliner.origin
