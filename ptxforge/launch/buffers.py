"""Host arrays grouped by the memory they occupy: one device allocation per distinct host range.
(Also the byte conversions of ``module.set`` / ``module.get`` for module variables.)

An array passed as two pointer arguments (``k(x, x)``), or two overlapping views of one buffer
(``x[:-1]`` and ``x[1:]``), must be *one* device allocation, or an in-place kernel writes one
copy and the other copy is written back over it.  :func:`host_buffers` merges host arguments
whose byte ranges overlap into a :class:`HostBuffer`; the launcher (GPU or emulator) copies
each buffer in once, gives every argument the buffer's device address plus its offset, and
copies each writable argument's own bytes back.  A non-contiguous array is copied to a
contiguous one before the launch, so it cannot share: it is refused when it overlaps another
argument.

Example::

    >>> import numpy as np
    >>> from ptxforge.launch.args import bind_args
    >>> from ptxforge.ptx import ir, types as T
    >>> k = ir.Kernel("k", params=(ir.Param("a", T.u64, pointer=True),
    ...                            ir.Param("b", T.u64, pointer=True)))
    >>> x = np.zeros(8, np.float32)
    >>> [(b.nbytes, [m.offset for m in b.members]) for b in host_buffers(bind_args(k, (x, x[2:])))]
    [(32, [0, 8])]
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import attrs

from ptxforge.errors import LaunchError

from .arrays import HostArg

__all__ = ["BufferMember", "HostBuffer", "host_buffers", "symbol_array", "symbol_bytes"]


@attrs.frozen(slots=True, kw_only=True)
class BufferMember:
    """One host argument inside a :class:`HostBuffer`: its position and byte offset."""

    index: int
    arg: HostArg
    offset: int


@attrs.frozen(slots=True, kw_only=True)
class HostBuffer:
    """A host byte range ``[start, start + nbytes)`` and the arguments that lie in it.

    ``data`` is a uint8 NumPy view of the range (the arguments' own memory), what is copied in.
    """

    start: int
    nbytes: int
    members: tuple[BufferMember, ...]
    data: Any = attrs.field(eq=False, repr=False)

    def pointer(self, base: int, member: BufferMember) -> int:
        """The device address of ``member`` once this buffer lives at ``base``."""
        return base + member.offset


def _span(arg: HostArg) -> tuple[int, int]:
    start = int(arg.array.ctypes.data)
    return start, start + arg.nbytes


def _target_span(arg: HostArg) -> tuple[int, int]:
    from numpy.lib.array_utils import byte_bounds

    lo, hi = byte_bounds(arg.target)
    return int(lo), int(hi)


def _check_copies(args: list[tuple[int, HostArg]]) -> None:
    """Refuse a non-contiguous argument whose memory overlaps another argument's."""
    for i, (index, arg) in enumerate(args):
        if arg.target is arg.array or not arg.nbytes:
            continue
        lo, hi = _target_span(arg)
        for other_index, other in args[:i] + args[i + 1:]:
            olo, ohi = _target_span(other)
            if other.nbytes and lo < ohi and olo < hi:
                raise LaunchError(
                    f"argument {index} ({arg.param.name!r}) is a non-contiguous array that "
                    f"shares memory with argument {other_index} ({other.param.name!r}); "
                    "expected contiguous arrays when arguments overlap (the launcher would "
                    "copy it and the copies would disagree)")


def host_buffers(bound: Sequence[Any]) -> tuple[HostBuffer, ...]:
    """The host arguments of ``bound`` (a :func:`~.args.bind_args` result) grouped into
    buffers of overlapping memory, in order of first argument."""
    import numpy as np

    args = [(i, a) for i, a in enumerate(bound) if isinstance(a, HostArg)]
    _check_copies(args)
    groups: list[list] = []  # [start, end, [(index, arg)]]
    for index, arg in args:
        lo, hi = _span(arg)
        hits = [g for g in groups if arg.nbytes and g[1] > g[0] and lo < g[1] and g[0] < hi]
        merged = [min([lo] + [g[0] for g in hits]), max([hi] + [g[1] for g in hits]),
                  [m for g in hits for m in g[2]] + [(index, arg)]]
        groups = [g for g in groups if not any(g is h for h in hits)] + [merged]
    groups.sort(key=lambda g: min(i for i, _ in g[2]))
    out = []
    for start, end, items in groups:
        size = end - start
        if size:
            data = np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(start))
        else:
            data = np.zeros(0, np.uint8)
        members = tuple(BufferMember(index=i, arg=a, offset=_span(a)[0] - start)
                        for i, a in sorted(items, key=lambda t: t[0]))
        out.append(HostBuffer(start=start, nbytes=size, members=members, data=data))
    return tuple(out)


def symbol_bytes(name: str, value: Any, size: int) -> bytes:
    """The bytes ``module.set(name, value)`` writes: a NumPy array or scalar, at most the
    variable's ``size`` bytes."""
    import numpy as np

    try:
        array = np.ascontiguousarray(value)
    except (TypeError, ValueError):
        raise LaunchError(f"module.set({name!r}, ...): expected a NumPy array or number, got "
                          f"{type(value).__name__}") from None
    if array.dtype.hasobject or array.dtype.kind not in "biuf":
        raise LaunchError(f"module.set({name!r}, ...): expected a numeric array, got dtype "
                          f"{array.dtype}")
    if array.nbytes > size:
        raise LaunchError(f"module.set({name!r}, ...): the variable holds {size} bytes, got "
                          f"{array.nbytes} ({array.dtype} x {array.size})")
    return array.tobytes()


def symbol_array(name: str, data: bytes, dtype: Any) -> Any:
    """``module.get(name, dtype)``: the variable's bytes as a NumPy array of ``dtype``."""
    import numpy as np

    dt = np.dtype(dtype)
    if len(data) % dt.itemsize:
        raise LaunchError(f"module.get({name!r}, {dt}): the variable's {len(data)} bytes are not "
                          f"a whole number of {dt} values")
    return np.frombuffer(data, dt).copy()
