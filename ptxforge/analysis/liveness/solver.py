"""The liveness solver: :func:`analyze_liveness`.

Registers with one unguarded definition and every read after it in the same block ("simple")
go straight into per-class difference arrays; they are never live at a block boundary.  The
others that are defined somewhere ("complex") are numbered apart (their *complex index*, in
register order) and only they enter the block-level work: block summaries, the fixpoints
(forward maybe-defined, backward liveness) as int bitsets over the complex index, and a
backward sweep per block over the instructions that mention them.  Registers that are never
defined are never live and take no part.

Cost: a pass over the instructions, plus per block a fixed number of bitset operations over as
many machine words as the complex registers need (the fixpoints visit each block of an acyclic
CFG once per direction).  Python-level work per block is proportional to the complex registers
the block mentions, never to those that merely pass through it.  The word-level part grows
with blocks × complex registers, the one term that is not linear; on a 114k-instruction kernel
with 30k blocks and 6k complex registers the fixpoints take about a tenth of the analysis.
The result is a :class:`~ptxforge.analysis.liveness.Liveness`.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from itertools import chain, repeat
from operator import and_, attrgetter
from typing import Optional, Union

from ptxforge.ptx import ir
from ptxforge.ptx.types import ALL_TYPES

from ..cfg import ControlFlowGraph, build_cfg
from ..gc_pause import gc_paused
from .dataflow import solve_union, union_over
from .operands import RegisterFacts, operands_touching, register_facts
from .result import Liveness
from .storage import CLASS_POS, N_CLASSES, bits_of, mask_of

__all__ = ["analyze_liveness"]

_CLASS_NAME_OF = attrgetter("type.reg_class.name")
_TYPE_OF = attrgetter("type")
_TYPE_CODE = {id(t): k for k, t in enumerate(ALL_TYPES)}
_CODE_CLASS = bytes(CLASS_POS[t.reg_class.name] for t in ALL_TYPES).ljust(256, b"\0")


def _solve(cfg: ControlFlowGraph, gen: list, kill: list, dall: list) -> tuple[list, list]:
    """Block-level fixpoints over complex-index bitsets; returns the live sets (backward-live
    and maybe-defined) on entry to and on exit from every block.

    The solver keeps ``d_out`` (maybe-defined on exit) and ``l_in`` (backward-live on entry);
    the other side of each block is the union over its neighbours.
    """
    order = cfg.reverse_postorder()
    succ = [b.successors for b in cfg.blocks]
    pred = [b.predecessors for b in cfg.blocks]
    d_out = solve_union(order, pred, succ, dall)
    l_in = solve_union(reversed(order), succ, pred, gen, kill)
    d_in, l_out = union_over(d_out, pred), union_over(l_in, succ)
    return list(map(and_, l_in, d_in)), list(map(and_, l_out, d_out))


def _summaries(blocks, bounds: list, tpos: list, touching: dict, guarded: bytes, qof) -> tuple:
    """Per block, over complex indices: upward-exposed reads (gen), unguarded definitions
    (kill), all definitions (dall); whether the block mentions a complex register; and, for
    the sweep, the complex registers it reads (first read) and defines (first definition)."""
    nb = len(blocks)
    gen, kill, dall = [0] * nb, [0] * nb, [0] * nb
    has_cx = bytearray(nb)
    seen: list = [None] * nb
    for b in range(nb):
        k0, k1 = bounds[b], bounds[b + 1]
        if k0 == k1:
            continue
        has_cx[b] = 1
        e = blocks[b].end
        fu: dict[int, int] = {}  # register -> first read in the block
        fk: dict[int, int] = {}  # register -> first unguarded definition
        fd: dict[int, int] = {}  # register -> first definition
        for j in tpos[k0:k1]:
            dd, uu = touching[j]
            for r in uu:
                if r not in fu:
                    fu[r] = j
            if dd:
                g = guarded[j]
                for r in dd:
                    if r not in fd:
                        fd[r] = j
                    if not g and r not in fk:
                        fk[r] = j
        if fu:
            gen[b] = mask_of([qof[r] for r, p in fu.items() if p <= fk.get(r, e)])
        if fk:
            kill[b] = mask_of([qof[r] for r in fk])
        if fd:
            dall[b] = mask_of([qof[r] for r in fd])
        seen[b] = (fu, fd)
    return gen, kill, dall, has_cx, seen


def analyze_liveness(kernel: Union[ir.Kernel, ControlFlowGraph]) -> Liveness:
    """Run liveness on a kernel (or an already built CFG) and count pressure per instruction.

    Example::

        >>> from ptxforge.ptx import ir
        >>> analyze_liveness(ir.Kernel("k", body=(ir.Instruction("ret"),))).general_at(0)
        0
    """
    with gc_paused():
        return _analyze(kernel if isinstance(kernel, ControlFlowGraph) else build_cfg(kernel))



def _analyze(cfg: ControlFlowGraph) -> Liveness:
    """:func:`analyze_liveness` on a built CFG: register facts, simple registers straight into
    the difference lists, block-level fixpoints and a backward sweep for the complex ones."""
    insts = cfg.instructions
    n = len(insts)
    blocks = cfg.blocks
    facts = register_facts(insts)
    regs = facts.registers
    codes, cls = _class_codes(regs)
    diff, dead, complex_, simple = _split_simple(facts, cls, blocks, n)
    cx = bytearray(len(regs))
    qof = array("i", [-1]) * len(regs)  # register -> complex index
    for q, r in enumerate(complex_):
        cx[r] = 1
        qof[r] = q

    # Where complex registers are mentioned (the only instructions the block summaries and the
    # sweep look at), and per block the range of those instructions in ``tpos``.
    touching = operands_touching(insts, {regs[r].name: r for r in complex_}) if complex_ else {}
    tpos = sorted(touching)
    bounds = [bisect_left(tpos, blk.start) for blk in blocks] + [len(tpos)]
    guarded = facts.guarded
    if complex_:
        gen, kill, dall, has_cx, seen = _summaries(blocks, bounds, tpos, touching, guarded, qof)
        live_in, live_out = _solve(cfg, gen, kill, dall)
        del gen, kill, dall
    else:
        has_cx, seen = bytearray(len(blocks)), []
        live_in = live_out = [0] * len(blocks)
    length, entry = _sweep(blocks, n, complex_, cls, qof, live_in, live_out,
                           (touching, tpos, bounds, seen), guarded, diff, dead)
    return Liveness(
        cfg=cfg,
        registers=tuple(regs),
        index=facts.index,
        reg_class=cls,
        first_def=array("i", facts.first_def),
        def_count=array("i", facts.def_count),
        last_use=array("i", facts.last_use),
        live_in_sets=tuple(live_in),
        live_out_sets=tuple(live_out),
        complex_registers=array("i", complex_),
        diff=tuple(diff),
        dead=tuple(dead),
        guarded=guarded,
        touched_len=length,
        class_used=tuple(_members_by_class(cls)),
        complex=bytes(cx),
        block_has_complex=bytes(has_cx),
        simple=tuple(simple),
        entries=tuple(entry),
        type_codes=codes,
        sparse=(touching, tpos, bounds),
    )


def _class_codes(regs: list) -> tuple[Optional[bytes], bytes]:
    """Per register: its type code into ``ALL_TYPES`` (None when some type is outside the
    registry) and its class position."""
    try:  # registry types (the usual case): a type code per register, the class from it
        codes = bytes(map(_TYPE_CODE.__getitem__, map(id, map(_TYPE_OF, regs))))
        return codes, codes.translate(_CODE_CLASS)
    except KeyError:
        return None, bytes(map(CLASS_POS.__getitem__, map(_CLASS_NAME_OF, regs)))


def _split_simple(facts: RegisterFacts, cls: bytes, blocks: tuple, n: int) -> tuple:
    """``(diff, dead, complex, simple)``: the class-major difference lists holding the simple
    registers' counts, and the complex and simple register indices (ascending).

    "Simple" registers: one unguarded definition, every use after it in the same block.  Such
    a value is live exactly on after(def) .. after(last use - 1), never at a block boundary;
    its counts go straight into per-class difference arrays.  Every other register that is
    defined somewhere ("complex") goes through the block-level work.
    """
    nb = len(blocks)
    end_of = list(chain.from_iterable(repeat(b.end, b.end - b.start) for b in blocks)) if nb > 1 else None
    W = n + 1
    diff = [0] * (W * N_CLASSES)  # class-major [class * W + i]: after(i) - after(i - 1)
    dead = [0] * (W * N_CLASSES)  # the same for results not live after their instruction
    complex_: list[int] = []
    simple: list[int] = []
    early = facts.early
    bases = map([c * W for c in range(N_CLASSES)].__getitem__, cls)
    for r, d, u, k, b in zip(range(len(cls)), facts.first_def, facts.last_use, facts.def_count,
                             bases):
        if d < 0:
            continue  # never defined: never live
        if k != 1 or r in early:
            complex_.append(r)
        elif u < 0:
            dead[b + d] += 1
            dead[b + d + 1] -= 1
            simple.append(r)
        elif end_of is not None and u >= end_of[d]:
            complex_.append(r)
        else:
            diff[b + d] += 1
            diff[b + u] -= 1
            simple.append(r)
    return diff, dead, complex_, simple


def _sweep(blocks: tuple, n: int, complex_: list, cls: bytes, qof: array, live_in: list,
           live_out: list, sparse: tuple, guarded: bytes, diff: list,
           dead: list) -> tuple[array, list]:
    """Backward sweep over the complex registers of each block, adding their counts to
    ``diff`` and ``dead``; returns the live-range length per register (complex ones) and
    per block ``(start * 7, counts live on entry or None)``.

    Values live through a block without being mentioned in it count as a constant over the
    block (and their pass-through runs, in block order, add to their live-range lengths).
    """
    touching, tpos, bounds, seen = sparse
    W = n + 1
    length = array("i", [0]) * len(cls)  # complex registers: instructions at which they are live
    members: list[list[int]] = [[] for _ in range(N_CLASSES)]
    for q, r in enumerate(complex_):
        members[cls[r]].append(q)
    class_masks = [(c, mask_of(m, len(complex_))) for c, m in enumerate(members) if m]
    entry: list = []
    prev_through = 0
    run_start: dict[int, int] = {}  # complex index -> start of its current pass-through run
    for blk in blocks:
        b, s, e = blk.index, blk.start, blk.end
        lm = live_out[b]
        k0, k1 = bounds[b], bounds[b + 1]
        if k0 < k1:
            steps = tpos[k0:k1]
            # the block's reads and first definitions (the summaries'): what it mentions (the
            # order of ``touched`` only orders sums)
            reads, first = seen[b]
            touched = {**reads, **first}
            through = lm & ~mask_of([qof[r] for r in touched]) if lm else 0
        else:
            steps = None
            through = lm
        changed = through ^ prev_through
        if changed:
            for q in bits_of(changed):
                if through >> q & 1:
                    run_start[q] = s
                else:
                    length[complex_[q]] += s - run_start.pop(q)
            prev_through = through
        if steps is None and not lm:
            entry.append((s * N_CLASSES, None))
            continue
        cnt = [0] * N_CLASSES
        if through:
            for c, m in class_masks:
                k = (through & m).bit_count()
                if k:
                    cnt[c] = k
                    diff[c * W + s] += k
                    diff[c * W + e] -= k
        if steps is not None:
            md_in = {r for r in touched if live_in[b] >> qof[r] & 1}  # live on entry, mentioned
            _walk_block(s, e, steps, touching, touched, first, md_in, lm, cnt, cls, qof,
                        guarded, W, diff, dead, length)
        entry.append((s * N_CLASSES, cnt))
    for q, start in run_start.items():
        length[complex_[q]] += n - start
    return length, entry


def _walk_block(s: int, e: int, steps: list, touching: dict, touched: dict, first: dict,
                md_in: set, lm: int, cnt: list, cls: bytes, qof: array, guarded: bytes, W: int,
                diff: list, dead: list, length: array) -> None:
    """The backward walk over one block's instructions ``steps`` (``s`` .. ``e``) that mention
    complex registers (``touched``; ``first``: their first definition in the block; ``md_in``:
    those live on entry; ``lm``: the live-out bitset): their live ranges into ``diff``,
    ``dead`` and ``length``, their count live on entry into ``cnt``."""
    open_: dict[int, int] = {}  # counted register -> last instruction it is in at()
    for r in touched:
        if lm >> qof[r] & 1:
            cnt[cls[r]] += 1
            open_[r] = e - 1
    back = set(open_)  # backward-live (what may be defined on every path is enough)
    for j in reversed(steps):
        dj, uj = touching[j]
        if dj:
            for r in dj:
                if r not in open_:
                    x = cls[r] * W + j
                    dead[x] += 1
                    dead[x + 1] -= 1
                    length[r] += 1
            if not guarded[j]:
                back.difference_update(dj)
        back.update(uj)
        for r in (dj + uj if dj and uj else dj or uj):
            if r in back and (r in md_in or first.get(r, e) < j):
                if r not in open_:
                    open_[r] = j - 1
                    cnt[cls[r]] += 1
            elif r in open_:
                hi = open_.pop(r)
                c = cls[r]
                length[r] += hi - j + 1
                cnt[c] -= 1
                diff[c * W + j] += 1
                diff[c * W + hi + 1] -= 1
    for r, hi in open_.items():
        if hi >= s:
            c = cls[r]
            length[r] += hi - s + 1
            diff[c * W + s] += 1
            diff[c * W + hi + 1] -= 1


def _members_by_class(cls: bytes) -> list[bool]:
    """Per class position: whether some register has that class."""
    present = set(cls)
    return [c in present for c in range(N_CLASSES)]
