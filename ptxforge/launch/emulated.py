"""``load(..., device="emulator")``: the launch API of :mod:`ptxforge.launch.loader` on the
PTX interpreter (:mod:`ptxforge.emulator`), so a test checks a kernel the same way with or
without a GPU.

Arguments are bound and checked exactly as for a GPU launch (:func:`~.args.bind_args`); NumPy
arrays are copied into the emulator's memory before the launch and back after it.  Device
arrays (CUDA array interface, DLPack on a GPU) and streams have no meaning here and are
refused with a :class:`~ptxforge.errors.LaunchError`.  Arguments that share host memory (one
array passed twice, overlapping views) share one emulated allocation
(:mod:`~ptxforge.launch.buffers`), and every allocation is freed after the copy back.

Example::

    >>> import numpy as np
    >>> from ptxforge.dsl import kernels
    >>> from ptxforge.launch.loader import load
    >>> x = np.arange(8, dtype=np.float32); y = np.ones(8, np.float32)
    >>> load(kernels.saxpy(), device="emulator")["saxpy"](8, 2.0, x, y, grid=1, block=32)
    >>> y.tolist()
    [1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0]
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

from ptxforge.errors import LaunchError
from ptxforge.ptx import ir
from ptxforge.ptx.layout import var_size
from ptxforge.ptx.names import lookup

from .args import HostArg, ScalarArg, bind_args, check_launch_dims, pack_param_buffer
from .buffers import host_buffers, symbol_array, symbol_bytes
from .image import module_image

__all__ = ["EmulatedModule", "EmulatedKernel", "load_emulated"]


class EmulatedModule:
    """A module on the interpreter; ``module["name"]`` is an :class:`EmulatedKernel`;
    :meth:`set` / :meth:`get` write and read its ``__constant__`` and ``__device__`` variables."""

    __slots__ = ("emulator", "image", "device")

    def __init__(self, source: Union[ir.Module, str, bytes, Any],
                 signatures: Optional[Mapping[str, Sequence[ir.Param]]] = None) -> None:
        from ptxforge.emulator import Emulator

        image = module_image(source, signatures)
        if image.kind != "ptx":
            raise LaunchError(f"the emulator runs PTX (an ir.Module or PTX text), not a "
                              f"{image.kind}")
        self.image = image
        self.device = "emulator"
        text = source if isinstance(source, ir.Module) else image.ptx
        assert text is not None  # a "ptx" image holds its text
        self.emulator = Emulator(text)

    @property
    def names(self) -> tuple[str, ...]:
        """Entry names whose signatures are known."""
        return tuple(self.image.signatures)

    def kernel(self, name: str, params: Optional[Sequence[ir.Param]] = None) -> "EmulatedKernel":
        """The kernel ``name`` (mangled, demangled or an unambiguous prefix:
        :func:`~ptxforge.ptx.names.lookup`); ``params`` gives its signature when the source
        carries none."""
        name = lookup(tuple(self.image.signatures), name, "this module", LaunchError)
        if params is None:
            if name not in self.image.signatures:
                known = ", ".join(self.image.signatures) or "none"
                raise LaunchError(f"no kernel named {name!r} in this module (entries: {known})")
            params = self.image.signatures[name]
        return EmulatedKernel(self, name, tuple(params))

    def __getitem__(self, name: str) -> "EmulatedKernel":
        return self.kernel(name)

    def __contains__(self, name: str) -> bool:
        try:
            return lookup(tuple(self.image.signatures), name, "", LaunchError) in \
                self.image.signatures
        except LaunchError:
            return False

    def _variable(self, name: str) -> tuple:
        emu = self.emulator
        if name not in emu.symbols or emu.symbols[name][0] not in ("const", "global"):
            known = ", ".join(n for n, (sp, _) in emu.symbols.items()
                              if sp in ("const", "global")) or "none"
            raise LaunchError(f"no __constant__ or __device__ variable named {name!r} in this "
                              f"module (variables: {known})")
        space, addr = emu.symbols[name]
        var = next(v for v in emu.module.globals if getattr(v, "name", None) == name)
        return space, addr, var_size(var)

    def set(self, name: str, value: Any) -> None:
        """Write a ``__constant__`` or ``__device__`` variable (``cudaMemcpyToSymbol``)."""
        space, addr, size = self._variable(name)
        data = symbol_bytes(name, value, size)
        mem = self.emulator.memory
        if space == "const":
            mem.const[addr: addr + len(data)] = bytearray(data)
        else:
            mem.write(addr, data)

    def get(self, name: str, dtype: Any = "uint8") -> Any:
        """A variable's current bytes as a NumPy array of ``dtype`` (``cudaMemcpyFromSymbol``)."""
        space, addr, size = self._variable(name)
        mem = self.emulator.memory
        data = mem.const[addr: addr + size].tobytes() if space == "const" \
            else mem.read(addr, size)
        return symbol_array(name, data, dtype)

    def unload(self) -> None:
        """Nothing to free (kept for the GPU module's API)."""

    def __enter__(self) -> "EmulatedModule":
        return self

    def __exit__(self, *exc) -> None:
        self.unload()

    def __repr__(self) -> str:
        return f"<EmulatedModule: {', '.join(self.names)}>"


class EmulatedKernel:
    """A kernel on the interpreter, called like :class:`~.loader.LoadedKernel`:
    ``kernel(*args, grid=, block=, shared_mem=0, **named_args)``."""

    __slots__ = ("module", "name", "params", "max_threads_per_block", "_required")

    def __init__(self, module: EmulatedModule, name: str, params: tuple) -> None:
        self.module = module
        self.name = name
        self.params = params
        kernel = module.emulator.program(name).kernel  # decoded now: unknown names fail here
        dirs = dict(kernel.directives)
        self.max_threads_per_block = 1024
        for key in (".maxntid", ".reqntid"):
            if key in dirs:
                dims = tuple(dirs[key]) + (1,) * (3 - len(dirs[key]))
                self.max_threads_per_block = min(self.max_threads_per_block,
                                                 dims[0] * dims[1] * dims[2])
        self._required = tuple(dirs[".reqntid"]) if ".reqntid" in dirs else None

    def bind(self, *args: Any, **kwargs: Any) -> tuple:
        """Convert and check arguments (what a call does first)."""
        return bind_args(ir.Kernel(self.name, params=self.params), args, kwargs)

    def __call__(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: int = 0,
                 stream: Any = None, sync: bool = False, cooperative: bool = False,
                 **kwargs: Any) -> None:
        if stream is not None:
            raise LaunchError(f"kernel {self.name!r}: the emulator has no streams "
                              f"(got stream={stream!r})")
        self.run(args, kwargs, grid=grid, block=block, shared_mem=shared_mem,
                 cooperative=cooperative)

    def run(self, args: Sequence[Any], kwargs: Mapping[str, Any], *, grid: Any, block: Any,
            shared_mem: int = 0, cooperative: bool = False, observer: Any = None) -> tuple:
        """Launch with positional ``args`` and named ``kwargs``; ``observer`` watches the run
        (:class:`ptxforge.emulator.observe.Observer`: the profile and the race check).  The
        launch's (grid, block) as two 3-tuples."""
        if grid is None or block is None:
            raise LaunchError(f"kernel {self.name!r}: grid= and block= are required")
        g, b, smem = check_launch_dims(grid, block, shared_mem,
                                       max_threads=self.max_threads_per_block)
        if self._required is not None:
            want = tuple(self._required) + (1,) * (3 - len(self._required))
            if b != want:
                raise LaunchError(f"kernel {self.name!r} requires block {want} (.reqntid), "
                                  f"got {b}")
        bound = self.bind(*args, **kwargs)
        for arg in bound:
            if not isinstance(arg, (HostArg, ScalarArg)):
                raise LaunchError(f"kernel {self.name!r}: parameter {arg.param.name!r} is a "
                                  "device array; the emulator takes NumPy arrays")
        emu = self.module.emulator
        ptrs, placed = {}, []
        try:
            for buf in host_buffers(bound):  # one allocation per distinct host memory range
                addr = emu.alloc(buf.nbytes)
                placed.append((buf, addr))
                if buf.nbytes:
                    emu.write(addr, buf.data.tobytes())
                for member in buf.members:
                    ptrs[member.index] = buf.pointer(addr, member)
            emu.launch(self.name, pack_param_buffer(bound, ptrs), g, b, smem,
                       cooperative=cooperative, observer=observer)
            for buf, addr in placed:
                for member in buf.members:
                    _copy_back(emu, member.arg, buf.pointer(addr, member))
        finally:
            for _, addr in reversed(placed):
                emu.free(addr)
        return g, b

    launch = __call__

    def __repr__(self) -> str:
        sig = ", ".join(f"{p.name}: {p.type}{'*' if p.pointer else ''}" for p in self.params)
        return f"<EmulatedKernel {self.name}({sig}) on the emulator>"


def _copy_back(emu, arg: HostArg, addr: int) -> None:
    """Copy a writable host argument's bytes back from emulated memory."""
    import numpy as np

    if arg.writeback and arg.nbytes:
        data = np.frombuffer(emu.read(addr, arg.nbytes), arg.array.dtype)
        arg.array[...] = data.reshape(arg.array.shape)
        if arg.target is not arg.array:
            arg.target[...] = arg.array


def load_emulated(source, signatures=None) -> EmulatedModule:
    """``load(source, device="emulator")``."""
    return EmulatedModule(source, signatures)
