"""Per-function name scopes of the parser: labels and their uses, and scoped ``.reg`` names.

PTX scopes labels and registers by ``{ }`` blocks.  :class:`ScopeTracker` follows the blocks
of one function body and

* checks labels as ptxas does: a label defined twice, a branch target (``bra``, ``brx.idx``,
  a ``.branchtargets`` list) that names no label of the function, or one defined inside a
  ``{ }`` block that does not enclose the use, is a :class:`~ptxforge.errors.ParseError` at
  the offending token (so no error is left for the CFG to find without a position); a
  lenient parse warns about a missing target instead and defines it at the end of the body;
* undoes a nested block's ``.reg`` declarations when the block closes, so a name declared in
  a block is a register there and only there (and an outer declaration it shadowed comes back).

A label defined in two sibling blocks is legal PTX (CUTLASS's inline-asm waits, ``LAB_WAIT:``
inside ``{ }``, inlined twice), but ptxforge's control-flow graph names labels per function: so
each later definition gets a unique name (``LAB_WAIT$2``) and every branch is pointed at the
definition it sees (the innermost enclosing block's).
"""

from __future__ import annotations

import attrs

from .. import ir
from .cursor import TokenCursor

__all__ = ["ScopeTracker"]

_MISSING = object()


class ScopeTracker(TokenCursor):
    """Label and register scopes of the current function (a mixin over :class:`TokenCursor`).

    The per-function state below is declared here, typed, and set by :meth:`scopes_begin`
    (``label_targets`` by :meth:`labels_check`).
    """

    label_at: dict[str, tuple[int, int]]  # name -> (token index, block id)
    label_uses: list[tuple[str, int, tuple[int, ...]]]  # (name, token index, block chain)
    # name -> [(token index, block id, name in the IR)] for names defined in sibling blocks
    label_twins: dict[str, list[tuple[int, int, str]]]
    block_chain: tuple[int, ...]  # ids of the open blocks, outermost first
    block_count: int
    # per open nested block: what its .reg lines replaced, (table, name, old value or _MISSING)
    reg_undo: list[list[tuple[dict, str, object]]]
    label_targets: list[str]  # per label use, in order: the IR name it resolves to

    def scopes_begin(self) -> None:
        """Start a function body: no labels, no uses, one (outermost) block."""
        self.label_at = {}
        self.label_uses = []
        self.label_twins = {}
        self.block_chain = (0,)
        self.block_count = 1
        self.reg_undo = []

    # -- blocks --------------------------------------------------------------------------------
    def block_open(self) -> None:
        self.block_chain = self.block_chain + (self.block_count,)
        self.block_count += 1
        self.reg_undo.append([])

    def block_close(self) -> None:
        self.block_chain = self.block_chain[:-1]
        frame = self.reg_undo.pop()
        ranges_changed = False
        for table, name, old in reversed(frame):
            ranges_changed = ranges_changed or table is self.ranges
            if old is _MISSING:
                table.pop(name, None)
            else:
                table[name] = old
        if ranges_changed:
            self.forget_range_registers()

    def shadow(self, table: dict, name: str) -> None:
        """Remember what a nested block's declaration of ``name`` replaces in ``table``."""
        if self.reg_undo:
            self.reg_undo[-1].append((table, name, table.get(name, _MISSING)))

    def forget_range_registers(self) -> None:
        """Drop registers cached from ``%r<N>`` ranges (after the ranges in scope changed)."""
        declared = self.declared
        for name in [n for n in self.regs if n not in declared]:
            del self.regs[name]

    # -- labels --------------------------------------------------------------------------------
    def label_defined(self, name: str, index: int) -> str:
        """Record the definition ``name:`` at token ``index``; returns the name it has in the IR
        (a unique one when a sibling block already defines ``name``)."""
        first = self.label_at.get(name)
        if first is None:
            self.label_at[name] = (index, self.block_chain[-1])
            return name
        twins = self.label_twins.setdefault(name, [(first[0], first[1], name)])
        for at, block, _ in twins:
            if block in self.block_chain:
                line = self.tk.line_col(self.tk.offset(at))[0]
                raise self.error(f"label {name} is defined twice in function "
                                 f"{self.function_name} (first at line {line})", index)
        unique, k = name, len(twins) + 1
        while unique in self.label_at:
            unique, k = f"{name}${k}", k + 1
        self.label_at[unique] = (index, self.block_chain[-1])
        twins.append((index, self.block_chain[-1], unique))
        return unique

    def label_used(self, name: str, index: int) -> None:
        self.label_uses.append((name, index, self.block_chain))

    def branch_target_list(self, start: int, end: int) -> None:
        """Record the labels of ``.branchtargets L1, L2, …;`` (tokens ``start`` to ``end``)."""
        toks = self.toks
        for k in range(start + 1, end):
            if toks[k] != ",":
                self.label_used(toks[k], k)

    def labels_check(self) -> list:
        """At the end of a function body: every branch target names a visible label.

        Returns the missing targets, which a lenient parse defines at the end of the body (a
        branch there leaves the function) after warning about each."""
        label_at = self.label_at
        missing: list = []
        self.label_targets = []
        for name, index, chain in self.label_uses:
            twins = self.label_twins.get(name)
            if twins is not None:
                seen = [t for t in twins if t[1] in chain]
                if seen:  # the definition in the innermost enclosing block
                    best = max(seen, key=lambda t: chain.index(t[1]))
                    self.label_targets.append(best[2])
                    continue
            self.label_targets.append(name)
            where = label_at.get(name)
            if where is None:
                known = sorted(label_at)
                shown = ", ".join(known[:8]) + (", …" if len(known) > 8 else "") or "none"
                self.problem(f"branch target {name} is not a label of function "
                             f"{self.function_name}; expected a label defined as '{name}:' "
                             f"in the function (labels defined: {shown})", index)
                if name not in missing:
                    missing.append(name)
                continue
            if where[1] not in chain:
                line = self.tk.line_col(self.tk.offset(where[0]))[0]
                raise self.error(f"branch target {name} is defined at line {line} inside a {{ }} "
                                 "block that does not enclose this use; PTX (and ptxas) allow "
                                 "branches only to labels of the same or an enclosing block", index)
        return missing

    def retarget_branches(self, stmts: list) -> list:
        """``stmts`` with each branch's labels renamed as :meth:`labels_check` resolved them
        (only needed when a label name is defined in sibling blocks)."""
        if not self.label_twins:
            return stmts
        targets = iter(self.label_targets)
        out = []
        for stmt in stmts:
            if type(stmt) is ir.Instruction and any(type(o) is ir.LabelRef for o in stmt.operands):
                ops = tuple(ir.LabelRef(next(targets)) if type(o) is ir.LabelRef else o
                            for o in stmt.operands)
                stmt = attrs.evolve(stmt, operands=ops)
            elif type(stmt) is ir.Directive and stmt.text.startswith(".branchtargets"):
                names = stmt.text[len(".branchtargets"):].rstrip(";").split(",")
                for _ in names:
                    next(targets)
            out.append(stmt)
        return out
