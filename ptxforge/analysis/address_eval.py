"""Addresses as affine functions of the thread index: the PTX integer arithmetic, evaluated.

A value is an :class:`~ptxforge.analysis.affine.Affine` polynomial over named symbols: the thread indices ``tid.x``,
``tid.y``, ``tid.z`` (which differ between the threads of a warp) and *uniform* symbols, the
same for every thread of a warp: ``ctaid.x`` …, parameters (``A``: the value ``ld.param``
read), shared and local variables (their address), and opaque uniform values (a register
computed from uniform values only, by an operation that is not a polynomial, e.g. ``%r5`` for
a ``shr`` of a parameter).  A monomial has degree at most one in the thread indices; a product
of two thread-dependent values is not affine.  ``%ntid.*`` are the block's dimensions (known
constants), a thread index along a dimension of size 1 is 0.

A register written more than once (a loop counter, a pointer bumped every iteration) is
*loop-carried*: its value is taken as its thread-dependent part (the same in every
definition, else it is not affine) plus an opaque uniform term named after the register.
This holds for the threads of a warp that execute an access together (they have run the same
iterations); the warp figures never depend on a uniform term.

What is not affine is a :class:`~ptxforge.analysis.affine.NotAffine` with the reason (the register loaded from memory,
the operation), carried unchanged to every value computed from it.  Integer wrap-around is
ignored (addresses are assumed not to overflow their register).

Example::

    >>> from ptxforge.ptx.parse import parse
    >>> from ptxforge.analysis.address_eval import AddressEvaluator
    >>> k = parse('''.version 8.0
    ... .target sm_80
    ... .address_size 64
    ... .visible .entry k(.param .u64 A)
    ... {
    ...     .reg .b32 %r<3>;
    ...     .reg .b64 %rd<4>;
    ...     ld.param.u64 %rd1, [A];
    ...     cvta.to.global.u64 %rd2, %rd1;
    ...     mov.u32 %r1, %tid.x;
    ...     mul.wide.u32 %rd3, %r1, 4;
    ...     ret;
    ... }''').kernel("k")
    >>> ev = AddressEvaluator(k, (256, 1, 1))
    >>> str(ev.register_value(k.instructions[3].operands[0]))
    '4*tid.x'
"""

from __future__ import annotations

from ptxforge.ptx import ir
from ptxforge.ptx.opcodes import WarpCollective

from .affine import THREAD_SYMBOLS, Affine, NotAffine, Value
from .affine_ops import AXES, HANDLERS, is_int
from .affine_ops import where as line_of
from .divergence import ControlDependence
from .reaching import ReachingDefinitions

__all__ = ["AddressEvaluator"]


class AddressEvaluator:
    """Evaluates registers of one kernel to :class:`Affine` values, for one block shape.

    ``block`` is (x, y, z); the figures of a warp assume the threads are numbered x fastest.
    ``params`` gives parameters a value (by name): what ``ld.param`` reads is then that
    constant instead of a uniform symbol.
    """

    def __init__(self, kernel: ir.Kernel, block: tuple, params: dict | None = None) -> None:
        self.kernel = kernel
        self.block = tuple(block)
        self.values = dict(params or {})  # parameters given a value (``--param N=1024``)
        self.insts = kernel.instructions
        self.reach = ReachingDefinitions(kernel)
        self.defs = self.reach.defs
        self.var_space = {s.name: s.space.lstrip(".").split("::")[0]
                          for s in (kernel.body or ()) if isinstance(s, ir.VarDecl)}
        self.params = {p.name for p in kernel.params}
        #: symbols known to hold an address in a state space (``cvta``, variables, params)
        self.term_space: dict[str, str] = dict(self.var_space)
        # keyed by (register, the writes that reach the read): one value per web
        self._memo: dict[tuple, Value] = {}
        self._pending: dict[tuple, Value] = {}  # loop-carried registers: their hypothesis
        self._visiting: dict[tuple, int] = {}   # single definitions under way: hypotheses then
        self._control: ControlDependence | None = None  # built on first need
        self._preds: dict[tuple, bool] = {}   # predicate register: the same in every thread
        self.exact_lanes: object = None  # lane_values' exact per-thread evaluator, on first need

    # -- public --------------------------------------------------------------------------
    def operand_value(self, operand, at: int | None = None) -> Value:
        """The value of an operand (register, immediate, special register, symbol) read by
        instruction ``at`` (None: after the last one: every write of a register reaches)."""
        if isinstance(operand, ir.Register):
            return self.register_value(operand, at)
        if isinstance(operand, ir.Immediate):
            if isinstance(operand.value, int):
                return Affine.const(operand.value)
            return NotAffine(reason=f"the floating-point literal {operand.text or operand.value}")
        if isinstance(operand, ir.SpecialReg):
            return self._special(operand.name)
        if isinstance(operand, ir.Symbol):
            return Affine.symbol(operand.name)
        if isinstance(operand, ir.Address):
            return self.address_value(operand, at)
        return NotAffine(reason=f"the operand {operand!r} is not an integer value")

    def address_value(self, address: ir.Address, at: int | None = None) -> Value:
        """The value of a memory operand ``[base+offset]`` of instruction ``at``."""
        if address.base is None:
            return Affine.const(address.offset)
        base = self.operand_value(address.base, at)
        if isinstance(base, NotAffine):
            return base
        return base + Affine.const(address.offset)

    def register_value(self, reg: ir.Register, at: int | None = None) -> Value:
        """The value of ``reg`` read by instruction ``at`` (see the module docstring for
        loop-carried registers)."""
        name = reg.name
        defs = self.reach.reaching(at, name)
        key = (name, defs)
        got = self._memo.get(key)
        if got is not None:
            return got
        if key in self._pending:
            return self._pending[key]
        if len(defs) > 1 and key not in self._memo:
            diverges = self._diverges(name, defs, at)
            if diverges is not None:
                return diverges
        if not defs:
            return NotAffine(reason=f"{name} is never written in the kernel")
        if len(defs) == 1:
            # met again while its definition is under way: a cycle, fine when it runs through
            # a loop-carried register whose hypothesis was set since (it ends there)
            depth = len(self._pending)
            before = self._visiting.get(key)
            if before is not None and before >= depth:
                return NotAffine(reason=f"{name} depends on itself")
            self._visiting[key] = depth
            try:
                value = self._define(defs[0], reg)
            finally:
                if before is None:
                    del self._visiting[key]
                else:
                    self._visiting[key] = before
        else:
            value = self._loop_carried(reg, defs)
        self._memo[key] = value
        return value

    # -- definitions -----------------------------------------------------------------------
    def _loop_carried(self, reg: ir.Register, defs: tuple) -> Value:
        """A register written more than once: its common thread part plus a uniform term."""
        name = reg.name
        key = (name, defs)
        carried = Affine.symbol(name)
        thread = Affine()
        for _ in range(2):
            saved = dict(self._memo)
            self._pending[key] = thread + carried
            try:
                values = [self._define(i, reg) for i in defs]
            finally:
                del self._pending[key]
            bad = next((v for v in values if isinstance(v, NotAffine)), None)
            if bad is not None:
                self._memo = saved
                return bad
            parts = {tuple(sorted(v.thread_part().items())) for v in values
                     if isinstance(v, Affine)}
            if parts == {tuple(sorted(thread.thread_part().items()))}:
                # the first iteration's constant, when every entry into the loop agrees on it
                firsts = {v.offset() for v in values
                          if isinstance(v, Affine) and (name,) not in v.as_dict()}
                first = firsts.pop() if len(firsts) == 1 else 0
                return thread + carried + Affine.const(first)
            self._memo = saved
            inits = {tuple(sorted(v.thread_part().items())) for v in values
                     if isinstance(v, Affine) and (name,) not in v.as_dict()}
            if len(inits) != 1:
                break
            thread = Affine.of(dict(next(iter(inits))))
        return NotAffine(reason=f"{name} is written more than once with different thread "
                         "offsets (a thread-dependent loop step or branch)")

    def _diverges(self, name: str, defs: tuple, at: int | None) -> NotAffine | None:
        """NotAffine when the writes of ``name`` that reach instruction ``at`` do not all
        depend on the same thread-dependent branches, less those ``at`` itself depends on
        (every thread running it took them the same way): :mod:`.divergence`."""
        if self._control is None:
            self._control = ControlDependence(self.kernel)
        cd = self._control
        own = cd.edges(at, self.uniform_guard) if at is not None else frozenset()
        sets = [cd.edges(i, self.uniform_guard) - own for i in defs]
        if len(set(sets)) < 2:
            return None
        common = frozenset.intersection(*sets)
        block = min(min(s - common) for s in sets if s - common)[0]
        last = cd.cfg.instructions[cd.cfg.blocks[block].end - 1]
        return NotAffine(reason=f"{name} is written under a thread-dependent branch"
                                f"{line_of(last)}: its value differs between the threads")

    def uniform_guard(self, guard, at: int | None = None) -> bool:
        """True when a guard (or branch) of instruction ``at`` takes the same way in every
        thread of a warp."""
        if not isinstance(guard, ir.Guard) or not isinstance(guard.register, ir.Register):
            return False
        return self._uniform_predicate(guard.register.name, at)

    def _uniform_predicate(self, name: str, at: int | None) -> bool:
        defs = self.reach.reaching(at, name)
        got = self._preds.get((name, defs))
        if got is not None:
            return got
        self._preds[(name, defs)] = False  # a cycle through itself: not known uniform
        ok = len(defs) == 1
        if ok:
            inst = self.insts[defs[0]]
            if inst.op.has_trait(WarpCollective) and inst.op.family != "shfl":
                ok = True  # vote: one answer for the warp
            else:
                for operand in inst.operands[inst.ndefs:]:
                    if isinstance(operand, ir.Register) and operand.type.is_pred:
                        ok = ok and self._uniform_predicate(operand.name, defs[0])
                    elif isinstance(operand, ir.Negated):
                        ok = ok and self._uniform_predicate(operand.operand.name, defs[0])
                    else:
                        v = self.operand_value(operand, defs[0])
                        ok = ok and self.warp_constant(v)
            if not ok and inst.op.family == "setp":
                from .lane_values import warp_uniform_predicate  # it imports this module
                ok = warp_uniform_predicate(self, defs[0])
        self._preds[(name, defs)] = ok
        return ok

    def warp_constant(self, value: Value) -> bool:
        """True when ``value`` is the same in every thread of each warp of the block: affine,
        with no thread index that varies inside a warp (``tid.y`` varies only across warps
        when the block's x is a multiple of 32, ``tid.z`` when x*y is)."""
        if not isinstance(value, Affine):
            return False
        bx, by, _ = self.block
        constant = {"tid.y": bx % 32 == 0, "tid.z": (bx * by) % 32 == 0}
        return all(constant.get(s, False) for m, _ in value.thread_part().items() for s in m
                   if s in THREAD_SYMBOLS)

    def _define(self, index: int, reg: ir.Register) -> Value:
        """The value ``self.insts[index]`` writes to ``reg``."""
        inst = self.insts[index]
        fam = inst.op.family
        ops = inst.operands
        where = line_of(inst)
        if inst.op.info is not None and inst.op.info.memory is not None:
            return self._loaded(inst, index)
        if inst.ndefs != 1 or not isinstance(ops[0], ir.Register):
            return NotAffine(reason=f"{reg.name} is written by {inst.opcode}{where}")
        if fam == "selp" and len(ops) == 4 and is_int(inst):
            got = self._select(index, inst, reg)
            if got is not None:
                return got
        srcs = [self.operand_value(o, index) for o in ops[1:]]
        handler = HANDLERS.get(fam)
        if handler is not None and (fam in ("mov", "cvta") or is_int(inst)):
            got = handler(self, inst, srcs)
            if got is not None:
                return got
        return self._uniform_or(inst, reg, srcs, where)

    def _select(self, index: int, inst: ir.Instruction, reg: ir.Register) -> Value | None:
        """``selp d, a, b, p`` with ``p`` the same in every thread of a warp and a, b of the
        same thread part: that part plus a uniform term (and the constant both share); None
        when it is not such a select."""
        a, b = (self.operand_value(o, index) for o in inst.operands[1:3])
        pred = inst.operands[3]
        if isinstance(a, NotAffine) or isinstance(b, NotAffine) or a.uniform and b.uniform \
                or a.thread_part() != b.thread_part() or not isinstance(pred, ir.Register) \
                or not self._uniform_predicate(pred.name, index):
            return None
        if a == b:
            return a
        first = a.offset() if a.offset() == b.offset() else 0
        return Affine.of(a.thread_part()) + Affine.symbol(reg.name) + Affine.const(first)

    def _uniform_or(self, inst, reg, srcs, where) -> Value:
        """A fresh uniform term when every source is uniform, else NotAffine."""
        bad = next((v for v in srcs if isinstance(v, NotAffine)), None)
        if bad is not None:
            return bad
        if all(isinstance(v, Affine) and v.uniform for v in srcs):
            return Affine.symbol(reg.name)
        return NotAffine(reason=f"{reg.name} = {inst.opcode} of a thread-dependent value{where} "
                         "is not affine")

    def _loaded(self, inst: ir.Instruction, index: int) -> Value:
        """The value a load writes: a parameter's symbol, or uniform from a uniform address."""
        reg = inst.operands[0]
        name = getattr(reg, "name", "?")
        address = next((o for o in inst.operands if isinstance(o, ir.Address)), None)
        space = inst.op.space
        if inst.op.family == "ld" and space == "param" and address is not None \
                and isinstance(address.base, ir.Symbol):
            sym = address.base.name + (f"+{address.offset}" if address.offset else "")
            if sym in self.values:
                return Affine.const(self.values[sym])
            if address.base.name in self.params:
                self.term_space.setdefault(sym, "global")
            return Affine.symbol(sym)
        where = line_of(inst)
        what = f"{space} memory" if space else "memory"
        mem = inst.op.info.memory if inst.op.info is not None else None
        plain_load = mem is not None and mem.direction == "load" and not mem.texture \
            and not mem.shared_only
        if plain_load and address is not None and space != "local":
            at = self.address_value(address, index)
            if isinstance(at, Affine) and at.uniform:
                return Affine.symbol(name)
        return NotAffine(reason=f"{name} is loaded from {what} by {inst.opcode}{where}")

    def _special(self, name: str) -> Value:
        """The value of a special register."""
        base, _, axis = name.lstrip("%").partition(".")
        if base == "tid" and axis in AXES:
            return Affine.const(0) if self.block[AXES[axis]] == 1 else Affine.symbol(f"tid.{axis}")
        if base == "ntid" and axis in AXES:
            return Affine.const(self.block[AXES[axis]])
        if base == "laneid":
            bx, by, _ = self.block
            lin = Affine.of({("tid.x",): 1 if bx > 1 else 0,
                             ("tid.y",): bx if self.block[1] > 1 else 0,
                             ("tid.z",): bx * by if self.block[2] > 1 else 0})
            return lin + Affine.symbol("warp_base")
        if base.startswith(("lanemask", "clock")) or base == "globaltimer":
            return NotAffine(reason=f"%{name.lstrip('%')} differs per thread or per read")
        return Affine.symbol(name.lstrip("%"))
