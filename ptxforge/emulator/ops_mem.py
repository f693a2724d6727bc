"""Moves, loads, stores, atomics and address conversion for the interpreter.

``ld``/``st`` take any state space (an explicit ``.global``/``.shared``/``.local``/``.const``/
``.param``, or a generic address routed by its window), vectors (``.v2``/``.v4``) and narrow
types (``ld.u8`` into a 32-bit register zero-extends, ``ld.s8`` sign-extends).  ``atom`` and
``red`` update every distinct location at once and apply the updates of one location in
thread order (rounds of the next pending thread per location), so conflicting updates
compose as a sequence would (``atom`` returns each thread's old value).  ``mov`` also packs and unpacks
vectors (``mov.b64 {lo, hi}, %rd``) and takes a variable's address.

Example::

    >>> import numpy as np
    >>> from ptxforge.emulator.ops_mem import atomic_apply
    >>> from ptxforge.ptx import types as T
    >>> atomic_apply("inc", np.array([3, 1], np.uint32), np.uint32(3), None, T.u32).tolist()
    [0, 2]
"""

from __future__ import annotations

import numpy as np

from ptxforge.ptx import ir
from ptxforge.ptx import types as T

from .memory import CONST_WINDOW, LOCAL_WINDOW, SHARED_WINDOW, EmulationError
from .operands import Unsupported, address, reader, writer
from .values import UINT, dtype_of, spread

__all__ = ["FAMILIES", "atomic_apply", "SPACES"]

SPACES = ("global", "shared", "local", "const", "param")


def _space(d) -> str:
    for s in SPACES:
        if d.has(s):
            return s
    return "generic"


def _space_of(d, op, symbols) -> str:
    """The state space of an access; ``.param`` of a call's argument is per-thread ``.local``."""
    space = _space(d)
    if space == "param" and isinstance(op, ir.Address) and isinstance(op.base, ir.Symbol) \
            and symbols.get(op.base.name, ("",))[0] == "local":
        return "local"
    return space


def _vec(d) -> int:
    for n in (2, 4, 8):
        if d.has(f"v{n}"):
            return n
    return 1


def _elements(op):
    return list(op.elements) if isinstance(op, ir.Vector) else [op]


def _build_ld(d, inst, symbols):
    ty = d.type
    space, n = _space_of(d, inst.operands[1], symbols), _vec(d)
    if ty.bits == 128:
        raise Unsupported("128-bit loads")
    dsts = [writer(o, ty) for o in _elements(inst.operands[0])]
    if len(dsts) != n:
        raise Unsupported(f"{n}-vector load into {len(dsts)} registers")
    addr = address(inst.operands[1], symbols)
    size = ty.bits // 8
    dt = dtype_of(ty)
    at = inst.opcode

    def run(m, idx):
        raw = m.mem.load(space, addr(m, idx), idx, size * n, m.where(at))
        vals = raw.view(dt)
        for k, put in enumerate(dsts):
            put(m, idx, vals[:, k])
    return run


def _build_st(d, inst, symbols):
    ty = d.type
    space, n = _space_of(d, inst.operands[0], symbols), _vec(d)
    if ty.bits == 128:
        raise Unsupported("128-bit stores")
    srcs = [reader(o, ty, symbols) for o in _elements(inst.operands[1])]
    if len(srcs) != n:
        raise Unsupported(f"{n}-vector store of {len(srcs)} values")
    addr = address(inst.operands[0], symbols)
    dt = dtype_of(ty)
    at = inst.opcode

    def run(m, idx):
        cols = [spread(np.asarray(s(m, idx)).astype(dt), idx.shape) for s in srcs]
        data = np.ascontiguousarray(np.stack(cols, axis=1)).view(np.uint8)
        m.mem.store(space, addr(m, idx), idx, data.reshape(len(idx), -1), m.where(at))
    return run


def _build_mov(d, inst, symbols):
    ty = d.type
    dst, src = inst.operands[0], inst.operands[1]
    if isinstance(dst, ir.Vector) or isinstance(src, ir.Vector):
        return _build_pack(ty, dst, src, symbols)
    get = reader(src, ty, symbols)
    put = writer(dst, ty)
    return lambda m, idx: put(m, idx, spread(get(m, idx), idx.shape))


def _build_pack(ty, dst, src, symbols):
    """mov.b64 {a, b}, %rd (unpack) or mov.b64 %rd, {a, b} (pack), low element first."""
    if isinstance(src, ir.Vector):
        parts = _elements(src)
        width = ty.bits // len(parts)
        part_ty = T.PtxType.get(f"b{width}")
        getters = [reader(p, part_ty, symbols) for p in parts]
        put = writer(dst, ty)

        def pack(m, idx):
            out = np.zeros(idx.shape, UINT[ty.bits])
            for k, g in enumerate(getters):
                out |= np.asarray(g(m, idx)).astype(UINT[ty.bits]) << UINT[ty.bits](k * width)
            put(m, idx, out.view(dtype_of(ty)) if ty.is_float else out)
        return pack
    parts = _elements(dst)
    width = ty.bits // len(parts)
    part_ty = T.PtxType.get(f"b{width}")
    get = reader(src, T.PtxType.get(f"b{ty.bits}"), symbols)
    puts = [writer(p, part_ty) for p in parts]

    def unpack(m, idx):
        v = np.asarray(get(m, idx)).astype(UINT[ty.bits])
        for k, put in enumerate(puts):
            put(m, idx, (v >> UINT[ty.bits](k * width)).astype(UINT[width]))
    return unpack


_WINDOWS = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW, "const": CONST_WINDOW}


def _build_cvta(d, inst, symbols):
    ty = d.type
    space = next((s for s in ("global", "shared", "local", "const", "param") if d.has(s)), None)
    if space is None:
        raise Unsupported("cvta without a state space")
    get = reader(inst.operands[1], ty, symbols)
    put = writer(inst.operands[0], ty)
    base = _WINDOWS.get(space, 0)
    to = d.has("to")
    width = UINT[ty.bits]

    def run(m, idx):
        v = np.asarray(get(m, idx)).astype(np.uint64)
        v = v - np.uint64(base) if to else v + np.uint64(base)
        put(m, idx, spread(v.astype(width), idx.shape))
    return run


_ATOM_OPS = ("add", "min", "max", "inc", "dec", "exch", "cas", "and", "or", "xor")


def atomic_apply(op: str, old, b, c, ty):
    """The new values of an atomic ``op`` on ``old`` with operands ``b`` (and ``c`` for cas),
    element-wise over arrays."""
    old, b = np.asarray(old), np.asarray(b)
    if op == "add":
        if ty.is_float:
            dt = dtype_of(ty)
            return (old.astype(dt) + b.astype(dt)).astype(dt)
        return old + b
    if op == "min":
        return np.minimum(old, b) if not ty.is_float else np.fmin(old, b)
    if op == "max":
        return np.maximum(old, b) if not ty.is_float else np.fmax(old, b)
    if op == "inc":
        return np.where(old >= b, 0, old + 1).astype(old.dtype)
    if op == "dec":
        return np.where((old == 0) | (old > b), b, old - 1).astype(old.dtype)
    if op == "exch":
        return b
    if op == "cas":
        return np.where(old == b, c, old)
    if op == "and":
        return old & b
    if op == "or":
        return old | b
    return old ^ b


def _rounds(keys: np.ndarray):
    """Positions of ``keys`` in rounds: each round holds the next occurrence (in thread order)
    of every key still pending, so updates of one location apply in thread order while
    different locations update together."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    rank = np.arange(len(keys)) - np.repeat(starts, np.diff(np.r_[starts, len(keys)]))
    for r in range(int(rank.max()) + 1 if len(keys) else 0):
        yield order[rank == r]


def _build_atom(d, inst, symbols):
    ty = d.type
    op = next((o for o in _ATOM_OPS if d.has(o)), None)
    if op is None:
        raise Unsupported("atom without an operation")
    if ty.name in ("f16", "bf16", "f16x2", "bf16x2") or ty.bits == 128 or _vec(d) > 1:
        raise Unsupported(f"atomics on {ty}")
    space = _space(d)
    ret = d.family == "atom"
    ops = inst.operands
    put = writer(ops[0], ty) if ret else None
    addr = address(ops[1] if ret else ops[0], symbols)
    rest = ops[2:] if ret else ops[1:]
    b = reader(rest[0], ty, symbols)
    c = reader(rest[1], ty, symbols) if op == "cas" else None
    dt = dtype_of(ty)
    size = ty.bits // 8
    at = inst.opcode

    def run(m, idx):
        where = m.where(at)
        addrs = addr(m, idx)
        bv = spread(np.asarray(b(m, idx)).astype(dt), idx.shape)
        cv = spread(np.asarray(c(m, idx)).astype(dt), idx.shape) if c else None
        old_out = np.zeros(idx.shape, dt)
        with np.errstate(all="ignore"):
            for name, sel, sub in m.mem._spaces(space, addrs):
                pos = np.arange(len(idx))[sel]
                array, flat = m.mem._flat(name, sub, idx[sel], size, where)
                if m.mem.observer is not None:
                    m.mem.observer.access(name, idx[sel], sub, flat, size, None)
                if len(flat) and np.bitwise_or.reduce(flat) % size:
                    raise EmulationError(f"{where}: misaligned {size}-byte atomic")
                cells = array[: len(array) - len(array) % size].view(dt)
                for group in _rounds(flat):
                    at_cell = flat[group] // size
                    old = cells[at_cell]
                    p = pos[group]
                    old_out[p] = old
                    cells[at_cell] = atomic_apply(op, old, bv[p], None if cv is None else cv[p],
                                                  ty)
        if put is not None:
            put(m, idx, old_out)
    return run


def _nop(d, inst, symbols):
    return lambda m, idx: None


FAMILIES = {
    "ld": _build_ld, "ldu": _build_ld, "st": _build_st, "mov": _build_mov,
    "cvta": _build_cvta, "atom": _build_atom, "red": _build_atom,
    "membar": _nop, "fence": _nop, "prefetch": _nop, "prefetchu": _nop, "nanosleep": _nop,
    "pmevent": _nop,
}
