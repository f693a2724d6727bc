"""Warp-wide matrix instructions and asynchronous copies for the interpreter: ``mma.sync``,
``ldmatrix`` / ``stmatrix`` and ``cp.async`` with its commit and wait groups.

``mma.sync`` gathers every lane's fragment registers into whole A, B and C tiles with the
fragment layouts of the PTX ISA (9.7.14.5, "Matrix Fragments for mma.m16n8k*"), multiplies
them and scatters D back.  The layouts share one rule, with ``g = laneid >> 2``,
``t = laneid % 4`` and ``e`` elements packed in each register: element ``i`` of register
``r`` of A sits at row ``g + 8 * (r & 1)``, column ``t * e + i + 4 * e * (r >> 1)``; of B at
row ``t * e + i + 4 * e * r``, column ``g``; accumulator element ``j`` (over all registers) at
row ``g + 8 * (j >> 1)``, column ``2 * t + (j & 1)``.  Products are exact and summed in f64
(integers: exactly, wrapped or ``.satfinite``-clamped to s32), then rounded once to the
accumulator type: bit-exact with the hardware whenever the sum is exact (integer-valued
inputs), within the rounding of the accumulation otherwise.  tf32 operands ignore the low 13
bits of their f32 encoding.

``cp.async`` reads its source when issued and writes shared memory only when the thread waits
for its group (``cp.async.wait_group N`` completes every committed group but the N newest,
``wait_all`` every copy), so a kernel that reads the tile before waiting sees the old bytes.

Example::

    >>> from ptxforge.emulator.ops_tensor import fragment_coords
    >>> rows, cols = fragment_coords("a", 16, 8, 16, 4, 2)
    >>> rows[5].tolist()   # lane 5: g = 1, t = 1
    [[1, 1], [9, 9], [1, 1], [9, 9]]
    >>> cols[5].tolist()
    [[2, 3], [2, 3], [10, 11], [10, 11]]
"""

from __future__ import annotations

import re

import numpy as np

from ptxforge.ptx import ir
from ptxforge.ptx import types as T

from .memory import EmulationError
from .operands import Unsupported, address, reader, writer
from .ops_sync import cp_async_arrive
from .values import spread

__all__ = ["FAMILIES", "fragment_coords", "MMA_SHAPES"]

#: (shape, A/B element type) -> (A registers, B registers, accumulator elements): the forms
#: the DSL emits (ptxforge.dsl.tensor.MMA_FORMS), all of which the interpreter runs.
MMA_SHAPES = {
    ("m16n8k4", "tf32"): (2, 1, 4), ("m16n8k8", "tf32"): (4, 2, 4),
    ("m16n8k8", "f16"): (2, 1, 4), ("m16n8k8", "bf16"): (2, 1, 4),
    ("m16n8k16", "f16"): (4, 2, 4), ("m16n8k16", "bf16"): (4, 2, 4),
    ("m16n8k16", "s8"): (2, 1, 4), ("m16n8k16", "u8"): (2, 1, 4),
    ("m16n8k32", "s8"): (4, 2, 4), ("m16n8k32", "u8"): (4, 2, 4),
    ("m8n8k16", "s8"): (1, 1, 2), ("m8n8k16", "u8"): (1, 1, 2),
    ("m8n8k4", "f64"): (1, 1, 2),
}
_ELEMS = {"f16": 2, "bf16": 2, "tf32": 1, "s8": 4, "u8": 4, "f64": 1}
_SHAPE = re.compile(r"^m(\d+)n(\d+)k(\d+)$")


def fragment_coords(role: str, m: int, n: int, k: int, nregs: int, per: int):
    """(rows, cols) of every lane's fragment elements, each an int array (32, nregs, per).

    ``role`` "a" (an m x k tile), "b" (k x n) or "c" (m x n, ``per`` elements per register
    counted over all registers in order).
    """
    lane = np.arange(32)[:, None, None]
    r = np.arange(nregs)[None, :, None]
    i = np.arange(per)[None, None, :]
    g, t = lane >> 2, lane % 4
    if role == "a":
        rows = g + 8 * (r & 1) + 0 * i
        cols = t * per + i + 4 * per * (r >> 1)
    elif role == "b":
        rows = t * per + i + 4 * per * r
        cols = g + 0 * r + 0 * i
    else:
        j = r * per + i
        rows = g + 8 * (j >> 1)
        cols = 2 * t + (j & 1)
    rows, cols = np.broadcast_arrays(rows, cols)
    if rows.max() >= (m if role != "b" else k) or cols.max() >= (k if role == "a" else n):
        raise Unsupported(f"fragment layout of {role} does not fit m{m}n{n}k{k}")
    return rows.copy(), cols.copy()


def _whole_warps(m, idx, what: str) -> int:
    """The number of whole warps in ``idx``; a partial warp is an error (``.aligned``)."""
    lanes = m.lane[idx]
    if len(idx) % 32 or not np.array_equal(lanes, np.tile(np.arange(32), len(idx) // 32)):
        raise EmulationError(f"{m.where('')}: {what} needs all 32 threads of a warp to execute "
                             f"it together; {len(idx)} threads did")
    return len(idx) // 32


def _elements(bits: np.ndarray, ty: str) -> np.ndarray:
    """(W, 32, nregs) register bits -> (W, 32, nregs, per) element values (float64 or int64)."""
    if ty == "f64":
        return bits.astype(np.uint64).view(np.float64)[..., None]
    b32 = bits.astype(np.uint32)
    if ty == "tf32":
        return (b32 & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)[..., None]
    raw = np.ascontiguousarray(b32).view(np.uint8).reshape(*b32.shape, 4)
    if ty in ("s8", "u8"):
        return raw.view(np.int8 if ty == "s8" else np.uint8).astype(np.int64)
    halves = raw.view(np.uint16)
    if ty == "f16":
        return halves.view(np.float16).astype(np.float64)
    return (halves.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)


def _regs(op, bits: int, symbols):
    regs = list(op.elements) if isinstance(op, ir.Vector) else [op]
    ty = T.b64 if bits == 64 else T.b32
    return [reader(r, ty, symbols) for r in regs], [writer(r, ty) for r in regs]


def _build_mma(d, inst, symbols):
    shape = next((x for x in d.mods if _SHAPE.match(x)), None)
    if not d.has("sync") or shape is None or not d.has("row") or not d.has("col"):
        raise Unsupported("mma.sync.aligned.<shape>.row.col only")
    if len(d.types) != 4 and not (len(d.types) == 2 and d.has("tf32")):
        raise Unsupported("mma with its .dtype.atype.btype.ctype types")
    dtype, ctype = d.types[0].name, d.types[-1].name
    ab = ["tf32", "tf32"] if d.has("tf32") else [d.types[1].name, d.types[2].name]
    if ab[0] != ab[1] and not set(ab) <= {"s8", "u8"}:
        raise Unsupported(f"mma with .{ab[0]} and .{ab[1]} operands")
    if dtype != ctype or (shape, ab[0]) not in MMA_SHAPES:
        raise Unsupported(f"mma form {shape}.{dtype}.{ab[0]}.{ab[1]}.{ctype}")
    na, nb, nc = MMA_SHAPES[(shape, ab[0])]
    sm = _SHAPE.match(shape)
    assert sm is not None  # (shape, type) is in MMA_SHAPES
    mm, nn, kk = (int(x) for x in sm.groups())
    per = _ELEMS[ab[0]]
    ab_bits = 64 if ab[0] == "f64" else 32
    c_bits = 64 if ctype == "f64" else 32
    nacc = nc // 2 if ctype == "f16" else nc
    ops = inst.operands
    a_get, _ = _regs(ops[1], ab_bits, symbols)
    b_get, _ = _regs(ops[2], ab_bits, symbols)
    c_get, _ = _regs(ops[3], c_bits, symbols)
    _, d_put = _regs(ops[0], c_bits, symbols)
    if (len(a_get), len(b_get), len(c_get), len(d_put)) != (na, nb, nacc, nacc):
        raise Unsupported(f"{shape}.{ab[0]} takes {na} A, {nb} B and {nacc} C/D registers")
    a_rc = fragment_coords("a", mm, nn, kk, na, per)
    b_rc = fragment_coords("b", mm, nn, kk, nb, per)
    c_rc = fragment_coords("c", mm, nn, kk, nacc, nc // nacc)
    integer, sat = ab[0] in ("s8", "u8"), d.has("satfinite")
    a_ty, b_ty = ab

    def gather(getters, m, idx, w):
        cols = [spread(np.asarray(g(m, idx)), idx.shape) for g in getters]
        return np.stack(cols, axis=-1).reshape(w, 32, len(getters))

    def run(m, idx):
        w = _whole_warps(m, idx, "mma.sync")
        dt = np.int64 if integer else np.float64
        a = np.zeros((w, mm, kk), dt)
        b = np.zeros((w, kk, nn), dt)
        c = np.zeros((w, mm, nn), dt)
        a[:, a_rc[0], a_rc[1]] = _elements(gather(a_get, m, idx, w), a_ty)
        b[:, b_rc[0], b_rc[1]] = _elements(gather(b_get, m, idx, w), b_ty)
        cbits = gather(c_get, m, idx, w)
        if ctype == "f32":
            cvals = cbits.astype(np.uint32).view(np.float32).astype(np.float64)[..., None]
        elif ctype == "f64":
            cvals = cbits.astype(np.uint64).view(np.float64)[..., None]
        elif ctype == "s32":
            cvals = cbits.astype(np.uint32).view(np.int32).astype(np.int64)[..., None]
        else:
            cvals = _elements(cbits, "f16")
        c[:, c_rc[0], c_rc[1]] = cvals
        out = np.matmul(a, b) + c
        vals = out[:, c_rc[0], c_rc[1]]                      # (W, 32, nacc, per)
        if ctype == "f32":
            bits = vals.astype(np.float32).view(np.uint32)[..., 0]
        elif ctype == "f64":
            bits = vals.view(np.uint64)[..., 0]
        elif ctype == "s32":
            vals = vals[..., 0]
            vals = np.clip(vals, -(1 << 31), (1 << 31) - 1) if sat else vals
            bits = vals.astype(np.uint64).astype(np.uint32)
        else:
            halves = np.ascontiguousarray(vals.astype(np.float16)).view(np.uint16)
            bits = halves.astype(np.uint32)[..., 0] | (halves.astype(np.uint32)[..., 1] << 16)
        bits = bits.reshape(w * 32, nacc)
        for j, put in enumerate(d_put):
            put(m, idx, bits[:, j])
    return run


def _matrix_space(d, inst) -> str:
    if "shared" in inst.opcode.split(".") or ".shared::cta" in inst.opcode:
        return "shared"
    if any(x in d.mods for x in ("global", "local", "const", "param")):
        raise Unsupported("ldmatrix/stmatrix outside shared memory")
    return "generic"


def _matrix_count(d) -> int:
    num = next((int(x[1:]) for x in d.mods if x in ("x1", "x2", "x4")), None)
    if num is None or not d.has("m8n8") or d.type.bits != 16:
        raise Unsupported("m8n8.x1/.x2/.x4 of .b16 only")
    return num


def _row_addresses(m, idx, addr, w, num):
    """The 16-byte row addresses of the ``num`` 8x8 matrices: lane 8*j + r gives row r of j."""
    at = addr(m, idx).reshape(w, 32)[:, : 8 * num]
    owner = idx.reshape(w, 32)[:, : 8 * num]
    return at.reshape(-1), owner.reshape(-1)


def _lane_pairs(trans: bool):
    """(row, col) in an 8x8 matrix of each lane's low and high half: arrays (32, 2)."""
    lane = np.arange(32)[:, None]
    k = np.arange(2)[None, :]
    if trans:
        return 2 * (lane % 4) + k, spread(lane // 4, (32, 2))
    return spread(lane // 4, (32, 2)), 2 * (lane % 4) + k


def _build_ldmatrix(d, inst, symbols):
    num, space = _matrix_count(d), _matrix_space(d, inst)
    dst = list(inst.operands[0].elements) if isinstance(inst.operands[0], ir.Vector) \
        else [inst.operands[0]]
    if len(dst) != num:
        raise Unsupported(f"ldmatrix .x{num} into {len(dst)} registers")
    puts = [writer(r, T.b32) for r in dst]
    addr = address(inst.operands[1], symbols)
    rows, cols = _lane_pairs(d.has("trans"))
    at = inst.opcode

    def run(m, idx):
        w = _whole_warps(m, idx, "ldmatrix")
        where, owner = _row_addresses(m, idx, addr, w, num)
        raw = m.mem.load(space, where, owner, 16, m.where(at))
        mats = raw.view(np.uint16).reshape(w, num, 8, 8)
        for j, put in enumerate(puts):
            pair = mats[:, j][:, rows, cols].astype(np.uint32)       # (W, 32, 2)
            put(m, idx, (pair[..., 0] | (pair[..., 1] << np.uint32(16))).reshape(-1))
    return run


def _build_stmatrix(d, inst, symbols):
    num, space = _matrix_count(d), _matrix_space(d, inst)
    src = list(inst.operands[1].elements) if isinstance(inst.operands[1], ir.Vector) \
        else [inst.operands[1]]
    if len(src) != num:
        raise Unsupported(f"stmatrix .x{num} from {len(src)} registers")
    gets = [reader(r, T.b32, symbols) for r in src]
    addr = address(inst.operands[0], symbols)
    rows, cols = _lane_pairs(d.has("trans"))
    at = inst.opcode

    def run(m, idx):
        w = _whole_warps(m, idx, "stmatrix")
        mats = np.zeros((w, num, 8, 8), np.uint16)
        for j, get in enumerate(gets):
            v = spread(np.asarray(get(m, idx)), idx.shape).astype(np.uint32)
            v = v.reshape(w, 32)
            mats[:, j][:, rows[:, 0], cols[:, 0]] = (v & 0xFFFF).astype(np.uint16)
            mats[:, j][:, rows[:, 1], cols[:, 1]] = (v >> 16).astype(np.uint16)
        where, owner = _row_addresses(m, idx, addr, w, num)
        data = np.ascontiguousarray(mats.reshape(w * num * 8, 8)).view(np.uint8)
        m.mem.store(space, where, owner, data, m.where(at))
    return run


def _build_cp(d, inst, symbols):
    if d.has("async") and d.has("mbarrier") and d.has("arrive"):
        return cp_async_arrive(d, inst, symbols, lambda m, idx: _complete(m, idx, None))
    if not d.has("async") or d.has("bulk") or d.has("tensor") or d.has("mbarrier"):
        raise Unsupported("cp.async (ca/cg, shared <- global) and its groups only")
    if d.has("commit_group"):
        def commit(m, idx):
            m.async_group[idx] += 1
        return commit
    if d.has("wait_group", "wait_all"):
        keep = 0 if d.has("wait_all") else int(inst.operands[0].value)
        wait_all = d.has("wait_all")

        def wait(m, idx):
            if wait_all:
                m.async_group[idx] += 1
            _complete(m, idx, keep)
        return wait
    if not (d.has("ca") or d.has("cg")) or not d.has("global") \
            or "shared" not in inst.opcode.replace("::", ".").split("."):
        raise Unsupported("cp.async.{ca,cg}.shared.global only")
    ops = inst.operands
    size_op = ops[2]
    if not isinstance(size_op, ir.Immediate) or int(size_op.value) not in (4, 8, 16):
        raise Unsupported("cp.async copies 4, 8 or 16 bytes")
    size = int(size_op.value)
    if d.has("cg") and size != 16:
        raise Unsupported("cp.async.cg copies 16 bytes")
    dst, src = address(ops[0], symbols), address(ops[1], symbols)
    src_size = reader(ops[3], T.u32, symbols) if len(ops) > 3 else None
    at = inst.opcode

    def issue(m, idx):
        here = m.where(at)
        data = m.mem.load("global", src(m, idx), idx, size, here)
        if src_size is not None:
            keep = spread(np.asarray(src_size(m, idx)), idx.shape).astype(np.int64)
            data[np.arange(size)[None, :] >= keep[:, None]] = 0
        m.async_pending.append((idx.copy(), m.async_group[idx].copy(), dst(m, idx), data, here))
    return issue


def _complete(m, idx, keep) -> None:
    """Write the copies of threads ``idx`` in every group committed before their newest ``keep``
    (``None``: every copy they issued, committed or not)."""
    mine = np.zeros(m.n, bool)
    mine[idx] = True
    # groups numbered below this are complete
    limit = m.async_group - keep if keep is not None else np.full(m.n, np.iinfo(np.int64).max)
    left = []
    for threads, groups, dst, data, here in m.async_pending:
        done = mine[threads] & (groups < limit[threads])
        if done.any():
            m.mem.store("shared", dst[done], threads[done], data[done], here)
        if not done.all():
            rest = ~done
            left.append((threads[rest], groups[rest], dst[rest], data[rest], here))
    m.async_pending = left


FAMILIES = {
    "mma": _build_mma, "ldmatrix": _build_ldmatrix, "stmatrix": _build_stmatrix,
    "cp": _build_cp,
}
