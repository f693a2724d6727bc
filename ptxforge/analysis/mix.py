"""Instruction mix of a kernel: the tables people otherwise count by hand with grep.

Per kernel: counts per opcode family (``fma``) and per full opcode (``fma.rn.f64``); memory
groups by operation and state space (``ld.global``, ``st.local``, ``atom.shared`` …); a
breakdown of ``selp`` by operand kind — two literals, a literal and a register (of which
*zero-clipping*: the literal is 0), two registers — overall and per type; and the number
of virtual registers per declared type (``.f64 → 2981``).

Example::

    >>> from ptxforge.ptx.parse import parse
    >>> from ptxforge.analysis.mix import instruction_mix
    >>> m = parse('''.version 8.0
    ... .target sm_80
    ... .address_size 64
    ... .visible .entry k()
    ... {
    ...     .reg .pred %p<2>;
    ...     .reg .f64 %fd<4>;
    ...     setp.eq.u32 %p1, %tid.x, 0;
    ...     selp.f64 %fd1, 0d3FF0000000000000, 0d4000000000000000, %p1;
    ...     selp.f64 %fd2, 0d0000000000000000, %fd1, %p1;
    ...     selp.f64 %fd3, %fd1, %fd2, %p1;
    ...     ret;
    ... }''')
    >>> mix = instruction_mix(m.kernel("k"))
    >>> s = mix.selp
    >>> (s.total, s.literal_pair, s.literal_register, s.zero_clip, s.register_pair)
    (3, 1, 1, 1, 1)
    >>> mix.vregs
    {'f64': 3, 'pred': 1}
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Iterable, Optional

import attrs

from ptxforge.ptx import ir
from ptxforge.ptx.opcodes import FAMILIES, SPACES, opcode_of

__all__ = [
    "SelpBreakdown",
    "InstructionMix",
    "instruction_mix",
    "module_mix",
    "virtual_registers",
    "declared_registers",
    "format_mix",
    "mix_to_json",
    "MEMORY_FAMILIES",
    "SELP_KINDS",
]

#: Families whose group key includes the state space (``ld.global``, ``st.local`` …).
#: (The families with a memory access that name their space in a modifier: not textures and
#: surfaces, not wmma, whose sub-opcode says whether it touches memory.)
MEMORY_FAMILIES = tuple(name for name, row in FAMILIES.items() if row.memory is not None
                        and not row.memory.texture and row.memory.direction != "fragment")
_SPACES = SPACES
#: The selp operand-kind categories, in report order.
SELP_KINDS = ("literal_pair", "literal_register", "zero_clip", "register_pair")


def _sorted_counts(counter: Counter) -> dict:
    """Counts sorted by count (descending), then key: a stable order for text and JSON."""
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


@attrs.frozen(slots=True, kw_only=True)
class SelpBreakdown:
    """``selp`` instructions by the kind of their two selectable operands.

    ``literal_register`` includes ``zero_clip`` (the literal is 0, e.g. ``0d0000000000000000``:
    a masked value); ``by_type`` maps the selp type (``f64``, ``b32``, ``s32`` …) to a dict
    with ``total`` and the same four categories.
    """

    total: int = 0
    literal_pair: int = 0
    literal_register: int = 0
    zero_clip: int = 0
    register_pair: int = 0
    by_type: dict = attrs.field(factory=dict)

    def to_dict(self) -> dict:
        return {"total": self.total, "literal_pair": self.literal_pair,
                "literal_register": self.literal_register, "zero_clip": self.zero_clip,
                "register_pair": self.register_pair,
                "by_type": {t: dict(v) for t, v in self.by_type.items()}}


@attrs.frozen(slots=True, kw_only=True)
class InstructionMix:
    """The instruction mix of one kernel (see the module docstring for each table)."""

    kernel: str
    instructions: int
    by_family: dict
    by_opcode: dict
    groups: dict
    selp: SelpBreakdown
    vregs: dict
    declared: dict

    def count(self, prefix: str) -> int:
        """Instructions whose opcode is ``prefix`` or starts with ``prefix + '.'``
        (``count("setp")``, ``count("fma.rn.f64")``, ``count("ld.global")`` for the group)."""
        if prefix in self.groups:
            return self.groups[prefix]
        return sum(n for op, n in self.by_opcode.items()
                   if op == prefix or op.startswith(prefix + "."))

    def to_dict(self) -> dict:
        """JSON-ready dict with stable keys."""
        return {"kernel": self.kernel, "instructions": self.instructions,
                "vregs": dict(self.vregs), "declared": dict(self.declared),
                "by_family": dict(self.by_family), "by_opcode": dict(self.by_opcode),
                "groups": dict(self.groups), "selp": self.selp.to_dict()}


def _group(opcode: str) -> Optional[str]:
    op = opcode_of(opcode)
    parts = [op.family, *op.parts]
    family = op.family
    if family not in MEMORY_FAMILIES:
        return None
    if family == "cp" and len(parts) > 1 and parts[1] == "async":
        return _async_copy_group(parts)
    for p in parts[1:]:
        base = p.split("::", 1)[0]
        if base in _SPACES:
            return f"{family}.{base}"
    return f"{family}.generic"


def _async_copy_group(parts: list) -> Optional[str]:
    """``cp.async.global_to_shared`` and friends: an async copy by its direction (the PTX names
    the destination space first: ``cp.async.cg.shared.global``); None for the group and
    barrier bookkeeping (``cp.async.commit_group``, ``.wait_group``, ``.mbarrier.arrive``)."""
    spaces = [p.split("::", 1)[0] for p in parts[2:] if p.split("::", 1)[0] in _SPACES]
    if len(spaces) < 2:
        return None
    return f"cp.async.{spaces[1]}_to_{spaces[0]}"


def _selp_kind(a, b) -> str:
    lit_a, lit_b = isinstance(a, ir.Immediate), isinstance(b, ir.Immediate)
    if lit_a and lit_b:
        return "literal_pair"
    if lit_a or lit_b:
        lit = a if lit_a else b
        return "zero_clip" if lit.value == 0 else "literal_register"
    return "register_pair"


def _selp(instructions: Iterable[ir.Instruction]) -> SelpBreakdown:
    totals: Counter = Counter()
    by_type: dict[str, Counter] = {}
    for inst in instructions:
        if not (inst.opcode.startswith("selp.") and len(inst.operands) >= 3):
            continue
        kind = _selp_kind(inst.operands[1], inst.operands[2])
        ty = inst.opcode.rsplit(".", 1)[1]
        c = by_type.setdefault(ty, Counter())
        for counter in (totals, c):
            counter["total"] += 1
            counter[kind] += 1
            if kind == "zero_clip":
                counter["literal_register"] += 1
    per_type = {t: {k: by_type[t][k] for k in ("total",) + SELP_KINDS}
                for t in sorted(by_type, key=lambda t: (-by_type[t]["total"], t))}
    return SelpBreakdown(total=totals["total"], literal_pair=totals["literal_pair"],
                         literal_register=totals["literal_register"],
                         zero_clip=totals["zero_clip"], register_pair=totals["register_pair"],
                         by_type=per_type)


def virtual_registers(kernel: ir.Kernel) -> dict:
    """Distinct registers the body mentions, per declared type (``{"f64": 2981, …}``)."""
    seen: dict = {}  # name -> type name (names are cheap to hash; Registers are not)
    Register, Address, literal = ir.Register, ir.Address, _LITERALS
    for inst in kernel.instructions:
        for operand in inst.operands:
            t = type(operand)
            if t is Register:
                seen[operand.name] = operand.type.name
            elif t is Address:
                if type(operand.base) is Register:
                    seen[operand.base.name] = operand.base.type.name
            elif t not in literal:
                for r in ir.registers_in(operand):
                    seen[r.name] = r.type.name
        if inst.guard is not None:
            g = inst.guard.register  # a Register (a lenient parse's SpecialReg has a type too)
            seen[g.name] = g.type.name if g.type is not None else "?"
    return _sorted_counts(Counter(seen.values()))


_LITERALS = frozenset({ir.Immediate, ir.SpecialReg, ir.Symbol, ir.LabelRef, ir.Raw})  # no registers


def declared_registers(kernel: ir.Kernel) -> dict:
    """Registers the declarations provide, per type (``.reg .f64 %fd<2982>`` counts 2982)."""
    c: Counter = Counter()
    for d in kernel.reg_decls:
        c[d.type] += 1 if d.count is None else d.count
    return _sorted_counts(c)


def instruction_mix(kernel: ir.Kernel) -> InstructionMix:
    """Count the instruction mix of one kernel (or device function)."""
    insts = kernel.instructions
    by_opcode = Counter(i.opcode for i in insts)
    by_family: Counter = Counter()
    groups: Counter = Counter()
    for op, n in by_opcode.items():
        by_family[opcode_of(op).family] += n
        g = _group(op)
        if g is not None:
            groups[g] += n
    return InstructionMix(kernel=kernel.name, instructions=len(insts),
                          by_family=_sorted_counts(by_family), by_opcode=_sorted_counts(by_opcode),
                          groups=_sorted_counts(groups), selp=_selp(insts),
                          vregs=virtual_registers(kernel), declared=declared_registers(kernel))


def module_mix(module: ir.Module, *, entries_only: bool = False) -> dict:
    """``{function name: InstructionMix}`` for every function with a body, in module order."""
    out = {}
    for k in module.kernels:
        if k.body is None or (entries_only and not k.is_entry):
            continue
        out[k.name] = instruction_mix(k)
    return out


def format_mix(mix: InstructionMix, *, top: int = 20) -> str:
    """A human-readable table of one kernel's mix (the ``top`` most frequent opcodes)."""
    lines = [f"kernel {mix.kernel}: {mix.instructions} instructions"]
    if mix.vregs:
        lines.append("virtual registers: " + ", ".join(f".{t} {n}" for t, n in mix.vregs.items()))
    lines.append("")
    width = max([len(op) for op in list(mix.by_opcode)[:top]] + [6])
    lines.append(f"  {'opcode':<{width}}  {'count':>7}")
    for op, n in list(mix.by_opcode.items())[:top]:
        lines.append(f"  {op:<{width}}  {n:>7}")
    rest = len(mix.by_opcode) - top
    if rest > 0:
        lines.append(f"  … {rest} more opcodes")
    lines.append("")
    lines.append("families: " + ", ".join(f"{f} {n}" for f, n in mix.by_family.items()))
    if mix.groups:
        lines.append("memory: " + ", ".join(f"{g} {n}" for g, n in mix.groups.items()))
    s = mix.selp
    if s.total:
        lines.append(f"selp: {s.total} total: {s.literal_pair} literal pair, "
                     f"{s.literal_register} literal/register (of which {s.zero_clip} zero-clip), "
                     f"{s.register_pair} register pair")
        for t, c in s.by_type.items():
            lines.append(f"  selp.{t}: {c['total']} ({c['literal_pair']} literal pair, "
                         f"{c['literal_register']} literal/register, {c['zero_clip']} zero-clip, "
                         f"{c['register_pair']} register pair)")
    return "\n".join(lines) + "\n"


def mix_to_json(mixes: dict, **dump_kwargs) -> str:
    """JSON text of ``{name: InstructionMix}`` (stable key order)."""
    return json.dumps({n: m.to_dict() for n, m in mixes.items()}, **dump_kwargs)
