"""Checked fixes for the memory analysis: padding and XOR swizzles, coalesced index orders.

Each fix is applied to the access's affine address and the result is counted again with the
same rules (:mod:`ptxforge.analysis.warp_access`), so the figure after is a measurement of the
changed address, not a promise:

- **padding** (shared, conflicted): the row stride S (the thread stride with the most factors
  of two, the one that lands every thread in the same bank) becomes S + 4 bytes, and every
  thread stride that is a multiple of S grows in proportion (a ``[32][32]`` float tile
  becomes ``[32][33]``).
- **swizzle** (shared, conflicted, S a multiple of 128 bytes): the unit index inside each
  128-byte line is XORed with the row index, ``a ^ ((a // S) % n) * u`` with u = max(4, width)
  bytes and n = 128 / u units per line; when S is a power of two this is CUTLASS's
  ``Swizzle<log2 n, log2 u, log2 S - log2 u>`` on byte addresses (``Swizzle<5,2,5>`` for a
  32x32 float tile).  Every access to the array must use the same swizzle.
- **coalesce** (global, more sectors than the warp's bytes need): the index that should be
  contiguous across ``threadIdx.x``: its stride becomes the access width (swapping it with the
  thread index that has that stride, if one has), and the sectors are counted again.

Example::

    >>> from ptxforge.analysis.memory_fixes import swizzle_name
    >>> swizzle_name(128, 4)
    'Swizzle<5,2,5>'
"""

from __future__ import annotations

from collections.abc import Callable
from statistics import mean

import attrs

from ptxforge.ptx.opcodes import opcode_of

from .affine import THREAD_SYMBOLS, Affine
from .warp_access import global_sectors, ideal_sectors, lane_addresses, shared_banks

__all__ = ["MemoryFix", "padded", "propose_fixes", "row_stride", "swizzle_name", "swizzled_addresses"]

@attrs.frozen(slots=True, kw_only=True)
class MemoryFix:
    """A change to one access and its figure after it, re-analysed: ``kind`` is
    ``padding``, ``swizzle`` (shared, ``before``/``after`` are ways) or ``coalesce`` (global,
    sectors per request)."""

    index: int
    kind: str
    text: str
    address: str | None
    before: float
    after: float

    def to_dict(self) -> dict:
        """The JSON object."""
        return attrs.asdict(self)


def _log2(n: int) -> int | None:
    return n.bit_length() - 1 if n > 0 and n & (n - 1) == 0 else None

def _lane_varying(block: tuple) -> tuple:
    """The thread indices that differ inside a warp for this block shape."""
    bx, by, bz = block
    out = ["tid.x"] if bx > 1 else []
    if by > 1 and bx < 32:
        out.append("tid.y")
    if bz > 1 and bx * by < 32:
        out.append("tid.z")
    return tuple(out)

def row_stride(form: Affine, block: tuple) -> int | None:
    """The thread stride (bytes) that causes the conflict: of the strides of the thread indices
    that vary inside a warp, the one with the most factors of two (at least 8 bytes).

    Example: for ``128*tid.x + 4*tid.y`` with a 32x32 block it is 128.
    """
    best, best_twos = None, 2
    d = form.as_dict()
    for sym in _lane_varying(block):
        c = abs(d.get((sym,), 0))
        if not c:
            continue
        twos = (c & -c).bit_length() - 1
        if twos > best_twos:
            best, best_twos = c, twos
    return best

def padded(form: Affine, stride: int) -> Affine:
    """``form`` with rows of ``stride`` bytes padded by one 4-byte word: every thread stride
    that is a multiple of ``stride`` grows by the same factor.

    Example: ``128*tid.x + 4*tid.y`` padded at 128 is ``132*tid.x + 4*tid.y``.
    """
    d = form.as_dict()
    for mono, c in list(d.items()):
        if len(mono) == 1 and mono[0] in THREAD_SYMBOLS and c % stride == 0:
            d[mono] = c // stride * (stride + 4)
    return Affine.of(d)

def swizzle_name(stride: int, width: int) -> str:
    """The CUTLASS name of the swizzle for rows of ``stride`` bytes and ``width``-byte accesses,
    or a description when ``stride`` is not a power of two."""
    unit = max(4, width)
    n = 128 // unit
    ls, lu, ln = _log2(stride), _log2(unit), _log2(n)
    if ls is None or lu is None or ln is None:
        return f"XOR of the {unit}-byte unit index with (row mod {n}), rows of {stride} bytes"
    return f"Swizzle<{ln},{lu},{ls - lu}>"

def swizzled_addresses(addrs, stride: int, width: int) -> list:
    """Each address with its unit index inside the 128-byte line XORed with the row index."""
    unit = max(4, width)
    n = 128 // unit
    return [a ^ (((a // stride) % n) * unit) for a in addrs]

def _ways(per_warp, width: int, phase: int = 0) -> int:
    return max(shared_banks(a, width, phase)[0] for a in per_warp)

def _shared_fixes(access, form, block, lanes: Callable) -> list:
    stride = row_stride(form, block)
    if stride is None:
        return []
    out = []
    pad = padded(form, stride)
    after = lanes(pad)
    if not isinstance(after, str):
        elems = f" ([..][{stride // access.width + 1}] for {access.width}-byte elements)" \
            if access.width <= 4 and stride % access.width == 0 else ""
        out.append(MemoryFix(index=access.index, kind="padding",
                             text=f"pad each row of {stride} bytes by one 4-byte word: row "
                                  f"stride {stride + 4} bytes{elems}",
                             address=str(pad), before=float(access.ways),
                             after=float(_ways(after, access.width))))
    if stride % 128 == 0:
        before = lanes(form)
        if not isinstance(before, str):
            swz = [swizzled_addresses(a, stride, access.width) for a in before]
            name = swizzle_name(stride, access.width)
            out.append(MemoryFix(index=access.index, kind="swizzle",
                                 text=f"XOR swizzle {name}: the {max(4, access.width)}-byte "
                                      f"unit index XOR (row mod {128 // max(4, access.width)}), "
                                      "applied to every access of the array",
                                 address=None, before=float(access.ways),
                                 after=float(_ways(swz, access.width))))
    return out

def _coalesce_fix(access, form, block, lanes: Callable) -> list:
    d = form.as_dict()
    cx = d.get(("tid.x",), 0)
    width = access.width
    if cx == width or block[0] < 2:
        return []
    other = next((s for s in ("tid.y", "tid.z") if d.get((s,), 0) == width), None)
    new = dict(d)
    new[("tid.x",)] = width
    if other is not None:
        new[(other,)] = cx
        how = (f"swap the roles of threadIdx.x and threadIdx.{other[-1]} in the index (for a "
               "transpose: stage the tile through shared memory)")
    else:
        how = "index consecutive elements by consecutive threadIdx.x"
    fixed = Affine.of(new)
    addrs = lanes(fixed)
    if isinstance(addrs, str):
        return []
    after = float(mean(global_sectors(a, width) for a in addrs))
    text = (f"threadIdx.x strides {cx} bytes; a coalesced access strides {width} (the access "
            f"width): {how}")
    return [MemoryFix(index=access.index, kind="coalesce", text=text, address=str(fixed),
                      before=float(access.sectors_per_request), after=after)]

def _shared_only(opcode: str) -> bool:
    row = opcode_of(opcode).info
    return row is not None and row.memory is not None and row.memory.shared_only


def propose_fixes(accesses, forms, block: tuple) -> list:
    """The checked fixes of the conflicted shared and the uncoalesced global accesses
    (``forms``: each access's affine address, or None).

    Example: a 32-way column read of a ``[32][32]`` float tile gets a padding and a
    ``Swizzle<5,2,5>`` fix, each with ``after`` 1.0.
    """
    def lanes(form):
        return lane_addresses(form, block)

    out: list = []
    for access, form in zip(accesses, forms):
        if form is None:
            continue
        if access.space == "shared" and access.ways is not None and access.ways > 1 \
                and not _shared_only(access.opcode):
            out.extend(_shared_fixes(access, form, block, lanes))
        elif access.space == "global" and access.sectors_per_request is not None and \
                access.sectors_per_request > ideal_sectors(32, access.width) \
                and access.width <= 16:
            out.extend(_coalesce_fix(access, form, block, lanes))
    return out
