"""Core of the KernelBuilder DSL: allocation, operand checks, emission, control flow, build.

Every value-producing op allocates a fresh SSA :class:`~ptxforge.ptx.ir.Register` (``%f3``,
``%rd2``: class prefix + index per class) whose ``loc`` is the Python line that asked for it;
in-place ops (``iadd``, ``ifma``, ...) write an existing register, for accumulators and loop
counters.  Operands are type-checked when the op is called, so a mistake surfaces as a
:class:`~ptxforge.errors.PtxTypeError` pointing at the user's line, never as a ptxas error.

The op families live in :mod:`ptxforge.dsl.arith`, :mod:`ptxforge.dsl.bits`,
:mod:`ptxforge.dsl.memory` and :mod:`ptxforge.dsl.warp`; :mod:`ptxforge.dsl.builder`
assembles them into :class:`KernelBuilder`.

"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Optional, Union

import attrs

from ptxforge.arch.targets import target as as_target
from ptxforge.errors import BuildError, PtxTypeError
from ptxforge.ptx import ir, isa
from ptxforge.ptx import types as T
from ptxforge.ptx.emit import emit
from ptxforge.ptx.layout import element_size
from ptxforge.ptx.opcodes import Return, opcode_of

from .checks import (
    _check_ident,
    _register_internal,
    _where,
    caller_loc,
    check_owned,
    fits,
    make_immediate,
    ty_reg,
    type_error,
)

__all__ = [
    "ParamRef",
    "Array",
    "Value",
    "caller_loc",
    "make_immediate",
    "fits",
    "type_error",
]

#: What an op accepts as an operand: a register or a Python number (an immediate).
Value = Union[ir.Register, int, float]

if TYPE_CHECKING:
    from .builder import ModuleBuilder

_register_internal(__file__)

#: Labels from :meth:`_Core.new_label` start with this; user labels may not.
LABEL_PREFIX = "$L__"


@attrs.frozen(slots=True, kw_only=True)
class ParamRef:
    """A declared kernel/function parameter; pass it to ``load_param`` (or ``ld``).

    ``elem`` and ``space`` are set for pointer parameters.
    """

    name: str
    type: T.PtxType
    elem: Optional[T.PtxType] = None
    space: Optional[str] = None

    @property
    def is_pointer(self) -> bool:
        return self.elem is not None


@attrs.frozen(slots=True, kw_only=True)
class Array:
    """A shared/local/const array; ``arr.at(i)`` is the address of element ``i`` (a constant)."""

    name: str
    type: T.PtxType
    count: int
    space: str
    align: int

    @property
    def nbytes(self) -> int:
        return self.count * element_size(self.type)

    def at(self, index: int = 0) -> ir.Address:
        """The address ``[name+index*size]`` of a constant element."""
        if not 0 <= index < self.count:
            raise BuildError(f"index {index} is outside {self.space} array {self.name}"
                             f"[{self.count}]{_where(caller_loc())}")
        return ir.Address(ir.Symbol(self.name), index * element_size(self.type))


class _Open:
    """Bookkeeping for an open structured block (if/else/loop)."""

    __slots__ = ("kind", "labels", "loc")

    kind: str  # "if", "else", "loop", "while"
    labels: tuple[str, ...]
    loc: Optional[ir.SourceLoc]

    def __init__(self, kind: str, labels: tuple[str, ...], loc: Optional[ir.SourceLoc]) -> None:
        self.kind, self.labels, self.loc = kind, labels, loc


class _Core:
    """State and the shared machinery of a function being built.

    This class is the one home of a builder's state: every field is declared here with its
    type, and every op family (:class:`~ptxforge.dsl.arith.ArithOps`,
    :class:`~ptxforge.dsl.memory.MemoryOps`, ...) derives from it, so the primitives they use
    (:meth:`_new`, :meth:`_src`, :meth:`_emit`, ...) and the fields they read are checked.
    A family that calls another family's ops derives from that family
    (``MemoryOps(ArithOps)``, ``TensorOps(MemoryOps)``); :class:`KernelBuilder` joins them.
    """

    name: str
    target: str  # the target's canonical name (``sm_80``)
    is_entry: bool  # ``.entry`` kernel, else ``.func``
    _module: Optional[ModuleBuilder]  # the module it belongs to (None: a lone kernel)
    _params: list[ir.Param]
    _returns: list[ir.Param]  # the ``.func``'s return parameters (at most one)
    _symbols: dict[str, str]  # declared name -> what it is ("parameter", "shared array", ...)
    _body: list[ir.Statement]
    _decls: list[ir.VarDecl]  # shared/local arrays, emitted before the body
    _globals: list[ir.VarDecl]  # module-level (const) variables
    _counters: dict[str, int]  # register class name -> last index used
    _labels: dict[str, Optional[ir.SourceLoc]]  # placed label -> where
    _label_uses: list[tuple[str, Optional[ir.SourceLoc]]]  # branch target -> where
    _label_seq: int
    _issued: set[str]  # labels made by new_label
    _regs: dict[str, ir.Register]  # every register this function allocated
    _directives: dict[str, tuple[int, ...]]  # ".maxntid" -> (x, y, z)
    _pointers: dict[str, tuple[T.PtxType, str]]  # register name -> (element type, space)
    _arrays: dict[str, Array]
    _param_types: dict[str, T.PtxType]  # parameter name -> its declared (value) type
    _guard: Optional[ir.Guard]  # the enclosing ``predicated`` block's guard
    _open: list[_Open]  # open structured blocks, innermost last
    _cc_writer: Optional[str]  # the last ``.cc`` opcode in this block (carry flag set)
    _callees: list[_Core]  # device functions called, in first-call order
    _last_if: Optional[tuple[str, int]]  # (else label, body length) right after an if_ block

    def __init__(self, name: str, target: str = "sm_80", *, is_entry: bool = True,
                 _module: Optional[ModuleBuilder] = None) -> None:
        loc = caller_loc()
        self.name = _check_ident(name, "kernel", loc)
        self.target = as_target(target).name
        self.is_entry = is_entry
        self._module = _module
        self._params = []
        self._returns = []
        self._symbols = {}
        self._body = []
        self._decls = []
        self._globals = []
        self._counters = {}
        self._labels = {}
        self._label_uses = []
        self._label_seq = 0
        self._issued = set()
        self._regs = {}
        self._directives = {}
        self._pointers = {}
        self._arrays = {}
        self._param_types = {}
        self._guard = None
        self._open = []
        self._cc_writer = None
        self._callees = []
        self._last_if = None

    # -- allocation and operands --------------------------------------------------------

    def _new(self, ty: T.PtxType, loc=None) -> ir.Register:
        """A fresh register of value type ``ty``."""
        cls = ty.reg_class
        index = self._counters.get(cls.name, 0) + 1
        self._counters[cls.name] = index
        reg = ir.Register(f"{cls.prefix}{index}", ty, loc)
        self._regs[reg.name] = reg
        return reg

    def _with_pred_result(self, first: ir.Register, wanted: bool, loc=None):
        """The destination of an op with an optional second predicate result (``d|p``):
        ``(first, None)``, or ``(Vector(first|p, "pipe"), p)`` with a fresh predicate ``p``."""
        if not wanted:
            return first, None
        p = self._new(T.pred, loc)
        return ir.Vector((first, p), "pipe"), p

    def _declare(self, name: str, what: str, loc) -> None:
        """Reserve a symbol name (param, array) or raise BuildError on a clash."""
        _check_ident(name, what, loc)
        if name in self._symbols:
            raise BuildError(f"{what} {name!r} clashes with the {self._symbols[name]} of the "
                             f"same name{_where(loc)}")
        self._symbols[name] = what

    def _infer(self, op: str, values: tuple, type_, loc) -> tuple:
        """(instruction type, relaxed) from ``type=`` or the first register operand."""
        if type_ is not None:
            return T.as_type(type_), True
        for v in values:
            if isinstance(v, ir.Register):
                return v.type, False
        raise PtxTypeError(f"{op}: cannot infer the operand type from immediates "
                           f"{', '.join(repr(v) for v in values)}; pass type=...{_where(loc)}")

    def _src(self, op: str, value, ty: T.PtxType, loc, relaxed: bool = False):
        """One source operand of instruction type ``ty``: a fitting register or an immediate."""
        if isinstance(value, ir.Register):
            if not fits(value.type, ty, relaxed):
                raise type_error(op, f"an operand of type {ty.ptx}", value, loc)
            return value
        if isinstance(value, (ir.SpecialReg, ir.Immediate)):
            return value
        if isinstance(value, (bool, int, float)):
            return make_immediate(value, ty, op, loc)
        raise type_error(op, f"a {ty.ptx} register or a number", value, loc)

    def _pred_src(self, op: str, value, loc):
        """A predicate operand: a .pred register or ir.Negated of one."""
        if isinstance(value, ir.Negated):
            self._pred_src(op, value.operand, loc)
            return value
        if isinstance(value, ir.Register) and value.type.is_pred:
            check_owned(self._regs, self.name, op, (value,), loc)
            return value
        raise type_error(op, "a .pred register", value, loc)

    def _guard_of(self, pred, loc) -> Optional[ir.Guard]:
        """The guard for an op: explicit ``pred=`` or the enclosing ``predicated`` block."""
        if pred is None:
            return self._guard
        if self._guard is not None:
            raise BuildError(f"an op inside kb.predicated(...) cannot take its own pred={_where(loc)}")
        if isinstance(pred, ir.Guard):
            self._pred_src("pred=", pred.register, loc)
            return pred
        if isinstance(pred, ir.Negated):
            self._pred_src("pred=", pred.operand, loc)
            return ir.Guard(pred.operand, True)
        self._pred_src("pred=", pred, loc)
        return ir.Guard(pred)

    def _emit(self, opcode: str, operands: tuple, ndefs: int, loc, pred=None,
              op: str = "") -> ir.Instruction:
        """Check the target supports ``opcode`` and append the instruction."""
        isa.check_supported(opcode, self.target, op, str(loc) if loc else "")
        guard = self._guard_of(pred, loc)
        check_owned(self._regs, self.name, op or opcode_of(opcode).family,
                    (*operands, *((guard.register,) if guard else ())), loc)
        inst = ir.Instruction(opcode, tuple(operands), ndefs, guard, loc)
        self._body.append(inst)
        if ".cc" in opcode:
            self._cc_writer = opcode
        return inst

    def _check_cc(self, op: str, loc) -> None:
        """Raise BuildError if no .cc op precedes a carry-in op in the same block."""
        if self._cc_writer is None:
            raise BuildError(f"{op} reads the carry flag, but no add.cc/sub.cc/mad.cc (or "
                             f"addc.cc/subc.cc/madc.cc) precedes it in this block{_where(loc)}")

    def _tag(self, reg: ir.Register, elem: Optional[T.PtxType], space: str) -> ir.Register:
        """Remember that ``reg`` points at ``elem`` values in ``space``."""
        if elem is not None:
            self._pointers[reg.name] = (elem, space)
        return reg

    def pointee(self, reg: ir.Register) -> Optional[tuple[T.PtxType, str]]:
        """(element type, state space) of a pointer register, or None if not a known pointer."""
        return self._pointers.get(reg.name)

    # -- labels and control flow --------------------------------------------------------

    def new_label(self, hint: str = "L") -> str:
        """A fresh label name (not yet placed); place it with :meth:`label`.

        Example: ``done = kb.new_label("done"); kb.bra(done, pred=p); ...; kb.label(done)``
        """
        self._label_seq += 1
        name = f"{LABEL_PREFIX}{self.name}_{hint}{self._label_seq}"
        self._issued.add(name)
        return name

    def _check_label(self, name: str, loc) -> None:
        """A label name must be an identifier and not in the generated-label namespace."""
        _check_ident(name, "label", loc)
        if name.startswith(LABEL_PREFIX) and name not in self._issued:
            raise BuildError(f"label {name!r}: names starting with {LABEL_PREFIX!r} are reserved "
                             f"for the builder's own labels; use kb.new_label() or another "
                             f"name{_where(loc)}")

    def label(self, name: str) -> str:
        """Place label ``name`` here; returns the name. Example: ``kb.label("loop")``."""
        loc = caller_loc()
        self._check_label(name, loc)
        if name in self._labels:
            raise BuildError(f"label {name!r} placed twice: first at {self._labels[name]}, "
                             f"again{_where(loc)}")
        self._labels[name] = loc
        self._body.append(ir.Label(name))
        self._cc_writer = None
        return name

    def bra(self, target: str, *, pred=None, uni: bool = False) -> None:
        """Branch to label ``target`` (placed before or after). Example: ``kb.bra("loop", pred=p)``."""
        loc = caller_loc()
        self._check_label(target, loc)
        self._label_uses.append((target, loc))
        self._emit("bra.uni" if uni else "bra", (ir.LabelRef(target),), 0, loc, pred)

    def ret(self, *, pred=None) -> None:
        """``ret;`` Example: ``kb.ret()``."""
        self._emit("ret", (), 0, caller_loc(), pred)

    def exit(self, *, pred=None) -> None:
        """``exit;`` (end this thread). Example: ``kb.exit(pred=out_of_range)``."""
        self._emit("exit", (), 0, caller_loc(), pred)

    @contextlib.contextmanager
    def predicated(self, p, *, negate: bool = False):
        """Guard every op in the block with ``@p`` (``@!p`` with negate=True).

        Example::

            with kb.predicated(in_range):
                kb.st(ptr, value)
        """
        loc = caller_loc()
        if self._guard is not None:
            raise BuildError(f"kb.predicated blocks cannot nest (PTX has one guard per "
                             f"instruction); combine the predicates with kb.and_{_where(loc)}")
        if isinstance(p, ir.Negated):
            p, negate = p.operand, not negate
        self._pred_src("predicated", p, loc)
        self._guard = ir.Guard(p, negate)
        try:
            yield
        finally:
            self._guard = None

    def _no_guard(self, what: str, loc) -> None:
        """Structured blocks emit labels; refuse them inside a predicated block."""
        if self._guard is not None:
            raise BuildError(f"{what} cannot be used inside kb.predicated(...){_where(loc)}")

    @contextlib.contextmanager
    def if_(self, p, *, negate: bool = False):
        """Run the block only where ``p`` holds (``not p`` with negate=True); may be followed by
        :meth:`else_`.

        Example::

            with kb.if_(kb.setp("eq", tid, 0)):
                kb.st(out, total)
            with kb.else_():
                ...
        """
        loc = caller_loc()
        self._no_guard("kb.if_", loc)
        if isinstance(p, ir.Negated):
            p, negate = p.operand, not negate
        self._pred_src("if_", p, loc)
        skip = self.new_label("else")
        self._label_uses.append((skip, loc))
        self._emit("bra", (ir.LabelRef(skip),), 0, loc, ir.Guard(p, not negate))
        self._open.append(_Open("if", (skip,), loc))
        try:
            yield
        finally:
            self._open.pop()
            self._labels[skip] = loc
            self._body.append(ir.Label(skip))
            self._cc_writer = None
            self._last_if = (skip, len(self._body))

    @contextlib.contextmanager
    def else_(self):
        """The else branch of the ``if_`` block that ends right before it."""
        loc = caller_loc()
        last = self._last_if
        if last is None or last[1] != len(self._body):
            raise BuildError(f"kb.else_() must directly follow a kb.if_(...) block{_where(loc)}")
        self._last_if = None
        end = self.new_label("endif")
        self._label_uses.append((end, loc))
        # jump over the else branch at the end of the then-branch (before the else label)
        self._body.insert(len(self._body) - 1, ir.Instruction("bra.uni", (ir.LabelRef(end),), 0, None, loc))
        self._open.append(_Open("else", (end,), loc))
        try:
            yield
        finally:
            self._open.pop()
            self._labels[end] = loc
            self._body.append(ir.Label(end))
            self._cc_writer = None

    @contextlib.contextmanager
    def loop(self, start: Value, stop: Value, step: Value = 1, *, type=None, unroll: bool = True):
        """A counted loop ``for i in range(start, stop, step)`` whose counter is updated in
        place; yields the counter register.  The test is at the top (zero trips are fine); a
        register ``step`` must be positive, an int ``step`` may be negative (an unsigned counter
        then counts down with ``sub`` and never wraps past ``stop``).  ``unroll=False``
        emits ``.pragma "nounroll";`` in the loop header so ptxas keeps the loop rolled (its
        unrolling can multiply register pressure).

        Example::

            with kb.loop(0, n, 1) as i:
                kb.iadd(acc, kb.ld(kb.elem_ptr(x, i)))
        """
        loc = caller_loc()
        self._no_guard("kb.loop", loc)
        if type is None and not any(isinstance(v, ir.Register) for v in (start, stop, step)):
            type = T.u32
        ty, _ = self._infer("loop", (start, stop, step), type, loc)
        if not ty.is_int:
            raise type_error("loop", "an integer counter type (.u32, .s32, .u64, .s64)", ty_reg(ty), loc)
        if isinstance(step, int) and step == 0:
            raise BuildError(f"loop: step must not be 0{_where(loc)}")
        counter = self._new(ty, loc)
        self._emit(f"mov{isa.move_type(ty).ptx}", (counter, self._src("loop", start, ty, loc, True)),
                   1, loc)
        head, done = self.new_label("loop"), self.new_label("endloop")
        self._labels[head] = loc
        self._body.append(ir.Label(head))
        if not unroll:
            self._body.append(ir.Directive('.pragma "nounroll";'))
        # an int step below zero counts down by -step
        down_by = -step if isinstance(step, int) and not isinstance(step, bool) and step < 0 else 0
        down = down_by > 0
        cmp = "le" if down else "ge"
        p = self._new(T.pred, loc)
        self._emit(f"setp.{cmp}{ty.ptx}", (p, counter, self._src("loop", stop, ty, loc, True)), 1, loc)
        self._label_uses.append((done, loc))
        self._emit("bra", (ir.LabelRef(done),), 0, loc, ir.Guard(p))
        self._open.append(_Open("loop", (head, done), loc))
        try:
            yield counter
        finally:
            self._open.pop()
            end_loc = caller_loc()
            if down and not ty.is_signed:
                self._count_down(counter, ty, stop, down_by, done, loc, end_loc)
            else:
                self._emit(f"add{ty.ptx}", (counter, counter, self._src("loop", step, ty, loc, True)),
                           1, end_loc)
            self._label_uses.append((head, loc))
            self._emit("bra.uni", (ir.LabelRef(head),), 0, end_loc)
            self._labels[done] = loc
            self._body.append(ir.Label(done))
            self._cc_writer = None

    def _count_down(self, counter: ir.Register, ty: T.PtxType, stop: Value, by: int, done: str,
                    loc: Optional[ir.SourceLoc], end_loc: Optional[ir.SourceLoc]) -> None:
        """``counter -= by`` at the bottom of a descending loop; an unsigned counter that
        would wrap below zero leaves the loop first (it would have passed ``stop``)."""
        amount = self._src("loop", by, ty, loc, True)
        if not ty.is_signed and by > 1 and not (isinstance(stop, int) and stop >= by - 1):
            wrap = self._new(T.pred, loc)
            self._emit(f"setp.lt{ty.ptx}", (wrap, counter, amount), 1, end_loc)
            self._label_uses.append((done, loc))
            self._emit("bra", (ir.LabelRef(done),), 0, end_loc, ir.Guard(wrap))
        self._emit(f"sub{ty.ptx}", (counter, counter, amount), 1, end_loc)

    # -- directives ---------------------------------------------------------------------

    def pragma(self, text: str) -> None:
        """Emit ``.pragma "text";`` here (e.g. ``kb.pragma("nounroll")`` in a loop header)."""
        loc = caller_loc()
        if not isinstance(text, str) or '"' in text or "\n" in text:
            raise BuildError(f"pragma: expected a one-line string without quotes, got {text!r}{_where(loc)}")
        self._body.append(ir.Directive(f'.pragma "{text}";'))

    def _dims(self, name: str, values: tuple) -> None:
        """Record a performance-tuning directive after checking its values."""
        loc = caller_loc()
        if not self.is_entry:
            raise BuildError(f"{name} applies to .entry kernels, not .func {self.name}{_where(loc)}")
        for v in values:
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise BuildError(f"{name}: values must be positive ints, got {values!r}{_where(loc)}")
        if name in (".maxntid", ".reqntid") and values[0] * values[1] * values[2] > 1024:
            raise BuildError(f"{name}: a block has at most 1024 threads, got {values[0]}x"
                             f"{values[1]}x{values[2]} = {values[0] * values[1] * values[2]}"
                             f"{_where(loc)}")
        if name == ".maxnreg" and values[0] > 255:
            raise BuildError(f"{name}: a thread has at most 255 registers, got {values[0]}"
                             f"{_where(loc)}")
        self._directives[name] = tuple(values)

    def maxntid(self, x: int, y: int = 1, z: int = 1) -> None:
        """``.maxntid x, y, z``: the most threads per block. Example: ``kb.maxntid(256)``."""
        self._dims(".maxntid", (x, y, z))

    def reqntid(self, x: int, y: int = 1, z: int = 1) -> None:
        """``.reqntid x, y, z``: the exact block shape. Example: ``kb.reqntid(16, 16)``."""
        self._dims(".reqntid", (x, y, z))

    def minnctapersm(self, n: int) -> None:
        """``.minnctapersm n``: ask for at least n resident blocks per SM."""
        self._dims(".minnctapersm", (n,))

    def maxnreg(self, n: int) -> None:
        """``.maxnreg n``: cap registers per thread. Example: ``kb.maxnreg(64)``."""
        self._dims(".maxnreg", (n,))

    # -- build --------------------------------------------------------------------------

    def build_kernel(self) -> ir.Kernel:
        """This function as an :class:`ir.Kernel` (checks labels and open blocks)."""
        if self._open:
            blk = self._open[-1]
            raise BuildError(f"kb.{blk.kind} block opened at {blk.loc} is still open")
        for name, loc in self._label_uses:
            if name not in self._labels:
                raise BuildError(f"undefined label {name!r} used{_where(loc)} in {self.name}")
        body = list(self._decls) + list(self._body)
        last = self._body[-1] if self._body else None
        if not (isinstance(last, ir.Instruction) and last.guard is None
                and (last.op.has_trait(Return) or last.family == "bra")):
            body.append(ir.Instruction("ret", (), 0, None, None))
        decls = []
        for cls in T.REG_CLASSES:
            count = self._counters.get(cls.name)
            if count:
                decls.append(ir.RegDecl(cls.decl, cls.prefix, count + 1))
        returns = tuple(ir.Param(r.name, isa.param_type(r.type, entry=False)) for r in self._returns)
        return ir.Kernel(
            name=self.name,
            params=tuple(self._params),
            body=tuple(body),
            reg_decls=tuple(decls),
            is_entry=self.is_entry,
            linkage=".visible",
            returns=returns,
            directives=tuple(self._directives.items()),
        )

    def _closure(self) -> list[_Core]:
        """This function and every function it calls, callees first, each once."""
        order: list[_Core] = []
        seen: set = set()

        def visit(fb: "_Core") -> None:
            if fb.name in seen:
                return
            seen.add(fb.name)
            for callee in fb._callees:
                visit(callee)
            order.append(fb)

        visit(self)
        return order

    def build(self) -> ir.Module:
        """The module holding this kernel (and the device functions it calls).

        Example: ``module = kb.build(); module.version``
        """
        return _assemble(self.target, self._closure())

    def ptx(self, *, line_info: bool = False) -> str:
        """The PTX text of :meth:`build` (``line_info=True`` adds .file/.loc directives)."""
        return emit(self.build(), line_info=line_info)


def _assemble(target: str, builders: list[_Core]) -> ir.Module:
    """Build each function and wrap them in a module with the lowest sufficient .version."""
    kernels = [b.build_kernel() for b in builders]
    globals_: dict[str, ir.VarDecl] = {}
    for b in builders:
        for decl in b._globals:
            prev = globals_.get(decl.name)
            if prev is not None and prev != decl:
                raise BuildError(f"module-level {decl.space} variable {decl.name!r} is declared "
                                 f"differently by two functions")
            globals_[decl.name] = decl
    insts = [i for k in kernels for i in k.instructions]
    version = isa.min_ptx_version(target, insts)
    return ir.Module(version=version, target=target, address_size=64,
                     globals=tuple(globals_.values()), kernels=tuple(kernels))


