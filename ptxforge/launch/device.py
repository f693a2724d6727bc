"""The CUDA driver, reached lazily: device contexts, error checks, and a small device array.

Nothing here imports ``cuda.bindings`` at module import; the first call that needs the driver
does, and a machine without a GPU or driver gets a :class:`~ptxforge.DeviceError` saying what
is missing.  ptxforge uses each device's *primary* context, the one the CUDA runtime (and so
PyTorch and CuPy) uses, so their arrays and streams can be passed to ptxforge kernels.

Example::

    >>> from ptxforge.launch import device
    >>> reason = device.gpu_unavailable_reason()   # None on a machine with a usable GPU
    >>> reason is None or isinstance(reason, str)
    True
"""

from __future__ import annotations

import threading
from typing import Any, Optional

import attrs

from ptxforge.errors import DeviceError

__all__ = [
    "DeviceInfo",
    "DeviceArray",
    "driver",
    "check",
    "gpu_unavailable_reason",
    "device_info",
    "use_device",
    "synchronize",
]

_LOCK = threading.Lock()
_CONTEXTS: dict[int, tuple[Any, Any]] = {}  # ordinal -> (CUdevice, CUcontext)
_INIT_ERROR: Optional[str] = None
_INITIALIZED = False

# Hints appended to driver errors that users meet most often.
_HINTS = {
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": "the PTX .version is newer than this driver's JIT "
    "understands; update the NVIDIA driver or build the module with an older PTX ISA version",
    "CUDA_ERROR_NO_BINARY_FOR_GPU": "the code was built for a different GPU architecture; "
    "build for this device's sm_XX (see device_info().target)",
    "CUDA_ERROR_INVALID_PTX": "the driver's ptxas rejected the PTX (see the JIT log below)",
    "CUDA_ERROR_ILLEGAL_ADDRESS": "a kernel accessed memory out of bounds or through a bad "
    "pointer; the context is now unusable and the process must restart",
    "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES": "too many registers or too much shared memory for "
    "this block size; use a smaller block",
    "CUDA_ERROR_INVALID_VALUE": "an argument to the driver was out of range (grid, block, "
    "shared memory, or pointer)",
}


def driver():
    """The ``cuda.bindings.driver`` module, or :class:`DeviceError` saying how to get it."""
    try:
        from cuda.bindings import driver as drv
    except ImportError as exc:
        # `from None`: the message says it all; no cuda.bindings traceback for the user
        raise DeviceError("running kernels needs the cuda-bindings package "
                          f"(pip install cuda-bindings), which could not be imported: {exc}") from None
    return drv


def _error_name(drv, err) -> str:
    try:
        code, name = drv.cuGetErrorName(err)
        if code == drv.CUresult.CUDA_SUCCESS and name:
            return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        pass
    return getattr(err, "name", str(err))


def _error_string(drv, err) -> str:
    try:
        code, text = drv.cuGetErrorString(err)
        if code == drv.CUresult.CUDA_SUCCESS and text:
            return text.decode() if isinstance(text, bytes) else str(text)
    except Exception:
        pass
    return ""


def check(result, what: str):
    """Unpack a ``cuda.bindings`` result tuple ``(CUresult, *values)``; raise on failure.

    Returns None, the single value, or a tuple of values.  The :class:`DeviceError` names the
    call, the driver's error name and description, and a hint for common errors.
    """
    drv = driver()
    if isinstance(result, tuple):
        err, values = result[0], result[1:]
    else:
        err, values = result, ()
    if err != drv.CUresult.CUDA_SUCCESS:
        name = _error_name(drv, err)
        text = _error_string(drv, err)
        message = f"{what} failed: {name}" + (f" ({text})" if text else "")
        if name in _HINTS:
            message += f"; {_HINTS[name]}"
        error = DeviceError(message)
        error.cuda_error = name
        raise error
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _init() -> None:
    """cuInit once per process; remember why it failed so later calls fail the same way."""
    global _INITIALIZED, _INIT_ERROR
    if _INITIALIZED:
        if _INIT_ERROR is not None:
            raise DeviceError(_INIT_ERROR)
        return
    drv = driver()
    try:
        result = drv.cuInit(0)
    except Exception as exc:
        # cuda.bindings loads libcuda.so on the first driver call; without the NVIDIA driver
        # cuda.pathfinder raises DynamicLibNotFoundError (a RuntimeError) from every call.
        _INITIALIZED = True
        _INIT_ERROR = ("no CUDA driver: the NVIDIA driver library (libcuda.so) could not be "
                       f"loaded ({type(exc).__name__}: {exc}). Building, emitting and compiling "
                       "kernels works without one; running them needs an NVIDIA GPU and driver.")
        raise DeviceError(_INIT_ERROR) from None
    err = result[0] if isinstance(result, tuple) else result
    if err != drv.CUresult.CUDA_SUCCESS:
        _INITIALIZED = True
        _INIT_ERROR = (f"cuInit failed ({_error_name(drv, err)}): the CUDA driver is installed "
                       "but found no usable NVIDIA GPU")
        raise DeviceError(_INIT_ERROR)
    _INITIALIZED = True


def gpu_unavailable_reason(device: int = 0) -> Optional[str]:
    """None when ``device`` can run kernels, else a one-line reason why not."""
    try:
        use_device(device)
    except DeviceError as exc:
        return str(exc)
    return None


def use_device(device: int = 0):
    """Make ``device``'s primary context current on this thread; return ``(CUdevice, CUcontext)``."""
    if isinstance(device, bool) or not isinstance(device, int) or device < 0:
        raise DeviceError(f"device must be a non-negative int ordinal, got {device!r}")
    with _LOCK:
        _init()
        drv = driver()
        if device not in _CONTEXTS:
            count = check(drv.cuDeviceGetCount(), "cuDeviceGetCount")
            if count == 0:
                raise DeviceError("the CUDA driver reports no devices")
            if device >= count:
                raise DeviceError(f"device {device} requested, but only {count} CUDA device"
                                  f"{'s are' if count != 1 else ' is'} present (0..{count - 1})")
            dev = check(drv.cuDeviceGet(device), f"cuDeviceGet({device})")
            ctx = check(drv.cuDevicePrimaryCtxRetain(dev), f"cuDevicePrimaryCtxRetain({device})")
            _CONTEXTS[device] = (dev, ctx)
        dev, ctx = _CONTEXTS[device]
    check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return dev, ctx


@attrs.frozen(slots=True, kw_only=True)
class DeviceInfo:
    """What ptxforge needs to know about a device: name, compute capability, limits."""

    ordinal: int
    name: str
    compute_capability: tuple
    multiprocessors: int
    driver_version: int
    total_memory: int
    max_threads_per_block: int
    max_shared_per_block_optin: int
    regs_per_multiprocessor: int
    max_threads_per_multiprocessor: int
    l2_cache_bytes: int

    @property
    def target(self) -> str:
        """The PTX target of this device, e.g. ``"sm_90"``."""
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"

    @property
    def driver_cuda_version(self) -> tuple:
        """The CUDA version the driver supports, as ``(major, minor)``."""
        return (self.driver_version // 1000, (self.driver_version % 1000) // 10)


def device_info(device: int = 0) -> DeviceInfo:
    """Query name, compute capability and limits of ``device`` (needs a GPU)."""
    dev, _ = use_device(device)
    drv = driver()
    attr = drv.CUdevice_attribute

    def get(a):
        return check(drv.cuDeviceGetAttribute(a, dev), f"cuDeviceGetAttribute({a.name})")

    raw = check(drv.cuDeviceGetName(256, dev), "cuDeviceGetName")
    name = raw.split(b"\0", 1)[0].decode(errors="replace") if isinstance(raw, bytes) else str(raw)
    return DeviceInfo(
        ordinal=device,
        name=name,
        compute_capability=(get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                            get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
        multiprocessors=get(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        driver_version=check(drv.cuDriverGetVersion(), "cuDriverGetVersion"),
        total_memory=int(check(drv.cuDeviceTotalMem(dev), "cuDeviceTotalMem")),
        max_threads_per_block=get(attr.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
        max_shared_per_block_optin=get(attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        regs_per_multiprocessor=get(attr.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
        max_threads_per_multiprocessor=get(attr.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
        l2_cache_bytes=get(attr.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
    )


def synchronize(device: int = 0) -> None:
    """Wait for all work on ``device``'s context (surfaces asynchronous kernel errors)."""
    use_device(device)
    check(driver().cuCtxSynchronize(), "cuCtxSynchronize")


def _numpy():
    try:
        import numpy
    except ImportError:  # pragma: no cover
        raise DeviceError("DeviceArray needs NumPy (pip install numpy)") from None
    return numpy


class DeviceArray:
    """A C-contiguous array in device memory, owned by ptxforge (for when CuPy/PyTorch are absent).

    Exposes ``__cuda_array_interface__`` (v3), so it can be passed to any kernel argument that
    takes an array, without a copy.  Free it with :meth:`free` or a ``with`` block.

    Example::

        x = DeviceArray.from_host(np.arange(1024, dtype=np.float32))
        kernel(x, grid=4, block=256)
        result = x.to_host()
    """

    __slots__ = ("ptr", "shape", "dtype", "nbytes", "device", "_freed")

    def __init__(self, shape, dtype, device: int = 0) -> None:
        np = _numpy()
        self.shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if any(s < 0 for s in self.shape):
            raise DeviceError(f"DeviceArray shape must be non-negative, got {self.shape}")
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.device = device
        self._freed = True
        use_device(device)
        self.ptr = int(check(driver().cuMemAlloc(max(self.nbytes, 1)), f"cuMemAlloc({self.nbytes})"))
        self._freed = False

    @classmethod
    def empty(cls, shape, dtype, device: int = 0) -> "DeviceArray":
        """Uninitialized device memory of ``shape`` and ``dtype``."""
        return cls(shape, dtype, device)

    @classmethod
    def zeros(cls, shape, dtype, device: int = 0) -> "DeviceArray":
        """Device memory of ``shape`` and ``dtype`` set to zero bytes."""
        out = cls(shape, dtype, device)
        if out.nbytes:
            drv = driver()
            check(drv.cuMemsetD8(drv.CUdeviceptr(out.ptr), 0, out.nbytes), "cuMemsetD8")
        return out

    @classmethod
    def from_host(cls, array, device: int = 0) -> "DeviceArray":
        """A device copy of a host array (made C-contiguous first)."""
        np = _numpy()
        host = np.ascontiguousarray(array)
        out = cls(host.shape, host.dtype, device)
        out.copy_from_host(host)
        return out

    def _live(self) -> None:
        if self._freed:
            raise DeviceError("this DeviceArray has been freed")

    def copy_from_host(self, array) -> None:
        """Copy a host array of the same size into this one (synchronous)."""
        self._live()
        np = _numpy()
        host = np.ascontiguousarray(array)
        if host.nbytes != self.nbytes:
            raise DeviceError(f"copy_from_host: expected {self.nbytes} bytes, got {host.nbytes} "
                              f"(shape {host.shape}, dtype {host.dtype})")
        if self.nbytes:
            use_device(self.device)
            drv = driver()
            check(drv.cuMemcpyHtoD(drv.CUdeviceptr(self.ptr), host.ctypes.data, self.nbytes),
                  "cuMemcpyHtoD")

    def to_host(self):
        """A new host NumPy array with this array's contents (synchronizes the context)."""
        self._live()
        np = _numpy()
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            use_device(self.device)
            drv = driver()
            check(drv.cuCtxSynchronize(), "cuCtxSynchronize")
            check(drv.cuMemcpyDtoH(out.ctypes.data, drv.CUdeviceptr(self.ptr), self.nbytes),
                  "cuMemcpyDtoH")
        return out

    @property
    def __cuda_array_interface__(self) -> dict:
        self._live()
        return {
            "version": 3,
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "strides": None,
            "stream": None,
        }

    def free(self) -> None:
        """Release the device memory (idempotent)."""
        if not self._freed:
            self._freed = True
            try:
                use_device(self.device)
                check(driver().cuMemFree(driver().CUdeviceptr(self.ptr)), "cuMemFree")
            except DeviceError:
                pass

    def __enter__(self) -> "DeviceArray":
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:
            pass

    def __len__(self) -> int:
        return self.shape[0] if self.shape else 1

    def __repr__(self) -> str:
        state = "freed" if self._freed else f"{self.ptr:#x}"
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={self.device}, at {state})"
