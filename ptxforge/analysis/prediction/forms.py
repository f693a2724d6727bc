"""SASS instruction forms the prediction reads into the view: IADD3, vector loads, division.

Two PTX patterns become fewer, wider instructions in SASS, and the scheduler's priorities
(the latency path to a block's end) change with them (model 11; docs/prediction.md has the
excerpts, whole-program ptxas 13.5 and nvdisasm 13.5, sm_80):

* **three-input integer adds**: a 32-bit ``add`` whose result is read once, by another 32-bit
  ``add`` of the same block, is one ``IADD3`` with it (``IADD3 R12, R14, R13, R12``), so a
  running integer sum of sixteen values is eight instructions, not fifteen;
* **vector shared loads**: scalar loads of one shared variable at constant offsets
  (``ld.shared.u32 %r40, [tmp+20]`` ... ``[tmp+76]``, cub's warp aggregates), with no store,
  atomic, barrier, fence or call between them, are issued as one ``LDS.128`` (or ``LDS.64``)
  per aligned 16-byte window, back to back before the first use (``LDS.128 R16, [0x10]`` ...
  ``LDS.128 R4, [0x40]`` ahead of the first ``IADD3`` in ``tile_sum<int,512,4>``): the loads
  of a window are defined together, at the first one's place.

:func:`sass_forms` returns the kernel in those forms (or None when it has neither) and how many
adds it fused and loads it grouped.

A third form adds what SASS has and the PTX does not (model 12): a 32-bit integer ``div`` or
``rem`` by a value that is not a literal is computed inline (``I2F.RP``, ``MUFU.RCP``, ``F2I``,
``IMAD.HI.U32``, ``IABS`` for the signed types), with temporaries live beside its operands;
:func:`expand_divisions` gives each such division its own and each divisor its part, computed
once at its first division and kept to its last (:func:`division_results` names them in the
kernel the view came from, whose divisors are still registers).

Example::

    >>> from ptxforge.ptx import ir, types as T
    >>> r = [ir.Register(f"%r{i}", T.u32) for i in range(6)]
    >>> tmp = ir.Symbol("tmp")
    >>> body = (ir.Instruction("ld.shared.u32", (r[0], ir.Address(tmp, 16)), 1),
    ...         ir.Instruction("ld.shared.u32", (r[1], ir.Address(tmp, 20)), 1),
    ...         ir.Instruction("add.s32", (r[2], r[0], r[1]), 1),
    ...         ir.Instruction("ld.shared.u32", (r[3], ir.Address(tmp, 24)), 1),
    ...         ir.Instruction("add.s32", (r[4], r[2], r[3]), 1),
    ...         ir.Instruction("ret"))
    >>> k, counts = sass_forms(ir.Kernel("k", body=body))
    >>> [i.opcode for i in k.instructions], counts
    (['ld.shared.u32', 'add.s32', 'ret'], {'fused adds': 1, 'vector loads': 1, 'loads': 3})
"""

from __future__ import annotations

from collections import Counter

import attrs

from ptxforge.arch.ptxas_model import DIVISION_TEMPORARIES, DIVISOR_TEMPORARIES
from ptxforge.ptx import ir
from ptxforge.ptx import types as T
from ptxforge.ptx.opcodes import Barrier, Call, OrdersMemory, Terminator

__all__ = ["VECTOR_BYTES", "division_results", "expand_divisions", "sass_forms"]

#: The widest shared load (``LDS.128``): the loads of one aligned window of this many bytes
#: issue as one.
VECTOR_BYTES = 16
_ADD_TYPES = (".s32", ".u32")
_ENDS_RUN = (Terminator, Barrier, Call, OrdersMemory)


def _counts(body) -> tuple[Counter, Counter]:
    """Definitions and reads per register name (what ``Instruction.defs`` and ``uses`` list,
    repeats counted).  An instruction of at most one register result whose other operands are
    registers, addresses and literals is read from its operands directly; building every
    instruction's defs and uses tuples took half of :func:`sass_forms` on large kernels."""
    defs: dict = {}
    uses: dict = {}
    dget, uget = defs.get, uses.get
    Instruction, Register, Address = ir.Instruction, ir.Register, ir.Address
    plain = _NO_REGISTERS
    for st in body:
        if not isinstance(st, Instruction):
            continue
        ops, nd = st.operands, st.ndefs
        names: list | None = None
        if nd == 0 or (nd == 1 and type(ops[0]) is Register
                       and not st.opcode.startswith(ir.READ_WRITE_OPCODES)):
            names = []
            for o in ops[nd:]:
                t = type(o)
                if t is Register:
                    names.append(o.name)
                elif t is Address:
                    if type(o.base) is Register:
                        names.append(o.base.name)
                elif t not in plain:
                    names = None   # a vector, a negated predicate: the general path
                    break
        if names is None:
            for r in st.defs:
                n = r.name
                defs[n] = dget(n, 0) + 1
            names = [r.name for r in st.uses]
        else:
            if nd:
                n = ops[0].name
                defs[n] = dget(n, 0) + 1
            if st.guard is not None:
                names.append(st.guard.register.name)
        for n in names:
            uses[n] = uget(n, 0) + 1
    return Counter(defs), Counter(uses)


#: Operand classes that name no register.
_NO_REGISTERS = frozenset({ir.Immediate, ir.SpecialReg, ir.Symbol, ir.LabelRef, ir.Raw})


def _written_between(body: list, j: int, k: int, operands) -> bool:
    names = {o.name for o in operands if isinstance(o, ir.Register)}
    return bool(names) and any(st is not None and isinstance(st, ir.Instruction)
                               and not names.isdisjoint(r.name for r in st.defs)
                               for st in body[j + 1:k])


def _plain_add(st) -> bool:
    return (isinstance(st, ir.Instruction) and st.family == "add" and st.guard is None
            and len(st.operands) == 3 and st.opcode[3:] in _ADD_TYPES
            and isinstance(st.operands[0], ir.Register))


def _fuse_adds(body: list, defs: Counter, uses: Counter) -> int:
    """Fuse in place (the first add becomes None): ``x = a + b; y = x + c`` with ``x`` read
    once and defined once, and ``a``, ``b`` not written in between (still the same values at
    the second add)."""
    fused = 0
    open_adds: dict = {}  # in the current block: register name -> index of its add
    for k, st in enumerate(body):
        if not isinstance(st, ir.Instruction):
            open_adds = {}
            continue
        if _plain_add(st):
            d, a, b = st.operands
            for x, other in ((a, b), (b, a)):
                j = open_adds.pop(x.name, None) if isinstance(x, ir.Register) else None
                if j is None or uses[x.name] != 1 or defs[x.name] != 1:
                    continue
                first = body[j]
                if _written_between(body, j, k, first.operands[1:]):
                    continue
                body[j] = None
                st = body[k] = ir.Instruction(st.opcode, (d, *first.operands[1:], other), 1,
                                              None, st.loc)
                fused += 1
                break
            if len(st.operands) == 3:
                open_adds[d.name] = k
        elif st.op.has_trait(Terminator):
            open_adds = {}
    return fused


def _shared_load(st) -> bool:
    """An unguarded scalar load of a shared variable at a constant offset."""
    if not isinstance(st, ir.Instruction) or st.guard is not None or st.ndefs != 1:
        return False
    addr = st.operands[1] if len(st.operands) > 1 else None
    return (_opcode_facts(st.op)[0] and isinstance(addr, ir.Address)
            and isinstance(addr.base, ir.Symbol) and isinstance(st.operands[0], ir.Register))


def _ends_run(st) -> bool:
    """A label, or what orders shared loads: a barrier, fence, call, terminator, or a store or
    atomic that may reach shared memory."""
    if not isinstance(st, ir.Instruction):
        return True
    return _opcode_facts(st.op)[1]


#: Per opcode text: (a scalar shared load with no ordering, ends a run of loads).
_FACTS: dict = {}


def _opcode_facts(op) -> tuple[bool, bool]:
    """What :func:`_shared_load` and :func:`_ends_run` read from the opcode alone, once per
    opcode text."""
    facts = _FACTS.get(op.text)
    if facts is None:
        mem = op.info.memory if op.info is not None else None
        load = (mem is not None and mem.direction == "load" and op.space == "shared"
                and op.vector == 1 and not op.has("volatile", "acquire"))
        ends = any(op.has_trait(t) for t in _ENDS_RUN) or (
            mem is not None and mem.writes and (op.space in (None, "shared") or mem.shared_only))
        facts = _FACTS[op.text] = (bool(load), bool(ends))
    return facts


def _windows(body: list, defs: Counter) -> list:
    """Lists of positions: the loads of one aligned window of one run, two or more."""
    out: list = []
    run: list = []
    symbol = None

    def close():
        groups: dict = {}
        for k in run:
            groups.setdefault(body[k].operands[1].offset // VECTOR_BYTES, []).append(k)
        out.extend(g for g in groups.values() if len(g) > 1)
        run.clear()

    for k, st in enumerate(body):
        if st is None:
            continue
        if _shared_load(st) and defs[st.operands[0].name] == 1:
            if run and st.operands[1].base != symbol:
                close()
            symbol = st.operands[1].base
            run.append(k)
        elif _ends_run(st):
            close()
    close()
    return out


def sass_forms(kernel: ir.Kernel) -> tuple[ir.Kernel, dict] | None:
    """``kernel`` with its 32-bit integer add pairs fused (IADD3) and its shared loads of one
    variable grouped per aligned 16-byte window at the first one's place (LDS.128), and the
    counts (``fused adds``, ``vector loads``, ``loads`` in them); None when neither applies."""
    body = list(kernel.body or ())
    defs, uses = _counts(body)
    fused = _fuse_adds(body, defs, uses)
    groups = _windows(body, defs)
    if not fused and not groups:
        return None
    for g in groups:
        first = body[g[0]]
        regs = tuple(body[k].operands[0] for k in g)
        body[g[0]] = ir.Instruction(first.opcode, (ir.Vector(regs), first.operands[1]), 1,
                                    None, first.loc)
        for k in g[1:]:
            body[k] = None
    counts = {"fused adds": fused, "vector loads": len(groups),
              "loads": sum(len(g) for g in groups)}
    return attrs.evolve(kernel, body=tuple(s for s in body if s is not None)), counts


def _integer_division(inst: ir.Instruction) -> str | None:
    """The type (``s32``, ``u32``) of a 32-bit integer ``div`` or ``rem``, else None."""
    parts = inst.opcode.split(".")
    if parts[0] in ("div", "rem") and parts[-1] in DIVISION_TEMPORARIES \
            and inst.ndefs == 1 and len(inst.operands) == 3 \
            and isinstance(inst.operands[0], ir.Register):
        return parts[-1]
    return None


def division_results(kernel: ir.Kernel) -> dict:
    """``{result name: divisor}`` for ``kernel``'s 32-bit integer divisions and remainders by a
    value that is not a literal (a literal divisor becomes a multiply-high by a constant in
    SASS); the divisor is its register's name, the key of the temporaries ptxas computes once.

    Example::

        >>> from ptxforge.ptx import ir, types as T
        >>> r = [ir.Register(f"%r{i}", T.s32) for i in range(4)]
        >>> body = (ir.Instruction("div.s32", (r[2], r[0], r[1]), 1),
        ...         ir.Instruction("rem.s32", (r[3], r[0], ir.Immediate(7)), 1))
        >>> division_results(ir.Kernel("k", body=body))
        {'%r2': '%r1'}
    """
    return {i.operands[0].name: str(getattr(i.operands[2], "name", i.operands[2]))
            for i in kernel.instructions
            if _integer_division(i) and not isinstance(i.operands[2], ir.Immediate)}


def _chain(body: list, names: list, source, st) -> list:
    """Registers ``names`` defined one from the other, the first from ``source``."""
    regs = [ir.Register(n, T.u32) for n in names]
    prev = source
    for r in regs:
        body.append(ir.Instruction("mov.b32", (r, prev), 1, st.guard, st.loc))
        prev = r
    return regs


def expand_divisions(kernel: ir.Kernel, results: dict) -> tuple[ir.Kernel, int]:
    """``kernel`` with each 32-bit integer division or remainder whose result is named in
    ``results`` (:func:`division_results` of the kernel the view came from) computed as SASS
    does (model 12), and how many it expanded: the divisor's temporaries
    (:data:`~ptxforge.arch.ptxas_model.DIVISOR_TEMPORARIES`) once per divisor, at its first
    division, and live to its last; each division's own
    (:data:`~ptxforge.arch.ptxas_model.DIVISION_TEMPORARIES`) from its dividend, all live at
    once just before it.

    Example::

        >>> from ptxforge.ptx import ir, types as T
        >>> r = [ir.Register(f"%r{i}", T.s32) for i in range(3)]
        >>> k = ir.Kernel("k", body=(ir.Instruction("div.s32", (r[2], r[0], r[1]), 1),))
        >>> out, n = expand_divisions(k, division_results(k))
        >>> n, len(out.instructions)   # 2 + 3 temporaries, 4 adds that read them, the division
        (1, 10)
    """
    body_in = list(kernel.body or ())
    last: dict = {}
    for k, st in enumerate(body_in):
        if isinstance(st, ir.Instruction) and _integer_division(st) \
                and st.operands[0].name in results:
            last[results[st.operands[0].name]] = k
    if not last:
        return kernel, 0
    body: list = []
    shared: dict = {}
    expanded = 0
    for k, st in enumerate(body_in):
        kind = _integer_division(st) if isinstance(st, ir.Instruction) else None
        if kind is None or st.operands[0].name not in results:
            body.append(st)
            continue
        dst, num, den = st.operands
        key = results[dst.name]
        n = len(body)
        if key not in shared:
            shared[key] = _chain(body, [f"{dst.name}%d{j}" for j in
                                        range(DIVISOR_TEMPORARIES[kind])], den, st)
        own = _chain(body, [f"{dst.name}%q{j}" for j in range(DIVISION_TEMPORARIES[kind])],
                     num, st)
        reads = own + (shared[key] if last[key] == k else [])
        acc = reads[-1] if reads else num
        for j, t in enumerate(reversed(reads[:-1])):
            nxt = ir.Register(f"{dst.name}%s{j}", T.u32)
            body.append(ir.Instruction("add.u32", (nxt, acc, t), 1, st.guard, st.loc))
            acc = nxt
        if len(body) > n:
            st = ir.Instruction(st.opcode, (dst, num, acc), 1, st.guard, st.loc)
            expanded += 1
        body.append(st)
    if not expanded:
        return kernel, 0
    return attrs.evolve(kernel, body=tuple(body)), expanded
