"""The interpreter's observer hook: what a profile or a race check is told while a kernel runs.

An :class:`Observer` passed to :meth:`Emulator.launch <ptxforge.emulator.device.Emulator.launch>`
is called for every *step* (one instruction run by every thread standing at its program
counter, across the warps and blocks of a wave), for every memory access the step makes
(per state space, after the address is resolved and bounds-checked) and for every barrier
release.  Without an observer the interpreter pays one comparison per step and one per
access (bench/bench_emulator.py measures it).  :class:`Tee` hands the calls to several
observers (a profile and a race check in one run).

Example::

    >>> import numpy as np
    >>> from ptxforge.dsl import kernels
    >>> from ptxforge.emulator import Emulator
    >>> class Count(Observer):
    ...     steps = 0
    ...     def step(self, m, pc, idx, take, kind):
    ...         self.steps += 1
    >>> emu, seen = Emulator(kernels.saxpy()), Count()
    >>> x = emu.alloc(16); y = emu.alloc(16)
    >>> params = (4).to_bytes(4, "little") + np.float32(2).tobytes() + x.to_bytes(8, "little") \\
    ...     + y.to_bytes(8, "little")
    >>> emu.launch("saxpy", params, grid=1, block=32, observer=seen)
    >>> seen.steps > 5
    True
"""

from __future__ import annotations

import attrs
import numpy as np

from ptxforge.ptx.opcodes import MemoryAccess

__all__ = [
    "KIND_BARRIER",
    "KIND_BRANCH",
    "KIND_EXIT",
    "KIND_PLAIN",
    "Observer",
    "Site",
    "Tee",
    "sites",
]

#: ``kind`` codes of a step (the interpreter's own: see ``Program._decode``).
KIND_PLAIN, KIND_BRANCH, KIND_EXIT, KIND_BARRIER = 0, 1, 2, 3


@attrs.frozen(slots=True, kw_only=True)
class Site:
    """Where an instruction of a decoded program comes from.

    ``index``: its position in ``kernel.instructions`` (None for code inlined from a
    ``.func``); ``file``/``line``: its ``.loc`` (or the builder's Python line), else None;
    ``ptx_line``: its line in the PTX text when the kernel was parsed from text; ``space``:
    the state space a memory instruction names (None for generic addressing and for other
    instructions).
    """

    index: int | None
    opcode: str
    family: str
    file: str | None
    line: int | None
    ptx_line: int | None
    space: str | None = None

    def where(self) -> str:
        """``file:line`` (or ``<ptx>:line``, or ``<ptx>``)."""
        if self.line is not None:
            return f"{self.file}:{self.line}"
        return f"<ptx>:{self.ptx_line}" if self.ptx_line is not None else "<ptx>"


def sites(prog) -> tuple:
    """The :class:`Site` of every instruction of a decoded :class:`~.machine.Program`
    (by program counter)."""
    own = {id(inst): k for k, inst in enumerate(prog.kernel.instructions)}
    out = []
    for pc, inst in enumerate(prog.insts):
        loc = inst.loc if inst.loc is not None and inst.loc.known else None
        op = inst.op
        memory = op.info is not None and op.info.get(MemoryAccess) is not None
        out.append(Site(index=own.get(id(inst)), opcode=inst.opcode, family=inst.family,
                        file=loc.file if loc else None, line=loc.line if loc else None,
                        ptx_line=prog.lines[pc], space=op.space if memory else None))
    return tuple(out)


class Observer:
    """Called by the interpreter; every method does nothing here (override what you need)."""

    def step(self, m, pc: int, idx: np.ndarray, take: np.ndarray, kind: int) -> None:
        """Instruction ``pc`` of machine ``m`` is about to run: ``idx`` are the threads standing
        there (wave thread numbers, ascending), ``take`` those whose guard holds (all of
        ``idx`` without a guard); ``kind`` 0 plain, 1 ``bra``, 2 ``ret``/``exit``, 3 a block
        barrier, 4 an unsupported instruction."""

    def access(self, space: str, threads: np.ndarray, addr: np.ndarray, flat: np.ndarray,
               nbytes: int, data) -> None:
        """The current step touches ``nbytes`` at ``addr`` (state-space addresses; ``flat``:
        the byte index in the space's backing array) for each of ``threads``; ``data`` is the
        bytes written (an (n, nbytes) uint8 array) or None for a load or an atomic."""

    def release(self, m, slots: np.ndarray) -> None:
        """A barrier released the blocks in wave slots ``slots`` of machine ``m``."""


class Tee(Observer):
    """Several observers, called in order."""

    def __init__(self, *observers: Observer) -> None:
        self.observers = observers

    def step(self, m, pc, idx, take, kind) -> None:
        for o in self.observers:
            o.step(m, pc, idx, take, kind)

    def access(self, space, threads, addr, flat, nbytes, data) -> None:
        for o in self.observers:
            o.access(space, threads, addr, flat, nbytes, data)

    def release(self, m, slots) -> None:
        for o in self.observers:
            o.release(m, slots)
