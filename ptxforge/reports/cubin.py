"""``ptxforge analyze`` on a cubin: what ptxas decided, read from the ELF, and its occupancy.

A cubin holds no PTX, so there is no liveness estimate and no instruction mix; what it does
hold (:mod:`ptxforge.toolchain.cubin`) is each kernel's register count (EIATTR_REGCOUNT), its stack
(EIATTR_MIN_STACK_SIZE, else the frame), static shared and local memory, constant bank 0
(kernel parameters and driver constants, with the parameter bytes), barriers, its launch
bounds (EIATTR_MAX_THREADS / REQNTID) and the register cap ptxas honoured.  Spill bytes are
only in ptxas's log, not in the cubin.  Occupancy and the register cliffs follow for the
block size (given, else the kernel's launch bounds, else 256).

JSON (``"schema": "ptxforge.analyze-cubin/1"``)::

    schema, file, arch, block_size, dynamic_shared, kernels: [
      {name, demangled, registers, register_cap, stack, frame, local, shared, constant_bank0,
       param_bytes, barriers, max_threads, occupancy: {registers, block_size, block_source,
       shared, dynamic_shared, blocks_per_sm, occupancy, limiter, limiters, active_warps,
       max_warps, launchable, reason, to_gain, next_blocks, headroom}}]

Example::

    >>> rep = analyze_cubin(open("k.cubin", "rb").read(), "k.cubin")   # doctest: +SKIP
    >>> rep.kernels[0].registers                                         # doctest: +SKIP
    31
"""

from __future__ import annotations

import math
from typing import Optional, Union

import attrs

from ptxforge._text import clip, short_path, table, wrap
from ptxforge.arch.occupancy import (
    KernelLimits,
    Occupancy,
    RegisterCliffs,
    occupancy,
    unknown_arch_reason,
)
from ptxforge.arch.spec import LaunchSpec, launch_spec
from ptxforge.arch.targets import target as as_target
from ptxforge.errors import PtxforgeError
from ptxforge.ptx.demangle import display_name, full_name
from ptxforge.toolchain.cubin import read_cubin

from .names import title_lines
from .resources import DEFAULT_BLOCK, cliffs_at, register_limit

__all__ = ["CUBIN_SCHEMA", "CubinKernelReport", "CubinReport", "analyze_cubin"]

CUBIN_SCHEMA = "ptxforge.analyze-cubin/1"
_ENTRY_RECORDS = ("PARAM_CBANK", "CBANK_PARAM_SIZE", "KPARAM_INFO")


def _product(dims) -> Optional[int]:
    """Threads in a ``(x, y, z)`` launch bound, or None when there is none."""
    return math.prod(dims) if dims else None


def is_entry(kernel) -> bool:
    """Whether a cubin function is a kernel (it has a parameter bank), not a device function."""
    return bool(kernel.constant0) or any(r.name in _ENTRY_RECORDS for r in kernel.records)


@attrs.frozen(slots=True, kw_only=True)
class CubinKernelReport:
    """One kernel of a cubin: its resources and occupancy (None for a target without an
    occupancy table, ``occupancy_note`` says so)."""

    name: str
    registers: int
    register_cap: Optional[int]
    stack: int
    frame: int
    local: int
    shared: int
    constant_bank0: int
    param_bytes: Optional[int]
    barriers: Optional[int]
    max_threads: Optional[int]
    block_size: int
    block_source: str
    dynamic_shared: int
    occupancy: Optional[Occupancy]
    cliffs: Optional[RegisterCliffs]
    occupancy_note: Optional[str] = None

    def to_dict(self) -> dict:
        o, c = self.occupancy, self.cliffs
        occ = {"registers": self.registers, "block_size": self.block_size,
               "block_source": self.block_source, "shared": None,
               "dynamic_shared": self.dynamic_shared, "blocks_per_sm": None, "occupancy": None,
               "limiter": None, "limiters": [], "active_warps": None, "max_warps": None,
               "launchable": None, "reason": self.occupancy_note, "to_gain": None,
               "next_blocks": None, "headroom": None}
        if o is not None:
            assert c is not None     # the occupancy and its cliffs are computed together
            occ.update(shared=o.shared_per_block, blocks_per_sm=o.active_blocks,
                       occupancy=round(o.occupancy, 6),
                       limiter=o.limiting[0] if o.limiting else None, limiters=list(o.limiting),
                       active_warps=o.active_warps, max_warps=o.max_warps,
                       launchable=o.launchable, reason=o.reason, to_gain=c.to_gain,
                       next_blocks=c.next_blocks, headroom=c.headroom)
        return {"name": self.name, "demangled": full_name(self.name),
                "registers": self.registers, "register_cap": self.register_cap,
                "stack": self.stack, "frame": self.frame, "local": self.local,
                "shared": self.shared, "constant_bank0": self.constant_bank0,
                "param_bytes": self.param_bytes, "barriers": self.barriers,
                "max_threads": self.max_threads, "occupancy": occ}


@attrs.frozen(slots=True, kw_only=True)
class CubinReport:
    """Every kernel of one cubin (device functions are left out: they are not launched)."""

    file: str
    arch: str
    block_size: int
    dynamic_shared: int
    kernels: tuple
    functions: tuple = ()          # names of the device functions in the cubin

    def to_dict(self) -> dict:
        return {"schema": CUBIN_SCHEMA, "file": self.file, "arch": self.arch,
                "block_size": self.block_size, "dynamic_shared": self.dynamic_shared,
                "kernels": [k.to_dict() for k in self.kernels]}

    def to_text(self) -> str:
        from .analyze_text import cliff_line, percent  # noqa: F401 (text helpers)

        lines = [*wrap(f"{short_path(self.file, 40)}: cubin for {self.arch}; "
                       f"{self.block_size} threads/block unless a kernel declares its own"
                       + (f", {self.dynamic_shared:,} bytes dynamic shared"
                          if self.dynamic_shared else "")
                       + "; no PTX, so no liveness estimate and no spill bytes (they are in "
                       "ptxas's log only)"), ""]
        rows = []
        for k in self.kernels:
            o = k.occupancy
            rows.append((clip(display_name(k.name), 40), k.registers, k.stack, k.shared,
                         k.constant_bank0, k.block_size,
                         "n/a" if o is None else o.active_blocks,
                         "n/a" if o is None else percent(o.occupancy)))
        lines += table(("kernel", "registers", "stack", "shared", "cmem[0]", "threads",
                        "blocks/SM", "occupancy"), rows)
        for k in self.kernels:
            lines += ["", *title_lines(full_name(k.name), mangled=k.name)]
            cap = "none" if k.register_cap is None else str(k.register_cap)
            lines += table(("resource", "value"), [
                ("registers", k.registers), ("register cap", cap),
                ("stack, call graph (bytes)", k.stack), ("own frame (bytes)", k.frame),
                ("local memory (bytes)", k.local), ("static shared (bytes)", k.shared),
                ("constant bank 0 (bytes)", k.constant_bank0),
                ("  of which parameters", k.param_bytes),
                ("barriers", k.barriers),
                ("max threads (launch bounds)", k.max_threads)])
            o = k.occupancy
            where = (f"{k.block_size} threads/block"
                     + (f" from its {k.block_source}" if k.block_source.startswith(".") else ""))
            if o is None:
                text = [f"occupancy n/a: {k.occupancy_note}"]
            elif not o.launchable:
                text = [f"cannot launch at {where}: {o.reason}"]
            else:
                text = [f"{where}: {o.active_blocks} block{'s' if o.active_blocks != 1 else ''}"
                        f"/SM, {percent(o.occupancy)} occupancy, limited by "
                        f"{', '.join(o.limiting)}", cliff_line(k.cliffs)]
            lines += [x for t in text for x in wrap(t, indent="  ", subsequent="    ")]
        if self.functions:
            lines += ["", *wrap("device functions (not launched): "
                                + ", ".join(display_name(f) for f in self.functions))]
        return "\n".join(lines) + "\n"


def analyze_cubin(data: bytes, file: str = "<cubin>",
                  spec: Union[LaunchSpec, str, int, None] = None, *,
                  kernel: Optional[str] = None) -> CubinReport:
    """Resources and occupancy of every kernel in a cubin (``kernel``: only that one).

    ``spec`` is a :class:`~ptxforge.arch.spec.LaunchSpec` (or a target name): its target
    must match the cubin's own SM when given (a cubin runs only there); its block None uses
    each kernel's launch bounds, else 256.  Raises PtxforgeError for a file that is not a
    cubin ptxforge can read, an unknown kernel, or a mismatching target.
    """
    spec = launch_spec(spec)
    target, block, dynamic_shared = spec.target, spec.block, spec.dynamic_shared
    info = read_cubin(bytes(data))
    tgt = f"sm_{info.sm}"
    try:
        tgt = as_target(tgt).name
    except PtxforgeError:
        pass
    if target is not None:
        given = as_target(target).name
        if as_target(given).base != tgt:
            raise PtxforgeError(f"{file} is a cubin for {tgt}; --arch {given} does not apply "
                                "(a cubin runs only on its own SM): drop --arch")
        tgt = given
    kernels = [k for k in info.kernels if is_entry(k)]
    functions = tuple(k.name for k in info.kernels if not is_entry(k))
    if kernel is not None:   # mangled, demangled or a prefix: the one lookup (ptx.names)
        from ptxforge.ptx.names import match_kernel

        found = match_kernel([k.name for k in kernels], kernel, file)
        kernels = [k for k in kernels if k.name == found]
    unknown = unknown_arch_reason(tgt)
    out = []
    for k in kernels:
        bounds = _product(k.reqntid) or _product(k.max_threads)
        if block is not None:
            threads, source = block, "given"
        elif bounds is not None and 1 <= bounds <= 1024:
            threads, source = bounds, ".reqntid" if k.reqntid else ".maxntid"
        else:
            threads, source = DEFAULT_BLOCK, "default"
        regs = k.registers or 0
        cap = k.max_registers if k.max_registers is not None and k.max_registers < 255 else None
        stack = k.min_stack_size if k.min_stack_size not in (None, 0xFFFFFFFF) else (
            k.frame_size or 0)
        occ = cliffs = None
        if unknown is None:
            kw = dict(shared=k.shared, dynamic_shared=dynamic_shared,
                      barriers=max(k.barriers or 1, 1), kernel_limits=KernelLimits(max_threads=bounds, required_threads=_product(k.reqntid)))
            occ = occupancy(min(regs, register_limit(tgt)), threads, tgt, **kw)
            cliffs = cliffs_at(regs, threads, tgt, **kw)
        out.append(CubinKernelReport(name=k.name, registers=regs, register_cap=cap, stack=stack,
                                     frame=k.frame_size or 0, local=k.local, shared=k.shared,
                                     constant_bank0=k.constant0, param_bytes=k.param_bytes,
                                     barriers=k.barriers, max_threads=bounds, block_size=threads,
                                     block_source=source, dynamic_shared=dynamic_shared,
                                     occupancy=occ, cliffs=cliffs, occupancy_note=unknown))
    return CubinReport(file=file, arch=tgt, block_size=DEFAULT_BLOCK if block is None else block,
                       dynamic_shared=dynamic_shared, kernels=tuple(out), functions=functions)
