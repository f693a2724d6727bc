"""The interpreter's memory: global heap, shared, local, const and param spaces, generic addressing.

Global memory is one byte array; its addresses start at :data:`GLOBAL_BASE` and every
allocation is bounds-checked (an access outside all allocations is an
:class:`EmulationError`).  Shared memory is per block, local memory per thread; their
state-space addresses are offsets, and their generic addresses are those offsets inside a
window (:data:`SHARED_WINDOW`, :data:`LOCAL_WINDOW`, :data:`CONST_WINDOW`), which is what
``cvta`` adds and ``cvta.to`` takes away.

Example::

    >>> from ptxforge.emulator.memory import Memory
    >>> mem = Memory()
    >>> a = mem.alloc(8)
    >>> mem.write(a, bytes(range(8))); mem.read(a + 2, 3)
    b'\\x02\\x03\\x04'
"""

from __future__ import annotations

import bisect
from typing import Optional

import numpy as np

from ptxforge.errors import UnsupportedError

__all__ = [
    "EmulationError",
    "GLOBAL_BASE",
    "SHARED_WINDOW",
    "LOCAL_WINDOW",
    "CONST_WINDOW",
    "Memory",

]

GLOBAL_BASE = 1 << 32
SHARED_WINDOW = 1 << 48
LOCAL_WINDOW = 2 << 48
CONST_WINDOW = 3 << 48
_WINDOW = 1 << 40


class EmulationError(UnsupportedError):
    """The interpreter cannot run this kernel (an unknown instruction, a fault, a deadlock).

    Its message names the instruction, its line (the PTX ``.loc`` or the Python line that built
    it) and, for an unknown instruction, what the interpreter supports.
    """


class Memory:
    """Global memory for a whole emulated program run, plus the current launch's other spaces."""

    def __init__(self) -> None:
        self.heap = np.zeros(0, np.uint8)
        self._starts: list[int] = []
        self._ends: list[int] = []
        self.const = np.zeros(0, np.uint8)
        self.param = np.zeros(0, np.uint8)
        self.shared = np.zeros(0, np.uint8)
        self.shared_size = 0
        self.local = np.zeros(0, np.uint8)
        self.local_size = 0
        self.block_slot: Optional[np.ndarray] = None  # wave thread -> block slot
        #: told of every access (:meth:`~ptxforge.emulator.observe.Observer.access`) when set
        self.observer = None

    # --- host side ---------------------------------------------------------------------
    def alloc(self, nbytes: int, align: int = 256) -> int:
        """Reserve ``nbytes`` of global memory (zeroed); return its address."""
        start = -(-len(self.heap) // align) * align
        end = start + max(int(nbytes), 0)
        grown = np.zeros(end + 64, np.uint8)  # 64 bytes of guard so a gather never slices short
        grown[: len(self.heap)] = self.heap
        self.heap = grown
        self._starts.append(start)
        self._ends.append(end)
        return GLOBAL_BASE + start

    def free(self, address: int) -> None:
        """Release the allocation at ``address``; the heap shrinks back past freed space at
        its end (so a launch that allocates and frees leaves the heap as it found it)."""
        i = address - GLOBAL_BASE
        if i not in self._starts:
            raise EmulationError(f"free of {address:#x}, which is not an emulated allocation")
        k = self._starts.index(i)
        del self._starts[k]
        del self._ends[k]
        top = max(self._ends, default=0)
        if top + 64 < len(self.heap):
            self.heap = self.heap[: top + 64].copy()

    def write(self, address: int, data: bytes) -> None:
        """Copy ``data`` to global memory at ``address``."""
        i = self._check_host(address, len(data))
        self.heap[i: i + len(data)] = np.frombuffer(bytes(data), np.uint8)

    def read(self, address: int, nbytes: int) -> bytes:
        """``nbytes`` of global memory at ``address``."""
        i = self._check_host(address, nbytes)
        return self.heap[i: i + nbytes].tobytes()

    def _check_host(self, address: int, nbytes: int) -> int:
        i = address - GLOBAL_BASE
        if not any(s <= i and i + nbytes <= e for s, e in zip(self._starts, self._ends)):
            raise EmulationError(f"host access of {nbytes} bytes at {address:#x} is outside "
                                 "every emulated allocation")
        return i

    # --- per launch ----------------------------------------------------------------------
    def start_wave(self, nblocks: int, nthreads: int, block_slot: np.ndarray) -> None:
        """Fresh shared memory for ``nblocks`` blocks and local memory for ``nthreads``."""
        self.shared = np.zeros(nblocks * self.shared_size + 64, np.uint8)
        self.local = np.zeros(nthreads * self.local_size + 64, np.uint8)
        self.block_slot = block_slot

    # --- device side ---------------------------------------------------------------------
    def _flat(self, space: str, addr: np.ndarray, threads: np.ndarray, nbytes: int,
              where: str) -> tuple[np.ndarray, np.ndarray]:
        """(array, byte indices) for an access of ``nbytes`` at ``addr`` by ``threads``."""
        addr = addr.astype(np.uint64)
        if space == "global":
            off = (addr - np.uint64(GLOBAL_BASE)).astype(np.int64)
            if len(off) and int(addr.min()) >= GLOBAL_BASE:
                # the common case: every access inside the allocation holding the lowest one
                lo, hi = int(off.min()), int(off.max())
                k = bisect.bisect_right(self._starts, lo) - 1
                if k >= 0 and hi + nbytes <= self._ends[k]:
                    return self.heap, off
            pos = np.searchsorted(np.asarray(self._starts, np.int64), off, side="right") - 1
            ends = np.asarray(self._ends, np.int64)
            bad = (addr < GLOBAL_BASE) | (pos < 0) | (off + nbytes > ends[np.maximum(pos, 0)])
            self._fault(bad, addr, threads, space, nbytes, where)
            return self.heap, off
        if space == "shared":
            assert self.block_slot is not None  # set by start_wave before any access
            size = self.shared_size
            self._fault(addr + np.uint64(nbytes) > size, addr, threads, space, nbytes, where)
            return self.shared, self.block_slot[threads] * size + addr.astype(np.int64)
        if space == "local":
            size = self.local_size
            self._fault(addr + np.uint64(nbytes) > size, addr, threads, space, nbytes, where)
            return self.local, threads.astype(np.int64) * size + addr.astype(np.int64)
        array = self.const if space == "const" else self.param
        self._fault(addr + np.uint64(nbytes) > len(array), addr, threads, space, nbytes, where)
        return array, addr.astype(np.int64)

    @staticmethod
    def _fault(bad: np.ndarray, addr, threads, space, nbytes, where) -> None:
        if np.any(bad):
            k = int(np.flatnonzero(bad)[0])
            raise EmulationError(f"{where}: out-of-bounds {space} access of {nbytes} bytes at "
                                 f"address {int(addr[k]):#x} (emulated thread {int(threads[k])})")

    @staticmethod
    def classify(addr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Split generic addresses into (space code 0 global/1 shared/2 local/3 const, address)."""
        addr = addr.astype(np.uint64)
        code = np.zeros(addr.shape, np.int8)
        local = addr.copy()
        for c, base in ((1, SHARED_WINDOW), (2, LOCAL_WINDOW), (3, CONST_WINDOW)):
            inside = (addr >= np.uint64(base)) & (addr < np.uint64(base + _WINDOW))
            code[inside] = c
            local[inside] = addr[inside] - np.uint64(base)
        return code, local

    def _spaces(self, space: str, addr: np.ndarray):
        """Yield (space, positions, addresses) groups; generic addresses are split by window."""
        if space != "generic":
            yield space, slice(None), addr
            return
        code, local = self.classify(addr)
        for c, name in enumerate(("global", "shared", "local", "const")):
            sel = np.flatnonzero(code == c)
            if len(sel):
                yield name, sel, local[sel]

    def load(self, space: str, addr: np.ndarray, threads: np.ndarray, nbytes: int,
             where: str) -> np.ndarray:
        """The bytes (an (n, nbytes) uint8 array) at ``addr`` for each of ``threads``."""
        out = np.empty((len(addr), nbytes), np.uint8)
        for name, sel, sub in self._spaces(space, addr):
            array, flat = self._flat(name, sub, threads[sel], nbytes, where)
            if self.observer is not None:
                self.observer.access(name, threads[sel], sub, flat, nbytes, None)
            words, pos, _unit = _words(array, flat, nbytes)
            got = words[pos].view(np.uint8).reshape(len(flat), nbytes)
            if isinstance(sel, slice):
                return got
            out[sel] = got
        return out

    def store(self, space: str, addr: np.ndarray, threads: np.ndarray, data: np.ndarray,
              where: str) -> None:
        """Write ``data`` (an (n, nbytes) uint8 array) at ``addr`` for each of ``threads``."""
        nbytes = data.shape[1]
        for name, sel, sub in self._spaces(space, addr):
            array, flat = self._flat(name, sub, threads[sel], nbytes, where)
            part = np.ascontiguousarray(data[sel])
            if self.observer is not None:
                self.observer.access(name, threads[sel], sub, flat, nbytes, part)
            words, pos, _unit = _words(array, flat, nbytes)
            words[pos] = part.view(words.dtype).reshape(pos.shape)


_UNITS = {8: np.uint64, 4: np.uint32, 2: np.uint16, 1: np.uint8}


def _words(array: np.ndarray, flat: np.ndarray, nbytes: int):
    """``array`` viewed in the widest unit (8, 4, 2 or 1 bytes) that divides ``nbytes`` and
    every start in ``flat``, with the unit positions of each access: (view, positions, unit).
    An aligned access then gathers one word per unit instead of one index per byte."""
    unit = 8
    while unit > 1 and (nbytes % unit or (len(flat) and np.bitwise_or.reduce(flat) % unit)):
        unit //= 2
    usable = len(array) - len(array) % unit
    words = array[:usable].view(_UNITS[unit])
    base = flat // unit if unit > 1 else flat
    if nbytes == unit:
        return words, base, unit
    return words, base[:, None] + np.arange(nbytes // unit, dtype=np.int64), unit
