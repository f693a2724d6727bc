"""The intermediate representation shared by both front doors (builder and parser).

Everything downstream (emit, cfg, liveness, compile, report) reads only these classes; it never
knows whether a kernel came from :class:`~ptxforge.dsl.builder.KernelBuilder` or from PTX text.
All classes are frozen and slotted; equality of registers is by name and type.

An :class:`Instruction` keeps its operands in PTX order.  The first ``ndefs`` operands are
destinations; every register appearing in the remaining operands (address bases, vector
elements, negated predicates) and in the guard predicate is a use.  An in-place op such as
``add.f32 %f1, %f1, %f2`` therefore both defines and uses ``%f1``, and so does an opcode
whose destination is also an input (:func:`reads_destination`: ``wgmma.mma_async``'s
accumulator).  Registers inside a bracketed operand (an address, or a texture/surface
reference ``[%rd2, {%f1, %f2}]``) are read wherever the operand stands.

Example::

    >>> from ptxforge.ptx import ir, types
    >>> a, b = ir.Register("%f1", types.f32), ir.Register("%f2", types.f32)
    >>> inst = ir.Instruction("add.f32", (a, a, b), ndefs=1)
    >>> [r.name for r in inst.defs], [r.name for r in inst.uses]
    (['%f1'], ['%f1', '%f2'])
"""

from __future__ import annotations

from typing import Iterator, Optional, Union

import attrs

from .opcodes import Opcode, opcode_of
from .types import PtxType, RegClass

__all__ = [
    "SourceLoc",
    "Register",
    "Immediate",
    "SpecialReg",
    "Symbol",
    "LabelRef",
    "Address",
    "Vector",
    "Negated",
    "Raw",
    "Operand",
    "READ_WRITE_OPCODES",
    "reads_destination",
    "Guard",
    "Instruction",
    "Label",
    "VarDecl",
    "Scope",
    "Directive",
    "Statement",
    "RegDecl",
    "Param",
    "Kernel",
    "Module",
    "registers_in",
]


@attrs.frozen(slots=True)
class SourceLoc:
    """Where a value or instruction came from: a Python line, or a PTX ``.loc`` line.

    ``function`` names the function the code was inlined from (as ``.loc`` spells it, usually
    mangled; None for the enclosing PTX function's own code).  ``inlined_at`` is the call site
    it was inlined at, itself a SourceLoc with its own ``function`` and ``inlined_at``: the
    whole inlining chain, innermost first (see :meth:`chain`).  Line 0 is what compilers
    write for code that belongs to no source line (``.loc 1 0 0``): ``known`` is False and
    it prints as ``(compiler-generated)``.
    """

    file: str
    line: int
    column: int = 0
    function: Optional[str] = None
    inlined_at: Optional["SourceLoc"] = None

    @property
    def known(self) -> bool:
        """False for line 0 (compiler-generated code without a source line)."""
        return self.line > 0

    def chain(self) -> tuple["SourceLoc", ...]:
        """This location and its call sites, innermost first (the last one is in the kernel)."""
        out = [self]
        loc = self
        while loc.inlined_at is not None:
            loc = loc.inlined_at
            out.append(loc)
        return tuple(out)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line > 0 else "(compiler-generated)"


@attrs.frozen(slots=True)
class Register:
    """A virtual register: its PTX name, its type, and where it was created.

    For builder registers ``type`` is the value type (``.u32`` vs ``.s32``); for parsed
    registers it is the declared type.  The allocation class follows from the type.
    """

    name: str
    type: PtxType
    loc: Optional[SourceLoc] = attrs.field(default=None, eq=False, hash=False)

    @property
    def reg_class(self) -> RegClass:
        return self.type.reg_class

    @property
    def units(self) -> int:
        """Width in 32-bit register units."""
        return self.type.reg_class.units

    def __str__(self) -> str:
        return self.name


@attrs.frozen(slots=True)
class Immediate:
    """A literal. ``text`` is its exact PTX spelling when it came from text (the parser).

    Builder immediates leave ``text`` unset; the emitter renders ints in decimal and floats
    exactly as ``0f``/``0d`` hex according to ``type``.
    """

    value: Union[int, float]
    type: Optional[PtxType] = None
    text: Optional[str] = None


@attrs.frozen(slots=True)
class SpecialReg:
    """A special register such as ``%tid.x`` or ``%clock64``; never allocated, never live."""

    name: str
    type: Optional[PtxType] = None


@attrs.frozen(slots=True)
class Symbol:
    """A named entity used as an operand: a parameter, variable, or function name."""

    name: str


@attrs.frozen(slots=True)
class LabelRef:
    """A branch target."""

    name: str


@attrs.frozen(slots=True)
class Address:
    """A memory operand ``[base+offset]``; ``base`` is a register, a symbol, or None."""

    base: Union[Register, Symbol, None]
    offset: int = 0


@attrs.frozen(slots=True)
class Vector:
    """A group of operands: ``{a, b}`` (brace), ``(a, b)`` (paren), ``p|q`` (pipe) or
    ``[tex, {x, y}]`` (bracket: a texture or surface reference with its coordinates, read
    like an address)."""

    elements: tuple
    style: str = attrs.field(default="brace",
                             validator=attrs.validators.in_(("brace", "paren", "pipe", "bracket")))


@attrs.frozen(slots=True)
class Negated:
    """A negated predicate operand ``!%p1``."""

    operand: Register


@attrs.frozen(slots=True)
class Raw:
    """Operand text kept verbatim (the sink ``_``, or anything the parser cannot type)."""

    text: str


Operand = Union[Register, Immediate, SpecialReg, Symbol, LabelRef, Address, Vector, Negated, Raw]


def registers_in(operand: Operand) -> Iterator[Register]:
    """Yield the registers an operand mentions, in order."""
    if isinstance(operand, Register):
        yield operand
    elif isinstance(operand, Address):
        if isinstance(operand.base, Register):
            yield operand.base
    elif isinstance(operand, Vector):
        for element in operand.elements:
            yield from registers_in(element)
    elif isinstance(operand, Negated):
        yield operand.operand


#: Opcode prefixes whose destination is also an input: ``wgmma.mma_async`` computes
#: D = A*B + D in place (its D is read unless scale-d is the immediate 0; a predicate scale-d
#: counts as read, which can only overstate liveness).  ``mma``/``wmma.mma`` name their C
#: operand separately and are not here.
READ_WRITE_OPCODES = ("wgmma.mma_async",)


def reads_destination(inst: "Instruction") -> bool:
    """True when ``inst``'s destination registers are read as well as written."""
    if not inst.opcode.startswith(READ_WRITE_OPCODES):
        return False
    ops = inst.operands
    k = 5 if ".sp." in inst.opcode else 3  # scale-d: after d, a, b (and sp-meta, sp-sel)
    scale = ops[k] if len(ops) > k else None
    return not (isinstance(scale, Immediate) and scale.value == 0)


def _read_only(operand) -> bool:
    """An address or a texture/surface reference: its registers are read, never written."""
    return isinstance(operand, Address) or (isinstance(operand, Vector)
                                           and operand.style == "bracket")


#: Operand classes that never hold a register (the fast path of :attr:`Instruction.uses`).
_NO_REGISTERS = frozenset({Immediate, SpecialReg, Symbol, LabelRef, Raw})


@attrs.frozen(slots=True)
class Guard:
    """The predicate an instruction is executed under: ``@%p1`` or ``@!%p1``."""

    register: Union[Register, SpecialReg]  # SpecialReg: only from a lenient parse (a problem)
    negated: bool = False


@attrs.frozen(slots=True)
class Instruction:
    """One PTX instruction: full dotted opcode, operands in PTX order, the count of leading
    destination operands, an optional guard, and its source location."""

    opcode: str
    operands: tuple = ()
    ndefs: int = 0
    guard: Optional[Guard] = None
    loc: Optional[SourceLoc] = attrs.field(default=None, eq=False, hash=False)
    # Computed on first use and kept (the instruction is immutable): analyses ask for an
    # instruction's family, defs and uses several times each (hoisting loads asks ~3 times per
    # instruction; 4.5 MB of PTX with 840 kernels: 1.2 s of 10.7 profiled went to recomputing).
    _family: str | None = attrs.field(default=None, init=False, eq=False, repr=False)
    _op: Opcode | None = attrs.field(default=None, init=False, eq=False, repr=False)
    _defs: tuple | None = attrs.field(default=None, init=False, eq=False, repr=False)
    _uses: tuple | None = attrs.field(default=None, init=False, eq=False, repr=False)

    @property
    def family(self) -> str:
        """The opcode without modifiers (``fma`` for ``fma.rn.f32``)."""
        f = self._family
        if f is None:
            f = self.opcode.split(".", 1)[0]
            object.__setattr__(self, "_family", f)
        return f

    @property
    def op(self) -> Opcode:
        """The parsed opcode (family, modifiers, types, vector width, space and the family's
        row in :data:`ptxforge.ptx.opcodes.FAMILIES`), interned: computed once per text."""
        o = self._op
        if o is None:
            o = opcode_of(self.opcode)
            object.__setattr__(self, "_op", o)
        return o

    @property
    def defs(self) -> tuple[Register, ...]:
        """Registers written (all registers inside the destination operands)."""
        d = self._defs
        if d is None:
            d = self._operand_registers(True)
            object.__setattr__(self, "_defs", d)
        return d

    @property
    def uses(self) -> tuple[Register, ...]:
        """Registers read: source operands, address bases anywhere, destinations that are also
        inputs (:func:`reads_destination`), and the guard."""
        u = self._uses
        if u is None:
            u = self._operand_registers(False)
            object.__setattr__(self, "_uses", u)
        return u

    def _operand_registers(self, written: bool) -> tuple:
        """The registers :attr:`defs` (``written``) or :attr:`uses` lists."""
        out: list[Union[Register, SpecialReg]] = []  # SpecialReg: a lenient parse's guard
        nd = self.ndefs
        ops = self.operands
        if written:
            for operand in ops[:nd]:
                if type(operand) is Register:
                    out.append(operand)
                elif not _read_only(operand):  # an address in destination position is read
                    out.extend(registers_in(operand))
            return tuple(out)
        rw = nd > 0 and reads_destination(self)
        for operand in ops[:nd]:
            if rw or _read_only(operand):
                out.extend(registers_in(operand))
        for operand in ops[nd:]:
            t = type(operand)
            if t is Register:
                out.append(operand)
            elif t is Address:
                if type(operand.base) is Register:
                    out.append(operand.base)
            elif t not in _NO_REGISTERS:  # vectors, negated predicates, subclasses
                out.extend(registers_in(operand))
        if self.guard is not None:
            out.append(self.guard.register)
        return tuple(out)


@attrs.frozen(slots=True)
class Label:
    """A label statement ``name:``."""

    name: str


@attrs.frozen(slots=True)
class VarDecl:
    """A variable declaration in a state space (module level or inside a function body).

    ``dims`` holds array dimensions (``None`` for an unsized ``[]``); ``init`` keeps the
    initializer's PTX text verbatim; ``vector`` is 2, 4 or 8 for a vector variable
    (``.global .v2 .f32 vv;``), None for a scalar one.
    """

    space: str
    type: PtxType
    name: str
    align: Optional[int] = None
    dims: tuple = ()
    init: Optional[str] = None
    linkage: str = ""
    vector: Optional[int] = None


@attrs.frozen(slots=True)
class Scope:
    """Opening (``{``) or closing (``}``) of a nested scope inside a body."""

    opening: bool


@attrs.frozen(slots=True)
class Directive:
    """A directive kept verbatim inside a body or at module level, e.g. ``.pragma "nounroll";``
    (module level also: opaque ``.texref``/``.surfref``/``.samplerref`` and attributed
    variables)."""

    text: str


Statement = Union[Instruction, Label, VarDecl, Scope, Directive]


@attrs.frozen(slots=True)
class RegDecl:
    """A register declaration: ``.reg .b32 %r<12>;`` (count set) or ``.reg .f32 %acc;``."""

    type: str
    name: str
    count: Optional[int] = None


@attrs.frozen(slots=True)
class Param:
    """A kernel or function parameter (``.param .u64 x``); ``pointer`` marks a pointer
    parameter (for pointers ``state_space``/``ptr_align`` give ``.ptr.global.align 16``)."""

    name: str
    type: PtxType
    pointer: bool = False
    align: Optional[int] = None
    dims: tuple = ()
    state_space: Optional[str] = None
    ptr_align: Optional[int] = None


@attrs.frozen(slots=True)
class Kernel:
    """An ``.entry`` kernel or a ``.func`` device function.

    ``body`` is None for a prototype (``.extern .func f(...);``).  ``directives`` holds
    performance-tuning directives as (name, values), e.g. ``(".maxntid", (256, 1, 1))``.
    """

    name: str
    params: tuple = ()
    body: Optional[tuple] = ()
    reg_decls: tuple = ()
    is_entry: bool = True
    linkage: str = ".visible"
    returns: tuple = ()
    directives: tuple = ()
    attributes: tuple = ()
    # Computed on first use and kept (the kernel is immutable): tracing a kernel's SASS asks
    # for its instructions once per register definition (1,419 times on gemm.cu: 0.55 s).
    _instructions: tuple | None = attrs.field(default=None, init=False, eq=False, repr=False)

    @property
    def instructions(self) -> tuple[Instruction, ...]:
        """The body's instructions, labels and declarations left out."""
        got = self._instructions
        if got is None:
            got = tuple(s for s in (self.body or ()) if isinstance(s, Instruction))
            object.__setattr__(self, "_instructions", got)
        return got


@attrs.frozen(slots=True)
class Module:
    """A PTX module: header, module-level variables, directives and functions.

    ``files`` is the ``.file`` table as (index, path) pairs, kept from parsed PTX.
    ``directives`` holds module-level :class:`Directive` statements (``.pragma``, opaque
    variables).  ``layout`` gives the emission order as ``(kind, index)`` pairs, kind one of
    ``"global"``, ``"directive"``, ``"kernel"`` indexing the three tuples (parsed modules keep
    the source order: a function-pointer table must follow its functions); when it is empty,
    or does not name every item exactly once, the order is globals, directives, kernels.
    ``warnings`` lists what a lenient parse (``parse(..., strict=False)``) let through.
    """

    version: str
    target: str
    address_size: int = 64
    globals: tuple = ()
    kernels: tuple = ()
    files: tuple = ()
    directives: tuple = ()
    layout: tuple = ()
    #: what a lenient parse let through (``"file:line:col: message"``); not part of equality
    warnings: tuple = attrs.field(default=(), eq=False, hash=False)

    def items(self) -> tuple:
        """Module-level globals, directives and kernels in emission order (see ``layout``)."""
        parts = {"global": self.globals, "directive": self.directives, "kernel": self.kernels}
        expected = len(self.globals) + len(self.directives) + len(self.kernels)
        valid = {(kind, i) for kind, items in parts.items() for i in range(len(items))}
        if len(self.layout) == expected and set(self.layout) == valid:
            return tuple(parts[kind][index] for kind, index in self.layout)
        return self.globals + self.directives + self.kernels

    @property
    def entries(self) -> tuple[Kernel, ...]:
        return tuple(k for k in self.kernels if k.is_entry and k.body is not None)

    def kernel(self, name: str) -> Kernel:
        """The function named ``name``; raises a ptxforge error listing the names there are."""
        for k in self.kernels:
            if k.name == name and k.body is not None:
                return k
        from ptxforge.errors import PtxforgeError

        names = ", ".join(k.name for k in self.kernels if k.body is not None) or "none"
        raise PtxforgeError(f"no kernel named {name!r} in this module; it has: {names}")
