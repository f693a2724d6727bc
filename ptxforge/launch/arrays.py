"""Array arguments: NumPy arrays to copy, device memory to pass by address.  Pure Python + ctypes.

:func:`cuda_array_interface_info` reads ``__cuda_array_interface__`` (CuPy, Numba, PyTorch,
:class:`~ptxforge.launch.device.DeviceArray`); :func:`dlpack_info` reads an unconsumed DLPack capsule
(``DLManagedTensor`` or ``DLManagedTensorVersioned``) through ctypes; host arrays become
:class:`HostArg` for the launcher to copy in and out.  Used by :mod:`ptxforge.launch.args`.

Example::

    >>> import numpy as np
    >>> info = dlpack_info(np.arange(6.0).reshape(2, 3).__dlpack__())
    >>> info.shape, info.bits, info.c_contiguous
    ((2, 3), 64, True)
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any, Mapping, Optional, Sequence, Union

import attrs

from ptxforge.errors import LaunchError
from ptxforge.ptx import ir

__all__ = [
    "DeviceArg",
    "HostArg",
    "DLPackInfo",
    "dlpack_info",
    "cuda_array_interface_info",
]

# DLPack device types whose memory a CUDA kernel can address directly.
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA host (pinned)", 4: "OpenCL", 7: "Vulkan",
                    8: "Metal", 9: "VPI", 10: "ROCm", 11: "ROCm host", 13: "CUDA managed",
                    14: "oneAPI"}
_DLPACK_FLAG_READ_ONLY = 1 << 0


@attrs.frozen(slots=True, kw_only=True)
class DeviceArg:
    """Device-accessible memory passed by address, without a copy.

    ``source`` says how the address was found (``"cuda_array_interface"``, ``"dlpack"`` or
    ``"address"``); ``stream`` is the producer's stream the launch must wait on (from
    ``__cuda_array_interface__`` v3), if any; ``keepalive`` holds whatever must outlive the
    launch (a DLPack capsule, the producer object).
    """

    param: ir.Param
    ptr: int
    nbytes: Optional[int] = None
    source: str = "address"
    device_id: Optional[int] = None
    readonly: bool = False
    stream: Optional[int] = None
    keepalive: Any = attrs.field(eq=False, repr=False, default=None)

    @property
    def data(self) -> bytes:
        """The pointer packed as the parameter's type."""
        return _pack_address(self.param, self.ptr)


@attrs.frozen(slots=True, kw_only=True)
class HostArg:
    """A host array copied in before the launch and, when ``writeback``, back out after.

    ``array`` is C-contiguous (a copy when the caller's was not); ``target`` is the caller's
    array that receives the result (the same object when ``array`` is not a copy).
    """

    param: ir.Param
    array: Any = attrs.field(eq=False, repr=False)
    target: Any = attrs.field(eq=False, repr=False)
    nbytes: int = 0
    writeback: bool = True

    def packed(self, device_ptr: int) -> bytes:
        """The parameter bytes once the device copy lives at ``device_ptr``."""
        return _pack_address(self.param, device_ptr)


def _pack_address(param: ir.Param, ptr: int) -> bytes:
    bits = param.type.bits
    if ptr < 0 or ptr >= 1 << bits:
        raise LaunchError(f"address {ptr:#x} does not fit the {bits}-bit parameter {param.name!r}")
    return int(ptr).to_bytes(bits // 8, "little")


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


# --- protocols -----------------------------------------------------------------------------

def _has(value: Any, name: str) -> bool:
    """``hasattr`` that counts an attribute whose getter raises as present (the reader then
    reports the producer's error instead of it escaping from a type check)."""
    try:
        return hasattr(value, name)
    except Exception:
        return True


def _is_array_like(value: Any) -> bool:
    if _has(value, "__cuda_array_interface__") or _has(value, "__dlpack__"):
        return True
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, np.ndarray)


def _c_contiguous(shape: Sequence[int], strides: Optional[Sequence[int]], itemsize: int) -> bool:
    """True when ``strides`` (in bytes, or None) describe a C-ordered, gap-free layout."""
    if strides is None:
        return True
    expected = itemsize
    for extent, stride in zip(reversed(tuple(shape)), reversed(tuple(strides))):
        if extent == 0:
            return True
        if extent != 1 and stride != expected:
            return False
        expected *= extent
    return True


def _prod(values: Sequence[int]) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def cuda_array_interface_info(obj: Any, param: ir.Param, where: str) -> DeviceArg:
    """Read ``obj.__cuda_array_interface__`` (versions 0-3) into a :class:`DeviceArg`."""
    try:
        cai = obj.__cuda_array_interface__
    except Exception as exc:  # the producer may raise (e.g. array on another device)
        raise LaunchError(f"{where}: reading __cuda_array_interface__ failed: {exc}") from exc
    if not isinstance(cai, Mapping) or "data" not in cai or "shape" not in cai or "typestr" not in cai:
        raise LaunchError(f"{where}: __cuda_array_interface__ must be a dict with 'data', 'shape' "
                          f"and 'typestr', got {_describe(cai)}")
    data = cai["data"]
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise LaunchError(f"{where}: __cuda_array_interface__['data'] must be (pointer, readonly), "
                          f"got {_describe(data)}")
    ptr, readonly = data
    shape = tuple(int(s) for s in cai["shape"])
    typestr = str(cai["typestr"])
    try:
        itemsize = int(typestr[2:])
    except ValueError:
        raise LaunchError(f"{where}: cannot read the item size from typestr {typestr!r}") from None
    if cai.get("mask") is not None:
        raise LaunchError(f"{where}: masked arrays cannot be passed to a kernel")
    strides = cai.get("strides")
    if not _c_contiguous(shape, strides, itemsize):
        raise LaunchError(f"{where}: expected a C-contiguous device array, got shape {shape} "
                          f"with strides {tuple(strides or ())} (make a contiguous copy first)")
    nbytes = _prod(shape) * itemsize
    if ptr is None or (ptr == 0 and nbytes):
        raise LaunchError(f"{where}: __cuda_array_interface__ has a null data pointer")
    stream = cai.get("stream") if int(cai.get("version", 0)) >= 3 else None
    if stream == 0:
        raise LaunchError(f"{where}: __cuda_array_interface__ 'stream' 0 is not allowed (v3); "
                          "the producer must give 1 (legacy default), 2 (per-thread) or a handle")
    return DeviceArg(param=param, ptr=int(ptr or 0), nbytes=nbytes, source="cuda_array_interface",
                     device_id=None, readonly=bool(readonly),
                     stream=None if stream is None else int(stream), keepalive=obj)


# DLPack C structures (dlpack.h), read through ctypes.

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", _DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


@attrs.frozen(slots=True, kw_only=True)
class DLPackInfo:
    """What a DLPack capsule describes: the data address (with ``byte_offset`` applied), the
    device, the shape, strides in elements (None when compact), and the element type."""

    ptr: int
    device_type: int
    device_id: int
    shape: tuple
    strides: Optional[tuple]
    type_code: int
    bits: int
    lanes: int
    readonly: bool
    versioned: bool

    @property
    def itemsize(self) -> int:
        return (self.bits * self.lanes + 7) // 8

    @property
    def nbytes(self) -> int:
        return _prod(self.shape) * self.itemsize

    @property
    def c_contiguous(self) -> bool:
        strides = None if self.strides is None else tuple(s * self.itemsize for s in self.strides)
        return _c_contiguous(self.shape, strides, self.itemsize)


def dlpack_info(capsule: Any) -> DLPackInfo:
    """Read an unconsumed ``"dltensor"`` or ``"dltensor_versioned"`` capsule.

    The capsule is left unconsumed (its name unchanged), so its own destructor still frees the
    tensor; keep the capsule alive for as long as the address is used.
    """
    versioned = bool(_capsule_is_valid(capsule, b"dltensor_versioned"))
    if versioned:
        addr = _capsule_get_pointer(capsule, b"dltensor_versioned")
        managed = _DLManagedTensorVersioned.from_address(addr)
        if managed.version.major > 1:
            raise LaunchError(f"DLPack version {managed.version.major}.{managed.version.minor} is "
                              "newer than the 1.x this reader understands")
        tensor, flags = managed.dl_tensor, int(managed.flags)
    elif _capsule_is_valid(capsule, b"dltensor"):
        addr = _capsule_get_pointer(capsule, b"dltensor")
        tensor, flags = _DLManagedTensor.from_address(addr).dl_tensor, 0
    else:
        raise LaunchError(f"expected an unconsumed DLPack capsule ('dltensor' or "
                          f"'dltensor_versioned'), got {_describe(capsule)}")
    ndim = int(tensor.ndim)
    shape = tuple(int(tensor.shape[i]) for i in range(ndim))
    strides = None
    if tensor.strides:
        strides = tuple(int(tensor.strides[i]) for i in range(ndim))
    return DLPackInfo(
        ptr=int(tensor.data or 0) + int(tensor.byte_offset),
        device_type=int(tensor.device.device_type),
        device_id=int(tensor.device.device_id),
        shape=shape,
        strides=strides,
        type_code=int(tensor.dtype.code),
        bits=int(tensor.dtype.bits),
        lanes=int(tensor.dtype.lanes),
        readonly=bool(flags & _DLPACK_FLAG_READ_ONLY),
        versioned=versioned,
    )


def _dlpack_arg(obj: Any, param: ir.Param, where: str, stream: int,
                device: Optional[int] = None) -> Union[DeviceArg, HostArg]:
    try:
        device_type, device_id = (int(v) for v in obj.__dlpack_device__())
    except Exception as exc:
        raise LaunchError(f"{where}: __dlpack_device__() failed or did not return "
                          f"(device_type, device_id): {exc}") from exc
    if device_type == _DL_CUDA and device is not None and device_id != device:
        raise LaunchError(f"{where}: expected a tensor on CUDA device {device} (the kernel's), "
                          f"got one on CUDA device {device_id}; copy it to device {device} first")
    if device_type == _DL_CPU:
        np = _numpy(where)
        try:
            array = np.from_dlpack(obj)
        except Exception as exc:
            raise LaunchError(f"{where}: could not view the CPU DLPack tensor through NumPy: {exc}") from exc
        return _host_arg(array, param, where)
    if device_type not in (_DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED):
        name = _DL_DEVICE_NAMES.get(device_type, f"type {device_type}")
        raise LaunchError(f"{where}: expected a CUDA or CPU array, got a DLPack tensor on {name}")
    # The DLPack stream argument: 1 stands for the legacy default stream (0 is not allowed).
    dl_stream = 1 if stream == 0 else stream
    try:
        try:
            capsule = obj.__dlpack__(stream=dl_stream, max_version=(1, 0))
        except TypeError:
            capsule = obj.__dlpack__(stream=dl_stream)
    except Exception as exc:
        raise LaunchError(f"{where}: __dlpack__() failed: {exc}") from exc
    info = dlpack_info(capsule)
    if info.device_type != device_type:
        raise LaunchError(f"{where}: __dlpack_device__ says "
                          f"{_DL_DEVICE_NAMES.get(device_type, device_type)} but the capsule holds "
                          f"a tensor on {_DL_DEVICE_NAMES.get(info.device_type, info.device_type)}")
    if not info.c_contiguous:
        raise LaunchError(f"{where}: expected a C-contiguous tensor, got shape {info.shape} with "
                          f"strides {info.strides} (in elements); make a contiguous copy first")
    return DeviceArg(param=param, ptr=info.ptr, nbytes=info.nbytes, source="dlpack",
                     device_id=info.device_id, readonly=info.readonly, stream=None,
                     keepalive=(capsule, obj))


def _numpy(where: str):
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy is present wherever host arrays exist
        raise LaunchError(f"{where}: NumPy is needed to copy host arrays") from None
    return numpy


def _host_arg(array: Any, param: ir.Param, where: str) -> HostArg:
    np = _numpy(where)
    if array.dtype.hasobject:
        raise LaunchError(f"{where}: expected a numeric array, got dtype {array.dtype}")
    contiguous = array if array.flags.c_contiguous else np.ascontiguousarray(array)
    return HostArg(param=param, array=contiguous, target=array, nbytes=int(contiguous.nbytes),
                   writeback=bool(array.flags.writeable))
