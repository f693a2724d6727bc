"""A pressure-aware list scheduler per basic block: the instruction order ptxas is modelled to pick.

ptxas schedules each basic block with a list scheduler.  While it has registers to spare it
schedules for latency: of the instructions whose operands are ready, it issues the one on the
longest latency path to the block's end first, so loads and long-latency operations start
early and independent chains interleave (in the corpus SASS, a transpose tile's four guarded
``LDG.E`` issue back to back before the first ``STS``; an unrolled stencil's seven ``LDS``
before the first ``FFMA``).  When the values live at once would exceed the budget it
schedules for pressure: it issues first what frees registers (the last use of a value) and
last what opens new ones.

:func:`list_schedule` reorders every basic block of a kernel that way and returns the kernel
in the new order with the most 32-bit units live at once in it (counted while scheduling).
The dependences it keeps: register definitions and uses (read after write, write after read,
write after write, the guard included); memory by state space (a load stays after the last
store or atomic to its space that may overlap it, a store after the loads it may overlap and
the stores of its space, a generic access counts for every space; an access at the same base
register value or symbol with a constant offset whose bytes do not overlap cannot, model 6); barriers, fences, calls, volatile and acquire/release
accesses order every memory operation; warp-collectives and barriers keep their order; the
block's terminator stays last.

The latencies (:data:`LATENCY`, read once per opcode) are round figures for Ampere (global and
local loads, shared loads, the special function unit, 64-bit floating point, the rest); an
edge that only orders two instructions costs :data:`ORDER_LATENCY`.  Only their order matters
for the priority (other figures moved the training split by at most 1.4 points).

Example::

    >>> from ptxforge.ptx import ir, types as T
    >>> a, b, x = (ir.Register(f"%r{i}", T.u32) for i in (1, 2, 3))
    >>> body = (ir.Instruction("add.u32", (x, x, x), 1),
    ...         ir.Instruction("ld.shared.u32", (a, ir.Address(ir.Symbol("s"))), 1),
    ...         ir.Instruction("st.shared.u32", (ir.Address(ir.Symbol("s")), a)),
    ...         ir.Instruction("ret"))
    >>> s = list_schedule(ir.Kernel("k", body=body), 25)
    >>> [i.opcode for i in s.kernel.instructions], s.peak
    (['ld.shared.u32', 'add.u32', 'st.shared.u32', 'ret'], 2)
"""

from __future__ import annotations

import functools
import heapq
import re
from collections.abc import Sequence
from typing import NamedTuple

import attrs

from ptxforge.ptx import ir
from ptxforge.ptx.opcodes import (
    SPACES,
    Barrier,
    OrdersMemory,
    Terminator,
    WarpCollective,
    families_with,
    opcode_of,
)

from ..liveness import analyze_liveness

__all__ = ["LATENCY", "ORDER_LATENCY", "Schedule", "list_schedule"]

#: Issue-to-use latency (cycles, round Ampere figures) by kind: only the order matters.
LATENCY = {"global": 200, "shared": 30, "sfu": 20, "f64": 10, "alu": 5}
#: The latency of an edge that only orders two instructions (no value flows).
ORDER_LATENCY = 1
# The opcode facts the scheduler needs, from the one opcode table (ptxforge.ptx.opcodes).
_TERMINATORS = frozenset(families_with(Terminator))
_COLLECTIVES = frozenset(families_with(WarpCollective) + families_with(Barrier))
#: Orders every memory operation: barriers, fences, calls, async copies, mbarriers, trap ...
_EVERYTHING = frozenset(families_with(OrdersMemory))


@functools.lru_cache(maxsize=4096)
def _kind(op: str):
    """``"all"`` (orders every memory operation: barriers, fences, calls, volatile and
    acquire accesses, the terminator), ``(op, spaces)`` for a memory read or write (a generic
    address may be any space), or None (no memory, or a non-coherent ``ld.global.nc`` of
    data no store of the kernel changes: ptxas issues it above earlier stores)."""
    parsed = opcode_of(op)
    fam = parsed.family
    if fam in _EVERYTHING or fam in _TERMINATORS or ".volatile" in op or ".acquire" in op \
            or ".release" in op:
        return "all"
    mem = parsed.info.memory if parsed.info is not None else None
    if mem is not None and mem.reads and not mem.writes and ".nc" in op:
        return None  # read-only for the kernel's lifetime (ld.global.nc): no store orders it
    if mem is not None and (mem.reads or mem.writes):
        spaces = mem.spaces or tuple(sp for sp in SPACES if f".{sp}" in op) or SPACES
        return ("read" if mem.reads else "write", spaces)
    return None


@functools.lru_cache(maxsize=4096)
def _latency_of(op: str) -> int:
    row = opcode_of(op).info
    if row is not None and row.memory is not None and row.memory.direction == "load":
        if ".shared" in op or row.memory.shared_only:
            return LATENCY["shared"]
        return LATENCY["global"] if ".param" not in op else LATENCY["alu"]
    if row is not None and row.latency == "sfu":
        return LATENCY["sfu"]
    if op.endswith(".f64"):
        return LATENCY["f64"]
    return LATENCY["alu"]


@functools.lru_cache(maxsize=4096)
def _facts(op: str) -> tuple:
    """(latency, memory kind, warp-collective, terminator) of an opcode."""
    fam = opcode_of(op).family
    return _latency_of(op), _kind(op), fam in _COLLECTIVES, fam in _TERMINATORS


def _units(r: ir.Register) -> int:
    return 0 if r.type.is_pred else max(r.units, 1)


def _unit_list(registers: Sequence) -> list:
    """:func:`_units` of each register, computed once per distinct type (a kernel has tens of
    thousands of registers and a handful of types)."""
    by_type: dict = {}
    out = []
    for r in registers:
        u = by_type.get(r.type)
        if u is None:
            u = by_type[r.type] = _units(r)
        out.append(u)
    return out


class _Graph(NamedTuple):
    """The dependence graph of one basic block (see :func:`_dependences`)."""

    succs: list  # per instruction: the instructions that wait for it (terminators aside)
    npred: list  # per instruction: how many it waits for
    feeds: list  # per instruction: the producers whose value it reads
    lats: list  # per instruction: its latency
    terms: list  # the terminators (each waits for every instruction before it, implicitly)


def _dependences(insts: list, uses: Sequence, defs: Sequence) -> _Graph:
    """The dependences of one basic block (module docstring): registers (read after write,
    write after read, write after write), memory by state space, barriers and fences,
    warp-collectives in order, the terminator last."""
    n = len(insts)
    succs: list = [[] for _ in range(n)]
    npred = [0] * n
    last_def: dict = {}
    readers: dict = {}
    last_barrier = -1  # the last instruction that orders everything (barrier, fence, call)
    last_write: dict = {}  # state space -> the last store or atomic to it
    reads_since: dict = {}  # state space -> loads since that store
    last_collective = -1
    stores: dict = {}  # state space -> its stores since the last barrier, in order
    extents: list = [None] * n  # per memory access: (base, version, first byte, end) or None
    version: dict = {}  # register name -> how many times the block has written it so far
    feeds: list = [None] * n  # per consumer: producers whose value it reads
    lats = [0] * n
    # terminators: each follows every instruction before it (those edges are left implicit)
    terms: list = []
    get_def, get_readers = last_def.get, readers.get
    for i, inst in enumerate(insts):
        lats[i], kind, collective, term = _facts(inst.opcode)
        fed = set()
        for r in uses[i]:
            p = get_def(r)
            if p is not None:
                fed.add(p)
        feeds[i] = fed
        deps = set(fed)
        for r in defs[i]:
            p = get_def(r)
            if p is not None:
                deps.add(p)
            rd = get_readers(r)
            if rd:
                deps.update(rd)
        if kind is not None:
            if kind == "all":
                if not term:
                    deps.add(last_barrier)
                    deps.update(last_write.values())
                    for loads in reads_since.values():
                        deps.update(loads)
                last_barrier, last_write, reads_since, stores = i, {}, {}, {}
            else:
                rw, spaces = kind
                deps.add(last_barrier)
                ext = extents[i] = _extent(inst, version)
                for sp in spaces:
                    if sp in last_write:
                        if rw == "write" or ext is None:
                            deps.add(last_write[sp])
                        else:
                            deps.add(_aliasing_store(stores[sp], extents, ext, last_write[sp]))
                    if rw == "write":
                        deps.update(r for r in reads_since.get(sp, ())
                                    if not _disjoint(extents[r], ext))
                for sp in spaces:
                    if rw == "write":
                        last_write[sp] = i
                        stores.setdefault(sp, []).append(i)
                        reads_since[sp] = []
                    else:
                        reads_since.setdefault(sp, []).append(i)
        if collective:
            deps.add(max(last_collective, last_barrier))
            last_collective = i
        if term:
            terms.append(i)
            npred[i] = i
        else:
            deps.discard(-1)
            deps.discard(i)
            for d in deps:
                succs[d].append(i)
            npred[i] = len(deps)
        for r in uses[i]:
            rd = get_readers(r)
            if rd is None:
                readers[r] = [i]
            else:
                rd.append(i)
        for r in defs[i]:
            last_def[r] = i
            readers[r] = []
        for o in inst.operands[:inst.ndefs]:
            if isinstance(o, ir.Register):
                version[o.name] = version.get(o.name, 0) + 1
    return _Graph(succs, npred, feeds, lats, terms)


_BITS = re.compile(r"\.[subf](8|16|32|64|128)(?=\.|$)")
_VECTOR = re.compile(r"\.v(\d+)(?=\.)")
#: How many earlier stores a load looks past (disjoint ones) before it waits for the last.
_LOOK_BACK = 64


def _extent(inst: ir.Instruction, version: dict):
    """``(base, its version, first byte, end)`` of a memory access whose address is a register
    or a symbol plus a constant offset and whose width is known, else None."""
    addr = next((o for o in inst.operands if isinstance(o, ir.Address)), None)
    bits = _BITS.findall(inst.opcode)
    vec = _VECTOR.findall(inst.opcode)
    if addr is None or addr.base is None or not bits or (vec and vec[0] not in ("2", "4")):
        return None
    n = int(bits[-1]) // 8 * (int(vec[0]) if vec else 1)
    base = addr.base.name
    return (base, version.get(base, 0), addr.offset, addr.offset + n)


def _disjoint(a, b) -> bool:
    """Two accesses at the same base (the same value of it) whose bytes do not overlap."""
    return a is not None and b is not None and a[:2] == b[:2] and (a[3] <= b[2] or b[3] <= a[2])


def _aliasing_store(stores: list, extents: list, ext, last: int) -> int:
    """The latest of ``stores`` that may write what ``ext`` reads (``last`` when none of the
    last :data:`_LOOK_BACK` is known not to), or -1 when every one is disjoint from it."""
    for k, j in enumerate(reversed(stores)):
        if k >= _LOOK_BACK:
            return last
        if not _disjoint(extents[j], ext):
            return j
    return -1


def _heights(g: _Graph) -> list:
    """Per instruction: the longest latency path from it to the block's end (its own latency
    on a value edge, :data:`ORDER_LATENCY` on an ordering one), the latency priority."""
    succs, feeds, lats, terms = g.succs, g.feeds, g.lats, g.terms
    n = len(lats)
    height = [0] * n
    for i in range(n - 1, -1, -1):
        lat = lats[i]
        ss = succs[i]
        h = 0
        for s in ss:
            x = height[s] + (lat if i in feeds[s] else ORDER_LATENCY)
            h = max(h, x)
        for t in terms:
            if t > i:
                x = height[t] + (lat if i in feeds[t] else ORDER_LATENCY)
                h = max(h, x)
        height[i] = h or lat
    return height


class _Pressure(NamedTuple):
    """What the scheduler tracks to count live units (see :func:`_pressure`)."""

    pending: dict  # per register: its reads in the block not issued yet
    users: dict  # per register: the instructions that read it
    live: set  # values live now: live-in ones (read before written) and defined ones
    live_out: set  # live out and not written again in the block (those die at their last read)
    fresh: list  # per instruction: the registers it writes and does not read
    fresh_writers: dict  # per register: the instructions that write it without reading it


def _pressure(reads: Sequence, writes: Sequence, live_out: set) -> _Pressure:
    """The scheduler's starting pressure state for a block (before anything issues): pending
    uses per register inside the block (a value dies at its last one unless live out) and, per
    instruction, the registers it writes and does not read."""
    n = len(reads)
    pending: dict = {}  # reads not yet issued, per register
    users: dict = {}
    live: set = set()
    written: set = set()
    for i in range(n):
        for r in reads[i]:
            us = users.get(r)
            if us is None:
                users[r] = [i]
                pending[r] = 1
            else:
                us.append(i)
                pending[r] += 1
            if r not in written:
                live.add(r)
        written.update(writes[i])
    # a live-out value that the block writes again dies at its last read before the write
    live_out = live_out - (live & written)
    fresh = [[w for w in writes[i] if w not in reads[i]] if writes[i] else writes[i]
             for i in range(n)]
    # per register: the instructions that write it without reading it, in order (each waits
    # for the one before: write after write)
    fresh_writers: dict = {}
    for i in range(n):
        for w in fresh[i]:
            fw = fresh_writers.get(w)
            if fw is None:
                fresh_writers[w] = [i]
            else:
                fw.append(i)
    return _Pressure(pending, users, live, live_out, fresh, fresh_writers)


def _block_order(insts: list, uses: Sequence, defs: Sequence, units, live_in: set, live_out: set,
                 base: int, budget: int, stop_at: int | None = None) -> tuple[list | None, int]:
    """The positions of ``insts`` (one basic block) in the scheduled order, and the most
    units live at one of them in that order (``base``: live on entry); (None, the peak so
    far) as soon as that peak reaches ``stop_at``.  ``uses`` and ``defs``: per instruction
    the register indices it reads and writes (no repeats); ``units[r]``: what register ``r``
    takes (0 for a predicate); ``live_in`` and ``live_out``: register indices."""
    g = _dependences(insts, uses, defs)
    return _schedule(g, _heights(g), _pressure(uses, defs, live_out), uses, defs, units,
                     live_in, live_out, base, budget, stop_at)


def _schedule(g: _Graph, height: list, state: _Pressure, reads: Sequence, writes: Sequence, units,
              live_in: set, stays_out: set, base: int, budget: int,
              stop_at: int | None) -> tuple[list | None, int]:
    """:func:`_block_order` once the graph, the heights and the pressure state are known:
    issue ready instructions by latency (``-height``) while fewer than ``budget`` units are
    live, by pressure delta from there, counting the live units as they issue."""
    succs, npred, terms = g.succs, g.npred, g.terms
    pending, users, live, live_out, fresh, fresh_writers = state
    n = len(reads)
    next_writer = dict.fromkeys(fresh_writers, 0)  # per register: its first fresh writer not issued
    ready, by_delta, delta, is_ready = _first_ready(npred, height, state, reads, units)
    tie = [-h for h in height]  # equal pressure: the longest latency path first
    nready = len(ready)
    done = [False] * n
    cur = now = peak = base
    alive = set(live_in)  # exactly what is live (the solver's sets: ``live`` guides choices)
    heappush, heappop = heapq.heappush, heapq.heappop
    order = []
    while nready:
        if cur >= budget and nready > 1:
            while True:
                d, _, i = heappop(by_delta)
                if is_ready[i] and delta[i] == d:
                    break
        else:
            while True:
                i = heappop(ready)[1]
                if is_ready[i]:
                    break
        is_ready[i] = False
        nready -= 1
        # at i: what is live across it (operands read for the last time can share with its
        # results, as in :mod:`ptxforge.analysis.liveness`) and what it writes
        at = now
        dying = [u for u in reads[i] if pending[u] == 1 and u not in live_out and u in alive]
        for u in dying:
            at -= units[u]
        new = [w for w in writes[i] if w not in alive or w in dying]
        for w in new:
            at += units[w]
        peak = max(peak, at)
        if stop_at is not None and peak >= stop_at:
            return None, peak
        cur += delta[i]
        done[i] = True
        for r in reads[i]:
            left = pending[r] = pending[r] - 1
            if r in live_out:
                continue
            if left == 1:  # the last reader left now frees it
                ur = units[r]
                for j in users[r]:
                    if is_ready[j]:  # a fresh pressure entry for a ready j
                        delta[j] -= ur
                        heappush(by_delta, (delta[j], tie[j], j))
            elif left == 0 and r in live:
                live.discard(r)
                fw = fresh_writers.get(r)
                if fw is not None and next_writer[r] < len(fw):
                    j = fw[next_writer[r]]  # the only one of them that can be ready
                    if is_ready[j]:
                        delta[j] += units[r]
                        heappush(by_delta, (delta[j], tie[j], j))
        for w in fresh[i]:  # past i (the first not issued, by the write-after-write order)
            fw, k = fresh_writers[w], next_writer[w]
            while k < len(fw) and done[fw[k]]:
                k += 1
            next_writer[w] = k
        for r in writes[i]:
            if r not in live:
                live.add(r)
                fw = fresh_writers.get(r)
                if fw is not None and next_writer[r] < len(fw):
                    j = fw[next_writer[r]]
                    if is_ready[j]:
                        delta[j] -= units[r]
                        heappush(by_delta, (delta[j], tie[j], j))
        for r in dying:
            alive.discard(r)
            now -= units[r]
        for r in new:
            if pending.get(r, 0) or r in stays_out:
                alive.add(r)
                now += units[r]
        order.append(i)
        for succ in (succs[i] if not terms else succs[i] + [t for t in terms if t > i]):
            npred[succ] -= 1
            if npred[succ] == 0:
                d = 0  # delta_of(succ), inline
                for w in fresh[succ]:
                    if w not in live:
                        d += units[w]
                for u in reads[succ]:
                    if pending[u] == 1 and u not in live_out:
                        d -= units[u]
                delta[succ] = d
                heappush(ready, (-height[succ], succ))
                heappush(by_delta, (d, tie[succ], succ))
                is_ready[succ] = True
                nready += 1
    return order, peak


def _first_ready(npred: list, height: list, state: _Pressure, reads: Sequence,
                 units) -> tuple[list, list, list, list]:
    """The instructions ready before anything issues, twice, as heaps: by latency
    ``(-height, i)`` and by pressure ``(delta, i)`` (both drop entries lazily: an issued
    instruction, a delta that has changed since); ``delta`` (of a ready ``i``: the change in
    live units if it issued now, kept up to date while it is ready) and ``is_ready``."""
    n = len(npred)
    delta = [0] * n
    ready = [(-height[i], i) for i in range(n) if npred[i] == 0]
    heapq.heapify(ready)
    is_ready = [False] * n
    for _, i in ready:
        delta[i] = _delta_of(i, state.fresh, reads, state.live, state.pending, state.live_out,
                             units)
        is_ready[i] = True
    by_delta = [(delta[i], -height[i], i) for _, i in ready]
    heapq.heapify(by_delta)
    return ready, by_delta, delta, is_ready


def _delta_of(j: int, fresh: list, reads: Sequence, live: set, pending: dict, live_out: set,
              units) -> int:
    """The change in live units if ``j`` issued now."""
    d = 0
    for w in fresh[j]:
        if w not in live:
            d += units[w]
    for u in reads[j]:
        if pending[u] == 1 and u not in live_out:
            d -= units[u]
    return d


@attrs.frozen(slots=True, kw_only=True)
class Schedule:
    """A kernel in list-scheduled order and the most 32-bit units live at once in it."""

    kernel: ir.Kernel
    peak: int


def list_schedule(kernel: ir.Kernel, budget: int, stop_at: int | None = None,
                  liveness=None, floor: int = 0) -> Schedule:
    """``kernel`` with its basic blocks in list-scheduled order (module docstring): latency
    first while fewer than ``budget`` 32-bit units are live, pressure first from there.

    The peak is counted while scheduling (what is live into a block does not depend on the
    order inside it), so no second liveness pass is needed.  A block that cannot reach the
    peak in any order (what is live into it plus everything it writes stays below the peak
    of the blocks scheduled so far, or below ``floor``) keeps its order: for a caller that
    only needs the peak where it is above ``floor``, a peak at or below ``floor`` is then
    only known to be at most ``floor``.  Scheduling stops as soon as the peak reaches
    ``stop_at`` (for a caller that caps the peak there): the block being scheduled and every
    later one keep their order, and the peak is then only known to be at least ``stop_at``.
    ``liveness`` is the kernel's :func:`~ptxforge.analysis.liveness.analyze_liveness` when
    the caller has it."""
    lv = liveness if liveness is not None else analyze_liveness(kernel)
    insts = lv.cfg.instructions
    units = _unit_list(lv.registers)
    before = lv.series("before")
    at = lv.series("at")
    defs = lv.instruction_defs
    blocks = list(lv.cfg.blocks)
    order_of: dict = {}
    peak = 0
    bound = {}  # per block: the most units any order of it can have live at once
    for block in blocks:
        lo, hi = block.start, block.end
        if hi - lo < 3:
            peak = max(peak, *at[lo:hi], 0)
        else:
            bound[block.index] = before[lo] + sum(units[r] for d in defs[lo:hi] for r in d)
    for b in sorted(bound, key=lambda b: (-bound[b], b)):
        if bound[b] <= max(peak, floor) or (stop_at is not None and peak >= stop_at):
            break
        block = blocks[b]
        seg = list(insts[block.start:block.end])
        order, top = _block_order(seg, lv.instruction_uses[block.start:block.end],
                                  defs[block.start:block.end], units,
                                  set(lv.live_in(b)), set(lv.live_out(b)),
                                  before[block.start], budget, stop_at)
        if order is not None and order != list(range(len(order))):
            order_of[b] = [seg[i] for i in order]
        peak = max(peak, top)
    if not order_of:  # every block in its own order
        return Schedule(kernel=kernel, peak=peak)
    new = [inst for block in blocks
           for inst in order_of.get(block.index, insts[block.start:block.end])]
    it = iter(new)
    body = tuple(next(it) if isinstance(s, ir.Instruction) else s for s in kernel.body or ())
    return Schedule(kernel=attrs.evolve(kernel, body=body), peak=peak)
