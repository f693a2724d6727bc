"""Attribute registers to the source lines that defined them.

PTX compiled with line information (``-lineinfo``, Julia/clang debug info) carries ``.loc``
directives; the parser attaches them to every instruction as :class:`~ptxforge.ptx.ir.SourceLoc`
(file, line, column, the function it was inlined from, and the chain of call sites).  Given a
set of registers — typically the values live at the pressure peak — :func:`attribute_registers`
maps each to the location of its first defining instruction and aggregates them by source
line: "these 40 live registers were defined on weno_coefficients.jl line 92", or by the line
of the kernel that (possibly nested) inlined helpers were called from.  :func:`describe_loc`
prints a location with its inlining chain and demangled names for reports.

Example::

    >>> from ptxforge.ptx.parse import parse
    >>> from ptxforge.analysis.attribution import attribute_registers
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

from ptxforge.ptx import ir
from ptxforge.ptx.demangle import demangle_function

__all__ = [
    "ValueSource",
    "LineShare",
    "Attribution",
    "first_definitions",
    "attribute_registers",
    "callsite",
    "describe_loc",
]


@attrs.frozen(slots=True, kw_only=True)
class ValueSource:
    """Where one register got its (first) value: instruction index, opcode and source line."""

    register: ir.Register
    index: Optional[int]
    opcode: Optional[str]
    loc: Optional[ir.SourceLoc]

    def to_dict(self) -> dict:
        return {"register": self.register.name, "type": self.register.type.name,
                "instruction": self.index, "opcode": self.opcode, **_loc_dict(self.loc)}


@attrs.frozen(slots=True, kw_only=True)
class LineShare:
    """Registers attributed to one source location.

    ``values`` counts registers; ``units`` their general-register 32-bit units (predicates
    count 0 there and are in ``predicates``).  ``registers`` lists their names.  ``contexts``
    is the number of distinct inlining chains the values came through (``by="line"``: a
    helper's line inlined at three call sites has 3; ``loc`` keeps the first one seen).
    A ``loc`` with line 0 is the one group of compiler-generated values (no source line).
    """

    loc: ir.SourceLoc
    values: int
    units: int
    predicates: int
    registers: tuple
    contexts: int = 1

    @property
    def compiler_generated(self) -> bool:
        return not self.loc.known

    def to_dict(self) -> dict:
        return {**_loc_dict(self.loc), "values": self.values, "units": self.units,
                "predicates": self.predicates, "registers": list(self.registers),
                "contexts": self.contexts}


@attrs.frozen(slots=True, kw_only=True)
class Attribution:
    """Per-register sources and their aggregation by source location (largest share first).

    ``unattributed`` holds the registers whose defining instruction has no ``.loc`` (or that
    are never defined, e.g. read-only inputs).  ``kernel`` is the PTX function's name (the
    outermost frame of an inlining chain is its code).
    """

    values: tuple
    lines: tuple
    unattributed: tuple
    by: str = "line"
    kernel: Optional[str] = None

    def to_dict(self) -> dict:
        return {"by": self.by, "lines": [s.to_dict() for s in self.lines],
                "values": [v.to_dict() for v in self.values],
                "unattributed": [v.register.name for v in self.unattributed]}

    def format(self, top: int = 10) -> str:
        """Text table: the ``top`` source locations by register units, with their inlining
        chains and demangled function names (``k.cu:22 in sc ← :38 in weno5 ← :67 in Gu``)."""
        out = []
        for s in self.lines[:top]:
            if s.contexts > 1:
                where = f"{s.loc}{_in(s.loc.function)} (inlined at {s.contexts} call sites)"
            else:
                where = describe_loc(s.loc, self.kernel)
            out.append(f"  {s.values:>5} values {s.units:>5} units  {where}")
        if len(self.lines) > top:
            out.append(f"  … {len(self.lines) - top} more source locations")
        if self.unattributed:
            out.append(f"  {len(self.unattributed):>5} values without source location")
        return "\n".join(out) + "\n"


def _in(function: Optional[str]) -> str:
    return f" in {demangle_function(function)}" if function else ""


def describe_loc(loc: Optional[ir.SourceLoc], kernel: Optional[str] = None) -> str:
    """One line for a location and its inlining chain, innermost first, function names
    demangled: ``weno_big.cu:22 in sc ← :38 in weno5 ← :67 in Gu`` (``kernel`` names the
    outermost frame; a call site in the same file as the frame before it shows ``:line``).
    A location without inlining is ``file:line``; line 0 is ``(compiler-generated)``.

    Example::

        >>> from ptxforge.ptx.ir import SourceLoc
        >>> call = SourceLoc("k.cu", 67, 5)
        >>> describe_loc(SourceLoc("k.cu", 38, 13, "_Z5weno5PKdllib", call), "Gu")
        'k.cu:38 in weno5 ← :67 in Gu'
    """
    if loc is None:
        return "?"
    frames = loc.chain()
    if len(frames) == 1:
        return str(loc) + _in(loc.function)
    parts = []
    shown = None  # the file the text names last
    for frame in frames:
        if not frame.known:
            text, shown = "(compiler-generated)", None
        elif frame.file == shown:
            text = f":{frame.line}"
        else:
            text, shown = f"{frame.file}:{frame.line}", frame.file
        name = frame.function if frame.function or frame is not frames[-1] else kernel
        parts.append(text + _in(name))
    return " ← ".join(parts)


def _loc_dict(loc: Optional[ir.SourceLoc]) -> dict:
    """File, line (None for line 0), column, function and the call-site chain, nested."""
    if loc is None:
        return {"file": None, "line": None, "column": None, "function": None, "inlined_at": None}
    return {"file": loc.file, "line": loc.line if loc.known else None, "column": loc.column,
            "function": loc.function,
            "inlined_at": None if loc.inlined_at is None else _loc_dict(loc.inlined_at)}


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


_GENERATED = ("(compiler-generated)",)


def attribute_registers(kernel: ir.Kernel, registers: Iterable[ir.Register], *,
                        by: str = "line", definitions: Optional[dict] = None) -> Attribution:
    """Map each register to the source location of its first definition and aggregate.

    ``by="line"`` groups by the location of the defining instruction itself (inside an
    inlined helper, that is the helper's line); ``by="callsite"`` groups by the outermost
    call site, i.e. the line of the kernel's own source that the (possibly nested) helpers
    were inlined into.  Column and function are dropped from the grouping key (file and line
    only); line 0 (compiler-generated code) is one group of its own, whatever the file.
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
            src = ValueSource(register=reg, index=found[0] if found else None,
                              opcode=found[1].opcode if found else None, loc=None)
            values.append(src)
            missing.append(src)
            continue
        index, inst = found
        src = ValueSource(register=reg, index=index, opcode=inst.opcode, loc=inst.loc)
        values.append(src)
        loc = inst.loc if by == "line" else callsite(inst.loc)
        key = (loc.file, loc.line) if loc.known else _GENERATED
        entry = groups.get(key)
        if entry is None:
            # keep the first location seen for this line (with its function and call sites)
            first = (ir.SourceLoc(loc.file, loc.line, 0, loc.function, loc.inlined_at)
                     if loc.known else ir.SourceLoc(loc.file, 0))
            entry = groups[key] = [first, [], set()]
        entry[1].append(reg)
        entry[2].add(tuple((f.file, f.line) for f in loc.chain()[1:]))
    lines = []
    for loc, regs, contexts in groups.values():
        units = sum(r.units for r in regs if not r.type.is_pred)
        preds = sum(1 for r in regs if r.type.is_pred)
        lines.append(LineShare(loc=loc, values=len(regs), units=units, predicates=preds,
                               registers=tuple(r.name for r in regs),
                               contexts=len(contexts) if loc.known else 1))
    lines.sort(key=lambda s: (-s.units, -s.values, s.loc.file, s.loc.line))
    return Attribution(values=tuple(values), lines=tuple(lines), unattributed=tuple(missing), by=by,
                       kernel=kernel.name)
