"""A bottom-up pressure scheduler: how few units a kernel's blocks could keep live in some order.

The list scheduler (:mod:`.listsched`) works top-down, as ptxas issues: from what is ready at
the top of a block.  Above the occupancy budget that greedy order often stays above it, where
ptxas finds an order that fits (a lifting wavelet whose steps it runs as a wavefront, one
element after another, instead of one step over every element; a Triton reduction whose
loads it sinks to their use).  :func:`bottom_up_peak` schedules each basic block from its end
instead: it starts from what is live out, and of the instructions whose every dependant is
placed it places the one that adds the fewest live units (the values it reads that are not
live yet, minus the ones it defines); of those, the one that ends the most live units (defines
them: a producer before a store that only opens one), then the earliest in PTX order (a
producer of what was just placed comes before its consumer in the PTX, so the order follows
one chain down before it opens another).  The dependences are :mod:`.listsched`'s.

The result is an order's peak, not a bound: ptxas finds better orders still (docs/prediction.md,
"Squeezed to the budget"), and the greedy can be worse than the PTX order on some blocks (an
in-register sorting network), so the prediction reads it only to ask whether an order near
the budget exists.

Example::

    >>> from ptxforge.ptx import ir, types as T
    >>> a, b, c, d = (ir.Register(f"%r{i}", T.u32) for i in range(4))
    >>> body = (ir.Instruction("mov.u32", (a, ir.Immediate(1)), 1),
    ...         ir.Instruction("mov.u32", (b, ir.Immediate(2)), 1),
    ...         ir.Instruction("add.u32", (c, a, a), 1),
    ...         ir.Instruction("add.u32", (d, b, b), 1),
    ...         ir.Instruction("add.u32", (d, c, d), 1),
    ...         ir.Instruction("st.global.u32", (ir.Address(ir.Symbol("p")), d)),
    ...         ir.Instruction("ret"))
    >>> bottom_up_peak(ir.Kernel("k", body=body))
    2
"""

from __future__ import annotations

import heapq

from ptxforge.ptx import ir

from ..liveness import analyze_liveness
from .listsched import _dependences, _unit_list

__all__ = ["bottom_up_peak"]


def bottom_up_peak(kernel: ir.Kernel, liveness=None) -> int:
    """The most 32-bit units live at once when every basic block of ``kernel`` is scheduled
    bottom-up for pressure (module docstring); blocks of fewer than 3 instructions keep their
    order.  ``liveness`` is the kernel's :func:`~ptxforge.analysis.liveness.analyze_liveness`
    when the caller has it.  Quadratic in a block's length: meant for blocks of a few hundred
    instructions (the prediction asks only for kernels without longer ones)."""
    lv = liveness if liveness is not None else analyze_liveness(kernel)
    units = _unit_list(lv.registers)
    at = lv.series("at")
    insts = lv.cfg.instructions
    uses_all, defs_all = lv.instruction_uses, lv.instruction_defs
    peak = 0
    for block in lv.cfg.blocks:
        lo, hi = block.start, block.end
        if hi - lo < 3:
            peak = max(peak, *at[lo:hi], 0)
            continue
        peak = max(peak, _block_peak(list(insts[lo:hi]), uses_all[lo:hi], defs_all[lo:hi],
                                     units, set(lv.live_out(block.index))))
    return peak


def _block_peak(insts: list, uses, defs, units: list, live: set) -> int:
    """The peak of one block scheduled bottom-up, ``live`` the registers live out of it.

    Each ready instruction's choice key (the units it adds, the units it ends, its position)
    depends only on which of its registers are live: it is kept in a heap and computed again
    only when one of them becomes live or dead (or it becomes ready), so a step costs what
    changed, not the whole ready list."""
    g = _dependences(insts, uses, defs)
    n = len(insts)
    waiting = [len(g.succs[i]) for i in range(n)]  # dependants not placed yet
    preds: list = [[] for _ in range(n)]
    for i in range(n):
        for s in g.succs[i]:
            preds[s].append(i)
    for t in g.terms:  # a terminator follows every instruction before it (implicit edges)
        for i in range(t):
            waiting[i] += 1
            preds[t].append(i)
    touch: dict = {}  # register -> the instructions that read or write it
    for i in range(n):
        for r in uses[i]:
            touch.setdefault(r, []).append(i)
        for r in defs[i]:
            if r not in uses[i]:
                touch.setdefault(r, []).append(i)

    def key(i: int) -> tuple:
        kills = sum(units[w] for w in defs[i] if w in live and w not in uses[i])
        return (sum(units[u] for u in uses[i] if u not in live) - kills, -kills, i)

    cur = peak = sum(units[r] for r in live)
    cost = {i: key(i) for i in range(n) if waiting[i] == 0}  # ready -> its current key
    heap = list(cost.values())
    heapq.heapify(heap)
    while cost:
        while True:
            d = heapq.heappop(heap)
            if cost.get(d[2]) == d:  # else stale: placed, or its key changed since
                break
        pick = d[2]
        del cost[pick]
        # at ``pick``: what is live after it plus what it defines that nothing reads
        peak = max(peak, cur + sum(units[w] for w in defs[pick] if w not in live))
        changed = []
        for w in defs[pick]:
            if w in live:
                live.discard(w)
                cur -= units[w]
                changed.append(w)
        for u in uses[pick]:
            if u not in live:
                live.add(u)
                cur += units[u]
                changed.append(u)
        peak = max(peak, cur)
        dirty = {j for r in changed for j in touch[r] if j in cost}
        for p in set(preds[pick]):
            waiting[p] -= 1
            if waiting[p] == 0:
                dirty.add(p)
        for j in dirty:
            cost[j] = k = key(j)
            heapq.heappush(heap, k)
    return peak
