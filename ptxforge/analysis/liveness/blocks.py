"""Block-level dataflow over every register, straight from the definitions.

:func:`block_bitsets` gives per block the registers backward-live on entry and exit and the
registers maybe-defined on entry and exit, as int bitsets over the register index (see
:mod:`ptxforge.analysis.liveness` for the definitions).  It serves
:attr:`~ptxforge.analysis.liveness.Liveness.live_in_bits` and its siblings, computed on first use, and
is the plain reference the solver's complex-index sets are checked against.  Its sets span
all registers, so it costs time and memory in proportion to blocks × registers: the solver
never calls it.
"""

from __future__ import annotations

from ..cfg import ControlFlowGraph
from .dataflow import solve_union, union_over
from .storage import mask_of

__all__ = ["block_bitsets"]


def block_bitsets(cfg: ControlFlowGraph, defs: tuple, uses: tuple, guarded: bytes) -> tuple:
    """``(live_in, live_out, defined_in, defined_out)``: tuples of one bitset per block.

    ``defs``/``uses`` are per instruction the register indices it writes and reads (the guard
    among the reads); ``guarded[i]`` is true when instruction ``i`` has a guard (its writes do
    not kill).
    """
    blocks = cfg.blocks
    nb = len(blocks)
    gen, kill, dall = [], [], []
    for blk in blocks:
        g: set = set()
        k: set = set()
        d: set = set()
        for j in range(blk.start, blk.end):
            g.update(r for r in uses[j] if r not in k)
            d.update(defs[j])
            if not guarded[j]:
                k.update(defs[j])
        gen.append(mask_of(g))
        kill.append(mask_of(k))
        dall.append(mask_of(d))
    pred = [b.predecessors for b in blocks]
    succ = [b.successors for b in blocks]
    d_out = solve_union(range(nb), pred, succ, dall)
    l_in = solve_union(range(nb - 1, -1, -1), succ, pred, gen, kill)
    d_in, l_out = union_over(d_out, pred), union_over(l_in, succ)
    return tuple(l_in), tuple(l_out), tuple(d_in), tuple(d_out)
