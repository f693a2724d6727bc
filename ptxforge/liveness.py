"""Liveness of virtual registers and register pressure per instruction.

Definitions (used everywhere in ptxforge, and in ``docs/liveness.md``):

* A register ``r`` is *backward-live* at a point when some path from the point reaches a use
  of ``r`` before an unconditional definition of it.  A guarded definition (``@%p mov ...``)
  does not kill: the old value survives when the guard is false.  An in-place op
  (``add %f1, %f1, %f2``) uses and then defines ``%f1``.
* ``r`` is *maybe-defined* at a point when some path from the kernel entry to the point
  passes a definition of ``r`` (guarded or not).
* ``r`` is **live** at a point when it is both.  Values that compiler PTX defines under a
  predicate and uses later are therefore not live from the kernel entry, and a register that is
  read but never written is never live.
* Points: ``before(i)`` is just before instruction ``i``, ``after(i)`` just after it.
* **Live at instruction i** (``at(i)``) is ``after(i) ∪ defs(i)``: values that survive ``i``
  plus what ``i`` writes (a result that is never read still occupies a register while it is
  written; a source that dies at ``i`` may share its register with the result).  This is the
  quantity the pressure, the peak and the interference graph are built from.
* Pressure is counted per register class (``pred``, ``b16``, ``b32``, ``b64``, ``b128``,
  ``f32``, ``f64``) as a number of values, and in hardware units: general registers are 32-bit
  units (8/16/32-bit values 1, 64-bit 2, ``.b128`` 4); predicates are a separate file.

Storage: block-level sets are Python ints used as bitsets over a register index (registers
numbered by first appearance); the per-instruction result is only the number of live values
per class before, after and at each instruction (flat ``array('i')``).  Live sets at a given
instruction are materialised on demand (:meth:`Liveness.live_at`).

Example::

    >>> from ptxforge import ir, types
    >>> from ptxforge.liveness import analyze_liveness
    >>> a, b = ir.Register("%rd1", types.u64), ir.Register("%rd2", types.u64)
    >>> body = (ir.Instruction("mov.u64", (a, ir.Immediate(1)), 1),
    ...         ir.Instruction("add.u64", (b, a, a), 1),
    ...         ir.Instruction("st.global.u64", (ir.Address(b), a)),
    ...         ir.Instruction("ret"))
    >>> lv = analyze_liveness(ir.Kernel("k", body=body))
    >>> [lv.general_at(i) for i in range(4)]
    [2, 4, 0, 0]
"""

from __future__ import annotations

from array import array
from collections import deque
from itertools import repeat
from operator import add, mul
from typing import Iterable, Iterator, Optional, Union

import attrs

from . import ir
from .cfg import ControlFlowGraph, build_cfg
from .types import REG_CLASSES, RegClass

__all__ = [
    "CLASS_NAMES",
    "Liveness",
    "analyze_liveness",
    "bits_of",
    "mask_of",
]

#: Register class names in the fixed order used by every per-class array.
CLASS_NAMES: tuple[str, ...] = tuple(c.name for c in REG_CLASSES)
_NC = len(REG_CLASSES)
_CLASS_POS = {c.name: k for k, c in enumerate(REG_CLASSES)}
_UNITS = tuple(0 if c.is_pred else c.units for c in REG_CLASSES)
_PRED = _CLASS_POS["pred"]


def mask_of(indices: Iterable[int], nbits: int) -> int:
    """A bitset (Python int) with the given bit indices set."""
    buf = bytearray((nbits >> 3) + 1)
    for k in indices:
        buf[k >> 3] |= 1 << (k & 7)
    return int.from_bytes(buf, "little")


def bits_of(x: int) -> list[int]:
    """The set bit indices of a non-negative int, ascending."""
    if not x:
        return []
    s = bin(x)
    top = len(s) - 1
    out = []
    p = s.rfind("1")
    while p >= 2:
        out.append(top - p)
        p = s.rfind("1", 2, p)
    return out


@attrs.frozen(slots=True)
class Liveness:
    """Liveness of one kernel: per-block bitsets and per-instruction pressure per class.

    Build it with :func:`analyze_liveness`.  Register indices are positions in
    :attr:`registers` (first appearance order); instruction indices are positions in
    ``cfg.instructions``.  Per-class counts are numbers of values; ``general_*`` are 32-bit
    units of all non-predicate classes; ``pred_*`` are predicate counts.

    Example::

        >>> from ptxforge import ir, types
        >>> p = ir.Register("%p1", types.pred)
        >>> k = ir.Kernel("k", body=(ir.Instruction("setp.eq.u32", (p, ir.Immediate(0),
        ...     ir.Immediate(0)), 1), ir.Instruction("ret", guard=ir.Guard(p))))
        >>> analyze_liveness(k).pred_at(0)
        1
    """

    cfg: ControlFlowGraph
    registers: tuple[ir.Register, ...]
    index: dict = attrs.field(repr=False)
    reg_class: bytes = attrs.field(repr=False)  # class position per register
    first_def: array = attrs.field(repr=False)  # instruction index, -1 when never defined
    def_count: array = attrs.field(repr=False)
    last_use: array = attrs.field(repr=False)  # instruction index, -1 when never used
    live_in_bits: tuple[int, ...] = attrs.field(repr=False)  # backward-live, per block
    live_out_bits: tuple[int, ...] = attrs.field(repr=False)
    defined_in_bits: tuple[int, ...] = attrs.field(repr=False)  # maybe-defined, per block
    defined_out_bits: tuple[int, ...] = attrs.field(repr=False)
    before_counts: array = attrs.field(repr=False)  # flat [i * 7 + class]
    after_counts: array = attrs.field(repr=False)
    at_counts: array = attrs.field(repr=False)
    _defs: tuple = attrs.field(repr=False)
    _uses: tuple = attrs.field(repr=False)
    _guarded: bytes = attrs.field(repr=False)
    _touched: tuple = attrs.field(repr=False)  # per block: frozenset of registers it mentions
    _touched_len: array = attrs.field(repr=False)
    _class_used: tuple = attrs.field(repr=False)  # per class position: any register of it

    # ----- sizes and lookup -------------------------------------------------------------
    @property
    def n_instructions(self) -> int:
        return len(self.cfg.instructions)

    @property
    def instruction_defs(self) -> tuple[tuple[int, ...], ...]:
        """Per instruction: the register indices it defines (first appearance order)."""
        return self._defs

    @property
    def instruction_uses(self) -> tuple[tuple[int, ...], ...]:
        """Per instruction: the register indices it reads (guard included)."""
        return self._uses

    def register(self, key: Union[int, str]) -> ir.Register:
        """A register by index or PTX name."""
        return self.registers[key if isinstance(key, int) else self.index[key]]

    def class_of(self, reg: int) -> RegClass:
        """The allocation class of register index ``reg``."""
        return REG_CLASSES[self.reg_class[reg]]

    # ----- per-instruction numbers ------------------------------------------------------
    def counts(self, i: int, where: str = "at") -> dict[str, int]:
        """Live values per class name at instruction ``i``; ``where`` is at/before/after."""
        arr = {"at": self.at_counts, "before": self.before_counts, "after": self.after_counts}[where]
        return {CLASS_NAMES[c]: arr[i * _NC + c] for c in range(_NC)}

    def general_at(self, i: int) -> int:
        """General-register pressure (32-bit units) at instruction ``i``."""
        base = i * _NC
        return sum(self.at_counts[base + c] * _UNITS[c] for c in range(_NC))

    def pred_at(self, i: int) -> int:
        """Predicates live at instruction ``i``."""
        return self.at_counts[i * _NC + _PRED]

    def series(self, where: str = "at", cls: Optional[str] = None) -> list[int]:
        """Per-instruction numbers: general units (``cls=None``), ``"pred"``, or one class."""
        arr = {"at": self.at_counts, "before": self.before_counts, "after": self.after_counts}[where]
        if cls is not None:
            return arr[_CLASS_POS[cls]::_NC].tolist()
        total = None
        for c in range(_NC):
            if not _UNITS[c] or not self._class_used[c]:
                continue
            col = arr[c::_NC]
            if _UNITS[c] != 1:
                col = map(mul, col, repeat(_UNITS[c]))
            total = list(col) if total is None else list(map(add, total, col))
        return [0] * self.n_instructions if total is None else total

    def class_peaks(self) -> dict[str, tuple[int, int]]:
        """Per class name: (largest number of values live at once, first instruction)."""
        out = {}
        for c in range(_NC):
            col = self.at_counts[c::_NC]
            if len(col) == 0:
                out[CLASS_NAMES[c]] = (0, -1)
                continue
            m = max(col)
            out[CLASS_NAMES[c]] = (m, col.index(m))
        return out

    # ----- live sets on demand ----------------------------------------------------------
    def live_in(self, block: int) -> tuple[int, ...]:
        """Registers live on entry to ``block`` (indices, ascending)."""
        return tuple(bits_of(self.live_in_bits[block] & self.defined_in_bits[block]))

    def live_out(self, block: int) -> tuple[int, ...]:
        """Registers live on exit from ``block`` (indices, ascending)."""
        return tuple(bits_of(self.live_out_bits[block] & self.defined_out_bits[block]))

    def live_at(self, i: int, where: str = "at") -> tuple[int, ...]:
        """Registers live at instruction ``i`` (``at``/``before``/``after``), ascending."""
        return self.live_sets([i], where)[i]

    def live_sets(self, indices: Iterable[int], where: str = "at") -> dict[int, tuple[int, ...]]:
        """Live sets at several instructions, one backward walk per block involved."""
        if where not in ("at", "before", "after"):
            raise ValueError(f"where must be 'at', 'before' or 'after', got {where!r}")
        want: dict[int, list[int]] = {}
        for i in sorted(set(indices)):
            want.setdefault(self.cfg.block_of_instruction[i], []).append(i)
        out: dict[int, tuple[int, ...]] = {}
        defs, uses, guarded = self._defs, self._uses, self._guarded
        for b, points in want.items():
            blk = self.cfg.blocks[b]
            s, e = blk.start, blk.end
            targets = set(points)
            back = set(bits_of(self.live_out_bits[b]))
            found: dict[int, set] = {}
            for j in range(e - 1, points[0] - 1, -1):
                if j in targets and where != "before":
                    found[j] = back.union(defs[j]) if where == "at" else set(back)
                if not guarded[j]:
                    back.difference_update(defs[j])
                back.update(uses[j])
                if j in targets and where == "before":
                    found[j] = set(back)
            # Keep only what some definition may have reached (defs of the block up to the point).
            cand = set().union(*found.values())
            md_in = set(bits_of(self.defined_in_bits[b] & mask_of(cand, len(self.registers))))
            first: dict[int, int] = {}
            for j in range(s, points[-1] + 1):
                for r in defs[j]:
                    first.setdefault(r, j)
            for j, regs in found.items():
                limit = j if where == "before" else j + 1
                out[j] = tuple(sorted(r for r in regs if r in md_in or first.get(r, e) < limit))
        return out

    def iter_points(self, b: int, lo: int = -1, hi: int = 1 << 62) -> Iterator[tuple[int, set, tuple]]:
        """Backward over block ``b``: yield (i, after(i) as a live set, defs(i)) for ``lo <= i <= hi``,
        then ``(-1, before(start), ())`` when the block start lies in the range.

        The yielded set is updated in place after the next step; copy it to keep it.
        """
        blk = self.cfg.blocks[b]
        s, e = blk.start, blk.end
        defs, uses, guarded = self._defs, self._uses, self._guarded
        lo_bits = self.live_out_bits[b]
        touched = self._touched[b]
        nb = len(self.registers)
        tmask = mask_of(touched, nb)
        first: dict[int, int] = {}
        for j in range(s, e):
            for r in defs[j]:
                first.setdefault(r, j)
        md_in = set(bits_of(self.defined_in_bits[b] & tmask))
        back = set(bits_of(lo_bits & tmask))
        live = set(bits_of(lo_bits & self.defined_out_bits[b]))
        for j in range(e - 1, max(s, lo) - 1, -1):
            if j <= hi:
                yield j, live, defs[j]
            if not guarded[j]:
                back.difference_update(defs[j])
            back.update(uses[j])
            for r in dict.fromkeys(defs[j] + uses[j]):
                if r in back and (r in md_in or first.get(r, e) < j):
                    live.add(r)
                else:
                    live.discard(r)
        if lo <= s <= hi:
            yield -1, live, ()

    def live_lengths(self, regs: Iterable[int]) -> dict[int, int]:
        """Live-range length of each register: the number of instructions ``i`` with the
        register in ``at(i)``."""
        want = sorted(set(regs))
        out = {r: self._touched_len[r] for r in want}
        if not want:
            return out
        rmask = mask_of(want, len(self.registers))
        for blk in self.cfg.blocks:
            x = self.live_out_bits[blk.index] & self.defined_out_bits[blk.index] & rmask
            if x:
                touched = self._touched[blk.index]
                n = blk.end - blk.start
                for r in bits_of(x):
                    if r not in touched:
                        out[r] += n
        return out


_SIMPLE = (ir.Immediate, ir.SpecialReg, ir.Symbol, ir.LabelRef, ir.Raw)


def _prepare(instructions: tuple) -> tuple:
    """Number registers by first appearance; per instruction: defs, uses, guarded flag, and
    defs + uses without repeats."""
    index: dict[str, int] = {}
    regs: list[ir.Register] = []
    defs: list[tuple] = []
    uses: list[tuple] = []
    both: list[tuple] = []
    guarded = bytearray(len(instructions))
    Register, Address = ir.Register, ir.Address
    get = index.get
    def number(r) -> int:
        k = get(r.name)
        if k is None:
            k = index[r.name] = len(regs)
            regs.append(r)
        return k

    for i, inst in enumerate(instructions):
        nd = inst.ndefs
        dd: list[int] = []
        uu: list[int] = []
        # Fast path: registers, literals and register-based addresses (the common case);
        # vectors and negated predicates go through the IR's own defs/uses.
        for k, o in enumerate(inst.operands):
            t = type(o)
            if t is Register:
                x = get(o.name)
                if x is None:
                    x = number(o)
                if k < nd:
                    if x not in dd:
                        dd.append(x)
                elif x not in uu:
                    uu.append(x)
            elif t is Address:
                if type(o.base) is Register:
                    x = number(o.base)
                    if x not in uu:
                        uu.append(x)
            elif not isinstance(o, _SIMPLE):
                dd = list(dict.fromkeys(number(r) for r in inst.defs))
                uu = list(dict.fromkeys(number(r) for r in inst.uses))
                break
        else:
            if inst.guard is not None:
                x = number(inst.guard.register)
                if x not in uu:
                    uu.append(x)
        if inst.guard is not None:
            guarded[i] = 1
        tu = tuple(uu)
        uses.append(tu)
        if dd:
            td = tuple(dd)
            defs.append(td)
            both.append(td + tuple(x for x in uu if x not in dd))
        else:
            defs.append(())
            both.append(tu)
    return index, regs, tuple(defs), tuple(uses), tuple(both), bytes(guarded)


def _solve(cfg: ControlFlowGraph, defs: tuple, uses: tuple, guarded: bytes, nregs: int):
    """Block-level fixpoints: backward liveness and forward maybe-defined, as int bitsets."""
    nb = len(cfg.blocks)
    gen, kill, dall, touched = [], [], [], []
    for blk in cfg.blocks:
        g: set = set()
        k: set = set()
        d: set = set()
        for j in range(blk.start, blk.end):
            for r in uses[j]:
                if r not in k:
                    g.add(r)
            d.update(defs[j])
            if not guarded[j]:
                k.update(defs[j])
        gen.append(mask_of(g, nregs))
        kill.append(mask_of(k, nregs))
        dall.append(mask_of(d, nregs))
        touched.append(frozenset(d.union(*(uses[j] for j in range(blk.start, blk.end)))))
    order = cfg.reverse_postorder()
    succ = [b.successors for b in cfg.blocks]
    pred = [b.predecessors for b in cfg.blocks]
    # forward: maybe-defined
    d_in, d_out = [0] * nb, [0] * nb
    work, queued = deque(order), [True] * nb
    while work:
        b = work.popleft()
        queued[b] = False
        x = 0
        for p in pred[b]:
            x |= d_out[p]
        d_in[b] = x
        y = x | dall[b]
        if y != d_out[b]:
            d_out[b] = y
            for s in succ[b]:
                if not queued[s]:
                    queued[s] = True
                    work.append(s)
    # backward: liveness
    l_in, l_out = [0] * nb, [0] * nb
    work, queued = deque(reversed(order)), [True] * nb
    while work:
        b = work.popleft()
        queued[b] = False
        x = 0
        for s in succ[b]:
            x |= l_in[s]
        l_out[b] = x
        y = gen[b] | (x & ~kill[b])
        if y != l_in[b]:
            l_in[b] = y
            for p in pred[b]:
                if not queued[p]:
                    queued[p] = True
                    work.append(p)
    return l_in, l_out, d_in, d_out, touched


def analyze_liveness(kernel: Union[ir.Kernel, ControlFlowGraph]) -> Liveness:
    """Run liveness on a kernel (or an already built CFG) and count pressure per instruction.

    Example::

        >>> from ptxforge import ir
        >>> analyze_liveness(ir.Kernel("k", body=(ir.Instruction("ret"),))).general_at(0)
        0
    """
    cfg = kernel if isinstance(kernel, ControlFlowGraph) else build_cfg(kernel)
    insts = cfg.instructions
    n = len(insts)
    index, regs, defs, uses, affected, guarded = _prepare(insts)
    nr = len(regs)
    cls = bytes(_CLASS_POS[r.reg_class.name] for r in regs)
    first_def = array("i", [-1]) * nr
    def_count = array("i", [0]) * nr
    last_use = array("i", [-1]) * nr
    for i in range(n):
        for r in defs[i]:
            if first_def[r] < 0:
                first_def[r] = i
            def_count[r] += 1
        for r in uses[i]:
            last_use[r] = i
    l_in, l_out, d_in, d_out, touched = _solve(cfg, defs, uses, guarded, nr)
    members: list[list[int]] = [[] for _ in range(_NC)]
    for r in range(nr):
        members[cls[r]].append(r)
    class_masks = [mask_of(m, nr) if m else 0 for m in members]
    after = array("i", [0]) * (n * _NC)
    patches: list = []
    entry: list = []
    length = array("i", [0]) * nr
    for blk in cfg.blocks:
        b, s, e = blk.index, blk.start, blk.end
        tset = touched[b]
        tmask = mask_of(tset, nr)
        lo, mo = l_out[b], d_out[b]
        through = lo & mo & ~tmask
        cnt = array("i", [(through & m).bit_count() for m in class_masks])
        first: dict[int, int] = {}
        for j in range(s, e):
            for r in defs[j]:
                if r not in first:
                    first[r] = j
        back = set(bits_of(lo & tmask))
        md_in = set(bits_of(d_in[b] & tmask))
        open_: dict[int, int] = {}  # counted touched register -> last instruction it is in at()
        for r in back:
            if r in md_in or r in first:
                cnt[cls[r]] += 1
                open_[r] = e - 1
        for j in range(e - 1, s - 1, -1):
            base = j * _NC
            after[base:base + _NC] = cnt
            dj = defs[j]
            if dj:
                dead = [r for r in dj if r not in open_]
                if dead:
                    patches.append((base, dead))
                    for r in dead:
                        length[r] += 1
                if not guarded[j]:
                    back.difference_update(dj)
            back.update(uses[j])
            for r in affected[j]:
                if r in back and (r in md_in or first.get(r, e) < j):
                    if r not in open_:
                        open_[r] = j - 1
                        cnt[cls[r]] += 1
                elif r in open_:
                    length[r] += open_.pop(r) - j + 1
                    cnt[cls[r]] -= 1
        entry.append((s * _NC, cnt))
        for r, hi in open_.items():
            length[r] += hi - s + 1
    # at(i) = after(i) + results that die at once; before(i) = after(i - 1) inside a block.
    at = array("i", after)
    for base, dead in patches:
        for r in dead:
            at[base + cls[r]] += 1
    before = array("i", [0]) * _NC + after[: max(0, len(after) - _NC)]
    for base, counts in entry:
        before[base:base + _NC] = counts
    return Liveness(
        cfg=cfg,
        registers=tuple(regs),
        index=index,
        reg_class=cls,
        first_def=first_def,
        def_count=def_count,
        last_use=last_use,
        live_in_bits=tuple(l_in),
        live_out_bits=tuple(l_out),
        defined_in_bits=tuple(d_in),
        defined_out_bits=tuple(d_out),
        before_counts=before,
        after_counts=after,
        at_counts=at,
        defs=defs,
        uses=uses,
        guarded=guarded,
        touched=tuple(touched),
        touched_len=length,
        class_used=tuple(bool(m) for m in members),
    )
