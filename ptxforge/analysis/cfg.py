"""Control-flow graph and natural loops over any :class:`~ptxforge.ptx.ir.Kernel`.

Instructions are numbered by their position among the kernel's instructions
(``kernel.instructions``); labels, declarations, scopes and directives take no index.  A basic
block is a half-open range ``[start, end)`` of those indices.  Leaders are the first
instruction, the first instruction after every label, and the instruction after every
``bra``/``brx.idx``/``ret``/``exit``/``trap``.

Successors follow PTX semantics: ``bra`` goes to its target, and also falls through when it is
guarded (``@%p bra``); ``ret``/``exit``/``trap`` have no successors unless guarded (then they
fall through); ``brx.idx`` goes to every label of its ``.branchtargets`` list (or, when the list
cannot be found, conservatively to every labelled block).  A branch to a label that does not
exist raises :class:`~ptxforge.errors.BuildError` naming the label.

Loops are natural loops: an edge ``u → h`` is a back edge when ``h`` dominates ``u``; the loop
is ``h`` plus every block that reaches ``u`` without passing through ``h``.  Back edges sharing
a header form one loop.  Irreducible cycles have no natural loop and are simply not reported
(liveness does not need loops; it iterates to a fixpoint).

Nothing here depends on how the kernel was made (builder or parser).

Example::

    >>> from ptxforge.ptx import ir, types
    >>> from ptxforge.analysis.cfg import build_cfg
    >>> p = ir.Register("%p1", types.pred)
    >>> body = (ir.Label("L"), ir.Instruction("setp.lt.u32", (p, ir.Immediate(1), ir.Immediate(2)), 1),
    ...         ir.Instruction("bra", (ir.LabelRef("L"),), guard=ir.Guard(p)),
    ...         ir.Instruction("ret"))
    >>> cfg = build_cfg(ir.Kernel("k", body=body))
    >>> [(b.start, b.end, b.successors) for b in cfg.blocks]
    [(0, 2, (0, 1)), (2, 3, ())]
    >>> [(lp.header, lp.blocks) for lp in cfg.loops]
    [(0, (0,))]
"""

from __future__ import annotations

import re
from itertools import chain, repeat
from typing import TYPE_CHECKING, Optional

import attrs

from ptxforge.errors import BuildError
from ptxforge.ptx import ir
from ptxforge.ptx.opcodes import Terminator, families_with

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["BasicBlock", "Loop", "ControlFlowGraph", "build_cfg", "TERMINATORS"]

#: Opcode families that end a basic block.
TERMINATORS = frozenset(families_with(Terminator))

_TERMINATOR_HEADS = frozenset(t[:3] for t in TERMINATORS)
_BRANCHTARGETS = re.compile(r"^\s*(?:([\w$.]+)\s*:\s*)?\.branchtargets\s+(.*?);?\s*$", re.S)


@attrs.frozen(slots=True, kw_only=True)
class BasicBlock:
    """Instructions ``[start, end)`` of a kernel, the labels naming the block, and its edges."""

    index: int
    start: int
    end: int
    labels: tuple[str, ...] = ()
    successors: tuple[int, ...] = ()
    predecessors: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        """The first label, or ``bb<index>`` for an unlabelled block."""
        return self.labels[0] if self.labels else f"bb{self.index}"

    def __len__(self) -> int:
        return self.end - self.start


@attrs.frozen(slots=True, kw_only=True)
class Loop:
    """A natural loop: header block, member blocks (sorted), back edges, nesting."""

    header: int
    blocks: tuple[int, ...]
    back_edges: tuple[tuple[int, int], ...]
    parent: Optional[int] = None  # index into ControlFlowGraph.loops of the enclosing loop
    depth: int = 1


@attrs.frozen(slots=True, kw_only=True)
class ControlFlowGraph:
    """Basic blocks, loops and the instruction → block map of one kernel."""

    kernel_name: str
    instructions: tuple
    blocks: tuple[BasicBlock, ...]
    loops: tuple[Loop, ...]
    block_of_instruction: tuple[int, ...] = attrs.field(repr=False)
    label_block: dict = attrs.field(repr=False, eq=False)
    _rpo: Optional[tuple] = attrs.field(repr=False, eq=False, default=None)  # reverse_postorder()

    def block_of(self, index: int) -> BasicBlock:
        """The block containing instruction ``index``."""
        return self.blocks[self.block_of_instruction[index]]

    def to_networkx(self) -> "nx.DiGraph":
        """The block graph as a ``networkx.DiGraph`` (nodes are block indices)."""
        import networkx as nx  # only here: the analysis itself never needs networkx

        g = nx.DiGraph()
        g.add_nodes_from(b.index for b in self.blocks)
        g.add_edges_from((b.index, s) for b in self.blocks for s in b.successors)
        return g

    def reverse_postorder(self) -> list[int]:
        """Blocks reachable from the entry in reverse postorder, then unreachable ones."""
        return list(self._rpo) if self._rpo is not None else _reverse_postorder(self.blocks)


def _target_name(operand) -> Optional[str]:
    """The label name a branch operand refers to, if it is a label or symbol."""
    if isinstance(operand, (ir.LabelRef, ir.Symbol)):
        return operand.name
    return None


def _branchtarget_lists(body: tuple) -> dict[str, tuple[str, ...]]:
    """``.branchtargets`` lists in a body: ``name -> labels`` (``name:`` label or inline)."""
    lists: dict[str, tuple[str, ...]] = {}
    pending: Optional[str] = None
    for stmt in body:
        if isinstance(stmt, ir.Label):
            pending = stmt.name
            continue
        if isinstance(stmt, ir.Directive):
            m = _BRANCHTARGETS.match(stmt.text)
            if m:
                name = m.group(1) or pending
                labels = tuple(x.strip() for x in m.group(2).split(",") if x.strip())
                if name:
                    lists[name] = labels
        pending = None if not isinstance(stmt, ir.Directive) else pending
    return lists


def build_cfg(kernel: ir.Kernel) -> ControlFlowGraph:
    """Split ``kernel`` into basic blocks, connect them, and find its natural loops.

    Example::

        >>> from ptxforge.ptx import ir
        >>> build_cfg(ir.Kernel("k", body=(ir.Instruction("ret"),))).blocks[0].successors
        ()
    """
    body = kernel.body or ()
    instructions: list[ir.Instruction] = []
    label_at: dict[str, int] = {}
    leaders = {0}
    Instruction = ir.Instruction
    for stmt in body:
        if type(stmt) is Instruction or isinstance(stmt, Instruction):
            instructions.append(stmt)
            if stmt.opcode[:3] in _TERMINATOR_HEADS and stmt.family in TERMINATORS:
                leaders.add(len(instructions))
        elif isinstance(stmt, ir.Label):
            if stmt.name in label_at:
                raise BuildError(f"kernel {kernel.name!r}: label {stmt.name!r} is defined twice")
            label_at[stmt.name] = len(instructions)
            leaders.add(len(instructions))
    n = len(instructions)
    starts = sorted(i for i in leaders if i < n)
    ranges = list(zip(starts, starts[1:] + [n]))
    block_of = list(chain.from_iterable(repeat(bi, e - s) for bi, (s, e) in enumerate(ranges)))
    start_block = {s: bi for bi, (s, _) in enumerate(ranges)}
    labels_of: dict[int, list[str]] = {}
    label_block: dict[str, Optional[int]] = {}
    for name, pos in label_at.items():
        label_block[name] = start_block.get(pos)  # None: label at the very end of the body
        if pos in start_block:
            labels_of.setdefault(start_block[pos], []).append(name)
    target_lists: Optional[dict] = None

    def resolve(name: str, where: ir.Instruction) -> Optional[int]:
        if name not in label_block:
            loc = f" at {where.loc}" if where.loc is not None else ""
            known = ", ".join(sorted(label_block)) or "none"
            raise BuildError(f"kernel {kernel.name!r}: branch{loc} to unknown label {name!r} "
                             f"(labels defined: {known})")
        return label_block[name]

    succs: list[list[int]] = []
    for bi, (s, e) in enumerate(ranges):
        last = instructions[e - 1]
        fall = [bi + 1] if bi + 1 < len(ranges) else []
        fam = last.family
        out: list[Optional[int]] = []
        if fam == "bra":
            names = [t for t in map(_target_name, last.operands) if t is not None]
            if not names:
                raise BuildError(f"kernel {kernel.name!r}: branch without a label target: "
                                 f"{last.opcode} {last.operands!r}")
            out.append(resolve(names[-1], last))
            if last.guard is not None:
                out.extend(fall)
        elif fam == "brx":
            if target_lists is None:
                target_lists = _branchtarget_lists(body)
            names = [t for t in map(_target_name, last.operands) if t is not None]
            labels = target_lists.get(names[-1]) if names else None
            if labels is None:
                out.extend(b for b in sorted(labels_of))
            else:
                out.extend(resolve(x, last) for x in labels)
            if last.guard is not None:
                out.extend(fall)
        elif fam in TERMINATORS:  # ret, exit, trap (bra and brx above)
            if last.guard is not None:
                out.extend(fall)
        else:
            out.extend(fall)
        succs.append(sorted({x for x in out if x is not None}))
    preds: list[list[int]] = [[] for _ in ranges]
    for bi, ss in enumerate(succs):
        for t in ss:
            preds[t].append(bi)
    blocks = tuple(
        BasicBlock(index=bi, start=s, end=e, labels=tuple(labels_of.get(bi, ())),
                   successors=tuple(succs[bi]), predecessors=tuple(sorted(preds[bi])))
        for bi, (s, e) in enumerate(ranges)
    )
    rpo = _reachable_rpo(blocks)
    return ControlFlowGraph(
        kernel_name=kernel.name,
        instructions=tuple(instructions),
        blocks=blocks,
        loops=_natural_loops(blocks, rpo),
        block_of_instruction=tuple(block_of),
        label_block=label_block,
        rpo=tuple(_with_unreachable(rpo, blocks)),
    )


def _reverse_postorder(blocks: tuple[BasicBlock, ...]) -> list[int]:
    """Iterative DFS from block 0; unreachable blocks follow in index order."""
    return _with_unreachable(_reachable_rpo(blocks), blocks)


def _with_unreachable(rpo: list[int], blocks: tuple[BasicBlock, ...]) -> list[int]:
    """``rpo`` (the reachable blocks), then the unreachable blocks in index order."""
    order = list(rpo)
    if len(order) < len(blocks):
        seen = set(order)
        order.extend(b.index for b in blocks if b.index not in seen)
    return order


def _reachable_rpo(blocks: tuple[BasicBlock, ...]) -> list[int]:
    """The blocks reachable from block 0, in reverse postorder of an iterative DFS."""
    if not blocks:
        return []
    succ = [b.successors for b in blocks]
    seen = bytearray(len(blocks))
    seen[0] = 1
    nxt = [0] * len(blocks)  # per block on the stack: the next successor to look at
    post: list[int] = []
    stack = [0]
    while stack:
        node = stack[-1]
        ss = succ[node]
        k = nxt[node]
        while k < len(ss) and seen[ss[k]]:
            k += 1
        if k < len(ss):
            nxt[node] = k + 1
            seen[ss[k]] = 1
            stack.append(ss[k])
        else:
            stack.pop()
            post.append(node)
    post.reverse()
    return post


def _immediate_dominators(blocks: tuple[BasicBlock, ...], rpo: list[int]) -> dict[int, int]:
    """``{block: immediate dominator}`` over the reachable blocks (the entry maps to itself):
    the iterative algorithm of Cooper, Harvey and Kennedy over reverse-postorder numbers."""
    num = [-1] * len(blocks)
    for k, b in enumerate(rpo):
        num[b] = k
    idom = [-1] * len(blocks)
    idom[0] = 0
    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            new = -1
            for p in blocks[b].predecessors:
                if idom[p] < 0:
                    continue  # unreachable, or not reached yet in this pass
                if new < 0:
                    new = p
                    continue
                a = p
                while a != new:
                    while num[a] > num[new]:
                        a = idom[a]
                    while num[new] > num[a]:
                        new = idom[new]
            if idom[b] != new:
                idom[b] = new
                changed = True
    return {b: idom[b] for b in rpo}


def _natural_loops(blocks: tuple[BasicBlock, ...], rpo: list[int]) -> tuple[Loop, ...]:
    """Natural loops from back edges (target dominates source), merged per header, nested;
    ``rpo`` lists the reachable blocks in reverse postorder."""
    if not blocks:
        return ()
    num = [-1] * len(blocks)
    for k, b in enumerate(rpo):
        num[b] = k
    if not any(num[s] <= num[b] for b in rpo for s in blocks[b].successors):
        return ()  # no edge goes back in reverse postorder: no cycle, so no back edge
    idom = _immediate_dominators(blocks, rpo)
    # Dominator-tree intervals for O(1) dominance tests.
    children: dict[int, list[int]] = {}
    for node, parent in idom.items():
        if node != parent:
            children.setdefault(parent, []).append(node)
    pre: dict[int, int] = {}
    post: dict[int, int] = {}
    clock = 0
    stack = [(0, False)]
    while stack:
        node, done = stack.pop()
        if done:
            post[node] = clock
            clock += 1
            continue
        pre[node] = clock
        clock += 1
        stack.append((node, True))
        stack.extend((c, False) for c in sorted(children.get(node, ()), reverse=True))

    def dominates(a: int, b: int) -> bool:
        return a in pre and b in pre and pre[a] <= pre[b] and post[b] <= post[a]

    back: dict[int, list[int]] = {}
    for blk in blocks:
        if blk.index not in pre:
            continue  # unreachable
        for s in blk.successors:
            if dominates(s, blk.index):
                back.setdefault(s, []).append(blk.index)
    found = []
    for header in sorted(back):
        body = {header}
        work = [u for u in back[header] if u != header]
        body.update(work)
        while work:
            x = work.pop()
            for p in blocks[x].predecessors:
                if p not in body and p in pre:
                    body.add(p)
                    work.append(p)
        found.append((header, tuple(sorted(body)), tuple((u, header) for u in sorted(back[header]))))
    # Nesting: the parent is the smallest other loop whose blocks contain this loop's blocks.
    loops: list[Loop] = []
    sets = [set(blks) for _, blks, _ in found]
    parents: list[Optional[int]] = []
    for i, (header, blks, _) in enumerate(found):
        best = None
        for j in range(len(found)):
            if j != i and header in sets[j] and sets[i] <= sets[j] and found[j][0] != header:
                if best is None or len(sets[j]) < len(sets[best]):
                    best = j
        parents.append(best)
    for i, (header, blks, edges) in enumerate(found):
        depth, up = 1, parents[i]
        while up is not None:
            depth += 1
            up = parents[up]
        loops.append(Loop(header=header, blocks=blks, back_edges=edges, parent=parents[i],
                          depth=depth))
    return tuple(loops)
