"""Static memory analysis: each global, shared and local access of a kernel, per warp.

For every instruction that reads or writes global, shared or local memory (``ld``, ``st``,
``atom``, ``red``, ``cp.async``, ``ldmatrix`` ... as :data:`ptxforge.ptx.opcodes.FAMILIES`
marks them) the address is evaluated as an affine function of the thread and block indices
(:mod:`ptxforge.analysis.affine`); from it and the block shape, each warp of the block is
enumerated (threads numbered x fastest) and counted by the rules of
:mod:`ptxforge.analysis.warp_access`: sectors per request (global, local), bank-conflict ways
and wavefronts per request (shared).  The figures are averaged over the warps of the block.
Uniform terms (block index, parameters, loop counters) are taken as 0: the figures are those
of block 0 with 256-byte-aligned allocations (what ``cudaMalloc`` gives).  An address that is
not affine is "data-dependent", with the reason.

A ``cp.async`` is two accesses with the same index: the global read and the shared write.
Texture, surface, ``wmma`` and bulk (TMA) copies are not analysed.

Example::

    >>> from ptxforge.dsl.builder import KernelBuilder
    >>> from ptxforge.ptx import types as T
    >>> kb = KernelBuilder("copy")
    >>> x, y = kb.param_ptr("x", T.f32), kb.param_ptr("y", T.f32)
    >>> i = kb.global_id()
    >>> kb.st(kb.elem_ptr(kb.load_param(y), i), kb.ld(kb.elem_ptr(kb.load_param(x), i)))
    >>> kb.ret()
    >>> rep = analyze_memory(kb.build().kernel("copy"))
    >>> [(a.direction, a.sectors_per_request) for a in rep.accesses]
    [('load', 4.0), ('store', 4.0)]
"""

from __future__ import annotations

import math
import re
from statistics import mean

import attrs

from ptxforge.errors import PtxforgeError, PtxTypeError
from ptxforge.ptx import ir
from ptxforge.ptx.types import PtxType

from .address_eval import AddressEvaluator
from .affine import Affine, NotAffine, Value
from .lane_values import LaneEvaluator
from .memory_fixes import propose_fixes
from .warp_access import (
    global_sectors,
    ideal_sectors,
    lane_addresses,
    local_sectors,
    shared_banks,
    shared_phase,
)

__all__ = ["AccessFigure", "LineFigure", "MemoryReport", "analyze_memory", "kernel_block",
           "severity"]

_SPACES = ("global", "shared", "local")


@attrs.frozen(slots=True, kw_only=True)
class AccessFigure:
    """One memory access of a kernel and its per-warp figures (None where they do not apply
    or the address is not affine; ``reason`` says why)."""

    index: int
    opcode: str
    line: int | None
    file: str | None
    space: str
    direction: str
    width: int
    address: str | None
    sectors_per_request: float | None
    ways: int | None
    wavefronts_per_request: float | None
    reason: str | None

    def to_dict(self) -> dict:
        """The JSON row."""
        return attrs.asdict(self)


@attrs.frozen(slots=True, kw_only=True)
class LineFigure:
    """The accesses of one source line, with the worst of them."""

    file: str | None
    line: int | None
    accesses: tuple
    worst: AccessFigure


@attrs.frozen(slots=True, kw_only=True)
class MemoryReport:
    """The memory accesses of one kernel (instruction order) and the checked fixes."""

    kernel: str
    block: tuple
    accesses: tuple
    fixes: tuple = ()

    def worst_first(self) -> tuple:
        """The accesses, worst first (:func:`severity`), then in instruction order."""
        return tuple(sorted(self.accesses, key=_rank))

    def by_line(self) -> tuple:
        """One :class:`LineFigure` per source line, worst first."""
        groups: dict = {}
        for a in self.accesses:
            groups.setdefault((a.file, a.line), []).append(a)
        rows = [LineFigure(file=f, line=n, accesses=tuple(group),
                           worst=min(group, key=_rank)) for (f, n), group in groups.items()]
        return tuple(sorted(rows, key=lambda r: _rank(r.worst)))

    def to_dict(self) -> dict:
        """The JSON object: kernel, block, accesses (worst first), lines, fixes."""
        return {"kernel": self.kernel, "block": list(self.block),
                "accesses": [a.to_dict() for a in self.worst_first()],
                "lines": [{"file": r.file, "line": r.line, "count": len(r.accesses),
                           **{k: v for k, v in r.worst.to_dict().items()
                              if k not in ("file", "line")}} for r in self.by_line()],
                "fixes": [f.to_dict() for f in self.fixes]}


def severity(access: AccessFigure) -> float | None:
    """How many times the ideal the access costs: sectors over the fewest a warp needs for its
    bytes (global, local), wavefronts over the phases (shared); None when data-dependent."""
    if access.space == "shared":
        if access.wavefronts_per_request is None:
            return None
        return access.wavefronts_per_request / (32 // shared_phase(access.width))
    if access.sectors_per_request is None:
        return None
    return access.sectors_per_request / ideal_sectors(32, access.width)


def _rank(access: AccessFigure) -> tuple:
    s = severity(access)
    return (s is None, -(s or 0.0), access.index, access.space)


def kernel_block(kernel: ir.Kernel, block=None) -> tuple:
    """The block shape: ``block`` (an int or up to 3 ints), else the kernel's ``.reqntid`` /
    ``.maxntid``, else (256, 1, 1).

    Example: ``kernel_block(k, 128)`` is ``(128, 1, 1)``.
    """
    if block is None:
        for name in (".reqntid", ".maxntid"):
            got = next((v for n, v in kernel.directives if n == name), None)
            if got:
                block = tuple(got)
                break
        else:
            block = (256,)
    if isinstance(block, int):
        block = (block,)
    dims = tuple(int(b) for b in block) + (1,) * (3 - len(tuple(block)))
    if len(dims) != 3 or any(d < 1 for d in dims) or math.prod(dims) > 1024:
        raise PtxforgeError(f"block: expected 1 to 3 positive sizes with at most 1024 threads, "
                            f"got {block!r}")
    return dims


def _matrix(inst: ir.Instruction) -> bool:
    """``ldmatrix``/``stmatrix``: shared only, 16-byte rows addressed by 8-thread groups."""
    mem = inst.op.info.memory if inst.op.info is not None else None
    return mem is not None and mem.shared_only


def _width(inst: ir.Instruction) -> int:
    """Bytes per thread: the type's size times the vector width (a cp.async's size operand)."""
    if inst.op.family == "cp":
        size = next((o for o in inst.operands[2:] if isinstance(o, ir.Immediate)), None)
        return int(size.value) if size is not None else 16
    if _matrix(inst):
        return 16
    name = inst.op.types[-1] if inst.op.types else "b32"
    try:
        bits = PtxType.get(name).bits
    except PtxTypeError:  # a type the IR has no class for (b4, e4m3x2 ...): its digits
        digits = re.findall(r"\d+", name)
        bits = int(digits[0]) if digits else 32
        bits *= int(name.rsplit("x", 1)[1]) if re.search(r"x\d+$", name) else 1
    return max(1, bits // 8) * inst.op.vector


def _figures(space: str, width: int, addrs, phase: int = 0) -> dict:
    """The figure fields for per-warp addresses."""
    if space == "shared":
        got = [shared_banks(a, width, phase) for a in addrs]
        return {"ways": max(w for w, _ in got),
                "wavefronts_per_request": float(mean(f for _, f in got))}
    if space == "local":
        return {"sectors_per_request": float(mean(local_sectors(a, width) for a in addrs))}
    return {"sectors_per_request": float(mean(global_sectors(a, width) for a in addrs))}


def _space(ev: AddressEvaluator, inst: ir.Instruction, value: Value, which: int) -> str | None:
    """The state space an access reaches (None: not global/shared/local)."""
    op = inst.op
    if _matrix(inst):
        return "shared"
    if op.family == "cp":
        return ("shared", "global")[which] if op.has("async") and not op.has("bulk") else None
    if op.space is not None:
        return op.space if op.space in _SPACES else None
    if isinstance(value, Affine):
        for sym in sorted(value.symbols()):
            if sym in ev.term_space:
                return ev.term_space[sym]
    return "global"


def _direction(inst: ir.Instruction, which: int) -> str | None:
    mem = inst.op.info.memory if inst.op.info is not None else None
    if mem is None or mem.texture or mem.direction in ("prefetch", "fragment"):
        return None
    if mem.direction == "async":
        return ("store", "load")[which]
    return mem.direction


def _matrix_lanes(inst: ir.Instruction) -> int:
    """Threads that give row addresses to an ``ldmatrix``/``stmatrix`` (.x1: 8, .x2: 16)."""
    n = next((p for p in inst.op.parts if p in ("x1", "x2", "x4")), "x4")
    return 8 * int(n[1:])


def _lanes_of(ev, lanes_ev: LaneEvaluator, address: ir.Address, at: int, value: Value,
              fields: dict):
    """Per-warp addresses of an access (setting ``address``/``reason`` in ``fields``), or
    None when there are none to count."""
    if isinstance(value, Affine):
        fields["address"] = str(value)
        addrs = lane_addresses(value, ev.block)
        if isinstance(addrs, str):
            fields["reason"] = addrs
            return None
        return addrs
    per = lanes_ev.address(address, at)
    if isinstance(per, NotAffine):
        fields["reason"] = f"data-dependent: {per.reason}"
        return None
    fields["reason"] = (f"not affine ({value.reason}): counted from each thread's address in "
                        "block 0")
    return lanes_ev.per_warp(per)


def _access(ev, lanes_ev, index, inst, which, address) -> tuple | None:
    """(AccessFigure, affine address or None) of one address operand of ``inst``."""
    direction = _direction(inst, which)
    value = ev.address_value(address, index)
    space = _space(ev, inst, value, which) if direction is not None else None
    if space is None or direction is None:
        return None
    width = _width(inst)
    loc = inst.loc
    fields: dict = {"sectors_per_request": None, "ways": None,
                    "wavefronts_per_request": None, "reason": None, "address": None}
    addrs = _lanes_of(ev, lanes_ev, address, index, value, fields)
    if addrs is not None:
        phase = 0
        if _matrix(inst):
            phase = 8
            addrs = [a[:_matrix_lanes(inst)] for a in addrs]
        fields.update(_figures(space, width, addrs, phase))
        if space == "local":
            fields["reason"] = ("local memory is per thread, interleaved by 4-byte word "
                                "across the warp")
    fig = AccessFigure(index=index, opcode=inst.opcode,
                       line=loc.line if loc is not None and loc.known else None,
                       file=loc.file if loc is not None and loc.known else None,
                       space=space, direction=direction, width=width, **fields)
    return fig, (value if isinstance(value, Affine) else None)


def _too_deep(ev, inst: ir.Instruction, index: int, which: int) -> tuple | None:
    direction = _direction(inst, which)
    space = _space(ev, inst, NotAffine(reason=""), which) if direction is not None else None
    if space is None or direction is None:
        return None
    loc = inst.loc if inst.loc is not None and inst.loc.known else None
    return AccessFigure(index=index, opcode=inst.opcode,
                        line=loc.line if loc is not None else None,
                        file=loc.file if loc is not None else None, space=space, direction=direction,
                        width=_width(inst), address=None, sectors_per_request=None, ways=None,
                        wavefronts_per_request=None,
                        reason="data-dependent: the address's chain of definitions is too "
                               "deep to follow"), None


def analyze_memory(kernel: ir.Kernel, *, block=(256, 1, 1),
                   params: dict | None = None) -> MemoryReport:
    """The per-warp figures of every global, shared and local access of ``kernel`` for a block
    of ``block`` threads (an int or (x, y, z); None: the kernel's launch bounds, else 256),
    with the checked fixes of conflicts and uncoalesced accesses.  ``params`` gives kernel
    parameters a value ({name: int}: a stride such as a matrix width), which turns an address
    whose thread stride depends on them into one with figures.

    Example::

        >>> from ptxforge.dsl import kernels
        >>> rep = analyze_memory(kernels.saxpy().kernel("saxpy"), block=128)
        >>> sorted({a.sectors_per_request for a in rep.accesses})
        [4.0]
    """
    dims = kernel_block(kernel, block)
    names = {p.name for p in kernel.params}
    bad = sorted(set(params or ()) - names)
    if bad:
        raise PtxforgeError(f"params: {kernel.name} has no parameter {', '.join(bad)}; it has: "
                            f"{', '.join(p.name for p in kernel.params) or 'none'}")
    for name, value in (params or {}).items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise PtxforgeError(f"params: expected an integer value for {name}, got {value!r}")
    ev = AddressEvaluator(kernel, dims, params)
    lanes_ev = LaneEvaluator(ev)
    accesses, forms = [], []
    for index, inst in enumerate(kernel.instructions):
        info = inst.op.info
        if info is None or info.memory is None:
            continue
        addresses = [o for o in inst.operands if isinstance(o, ir.Address)]
        for which, address in enumerate(addresses[:2]):
            try:
                got = _access(ev, lanes_ev, index, inst, which, address)
            except RecursionError:  # a chain of definitions deeper than Python's stack
                got = _too_deep(ev, inst, index, which)
            if got is not None:
                accesses.append(got[0])
                forms.append(got[1])
    fixes = propose_fixes(accesses, forms, dims)
    return MemoryReport(kernel=kernel.name, block=dims, accesses=tuple(accesses),
                        fixes=tuple(fixes))
