"""The bottom-up pressure scheduler of the prediction as first written (every step computes
the choice key of every ready instruction and takes the least): the reference that
:func:`ptxforge.analysis.prediction.bottom_up_peak`, which keeps the keys in a heap and
computes again only those whose registers changed, must match peak for peak
(tests/analysis/test_prediction_shortcuts.py).  Quadratic in a block's length; only for
tests."""

from __future__ import annotations

from ptxforge.analysis.liveness import analyze_liveness
from ptxforge.analysis.prediction.listsched import _dependences, _units
from ptxforge.ptx import ir

__all__ = ["reference_bottom_up_peak"]


def reference_bottom_up_peak(kernel: ir.Kernel, liveness=None) -> int:
    """The most units live when every block of ``kernel`` is scheduled bottom-up, by a
    linear scan of the ready list on every step (blocks under 3 instructions keep their
    order)."""
    lv = liveness if liveness is not None else analyze_liveness(kernel)
    units = [_units(r) for r in lv.registers]
    at = lv.series("at")
    insts = lv.cfg.instructions
    peak = 0
    for block in lv.cfg.blocks:
        lo, hi = block.start, block.end
        if hi - lo < 3:
            peak = max(peak, *at[lo:hi], 0)
            continue
        peak = max(peak, _block_peak(list(insts[lo:hi]), lv.instruction_uses[lo:hi],
                                     lv.instruction_defs[lo:hi], units,
                                     set(lv.live_out(block.index))))
    return peak


def _block_peak(insts: list, uses, defs, units: list, live: set) -> int:
    g = _dependences(insts, uses, defs)
    n = len(insts)
    waiting = [len(g.succs[i]) for i in range(n)]
    preds: list = [[] for _ in range(n)]
    for i in range(n):
        for s in g.succs[i]:
            preds[s].append(i)
    for t in g.terms:
        for i in range(t):
            waiting[i] += 1
            preds[t].append(i)
    cur = peak = sum(units[r] for r in live)
    ready = [i for i in range(n) if waiting[i] == 0]
    while ready:
        best, pick = None, -1
        for i in ready:
            kills = sum(units[w] for w in defs[i] if w in live and w not in uses[i])
            d = (sum(units[u] for u in uses[i] if u not in live) - kills, -kills, i)
            if best is None or d < best:
                best, pick = d, i
        ready.remove(pick)
        peak = max(peak, cur + sum(units[w] for w in defs[pick] if w not in live))
        for w in defs[pick]:
            if w in live:
                live.discard(w)
                cur -= units[w]
        for u in uses[pick]:
            if u not in live:
                live.add(u)
                cur += units[u]
        peak = max(peak, cur)
        for p in set(preds[pick]):
            waiting[p] -= 1
            if waiting[p] == 0:
                ready.append(p)
    return peak
