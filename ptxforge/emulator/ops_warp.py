"""Warp-level instructions for the interpreter: ``shfl.sync``, ``vote.sync``, ``activemask``,
``redux.sync``, ``match.sync``.

A warp is 32 consecutive threads of a block in linear thread order (x fastest).  The threads
that execute the instruction together are the active ones; ``vote``, ``redux`` and ``match``
combine exactly those (an inactive lane is not counted, as on the hardware when it is outside
the member mask).  ``shfl`` reads the source lane's register even when that lane is inactive
(undefined in the ISA; a lane outside the warp's threads gives the thread's own value).

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
        j, ok = shfl_lanes(mode, lane, np.broadcast_to(b(m, idx), idx.shape),
                           np.broadcast_to(c(m, idx), idx.shape))
        src = m.warp_base[idx] + j
        valid = (j < m.warp_len[idx])
        src = np.where(valid, src, idx)
        put(m, idx, np.broadcast_to(a(m, src), idx.shape))
        if put_p is not None:
            put_p(m, idx, ok & valid)
    return run


def _per_warp(m, idx):
    """Dense warp numbers of the active threads (0..k-1) and the count k."""
    warps, inverse = np.unique(m.warp_id[idx], return_inverse=True)
    return inverse, len(warps)


def _build_vote(d, inst, symbols):
    mode = next((x for x in ("all", "any", "uni", "ballot") if d.has(x)), None)
    if mode is None:
        raise Unsupported("vote without a mode")
    get = reader(inst.operands[1], T.pred, symbols)
    put = writer(inst.operands[0], T.b32 if mode == "ballot" else T.pred)

    def run(m, idx):
        p = np.broadcast_to(get(m, idx), idx.shape).astype(bool)
        w, k = _per_warp(m, idx)
        if mode == "ballot":
            acc = np.zeros(k, np.uint32)
            np.bitwise_or.at(acc, w, (p.astype(np.uint32) << m.lane[idx].astype(np.uint32)))
            put(m, idx, acc[w])
            return
        trues = np.bincount(w, weights=p, minlength=k)
        total = np.bincount(w, minlength=k)
        result = {"all": trues == total, "any": trues > 0,
                  "uni": (trues == 0) | (trues == total)}[mode]
        put(m, idx, result[w])
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
    put = writer(inst.operands[0], ty)
    ufunc = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
             "or": np.bitwise_or, "xor": np.bitwise_xor}[op]

    def run(m, idx):
        v = np.broadcast_to(get(m, idx), idx.shape)
        w, k = _per_warp(m, idx)
        out = np.empty(k, v.dtype)
        for g in range(k):
            sel = v[w == g]
            out[g] = ufunc.reduce(sel.astype(np.int64) if op == "add" else sel) \
                if op != "add" else np.asarray(sel.astype(np.int64).sum()).astype(v.dtype)
        put(m, idx, out[w])
    return run


def _build_match(d, inst, symbols):
    mode = "all" if d.has("all") else "any"
    ty = d.type
    get = reader(inst.operands[1], ty, symbols)
    dst = inst.operands[0]
    pred = None
    if isinstance(dst, ir.Vector):
        dst, pred = dst.elements[0], dst.elements[1]
    put = writer(dst, T.b32)
    put_p = writer(pred, T.pred) if pred is not None else None

    def run(m, idx):
        v = np.broadcast_to(get(m, idx), idx.shape)
        w, k = _per_warp(m, idx)
        lanes = m.lane[idx].astype(np.uint32)
        out = np.zeros(idx.shape, np.uint32)
        same = np.zeros(idx.shape, bool)
        for g in range(k):
            sel = np.flatnonzero(w == g)
            vals = v[sel]
            for s in sel:
                eq = sel[vals == v[s]]
                mask = np.bitwise_or.reduce(np.uint32(1) << lanes[eq])
                out[s] = mask
            if mode == "all":
                uniform = bool(np.all(vals == vals[0]))
                same[sel] = uniform
                if not uniform:
                    out[sel] = 0
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
