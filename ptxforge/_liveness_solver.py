"""The liveness solver: :func:`analyze_liveness`.

Registers with one unguarded definition and every read after it in the same block ("simple")
go straight into per-class difference arrays; the others ("complex") get block summaries, the
block-level fixpoints (backward liveness, forward maybe-defined, as int bitsets) and a
backward sweep per block.  The result is a :class:`~ptxforge.liveness.Liveness`.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import deque
from itertools import chain, repeat
from operator import attrgetter, ge
from typing import Optional, Union

from . import ir
from ._liveness_operands import operands_touching, register_facts
from ._liveness_result import Liveness
from ._liveness_storage import CLASS_POS, N_CLASSES, TO_DIGITS, bits_of, mask_of
from .cfg import ControlFlowGraph, build_cfg
from .types import ALL_TYPES

__all__ = ["analyze_liveness"]

_CLASS_NAME_OF = attrgetter("type.reg_class.name")
_TYPE_OF = attrgetter("type")
_TYPE_CODE = {id(t): k for k, t in enumerate(ALL_TYPES)}
_CODE_CLASS = bytes(CLASS_POS[t.reg_class.name] for t in ALL_TYPES).ljust(256, b"\0")


def _solve(cfg: ControlFlowGraph, gen: list, kill, dall: list):
    """Block-level fixpoints: backward liveness and forward maybe-defined, as int bitsets.

    ``kill(b)`` gives block ``b``'s kill mask (only asked for when something is live out of b).
    """
    nb = len(cfg.blocks)
    order = cfg.reverse_postorder()
    succ = [b.successors for b in cfg.blocks]
    pred = [b.predecessors for b in cfg.blocks]
    # forward: maybe-defined
    d_in, d_out = [0] * nb, [0] * nb
    work, queued = deque(order), [True] * nb
    while work:
        b = work.popleft()
        queued[b] = False
        x = 0
        for p in pred[b]:
            x |= d_out[p]
        d_in[b] = x
        y = x | dall[b]
        if y != d_out[b]:
            d_out[b] = y
            for s in succ[b]:
                if not queued[s]:
                    queued[s] = True
                    work.append(s)
    # backward: liveness
    l_in, l_out = [0] * nb, [0] * nb
    work, queued = deque(reversed(order)), [True] * nb
    while work:
        b = work.popleft()
        queued[b] = False
        x = 0
        for s in succ[b]:
            x |= l_in[s]
        l_out[b] = x
        y = gen[b] | (x & ~kill(b)) if x else gen[b]
        if y != l_in[b]:
            l_in[b] = y
            for p in pred[b]:
                if not queued[p]:
                    queued[p] = True
                    work.append(p)
    return l_in, l_out, d_in, d_out


def analyze_liveness(kernel: Union[ir.Kernel, ControlFlowGraph]) -> Liveness:
    """Run liveness on a kernel (or an already built CFG) and count pressure per instruction.

    Example::

        >>> from ptxforge import ir
        >>> analyze_liveness(ir.Kernel("k", body=(ir.Instruction("ret"),))).general_at(0)
        0
    """
    cfg = kernel if isinstance(kernel, ControlFlowGraph) else build_cfg(kernel)
    insts = cfg.instructions
    n = len(insts)
    blocks = cfg.blocks
    nb = len(blocks)
    index, regs, guarded, fdl, dcl, lul, early = register_facts(insts)
    operands: list = [None, None]
    nr = len(regs)
    try:  # registry types (the usual case): a type code per register, the class from it
        codes: Optional[bytes] = bytes(map(_TYPE_CODE.__getitem__, map(id, map(_TYPE_OF, regs))))
        cls = codes.translate(_CODE_CLASS)
    except KeyError:
        codes = None
        cls = bytes(map(CLASS_POS.__getitem__, map(_CLASS_NAME_OF, regs)))
    first_def = array("i", fdl)
    def_count = array("i", dcl)
    last_use = array("i", lul)

    # "Simple" registers: one unguarded definition, every use after it in the same block.  Such
    # a value is live exactly on after(def) .. after(last use - 1), never at a block boundary;
    # its counts go straight into per-class difference arrays.  Every other register that is
    # defined somewhere ("complex") goes through the backward sweep below.
    end_of = list(chain.from_iterable(repeat(b.end, b.end - b.start) for b in blocks)) if nb > 1 else None
    W = n + 1
    diff = [0] * (W * N_CLASSES)  # class-major [class * W + i]: after(i) - after(i - 1)
    dead = [0] * (W * N_CLASSES)  # the same for results not live after their instruction
    length = array("i", [0]) * nr  # complex registers: instructions live in blocks mentioning them
    complex_: list[int] = []
    undefined: list[int] = []
    simple: list[int] = []
    bases = map([c * W for c in range(N_CLASSES)].__getitem__, cls)
    if nb > 1:
        for r, d, u, k, b in zip(range(nr), fdl, lul, dcl, bases):
            if d < 0:
                undefined.append(r)  # never defined: never live
            elif k != 1 or r in early:
                complex_.append(r)
            elif u < 0:
                dead[b + d] += 1
                dead[b + d + 1] -= 1
                simple.append(r)
            elif u >= end_of[d]:
                complex_.append(r)
            else:
                diff[b + d] += 1
                diff[b + u] -= 1
                simple.append(r)
    else:  # one block: every use lies in the block of the definition
        for r, d, u, k, b in zip(range(nr), fdl, lul, dcl, bases):
            if d < 0:
                undefined.append(r)
            elif k != 1 or r in early:
                complex_.append(r)
            elif u < 0:
                dead[b + d] += 1
                dead[b + d + 1] -= 1
                simple.append(r)
            else:
                diff[b + d] += 1
                diff[b + u] -= 1
                simple.append(r)
    del fdl, dcl, lul, early, end_of
    cx = bytearray(nr)
    for r in complex_:
        cx[r] = 1
    # Only complex and never-defined registers can be read before being written in a block.
    cand = complex_ + undefined

    # Where complex and never-defined registers are mentioned (the only instructions the block
    # summaries and the sweep need to look at).
    touching = operands_touching(insts, {regs[r].name: r for r in cand}) if cand else {}
    tpos = sorted(touching)
    key = first_def.__getitem__

    # Block summaries: upward-exposed reads (gen), definitions, first definitions.
    gen, dall, firsts, firsts_u, kills = [], [], [], [], [None] * nb
    has_cx = bytearray(nb)
    for blk in blocks:
        s, e = blk.start, blk.end
        if not cand:
            gen.append(0)
            if nb == 1:  # every defined register is defined in the block
                dall.append(int(bytes(map(ge, first_def, repeat(0)))[::-1].translate(TO_DIGITS) or b"0", 2))
            else:  # every register is simple: defined once, and ascending by definition
                dall.append(mask_of(simple[bisect_left(simple, s, key=key):bisect_left(simple, e, key=key)], nr))
            firsts.append(None)
            firsts_u.append(None)
            continue
        first_b: dict[int, int] = {}
        fu_b: dict[int, int] = {}
        fk: dict[int, int] = {}
        for j in tpos[bisect_left(tpos, s):bisect_left(tpos, e)]:
            dd, uu = touching[j]
            for r in uu:
                if r not in fu_b:
                    fu_b[r] = j
            for r in dd:
                if r not in first_b:
                    first_b[r] = j
                if r not in fk and not guarded[j]:
                    fk[r] = j
        g = [r for r, p in fu_b.items() if p <= fk.get(r, e)]
        gen.append(mask_of(g, nr))
        in_block = simple[bisect_left(simple, s, key=key):bisect_left(simple, e, key=key)]
        dall.append(mask_of(chain(in_block, first_b), nr))
        firsts.append(first_b)
        firsts_u.append(fu_b)
        kills[blk.index] = fk
        if complex_ and (any(map(cx.__getitem__, first_b)) or any(map(cx.__getitem__, fu_b))):
            has_cx[blk.index] = 1
    kill_masks: dict[int, int] = {}

    def kill(b: int) -> int:
        m = kill_masks.get(b)
        if m is None:
            m = kill_masks[b] = mask_of([r for r in kills[b] if cx[r]], nr)
        return m

    l_in, l_out, d_in, d_out = _solve(cfg, gen, kill, dall)
    del kills, kill_masks

    # Backward sweep over the complex registers of each block; values live through a block
    # without being mentioned in it count as a constant over the block.
    members: list[list[int]] = [[] for _ in range(N_CLASSES)]
    for r in complex_:
        members[cls[r]].append(r)
    class_masks = [mask_of(m, nr) if m else 0 for m in members]
    entry: list = []
    for blk in blocks:
        b, s, e = blk.index, blk.start, blk.end
        lo, mo = l_out[b], d_out[b]
        sweep = has_cx[b]
        lm = lo & mo
        if not lm and not sweep:
            entry.append((s * N_CLASSES, None))
            continue
        first = firsts[b]
        if sweep:
            tmask = mask_of([r for r in chain(first, firsts_u[b]) if cx[r]], nr)
        else:
            tmask = 0
        through = lm & ~tmask
        cnt = [(through & m).bit_count() if m else 0 for m in class_masks]
        if through:
            for c in range(N_CLASSES):
                if cnt[c]:
                    diff[c * W + s] += cnt[c]
                    diff[c * W + e] -= cnt[c]
        if sweep:
            back = set(bits_of(lo & tmask))
            md_in = set(bits_of(d_in[b] & tmask))
            open_: dict[int, int] = {}  # counted register -> last instruction it is in at()
            for r in back:
                if r in md_in or r in first:
                    cnt[cls[r]] += 1
                    open_[r] = e - 1
            for j in reversed(tpos[bisect_left(tpos, s):bisect_left(tpos, e)]):
                dj, uj = touching[j]
                if dj:
                    for r in dj:
                        if cx[r] and r not in open_:
                            x = cls[r] * W + j
                            dead[x] += 1
                            dead[x + 1] -= 1
                            length[r] += 1
                    if not guarded[j]:
                        back.difference_update(dj)
                back.update(uj)
                for r in (dj + uj if dj and uj else dj or uj):
                    if not cx[r]:
                        continue
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
        entry.append((s * N_CLASSES, cnt))

    class_used = tuple(bool(m) for m in _members_by_class(cls))
    return Liveness(
        cfg=cfg,
        registers=tuple(regs),
        index=index,
        reg_class=cls,
        first_def=first_def,
        def_count=def_count,
        last_use=last_use,
        live_in_bits=tuple(l_in),
        live_out_bits=tuple(l_out),
        defined_in_bits=tuple(d_in),
        defined_out_bits=tuple(d_out),
        diff=diff,
        dead=dead,
        operands=operands,
        guarded=guarded,
        touched=[None] * nb,
        touched_len=length,
        class_used=class_used,
        complex=bytes(cx),
        block_has_complex=bytes(has_cx),
        simple=simple,
        entries=entry,
        type_codes=codes,
        sparse=(touching, tpos) if cand else None,
    )


def _members_by_class(cls: bytes) -> list[bool]:
    """Per class position: whether some register has that class."""
    present = set(cls)
    return [c in present for c in range(N_CLASSES)]
