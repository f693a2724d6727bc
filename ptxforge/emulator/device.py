"""An emulated device: a module's kernels, global memory, and launches over grids of blocks.

:class:`Emulator` takes an :class:`~ptxforge.ptx.ir.Module` (from the builder or the parser)
or PTX text.  Its memory is filled and read with :meth:`Emulator.alloc`, :meth:`~Emulator.write`
and :meth:`~Emulator.read`; :meth:`Emulator.launch` runs a kernel given its parameter bytes
(the layout :func:`ptxforge.launch.args.pack_param_buffer` builds).  ``ptxforge.load(...,
device="emulator")`` wraps all of this behind the same call as a GPU launch.

Example::

    >>> import numpy as np
    >>> from ptxforge.dsl import kernels
    >>> from ptxforge.emulator import Emulator
    >>> emu = Emulator(kernels.saxpy())
    >>> x = emu.alloc(16); y = emu.alloc(16)
    >>> emu.write(x, np.arange(4, dtype=np.float32).tobytes())
    >>> emu.write(y, np.ones(4, np.float32).tobytes())
    >>> params = (4).to_bytes(4, "little") + np.float32(2).tobytes() + x.to_bytes(8, "little") \\
    ...     + y.to_bytes(8, "little")
    >>> emu.launch("saxpy", params, grid=1, block=32)
    >>> np.frombuffer(emu.read(y, 16), np.float32).tolist()
    [1.0, 3.0, 5.0, 7.0]
"""

from __future__ import annotations

import re
from typing import Union

import numpy as np

from ptxforge.ptx import ir
from ptxforge.ptx.layout import var_layout, var_size

from .machine import RESERVED_SMEM, Machine, Program, _init_bytes
from .memory import EmulationError, Memory
from .operands import Unsupported

__all__ = ["Emulator", "ptx_lines", "WAVE_THREADS", "COOPERATIVE_THREADS"]

#: Threads run together in one wave (whole blocks; at least one block).
WAVE_THREADS = 8192
#: The most threads a cooperative launch (every block in one wave) may have.
COOPERATIVE_THREADS = 1 << 16


def ptx_lines(text: str, module: ir.Module) -> dict:
    """``id(instruction) -> line`` for a module parsed from ``text`` (instructions in order)."""
    out: dict = {}
    lines = text.splitlines()
    pos = 0
    strip = re.compile(r"^\s*(@!?%\w+\s+)?")
    for kernel in module.kernels:
        for inst in kernel.instructions:
            while pos < len(lines):
                body = strip.sub("", lines[pos].split("//")[0])
                pos += 1
                if body.startswith(inst.opcode) and body[len(inst.opcode):len(inst.opcode) + 1] \
                        in (" ", "\t", ";", ""):
                    out[id(inst)] = pos
                    break
    return out


def _dim3(value, what: str) -> tuple:
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or any(not isinstance(v, int) or v < 1 for v in dims):
        raise EmulationError(f"{what} must be a positive int or up to three, got {value!r}")
    return dims + (1,) * (3 - len(dims))


class Emulator:
    """A module loaded on the interpreter, with its own global memory."""

    def __init__(self, source: Union[ir.Module, str]) -> None:
        lines: dict = {}
        if isinstance(source, str):
            from ptxforge.ptx.parse import parse

            module = parse(source)
            lines = ptx_lines(source, module)
        elif isinstance(source, ir.Module):
            module = source
        else:
            raise EmulationError(f"the emulator takes an ir.Module or PTX text, got "
                                 f"{type(source).__name__}")
        self.module = module
        self.memory = Memory()
        self._lines = lines
        self._programs: dict = {}
        self.symbols: dict = {}
        const = [v for v in module.globals if isinstance(v, ir.VarDecl) and v.space == "const"]
        offsets, size = var_layout(const)
        self.memory.const = np.zeros(size + 64, np.uint8)
        self.symbols.update({v.name: ("const", offsets[v.name]) for v in const})
        glob = [v for v in module.globals if isinstance(v, ir.VarDecl) and v.space == "global"]
        for v in glob:
            addr = self.memory.alloc(max(var_size(v), 1), align=max(v.align or 16, 16))
            self.symbols[v.name] = ("global", addr)
        for v in const:
            data = self._init(v)
            self.memory.const[offsets[v.name]: offsets[v.name] + len(data)] = \
                np.frombuffer(data, np.uint8)
        for v in glob:
            data = self._init(v)
            if data:
                self.memory.write(self.symbols[v.name][1], data)
        self._shared = tuple(v for v in module.globals
                             if isinstance(v, ir.VarDecl) and v.space == "shared")

    def _address_of(self, name: str) -> int:
        if name not in self.symbols:
            raise Unsupported(f"unknown variable {name!r}")
        space, addr = self.symbols[name]
        return addr

    def _init(self, v: ir.VarDecl) -> bytes:
        try:
            return _init_bytes(v, self._address_of)
        except (Unsupported, ValueError) as exc:
            raise EmulationError(f"module variable {v.name}: {exc}") from None

    def program(self, name: str) -> Program:
        """The decoded kernel ``name`` (decoded once)."""
        if name not in self._programs:
            kernel = self.module.kernel(name)
            functions = {k.name: k for k in self.module.kernels
                         if not k.is_entry and k.body is not None}
            self._programs[name] = Program(kernel, self.symbols, self._shared, self._lines,
                                           functions)
        return self._programs[name]

    def alloc(self, nbytes: int) -> int:
        """Reserve zeroed global memory; return its address."""
        return self.memory.alloc(nbytes)

    def free(self, address: int) -> None:
        """Release memory from :meth:`alloc` (the heap shrinks when its end is free)."""
        self.memory.free(address)

    def write(self, address: int, data: bytes) -> None:
        """Copy bytes into global memory."""
        self.memory.write(address, data)

    def read(self, address: int, nbytes: int) -> bytes:
        """Bytes of global memory."""
        return self.memory.read(address, nbytes)

    def launch(self, name: str, params: bytes, grid=1, block=1, shared_mem: int = 0,
               cooperative: bool = False, observer=None) -> None:
        """Run kernel ``name`` over ``grid`` blocks of ``block`` threads to completion.

        ``cooperative`` runs every block in one wave with a grid-sync workspace (what
        ``cudaLaunchCooperativeKernel`` gives ``cooperative_groups::this_grid().sync()``).
        ``observer`` (:class:`~ptxforge.emulator.observe.Observer`) is told of every step,
        memory access and barrier release: the profile and the race check
        (:mod:`~ptxforge.emulator.profile`, :mod:`~ptxforge.emulator.races`).
        """
        prog = self.program(name)
        g, b = _dim3(grid, "grid"), _dim3(block, "block")
        per = b[0] * b[1] * b[2]
        if per > 1024:
            raise EmulationError(f"kernel {name!r}: {per} threads per block exceed 1024")
        if len(params) < prog.param_size:
            raise EmulationError(f"kernel {name!r} takes {prog.param_size} bytes of parameters, "
                                 f"got {len(params)}")
        mem = self.memory
        mem.param = np.frombuffer(bytes(params) + bytes(64), np.uint8).copy()
        begin = -(-(prog.static_shared + int(shared_mem)) // 16) * 16
        mem.shared_size = begin + RESERVED_SMEM
        mem.local_size = prog.local_size
        blocks = [(x, y, z) for z in range(g[2]) for y in range(g[1]) for x in range(g[0])]
        per_wave = max(1, WAVE_THREADS // per)
        env = None
        if cooperative:
            if len(blocks) * per > COOPERATIVE_THREADS:
                raise EmulationError(f"kernel {name!r}: a cooperative launch runs every block at "
                                     f"once; expected at most {COOPERATIVE_THREADS} threads, got "
                                     f"{len(blocks) * per}")
            per_wave = len(blocks)
            work = self.memory.alloc(64)
            env = {"%envreg1": work >> 32, "%envreg2": work & 0xFFFFFFFF}
        try:
            for start in range(0, len(blocks), per_wave):
                wave = blocks[start:start + per_wave]
                machine = Machine(prog, mem, wave, b, g, int(shared_mem), env, observer)
                mem.start_wave(len(wave), machine.n, machine.slot)
                mem.observer = observer
                machine.run()
        finally:
            mem.observer = None
            if env is not None:
                self.memory.free(work)
