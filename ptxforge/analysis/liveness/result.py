"""The :class:`Liveness` result of one kernel and its queries.

Per-instruction pressure per class (before/after/at, flat arrays and columns summed on demand
from difference lists), peaks, live-range lengths, and live sets materialised on demand by
backward walks over a block from its live-out set (block-level sets are bitsets over the
complex index, see :mod:`ptxforge.analysis.liveness.solver`).  Built by
:func:`ptxforge.analysis.liveness.analyze_liveness`; the definitions are in :mod:`ptxforge.analysis.liveness`.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from itertools import accumulate, compress, repeat
from operator import add, ge, gt, mul
from typing import Iterable, Iterator, Optional, Union

import attrs

from ptxforge.ptx import ir
from ptxforge.ptx.types import ALL_TYPES, REG_CLASSES, RegClass

from ..cfg import ControlFlowGraph
from .operands import decode_operands
from .storage import CLASS_NAMES, CLASS_POS, CLASS_UNITS, N_CLASSES, PRED_POS, bits_of

__all__ = ["Liveness"]


class _LivenessCache:
    """A cache of one :class:`Liveness`'s derived views, filled on first use.

    Everything here is computed from the result's own (frozen) fields, so filling it never
    changes what the result means: it is left out of the result's equality, hash and repr.
    ``defs``/``uses``: per instruction the register indices it writes and reads (decoded from
    the instructions and ``index``); ``views``: per-class columns and flat arrays, keyed
    ``(class, where)`` and ``where``, and the per-block bitsets over every register.
    """

    __slots__ = ("defs", "uses", "views")

    def __init__(self) -> None:
        self.defs: Optional[tuple] = None
        self.uses: Optional[tuple] = None
        self.views: dict = {}


@attrs.frozen(slots=True, kw_only=True)
class Liveness:
    """Liveness of one kernel: per-block bitsets and per-instruction pressure per class.

    Build it with :func:`analyze_liveness`.  Register indices are positions in
    :attr:`registers` (first appearance order); instruction indices are positions in
    ``cfg.instructions``.  Per-class counts are numbers of values; ``general_*`` are 32-bit
    units of all non-predicate classes; ``pred_*`` are predicate counts.

    Example::

        >>> from ptxforge.ptx import ir, types
        >>> from ptxforge.analysis.liveness import analyze_liveness
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
    # Live sets (registers backward-live and maybe-defined) on entry to / exit from each block,
    # as int bitsets over the complex index: bit q is register ``complex_registers[q]``.  Only
    # complex registers (see below) can be live at a block boundary.
    live_in_sets: tuple[int, ...] = attrs.field(repr=False)
    live_out_sets: tuple[int, ...] = attrs.field(repr=False)
    complex_registers: array = attrs.field(repr=False)  # register index per complex index
    # Live counts per class and instruction are kept as class-major difference lists
    # ([class * (n + 1) + i]) and summed up on demand (columns, flat arrays: see the properties).
    _diff: tuple = attrs.field(repr=False, eq=False)  # after(i) - after(i - 1)
    _dead: tuple = attrs.field(repr=False, eq=False)  # the same for at(i) - after(i)
    _entries: tuple = attrs.field(repr=False, eq=False)  # per block: (start * 7, counts or None)
    _guarded: bytes = attrs.field(repr=False)
    _touched_len: array = attrs.field(repr=False)  # complex registers: live-range length
    _class_used: tuple = attrs.field(repr=False)  # per class position: any register of it
    # Registers with one unguarded definition and every read after it in the same block ("simple"
    # ones, ascending: their definitions ascend too) are live from the definition to the last
    # read; the others are "complex", and blocks mentioning any of them need a walk.
    _complex: bytes = attrs.field(repr=False, default=b"")
    _block_has_complex: Optional[bytes] = attrs.field(repr=False, default=None)
    _simple: tuple = attrs.field(repr=False, default=())
    _type_codes: Optional[bytes] = attrs.field(repr=False, default=None)  # per register, into ALL_TYPES
    # {instruction: (defs, uses)} restricted to complex registers, its sorted keys, and per
    # block the range of those keys (block b: positions bounds[b] .. bounds[b + 1] - 1)
    _sparse: tuple = attrs.field(repr=False, eq=False, default=({}, [], [0]))
    # derived views computed on first use (never compared, hashed or shown)
    _cache: _LivenessCache = attrs.field(init=False, factory=_LivenessCache, repr=False,
                                         eq=False)

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
        cache = self._cache
        if cache.defs is None:
            cache.defs, cache.uses = decode_operands(self.cfg.instructions, self.index)
        return cache.defs

    @property
    def _uses(self) -> tuple:
        cache = self._cache
        if cache.uses is None:
            cache.defs, cache.uses = decode_operands(self.cfg.instructions, self.index)
        return cache.uses

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
        arr = self._cache.views.get(where)
        if arr is None:
            n = self.n_instructions
            arr = array("i", [0]) * (n * N_CLASSES)
            for c in range(N_CLASSES):
                if self._class_used[c]:
                    arr[c::N_CLASSES] = self._column(c, where)
            if where == "before" and not n:
                arr = array("i", [0]) * N_CLASSES
            self._cache.views[where] = arr
        return arr

    def _column(self, c: int, where: str) -> array:
        """Live values of class position ``c`` per instruction (``at``/``before``/``after``)."""
        key = (c, where)
        col = self._cache.views.get(key)
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
                    col[base // N_CLASSES] = 0 if counts is None else counts[c]
            self._cache.views[key] = col
        return col

    def counts(self, i: int, where: str = "at") -> dict[str, int]:
        """Live values per class name at instruction ``i``; ``where`` is at/before/after."""
        arr = {"at": self.at_counts, "before": self.before_counts, "after": self.after_counts}[where]
        return {CLASS_NAMES[c]: arr[i * N_CLASSES + c] for c in range(N_CLASSES)}

    def general_at(self, i: int) -> int:
        """General-register pressure (32-bit units) at instruction ``i``."""
        base = i * N_CLASSES
        return sum(self.at_counts[base + c] * CLASS_UNITS[c] for c in range(N_CLASSES))

    def pred_at(self, i: int) -> int:
        """Predicates live at instruction ``i``."""
        return self.at_counts[i * N_CLASSES + PRED_POS]

    def series(self, where: str = "at", cls: Optional[str] = None) -> list[int]:
        """Per-instruction numbers: general units (``cls=None``), ``"pred"``, or one class."""
        if where not in ("at", "before", "after"):
            raise KeyError(where)
        if not self.n_instructions:  # (the flat "before" array has one row of zeros then)
            arr = self._flat(where)
            if cls is not None:
                return arr[CLASS_POS[cls]::N_CLASSES].tolist()
            return []
        if cls is not None:
            return self._column(CLASS_POS[cls], where).tolist()
        total = None
        for c in range(N_CLASSES):
            if not CLASS_UNITS[c] or not self._class_used[c]:
                continue
            col: Iterable[int] = self._column(c, where)
            if CLASS_UNITS[c] != 1:
                col = map(mul, col, repeat(CLASS_UNITS[c]))
            total = list(col) if total is None else list(map(add, total, col))
        return [0] * self.n_instructions if total is None else total

    def _timelines(self) -> tuple[array, array, array, array, array, array]:
        """``series()`` of general units and of predicates, before/after/at, as arrays."""
        n = self.n_instructions
        if not n:
            return tuple(array("i", self.series(w, k)) for k in (None, "pred")
                         for w in ("before", "after", "at"))  # type: ignore[return-value]
        gen = [c for c in range(N_CLASSES) if CLASS_UNITS[c] and self._class_used[c]]
        # at: from the per-class columns (class_peaks wants them too); after: from the differences
        g_at = _weighted([self._column(c, "at") for c in gen], [CLASS_UNITS[c] for c in gen], n)
        diffs = [self._diff[c * (n + 1):c * (n + 1) + n] for c in gen]
        g_after = array("i", accumulate(_weighted(diffs, [CLASS_UNITS[c] for c in gen], n)))
        p_after = array("i", self._column(PRED_POS, "after"))
        p_at = array("i", self._column(PRED_POS, "at"))
        g_before = array("i", [0]) + g_after[:n - 1]
        p_before = array("i", [0]) + p_after[:n - 1]
        for base, counts in self._entries:
            i = base // N_CLASSES
            if counts is None:
                g_before[i] = p_before[i] = 0
            else:
                g_before[i] = sum(map(mul, counts, CLASS_UNITS))
                p_before[i] = counts[PRED_POS]
        return g_before, g_after, g_at, p_before, p_after, p_at

    def _type_counts(self) -> Optional[dict[str, int]]:
        """Registers per type name (None when some register has a type outside the registry)."""
        codes = self._type_codes
        if codes is None:
            return None
        return {t.name: k for c, t in enumerate(ALL_TYPES) if (k := codes.count(c))}

    def peak_units(self) -> tuple[int, int]:
        """(general 32-bit units, predicates): the most live at once, ``max(series("at"))``
        and ``max(series("at", "pred"))`` (0 for an empty kernel) without building the
        series: one running sum over the class-weighted differences.

        Example::

            >>> from ptxforge.ptx import ir, types
            >>> from ptxforge.analysis.liveness import analyze_liveness
            >>> a = ir.Register("%rd1", types.u64)
            >>> body = (ir.Instruction("mov.u64", (a, ir.Immediate(1)), 1),
            ...         ir.Instruction("st.global.u64", (ir.Address(a), a)))
            >>> analyze_liveness(ir.Kernel("k", body=body)).peak_units()
            (2, 0)
        """
        n = self.n_instructions
        if not n:
            return 0, 0
        diff, dead, used = self._diff, self._dead, self._class_used
        total = None
        for c in range(N_CLASSES):
            w = CLASS_UNITS[c]
            if not w or not used[c]:
                continue
            lo = c * (n + 1)
            term = map(add, diff[lo:lo + n], dead[lo:lo + n])
            if w != 1:
                term = map(mul, term, repeat(w))
            total = term if total is None else map(add, total, term)
        general = 0 if total is None else max(accumulate(total))
        pred = 0
        if used[PRED_POS]:
            lo = PRED_POS * (n + 1)
            pred = max(accumulate(map(add, diff[lo:lo + n], dead[lo:lo + n])))
        return max(general, 0), max(pred, 0)

    def class_peaks(self) -> dict[str, tuple[int, int]]:
        """Per class name: (largest number of values live at once, first instruction)."""
        out = {}
        n = self.n_instructions
        for c in range(N_CLASSES):
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
    def _regs(self, x: int) -> list[int]:
        """Register indices (ascending) of a complex-index bitset."""
        cr = self.complex_registers
        return [cr[q] for q in bits_of(x)]

    def live_in(self, block: int) -> tuple[int, ...]:
        """Registers live on entry to ``block`` (indices, ascending)."""
        return tuple(self._regs(self.live_in_sets[block]))

    def live_out(self, block: int) -> tuple[int, ...]:
        """Registers live on exit from ``block`` (indices, ascending)."""
        return tuple(self._regs(self.live_out_sets[block]))

    @property
    def live_in_bits(self) -> tuple[int, ...]:
        """Per block: registers backward-live on entry (bitset over register indices, whether or
        not a definition can have reached them; computed on first use, see :meth:`live_in`)."""
        return self._block_bits()[0]

    @property
    def live_out_bits(self) -> tuple[int, ...]:
        """Per block: registers backward-live on exit (bitset over register indices)."""
        return self._block_bits()[1]

    @property
    def defined_in_bits(self) -> tuple[int, ...]:
        """Per block: registers maybe-defined on entry (bitset over register indices)."""
        return self._block_bits()[2]

    @property
    def defined_out_bits(self) -> tuple[int, ...]:
        """Per block: registers maybe-defined on exit (bitset over register indices)."""
        return self._block_bits()[3]

    def _block_bits(self) -> tuple:
        got = self._cache.views.get("block_bits")
        if got is None:
            from .blocks import block_bitsets

            got = self._cache.views["block_bits"] = block_bitsets(self.cfg, self.instruction_defs,
                                                           self.instruction_uses, self._guarded)
        return got

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
            through = self._regs(self.live_out_sets[b])  # nothing complex changes in the block
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
        """Live sets at ``points`` (ascending, in block ``b``) by a backward walk over the
        instructions of the block that mention complex registers; simple registers come from
        :meth:`_simple_live`.

        A complex register backward-live at a point with no definition of it in the block
        before the point is backward-live on entry too, so it was maybe-defined there exactly
        when it is in :meth:`live_in`; the walk starts from :meth:`live_out` (a register
        backward-live on exit that no definition reaches is never live in the block).
        """
        touching, tpos, bounds = self._sparse
        guarded = self._guarded
        e = self.cfg.blocks[b].end
        targets = set(points)
        empty = ((), ())
        back = set(self._regs(self.live_out_sets[b]))
        found: dict[int, set] = {}
        steps = set(tpos[bisect_left(tpos, points[0], bounds[b], bounds[b + 1]):bounds[b + 1]])
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
        md_in = set(self._regs(self.live_in_sets[b]))
        first: dict[int, int] = {}
        for j in tpos[bounds[b]:bisect_right(tpos, points[-1], bounds[b], bounds[b + 1])]:
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
        first: dict[int, int] = {}
        for j in range(s, e):
            for r in defs[j]:
                first.setdefault(r, j)
        md_in = set(self._regs(self.live_in_sets[b]))  # (see _walk_sets)
        live = set(self._regs(self.live_out_sets[b]))
        back = set(live)
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

    def defined_in_blocks(self, blocks: Iterable[int], regs: Iterable[int]) -> set[int]:
        """Those of ``regs`` that some instruction of ``blocks`` writes (guarded or not)."""
        bset = set(blocks)
        block_of, fd, cx = self.cfg.block_of_instruction, self.first_def, self._complex
        out = set()
        cand = []
        for r in set(regs):
            if cx[r]:
                cand.append(r)
            elif fd[r] >= 0 and block_of[fd[r]] in bset:  # simple: written once, at first_def
                out.add(r)
        if cand:
            want = set(cand)
            touching, tpos, bounds = self._sparse
            for b in bset:
                for j in tpos[bounds[b]:bounds[b + 1]]:
                    out.update(want.intersection(touching[j][0]))
        return out

    def live_lengths(self, regs: Iterable[int]) -> dict[int, int]:
        """Live-range length of each register: the number of instructions ``i`` with the
        register in ``at(i)``."""
        out = {}
        fd, lu, cx, tl = self.first_def, self.last_use, self._complex, self._touched_len
        for r in sorted(set(regs)):
            if cx[r] or fd[r] < 0:
                out[r] = tl[r]
            else:  # simple: from the definition to the last read (or just the definition)
                out[r] = lu[r] - fd[r] if lu[r] >= 0 else 1
        return out


def _weighted(cols: list, weights: list, n: int) -> array:
    """Sum of ``weight * column`` over the columns, as an array of length ``n``."""
    if not cols:
        return array("i", [0]) * n
    total: Iterable[int] = ()
    for i, (col, w) in enumerate(zip(cols, weights)):
        term = col if w == 1 else map(mul, col, repeat(w))
        total = term if i == 0 else map(add, total, term)
    return array("i", total)
