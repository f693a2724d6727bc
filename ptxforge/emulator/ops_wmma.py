"""``wmma`` for the interpreter: ``wmma.load``, ``wmma.mma`` and ``wmma.store`` on whole warps.

The PTX ISA leaves a wmma fragment's layout opaque (only ``wmma`` instructions see inside
it), so the interpreter picks one: slot ``s`` of lane ``L`` holds element ``(L * slots + s)
mod (rows * cols)`` of the tile in row-major order, where ``slots`` is the fragment's
registers times the elements each holds.  Where a fragment has more slots than the tile has
elements (``.f16`` operands of m32n8k16 and m8n32k16) elements repeat, as on the hardware.
Loads and stores follow the ``.row`` / ``.col`` layout with the leading dimension ``stride``
(in elements; the tile's own width when omitted).  The product is computed in float64 (exact
for f16, bf16, tf32 and 8-bit operands) and rounded to the accumulator type, so results are
bit-exact whenever the sums are exact (integer-valued inputs); f64 tiles take ``.rn`` only.  Shapes m16n16k16,
m32n8k16, m8n32k16 (f16, bf16, s8, u8), m16n16k8 (tf32) and m8n8k4 (f64).

Example::

    >>> from ptxforge.emulator.ops_wmma import tile_of
    >>> tile_of("a", "m16n16k16"), tile_of("b", "m32n8k16"), tile_of("c", "m8n32k16")
    ((16, 16), (16, 8), (8, 32))
"""

from __future__ import annotations

import re

import numpy as np

from ptxforge.ptx import ir
from ptxforge.ptx import types as T

from .operands import Unsupported, address, reader, writer
from .ops_tensor import _elements, _whole_warps
from .values import spread

__all__ = ["FAMILIES", "tile_of"]

_SHAPE = re.compile(r"^m(\d+)n(\d+)k(\d+)$")
_PER = {"f16": 2, "bf16": 2, "tf32": 1, "s8": 4, "u8": 4, "f64": 1, "f32": 1, "s32": 1}
_SIZE = {"f16": 2, "bf16": 2, "tf32": 4, "s8": 1, "u8": 1, "f64": 8, "f32": 4, "s32": 4}
_SHAPES = ("m16n16k16", "m32n8k16", "m8n32k16", "m16n16k8", "m8n8k4")


def tile_of(role: str, shape: str) -> tuple[int, int]:
    """(rows, cols) of fragment ``role`` ("a", "b", "c" or "d") for ``shape``."""
    m, n, k = (int(x) for x in _SHAPE.match(shape).groups())  # type: ignore[union-attr]
    return {"a": (m, k), "b": (k, n)}.get(role, (m, n))


def _shape(d) -> str:
    shape = next((x for x in d.mods if _SHAPE.match(x)), None)
    if shape not in _SHAPES:
        raise Unsupported(f"wmma shape {shape} (emulated: {', '.join(_SHAPES)})")
    return shape


def _slots(rows: int, cols: int, nslots: int):
    """(rows, cols) index arrays (32, nslots) of every lane's fragment slots."""
    flat = (np.arange(32)[:, None] * nslots + np.arange(nslots)[None, :]) % (rows * cols)
    return flat // cols, flat % cols


def _elem_type(d, role: str) -> str:
    names = [t.name for t in d.types] + [x for x in d.mods if x == "tf32"]
    if not names:
        raise Unsupported("wmma without an element type")
    return names[-1]


def _space(inst) -> str:
    parts = inst.opcode.replace("::", ".").split(".")
    return next((s for s in ("global", "shared", "local") if s in parts), "generic")


def _values_to_bits(vals: np.ndarray, ty: str) -> np.ndarray:
    """(n, nregs, per) element values -> (n, nregs) register bits (uint32 or uint64)."""
    if ty == "f64":
        return vals.astype(np.float64).view(np.uint64)[..., 0]
    if ty in ("f32", "tf32"):
        return vals.astype(np.float32).view(np.uint32)[..., 0]
    if ty == "s32":
        return vals[..., 0].astype(np.int64).astype(np.uint64).astype(np.uint32)
    if ty in ("s8", "u8"):
        raw = vals.astype(np.int64).astype(np.uint8)
        return np.ascontiguousarray(raw).view(np.uint32)[..., 0]
    if ty == "f16":
        halves = np.ascontiguousarray(vals.astype(np.float16)).view(np.uint16)
    else:  # bf16 values are exact f32 with 16 low zero bits (loaded from bf16 memory)
        halves = (np.ascontiguousarray(vals.astype(np.float32)).view(np.uint32) >> 16) \
            .astype(np.uint16)
    return halves[..., 0].astype(np.uint32) | (halves[..., 1].astype(np.uint32) << 16)


def _memory_values(raw: np.ndarray, ty: str) -> np.ndarray:
    """(n, size) uint8 element bytes -> float64 / int64 values."""
    if ty == "bf16":
        return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)[:, 0] \
            .astype(np.float64)
    dt = {"f16": np.float16, "tf32": np.float32, "s8": np.int8, "u8": np.uint8,
          "f64": np.float64, "f32": np.float32, "s32": np.int32}[ty]
    vals = raw.view(dt)[:, 0]
    if ty == "tf32":
        vals = (vals.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    return vals.astype(np.int64 if ty in ("s8", "u8", "s32") else np.float64)


def _access(d, inst, symbols, load: bool):
    role = next((r for r in ("a", "b", "c", "d") if d.has(r)), None)
    layout = "col" if d.has("col") else "row"
    if role is None:
        raise Unsupported("wmma.load / wmma.store without a fragment (.a, .b, .c, .d)")
    shape, ty = _shape(d), _elem_type(d, role)
    rows, cols = tile_of(role, shape)
    frag, mem_op = (inst.operands[0], inst.operands[1]) if load else \
        (inst.operands[1], inst.operands[0])
    regs = list(frag.elements) if isinstance(frag, ir.Vector) else [frag]
    bits = T.b64 if ty == "f64" else T.b32
    per = _PER[ty]
    nslots = len(regs) * per
    r_idx, c_idx = _slots(rows, cols, nslots)
    addr = address(mem_op, symbols)
    extra = inst.operands[2] if len(inst.operands) > 2 else None
    stride = reader(extra, T.u32, symbols) if extra is not None else None
    width = cols if layout == "row" else rows
    size, space = _SIZE[ty], _space(inst)
    return (role, ty, regs, bits, per, nslots, r_idx, c_idx, addr, stride, width, layout, size,
            space)


def _offsets(m, idx, stride, width, layout, r_idx, c_idx, size):
    lead = spread(np.asarray(stride(m, idx) if stride else width), idx.shape)
    lead = lead.astype(np.int64)[:, None]
    lanes = m.lane[idx]
    r, c = r_idx[lanes], c_idx[lanes]
    return ((r * lead + c) if layout == "row" else (c * lead + r)) * size


def _build_load(d, inst, symbols):
    (_role, ty, regs, bits, per, nslots, r_idx, c_idx, addr, stride, width, layout, size,
     space) = _access(d, inst, symbols, load=True)
    puts = [writer(r, bits) for r in regs]
    at = inst.opcode

    def run(m, idx):
        _whole_warps(m, idx, "wmma.load")
        off = _offsets(m, idx, stride, width, layout, r_idx, c_idx, size)
        where = np.asarray(addr(m, idx), np.uint64)[:, None] + off.astype(np.uint64)
        owner = np.repeat(idx, nslots)
        raw = m.mem.load(space, where.ravel(), owner, size, m.where(at))
        vals = _memory_values(raw, ty).reshape(len(idx), len(regs), per)
        out = _values_to_bits(vals, ty)
        for j, put in enumerate(puts):
            put(m, idx, out[:, j])
    return run


def _build_store(d, inst, symbols):
    (_role, ty, regs, bits, _per, nslots, r_idx, c_idx, addr, stride, width, layout, size,
     space) = _access(d, inst, symbols, load=False)
    gets = [reader(r, bits, symbols) for r in regs]
    at = inst.opcode

    def run(m, idx):
        _whole_warps(m, idx, "wmma.store")
        regbits = np.stack([spread(np.asarray(g(m, idx)), idx.shape) for g in gets],
                           axis=-1)
        if ty in ("f32", "s32"):
            vals = regbits.astype(np.uint32).view(np.float32 if ty == "f32" else np.int32)
        else:
            vals = _elements(regbits[None], ty)[0]
        dt = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "s32": np.int32}.get(ty)
        if dt is None:
            raise Unsupported(f"wmma.store of .{ty}")
        data = np.ascontiguousarray(vals.reshape(len(idx) * nslots).astype(dt)).view(np.uint8)
        off = _offsets(m, idx, stride, width, layout, r_idx, c_idx, size)
        where = np.asarray(addr(m, idx), np.uint64)[:, None] + off.astype(np.uint64)
        m.mem.store(space, where.ravel(), np.repeat(idx, nslots), data.reshape(-1, size),
                    m.where(at))
    return run


def _build_mma(d, inst, symbols):
    shape = _shape(d)
    if d.has("rz", "rm", "rp"):
        raise Unsupported("wmma.mma with a directed rounding mode")
    names = [t.name for t in d.types]
    if d.has("tf32"):
        names = [names[0], "tf32", "tf32", names[-1]]
    if len(names) == 2:  # .dtype.ctype with .f16 operands
        names = [names[0], "f16", "f16", names[1]]
    dtype, a_ty, b_ty, ctype = names
    la, lb = (x for x in d.mods if x in ("row", "col"))
    ops = inst.operands
    frags = []
    for op, ty, role in ((ops[1], a_ty, "a"), (ops[2], b_ty, "b"), (ops[3], ctype, "c"),
                         (ops[0], dtype, "d")):
        regs = list(op.elements) if isinstance(op, ir.Vector) else [op]
        rows, cols = tile_of(role, shape)
        frags.append((regs, ty, rows, cols, _slots(rows, cols, len(regs) * _PER[ty])))
    bits = {ty: (T.b64 if ty == "f64" else T.b32) for ty in (a_ty, ctype, dtype)}
    gets = [[reader(r, bits.get(ty, T.b32), symbols) for r in regs]
            for regs, ty, *_ in frags[:3]]
    puts = [writer(r, bits[dtype]) for r in frags[3][0]]
    integer, sat = a_ty in ("s8", "u8"), d.has("satfinite")
    del la, lb  # the fragments already hold row-major tiles

    def tile(m, idx, w, k):
        regs, ty, rows, cols, (r_idx, c_idx) = frags[k]
        regbits = np.stack([spread(np.asarray(g(m, idx)), idx.shape)
                            for g in gets[k]], axis=-1).reshape(w, 32, len(regs))
        if ty in ("f32", "s32"):
            vals = regbits.astype(np.uint32).view(np.float32 if ty == "f32" else np.int32)
            vals = vals[..., None]
        else:
            vals = _elements(regbits, ty)
        out = np.zeros((w, rows, cols), np.int64 if integer else np.float64)
        out[:, r_idx, c_idx] = vals.reshape(w, 32, -1)
        return out

    def run(m, idx):
        w = _whole_warps(m, idx, "wmma.mma")
        res = np.matmul(tile(m, idx, w, 0), tile(m, idx, w, 1)) + tile(m, idx, w, 2)
        if integer and sat:
            res = np.clip(res, -(1 << 31), (1 << 31) - 1)
        regs, ty, _rows, _cols, (r_idx, c_idx) = frags[3]
        vals = res[:, r_idx, c_idx].reshape(w * 32, len(regs), _PER[ty])
        out = _values_to_bits(vals, ty)
        for j, put in enumerate(puts):
            put(m, idx, out[:, j])
    return run


def _build_wmma(d, inst, symbols):
    if d.has("load"):
        return _build_load(d, inst, symbols)
    if d.has("store"):
        return _build_store(d, inst, symbols)
    if d.has("mma"):
        return _build_mma(d, inst, symbols)
    raise Unsupported("wmma form (load, store, mma are emulated)")


FAMILIES = {"wmma": _build_wmma}
