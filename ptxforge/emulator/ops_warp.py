"""Warp-level instructions for the interpreter: ``shfl.sync``, ``vote.sync``, ``activemask``,
``redux.sync``, ``match.sync``.

A warp is 32 consecutive threads of a block in linear thread order (x fastest).  The threads
that execute the instruction together are the active ones; ``vote``, ``redux`` and ``match``
combine exactly those (an inactive lane is not counted, as on the hardware when it is outside
the member mask).  Each thread combines the lanes of its own membermask operand that execute
with it, so two half-warps with masks ``0xFFFF`` and ``0xFFFF0000`` reduce apart.  ``shfl``
reads the source lane's register even when that lane is inactive (undefined in the ISA; a lane outside the warp's threads gives the thread's own value).

Example::

    >>> from ptxforge.emulator.ops_warp import shfl_lanes
    >>> import numpy as np
    >>> shfl_lanes("bfly", np.arange(4), 1, 0x1f)[0].tolist()
    [1, 0, 3, 2]
"""

from __future__ import annotations

import numpy as np

from ptxforge.ptx import ir
from ptxforge.ptx import types as T

from .operands import Unsupported, reader, writer
from .values import spread

__all__ = ["FAMILIES", "shfl_lanes"]


def shfl_lanes(mode: str, lane, b, c):
    """The source lane of each thread and whether it was in range (the ISA's ``pval``)."""
    lane = np.asarray(lane).astype(np.int64)
    b = np.asarray(b).astype(np.int64)
    c = np.asarray(c).astype(np.int64)
    segmask = (c >> 8) & 0x1F
    max_lane = (lane & segmask) | ((c & 0x1F) & ~segmask)
    min_lane = lane & segmask
    if mode == "up":
        j = lane - b
        ok = j >= max_lane
    elif mode == "down":
        j = lane + b
        ok = j <= max_lane
    elif mode == "bfly":
        j = lane ^ (b & 0x1F)
        ok = j <= max_lane
    else:
        j = min_lane | ((b & 0x1F) & ~segmask)
        ok = j <= max_lane
    return np.where(ok, j, lane), ok


def _build_shfl(d, inst, symbols):
    mode = next((m for m in ("up", "down", "bfly", "idx") if d.has(m)), None)
    if mode is None:
        raise Unsupported("shfl without a mode")
    dst = inst.operands[0]
    pred = None
    if isinstance(dst, ir.Vector):
        dst, pred = dst.elements[0], dst.elements[1]
    put = writer(dst, T.b32)
    put_p = writer(pred, T.pred) if pred is not None else None
    a, b, c = (reader(op, T.b32, symbols) for op in inst.operands[1:4])

    def run(m, idx):
        lane = m.lane[idx]
        j, ok = shfl_lanes(mode, lane, spread(b(m, idx), idx.shape),
                           spread(c(m, idx), idx.shape))
        src = m.warp_base[idx] + j
        valid = (j < m.warp_len[idx])
        src = np.where(valid, src, idx)
        put(m, idx, spread(a(m, src), idx.shape))
        if put_p is not None:
            put_p(m, idx, ok & valid)
    return run


def _per_warp(m, idx):
    """Dense warp numbers of the active threads (0..k-1) and the count k."""
    warps, inverse = np.unique(m.warp_id[idx], return_inverse=True)
    return inverse, len(warps)


_LANES = np.arange(32, dtype=np.uint32)


def _mask_reader(inst, pos: int, symbols):
    """The membermask operand at ``pos`` (a full warp when the form has none)."""
    if len(inst.operands) > pos:
        return reader(inst.operands[pos], T.b32, symbols)
    return lambda m, idx: np.uint32(0xFFFFFFFF)


def _members(m, idx, mask):
    """Each active thread's warp row and the lanes it combines: (w, k, sel).

    ``sel[t, l]`` is true when lane ``l`` is executing with thread ``t`` and is in ``t``'s
    membermask, so two halves of a warp with masks 0xFFFF and 0xFFFF0000 combine apart.
    """
    w, k = _per_warp(m, idx)
    lane = m.lane[idx]
    present = np.zeros((k, 32), bool)
    present[w, lane] = True
    bits = spread(np.asarray(mask).astype(np.uint32), idx.shape)
    sel = ((bits[:, None] >> _LANES) & np.uint32(1)).astype(bool) & present[w]
    return w, k, sel


def _table(w, k, lane, values, dtype):
    """A (k, 32) table of each warp's values by lane."""
    table = np.zeros((k, 32), dtype)
    table[w, lane] = values
    return table


def _build_vote(d, inst, symbols):
    mode = next((x for x in ("all", "any", "uni", "ballot") if d.has(x)), None)
    if mode is None:
        raise Unsupported("vote without a mode")
    get = reader(inst.operands[1], T.pred, symbols)
    mask = _mask_reader(inst, 2, symbols)
    put = writer(inst.operands[0], T.b32 if mode == "ballot" else T.pred)

    def run(m, idx):
        p = spread(get(m, idx), idx.shape).astype(bool)
        w, k, sel = _members(m, idx, mask(m, idx))
        votes = _table(w, k, m.lane[idx], p, bool)[w] & sel
        if mode == "ballot":
            put(m, idx, (votes.astype(np.uint32) << _LANES).sum(axis=1, dtype=np.uint32))
            return
        trues = votes.sum(axis=1)
        total = sel.sum(axis=1)
        result = {"all": trues == total, "any": trues > 0,
                  "uni": (trues == 0) | (trues == total)}[mode]
        put(m, idx, result)
    return run


def _build_activemask(d, inst, symbols):
    put = writer(inst.operands[0], T.b32)

    def run(m, idx):
        w, k = _per_warp(m, idx)
        acc = np.zeros(k, np.uint32)
        np.bitwise_or.at(acc, w, np.uint32(1) << m.lane[idx].astype(np.uint32))
        put(m, idx, acc[w])
    return run


def _build_redux(d, inst, symbols):
    op = next((x for x in ("add", "min", "max", "and", "or", "xor") if d.has(x)), None)
    if op is None or d.type.is_float:
        raise Unsupported("redux.sync form")
    ty = d.type
    get = reader(inst.operands[1], ty, symbols)
    mask = _mask_reader(inst, 2, symbols)
    put = writer(inst.operands[0], ty)
    ufunc = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
             "or": np.bitwise_or, "xor": np.bitwise_xor}[op]

    def run(m, idx):
        v = spread(get(m, idx), idx.shape)
        w, k, sel = _members(m, idx, mask(m, idx))
        rows = _table(w, k, m.lane[idx], v, v.dtype)[w]
        if op == "add":
            total = np.where(sel, rows.astype(np.int64), 0).sum(axis=1)
            put(m, idx, total.astype(np.uint64).astype(v.dtype))
            return
        info = np.iinfo(v.dtype)
        identity = {"min": info.max, "max": info.min, "and": -1 if info.min < 0 else info.max,
                    "or": 0, "xor": 0}[op]
        put(m, idx, ufunc.reduce(np.where(sel, rows, v.dtype.type(identity)), axis=1))
    return run


def _build_match(d, inst, symbols):
    mode = "all" if d.has("all") else "any"
    ty = d.type
    get = reader(inst.operands[1], ty, symbols)
    mask = _mask_reader(inst, 2, symbols)
    dst = inst.operands[0]
    pred = None
    if isinstance(dst, ir.Vector):
        dst, pred = dst.elements[0], dst.elements[1]
    put = writer(dst, T.b32)
    put_p = writer(pred, T.pred) if pred is not None else None

    def run(m, idx):
        v = spread(get(m, idx), idx.shape)
        w, k, sel = _members(m, idx, mask(m, idx))
        eq = (_table(w, k, m.lane[idx], v, v.dtype)[w] == v[:, None]) & sel
        out = (eq.astype(np.uint32) << _LANES).sum(axis=1, dtype=np.uint32)
        same = (eq == sel).all(axis=1)
        if mode == "all":
            out = np.where(same, out, np.uint32(0))
        put(m, idx, out)
        if put_p is not None:
            put_p(m, idx, same)
    return run


def _nop(d, inst, symbols):
    return lambda m, idx: None


FAMILIES = {
    "shfl": _build_shfl, "vote": _build_vote, "activemask": _build_activemask,
    "redux": _build_redux, "match": _build_match,
}
