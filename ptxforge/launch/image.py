"""What :func:`ptxforge.launch.loader.load` hands the driver, worked out without a GPU.

:func:`module_image` classifies the source (an :class:`~ptxforge.ptx.ir.Module`, PTX text, a
cubin or fatbin) and collects the kernels' signatures; :func:`check_target` says whether PTX
for a target can run on a device of a given compute capability; :func:`cubin_param_layout`
reads the parameter layout ptxas recorded in a cubin (``EIATTR_KPARAM_INFO``), against which
a user-given signature for a cubin is checked before anything is loaded.

Example::

    >>> from ptxforge.dsl import kernels
    >>> image = module_image(kernels.saxpy(target="sm_80"))
    >>> image.kind, image.target, [p.name for p in image.signatures["saxpy"]]
    ('ptx', 'sm_80', ['n', 'a', 'x', 'y'])
"""

from __future__ import annotations

import re
import struct
from types import MappingProxyType
from typing import Any, Mapping, Optional, Sequence

import attrs

from ptxforge.arch.targets import TARGETS
from ptxforge.errors import LaunchError, PtxforgeError
from ptxforge.ptx import ir

from .args import param_layout

__all__ = [
    "ModuleImage",
    "module_image",
    "ptx_target",
    "check_target",
    "cubin_param_layout",
    "check_cubin_signatures",
    "cubin_target_problem",
]

_FATBIN_MAGIC = b"\x50\xed\x55\xba"
_TARGET_RE = re.compile(r"^\s*\.target\s+(sm_\d+[af]?)", re.MULTILINE)
_KPARAM_INFO = 0x17


@attrs.frozen(slots=True, kw_only=True)
class ModuleImage:
    """The bytes handed to the driver, what they are, and the kernels' signatures if known.

    ``kind`` is ``"ptx"``, ``"cubin"`` or ``"fatbin"``; ``data`` is NUL-terminated for PTX;
    ``signatures`` maps entry names to their parameter tuples; ``signature_error`` says why
    PTX text gave none (ptxforge.ptx.parse rejected it), so a later "no signature" error can.
    """

    kind: str
    data: bytes = attrs.field(repr=False)
    ptx: Optional[str] = attrs.field(default=None, repr=False)
    target: Optional[str] = None
    signatures: Mapping[str, tuple] = attrs.field(factory=dict, repr=False,
                                                  converter=lambda m: MappingProxyType(dict(m)))
    signature_error: Optional[str] = None


def ptx_target(ptx: str) -> Optional[str]:
    """The ``.target`` of PTX text (``"sm_80"``, ``"sm_90a"``), or None if it has none."""
    match = _TARGET_RE.search(ptx)
    return match.group(1) if match else None


def check_target(target: Optional[str], compute_capability: tuple) -> Optional[str]:
    """None when PTX for ``target`` can be JIT-compiled for a device of ``compute_capability``,
    else why not.  ``sm_XY`` runs on any device of capability >= X.Y; ``sm_XYa``/``sm_XYf``
    only on X.Y (``f``: on the same major family with minor >= Y)."""
    if target is None:
        return None
    tgt = TARGETS.get(target)   # the exact word of a PTX .target directive
    if tgt is None:
        return f"unrecognized PTX target {target!r}"
    need = (tgt.major, tgt.minor)
    have = tuple(compute_capability)
    device = f"sm_{have[0]}{have[1]}"
    suffix = tgt.suffix
    if suffix == "a" and have != need:
        return (f"the PTX targets {target}, which runs only on compute capability "
                f"{need[0]}.{need[1]}, but the device is {device}; build for {device}")
    if suffix == "f" and (have[0] != need[0] or have[1] < need[1]):
        return (f"the PTX targets {target}, a family target for {need[0]}.x with x >= {need[1]}, "
                f"but the device is {device}; build for {device}")
    if have < need:
        return (f"the PTX targets {target} but the device is {device} (older); build the module "
                f"for target={device!r} or lower")
    return None


def _signatures_from_ptx(ptx: str) -> tuple[dict, Optional[str]]:
    """Entry signatures of PTX text through :func:`ptxforge.ptx.parse.parse`, and why not if it fails."""
    from ptxforge.ptx.parse import parse

    try:
        parsed = parse(ptx)
    except PtxforgeError as exc:
        return {}, f"ptxforge.ptx.parse could not read the PTX: {str(exc).splitlines()[0]}"
    return {k.name: tuple(k.params) for k in parsed.entries}, None


def module_image(source: Any, signatures: Optional[Mapping[str, Sequence[ir.Param]]] = None) -> ModuleImage:
    """Classify ``source`` for loading (pure: no GPU).

    ``source`` is an :class:`ir.Module`, PTX text (``str``), cubin/fatbin/PTX ``bytes``, or an
    object with a ``cubin`` attribute (a compile result).  ``signatures`` adds or overrides
    entry signatures (needed for cubins, and for PTX text :mod:`ptxforge.ptx.parse` cannot read);
    for a cubin they are checked against its own parameter layout here (LaunchError).
    """
    extra = {name: tuple(params) for name, params in (signatures or {}).items()}
    for name, params in extra.items():
        if not all(isinstance(p, ir.Param) for p in params):
            raise LaunchError(f"signatures[{name!r}] must be a sequence of ir.Param")
    if isinstance(source, ir.Module):
        from ptxforge.ptx.emit import emit

        ptx = emit(source)
        sigs = {k.name: tuple(k.params) for k in source.entries}
        sigs.update(extra)
        return ModuleImage(kind="ptx", data=ptx.encode() + b"\0", ptx=ptx, target=source.target,
                           signatures=sigs)
    if isinstance(source, str):
        sigs, why = _signatures_from_ptx(source)
        sigs.update(extra)
        return ModuleImage(kind="ptx", data=source.encode() + b"\0", ptx=source,
                           target=ptx_target(source), signatures=sigs, signature_error=why)
    cubin = getattr(source, "cubin", None)
    if isinstance(cubin, (bytes, bytearray)) and not isinstance(source, (bytes, bytearray)):
        sigs = {}
        parent = getattr(source, "module", None)
        if isinstance(parent, ir.Module):
            sigs = {k.name: tuple(k.params) for k in parent.entries}
        sigs.update(extra)
        check_cubin_signatures(bytes(cubin), sigs)
        return ModuleImage(kind="cubin", data=bytes(cubin), ptx=None, target=None, signatures=sigs)
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if data.startswith(b"\x7fELF"):
            check_cubin_signatures(data, extra)
            return ModuleImage(kind="cubin", data=data, ptx=None, target=None, signatures=extra)
        if data.startswith(_FATBIN_MAGIC):
            return ModuleImage(kind="fatbin", data=data, ptx=None, target=None, signatures=extra)
        try:
            text = data.rstrip(b"\0").decode()
        except UnicodeDecodeError:
            raise LaunchError("bytes given to load() are neither a cubin (ELF), a fatbin, "
                              "nor PTX text") from None
        return module_image(text, extra)
    raise LaunchError(f"load() expects an ir.Module, PTX text, or cubin/fatbin bytes; "
                      f"got {type(source).__name__}")


def cubin_param_layout(cubin: Any, kernel: str) -> tuple[tuple[int, int], ...]:
    """``(offset, size)`` of each parameter of ``kernel``, in order, as ptxas recorded them in
    the cubin (``EIATTR_KPARAM_INFO``; what the driver's ``cuFuncGetParamInfo`` reports).

    ``cubin`` is the cubin's bytes or a :func:`ptxforge.read_cubin` result.  Each record's
    payload is ``index:u32, ordinal:u16, offset:u16, flags:u32`` with the size in bytes in
    ``flags`` bits 18..31.  Raises :class:`LaunchError` when the cubin has no such kernel and
    :class:`PtxforgeError` when it is not a cubin.
    """
    from ptxforge.toolchain.cubin import read_cubin

    info = read_cubin(cubin) if isinstance(cubin, (bytes, bytearray, memoryview)) else cubin
    try:
        entry = info.kernel(kernel)
    except KeyError:
        names = ", ".join(k.name for k in info.kernels) or "none"
        raise LaunchError(f"the cubin has no kernel {kernel!r} (kernels: {names})") from None
    slots = {}
    for record in entry.records:
        if record.attribute == _KPARAM_INFO and isinstance(record.value, bytes) \
                and len(record.value) >= 12:
            _index, ordinal, offset, flags = struct.unpack_from("<IHHI", record.value)
            slots[ordinal] = (offset, (flags >> 18) & 0x3FFF)
    if sorted(slots) != list(range(len(slots))):
        raise PtxforgeError(f"cubin: kernel {kernel!r} has parameter records for ordinals "
                            f"{sorted(slots)}, expected 0..{len(slots) - 1}")
    return tuple(slots[i] for i in range(len(slots)))


def check_cubin_signatures(cubin: bytes, signatures: Mapping[str, Sequence[ir.Param]]) -> None:
    """Check each signature against the cubin's own parameter layout (no GPU needed).

    Raises :class:`LaunchError` naming the kernel and the parameter whose count, size or
    offset differs from what ptxas recorded.  Bytes this reader cannot parse as a cubin are
    left to the driver (which checks the layout again when the kernel is fetched).
    """
    from ptxforge.toolchain.cubin import read_cubin

    if not signatures:
        return
    try:
        info = read_cubin(cubin)
    except PtxforgeError:
        return
    for name, params in signatures.items():
        recorded = cubin_param_layout(info, name)
        if len(recorded) != len(params):
            raise LaunchError(f"signatures[{name!r}] lists {len(params)} parameters but the "
                              f"cubin's kernel {name!r} takes {len(recorded)}")
        for param, slot, (offset, size) in zip(params, param_layout(params), recorded):
            if size != slot.size:
                raise LaunchError(f"signatures[{name!r}]: parameter {param.name!r} is {slot.size} "
                                  f"bytes ({param.type}) but the cubin's is {size}")
            if offset != slot.offset:
                raise LaunchError(f"signatures[{name!r}]: parameter {param.name!r} would be at "
                                  f"byte {slot.offset} but the cubin has it at {offset}")


def cubin_target_problem(cubin: bytes, compute_capability: tuple) -> Optional[str]:
    """None when a cubin can run on a device of ``compute_capability``, else why not.

    SASS for sm_XY runs on compute capability X.Z with Z >= Y only (no JIT for a cubin).
    """
    from ptxforge.toolchain.cubin import read_cubin

    try:
        sm = read_cubin(cubin).sm
    except PtxforgeError:
        return None  # let the driver judge what this reader cannot
    need = (sm // 10, sm % 10)
    have = tuple(compute_capability)
    if need[0] != have[0] or have[1] < need[1]:
        return (f"the cubin holds SASS for sm_{sm}, which runs only on compute capability "
                f"{need[0]}.{need[1]}..{need[0]}.9, but the device is sm_{have[0]}{have[1]}; "
                "compile for this device (or load PTX, which the driver JIT-compiles)")
    return None
