"""Operand decoding for liveness: instructions to integer register indices and register facts.

Registers are numbered by first appearance.  :func:`register_facts` gives per register the
first definition, number of definitions and last use (and which may be read before being
written); :func:`decode_operands` gives per instruction the register indices it defines and
reads; :func:`operands_touching` does the same for a chosen subset of registers only.  Guards
count as reads; vectors and negated predicates go through the IR's own ``defs``/``uses``,
which also know texture/surface references and destinations that are read too (wgmma's
accumulator: PTX writes those as ``{…}`` vectors, so they always take that path).
"""

from __future__ import annotations

import attrs

from ptxforge.ptx import ir

__all__ = ["RegisterFacts", "decode_operands", "operands_touching", "register_facts"]

_SIMPLE = (ir.Immediate, ir.SpecialReg, ir.Symbol, ir.LabelRef, ir.Raw)
_SIMPLE_TYPES = frozenset(_SIMPLE)


@attrs.frozen(slots=True, kw_only=True)
class RegisterFacts:
    """What :func:`register_facts` learns in one pass over a kernel's instructions.

    Example::

        >>> from ptxforge.ptx import types
        >>> a = ir.Register("%r1", types.u32)
        >>> f = register_facts((ir.Instruction("mov.u32", (a, ir.Immediate(1)), 1),
        ...                     ir.Instruction("st.global.u32", (ir.Address(a), a))))
        >>> f.index, f.first_def, f.def_count, f.last_use, f.early
        ({'%r1': 0}, [0], [1], [1], set())
    """

    index: dict[str, int]  # register name -> register index (first appearance order)
    registers: list[ir.Register]  # per register index
    guarded: bytes  # per instruction: 1 when it has a guard
    first_def: list[int]  # per register: its first definition, -1 when never defined
    def_count: list[int]  # per register: how many instructions define it
    last_use: list[int]  # per register: its last read, -1 when never read
    # registers that may be read at or before their first definition or are defined under a
    # guard: first seen as a read, read and written by one instruction, or written guarded
    early: set[int]


def register_facts(instructions: tuple) -> RegisterFacts:
    """Number registers by first appearance and, per register: first definition, number of
    definitions, last use (lists, -1/0 when none), and whether it may be read at or before its
    first definition or is defined under a guard (``early``); per instruction the guarded
    flag (:class:`RegisterFacts`).  Per-instruction register lists are not kept (see
    :func:`decode_operands`)."""
    index: dict[str, int] = {}
    regs: list[ir.Register] = []
    fdl: list[int] = []
    dcl: list[int] = []
    lul: list[int] = []
    early: set = set()
    guarded = bytearray(len(instructions))
    Register, Address = ir.Register, ir.Address
    simple = _SIMPLE_TYPES
    get = index.get
    rappend, fappend, cappend, lappend = regs.append, fdl.append, dcl.append, lul.append
    mark = early.add

    def new(r) -> int:
        k = index[r.name] = len(regs)
        rappend(r)
        fappend(-1)
        cappend(0)
        lappend(-1)
        return k

    def number(r, read: bool) -> int:
        k = get(r.name)
        if k is None:
            k = new(r)
            if read:
                mark(k)
        return k

    for i, inst in enumerate(instructions):
        ops = inst.operands
        nd = inst.ndefs
        g = inst.guard
        # Fast path: one register result, then registers, literals and register-based addresses.
        if nd == 1 and ops and type(ops[0]) is Register:
            o = ops[0]
            x = get(o.name)
            if x is None:
                x = index[o.name] = len(regs)
                rappend(o)
                fappend(-1)
                cappend(0)
                lappend(-1)
            for o in ops[1:]:
                t = type(o)
                if t is Register:
                    y = get(o.name)
                    if y is None:
                        y = new(o)
                        mark(y)
                    lul[y] = i
                elif t is Address:
                    if type(o.base) is Register:
                        lul[number(o.base, True)] = i
                elif t not in simple and not isinstance(o, _SIMPLE):
                    break
            else:
                if g is not None:
                    guarded[i] = 1
                    lul[number(g.register, True)] = i
                    mark(x)
                if fdl[x] < 0:
                    fdl[x] = i
                dcl[x] += 1
                if lul[x] == i:
                    mark(x)  # read by its own (first) definition
                continue
        dd, uu = _numbered_operands(inst, number)
        if g is not None:
            guarded[i] = 1
            early.update(dd)
        for x in uu:
            lul[x] = i
        for x in dd:
            if fdl[x] < 0:
                fdl[x] = i
            dcl[x] += 1
            if x in uu:
                mark(x)
    return RegisterFacts(index=index, registers=regs, guarded=bytes(guarded), first_def=fdl,
                         def_count=dcl, last_use=lul, early=early)


def _numbered_operands(inst: ir.Instruction, number) -> tuple[list[int], list[int]]:
    """:func:`register_facts`'s general path for one instruction: the register indices it
    defines and reads (no repeats, the guard last), each numbered by ``number(register,
    read)``; vectors and negated predicates go through the IR's own defs/uses."""
    Register, Address = ir.Register, ir.Address
    nd = inst.ndefs
    dd: list[int] = []
    uu: list[int] = []
    k = 0
    for o in inst.operands:
        t = type(o)
        if t is Register:
            x = number(o, k >= nd)
            if k < nd:
                if x not in dd:
                    dd.append(x)
            elif x not in uu:
                uu.append(x)
        elif t is Address:
            if type(o.base) is Register:
                x = number(o.base, True)
                if x not in uu:
                    uu.append(x)
        elif t not in _SIMPLE_TYPES and not isinstance(o, _SIMPLE):
            dd = list(dict.fromkeys(number(r, False) for r in inst.defs))
            uu = list(dict.fromkeys(number(r, True) for r in inst.uses))
            break
        k += 1
    else:
        if inst.guard is not None:
            x = number(inst.guard.register, True)
            if x not in uu:
                uu.append(x)
    return dd, uu


def decode_operands(instructions: tuple, index: dict) -> list:
    """Per instruction: the register indices it defines and those it reads (tuples without
    repeats, in operand order, the guard last), for registers numbered in ``index``."""
    defs: list[tuple] = []
    uses: list[tuple] = []
    Register, Address = ir.Register, ir.Address
    simple = _SIMPLE_TYPES
    idx = index.__getitem__
    for inst in instructions:
        nd = inst.ndefs
        dd: list[int] = []
        uu: list[int] = []
        k = 0
        for o in inst.operands:
            t = type(o)
            if t is Register:
                x = idx(o.name)
                if k < nd:
                    if x not in dd:
                        dd.append(x)
                elif x not in uu:
                    uu.append(x)
            elif t is Address:
                if type(o.base) is Register:
                    x = idx(o.base.name)
                    if x not in uu:
                        uu.append(x)
            elif t not in simple and not isinstance(o, _SIMPLE):
                dd = list(dict.fromkeys(idx(r.name) for r in inst.defs))
                uu = list(dict.fromkeys(idx(r.name) for r in inst.uses))
                break
            k += 1
        else:
            if inst.guard is not None:
                x = idx(inst.guard.register.name)
                if x not in uu:
                    uu.append(x)
        defs.append(tuple(dd))
        uses.append(tuple(uu))
    return [tuple(defs), tuple(uses)]


def operands_touching(instructions: tuple, names: dict) -> dict:
    """For the registers in ``names`` (name -> index): ``{instruction: (defs, uses)}`` over the
    instructions that mention one of them, restricted to them (the rules of :func:`decode_operands`)."""
    out: dict[int, tuple] = {}
    Register, Address = ir.Register, ir.Address
    simple = _SIMPLE_TYPES
    get = names.get
    for j, inst in enumerate(instructions):
        nd = inst.ndefs
        dd: list[int] = []
        uu: list[int] = []
        k = 0
        for o in inst.operands:
            t = type(o)
            if t is Register:
                x = get(o.name)
                if x is not None:
                    if k < nd:
                        if x not in dd:
                            dd.append(x)
                    elif x not in uu:
                        uu.append(x)
            elif t is Address:
                if type(o.base) is Register:
                    x = get(o.base.name)
                    if x is not None and x not in uu:
                        uu.append(x)
            elif t not in simple and not isinstance(o, _SIMPLE):
                dd = list(dict.fromkeys(x for r in inst.defs if (x := get(r.name)) is not None))
                uu = list(dict.fromkeys(x for r in inst.uses if (x := get(r.name)) is not None))
                break
            k += 1
        else:
            g = inst.guard
            if g is not None:
                x = get(g.register.name)
                if x is not None and x not in uu:
                    uu.append(x)
        if dd or uu:
            out[j] = (tuple(dd), tuple(uu))
    return out
