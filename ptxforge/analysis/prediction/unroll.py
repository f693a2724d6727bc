"""Loops ptxas unrolls: a one-block loop with a literal step, given its copies (model 13).

ptxas 13.5 unrolls a loop whose body is one basic block (a label, straight-line code and a
guarded branch back to the label) by :data:`~ptxforge.arch.ptxas_model.UNROLL` when the
counter its exit test compares is stepped by a literal (``add.s32 %r82, %r82, 128``), the
loop has at most :data:`~ptxforge.arch.ptxas_model.UNROLL_BODY` instructions and NVVM did not
mark it ``.pragma "nounroll"`` (NVVM's remainder loops); below the occupancy budget its
scheduler then issues the copies' loads together.  Evidence (nvdisasm 13.5, sm_80):
``softmax_rows`` (tests/corpus/nvrtc/softmax.cu) has NVVM's four-load body
(``ld.global.f32 %f22, [%rd62+-256]`` ... ``[%rd62+128]``, ``add.s32 %r82, %r82, 128``); its
SASS loop issues sixteen ``LDG.E`` (``[R8.64+-0x100]`` ... ``[R8.64+0x680]``) before the
``FMNMX`` chain, 27 registers live (with R1) where the PTX body keeps 4 loads.  Grid-stride
loops (``add.s32 %r13, %r13, %r3``: the step is ``%ntid.x`` times something) and the loops
NVVM marks ``nounroll`` keep one copy in every corpus kernel (docs/prediction.md, model 13).

:func:`unroll_loops` gives the scheduler that order: each such loop's body written
:data:`UNROLL` times, the registers each copy but the last defines renamed (so the copies are
independent where the PTX's iterations are), the last copy writing the PTX's registers.

Example::

    >>> from ptxforge.ptx import ir, types as T
    >>> i, n = ir.Register("%r1", T.s32), ir.Register("%r2", T.s32)
    >>> f, p = ir.Register("%f1", T.f32), ir.Register("%p1", T.pred)
    >>> a = ir.Register("%rd1", T.u64)
    >>> body = (ir.Label("L"),
    ...         ir.Instruction("ld.global.f32", (f, ir.Address(a, 0)), 1),
    ...         ir.Instruction("add.s32", (i, i, ir.Immediate(128)), 1),
    ...         ir.Instruction("setp.lt.s32", (p, i, n), 1),
    ...         ir.Instruction("bra", (ir.LabelRef("L"),), 0, ir.Guard(p)),
    ...         ir.Instruction("ret"))
    >>> k, loops = unroll_loops(ir.Kernel("k", body=body))
    >>> loops, sum(s.opcode.startswith("ld.") for s in k.instructions)
    (1, 4)
"""

from __future__ import annotations

import attrs

from ptxforge.arch.ptxas_model import UNROLL, UNROLL_BODY
from ptxforge.ptx import ir
from ptxforge.ptx.opcodes import Barrier, Call, OrdersMemory, Terminator, WarpCollective

__all__ = ["unroll_loops"]

#: What keeps ptxas from unrolling a loop (minimal kernels, ptxas 13.5, sm_80: a one-load loop
#: stepped by 128 with one instruction added: ``atom.global``, ``red.global``,
#: ``atom.shared``, ``bar.sync``, ``membar.gl`` and ``shfl.sync`` keep one copy; ``st.global``
#: and ``ld.volatile.global`` do not): these traits, atomics (``atom``, ``red``), and
#: tensor-core instructions, which are left to the out-of-depth flag.
_KEEPS_LOOP = (Terminator, Barrier, Call, OrdersMemory, WarpCollective)


def _keeps_loop(s: ir.Instruction) -> bool:
    """Whether ``s`` in a loop's body keeps ptxas from unrolling it."""
    op = s.op
    row = op.info
    if row is None:
        return False
    if row.latency == "tensor" or (row.memory is not None
                                   and row.memory.direction in ("atomic", "fragment")):
        return True
    return any(op.has_trait(t) for t in _KEEPS_LOOP)


def _counter_step(segment: list, guard: ir.Guard) -> bool:
    """Whether the exit test's predicate compares a counter that ``segment`` steps by a
    literal (an ``add`` of the counter and an immediate)."""
    tests = [s for s in segment if s.family == "setp" and s.defs and
             s.defs[0] == guard.register]
    if not tests:
        return False
    counters = {r.name for r in tests[-1].uses if isinstance(r, ir.Register)}
    for s in segment:
        if s.opcode.startswith("add.") and s.ndefs == 1 and s.defs \
                and s.defs[0].name in counters:
            ops = s.operands[1:]
            if any(isinstance(o, ir.Immediate) for o in ops) and \
                    any(isinstance(o, ir.Register) and o.name == s.defs[0].name for o in ops):
                return True
    return False


def _unrollable(body: list, j: int, labels: dict) -> int | None:
    """The index of the label opening the one-block loop that the branch at ``j`` closes,
    when ptxas unrolls it; else None."""
    st = body[j]
    if st.family != "bra" or st.guard is None or not st.operands \
            or not isinstance(st.operands[0], ir.LabelRef):
        return None
    a = labels.get(st.operands[0].name)
    if a is None or a >= j:
        return None
    segment = body[a + 1:j]
    insts = []
    for s in segment:
        if isinstance(s, ir.Label) or (isinstance(s, ir.Directive) and "nounroll" in s.text):
            return None
        if isinstance(s, ir.Instruction):
            if _keeps_loop(s):
                return None
            insts.append(s)
    if len(insts) + 1 > UNROLL_BODY or not _counter_step(insts, st.guard):
        return None
    return a


def _renamed(op, cur: dict):
    """Operand ``op`` read with the registers' current names ``cur``."""
    if isinstance(op, ir.Register):
        return cur.get(op.name, op)
    if isinstance(op, ir.Address) and isinstance(op.base, ir.Register):
        return ir.Address(cur.get(op.base.name, op.base), op.offset)
    if isinstance(op, ir.Vector):
        return ir.Vector(tuple(_renamed(e, cur) for e in op.elements), op.style)
    if isinstance(op, ir.Negated):
        return ir.Negated(cur.get(op.operand.name, op.operand))
    return op


def _defined(op, cur: dict, suffix: str | None):
    """Destination ``op`` with its registers renamed by ``suffix`` (None: kept), ``cur``
    updated."""
    if isinstance(op, ir.Register):
        new = op if suffix is None else ir.Register(op.name + suffix, op.type)
        cur[op.name] = new
        return new
    if isinstance(op, ir.Vector):
        return ir.Vector(tuple(_defined(e, cur, suffix) for e in op.elements), op.style)
    return _renamed(op, cur)


def _copies(segment: list) -> list:
    """The loop body ``segment`` written :data:`UNROLL` times, each copy but the last with
    fresh names for what it defines."""
    out: list = []
    cur: dict = {}
    for c in range(UNROLL):
        suffix = None if c == UNROLL - 1 else f"%u{c}"
        for s in segment:
            if not isinstance(s, ir.Instruction):
                continue
            reads = [_renamed(o, cur) for o in s.operands[s.ndefs:]]
            guard = s.guard
            if guard is not None and isinstance(guard.register, ir.Register):
                guard = ir.Guard(cur.get(guard.register.name, guard.register), guard.negated)
            writes = [_defined(o, cur, suffix) for o in s.operands[:s.ndefs]]
            out.append(ir.Instruction(s.opcode, tuple(writes + reads), s.ndefs, guard, s.loc))
    return out


def unroll_loops(kernel: ir.Kernel) -> tuple[ir.Kernel, int]:
    """``kernel`` with each loop ptxas unrolls written :data:`UNROLL` times (module
    docstring), and how many loops it unrolled."""
    body = list(kernel.body or ())
    labels = {s.name: k for k, s in enumerate(body) if isinstance(s, ir.Label)}
    spans = []
    for j, st in enumerate(body):
        if isinstance(st, ir.Instruction) and st.family == "bra":
            a = _unrollable(body, j, labels)
            if a is not None:
                spans.append((a, j))
    if not spans:
        return kernel, 0
    out: list = []
    k = 0
    for a, j in spans:
        if a < k:  # nested in one already taken (cannot happen for one-block loops)
            continue
        out.extend(body[k:a + 1])
        out.extend(_copies(body[a + 1:j]))
        out.append(body[j])
        k = j + 1
    out.extend(body[k:])
    return attrs.evolve(kernel, body=tuple(out)), len(spans)
