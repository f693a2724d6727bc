"""Kernel arguments: Python values → the bytes a kernel parameter holds.  Pure Python, no GPU.

:func:`bind_args` matches the caller's positional and keyword arguments to a kernel's
parameters and converts each one, so that every mistake (a missing argument, ``-1`` for a
``.u32``, a float for an integer, an array for a scalar) raises :class:`~ptxforge.LaunchError`
naming the parameter *before* anything touches a GPU.  Each parameter becomes one of:

* :class:`ScalarArg` — the packed little-endian bytes of a scalar (or a ``.param`` array);
* :class:`DeviceArg` — the address of memory the GPU can already read, taken without a copy
  from ``__cuda_array_interface__``, DLPack (``__dlpack__``/``__dlpack_device__``), or an
  integer address;
* :class:`HostArg` — a NumPy (or CPU DLPack) array that the launcher copies to the device
  before the launch and back afterwards.

:func:`param_layout` places the parameters the way ptxas does (the one layout of
:mod:`ptxforge.ptx.layout`: each at the next multiple of the larger of its ``.align`` and its
element size; no padding at the end) and :func:`pack_param_buffer` writes the bound arguments
into one buffer with that layout.

Example::

    >>> from ptxforge.ptx import ir, types
    >>> from ptxforge.launch.args import bind_args
    >>> k = ir.Kernel("k", params=(ir.Param("n", types.u32), ir.Param("a", types.f32)))
    >>> [a.data.hex() for a in bind_args(k, (3, 2.0))]
    ['03000000', '00000040']
"""

from __future__ import annotations

import math
import operator
import struct
import sys
from typing import Any, Mapping, Optional, Sequence, Union

import attrs

from ptxforge.errors import LaunchError
from ptxforge.ptx import ir, layout
from ptxforge.ptx.layout import ParamSlot, element_count, param_align, params_size
from ptxforge.ptx.types import Kind, PtxType

from .arrays import (
    DeviceArg,
    DLPackInfo,
    HostArg,
    _describe,
    _dlpack_arg,
    _has,
    _host_arg,
    _is_array_like,
    cuda_array_interface_info,
    dlpack_info,
)

__all__ = [
    "LaunchConfig",
    "ScalarArg",
    "DeviceArg",
    "HostArg",
    "BoundArg",
    "DLPackInfo",
    "bind_args",
    "convert_arg",
    "pack_scalar",
    "param_size",
    "param_align",
    "ParamSlot",
    "param_layout",
    "pack_param_buffer",
    "accepts_array",
    "dlpack_info",
    "cuda_array_interface_info",
    "normalize_dim3",
    "check_launch_dims",
    "stream_handle",
]

_INT_STRUCT = {8: "B", 16: "H", 32: "I", 64: "Q"}
_FLOAT_STRUCT = {16: "e", 32: "f", 64: "d"}



# --- converted arguments ---------------------------------------------------------------------

@attrs.frozen(slots=True, kw_only=True)
class ScalarArg:
    """A scalar (or ``.param`` array) argument: the exact bytes the parameter will hold."""

    param: ir.Param
    data: bytes
    value: Any = attrs.field(eq=False, repr=False, default=None)


BoundArg = Union[ScalarArg, DeviceArg, HostArg]


# --- parameter layout ------------------------------------------------------------------------

def _elements(param: ir.Param) -> int:
    count = element_count(param.dims)
    if count is None:
        raise LaunchError(f"parameter {param.name!r} is an unsized array ({param.type}[]); "
                          "a kernel parameter needs a fixed size")
    return count


def param_size(param: ir.Param) -> int:
    """Size in bytes of the parameter as the kernel sees it (8 for a 64-bit pointer).

    :func:`ptxforge.ptx.layout.param_size`, refusing an unsized array with a
    :class:`~ptxforge.LaunchError`.
    """
    _elements(param)
    return layout.param_size(param)


def accepts_array(param: ir.Param) -> bool:
    """True when an array or device address may be passed: pointers and 64-bit integers.

    PTX from nvcc declares pointers as plain ``.u64`` parameters, so those accept arrays too.
    """
    if param.dims:
        return False
    if param.pointer:
        return True
    return param.type.bits == 64 and param.type.kind in (Kind.UNSIGNED, Kind.SIGNED, Kind.BITS)


def param_layout(params: Sequence[ir.Param]) -> tuple[ParamSlot, ...]:
    """Byte offset, size and alignment of each parameter, as ptxas lays them out
    (:func:`ptxforge.ptx.layout.param_layout`; an unsized array raises :class:`~ptxforge.LaunchError`).

    Example::

        >>> from ptxforge.ptx import ir, types
        >>> [(s.offset, s.size) for s in param_layout((ir.Param("a", types.u8),
        ...                                            ir.Param("b", types.f64)))]
        [(0, 1), (8, 8)]
    """
    for param in params:
        _elements(param)
    return layout.param_layout(params)


def _where(kernel_name: str, param: ir.Param, index: int) -> str:
    return f"parameter {param.name!r} ({param.type}{'*' if param.pointer else ''}, " \
           f"argument {index} of kernel {kernel_name!r})"


# --- scalars ---------------------------------------------------------------------------------

def _as_int(value: Any, ty: PtxType, where: str) -> int:
    if isinstance(value, float) or _is_numpy_float(value):
        raise LaunchError(f"{where}: expected an integer for {ty}, got {_describe(value)}")
    try:
        return operator.index(value)
    except TypeError:
        raise LaunchError(f"{where}: expected an integer for {ty}, got {_describe(value)}") from None


def _is_numpy_float(value: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, np.floating)


def _as_float(value: Any, ty: PtxType, where: str) -> float:
    if isinstance(value, (str, bytes, complex)) or _is_array_like(value):
        raise LaunchError(f"{where}: expected a real number for {ty}, got {_describe(value)}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise LaunchError(f"{where}: expected a real number for {ty}, got {_describe(value)}") from None


def _bf16_bits(x: float, where: str) -> int:
    """``x`` rounded once to bfloat16, nearest-even, as bits.

    Rounding the double to binary32 first and then to bf16 would round twice (1 + 2**-8 +
    2**-40 would become the tie 1 + 2**-8 and then 1.0); rounding to binary32 *to odd*
    (truncate, set the last bit when inexact) first keeps the second rounding exact, since
    binary32 carries more than two extra bits at every exponent bf16 has.
    """
    if math.isnan(x):
        (bits,) = struct.unpack("<I", struct.pack("<f", x))
        return (bits >> 16) | 0x40  # keep it a quiet NaN after truncation
    try:
        (bits,) = struct.unpack("<I", struct.pack("<f", x))
    except OverflowError:
        raise LaunchError(f"{where}: {x!r} overflows .bf16 (largest finite is about 3.39e38)") from None
    nearest = struct.unpack("<f", struct.pack("<I", bits))[0]
    if nearest != x:             # inexact (struct refuses to round a finite x to inf)
        if abs(nearest) > abs(x):
            bits -= 1            # the magnitude truncated toward zero
        bits |= 1                # sticky: inexact
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest, ties to even
    if (rounded & 0x7F80) == 0x7F80 and not math.isinf(x):
        raise LaunchError(f"{where}: {x!r} overflows .bf16 (largest finite is about 3.39e38)")
    return rounded & 0xFFFF


def _pack_float(x: float, ty: PtxType, where: str) -> bytes:
    if ty.name == "bf16":
        return _bf16_bits(x, where).to_bytes(2, "little")
    try:
        return struct.pack("<" + _FLOAT_STRUCT[ty.bits], x)
    except OverflowError:
        limit = {16: "65504", 32: "3.4028235e38", 64: "1.8e308"}[ty.bits]
        raise LaunchError(f"{where}: {x!r} is out of range for {ty} (largest finite is {limit})") from None


def pack_scalar(ty: PtxType, value: Any, where: str = "argument") -> bytes:
    """Pack one scalar of PTX type ``ty`` little-endian, range-checked.

    Unsigned types take ``0 .. 2**bits-1``, signed types ``-2**(bits-1) .. 2**(bits-1)-1``,
    bit types either range (stored as two's complement).  Floats must be finite in the target
    type unless they are inf or nan to begin with.  ``.f16x2``/``.bf16x2`` take a pair
    ``(low, high)``.  ``where`` names the parameter in error messages.
    """
    if ty.is_pred:
        raise LaunchError(f"{where}: .pred cannot be a kernel parameter; use .u32 or .u8")
    if ty.is_packed:
        if _is_array_like(value) or isinstance(value, (str, bytes)) or not hasattr(value, "__len__") \
                or len(value) != 2:
            raise LaunchError(f"{where}: expected a pair (low, high) for {ty}, got {_describe(value)}")
        lane = types_lane(ty)
        return b"".join(pack_scalar(lane, v, f"{where}[{i}]") for i, v in enumerate(value))
    if ty.is_float:
        return _pack_float(_as_float(value, ty, where), ty, where)
    number = _as_int(value, ty, where)
    bits = ty.bits
    if ty.kind is Kind.UNSIGNED:
        low, high = 0, (1 << bits) - 1
    elif ty.kind is Kind.SIGNED:
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    else:
        low, high = -(1 << (bits - 1)), (1 << bits) - 1
    if not low <= number <= high:
        raise LaunchError(f"{where}: {number} is out of range for {ty} (expected {low} .. {high})")
    return (number & ((1 << bits) - 1)).to_bytes(bits // 8, "little")


def types_lane(ty: PtxType) -> PtxType:
    """The one-lane type of a packed half type (``.f16x2`` → ``.f16``)."""
    return PtxType.get(ty.name[:-2])


def _pack_param_array(param: ir.Param, value: Any, where: str) -> bytes:
    size = param_size(param)
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if len(data) != size:
            raise LaunchError(f"{where}: expected {size} bytes for {param.type}"
                              f"{''.join(f'[{d}]' for d in param.dims)}, got {len(data)}")
        return data
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value).tobytes()
        if len(data) != size:
            raise LaunchError(f"{where}: expected an array of {size} bytes, got {len(data)} "
                              f"(shape {value.shape}, dtype {value.dtype})")
        return data
    count = _elements(param)
    if not hasattr(value, "__len__") or isinstance(value, str) or len(value) != count:
        raise LaunchError(f"{where}: expected {size} bytes or a sequence of {count} {param.type} "
                          f"values, got {_describe(value)}")
    return b"".join(pack_scalar(param.type, v, f"{where}[{i}]") for i, v in enumerate(value))


# --- arrays ----------------------------------------------------------------------------------

def convert_arg(param: ir.Param, value: Any, *, kernel_name: str = "?", index: int = 0,
                stream: int = 0, device: Optional[int] = None) -> BoundArg:
    """Convert one argument for ``param``; raise :class:`LaunchError` naming it when it does not fit.

    ``stream`` is the launch stream's handle, handed to DLPack producers so their pending work
    is ordered before the kernel.  ``device`` is the ordinal the kernel runs on: a DLPack
    tensor on another CUDA device is refused (None: not checked).
    """
    where = _where(kernel_name, param, index)
    if param.type.is_pred:
        raise LaunchError(f"{where}: .pred cannot be a kernel parameter")
    if param.dims:
        return ScalarArg(param=param, data=_pack_param_array(param, value, where), value=value)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        if not accepts_array(param):
            raise LaunchError(f"{where}: expected a {param.type} scalar, got a NumPy array "
                              f"(shape {value.shape}, dtype {value.dtype})")
        return _host_arg(value, param, where)
    if _has(value, "__cuda_array_interface__"):
        if not accepts_array(param):
            raise LaunchError(f"{where}: expected a {param.type} scalar, got a device array "
                              f"{type(value).__name__}")
        return cuda_array_interface_info(value, param, where)
    if _has(value, "__dlpack__") and _has(value, "__dlpack_device__"):
        if not accepts_array(param):
            raise LaunchError(f"{where}: expected a {param.type} scalar, got a DLPack tensor "
                              f"{type(value).__name__}")
        return _dlpack_arg(value, param, where, stream, device)
    is_devptr = type(value).__name__ == "CUdeviceptr"
    if param.pointer or (is_devptr and accepts_array(param)):
        if isinstance(value, (float, bool)) or value is None:
            raise LaunchError(f"{where}: expected an array or a device address, got {_describe(value)}")
        try:
            address = int(value) if is_devptr else operator.index(value)
        except TypeError:
            raise LaunchError(f"{where}: expected an array (NumPy, __cuda_array_interface__ or "
                              f"DLPack) or a device address, got {_describe(value)}") from None
        if address < 0 or address >= 1 << param.type.bits:
            raise LaunchError(f"{where}: address {address} does not fit {param.type}")
        return DeviceArg(param=param, ptr=address, nbytes=None, source="address")
    return ScalarArg(param=param, data=pack_scalar(param.type, value, where), value=value)


def bind_args(kernel: ir.Kernel, args: Sequence[Any], kwargs: Optional[Mapping[str, Any]] = None,
              *, stream: int = 0, device: Optional[int] = None) -> tuple[BoundArg, ...]:
    """Match ``args``/``kwargs`` to ``kernel.params`` like a Python call and convert each one.

    Raises :class:`LaunchError` for a wrong count, an unknown or repeated keyword, or any
    argument that does not fit its parameter; nothing is allocated or copied yet.
    ``stream`` and ``device`` are the launch's (see :func:`convert_arg`).
    """
    params = tuple(kernel.params)
    kwargs = dict(kwargs or {})
    signature = ", ".join(f"{p.name}: {p.type}{'*' if p.pointer else ''}" for p in params)
    if len(args) > len(params):
        raise LaunchError(f"kernel {kernel.name!r} takes {len(params)} arguments ({signature}), "
                          f"got {len(args)} positional")
    names = [p.name for p in params]
    for key in kwargs:
        if key not in names:
            raise LaunchError(f"kernel {kernel.name!r} has no parameter {key!r}; its parameters "
                              f"are ({signature})")
        if names.index(key) < len(args):
            raise LaunchError(f"kernel {kernel.name!r}: parameter {key!r} given both by position "
                              "and by keyword")
    missing = [p.name for p in params[len(args):] if p.name not in kwargs]
    if missing:
        raise LaunchError(f"kernel {kernel.name!r} takes {len(params)} arguments ({signature}); "
                          f"missing {', '.join(repr(m) for m in missing)}")
    values = list(args) + [kwargs[p.name] for p in params[len(args):]]
    return tuple(convert_arg(p, v, kernel_name=kernel.name, index=i, stream=stream, device=device)
                 for i, (p, v) in enumerate(zip(params, values)))


def pack_param_buffer(bound: Sequence[BoundArg], device_ptrs: Optional[Mapping[int, int]] = None) -> bytes:
    """All arguments in one buffer laid out by :func:`param_layout` (zero bytes in the gaps).

    This is the buffer ``cuLaunchKernel`` takes through ``CU_LAUNCH_PARAM_BUFFER_POINTER``
    and the image of the kernel's parameter space.  A :class:`HostArg` needs the device
    address of its copy: ``device_ptrs`` maps its index in ``bound`` to that address.
    """
    slots = param_layout([arg.param for arg in bound])
    out = bytearray(params_size(slots))
    for index, (arg, slot) in enumerate(zip(bound, slots)):
        if isinstance(arg, HostArg):
            if device_ptrs is None or index not in device_ptrs:
                raise LaunchError(f"pack_param_buffer: argument {index} ({arg.param.name!r}) is a "
                                  "host array; give the address of its device copy in device_ptrs")
            data = arg.packed(device_ptrs[index])
        else:
            data = arg.data
        if len(data) != slot.size:  # pragma: no cover - convert_arg packs exactly param_size
            raise LaunchError(f"parameter {arg.param.name!r}: {len(data)} bytes packed for a "
                              f"{slot.size}-byte slot")
        out[slot.offset:slot.offset + slot.size] = data
    return bytes(out)


# --- grid, block, stream ---------------------------------------------------------------------

def normalize_dim3(value: Any, what: str) -> tuple[int, int, int]:
    """``8`` or ``(8, 4)`` or ``(8, 4, 2)`` → ``(x, y, z)``, every extent a positive integer."""
    if isinstance(value, bool):
        raise LaunchError(f"{what} must be an int or a tuple of 1-3 ints, got {_describe(value)}")
    try:
        dims: tuple[int, ...] = (operator.index(value),)
    except TypeError:
        if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 3:
            raise LaunchError(f"{what} must be an int or a tuple of 1-3 ints, got {_describe(value)}") from None
        try:
            dims = tuple(operator.index(v) for v in value)
        except TypeError:
            raise LaunchError(f"{what} must contain only ints, got {_describe(value)}") from None
    dims = dims + (1,) * (3 - len(dims))
    if any(d < 1 for d in dims):
        raise LaunchError(f"{what} extents must be >= 1, got {dims}")
    return dims  # type: ignore[return-value]


_GRID_LIMITS = (2**31 - 1, 65535, 65535)
_BLOCK_LIMITS = (1024, 1024, 64)


@attrs.frozen(slots=True, kw_only=True)
class LaunchConfig:
    """One launch's shape: grid and block (ints or up to three dimensions), dynamic shared
    memory in bytes and the stream (None: the kernel's default), checked once against CUDA's
    architectural limits (:func:`check_launch_dims`) and kept normalised.

    Example::

        >>> LaunchConfig(grid=4, block=(16, 16)).block
        (16, 16, 1)
    """

    grid: tuple = attrs.field()
    block: tuple = attrs.field()
    shared_mem: int = 0
    stream: Any = None

    def __attrs_post_init__(self) -> None:
        grid, block, shared = check_launch_dims(self.grid, self.block, self.shared_mem)
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "block", block)
        object.__setattr__(self, "shared_mem", shared)


def check_launch_dims(grid: Any, block: Any, shared_mem: Any = 0, *,
                      max_threads: int = 1024) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """Validate a launch shape against CUDA's architectural limits; return it normalized.

    ``max_threads`` is the kernel's own limit (``CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK``)
    when known.
    """
    g = normalize_dim3(grid, "grid")
    b = normalize_dim3(block, "block")
    for axis, (extent, limit) in enumerate(zip(g, _GRID_LIMITS)):
        if extent > limit:
            raise LaunchError(f"grid extent {'xyz'[axis]}={extent} exceeds the limit {limit}")
    for axis, (extent, limit) in enumerate(zip(b, _BLOCK_LIMITS)):
        if extent > limit:
            raise LaunchError(f"block extent {'xyz'[axis]}={extent} exceeds the limit {limit}")
    threads = b[0] * b[1] * b[2]
    if threads > max_threads:
        raise LaunchError(f"block {b} has {threads} threads; this kernel allows at most {max_threads}")
    if isinstance(shared_mem, bool):
        raise LaunchError(f"shared_mem must be a byte count, got {_describe(shared_mem)}")
    try:
        smem = operator.index(shared_mem)
    except TypeError:
        raise LaunchError(f"shared_mem must be a byte count, got {_describe(shared_mem)}") from None
    if smem < 0:
        raise LaunchError(f"shared_mem must be >= 0 bytes, got {smem}")
    return g, b, smem


def stream_handle(stream: Any) -> int:
    """The ``CUstream`` handle (an int) of ``stream``; ``None`` is the legacy default stream (0).

    Accepts an int, anything with the ``__cuda_stream__`` protocol (cuda.core, recent PyTorch),
    a ``cuda_stream`` attribute (PyTorch), ``ptr`` (CuPy), ``handle`` (cuda.core), or a
    ``cuda.bindings`` ``CUstream``.
    """
    if stream is None:
        return 0
    if isinstance(stream, bool):
        raise LaunchError(f"stream must be a stream object or handle, got {_describe(stream)}")
    if hasattr(stream, "__cuda_stream__"):
        info = stream.__cuda_stream__
        info = info() if callable(info) else info  # a method; a property in cuda.core 0.1
        if not isinstance(info, tuple) or len(info) != 2:
            raise LaunchError(f"__cuda_stream__() must return (version, handle), got {_describe(info)}")
        return int(info[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr) and not isinstance(stream, int):
            return stream_handle(int(getattr(stream, attr)))
    try:
        handle = int(stream) if type(stream).__name__ == "CUstream" else operator.index(stream)
    except TypeError:
        raise LaunchError(f"stream must be None, a handle or a stream object, got {_describe(stream)}") from None
    if handle < 0:
        raise LaunchError(f"stream handle must be >= 0, got {handle}")
    return handle
