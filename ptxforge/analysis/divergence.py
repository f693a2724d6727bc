"""Which writes of a register depend on a thread-dependent branch: control dependence.

A register written in several places (a loop counter, an if/else assignment, a stack top
bumped under a data-dependent test) has one value across the threads of a warp that run an
access together only when the *same* writes ran in each of them.  :class:`ControlDependence`
gives, for a write, the branch edges it depends on (post-dominators, Ferrante et al.),
transitively, leaving out the exits of the loops around it (the threads still in a loop have
run the same iterations) and the branches the caller finds uniform.  The writes of a register
*diverge* when they do not all depend on the same thread-dependent edges: an if/else on
``tid.x``, or ``top++`` under a data-dependent test while ``top--`` is unconditional.

Example::

    >>> from ptxforge.ptx.parse import parse
    >>> k = parse('''.version 8.0
    ... .target sm_80
    ... .address_size 64
    ... .visible .entry k()
    ... {
    ...     .reg .pred %p<2>;
    ...     .reg .b32 %r<3>;
    ...     mov.u32 %r1, 0;
    ...     setp.lt.u32 %p1, %tid.x, 16;
    ...     @%p1 bra $L1;
    ...     mov.u32 %r1, 4;
    ... $L1:
    ...     ret;
    ... }''').kernel("k")
    >>> cd = ControlDependence(k)
    >>> cd.edges(0), cd.edges(3)
    (frozenset(), frozenset({(0, 1)}))
"""

from __future__ import annotations

from collections.abc import Callable

from ptxforge.errors import PtxforgeError
from ptxforge.ptx import ir

from .cfg import build_cfg

__all__ = ["ControlDependence"]


def _post_dominators(succ: dict, nodes: list) -> dict:
    """Immediate post-dominators (None: the virtual exit, or cannot reach an exit)."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_node(-1)
    for n in nodes:
        g.add_node(n)
        for s in succ[n]:
            g.add_edge(s, n)
        if not succ[n]:
            g.add_edge(-1, n)
    idom = nx.immediate_dominators(g, -1)
    return {n: (None if idom.get(n, -1) == -1 else idom[n]) for n in nodes if n in idom}


class ControlDependence:
    """Control dependence of a kernel's instructions on branch edges ``(block, successor)``;
    a guarded instruction also depends on its guard, as edge ``(block, -1 - index)``."""

    def __init__(self, kernel: ir.Kernel) -> None:
        self.ok = True
        self._cache: dict = {}  # edges per instruction (one evaluator asks, one uniform rule)
        try:
            self.cfg = build_cfg(kernel)
        except PtxforgeError:  # a branch to a missing label (a lenient parse)
            self.ok = False
            return
        blocks = self.cfg.blocks
        succ = {b.index: b.successors for b in blocks}
        ipdom = _post_dominators(succ, [b.index for b in blocks])
        self.direct: dict = {b.index: set() for b in blocks}
        for a in blocks:
            if len(set(a.successors)) < 2 or a.index not in ipdom:
                continue
            stop = ipdom[a.index]
            for s in set(a.successors):
                runner: int | None = s
                seen = set()
                while runner is not None and runner != stop and runner not in seen:
                    seen.add(runner)
                    self.direct[runner].add((a.index, s))
                    runner = ipdom.get(runner)
        self.exits: dict = {b.index: set() for b in blocks}   # loop-exit branch blocks
        for loop in self.cfg.loops:
            inside = set(loop.blocks)
            outs = {b for b in loop.blocks if any(s not in inside for s in succ[b])}
            for b in loop.blocks:
                self.exits[b] |= outs

    def edges(self, index: int,
              uniform: Callable[[object, int], bool] = lambda guard, at: False):
        """The branch edges instruction ``index`` depends on, transitively, less loop exits
        and the branches (and guard) whose guard ``uniform(guard)`` says is the same in every
        thread (an ``ir.Guard``, or the ``brx.idx`` instruction; and the instruction's index)."""
        if not self.ok:
            return frozenset()
        got = self._cache.get(index)
        if got is not None:
            return got
        home = self.cfg.block_of_instruction[index]
        out, todo, seen = set(), [home], {home}
        while todo:
            b = todo.pop()
            for a, s in self.direct[b]:
                guard = self.branch_guard(a)
                branch = self.cfg.blocks[a].end - 1
                if a in self.exits[home] or guard is None or uniform(guard, branch):
                    continue
                out.add((a, s))
                if a not in seen:
                    seen.add(a)
                    todo.append(a)
        inst = self.cfg.instructions[index]
        if inst.guard is not None and not uniform(inst.guard, index):
            out.add((home, -1 - index))
        got = self._cache[index] = frozenset(out)
        return got

    def branch_guard(self, block: int):
        """The guard of the branch ending ``block`` (None: unconditional or ``.uni``; the
        instruction itself for an unguarded multi-way branch such as ``brx.idx``)."""
        b = self.cfg.blocks[block]
        last = self.cfg.instructions[b.end - 1]
        if last.op.has("uni"):
            return None
        return last.guard if last.guard is not None or len(set(b.successors)) < 2 else last
