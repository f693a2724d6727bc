"""Reaching definitions: which writes of a register a read at one instruction can see.

A forward dataflow over the basic blocks (:mod:`ptxforge.analysis.cfg`) with the writes as
bits of a Python int (bit i: instruction i writes the register): a block's writes kill every
other write of the same registers.  The address evaluator asks it so that a register NVRTC
reuses (a zero, then an ``mma`` accumulator; a thread index, then a later loop's counter) is
read with the one write that reaches the read.  Without a CFG (a branch to a missing label),
every write of the register is taken as reaching.

Example::

    >>> from ptxforge.ptx.parse import parse
    >>> k = parse('''.version 8.0
    ... .target sm_80
    ... .address_size 64
    ... .visible .entry k()
    ... {
    ...     .reg .b32 %r<3>;
    ...     mov.u32 %r1, 0;
    ...     add.u32 %r2, %r1, 1;
    ...     mov.u32 %r1, 5;
    ...     ret;
    ... }''').kernel("k")
    >>> rd = ReachingDefinitions(k)
    >>> rd.reaching(1, "%r1"), rd.reaching(None, "%r1")
    ((0,), (0, 2))
"""

from __future__ import annotations

from ptxforge.errors import PtxforgeError
from ptxforge.ptx import ir

from .cfg import ControlFlowGraph, build_cfg

__all__ = ["ReachingDefinitions"]


class ReachingDefinitions:
    """The writes of each register that reach each instruction of one kernel."""

    def __init__(self, kernel: ir.Kernel) -> None:
        self.insts = kernel.instructions
        self.defs: dict[str, list[int]] = {}
        self.writes: list[tuple] = []
        for i, inst in enumerate(self.insts):
            names = tuple(r.name for r in inst.defs if isinstance(r, ir.Register))
            self.writes.append(names)
            for name in names:
                self.defs.setdefault(name, []).append(i)
        self.mask = {name: sum(1 << i for i in sites) for name, sites in self.defs.items()}
        self.cfg: ControlFlowGraph | None
        try:
            self.cfg = build_cfg(kernel)
        except PtxforgeError:  # a branch to a missing label (a lenient parse)
            self.cfg = None
            return
        self._solve()

    def _solve(self) -> None:
        assert self.cfg is not None
        blocks = self.cfg.blocks
        gen, kill = [], []
        for blk in blocks:
            last: dict = {}
            for i in range(blk.start, blk.end):
                for name in self.writes[i]:
                    last[name] = i
            g = k = 0  # OR, not sum: one instruction may write several registers
            for name, i in last.items():
                g |= 1 << i
                k |= self.mask[name]
            gen.append(g)
            kill.append(k)
        self.inn = [0] * len(blocks)
        out = list(gen)
        order = self.cfg.reverse_postorder()
        changed = True
        while changed:
            changed = False
            for b in order:
                new_in = 0
                for p in blocks[b].predecessors:
                    new_in |= out[p]
                new_out = gen[b] | (new_in & ~kill[b])
                if new_in != self.inn[b] or new_out != out[b]:
                    self.inn[b], out[b] = new_in, new_out
                    changed = True

    def reaching(self, at: int | None, name: str) -> tuple:
        """The instructions whose write of ``name`` can reach instruction ``at`` (all the
        writes when ``at`` is None or there is no CFG), in order."""
        sites = self.defs.get(name, [])
        if at is None or self.cfg is None or not sites:
            return tuple(sites)
        block = self.cfg.blocks[self.cfg.block_of_instruction[at]]
        for i in range(at - 1, block.start - 1, -1):
            if name in self.writes[i]:
                return (i,)
        bits = self.inn[block.index] & self.mask[name]
        return tuple(i for i in sites if bits >> i & 1)
