"""Control flow and reaching definitions of a SASS function, from nvdisasm's listing.

nvdisasm's life-range table says *which* physical registers are live at an instruction; this
module says *which instruction wrote* the value each one holds.  Blocks start at the labels
nvdisasm names (``.L_x_3``) and after a branch, ``EXIT``, ``RET`` or indirect jump; a ``BRA``
goes to its label (and on, when guarded), ``BRX``/``JMX`` to every label.  A register is
defined where its column is marked ``^`` (assigned) or ``x`` (used and reassigned); a guarded
instruction (``@P0 …``) does not kill the value it may overwrite.  Definitions reach through
the blocks by the usual forward dataflow, so a register live after a join can have several
(:meth:`ReachingDefs.at`); one live with no definition reaching it holds a value from the
function's entry (a parameter of a ``.func``, or a value undefined on some path).

Example::

    >>> from ptxforge.toolchain.sass import parse_sass
    >>> rd = ReachingDefs(fn)                 # doctest: +SKIP
    >>> rd.at(12)                             # doctest: +SKIP
    {4: (3,), 5: (3, 9)}
"""

from __future__ import annotations

import re

__all__ = ["ReachingDefs", "back_edges", "branch_targets", "code_spans", "dest_register",
           "sass_blocks", "subroutine_start"]

_GUARD = re.compile(r"^@!?U?P[T\d]+\s+")
_LABEL_REF = re.compile(r"`\(([.$\w][\w$.]*)\)")
_DEST = re.compile(r"^(?:@!?U?P[T\d]+\s+)?[A-Z][\w.]*\s+R(\d+)\b")
_ENDS = ("EXIT", "RET", "BRA", "BRX", "JMX", "JMP", "KILL")


def _opcode(text: str) -> str:
    return _GUARD.sub("", text).split(" ", 1)[0].split(".", 1)[0]


def _guarded(text: str) -> bool:
    return _GUARD.match(text) is not None and not text.startswith("@PT ")


def dest_register(text: str) -> int | None:
    """The first register operand of a SASS instruction (its destination for ALU, load and
    move instructions), or None (``STG [R2.64], R5`` has a memory destination)."""
    m = _DEST.match(text)
    return int(m.group(1)) if m else None


def branch_targets(fn) -> dict:
    """``{instruction index: (target index, …)}`` for the branches of ``fn`` whose label is
    known; ``BRX``/``JMX`` (indirect) map to every labelled instruction."""
    by_offset = {i.offset: k for k, i in enumerate(fn.instructions)}
    labels = {name: by_offset[off] for name, off in fn.labels if off in by_offset}
    out = {}
    for k, ins in enumerate(fn.instructions):
        op = _opcode(ins.text)
        if op in ("BRX", "JMX"):
            out[k] = tuple(sorted(set(labels.values())))
        elif op in ("BRA", "JMP"):
            m = _LABEL_REF.search(ins.text)
            if m and m.group(1) in labels:
                out[k] = (labels[m.group(1)],)
    return out


def _subroutines(fn, labels: dict) -> tuple:
    """``(calls, entries, rets)``: per CALL inside ``fn`` the subroutine entries it may enter
    (a direct ``CALL.REL`` its label, an indirect one every entry), the entries (code after
    an unguarded EXIT/RET/BRA that a CALL can reach), and the RET instructions."""
    ins = fn.instructions
    entries = sorted({k + 1 for k, i in enumerate(ins[:-1])
                      if _opcode(i.text) in ("EXIT", "RET", "BRA") and not _guarded(i.text)}
                     & ({labels[n] for n in labels if n.startswith("$")}
                        | {k + 1 for k, i in enumerate(ins[:-1]) if _opcode(i.text) == "RET"}))
    calls: dict[int, tuple[int, ...]] = {}
    rets = tuple(k for k, i in enumerate(ins) if _opcode(i.text) == "RET")
    for k, i in enumerate(ins):
        if _opcode(i.text) != "CALL" or ".ABS" in i.text:
            continue
        m = _LABEL_REF.search(i.text)
        if m and m.group(1) in labels and m.group(1).startswith("$"):
            calls[k] = (labels[m.group(1)],)
        elif re.search(r"CALL\S*\s+R\d+", i.text):
            calls[k] = tuple(entries)
    return calls, tuple(entries), rets


def subroutine_start(fn) -> int | None:
    """Index of the first instruction of the subroutines ptxas compiled into ``fn`` (the
    ``.func`` callees and libdevice slow paths a whole-program kernel reaches by ``CALL.REL``),
    or None when ``fn`` has none."""
    by_offset = {i.offset: k for k, i in enumerate(fn.instructions)}
    _, entries, _ = _subroutines(fn, {name: by_offset[off] for name, off in fn.labels
                                      if off in by_offset})
    return min(entries) if entries else None


def code_spans(fn, group: str = "GPR") -> tuple:
    """``(own, subroutines)``: highest ``group`` register + 1 touched by ``fn``'s own code and
    by the subroutines compiled into it (0: none), leaving out the registers a CALL marks as
    clobbered (nvdisasm marks every register the callee may use).  Measured with ptxas 13.5
    (sm_80, sm_90, every corpus kernel, whole-program and relocatable): REGCOUNT = max(own +
    2, subroutines, each callee's REGCOUNT); subroutine code gets no +2."""
    start = subroutine_start(fn)
    ins = fn.instructions
    cut = len(ins) if start is None else start

    def top(part) -> int:
        regs = [r for i in part for r in i.registers(group, call_clobbers=False)]
        return max(regs) + 1 if regs else 0
    return top(ins[:cut]), top(ins[cut:])


def sass_blocks(fn) -> tuple:
    """``(starts, succs)``: the first instruction index of each basic block, and per block the
    indices of the blocks it may go to."""
    n = len(fn.instructions)
    targets = branch_targets(fn)
    by_offset = {i.offset: k for k, i in enumerate(fn.instructions)}
    calls, entries, rets = _subroutines(fn, {name: by_offset[off] for name, off in fn.labels
                                              if off in by_offset})
    leaders = {0} | {t for ts in targets.values() for t in ts} | set(entries)
    leaders |= {k + 1 for k in calls}
    for k, ins in enumerate(fn.instructions):
        if _opcode(ins.text) in _ENDS and k + 1 < n:
            leaders.add(k + 1)
    starts = sorted(x for x in leaders if x < n)
    block_of = {}
    for b, s in enumerate(starts):
        end = starts[b + 1] if b + 1 < len(starts) else n
        for k in range(s, end):
            block_of[k] = b
    succs = []
    for b, s in enumerate(starts):
        last = (starts[b + 1] if b + 1 < len(starts) else n) - 1
        text = fn.instructions[last].text
        op = _opcode(text)
        out = set()
        for t in targets.get(last, ()) + calls.get(last, ()):
            out.add(block_of[t])
        if last in rets and calls:
            out |= {block_of[c + 1] for c in calls if c + 1 < n}
        falls = op not in _ENDS or _guarded(text) or (op in ("BRA", "JMP") and last not in targets)
        if falls and last + 1 < n:
            out.add(b + 1)
        succs.append(tuple(sorted(out)))
    return tuple(starts), tuple(succs)


def back_edges(fn) -> tuple:
    """``((branch index, target index), …)``: branches to an instruction at or before them,
    the loops of the SASS (each loop body is ``fn.instructions[target:branch + 1]``)."""
    return tuple(sorted((k, t) for k, ts in branch_targets(fn).items() for t in ts if t <= k))


class ReachingDefs:
    """Which instruction's write each live GPR holds, at every instruction of ``fn``.

    Definitions are instruction indices; a CALL's ``^`` marks are the registers the callee
    may overwrite (its clobbers), also definitions.  :meth:`at` gives, for the registers live
    at an instruction, the definitions that reach it; :meth:`uses_of` the instructions that
    read a definition."""

    def __init__(self, fn, group: str = "GPR") -> None:
        self.fn, self.group = fn, group
        self.starts, self.succs = sass_blocks(fn)
        n = len(fn.instructions)
        self._marks = [dict(dict(i.marks).get(group, ())) for i in fn.instructions]
        self._kills = [not _guarded(i.text) for i in fn.instructions]
        # the registers each instruction writes (``^``/``x``): one or two of the tens marked
        self._writes = [tuple(r for r, m in marks.items() if m in "^x") for marks in self._marks]
        ends = list(self.starts[1:]) + [n]
        preds: list = [[] for _ in self.starts]
        for b, ss in enumerate(self.succs):
            for s in ss:
                preds[s].append(b)
        entry: list = [{} for _ in self.starts]
        out: list = [None] * len(self.starts)
        work = list(range(len(self.starts)))
        while work:
            b = work.pop(0)
            state: dict = {}
            for p in preds[b]:
                if out[p] is not None:
                    for r, ds in out[p].items():
                        state[r] = state.get(r, frozenset()) | ds
            entry[b] = state
            cur = dict(state)
            for k in range(self.starts[b], ends[b]):
                self._step(cur, k)
            if cur != out[b]:
                out[b] = cur
                work += [s for s in self.succs[b] if s not in work]
        self._entry, self._ends = entry, ends
        self._uses: dict | None = None
        self._readers: dict | None = None

    def _step(self, cur: dict, k: int) -> None:
        writes = self._writes[k]
        if not writes:
            return
        if self._kills[k]:
            own = frozenset((k,))
            for r in writes:
                cur[r] = own
        else:
            for r in writes:
                cur[r] = cur.get(r, frozenset()) | {k}

    def _block(self, k: int) -> int:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= k:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def before(self, k: int) -> dict:
        """``{register: frozenset of definition indices}`` reaching instruction ``k``."""
        b = self._block(k)
        cur = dict(self._entry[b])
        for j in range(self.starts[b], k):
            self._step(cur, j)
        return cur

    def at(self, k: int) -> dict:
        """``{register: (definition index, …)}`` for every GPR marked at instruction ``k``:
        its own index for one it writes (``^``/``x``), else the definitions reaching it (empty:
        live from the function's entry)."""
        cur = self.before(k)
        out = {}
        for r, m in self._marks[k].items():
            own = (k,) if m in "^x" and self._kills[k] else ()
            out[r] = own or tuple(sorted(cur.get(r, frozenset()) | ({k} if m in "^x" else set())))
        return out

    def _use_map(self) -> dict:
        """``{(d, r): readers}``, built on first use: the instructions reading register ``r``
        as written at ``d``."""
        if self._uses is None:
            uses: dict = {}
            for b, s in enumerate(self.starts):
                cur = dict(self._entry[b])
                for k in range(s, self._ends[b]):
                    for r, m in self._marks[k].items():
                        if m == "v" or m == "x":
                            for dd in cur.get(r, ()):
                                uses.setdefault((dd, r), []).append(k)
                    self._step(cur, k)
            self._uses = {key: tuple(v) for key, v in uses.items()}
        return self._uses

    def uses_of(self, d: int) -> tuple:
        """Instruction indices that read the value defined at ``d`` (``v`` or ``x`` marks)."""
        if self._readers is None:
            readers: dict = {}
            for (dd, _), ks in self._use_map().items():
                readers.setdefault(dd, set()).update(ks)
            self._readers = {dd: tuple(sorted(ks)) for dd, ks in readers.items()}
        return self._readers.get(d, ())

    def uses_of_register(self, d: int, r: int) -> tuple:
        """Instruction indices that read register ``r`` as written at ``d``."""
        return self._use_map().get((d, r), ())
