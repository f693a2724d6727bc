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
from bisect import bisect_left, bisect_right
from collections import deque
from itertools import accumulate, chain, compress, repeat
from operator import add, attrgetter, ge, gt, mul
from typing import Iterable, Iterator, Optional, Union

import attrs

from . import ir
from .cfg import ControlFlowGraph, build_cfg
from .types import ALL_TYPES, REG_CLASSES, RegClass

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
_CLASS_NAME_OF = attrgetter("type.reg_class.name")
_TYPE_OF = attrgetter("type")
_TYPE_CODE = {id(t): k for k, t in enumerate(ALL_TYPES)}
_CODE_CLASS = bytes(_CLASS_POS[t.reg_class.name] for t in ALL_TYPES).ljust(256, b"\0")
_TO_DIGITS = bytes.maketrans(b"\x00\x01", b"01")
_FROM_DIGITS = bytes.maketrans(b"01", b"\x00\x01")


def mask_of(indices: Iterable[int], nbits: int) -> int:
    """A bitset (Python int) with the given bit indices set."""
    buf = bytearray(nbits + 8)  # one byte per bit, then read as base-2 digits
    deque(map(buf.__setitem__, indices, repeat(1)), maxlen=0)
    return int(buf[::-1].translate(_TO_DIGITS), 2)


def bits_of(x: int) -> list[int]:
    """The set bit indices of a non-negative int, ascending."""
    if not x:
        return []
    digits = bin(x).encode()[:1:-1].translate(_FROM_DIGITS)  # lowest bit first
    return list(compress(range(len(digits)), digits))


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
    # Live counts per class and instruction are kept as class-major difference lists
    # ([class * (n + 1) + i]) and summed up on demand (columns, flat arrays: see the properties).
    _diff: list = attrs.field(repr=False, eq=False)  # after(i) - after(i - 1)
    _dead: list = attrs.field(repr=False, eq=False)  # the same for at(i) - after(i)
    _entries: list = attrs.field(repr=False, eq=False)  # per block: (start * 7, counts or None)
    _operands: list = attrs.field(repr=False, eq=False)  # [defs, uses] per instruction, or
    # [None, None] until first needed (decoded from the instructions and ``index``)
    _guarded: bytes = attrs.field(repr=False)
    _touched: list = attrs.field(repr=False, eq=False)  # per block: frozenset of registers it
    # mentions, computed on first use (None until then)
    _touched_len: array = attrs.field(repr=False)
    _class_used: tuple = attrs.field(repr=False)  # per class position: any register of it
    # Registers with one unguarded definition and every read after it in the same block ("simple"
    # ones, ascending: their definitions ascend too) are live from the definition to the last
    # read; the others are "complex", and blocks mentioning any of them need a walk.
    _complex: bytes = attrs.field(repr=False, default=b"")
    _block_has_complex: Optional[bytes] = attrs.field(repr=False, default=None)
    _simple: list = attrs.field(repr=False, factory=list)
    _type_codes: Optional[bytes] = attrs.field(repr=False, default=None)  # per register, into ALL_TYPES
    _memo: dict = attrs.field(repr=False, eq=False, factory=dict)  # columns and flat arrays
    # {instruction: (defs, uses)} restricted to complex and never-defined registers, and its
    # sorted keys (None: walk with the full per-instruction lists)
    _sparse: Optional[tuple] = attrs.field(repr=False, eq=False, default=None)

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

    @property
    def _defs(self) -> tuple:
        if self._operands[0] is None:
            self._operands[:] = _decode(self.cfg.instructions, self.index)
        return self._operands[0]

    @property
    def _uses(self) -> tuple:
        if self._operands[1] is None:
            self._operands[:] = _decode(self.cfg.instructions, self.index)
        return self._operands[1]

    def register(self, key: Union[int, str]) -> ir.Register:
        """A register by index or PTX name."""
        return self.registers[key if isinstance(key, int) else self.index[key]]

    def class_of(self, reg: int) -> RegClass:
        """The allocation class of register index ``reg``."""
        return REG_CLASSES[self.reg_class[reg]]

    # ----- per-instruction numbers ------------------------------------------------------
    @property
    def before_counts(self) -> array:
        """Live values per class just before each instruction, flat ``[i * 7 + class]``."""
        return self._flat("before")

    @property
    def after_counts(self) -> array:
        """Live values per class just after each instruction, flat ``[i * 7 + class]``."""
        return self._flat("after")

    @property
    def at_counts(self) -> array:
        """Live values per class at each instruction, flat ``[i * 7 + class]``."""
        return self._flat("at")

    def _flat(self, where: str) -> array:
        arr = self._memo.get(where)
        if arr is None:
            n = self.n_instructions
            arr = array("i", [0]) * (n * _NC)
            for c in range(_NC):
                if self._class_used[c]:
                    arr[c::_NC] = self._column(c, where)
            if where == "before" and not n:
                arr = array("i", [0]) * _NC
            self._memo[where] = arr
        return arr

    def _column(self, c: int, where: str) -> array:
        """Live values of class position ``c`` per instruction (``at``/``before``/``after``)."""
        key = (c, where)
        col = self._memo.get(key)
        if col is None:
            n = self.n_instructions
            lo = c * (n + 1)
            if not self._class_used[c]:
                col = array("i", [0]) * n
            elif where == "after":
                col = array("i", accumulate(self._diff[lo:lo + n]))
            elif where == "at":
                col = array("i", accumulate(map(add, self._diff[lo:lo + n], self._dead[lo:lo + n])))
            else:
                col = (array("i", [0]) + self._column(c, "after")[:n - 1]) if n else array("i")
                for base, counts in self._entries:
                    col[base // _NC] = 0 if counts is None else counts[c]
            self._memo[key] = col
        return col

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
        if where not in ("at", "before", "after"):
            raise KeyError(where)
        if not self.n_instructions:  # (the flat "before" array has one row of zeros then)
            arr = self._flat(where)
            if cls is not None:
                return arr[_CLASS_POS[cls]::_NC].tolist()
            return []
        if cls is not None:
            return self._column(_CLASS_POS[cls], where).tolist()
        total = None
        for c in range(_NC):
            if not _UNITS[c] or not self._class_used[c]:
                continue
            col = self._column(c, where)
            if _UNITS[c] != 1:
                col = map(mul, col, repeat(_UNITS[c]))
            total = list(col) if total is None else list(map(add, total, col))
        return [0] * self.n_instructions if total is None else total

    def _timelines(self) -> tuple[array, array, array, array, array, array]:
        """``series()`` of general units and of predicates, before/after/at, as arrays."""
        n = self.n_instructions
        if not n:
            return tuple(array("i", self.series(w, k)) for k in (None, "pred")
                         for w in ("before", "after", "at"))  # type: ignore[return-value]
        gen = [c for c in range(_NC) if _UNITS[c] and self._class_used[c]]
        # at: from the per-class columns (class_peaks wants them too); after: from the differences
        g_at = _weighted([self._column(c, "at") for c in gen], [_UNITS[c] for c in gen], n)
        diffs = [self._diff[c * (n + 1):c * (n + 1) + n] for c in gen]
        g_after = array("i", accumulate(_weighted(diffs, [_UNITS[c] for c in gen], n)))
        p_after = array("i", self._column(_PRED, "after"))
        p_at = array("i", self._column(_PRED, "at"))
        g_before = array("i", [0]) + g_after[:n - 1]
        p_before = array("i", [0]) + p_after[:n - 1]
        for base, counts in self._entries:
            i = base // _NC
            if counts is None:
                g_before[i] = p_before[i] = 0
            else:
                g_before[i] = sum(map(mul, counts, _UNITS))
                p_before[i] = counts[_PRED]
        return g_before, g_after, g_at, p_before, p_after, p_at

    def _type_counts(self) -> Optional[dict[str, int]]:
        """Registers per type name (None when some register has a type outside the registry)."""
        codes = self._type_codes
        if codes is None:
            return None
        return {t.name: k for c, t in enumerate(ALL_TYPES) if (k := codes.count(c))}

    def class_peaks(self) -> dict[str, tuple[int, int]]:
        """Per class name: (largest number of values live at once, first instruction)."""
        out = {}
        n = self.n_instructions
        for c in range(_NC):
            if not self._class_used[c]:  # a column of zeros
                out[CLASS_NAMES[c]] = (0, 0) if n else (0, -1)
                continue
            if not n:
                out[CLASS_NAMES[c]] = (0, -1)
                continue
            col = self._column(c, "at")
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
        """Live sets at several instructions, one backward walk per block involved (blocks that
        mention only simple registers need no walk)."""
        if where not in ("at", "before", "after"):
            raise ValueError(f"where must be 'at', 'before' or 'after', got {where!r}")
        want: dict[int, list[int]] = {}
        for i in sorted(set(indices)):
            want.setdefault(self.cfg.block_of_instruction[i], []).append(i)
        out: dict[int, tuple[int, ...]] = {}
        walk = self._block_has_complex
        for b, points in want.items():
            if walk is None or walk[b]:
                out.update(self._walk_sets(b, points, where))
                continue
            through = bits_of(self.live_out_bits[b] & self.defined_in_bits[b])
            for i in reversed(points):  # the walk's order: last point first
                simple = self._simple_live(i, where)
                out[i] = tuple(sorted(simple + through)) if through else tuple(simple)
        return out

    def _simple_live(self, i: int, where: str) -> list[int]:
        """Simple registers live at instruction ``i`` (ascending): defined at or before the point
        and read after it (``at`` also holds a result that is never read, at its definition)."""
        simple, fd, lu = self._simple, self.first_def, self.last_use
        if where == "before":
            pre = simple[:bisect_right(simple, i - 1, key=fd.__getitem__)]
            return list(compress(pre, map(ge, map(lu.__getitem__, pre), repeat(i))))
        hi = bisect_right(simple, i, key=fd.__getitem__)
        pre = simple[:hi]
        out = list(compress(pre, map(gt, map(lu.__getitem__, pre), repeat(i))))
        if where == "at":
            dead = [r for r in simple[bisect_left(simple, i, 0, hi, key=fd.__getitem__):hi] if lu[r] < 0]
            if dead:
                out = sorted(out + dead)
        return out

    def _walk_sets(self, b: int, points: list[int], where: str) -> dict[int, tuple[int, ...]]:
        """Live sets at ``points`` (ascending, in block ``b``) by a backward walk of the block."""
        if self._sparse is not None:
            return self._sparse_sets(b, points, where)
        out: dict[int, tuple[int, ...]] = {}
        defs, uses, guarded = self._defs, self._uses, self._guarded
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

    def _sparse_sets(self, b: int, points: list[int], where: str) -> dict[int, tuple[int, ...]]:
        """:meth:`_walk_sets` walking only the instructions that mention complex (or never
        defined) registers; simple registers come from :meth:`_simple_live`."""
        touching, tpos = self._sparse
        guarded = self._guarded
        blk = self.cfg.blocks[b]
        s, e = blk.start, blk.end
        targets = set(points)
        empty = ((), ())
        back = set(bits_of(self.live_out_bits[b]))
        found: dict[int, set] = {}
        steps = set(tpos[bisect_left(tpos, points[0]):bisect_left(tpos, e)])
        steps.update(points)
        for j in sorted(steps, reverse=True):
            dd, uu = touching.get(j, empty)
            if j in targets and where != "before":
                found[j] = back.union(dd) if where == "at" else set(back)
            if not guarded[j]:
                back.difference_update(dd)
            back.update(uu)
            if j in targets and where == "before":
                found[j] = set(back)
        cand = set().union(*found.values())
        md_in = set(bits_of(self.defined_in_bits[b] & mask_of(cand, len(self.registers))))
        first: dict[int, int] = {}
        for j in tpos[bisect_left(tpos, s):bisect_right(tpos, points[-1])]:
            for r in touching[j][0]:
                first.setdefault(r, j)
        out: dict[int, tuple[int, ...]] = {}
        for j, regs in found.items():
            limit = j if where == "before" else j + 1
            live = [r for r in regs if r in md_in or first.get(r, e) < limit]
            live.extend(self._simple_live(j, where))
            out[j] = tuple(sorted(live))
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
        touched = self._touched_set(b)
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

    def _touched_set(self, b: int) -> frozenset:
        """Registers block ``b`` mentions (defs or uses), cached."""
        t = self._touched[b]
        if t is None:
            blk = self.cfg.blocks[b]
            s, e = blk.start, blk.end
            t = self._touched[b] = frozenset(chain(chain.from_iterable(self._defs[s:e]),
                                                   chain.from_iterable(self._uses[s:e])))
        return t

    def _touched_cand(self, b: int) -> frozenset:
        """Complex and never-defined registers that block ``b`` mentions (all of them when the
        sparse view is missing); only values live at a block boundary are ever asked about."""
        if self._sparse is None:
            return self._touched_set(b)
        touching, tpos = self._sparse
        blk = self.cfg.blocks[b]
        at = tpos[bisect_left(tpos, blk.start):bisect_left(tpos, blk.end)]
        return frozenset(chain.from_iterable(chain.from_iterable(map(touching.__getitem__, at))))

    def live_lengths(self, regs: Iterable[int]) -> dict[int, int]:
        """Live-range length of each register: the number of instructions ``i`` with the
        register in ``at(i)``."""
        want = sorted(set(regs))
        out = {}
        fd, lu, cx, tl = self.first_def, self.last_use, self._complex, self._touched_len
        for r in want:
            if cx[r] or fd[r] < 0:
                out[r] = tl[r]
            else:  # simple: from the definition to the last read (or just the definition)
                out[r] = lu[r] - fd[r] if lu[r] >= 0 else 1
        if not want:
            return out
        rmask = mask_of(want, len(self.registers))
        for blk in self.cfg.blocks:
            x = self.live_out_bits[blk.index] & self.defined_out_bits[blk.index] & rmask
            if x:
                touched = self._touched_cand(blk.index)
                n = blk.end - blk.start
                for r in bits_of(x):
                    if r not in touched:
                        out[r] += n
        return out


_SIMPLE = (ir.Immediate, ir.SpecialReg, ir.Symbol, ir.LabelRef, ir.Raw)
_SIMPLE_TYPES = frozenset(_SIMPLE)


def _prepare(instructions: tuple) -> tuple:
    """Number registers by first appearance and, per register: first definition, number of
    definitions, last use (lists, -1/0 when none), and whether it may be read at or before its
    first definition or is defined under a guard (the set ``early``: first seen as a read, read
    and written by one instruction, or written by a guarded one); per instruction the guarded
    flag.  Per-instruction register lists are not kept (see :func:`_decode`)."""
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
        # General path; vectors and negated predicates go through the IR's own defs/uses.
        dd: list[int] = []
        uu: list[int] = []
        k = 0
        for o in ops:
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
            elif t not in simple and not isinstance(o, _SIMPLE):
                dd = list(dict.fromkeys(number(r, False) for r in inst.defs))
                uu = list(dict.fromkeys(number(r, True) for r in inst.uses))
                break
            k += 1
        else:
            if g is not None:
                x = number(g.register, True)
                if x not in uu:
                    uu.append(x)
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
    return index, regs, bytes(guarded), fdl, dcl, lul, early


def _decode(instructions: tuple, index: dict) -> list:
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


def _touching(instructions: tuple, names: dict) -> dict:
    """For the registers in ``names`` (name -> index): ``{instruction: (defs, uses)}`` over the
    instructions that mention one of them, restricted to them (the rules of :func:`_decode`)."""
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


def _solve(cfg: ControlFlowGraph, gen: list, kill, dall: list):
    """Block-level fixpoints: backward liveness and forward maybe-defined, as int bitsets.

    ``kill(b)`` gives block ``b``'s kill mask (only asked for when something is live out of b).
    """
    nb = len(cfg.blocks)
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
        y = gen[b] | (x & ~kill(b)) if x else gen[b]
        if y != l_in[b]:
            l_in[b] = y
            for p in pred[b]:
                if not queued[p]:
                    queued[p] = True
                    work.append(p)
    return l_in, l_out, d_in, d_out


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
    blocks = cfg.blocks
    nb = len(blocks)
    index, regs, guarded, fdl, dcl, lul, early = _prepare(insts)
    operands: list = [None, None]
    nr = len(regs)
    try:  # registry types (the usual case): a type code per register, the class from it
        codes: Optional[bytes] = bytes(map(_TYPE_CODE.__getitem__, map(id, map(_TYPE_OF, regs))))
        cls = codes.translate(_CODE_CLASS)
    except KeyError:
        codes = None
        cls = bytes(map(_CLASS_POS.__getitem__, map(_CLASS_NAME_OF, regs)))
    first_def = array("i", fdl)
    def_count = array("i", dcl)
    last_use = array("i", lul)

    # "Simple" registers: one unguarded definition, every use after it in the same block.  Such
    # a value is live exactly on after(def) .. after(last use - 1), never at a block boundary;
    # its counts go straight into per-class difference arrays.  Every other register that is
    # defined somewhere ("complex") goes through the backward sweep below.
    end_of = list(chain.from_iterable(repeat(b.end, b.end - b.start) for b in blocks)) if nb > 1 else None
    W = n + 1
    diff = [0] * (W * _NC)  # class-major [class * W + i]: after(i) - after(i - 1)
    dead = [0] * (W * _NC)  # the same for results not live after their instruction
    length = array("i", [0]) * nr  # complex registers: instructions live in blocks mentioning them
    complex_: list[int] = []
    undefined: list[int] = []
    simple: list[int] = []
    bases = map([c * W for c in range(_NC)].__getitem__, cls)
    if nb > 1:
        for r, d, u, k, b in zip(range(nr), fdl, lul, dcl, bases):
            if d < 0:
                undefined.append(r)  # never defined: never live
            elif k != 1 or r in early:
                complex_.append(r)
            elif u < 0:
                dead[b + d] += 1
                dead[b + d + 1] -= 1
                simple.append(r)
            elif u >= end_of[d]:
                complex_.append(r)
            else:
                diff[b + d] += 1
                diff[b + u] -= 1
                simple.append(r)
    else:  # one block: every use lies in the block of the definition
        for r, d, u, k, b in zip(range(nr), fdl, lul, dcl, bases):
            if d < 0:
                undefined.append(r)
            elif k != 1 or r in early:
                complex_.append(r)
            elif u < 0:
                dead[b + d] += 1
                dead[b + d + 1] -= 1
                simple.append(r)
            else:
                diff[b + d] += 1
                diff[b + u] -= 1
                simple.append(r)
    del fdl, dcl, lul, early, end_of
    cx = bytearray(nr)
    for r in complex_:
        cx[r] = 1
    # Only complex and never-defined registers can be read before being written in a block.
    cand = complex_ + undefined

    # Where complex and never-defined registers are mentioned (the only instructions the block
    # summaries and the sweep need to look at).
    touching = _touching(insts, {regs[r].name: r for r in cand}) if cand else {}
    tpos = sorted(touching)
    key = first_def.__getitem__

    # Block summaries: upward-exposed reads (gen), definitions, first definitions.
    gen, dall, firsts, firsts_u, kills = [], [], [], [], [None] * nb
    has_cx = bytearray(nb)
    for blk in blocks:
        s, e = blk.start, blk.end
        if not cand:
            gen.append(0)
            if nb == 1:  # every defined register is defined in the block
                dall.append(int(bytes(map(ge, first_def, repeat(0)))[::-1].translate(_TO_DIGITS) or b"0", 2))
            else:  # every register is simple: defined once, and ascending by definition
                dall.append(mask_of(simple[bisect_left(simple, s, key=key):bisect_left(simple, e, key=key)], nr))
            firsts.append(None)
            firsts_u.append(None)
            continue
        first_b: dict[int, int] = {}
        fu_b: dict[int, int] = {}
        fk: dict[int, int] = {}
        for j in tpos[bisect_left(tpos, s):bisect_left(tpos, e)]:
            dd, uu = touching[j]
            for r in uu:
                if r not in fu_b:
                    fu_b[r] = j
            for r in dd:
                if r not in first_b:
                    first_b[r] = j
                if r not in fk and not guarded[j]:
                    fk[r] = j
        g = [r for r, p in fu_b.items() if p <= fk.get(r, e)]
        gen.append(mask_of(g, nr))
        in_block = simple[bisect_left(simple, s, key=key):bisect_left(simple, e, key=key)]
        dall.append(mask_of(chain(in_block, first_b), nr))
        firsts.append(first_b)
        firsts_u.append(fu_b)
        kills[blk.index] = fk
        if complex_ and (any(map(cx.__getitem__, first_b)) or any(map(cx.__getitem__, fu_b))):
            has_cx[blk.index] = 1
    kill_masks: dict[int, int] = {}

    def kill(b: int) -> int:
        m = kill_masks.get(b)
        if m is None:
            m = kill_masks[b] = mask_of([r for r in kills[b] if cx[r]], nr)
        return m

    l_in, l_out, d_in, d_out = _solve(cfg, gen, kill, dall)
    del kills, kill_masks

    # Backward sweep over the complex registers of each block; values live through a block
    # without being mentioned in it count as a constant over the block.
    members: list[list[int]] = [[] for _ in range(_NC)]
    for r in complex_:
        members[cls[r]].append(r)
    class_masks = [mask_of(m, nr) if m else 0 for m in members]
    entry: list = []
    for blk in blocks:
        b, s, e = blk.index, blk.start, blk.end
        lo, mo = l_out[b], d_out[b]
        sweep = has_cx[b]
        lm = lo & mo
        if not lm and not sweep:
            entry.append((s * _NC, None))
            continue
        first = firsts[b]
        if sweep:
            tmask = mask_of([r for r in chain(first, firsts_u[b]) if cx[r]], nr)
        else:
            tmask = 0
        through = lm & ~tmask
        cnt = [(through & m).bit_count() if m else 0 for m in class_masks]
        if through:
            for c in range(_NC):
                if cnt[c]:
                    diff[c * W + s] += cnt[c]
                    diff[c * W + e] -= cnt[c]
        if sweep:
            back = set(bits_of(lo & tmask))
            md_in = set(bits_of(d_in[b] & tmask))
            open_: dict[int, int] = {}  # counted register -> last instruction it is in at()
            for r in back:
                if r in md_in or r in first:
                    cnt[cls[r]] += 1
                    open_[r] = e - 1
            for j in reversed(tpos[bisect_left(tpos, s):bisect_left(tpos, e)]):
                dj, uj = touching[j]
                if dj:
                    for r in dj:
                        if cx[r] and r not in open_:
                            x = cls[r] * W + j
                            dead[x] += 1
                            dead[x + 1] -= 1
                            length[r] += 1
                    if not guarded[j]:
                        back.difference_update(dj)
                back.update(uj)
                for r in (dj + uj if dj and uj else dj or uj):
                    if not cx[r]:
                        continue
                    if r in back and (r in md_in or first.get(r, e) < j):
                        if r not in open_:
                            open_[r] = j - 1
                            cnt[cls[r]] += 1
                    elif r in open_:
                        hi = open_.pop(r)
                        c = cls[r]
                        length[r] += hi - j + 1
                        cnt[c] -= 1
                        diff[c * W + j] += 1
                        diff[c * W + hi + 1] -= 1
            for r, hi in open_.items():
                if hi >= s:
                    c = cls[r]
                    length[r] += hi - s + 1
                    diff[c * W + s] += 1
                    diff[c * W + hi + 1] -= 1
        entry.append((s * _NC, cnt))

    class_used = tuple(bool(m) for m in _members_by_class(cls))
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
        diff=diff,
        dead=dead,
        operands=operands,
        guarded=guarded,
        touched=[None] * nb,
        touched_len=length,
        class_used=class_used,
        complex=bytes(cx),
        block_has_complex=bytes(has_cx),
        simple=simple,
        entries=entry,
        type_codes=codes,
        sparse=(touching, tpos) if cand else None,
    )


def _weighted(cols: list, weights: list, n: int) -> array:
    """Sum of ``weight * column`` over the columns, as an array of length ``n``."""
    if not cols:
        return array("i", [0]) * n
    total = None
    for col, w in zip(cols, weights):
        term = col if w == 1 else map(mul, col, repeat(w))
        total = term if total is None else map(add, total, term)
    return array("i", total)


def _members_by_class(cls: bytes) -> list[bool]:
    """Per class position: whether some register has that class."""
    present = set(cls)
    return [c in present for c in range(_NC)]
