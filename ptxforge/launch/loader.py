"""Running kernels on a GPU: load a module through the CUDA driver, launch its kernels.

:func:`load` takes an :class:`~ptxforge.ptx.ir.Module` (or PTX text, or a cubin/fatbin), JIT-loads
it with ``cuModuleLoadDataEx`` (keeping the driver's JIT log), and returns a
:class:`LoadedModule`; indexing it by entry name gives a :class:`LoadedKernel`, which is called
with the kernel's arguments and the launch shape::

    import numpy as np
    from ptxforge.dsl import kernels
    from ptxforge import load

    mod = load(kernels.saxpy(target="sm_80"))
    x = np.ones(1 << 20, np.float32); y = np.zeros_like(x)
    mod["saxpy"](x.size, 2.0, x, y, grid=(x.size + 255) // 256, block=256)
    # y now holds 2*x + y: NumPy arrays are copied in before and out after the launch

Arguments are converted and checked by :mod:`ptxforge.launch.args` before anything touches the GPU.
NumPy arrays are copied in and out (and the call waits for the kernel); device arrays (CuPy,
PyTorch, :class:`~ptxforge.launch.device.DeviceArray`, anything with ``__cuda_array_interface__`` or
DLPack) are passed by address without copies, and the launch is then asynchronous on
``stream`` (pass ``sync=True`` to wait and surface kernel faults at the call).
"""

from __future__ import annotations

import ctypes
from typing import Any, Literal, Mapping, Optional, Sequence, Union

import attrs

from ptxforge.errors import DeviceError, LaunchError
from ptxforge.ptx import ir
from ptxforge.ptx.names import lookup

from .args import (
    BoundArg,
    DeviceArg,
    HostArg,
    bind_args,
    check_launch_dims,
    param_layout,
    stream_handle,
)
from .buffers import HostBuffer, host_buffers, symbol_array, symbol_bytes
from .device import check, driver, use_device
from .image import (
    ModuleImage,
    check_cubin_signatures,
    check_target,
    cubin_param_layout,
    cubin_target_problem,
    module_image,
    ptx_target,
)

__all__ = [
    "load",
    "LoadedModule",
    "LoadedKernel",
    "PreparedLaunch",
    "KernelAttributes",
    "ModuleImage",
    "module_image",
    "ptx_target",
    "check_target",
    "cubin_param_layout",
    "check_cubin_signatures",
]

_LOG_BYTES = 1 << 16


# --- loaded kernels --------------------------------------------------------------------------

@attrs.frozen(slots=True, kw_only=True)
class KernelAttributes:
    """The driver's view of a loaded kernel (``cuFuncGetAttribute``)."""

    num_regs: int
    max_threads_per_block: int
    shared_size_bytes: int
    const_size_bytes: int
    local_size_bytes: int
    ptx_version: int
    binary_version: int


def _read_log(buffer: bytearray) -> str:
    return bytes(buffer).split(b"\0", 1)[0].decode(errors="replace").strip()


class LoadedModule:
    """A module resident on a device; ``module["name"]`` is a launchable :class:`LoadedKernel`.

    ``jit_log`` holds the driver JIT's info log (ptxas's ``-v`` output for PTX input).
    """

    __slots__ = ("device", "handle", "image", "jit_log", "_kernels", "_unloaded")

    def __init__(self, image: ModuleImage, device: int = 0, *, max_registers: Optional[int] = None) -> None:
        self.device = device
        self.image = image
        self._kernels: dict[str, LoadedKernel] = {}
        self._unloaded = True
        if max_registers is not None and (isinstance(max_registers, bool)
                                          or not isinstance(max_registers, int)
                                          or not 16 <= max_registers <= 255):
            raise LaunchError(f"max_registers must be an int in 16..255 (CU_JIT_MAX_REGISTERS), "
                              f"got {max_registers!r}")
        dev, _ = use_device(device)
        drv = driver()
        if image.kind in ("ptx", "cubin"):
            attr = drv.CUdevice_attribute
            cc = (check(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute"),
                  check(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute"))
            problem = (check_target(image.target, cc) if image.kind == "ptx"
                       else cubin_target_problem(image.data, cc))
            if problem:
                raise DeviceError(f"cannot load on device {device}: {problem}")
        info, error = bytearray(_LOG_BYTES), bytearray(_LOG_BYTES)
        opt = drv.CUjit_option
        options = [opt.CU_JIT_INFO_LOG_BUFFER, opt.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                   opt.CU_JIT_ERROR_LOG_BUFFER, opt.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                   opt.CU_JIT_LOG_VERBOSE]
        values: list = [info, _LOG_BYTES, error, _LOG_BYTES, 1]
        if max_registers is not None:
            options.append(opt.CU_JIT_MAX_REGISTERS)
            values.append(int(max_registers))
        result = drv.cuModuleLoadDataEx(image.data, len(options), options, values)
        err = result[0]
        if err != drv.CUresult.CUDA_SUCCESS:
            log = _read_log(error) or _read_log(info)
            try:
                check(result, f"cuModuleLoadDataEx ({image.kind})")
            except DeviceError as exc:
                jit_log = f"\n--- driver JIT log ---\n{log}" if log else ""
                failure = DeviceError(f"{exc}{jit_log}")
                failure.cuda_error = exc.cuda_error
                raise failure from None
        self.handle = result[1]
        self.jit_log = _read_log(info)
        self._unloaded = False

    @property
    def names(self) -> tuple[str, ...]:
        """Entry names whose signatures are known."""
        return tuple(self.image.signatures)

    def kernel(self, name: str, params: Optional[Sequence[ir.Param]] = None) -> "LoadedKernel":
        """The kernel ``name`` (mangled, demangled or an unambiguous prefix:
        :func:`~ptxforge.ptx.names.lookup`); ``params`` gives its signature when the image
        carries none."""
        if self._unloaded:
            raise DeviceError("this module has been unloaded")
        name = lookup(tuple(self.image.signatures), name, "this module", LaunchError,
                      missing_ok=True)   # an unknown name: the messages below say more
        if params is None and name in self._kernels:
            return self._kernels[name]
        if params is None:
            if name not in self.image.signatures:
                known = ", ".join(self.image.signatures) or "none"
                why = f"; {self.image.signature_error}" if self.image.signature_error else ""
                raise LaunchError(f"no signature for kernel {name!r} (known: {known}{why}); load "
                                  "an ir.Module, or pass params=... / load(..., signatures=...)")
            params = self.image.signatures[name]
        elif self.image.kind == "cubin":
            check_cubin_signatures(self.image.data, {name: tuple(params)})
        kernel = LoadedKernel(self, name, tuple(params))
        self._kernels[name] = kernel
        return kernel

    def __getitem__(self, name: str) -> "LoadedKernel":
        return self.kernel(name)

    def __contains__(self, name: str) -> bool:
        try:
            return lookup(tuple(self.image.signatures), name, "", LaunchError) in \
                self.image.signatures
        except LaunchError:
            return False

    def _global(self, name: str) -> tuple[int, int]:
        """(device address, size) of a module variable (``cuModuleGetGlobal``)."""
        if self._unloaded:
            raise DeviceError("this module has been unloaded")
        use_device(self.device)
        drv = driver()
        result = drv.cuModuleGetGlobal(self.handle, name.encode())
        if result[0] != drv.CUresult.CUDA_SUCCESS:
            raise LaunchError(f"no __constant__ or __device__ variable named {name!r} in this "
                              f"module ({result[0].name})")
        return int(result[1]), int(result[2])

    def set(self, name: str, value: Any) -> None:
        """Write a ``__constant__`` or ``__device__`` variable (``cudaMemcpyToSymbol``)."""
        ptr, size = self._global(name)
        data = symbol_bytes(name, value, size)
        if not data:
            return
        host = ctypes.create_string_buffer(data, len(data))
        drv = driver()
        check(drv.cuMemcpyHtoD(drv.CUdeviceptr(ptr), ctypes.addressof(host), len(data)),
              f"cuMemcpyHtoD({name})")

    def get(self, name: str, dtype: Any = "uint8") -> Any:
        """A variable's current bytes as a NumPy array of ``dtype`` (``cudaMemcpyFromSymbol``)."""
        ptr, size = self._global(name)
        host = ctypes.create_string_buffer(max(size, 1))
        if size:
            drv = driver()
            check(drv.cuMemcpyDtoH(ctypes.addressof(host), drv.CUdeviceptr(ptr), size),
                  f"cuMemcpyDtoH({name})")
        return symbol_array(name, host.raw[:size], dtype)

    def unload(self) -> None:
        """Unload the module from the device (idempotent); its kernels become unusable."""
        if not self._unloaded:
            self._unloaded = True
            try:
                use_device(self.device)
                check(driver().cuModuleUnload(self.handle), "cuModuleUnload")
            except DeviceError:
                pass

    def __enter__(self) -> "LoadedModule":
        return self

    def __exit__(self, *exc) -> None:
        self.unload()

    def __repr__(self) -> str:
        return f"<LoadedModule {self.image.kind} on device {self.device}: {', '.join(self.names)}>"


class LoadedKernel:
    """A kernel function on a device, called as ``kernel(*args, grid=, block=, shared_mem=0,
    stream=None, sync=False, **named_args)``.

    ``grid`` and ``block`` are an int or a tuple of up to three ints.  Keyword arguments other
    than the launch options name kernel parameters.
    """

    __slots__ = ("module", "name", "params", "handle", "max_threads_per_block", "static_shared",
                 "max_shared_optin", "_dyn_smem")

    def __init__(self, module: LoadedModule, name: str, params: tuple) -> None:
        self.module = module
        self.name = name
        self.params = params
        dev, _ = use_device(module.device)
        drv = driver()
        result = drv.cuModuleGetFunction(module.handle, name.encode())
        if result[0] == drv.CUresult.CUDA_ERROR_NOT_FOUND:
            known = ", ".join(module.names) or "unknown"
            raise LaunchError(f"the loaded module has no kernel {name!r} (entries: {known})")
        self.handle = check(result, f"cuModuleGetFunction({name!r})")
        self.max_threads_per_block = self._attribute("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK")
        self.static_shared = self._attribute("CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES")
        self._dyn_smem = self._attribute("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES")
        self.max_shared_optin = int(check(drv.cuDeviceGetAttribute(
            drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev),
            "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)"))
        self._check_param_layout()

    def _attribute(self, name: str) -> int:
        drv = driver()
        attr = getattr(drv.CUfunction_attribute, name)
        return int(check(drv.cuFuncGetAttribute(attr, self.handle), f"cuFuncGetAttribute({name})"))

    def _check_param_layout(self) -> None:
        """Compare the signature's layout (:func:`~ptxforge.launch.args.param_layout`) with the driver's
        own parameter count, offsets and sizes (``cuFuncGetParamCount``/``cuFuncGetParamInfo``,
        when this driver has them)."""
        drv = driver()
        if not hasattr(drv, "cuFuncGetParamCount"):
            return
        try:
            result = drv.cuFuncGetParamCount(self.handle)
        except Exception:  # the installed driver lacks the entry point
            return
        if result[0] != drv.CUresult.CUDA_SUCCESS:
            return  # older driver: the query is not supported
        count = int(result[1])
        if count != len(self.params):
            raise LaunchError(f"kernel {self.name!r}: the signature lists {len(self.params)} "
                              f"parameters but the loaded code takes {count}")
        for index, (param, slot) in enumerate(zip(self.params, param_layout(self.params))):
            info = drv.cuFuncGetParamInfo(self.handle, index)
            if info[0] != drv.CUresult.CUDA_SUCCESS:
                return
            offset, size = int(info[1]), int(info[2])
            if size != slot.size:
                raise LaunchError(f"kernel {self.name!r}: parameter {param.name!r} is "
                                  f"{slot.size} bytes in the signature but {size} in the loaded code")
            if offset != slot.offset:
                raise LaunchError(f"kernel {self.name!r}: parameter {param.name!r} is at byte "
                                  f"{slot.offset} in the signature's layout but at {offset} in "
                                  "the loaded code")

    @property
    def attributes(self) -> KernelAttributes:
        """Registers, shared/const/local sizes and versions as the driver reports them."""
        return KernelAttributes(
            num_regs=self._attribute("CU_FUNC_ATTRIBUTE_NUM_REGS"),
            max_threads_per_block=self._attribute("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
            shared_size_bytes=self._attribute("CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES"),
            const_size_bytes=self._attribute("CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES"),
            local_size_bytes=self._attribute("CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES"),
            ptx_version=self._attribute("CU_FUNC_ATTRIBUTE_PTX_VERSION"),
            binary_version=self._attribute("CU_FUNC_ATTRIBUTE_BINARY_VERSION"),
        )

    @property
    def num_regs(self) -> int:
        """Registers per thread (``CU_FUNC_ATTRIBUTE_NUM_REGS``)."""
        return self._attribute("CU_FUNC_ATTRIBUTE_NUM_REGS")

    def max_active_blocks_per_sm(self, block_size: int, dynamic_shared_mem: int = 0) -> int:
        """The driver's occupancy: resident blocks per multiprocessor at ``block_size`` threads."""
        use_device(self.module.device)
        drv = driver()
        return int(check(drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            self.handle, int(block_size), int(dynamic_shared_mem)),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor"))

    def _ir(self) -> ir.Kernel:
        return ir.Kernel(self.name, params=self.params)

    def bind(self, *args: Any, stream: Any = None, **kwargs: Any) -> tuple[BoundArg, ...]:
        """Convert and check arguments without touching the GPU (what a call does first)."""
        return bind_args(self._ir(), args, kwargs, stream=stream_handle(stream),
                         device=self.module.device)

    def prepare(self, *args: Any, stream: Any = None, **kwargs: Any) -> "PreparedLaunch":
        """Convert the arguments and copy host arrays in; the result launches repeatedly."""
        handle = stream_handle(stream)
        bound = bind_args(self._ir(), args, kwargs, stream=handle, device=self.module.device)
        return PreparedLaunch(self, bound, handle)

    def __call__(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: int = 0,
                 stream: Any = None, sync: bool = False, cooperative: bool = False,
                 **kwargs: Any) -> None:
        if grid is None or block is None:
            raise LaunchError(f"kernel {self.name!r}: grid= and block= are required")
        _, _, smem = check_launch_dims(grid, block, shared_mem, max_threads=self.max_threads_per_block)
        self._check_shared(smem)
        prepared = self.prepare(*args, stream=stream, **kwargs)
        try:
            prepared.enqueue(grid, block, shared_mem, cooperative=cooperative)
            if sync:
                prepared.synchronize()
        finally:
            prepared.finish()

    launch = __call__

    def _check_shared(self, smem: int) -> None:
        """Refuse dynamic shared memory beyond what one block may have on this device."""
        if self.static_shared + smem > self.max_shared_optin:
            raise LaunchError(
                f"kernel {self.name!r}: shared_mem={smem} bytes of dynamic shared memory plus "
                f"{self.static_shared} static exceed the {self.max_shared_optin} bytes a block may "
                f"have on device {self.module.device} (at most {self.max_shared_optin - self.static_shared} dynamic)")

    def __repr__(self) -> str:
        sig = ", ".join(f"{p.name}: {p.type}{'*' if p.pointer else ''}" for p in self.params)
        return f"<LoadedKernel {self.name}({sig}) on device {self.module.device}>"


class PreparedLaunch:
    """Arguments converted, host arrays resident on the device, the parameter block built.

    :meth:`enqueue` launches (any number of times, e.g. for timing); :meth:`finish` copies
    host arrays back, waits for the stream if there were any, and frees their device copies.
    Usable as a context manager.
    """

    __slots__ = ("kernel", "bound", "stream", "_buffers", "_storage", "_pointers", "_closed")

    def __init__(self, kernel: LoadedKernel, bound: Sequence[BoundArg], stream: int) -> None:
        self.kernel = kernel
        self.bound = tuple(bound)
        self.stream = stream
        self._buffers: list[tuple[HostBuffer, int]] = []
        self._closed = False
        use_device(kernel.module.device)
        drv = driver()
        cu_stream = drv.CUstream(stream)
        ptrs: dict[int, int] = {}
        try:
            for buf in host_buffers(self.bound):  # one allocation per distinct host range
                ptr = int(check(drv.cuMemAlloc(max(buf.nbytes, 1)), f"cuMemAlloc({buf.nbytes})"))
                self._buffers.append((buf, ptr))
                if buf.nbytes:
                    check(drv.cuMemcpyHtoDAsync(drv.CUdeviceptr(ptr), buf.start, buf.nbytes,
                                                cu_stream), "cuMemcpyHtoDAsync")
                for member in buf.members:
                    ptrs[member.index] = buf.pointer(ptr, member)
            packed: list[bytes] = []
            for index, arg in enumerate(self.bound):
                if isinstance(arg, HostArg):
                    packed.append(arg.packed(ptrs[index]))
                else:
                    if isinstance(arg, DeviceArg) and arg.stream is not None \
                            and not _same_stream(arg.stream, stream):
                        _wait_for(drv, producer=arg.stream, consumer=cu_stream)
                    packed.append(arg.data)
        except BaseException:
            self.finish(copy_back=False)
            raise
        self._storage = [ctypes.create_string_buffer(data, max(len(data), 8)) for data in packed]
        self._pointers = (ctypes.c_void_p * max(len(packed), 1))(
            *[ctypes.addressof(buf) for buf in self._storage])

    def enqueue(self, grid: Any, block: Any, shared_mem: int = 0, *,
                cooperative: bool = False) -> None:
        """Launch once on the prepared stream (asynchronous); ``cooperative`` launches with
        ``cuLaunchCooperativeKernel`` (every block resident: grid-wide sync works)."""
        if self._closed:
            raise LaunchError("this PreparedLaunch has been finished")
        kernel = self.kernel
        g, b, smem = check_launch_dims(grid, block, shared_mem, max_threads=kernel.max_threads_per_block)
        kernel._check_shared(smem)
        drv = driver()
        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES starts at 48 KiB minus the static
        # shared memory; a launch asking for more fails unless the kernel opts in first.
        if smem > kernel._dyn_smem:
            attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check(drv.cuFuncSetAttribute(kernel.handle, attr, smem),
                  f"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES={smem})")
            kernel._dyn_smem = smem
        params = ctypes.addressof(self._pointers) if self.bound else None
        if cooperative:
            check(drv.cuLaunchCooperativeKernel(kernel.handle, g[0], g[1], g[2], b[0], b[1], b[2],
                                                smem, drv.CUstream(self.stream), params),
                  f"cuLaunchCooperativeKernel({kernel.name}, grid={g}, block={b})")
            return
        check(drv.cuLaunchKernel(kernel.handle, g[0], g[1], g[2], b[0], b[1], b[2], smem,
                                 drv.CUstream(self.stream), params, 0),
              f"cuLaunchKernel({kernel.name}, grid={g}, block={b}, shared_mem={smem})")

    def synchronize(self) -> None:
        """Wait for the stream (kernel faults surface here as :class:`DeviceError`)."""
        drv = driver()
        check(drv.cuStreamSynchronize(drv.CUstream(self.stream)), f"kernel {self.kernel.name!r}")

    def finish(self, copy_back: bool = True) -> None:
        """Copy host arrays back (when writable), wait, free their device copies (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if not self._buffers:
            return
        drv = driver()
        cu_stream = drv.CUstream(self.stream)
        try:
            if copy_back:
                for buf, ptr in self._buffers:
                    for member in buf.members:
                        arg = member.arg
                        if arg.writeback and arg.nbytes:
                            check(drv.cuMemcpyDtoHAsync(arg.array.ctypes.data,
                                                        drv.CUdeviceptr(buf.pointer(ptr, member)),
                                                        arg.nbytes, cu_stream),
                                  "cuMemcpyDtoHAsync")
            check(drv.cuStreamSynchronize(cu_stream), f"kernel {self.kernel.name!r}")
            if copy_back:
                for buf, _ in self._buffers:
                    for member in buf.members:
                        arg = member.arg
                        if arg.writeback and arg.target is not arg.array:
                            arg.target[...] = arg.array
        finally:
            for _, ptr in self._buffers:
                try:
                    check(drv.cuMemFree(drv.CUdeviceptr(ptr)), "cuMemFree")
                except DeviceError:
                    pass
            self._buffers.clear()

    def __enter__(self) -> "PreparedLaunch":
        return self

    def __exit__(self, exc_type, *rest) -> None:
        self.finish(copy_back=exc_type is None)


def _same_stream(a: int, b: int) -> bool:
    """Whether two stream handles name the same stream (0, the NULL stream, is the legacy
    default stream that CU_STREAM_LEGACY = 1 also names)."""
    legacy = (0, 1)
    return a == b or (a in legacy and b in legacy)


def _wait_for(drv, producer: int, consumer) -> None:
    """Order ``consumer`` after work already queued on the ``producer`` stream handle."""
    event = check(drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
    try:
        check(drv.cuEventRecord(event, drv.CUstream(producer)), "cuEventRecord(producer stream)")
        check(drv.cuStreamWaitEvent(consumer, event, 0), "cuStreamWaitEvent")
    finally:
        check(drv.cuEventDestroy(event), "cuEventDestroy")


def load(source: Union[ir.Module, str, bytes, Any], device: Union[int, Literal["emulator"]] = 0, *,
         signatures: Optional[Mapping[str, Sequence[ir.Param]]] = None,
         max_registers: Optional[int] = None) -> LoadedModule:
    """JIT-load ``source`` on ``device`` through the CUDA driver; return a :class:`LoadedModule`.

    ``source``: an :class:`ir.Module` (from the builder or the parser), PTX text, or
    cubin/fatbin bytes.  ``signatures`` supplies entry parameter lists the source does not
    carry.  ``max_registers`` caps registers per thread (``CU_JIT_MAX_REGISTERS``).
    Raises :class:`DeviceError` when there is no GPU/driver, the PTX targets a newer GPU than
    the device, or the driver rejects the code (with the JIT log).

    ``device="emulator"`` runs the kernels on the PTX interpreter instead (no GPU needed,
    :mod:`ptxforge.launch.emulated`): the same call, NumPy arrays copied in and out.

    Example::

        mod = load(kernels.saxpy())
        mod["saxpy"](n, 2.0, x, y, grid=(n + 255) // 256, block=256)
    """
    if device == "emulator":
        from .emulated import load_emulated

        return load_emulated(source, signatures)  # type: ignore[return-value]
    image = module_image(source, signatures)
    return LoadedModule(image, device, max_registers=max_registers)
