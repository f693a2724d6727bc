"""Attribute registers to the source lines that defined them.

PTX compiled with line information (``-lineinfo``, Julia/clang debug info) carries ``.loc``
directives; the parser attaches them to every instruction as :class:`~ptxforge.ir.SourceLoc`
(file, line, column, the function it was inlined from, and the call site).  Given a set of
registers — typically the values live at the pressure peak — :func:`attribute_registers`
maps each to the location of its first defining instruction and aggregates them by source
line: "these 40 live registers were defined on weno_coefficients.jl line 92".

Example::

    >>> from ptxforge.parse import parse
    >>> from ptxforge.attribution import attribute_registers
    >>> k = parse('''.version 8.0
    ... .target sm_80
    ... .address_size 64
    ... .visible .entry k(.param .u64 p)
    ... {
    ...     .reg .b64 %rd<4>;
    ...     .loc 1 7 3
    ...     ld.param.u64 %rd1, [p];
    ...     .loc 1 9 5
    ...     ld.global.u64 %rd2, [%rd1];
    ...     ld.global.u64 %rd3, [%rd1+8];
    ...     ret;
    ... }
    ... .file 1 "a.cu"''').kernel("k")
    >>> a = attribute_registers(k, [r for i in k.instructions for r in i.defs])
    >>> [(str(s.loc), s.values, s.units) for s in a.lines]
    [('a.cu:9', 2, 4), ('a.cu:7', 1, 2)]
"""

from __future__ import annotations

from typing import Iterable, Optional

import attrs

from . import ir

__all__ = [
    "ValueSource",
    "LineShare",
    "Attribution",
    "first_definitions",
    "attribute_registers",
    "callsite",
]


@attrs.frozen(slots=True)
class ValueSource:
    """Where one register got its (first) value: instruction index, opcode and source line."""

    register: ir.Register
    index: Optional[int]
    opcode: Optional[str]
    loc: Optional[ir.SourceLoc]

    def to_dict(self) -> dict:
        return {"register": self.register.name, "type": self.register.type.name,
                "instruction": self.index, "opcode": self.opcode, **_loc_dict(self.loc)}


@attrs.frozen(slots=True)
class LineShare:
    """Registers attributed to one source location.

    ``values`` counts registers; ``units`` their general-register 32-bit units (predicates
    count 0 there and are in ``predicates``).  ``registers`` lists their names.
    """

    loc: ir.SourceLoc
    values: int
    units: int
    predicates: int
    registers: tuple

    def to_dict(self) -> dict:
        return {**_loc_dict(self.loc), "values": self.values, "units": self.units,
                "predicates": self.predicates, "registers": list(self.registers)}


@attrs.frozen(slots=True)
class Attribution:
    """Per-register sources and their aggregation by source location (largest share first).

    ``unattributed`` holds the registers whose defining instruction has no ``.loc`` (or that
    are never defined, e.g. read-only inputs).
    """

    values: tuple
    lines: tuple
    unattributed: tuple
    by: str = "line"

    def to_dict(self) -> dict:
        return {"by": self.by, "lines": [s.to_dict() for s in self.lines],
                "values": [v.to_dict() for v in self.values],
                "unattributed": [v.register.name for v in self.unattributed]}

    def format(self, top: int = 10) -> str:
        """Text table: the ``top`` source locations by register units."""
        out = []
        for s in self.lines[:top]:
            where = str(s.loc)
            if s.loc.function:
                where += f" (in {s.loc.function}"
                if s.loc.inlined_at is not None:
                    where += f", inlined at {s.loc.inlined_at}"
                where += ")"
            out.append(f"  {s.values:>5} values {s.units:>5} units  {where}")
        if len(self.lines) > top:
            out.append(f"  … {len(self.lines) - top} more source locations")
        if self.unattributed:
            out.append(f"  {len(self.unattributed):>5} values without source location")
        return "\n".join(out) + "\n"


def _loc_dict(loc: Optional[ir.SourceLoc]) -> dict:
    if loc is None:
        return {"file": None, "line": None, "column": None, "function": None, "inlined_at": None}
    inl = None
    if loc.inlined_at is not None:
        inl = {"file": loc.inlined_at.file, "line": loc.inlined_at.line,
               "column": loc.inlined_at.column}
    return {"file": loc.file, "line": loc.line, "column": loc.column, "function": loc.function,
            "inlined_at": inl}


def callsite(loc: ir.SourceLoc) -> ir.SourceLoc:
    """The outermost location of an inlined chain: the line in the kernel's own code."""
    while loc.inlined_at is not None:
        loc = loc.inlined_at
    return loc


def first_definitions(kernel: ir.Kernel) -> dict:
    """``{register: (instruction index, instruction)}`` for the first definition of each."""
    out: dict = {}
    for index, inst in enumerate(kernel.instructions):
        for reg in inst.defs:
            if reg not in out:
                out[reg] = (index, inst)
    return out


def attribute_registers(kernel: ir.Kernel, registers: Iterable[ir.Register], *,
                        by: str = "line", definitions: Optional[dict] = None) -> Attribution:
    """Map each register to the source location of its first definition and aggregate.

    ``by="line"`` groups by the location of the defining instruction itself (inside an
    inlined helper, that is the helper's line); ``by="callsite"`` groups by the outermost
    call site, i.e. the line of the kernel's own source that the helper was inlined into.
    Column and function are dropped from the grouping key (file and line only).
    ``definitions`` may pass a precomputed :func:`first_definitions` result.
    """
    if by not in ("line", "callsite"):
        raise ValueError(f"by must be 'line' or 'callsite', got {by!r}")
    defs = first_definitions(kernel) if definitions is None else definitions
    values, missing = [], []
    groups: dict = {}
    for reg in sorted(set(registers), key=lambda r: r.name):
        found = defs.get(reg)
        if found is None or found[1].loc is None:
            src = ValueSource(reg, found[0] if found else None,
                              found[1].opcode if found else None, None)
            values.append(src)
            missing.append(src)
            continue
        index, inst = found
        src = ValueSource(reg, index, inst.opcode, inst.loc)
        values.append(src)
        loc = inst.loc if by == "line" else callsite(inst.loc)
        key = (loc.file, loc.line)
        entry = groups.get(key)
        if entry is None:
            # keep the first location seen for this line (with its function and call site)
            entry = groups[key] = [ir.SourceLoc(loc.file, loc.line, 0, loc.function,
                                                loc.inlined_at), []]
        entry[1].append(reg)
    lines = []
    for loc, regs in groups.values():
        units = sum(r.units for r in regs if not r.type.is_pred)
        preds = sum(1 for r in regs if r.type.is_pred)
        lines.append(LineShare(loc, len(regs), units, preds, tuple(r.name for r in regs)))
    lines.sort(key=lambda s: (-s.units, -s.values, s.loc.file, s.loc.line))
    return Attribution(tuple(values), tuple(lines), tuple(missing), by)
