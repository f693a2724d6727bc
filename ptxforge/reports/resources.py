"""What :mod:`ptxforge.reports.analyze` reads about a kernel's resources before and after ptxas.

From the PTX (the IR): the static shared memory and the ``.local`` arrays a function declares,
its launch bounds (``.reqntid`` / ``.maxntid``: the block size it is written for), and the
architecture its ``.target`` names.  From ptxas: the figures of a ``.func`` (ptxas reports
them per function, not as a kernel), read from the log and the cubin.  And the register
limit per thread (255), above which an estimate means ptxas must spill.

Example::

    >>> from ptxforge.ptx.parse import parse
    >>> m = parse('''.version 8.0
    ... .target sm_90a
    ... .address_size 64
    ... .visible .entry k() .reqntid 128, 1, 1
    ... {
    ...     .local .align 8 .b8 depot[64];
    ...     ret;
    ... }''')
    >>> k = m.kernel("k")
    >>> resolve_block(k, None), local_array_bytes(k), resolve_target(None, m.target)[:2]
    ((128, '.reqntid'), 64, ('sm_90a', 'target'))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from ptxforge.arch.occupancy import KernelLimits, arch_props, register_cliffs, unknown_arch_reason
from ptxforge.arch.ptxas_model import REGISTER_LIMIT
from ptxforge.arch.targets import DEFAULT_ARCH, resolve_target
from ptxforge.errors import PtxforgeError
from ptxforge.ptx import ir
from ptxforge.ptx.layout import var_size

if TYPE_CHECKING:
    from ptxforge.toolchain.kernel_stats import KernelStats

__all__ = ["DEFAULT_ARCH", "DEFAULT_BLOCK", "MAX_REGISTERS", "static_shared_bytes",
           "local_array_bytes", "launch_limits", "resolve_block", "resolve_target",
           "register_limit", "cliffs_at", "callers_of", "no_caller_note", "function_stats",
           "PTXAS_JSON_KEYS", "ptxas_fields", "stack_text"]

#: The target analysed when neither ``target`` (``--arch``) nor a known ``.target`` says one.
#: Threads per block when neither ``block`` nor the kernel's launch bounds say one.
DEFAULT_BLOCK = 256
#: Registers a thread can have on every target ptxforge knows (sm_70 … sm_121).
MAX_REGISTERS = REGISTER_LIMIT


def _symbols(kernel: ir.Kernel) -> set:
    """Names of the symbols a kernel's instructions mention."""
    out: set = set()

    def visit(op) -> None:
        if isinstance(op, ir.Symbol):
            out.add(op.name)
        elif isinstance(op, ir.Address) and isinstance(op.base, ir.Symbol):
            out.add(op.base.name)
        elif isinstance(op, ir.Vector):
            for e in op.elements:
                visit(e)

    for inst in kernel.instructions:
        for op in inst.operands:
            visit(op)
    return out


def _declared(kernel: ir.Kernel, space: str) -> int:
    return sum(var_size(s) for s in (kernel.body or ())
               if isinstance(s, ir.VarDecl) and s.space.lstrip(".") == space)


def static_shared_bytes(module: ir.Module, kernel: ir.Kernel) -> int:
    """Static shared memory of ``kernel`` read from the PTX: its own ``.shared`` declarations
    plus module-level ``.shared`` variables its instructions name (an estimate: variables used
    only through called functions are not seen; ptxas's figure replaces it when compiled)."""
    total = _declared(kernel, "shared")
    module_vars = [g for g in module.globals
                   if isinstance(g, ir.VarDecl) and g.space.lstrip(".") == "shared"]
    if module_vars:
        used = _symbols(kernel)
        total += sum(var_size(g) for g in module_vars if g.name in used)
    return total


def local_array_bytes(kernel: ir.Kernel) -> int:
    """Bytes of the ``.local`` arrays the function declares in the PTX (``__local_depot``
    of nvcc/NVRTC): what the PTX asks for, not ptxas's stack frame, which may be larger
    (spills) or smaller (arrays ptxas promoted to registers)."""
    return _declared(kernel, "local")


def _dims_product(values) -> Optional[int]:
    n = 1
    for v in values or ():
        n *= v
    return n if values else None


def launch_limits(kernel: ir.Kernel, stats: Optional[KernelStats] = None) -> KernelLimits:
    """The kernel's own block-size limits for :func:`~ptxforge.arch.occupancy.occupancy`:
    ``required_threads`` from ``.reqntid``, ``max_threads`` from ``.maxntid`` or, when
    compiled, from what ptxas (or the driver) reports."""
    d = dict(kernel.directives)
    required = _dims_product(d.get(".reqntid"))
    limit = stats.max_threads_per_block if stats is not None else None
    if limit is None:
        limit = _dims_product(d.get(".maxntid")) or required
    return KernelLimits(max_threads=limit, required_threads=required)


def resolve_block(kernel: ir.Kernel, block: Optional[int]) -> tuple:
    """``(threads per block, source)``: ``block`` when given (source ``"given"``), else the
    size the kernel declares (``".reqntid"``, else ``".maxntid"``: ``__launch_bounds__``),
    else :data:`DEFAULT_BLOCK` (``"default"``)."""
    if block is not None:
        return block, "given"
    d = dict(kernel.directives)
    for name in (".reqntid", ".maxntid"):
        n = _dims_product(d.get(name))
        if n is not None and 1 <= n <= 1024:
            return n, name
    return DEFAULT_BLOCK, "default"


def register_limit(target: str) -> int:
    """The most registers one thread can have on ``target`` (255 on every known target)."""
    if unknown_arch_reason(target) is not None:
        return MAX_REGISTERS
    return arch_props(target).max_regs_per_thread


def cliffs_at(registers: int, block: int, target: str, **kwargs):
    """:func:`~ptxforge.arch.occupancy.register_cliffs` at ``registers`` clamped to the limit
    (above it ptxas spills and the kernel runs with the limit)."""
    return register_cliffs(min(registers, register_limit(target)), block, target, **kwargs)


def callers_of(module: ir.Module, name: str) -> tuple:
    """Names of the functions of ``module`` whose ``call`` instructions name ``name``."""
    out = []
    for f in module.kernels:
        for inst in f.instructions:
            if inst.family == "call" and any(isinstance(op, ir.Symbol) and op.name == name
                                             for op in inst.operands):
                out.append(f.name)
                break
    return tuple(out)


def no_caller_note(module: ir.Module, name: str) -> str:
    """The end of a ``.func``'s note when no ``call`` names it: its address taken (a call
    through a function pointer) or none."""
    import re

    from ptxforge.ptx.demangle import display_name

    word = re.compile(rf"(?<![\w$.]){re.escape(name)}(?![\w$])")
    takers = [f"the initializer of {v.name}" for v in module.globals
              if getattr(v, "init", None) and word.search(v.init)]
    takers += [display_name(f.name) for f in module.kernels
               if any(inst.family != "call" and any(isinstance(op, ir.Symbol) and op.name == name
                                                    for op in inst.operands)
                      for inst in f.instructions)]
    if takers:
        return (" (called through a function pointer: its address is taken in "
                f"{', '.join(takers)})")
    return " (none in this file calls it)"


def function_stats(compiled, name: str, local_bytes: int = 0) -> tuple:
    """``(KernelStats or None, note)`` for the ``.func`` ``name`` of ``compiled``.

    ptxas reports a device function in its log ("Function properties for F": stack frame and
    spill bytes; no "Used N registers" line) and the cubin holds its EIATTR_REGCOUNT, frame
    and call edges.  ``registers`` is the cubin's count, ``stack_frame`` the function's frame
    plus its deepest chain of callee frames, spills its own plus its callees' (the
    ``body_*`` fields: its own).  None with a note when ptxas kept no separate code for it
    (inlined or unused).  ``local_bytes`` are the ``.local`` arrays it declares
    (:func:`local_array_bytes`).
    """
    from ptxforge.toolchain.kernel_stats import KernelStats, callee_spills, deepest_chain

    log = compiled.ptxas_log
    try:
        f = log.function(name)
    except KeyError:
        f = None
    try:
        info = compiled.cubin_info()
    except PtxforgeError:
        info = None
    cub = {k.name: k for k in info.kernels} if info is not None else {}
    ck = cub.get(name)
    calls = tuple(getattr(info, "calls", ()) or ())
    if ck is None or ck.registers is None:
        if f is None:
            return None, ("ptxas kept no separate code for this function (inlined into its "
                          "callers, or unused): no ptxas figures")
        regs = f.registers
        if regs is None:
            return None, (f"the linked code has no copy of it (nothing calls it), so no "
                          f"register count; ptxas's log: {f.stack_frame or 0} bytes stack "
                          f"frame, {f.spill_stores or 0}/{f.spill_loads or 0} bytes spill "
                          "stores/loads")
    else:
        regs = ck.registers
    own_frame = (f.stack_frame if f is not None and f.stack_frame is not None
                 else (ck.frame_size or 0) if ck is not None else 0)
    edges: dict = {}
    for a, b in calls:
        edges.setdefault(a, []).append(b)
    frames = {k.name: k.frame_size or 0 for k in cub.values()}
    stack = own_frame + deepest_chain(name, frames, edges)
    own_st = (f.spill_stores or 0) if f is not None else 0
    own_ld = (f.spill_loads or 0) if f is not None else 0
    reach = set(info.reachable(name)) if info is not None else set()
    cst, cld = callee_spills(log, name, reach)
    st, ld = own_st + cst, own_ld + cld
    recursive = name in reach  # a call chain leads back to ``name``
    stats = KernelStats(name=name, target=compiled.target, backend=compiled.backend,
                        registers=int(regs), spill_stores=st, spill_loads=ld,
                        stack_frame=int(stack), local_array_bytes=local_bytes,
                        shared=(ck.shared if ck is not None else 0),
                        constant_bank0=None, barriers=(ck.barriers if ck is not None else None),
                        compile_time_ms=f.compile_time_ms if f is not None else None,
                        body_registers=f.registers if f is not None else None,
                        body_spill_stores=own_st, body_spill_loads=own_ld,
                        body_stack_frame=int(own_frame), callees=tuple(sorted(reach - {name})),
                        stack_known=not recursive)
    return stats, None


#: The keys of the analyze JSON's ``ptxas`` object, in order (docs/cli.md).
PTXAS_JSON_KEYS = ("registers", "utilization", "spill_stores", "spill_loads", "stack",
                   "stack_known", "local_array_bytes", "shared", "constant_bank0",
                   "param_bytes", "barriers", "register_cap", "register_cap_source",
                   "register_cap_note", "body_registers", "body_spill_stores",
                   "body_spill_loads", "body_stack_frame", "callees")


def ptxas_fields(stats, limit: int, constant_bank0=None, param_bytes=None) -> dict:
    """The analyze JSON's ``ptxas`` object for ``stats`` (every value None without stats).
    ``stack`` is the call graph's stack (a lower bound when ``stack_known`` is False),
    ``body_*`` the kernel's own figures, ``callees`` the functions it may call."""
    if stats is None:
        return dict.fromkeys(PTXAS_JSON_KEYS)
    s = stats
    return {"registers": s.registers, "utilization": round(s.registers / limit, 6),
            "spill_stores": s.spill_stores, "spill_loads": s.spill_loads,
            "stack": s.stack_frame, "stack_known": s.stack_known,
            "local_array_bytes": s.local_array_bytes, "shared": s.shared,
            "constant_bank0": constant_bank0, "param_bytes": param_bytes,
            "barriers": s.barriers, "register_cap": s.register_cap,
            "register_cap_source": s.register_cap_source,
            "register_cap_note": s.register_cap_note, "body_registers": s.body_registers,
            "body_spill_stores": s.body_spill_stores, "body_spill_loads": s.body_spill_loads,
            "body_stack_frame": s.body_stack_frame, "callees": list(s.callees)}


def stack_text(stats) -> str:
    """The call graph's stack in bytes as text: ``"48"``, or ``"≥48"`` when ptxas could not
    bound it (recursion: the figure counts each recursive function once)."""
    return f"{'' if stats.stack_known else '≥'}{stats.stack_frame}"
