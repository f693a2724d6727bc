"""The SASS-shaped view of a kernel: PTX values that need no register in SASS are taken out.

ptxas keeps many PTX values out of the register file (measured on the corpus SASS with nvdisasm
13.5, whole-program ptxas 13.5, sm_80; docs/prediction.md has the excerpts):

* **kernel parameters** are read straight from the constant bank at each use
  (``ISETP.GE.AND P0, PT, R6, c[0x0][0x174], PT``; ``IMAD.WIDE R6, R7, R8, c[0x0][0x160]``);
* **immediates** and **shared-variable addresses** become instruction operands
  (``IADD3 R7, R5, 0x8, RZ``; ``STS [R23.X4+0x420], R6``);
* **cvta.to.global** is a no-op on the generic address of a global pointer;
* **constant-offset address arithmetic** (``add.s64 %rd9, %rd3, 4096`` used only as an
  address) folds into the address (``LDG.E R6, [R2.64+0x1000]``);
  but not one computed after a warp shuffle and read after a later one (model 9: ptxas keeps
  it in a register pair, ``IADD3 R8, P5, R2, 0x100, RZ`` / ``STG.E [R8.64], R5``, computed
  after the last shuffle; the view moves its definition there);
* **register copies** (``mov.b32 %r2, %r1``) are coalesced;
* **32-to-64-bit widenings** (``cvt.u64.u32 %rd1, %r16``) never take a register pair: the
  64-bit address arithmetic reads the 32-bit value and supplies the high word
  (``LEA R4, P5, R15, UR6, 0x2`` / ``LEA.HI.X R5, R15, UR4, RZ, 0x2, P5``);
* **uniform loads** (``kinds=(..., "uniform")``, which the prediction asks for above the
  occupancy budget only): a 32-bit ``ld.global.nc`` from a warp-uniform address, read only in
  the block that loads it, can be moved to a uniform register (``R2UR UR7, R0``), outside
  the count;
* **warp-uniform integer values read in a loop** (``kinds=(..., "warp-uniform")``, which the
  prediction asks for below the occupancy budget only, model 8): a value computed by integer
  arithmetic from parameters, immediates and the block-wide special registers only (a row
  base, a bound, a uniform loop counter), and read by an instruction inside a loop, lives in a
  uniform register (``S2UR UR6, SR_CTAID.X`` / ``UIMAD.WIDE.U32 UR4, UR6, UR4, URZ`` /
  ``IADD3 R3, P1, R4, UR4, RZ`` in the loop), or is read from the constant bank
  (``%ntid.x``: ``IADD3 R4, R4, c[0x0][0x0], RZ``): the view keeps its instructions, and
  their dependences, but moves the value to a register class no count includes;
* **special registers** (``%tid.x``, ``%ctaid.y``) are *not* among them: an ``S2R`` is slow
  (a variable-latency read), so ptxas 13.5 reads each once and keeps it
  (``S2R R9, SR_TID.X`` at the top of ``warp_reduce_max`` stays live to its last use in the
  final ``LOP3.LUT P0, RZ, R9, 0x1f``); ``kinds=(..., "special")`` models a re-read instead.

The view also drops the **labels that nothing names** (no branch operand, no directive:
Triton's ``$L__tmp`` debug-line labels, model 10): they end no basic block in SASS (ptxas
computes a store address written after ``$L__tmp19`` before the loads written before
``$L__tmp1``), so the scheduler reading the view sees the blocks ptxas schedules.

:func:`sass_view` returns the kernel with those values rewritten: a value that is free
everywhere is replaced by an immediate at its uses; a value that must be in a register only
where it is used as an address (a parameter pointer, a special register) is re-defined right
before each use, so it is live for one instruction; an alias is renamed to what it aliases.
Liveness of the view (:func:`ptxforge.analysis.liveness.analyze_liveness`) is the pressure of
what SASS must hold.

Example::

    >>> from ptxforge.ptx import ir, types as T
    >>> a, b = ir.Register("%rd1", T.u64), ir.Register("%rd2", T.u64)
    >>> body = (ir.Instruction("ld.param.u64", (a, ir.Address(ir.Symbol("p"))), 1),
    ...         ir.Instruction("cvta.to.global.u64", (b, a), 1),
    ...         ir.Instruction("st.global.u32", (ir.Address(b), ir.Immediate(1))),
    ...         ir.Instruction("ret"))
    >>> v = sass_view(ir.Kernel("k", body=body))
    >>> [i.opcode for i in v.kernel.instructions], v.folded
    (['mov.b64', 'st.global.u32', 'ret'], {'parameter': 1, 'alias': 1})
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import attrs

from ptxforge.ptx import ir
from ptxforge.ptx import types as T
from ptxforge.ptx.opcodes import FAMILIES, Terminator, families_with

from ..cfg import build_cfg
from .labels import named_labels, named_labels_only

__all__ = ["KINDS", "SassView", "fold_kind", "named_labels", "sass_view"]

_ZERO = ir.Immediate(0)
#: Operand types that name no register.
_NO_REGISTERS = frozenset({ir.Immediate, ir.SpecialReg, ir.Symbol, ir.LabelRef, ir.Raw})
#: 32-to-64-bit integer conversions: SASS reads the 32-bit source with a zero or sign high word
#: (``IMAD.WIDE.U32``, ``IADD3.X ... RZ``), so the 64-bit value needs no register pair.
_WIDENING = (".u64.u32", ".s64.s32", ".s64.u32", ".u64.s32")
#: Opcode families whose operands may be an address that a constant offset folds into.
#: (Every family with a memory access through an address, textures and surfaces excepted.)
_MEMORY = frozenset(name for name, row in FAMILIES.items()
                    if row.memory is not None and not row.memory.texture)


@attrs.frozen(slots=True, kw_only=True)
class SassView:
    """A kernel rewritten to what SASS holds in registers, and what was folded, by kind."""

    kernel: ir.Kernel
    folded: dict
    #: What :func:`sass_view` read from the source kernel before it planned (a
    #: :class:`_Prepared`): another view of the same kernel given ``base=`` this one reuses it.
    prepared: _Prepared | None = attrs.field(default=None, eq=False, repr=False)
    #: The kinds this view was asked for.
    kinds: tuple = attrs.field(default=(), eq=False, repr=False)


class _Prepared(NamedTuple):
    """A kernel's body read once for :func:`sass_view`: the source kernel, whether offsets
    were held (``"offset"`` asked for), the body (definitions sunk), its instructions and
    :func:`_scan`'s counts."""

    source: ir.Kernel
    offsets: bool
    body: tuple
    insts: list
    ndefs: Counter
    uses: dict
    reads: list
    held: set
    #: Per instruction: :func:`fold_kind`, or ``"offset"`` for a constant-offset add read only
    #: as an address and not held (``offsets``), or None: what each view's plan starts from.
    folds: list


def _single_source(inst: ir.Instruction):
    ops = inst.operands
    return ops[1] if inst.ndefs == 1 and len(ops) == 2 else None


def fold_kind(inst: ir.Instruction) -> str | None:
    """Why ``inst``'s result needs no register of its own, or None.

    ``"parameter"`` (``ld.param`` of a kernel parameter), ``"immediate"`` (a move of a
    literal or of a variable's address), ``"special"`` (a move of a special register),
    ``"alias"`` (``cvta.to.global``, a register copy), ``"widen"`` (a 32-to-64-bit integer
    conversion).

    Example::

        >>> from ptxforge.ptx import ir, types as T
        >>> fold_kind(ir.Instruction("mov.u32", (ir.Register("%r1", T.u32), ir.Immediate(4)), 1))
        'immediate'
    """
    if inst.guard is not None or inst.ndefs != 1:
        return None
    fam = inst.family
    src = _single_source(inst)
    if src is None:
        return None
    dst = inst.operands[0]
    if not isinstance(dst, ir.Register) or dst.type.is_pred:
        return None
    if fam == "ld" and inst.opcode.startswith("ld.param") and isinstance(src, ir.Address) \
            and isinstance(src.base, ir.Symbol):
        return "parameter"
    if fam == "mov":
        if isinstance(src, (ir.Immediate, ir.Symbol)):
            return "immediate"
        if isinstance(src, ir.SpecialReg):
            return "special"
        if isinstance(src, ir.Register) and src.units == dst.units and not src.type.is_pred:
            return "alias"
    if fam == "cvta" and ".to." in inst.opcode and isinstance(src, ir.Register):
        return "alias"
    if fam == "cvt" and inst.opcode.endswith(_WIDENING) and isinstance(src, ir.Register) \
            and src.units == 1 and dst.units == 2:
        return "widen"
    return None


def _offset_fold(inst: ir.Instruction) -> ir.Register | None:
    """The base register of ``add d, base, imm`` (the candidate for folding into addresses)."""
    if inst.family != "add" or inst.guard is not None or inst.ndefs != 1:
        return None
    ops = inst.operands
    if len(ops) != 3 or not isinstance(ops[0], ir.Register) or ops[0].type.is_pred:
        return None
    if ops[0].units not in (1, 2) or inst.opcode.endswith((".f32", ".f64", ".f16", ".f16x2")):
        return None
    if isinstance(ops[1], ir.Register) and isinstance(ops[2], ir.Immediate):
        return ops[1]
    return None


def _held_offsets(insts, reads: list) -> set:
    """Names of the ``add d, base, imm`` results that ptxas keeps in a register: defined
    after a warp shuffle and read after a later one (model 9).  ``reads``: :func:`_scan`'s."""
    if not any(i.family == "shfl" for i in insts):
        return set()
    seen = 0
    after: list = []  # per instruction: the shuffles before it
    defined: dict = {}  # candidate name -> the shuffles before its definition
    for inst in insts:
        after.append(seen)
        if seen and _offset_fold(inst) is not None:
            defined[inst.operands[0].name] = seen
        if inst.family == "shfl":
            seen += 1
    held = set()
    for n, names in enumerate(reads):
        for name in names:
            k = defined.get(name)
            if k is not None and after[n] > k:
                held.add(name)
    return held


def _sink(body, names: set) -> list:
    """The positions of ``body`` in a new order: the definitions of ``names`` (each defined
    once) moved right after the last warp shuffle before the first instruction that reads
    them, where that instruction is in the definition's basic block (elsewhere they stay)."""
    Instruction, Register, Address = ir.Instruction, ir.Register, ir.Address
    targets = {op.name for stmt in body if isinstance(stmt, Instruction)
               for op in stmt.operands if isinstance(op, ir.LabelRef)}
    defs: dict = {}
    at: dict = {}  # definition position -> where it goes (after that position)
    last_shfl = last_edge = -1
    for n, stmt in enumerate(body):
        if not isinstance(stmt, Instruction):
            if isinstance(stmt, ir.Label) and stmt.name in targets:  # a block starts
                last_edge = n
            continue
        for op in stmt.operands[stmt.ndefs:]:
            t = type(op)   # registers_in, without a generator for the usual operands
            regs = (op,) if t is Register else () if t in _NO_REGISTERS else \
                ((op.base,) if type(op.base) is Register else ()) if t is Address \
                else tuple(ir.registers_in(op))
            for r in regs:
                d = defs.pop(r.name, None)
                if d is not None:
                    at[d] = max(last_shfl, d) if last_edge < d else d
        if stmt.ndefs == 1 and isinstance(stmt.operands[0], Register) \
                and stmt.operands[0].name in names:
            defs[stmt.operands[0].name] = n
        if stmt.family == "shfl":
            last_shfl = n
        elif stmt.family in _ENDS_BLOCK:
            last_edge = n
    after: dict = {}
    for d, n in at.items():
        after.setdefault(n, []).append(d)
    order = []
    for n, stmt in enumerate(body):
        if n not in at or at[n] == n:
            order.append(n)
        order.extend(d for d in after.get(n, ()) if body[d] is not stmt)
    return order


def _address_only(uses: list) -> bool:
    """Every use is the base of an address in a memory instruction."""
    return bool(uses) and all(kind == "address" for kind in uses)


def _scan(instructions) -> tuple[Counter, dict, list]:
    """Definition counts per register name; per name, how each use reads it; per
    instruction, the names its operands read (what :func:`_rewrite` may replace)."""
    counts: dict = {}
    uses: dict = {}
    reads: list = []
    Register, Address = ir.Register, ir.Address
    simple = _NO_REGISTERS
    count, used = counts.get, uses.get

    for inst in instructions:
        ops = inst.operands
        nd = inst.ndefs
        if nd == 1 and ops and type(ops[0]) is Register:  # one register result: its defs
            name = ops[0].name
            counts[name] = count(name, 0) + 1
        elif nd:
            for r in inst.defs:
                counts[r.name] = count(r.name, 0) + 1
        value = "address" if inst.family in _MEMORY else "value"  # how an address base reads
        names: list = []
        for k, op in enumerate(ops):
            t = type(op)
            if t is Address:
                if isinstance(op.base, Register):
                    name, kind = op.base.name, value
                else:
                    continue
            elif k < nd or t in simple:
                continue
            elif t is Register:
                name, kind = op.name, "value"
            else:
                kind = value if isinstance(op, Address) else "value"
                for r in ir.registers_in(op):
                    names.append(r.name)
                    seen = used(r.name)
                    if seen is None:
                        uses[r.name] = [kind]
                    else:
                        seen.append(kind)
                continue
            names.append(name)
            seen = used(name)
            if seen is None:
                uses[name] = [kind]
            else:
                seen.append(kind)
        reads.append(names)
        if inst.guard is not None:
            name = inst.guard.register.name
            seen = used(name)
            if seen is None:
                uses[name] = ["value"]
            else:
                seen.append("value")
    return Counter(counts), uses, reads


#: The kinds of value :func:`sass_view` takes out by default (see the module docstring).
KINDS = ("parameter", "immediate", "alias", "offset", "widen")


#: Special registers that are the same for every thread of a block.
_UNIFORM_SPECIALS = ("%ctaid", "%nctaid", "%ntid", "%nsmid", "%gridid")
_ENDS_BLOCK = frozenset(families_with(Terminator))


def _uniform_loads(body, insts, ndefs: Counter) -> set:
    """Names of the 32-bit values loaded by an unguarded ``ld.global.nc`` from a warp-uniform
    address (every register the address depends on is defined once, from parameters,
    immediates, symbols and the block-wide special registers) and read only in the basic
    block that loads them: ptxas can keep them in uniform registers, outside the count
    (``fir_run<16,16>``: ``LDG.E.CONSTANT R0, [R2.64+0x20]`` / ``R2UR UR7, R0``, a UGPR peak
    of 18; docs/prediction.md, "Uniform loads")."""
    uniform: set = set()
    out: set = set()
    for inst in insts:
        if inst.guard is not None or inst.ndefs != 1:
            continue
        dst = inst.operands[0]
        if not isinstance(dst, ir.Register) or dst.type.is_pred or ndefs[dst.name] != 1:
            continue
        if not all(op.name.startswith(_UNIFORM_SPECIALS) if isinstance(op, ir.SpecialReg)
                   else all(r.name in uniform for r in ir.registers_in(op))
                   for op in inst.operands[1:]):
            continue
        if inst.family not in _MEMORY or inst.opcode.startswith("ld.param"):
            uniform.add(dst.name)
        elif inst.opcode.startswith("ld.global.nc") and dst.units == 1:
            out.add(dst.name)
    if not out:
        return out
    block, where = 0, {}  # a value read outside the block that loads it stays in a register
    for stmt in body:
        if not isinstance(stmt, ir.Instruction):
            block += 1
            continue
        for k, op in enumerate(stmt.operands):
            for r in ir.registers_in(op):
                if k < stmt.ndefs and r.name in out and not isinstance(op, ir.Address):
                    where[r.name] = block
                elif r.name in out and where.get(r.name) != block:
                    out.discard(r.name)
        if stmt.guard is not None and stmt.guard.register.name in out:
            out.discard(stmt.guard.register.name)
        if stmt.family in _ENDS_BLOCK:
            block += 1
    return out


#: Families that compute a value from their operands alone, on the ALU (no memory, warp,
#: control or special-function trait in the opcode table): with integer types and operands
#: the same in every lane, sm_75+ runs them on the uniform datapath (``UIADD3``, ``UIMAD``,
#: ``ULOP3``, ``USHF``, ``USEL``, ``UISETP``, ``UMOV``); sm_80 has no uniform float datapath.
_UNIFORM_ALU = frozenset(name for name, row in FAMILIES.items()
                         if not row.traits and row.latency == "alu")
_FLOAT_TYPES = (".f16", ".f32", ".f64", ".bf16", ".tf32")


def _uniform_definition(inst: ir.Instruction) -> bool:
    """``inst`` may define a warp-uniform value: unguarded ``ld.param`` or integer ALU, its
    special-register operands block-wide (``%ctaid``, ``%nctaid``, ``%ntid``)."""
    op = inst.opcode
    if inst.guard is not None:
        return False
    if inst.family == "ld":
        if not op.startswith("ld.param"):
            return False
    elif inst.family not in _UNIFORM_ALU or any(t in op for t in _FLOAT_TYPES):
        return False
    return not any(isinstance(o, ir.SpecialReg) and not o.name.startswith(_UNIFORM_SPECIALS)
                   for o in inst.operands)


def _warp_uniform(kernel: ir.Kernel, insts, reads: list, cfg=None) -> set:
    """Names of the integer values that are the same for every thread of a warp (every
    definition :func:`_uniform_definition`, every register it reads such a value, loop
    variables included) and are read by an instruction inside a loop: ptxas keeps them in
    uniform registers or the constant bank (module docstring; docs/prediction.md, "Warp-uniform
    values in loops")."""
    cfg = cfg or build_cfg(kernel)
    if not cfg.loops:
        return set()
    defs: dict = {}
    for inst in insts:
        for r in inst.defs:
            defs.setdefault(r.name, []).append(inst)
    ok = {name for name, ds in defs.items() if all(_uniform_definition(i) for i in ds)}
    # drop the values that read a non-uniform one, and then their readers (a worklist: each
    # value is dropped once)
    readers: dict = {}
    drop = []
    for name in ok:
        for inst in defs[name]:
            for k, o in enumerate(inst.operands):
                if k < inst.ndefs:
                    continue
                for r in ir.registers_in(o):
                    readers.setdefault(r.name, set()).add(name)
                    if r.name not in ok:
                        drop.append(name)
    while drop:
        name = drop.pop()
        if name in ok:
            ok.discard(name)
            drop.extend(readers.get(name, ()))
    if not ok:
        return ok
    in_loops: set = set()
    for lp in cfg.loops:
        for b in lp.blocks:
            for n in range(cfg.blocks[b].start, cfg.blocks[b].end):
                in_loops.update(reads[n])
                if insts[n].guard is not None:
                    in_loops.add(insts[n].guard.register.name)
    return ok & in_loops


def sass_view(kernel: ir.Kernel, *, kinds=KINDS, cfg=None,
              base: SassView | None = None) -> SassView:
    """``kernel`` with the values that need no register in SASS rewritten (module docstring);
    ``folded`` counts the values taken out, by kind (``parameter``, ``immediate``,
    ``special``, ``alias``, ``offset``, ``widen``, ``uniform``, ``warp-uniform``).  ``cfg``
    is the kernel's control-flow graph when the caller has it (``warp-uniform`` reads its
    loops).  ``base`` is a view of the same ``kernel`` the caller has: its reading of the
    body is reused, and when ``kinds`` are its kinds plus ``uniform`` or ``warp-uniform``
    and those fold nothing, ``base`` itself is the answer (the same plan, the same view)."""
    prep = base.prepared if base is not None else None
    if prep is None or prep.source is not kernel or prep.offsets != ("offset" in kinds):
        prep = _prepare(kernel, "offset" in kinds)
    body, insts, ndefs, uses, reads, _, folds = prep[2:]
    # name -> ("free", None) | ("remat", source operand) | ("alias", Register)
    plan: dict = {}
    folded: Counter = Counter()
    if "uniform" in kinds:
        for name in _uniform_loads(body, insts, ndefs):
            plan[name] = ("free", None)
            folded["uniform"] += 1
    uniform: set = set()
    if "warp-uniform" in kinds:
        # what another kind takes out is left to it (the same effect, its own name)
        other = {i.operands[0].name for i, f in zip(insts, folds)
                 if f is not None and f != "offset" and f in kinds}
        uniform = {name for name in _warp_uniform(kernel, insts, reads, cfg)
                   if name not in plan and (ndefs[name] != 1 or name not in other)}
        if uniform:
            folded["warp-uniform"] = len(uniform)
    if base is not None and not plan and not uniform and base.prepared is prep \
            and set(kinds) - set(base.kinds) <= {"uniform", "warp-uniform"} \
            and set(base.kinds) <= set(kinds):
        return base   # the extra kinds fold nothing: the plan below is the base's
    for inst, kind in zip(insts, folds):
        if kind is None or kind not in kinds:
            continue
        if uniform and inst.operands[0].name in uniform:
            continue
        dst = inst.operands[0]
        if ndefs[dst.name] != 1:
            continue
        src = _single_source(inst) if kind != "offset" else inst.operands[1]
        if kind in ("alias", "offset", "widen"):
            while isinstance(src, ir.Register) and plan.get(src.name, ("",))[0] == "alias":
                src = plan[src.name][1]
            if isinstance(src, ir.Register) and src.name in plan:
                # an alias of a free value is free (re-read where it is an address)
                plan[dst.name] = ("remat", None) if "address" in uses.get(dst.name, []) \
                    else plan[src.name]
            elif isinstance(src, ir.Register) and ndefs[src.name] == 1:
                plan[dst.name] = ("alias", src)
            else:
                continue
        elif kind == "special":
            plan[dst.name] = ("remat", src)
        else:
            plan[dst.name] = ("remat", src) if "address" in uses.get(dst.name, []) \
                else ("free", None)
        folded[kind] += 1
    out = _rewrite(body, plan, reads)
    if uniform:
        out = _uniform_registers(out, uniform)
    return SassView(kernel=attrs.evolve(kernel, body=tuple(out)), folded=dict(folded),
                    prepared=prep, kinds=tuple(kinds))


def _prepare(kernel: ir.Kernel, offsets: bool) -> _Prepared:
    """:class:`_Prepared` for ``kernel``: its body scanned, with the held offset definitions
    (``offsets``: ``"offset"`` among the kinds) sunk next to their first use (model 9)."""
    # a label that nothing names ends no block (model 10): not for the uniform loads' blocks
    # either, nor for the scheduler that reads the view
    body = named_labels_only(tuple(kernel.body or ()))
    insts = [s for s in body if isinstance(s, ir.Instruction)]
    ndefs, uses, reads = _scan(insts)
    held = _held_offsets(insts, reads) if offsets else set()
    held = {name for name in held if ndefs[name] == 1}
    if held:  # ptxas computes them next to their first use (model 9)
        # the same instructions in another order: the counts and each name's kinds of use
        # stay (their lists' order is never read), each instruction's reads go with it
        at = [p for p, stmt in enumerate(body) if isinstance(stmt, ir.Instruction)]
        nth = dict(zip(at, range(len(at))))
        order = _sink(body, held)
        body = tuple(body[p] for p in order)
        moved = [nth[p] for p in order if p in nth]
        insts, reads = [insts[k] for k in moved], [reads[k] for k in moved]
    folds = list(map(fold_kind, insts))
    if offsets:
        for n, inst in enumerate(insts):
            if folds[n] is None and _offset_fold(inst) is not None \
                    and _address_only(uses.get(inst.operands[0].name, [])) \
                    and inst.operands[0].name not in held:
                folds[n] = "offset"
    return _Prepared(kernel, offsets, body, insts, ndefs, uses, reads, held, folds)


def _uniform_registers(body, names: set):
    """``body`` with the registers called ``names`` moved out of the general register file:
    each becomes a register of a class that no count includes (a predicate's), so its
    definitions and uses stay where they are, with their dependences, and take no unit."""

    def sub(op):
        if isinstance(op, ir.Register) and op.name in names:
            return ir.Register(op.name, T.pred)
        if isinstance(op, ir.Address) and isinstance(op.base, ir.Register):
            return ir.Address(sub(op.base), op.offset)
        if isinstance(op, ir.Vector):
            return ir.Vector(tuple(sub(e) for e in op.elements), op.style)
        return op

    for stmt in body:
        if isinstance(stmt, ir.Instruction):
            ops = tuple(sub(o) for o in stmt.operands)
            if ops != stmt.operands:
                stmt = ir.Instruction(stmt.opcode, ops, stmt.ndefs, stmt.guard, stmt.loc) \
                    if type(stmt) is ir.Instruction else attrs.evolve(stmt, operands=ops)
        yield stmt


def _rewrite(body, plan: dict, reads: list):
    """The body with planned definitions dropped and their uses rewritten (``reads``: per
    instruction, the register names its operands read, from :func:`_scan`)."""
    if not plan:
        yield from body
        return
    serial = 0
    remats: list = []

    def sub(op, in_address=False):
        nonlocal serial
        if isinstance(op, ir.Register):
            entry = plan.get(op.name)
            if entry is None:
                return op
            how, what = entry
            if how == "alias":
                return what
            if how == "free" and not in_address:
                return _ZERO
            serial += 1
            fresh = ir.Register(f"{op.name}%remat{serial}", op.type)
            remats.append(ir.Instruction(f"mov.b{32 * max(op.units, 1)}", (fresh, _ZERO), 1))
            return fresh
        if isinstance(op, ir.Address) and isinstance(op.base, ir.Register):
            return ir.Address(sub(op.base, True), op.offset)
        if isinstance(op, ir.Vector):
            return ir.Vector(tuple(sub(e, in_address) for e in op.elements), op.style)
        return op

    unplanned = plan.keys().isdisjoint
    n = -1
    for stmt in body:
        if not isinstance(stmt, ir.Instruction):
            yield stmt
            continue
        n += 1
        if stmt.ndefs == 1 and isinstance(stmt.operands[0], ir.Register) \
                and stmt.operands[0].name in plan:
            continue
        if unplanned(reads[n]):  # none of the registers ``sub`` may rewrite is planned
            yield stmt
            continue
        remats.clear()
        ops = tuple(op if (k < stmt.ndefs and not isinstance(op, ir.Address)) else sub(op)
                    for k, op in enumerate(stmt.operands))
        yield from remats
        if ops == stmt.operands:
            yield stmt
        elif type(stmt) is ir.Instruction:  # attrs.evolve without its cost
            yield ir.Instruction(stmt.opcode, ops, stmt.ndefs, stmt.guard, stmt.loc)
        else:
            yield attrs.evolve(stmt, operands=ops)
