"""The one block-level dataflow solver: a gen/kill union fixpoint over int bitsets.

Both liveness passes ask it: the solver's fixpoints over the complex index
(:mod:`ptxforge.analysis.liveness.solver`) and the reference over every register
(:mod:`ptxforge.analysis.liveness.blocks`).  A problem is given by its direction alone:
``sources[b]`` are the blocks whose values flow into ``b`` (predecessors for a forward
problem, successors for a backward one) and ``sinks[b]`` the blocks ``b`` flows into.  The
value of a block is ``gen[b] | (union of its sources' values & ~kill[b])``, starting from the
empty set, so the result is the least fixpoint whatever the visiting order; an order that
visits sources first (reverse postorder forward, its reverse backward) visits each block of
an acyclic CFG once.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable, Optional, Sequence

__all__ = ["solve_union", "union_over"]


def solve_union(order: Iterable[int], sources: Sequence, sinks: Sequence, gen: Sequence[int],
                kill: Optional[Sequence[int]] = None) -> list[int]:
    """Per block: the least ``x[b] = gen[b] | (OR of x[s] over sources[b]) & ~kill[b]``
    (``kill`` None: nothing is killed), by a worklist seeded with ``order``.

    Example (backward liveness on a chain 0 -> 1 -> 2: block 2 reads bit 0, block 1
    writes it)::

        >>> succ, pred = [[1], [2], []], [[], [0], [1]]
        >>> solve_union([2, 1, 0], succ, pred, gen=[0, 0, 1], kill=[0, 1, 0])
        [0, 0, 1]
    """
    nb = len(gen)
    x = [0] * nb
    work, queued = deque(order), [True] * nb
    pop, push = work.popleft, work.append
    if kill is None:
        while work:
            b = pop()
            queued[b] = False
            v = gen[b]
            for s in sources[b]:
                v |= x[s]
            if v != x[b]:
                x[b] = v
                for t in sinks[b]:
                    if not queued[t]:
                        queued[t] = True
                        push(t)
        return x
    while work:
        b = pop()
        queued[b] = False
        v = 0
        for s in sources[b]:
            v |= x[s]
        if v and kill[b]:
            v &= ~kill[b]
        v |= gen[b]
        if v != x[b]:
            x[b] = v
            for t in sinks[b]:
                if not queued[t]:
                    queued[t] = True
                    push(t)
    return x


def union_over(x: Sequence[int], neighbours: Sequence) -> list[int]:
    """Per block: the OR of ``x`` over its ``neighbours`` (the other side of a solved block).

    Example (live on exit = the union of the successors' live on entry)::

        >>> union_over([0b01, 0b10, 0b100], [[1, 2], [2], []])
        [6, 4, 0]
    """
    out = []
    for ns in neighbours:
        v = 0
        for s in ns:
            v |= x[s]
        out.append(v)
    return out
