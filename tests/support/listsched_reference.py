"""The list scheduler of prediction model 3 as first written (a linear scan of the ready
list for the pressure-first pick, names instead of register indices, every block scheduled
in full; model 6's tie-break among equal pressure picks): the reference that :func:`ptxforge.analysis.prediction.list_schedule` must match
instruction for instruction and peak for peak (tests/analysis/test_listsched_reference.py).
Slow on huge blocks (quadratic); only for tests."""

from __future__ import annotations

import hashlib
import heapq

import attrs

from ptxforge.analysis.liveness import analyze_liveness
from ptxforge.analysis.prediction.listsched import (
    _COLLECTIVES,
    _TERMINATORS,
    ORDER_LATENCY,
    _kind,
    _latency_of,
)
from ptxforge.ptx import ir

__all__ = ["digest_of", "reference_schedule", "remembered_reference_schedule"]


def _memory_kind(inst: ir.Instruction):
    return _kind(inst.opcode)


def _latency(inst: ir.Instruction) -> int:
    return _latency_of(inst.opcode)


def _units(r: ir.Register) -> int:
    return 0 if r.type.is_pred else max(r.units, 1)


def _block_order(insts: list, live_in: set, live_out: set, base: int,
                 budget: int) -> tuple[list, int]:
    """The positions of ``insts`` (one basic block) in the scheduled order, and the most
    units live at one of them in that order (``base``: live on entry)."""
    n = len(insts)
    succs: list = [[] for _ in range(n)]
    npred = [0] * n
    last_def: dict = {}
    readers: dict = {}
    last_barrier = -1  # the last instruction that orders everything (barrier, fence, call)
    last_write: dict = {}  # state space -> the last store or atomic to it
    reads_since: dict = {}  # state space -> loads since that store
    last_collective = -1
    stores: dict = {}  # state space -> every store since the last barrier (model 6)
    extents: dict = {}  # memory access -> (base, its version, first byte, end) or None
    version: dict = {}  # register name -> times written so far in the block

    def edge(a: int, b: int) -> None:
        succs[a].append(b)
        npred[b] += 1

    feeds: list = [set() for _ in range(n)]  # per consumer: producers whose value it reads
    uses = [inst.uses for inst in insts]
    defs = [inst.defs for inst in insts]
    for i, inst in enumerate(insts):
        deps = set()
        for r in uses[i]:
            if r.name in last_def:
                deps.add(last_def[r.name])
                feeds[i].add(last_def[r.name])
        for r in defs[i]:
            if r.name in last_def:
                deps.add(last_def[r.name])
            deps.update(readers.get(r.name, ()))
        fam = inst.family
        kind = _memory_kind(inst)
        if kind == "all":
            deps.add(last_barrier)
            deps.update(last_write.values())
            for loads in reads_since.values():
                deps.update(loads)
            if fam in _TERMINATORS:
                deps.update(range(i))
            last_barrier, last_write, reads_since, stores = i, {}, {}, {}
        elif kind is not None:
            op, spaces = kind
            deps.add(last_barrier)
            ext = extents[i] = _ref_extent(inst, version)
            for sp in spaces:
                if sp in last_write:
                    if op == "write" or ext is None:
                        deps.add(last_write[sp])
                    else:  # model 6: the latest store that may overlap, of the last 64
                        recent = stores[sp][::-1][:64]
                        hit = [j for j in recent if not _ref_disjoint(extents[j], ext)]
                        if hit:
                            deps.add(hit[0])
                        elif len(stores[sp]) > 64:
                            deps.add(last_write[sp])
                if op == "write":
                    deps.update(r for r in reads_since.get(sp, ())
                                if not _ref_disjoint(extents[r], ext))
            for sp in spaces:
                if op == "write":
                    last_write[sp] = i
                    stores.setdefault(sp, []).append(i)
                    reads_since[sp] = []
                else:
                    reads_since.setdefault(sp, []).append(i)
        if fam in _COLLECTIVES:
            deps.add(max(last_collective, last_barrier))
            last_collective = i
        deps.discard(-1)
        deps.discard(i)
        for d in deps:
            edge(d, i)
        for r in uses[i]:
            readers.setdefault(r.name, []).append(i)
        for r in defs[i]:
            last_def[r.name] = i
            readers[r.name] = []
        for o in inst.operands[:inst.ndefs]:
            if isinstance(o, ir.Register):
                version[o.name] = version.get(o.name, 0) + 1
    height = [0] * n
    for i in range(n - 1, -1, -1):
        lat = _latency(insts[i])
        height[i] = max((height[s] + (lat if i in feeds[s] else ORDER_LATENCY)
                         for s in succs[i]), default=lat)
    # pending uses per name inside the block; a value dies at its last one unless live out
    # per instruction: the names it reads (once each) and the names it writes and does not read
    reads = [list(dict.fromkeys(r.name for r in u)) for u in uses]
    writes = [list(dict.fromkeys(r.name for r in d)) for d in defs]
    units = {r.name: _units(r) for rs in (*uses, *defs) for r in rs}
    pending: dict = {}  # reads not yet issued, per name
    users: dict = {}
    writers: dict = {}
    live: set = set()  # values live now: live-in ones (read before written) and defined ones
    written: set = set()
    for i in range(n):
        for name in reads[i]:
            pending[name] = pending.get(name, 0) + 1
            users.setdefault(name, []).append(i)
            if name not in written:
                live.add(name)
        for name in writes[i]:
            written.add(name)
            writers.setdefault(name, []).append(i)
    # a live-out value that the block writes again dies at its last read before the write
    stays_out = live_out
    live_out = live_out - (live & written)
    fresh = [[w for w in writes[i] if w not in reads[i]] for i in range(n)]
    # delta[i]: the change in live units if i issued now (kept up to date as others issue)
    delta = [sum(units[w] for w in fresh[i] if w not in live)
             - sum(units[u] for u in reads[i] if pending[u] == 1 and u not in live_out)
             for i in range(n)]
    done = [False] * n
    cur = now = peak = base
    alive = set(live_in)  # exactly what is live (the solver's sets: ``live`` guides choices)
    ready = [(-height[i], i) for i in range(n) if npred[i] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        if cur >= budget and len(ready) > 1:
            # the fewest units opened; equal ones: the longest latency path (model 6)
            pick = min(ready, key=lambda e: (delta[e[1]], -height[e[1]], e[1]))
            ready.remove(pick)
            heapq.heapify(ready)
        else:
            pick = heapq.heappop(ready)
        i = pick[1]
        # at i: what is live before it and what it writes (its last reads still count)
        # at i: what is live across it (operands read for the last time can share with its
        # results, as in :mod:`ptxforge.analysis.liveness`) and what it writes
        dying = [u for u in reads[i] if pending[u] == 1 and u not in live_out and u in alive]
        new = [w for w in writes[i] if w not in alive or w in dying]
        peak = max(peak, now - sum(units[u] for u in dying) + sum(units[w] for w in new))
        cur += delta[i]
        done[i] = True
        for name in reads[i]:
            pending[name] -= 1
            if name in live_out:
                continue
            if pending[name] == 1:  # the last reader left now frees it
                for j in users[name]:
                    if not done[j]:
                        delta[j] -= units[name]
            elif pending[name] == 0 and name in live:
                live.discard(name)
                for j in writers.get(name, ()):
                    if not done[j] and name in fresh[j]:
                        delta[j] += units[name]
        for name in writes[i]:
            if name not in live:
                live.add(name)
                for j in writers[name]:
                    if not done[j] and name in fresh[j]:
                        delta[j] -= units[name]
        for name in dying:
            alive.discard(name)
            now -= units[name]
        for name in new:
            if pending.get(name, 0) or name in stays_out:
                alive.add(name)
                now += units[name]
        order.append(i)
        for succ in succs[i]:
            npred[succ] -= 1
            if npred[succ] == 0:
                heapq.heappush(ready, (-height[succ], succ))
    return order, peak


def reference_schedule(kernel: ir.Kernel, budget: int, stop_at: int | None = None,
                       liveness=None) -> tuple:
    """(the kernel in scheduled order, the peak), as ``list_schedule`` first computed them."""
    lv = liveness if liveness is not None else analyze_liveness(kernel)
    order, peak = _reference_order(lv, budget, stop_at)
    return _reordered(kernel, lv.cfg.instructions, order), peak


def remembered_reference_schedule(kernel: ir.Kernel, budget: int, liveness=None,
                                  kernel_digest: str | None = None) -> tuple:
    """:func:`reference_schedule`'s answer (no ``stop_at``), remembered on disk
    (tests/support/content_memo.py): keyed by the kernel (its full ``repr``, or
    ``kernel_digest``, a digest of it the caller computed once for several budgets), the
    budget, the package's source and this file's (not where the package is: positions and a
    peak quote no path, so every checkout of the same code shares the entries).  The reference is a pure function of
    those, so a remembered answer is the one it would compute again."""
    from content_memo import remembered

    if kernel_digest is None:
        kernel_digest = digest_of(kernel)
    lv = liveness

    def compute() -> list:
        nonlocal lv
        if lv is None:
            lv = analyze_liveness(kernel)
        order, peak = _reference_order(lv, budget, None)
        return [order, peak]

    order, peak = remembered("listsched-reference", (kernel_digest, budget), compute,
                             support=("listsched_reference.py",), located=False)
    if lv is None:
        lv = analyze_liveness(kernel)
    return _reordered(kernel, lv.cfg.instructions, order), peak


def digest_of(kernel: ir.Kernel) -> str:
    """The SHA-256 of ``repr(kernel)`` (every field of the IR: the whole input)."""
    return hashlib.sha256(repr(kernel).encode()).hexdigest()


def _reference_order(lv, budget: int, stop_at: int | None) -> tuple[list, int]:
    """(the positions of the kernel's instructions in scheduled order, the peak)."""
    insts = lv.cfg.instructions
    names = [r.name for r in lv.registers]
    before = lv.series("before")
    at = lv.series("at")
    blocks = list(lv.cfg.blocks)
    order_of: dict = {}
    peak = 0
    bound = {}  # per block: the most units any order of it can have live at once
    for block in blocks:
        seg = insts[block.start:block.end]
        if len(seg) < 3:
            peak = max(peak, *at[block.start:block.end], 0)
        else:
            bound[block.index] = before[block.start] + sum(
                0 if r.type.is_pred else max(r.units, 1) for inst in seg for r in inst.defs)
    for b in sorted(bound, key=lambda b: (-bound[b], b)):
        if bound[b] <= peak or (stop_at is not None and peak >= stop_at):
            break
        block = blocks[b]
        seg = list(insts[block.start:block.end])
        live_in = {names[q] for q in lv.live_in(b)}
        live_out = {names[q] for q in lv.live_out(b)}
        order, top = _block_order(seg, live_in, live_out, before[block.start], budget)
        order_of[b] = [block.start + i for i in order]
        peak = max(peak, top)
    new = [i for block in blocks
           for i in order_of.get(block.index, range(block.start, block.end))]
    return new, peak


def _reordered(kernel: ir.Kernel, insts, order: list) -> ir.Kernel:
    """``kernel`` with its instructions in ``order`` (positions into ``insts``)."""
    it = iter([insts[i] for i in order])
    body = tuple(next(it) if isinstance(s, ir.Instruction) else s for s in kernel.body or ())
    return attrs.evolve(kernel, body=body)


def _ref_extent(inst: ir.Instruction, version: dict):
    """(base name, its version, first byte, end) of an access at a base plus a constant
    offset whose width the opcode's last type suffix gives, else None."""
    addr = [o for o in inst.operands if isinstance(o, ir.Address)]
    parts = inst.opcode.split(".")
    sizes = [p[1:] for p in parts[1:]
             if p[:1] in ("s", "u", "b", "f") and p[1:] in ("8", "16", "32", "64", "128")]
    vectors = [p for p in parts[1:-1] if p[:1] == "v" and p[1:].isdigit()]
    if not addr or addr[0].base is None or not sizes or vectors not in ([], ["v2"], ["v4"]):
        return None
    width = int(sizes[-1]) // 8 * (int(vectors[0][1:]) if vectors else 1)
    a = addr[0]
    return (a.base.name, version.get(a.base.name, 0), a.offset, a.offset + width)


def _ref_disjoint(a, b) -> bool:
    return (a is not None and b is not None and a[0] == b[0] and a[1] == b[1]
            and (a[3] <= b[2] or b[3] <= a[2]))
