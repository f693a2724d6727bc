"""The whole analysis of a PTX module in one call: what ``ptxforge analyze`` prints.

Per kernel: virtual registers per type, the instruction mix with the ``selp`` breakdown
(:mod:`ptxforge.analysis.mix`), the register-pressure peak with the values live there and their source
lines, functions and call sites (:mod:`ptxforge.analysis.pressure`, :mod:`ptxforge.analysis.attribution`), what
ptxas assigned (:mod:`ptxforge.toolchain.compile`), and occupancy with its register cliffs for a block
size (:mod:`ptxforge.arch.occupancy`).  This module only combines those pieces; the command line
(:mod:`ptxforge.cli`) and other callers share it.

Defaults come from the PTX: without ``arch`` the module's ``.target`` is analysed (when
ptxforge knows it; else sm_80, with a note), without ``block`` each kernel's own
``.reqntid``/``.maxntid`` (else 256 threads).

JSON form (``"schema": "ptxforge.analyze/1"``; see ``docs/cli.md``)::

    schema, file, arch, arch_source, block_size, dynamic_shared, compiled, backend, tool,
    tool_version, mode, ptx_version, ptx_target, notes: [str], kernels: [KERNEL]
    (mode: "whole-program", as nvcc and the driver build, or "relocatable", ptxas -c;
     null when not compiled)
    KERNEL = {name, demangled, entry, instructions, vregs: {type: n}, declared: {type: n},
              mix: {by_family, by_opcode, groups, selp},
              estimate: {registers, predicates, utilization, over_limit, local_array_bytes,
                         peak_index, peak_instruction, peak_count, by_class, values_total,
                         values: [VALUE], by_source: [SOURCE], by_function: [FUNCTION],
                         by_callsite: [CALLSITE]},
              prediction: {registers, low, high, model,
                           components: [{name, registers, detail}]}
                          (ptxas's whole-program count predicted from the PTX; the
                           components add up to registers; docs/prediction.md)
              ptxas: {registers, utilization, spill_stores, spill_loads, stack, stack_known,
                      local_array_bytes, shared, constant_bank0, param_bytes, barriers,
                      register_cap, register_cap_source, register_cap_note,
                      body_registers, body_spill_stores, body_spill_loads,
                      body_stack_frame, callees: [str]},
                      (values null when not compiled, or when ptxas kept no code for a .func)
              gap: [{reason, registers}] | null  (REGCOUNT - estimate from the SASS, when
                                                 compiled and nvdisasm read it)
              occupancy: {basis, registers, register_limit, block_size, block_source,
                          shared, dynamic_shared, blocks_per_sm, occupancy, limiter,
                          limiters, active_warps, max_warps, launchable, reason, to_gain,
                          next_blocks, headroom,
                          estimate: {registers, blocks_per_sm, occupancy, limiter}},
              notes: [str]}     (an estimate over the register limit; why ptxas's count
                                 differs from the estimate when compiled)

Example::

    >>> from ptxforge.reports.analyze import analyze_ptx
    >>> a = analyze_ptx('''.version 8.0
    ... .target sm_80
    ... .address_size 64
    ... .visible .entry k(.param .u64 p)
    ... {
    ...     .reg .b64 %rd<3>;
    ...     ld.param.u64 %rd1, [p];
    ...     ld.global.u64 %rd2, [%rd1];
    ...     st.global.u64 [%rd1], %rd2;
    ...     ret;
    ... }''', compile=False)
    >>> k = a.kernels[0]
    >>> k.name, k.estimate.registers, k.occupancy.active_blocks
    ('k', 4, 8)
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

import attrs

from ptxforge.analysis.gc_pause import gc_paused
from ptxforge.arch.occupancy import Occupancy, occupancy, unknown_arch_reason
from ptxforge.arch.spec import LaunchSpec, launch_spec
from ptxforge.arch.targets import target as as_target
from ptxforge.errors import NoKernelError, PtxforgeError, UnsupportedError
from ptxforge.ptx import ir
from ptxforge.ptx.demangle import display_name
from ptxforge.ptx.parse import parse

from .analyze_text import SUMMARY_ABOVE, render_module
from .kernel_analysis import KernelAnalysis, occupancy_fields
from .kernel_pool import KernelPart, make_pool, parts_here

if TYPE_CHECKING:  # the compile machinery is imported when something is compiled
    from ptxforge.toolchain.compile import CompileRequest

    from .analyze_compile import CompiledResult, SassGaps
from ptxforge.ptx.names import match_kernels

from .resources import (
    DEFAULT_BLOCK,
    callers_of,
    cliffs_at,
    function_stats,
    launch_limits,
    local_array_bytes,
    no_caller_note,
    register_limit,
    resolve_block,
    resolve_target,
    static_shared_bytes,
)
from .run_options import RunOptions

__all__ = [
    "SCHEMA",
    "KernelAnalysis",
    "ModuleAnalysis",
    "NoKernelError",
    "RunOptions",
    "check_target",
    "analyze_module",
    "analyze_ptx",
    "static_shared_bytes",
    "occupancy_fields",
    "launch_limits",
]

SCHEMA = "ptxforge.analyze/1"


def check_target(target: Union[str, int], *, compile: bool = True) -> str:
    """The registry's name for ``target`` (``"sm_86"``, ``"86"``, ``"8.6"``, ``"sm_90a"``), or
    the registry's UnsupportedError naming the known ones (the CLI's ``--arch`` check, the same
    for every command).  ``compile=True`` accepts every registered target (occupancy is then
    reported as n/a where the registry has no occupancy table); ``compile=False`` also needs
    the table.

    Example::

        >>> check_target("8.6"), check_target("sm_90a", compile=False)
        ('sm_86', 'sm_90a')
    """
    tgt = as_target(target)
    if not compile and tgt.occupancy_reason is not None:
        raise UnsupportedError(f"occupancy: {tgt.occupancy_reason}")
    return tgt.name


@attrs.frozen(slots=True, kw_only=True)
class ModuleAnalysis:
    """The analysis of every selected kernel of one PTX module.

    ``arch_source`` is ``"given"``, ``"target"`` (the PTX's ``.target``) or ``"default"``
    (``notes`` says why); ``block_size`` is the block size given, or the default for kernels
    that declare none (each kernel's own is in :attr:`KernelAnalysis.block_size`).
    """

    file: str
    arch: str
    block_size: int
    compiled: bool
    backend: Optional[str]
    ptx_version: str
    ptx_target: str
    kernels: tuple
    arch_source: str = "given"
    notes: tuple = ()
    dynamic_shared: int = 0
    tool: Optional[str] = None       # the compiler that ran: "nvJitLink 13.5", "ptxas 12.9 (…)"
    tool_version: Optional[str] = None   # "13.5"
    mode: Optional[str] = None           # "whole-program" or "relocatable" (None: not compiled)

    def kernel(self, name: str) -> KernelAnalysis:
        """The analysis of kernel ``name`` (PtxforgeError listing the names otherwise)."""
        for k in self.kernels:
            if k.name == name:
                return k
        raise PtxforgeError(f"no kernel named {name!r} in {self.file}; it has: "
                            f"{', '.join(k.name for k in self.kernels) or 'none'}")

    def to_dict(self, top: int = 10) -> dict:
        """JSON-ready dict (see the module docstring)."""
        return {"schema": SCHEMA, "file": self.file, "arch": self.arch,
                "arch_source": self.arch_source, "block_size": self.block_size,
                "dynamic_shared": self.dynamic_shared, "compiled": self.compiled,
                "backend": self.backend, "tool": self.tool, "tool_version": self.tool_version,
                "mode": self.mode, "ptx_version": self.ptx_version,
                "ptx_target": self.ptx_target, "notes": list(self.notes),
                "kernels": [k.to_dict(top) for k in self.kernels]}

    def to_json(self, top: int = 10, indent: Optional[int] = 2) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(top), indent=indent, ensure_ascii=False)

    def to_text(self, top: int = 10, by: str = "line", summary: bool | None = False) -> str:
        """The ``analyze`` text report: a header and one section per kernel; ``by`` groups
        the values live at the peak by ``"line"``, ``"function"`` or ``"callsite"``;
        ``summary=True`` gives one line per kernel (None: so above 20 kernels, with a note)."""
        return render_module(self, top, by, summary)


def _select(module: ir.Module, kernel: Optional[Union[str, Sequence[str]]], file: str) -> list:
    """The functions to analyse: the named ones, else every entry (else every function)."""
    bodies = [k for k in module.kernels if k.body is not None]
    if kernel is None:
        chosen = [k for k in bodies if k.is_entry] or bodies
        if not chosen:
            raise NoKernelError(f"{file}: no kernel or function with a body to analyse")
        return chosen
    # mangled, demangled or an unambiguous prefix (ptxforge.reports.names)
    by_name = {k.name: k for k in bodies}
    return [by_name[n] for n in match_kernels(list(by_name), kernel, file)]


def analyze_module(module: ir.Module, spec: Union[LaunchSpec, str, int, None] = None,
                   compile: bool = True, *,
                   kernel: Optional[Union[str, Sequence[str]]] = None,
                   ptx: Optional[str] = None, file: str = "<ptx>",
                   request: Optional[CompileRequest] = None,
                   run: Optional[RunOptions] = None) -> ModuleAnalysis:
    """Analyse the kernels of ``module`` for the launch ``spec`` describes.

    ``spec`` is a :class:`~ptxforge.arch.spec.LaunchSpec` (or a target name, short for
    ``LaunchSpec(target=...)``): its ``target`` None analyses for the module's ``.target``
    (sm_80 when ptxforge does not know it, with a note); its ``block`` None gives each kernel
    the size its ``.reqntid``/``.maxntid`` declares, else 256; its ``dynamic_shared`` is the
    dynamic shared memory per block (bytes) the launch adds to the static shared memory.
    ``compile=True`` runs ptxas on ``ptx`` (the original text; emitted from ``module`` when
    None) as ``request`` (a :class:`~ptxforge.toolchain.compile.CompileRequest`; default:
    backend ``"auto"``, whole-program, isolated) says, and reads registers, spills and stack;
    ``kernel`` selects one function (or a list) by name, default every ``.entry``.  Raises
    :class:`~ptxforge.errors.PtxforgeError` for an unknown kernel and
    :class:`~ptxforge.errors.CompileError` with ptxas's log.  An isolated compile (the
    default) runs in a worker child (:mod:`ptxforge.toolchain.isolate`), so a crash of
    nvJitLink raises :class:`~ptxforge.errors.CompilerCrashError` instead of ending this
    process (the first compile starts the worker: about 0.1 s once per process).
    ptxas runs in the background while the kernels are analysed; each entry's ``gap`` (from
    the SASS) is computed when first read.  ``run`` (:class:`RunOptions`) says how the
    analysis runs: a progress callback, when to read the SASS, worker processes.

    Example::

        >>> from ptxforge.arch.spec import LaunchSpec
        >>> from ptxforge.ptx import ir
        >>> m = ir.Module("8.0", "sm_80", kernels=(ir.Kernel("k", body=(ir.Instruction("ret"),)),))
        >>> a = analyze_module(m, LaunchSpec(target="sm_86", block=128), compile=False)
        >>> a.kernels[0].occupancy.active_blocks
        12
    """
    with gc_paused():
        run = run or RunOptions()
        return _analyze_module(module, launch_spec(spec), compile, kernel, ptx, file, request,
                               run)


def _analyze_module(module: ir.Module, spec: LaunchSpec, compile: bool, kernel, ptx, file: str,
                    request: Optional[CompileRequest], run: RunOptions,
                    early=None) -> ModuleAnalysis:
    """The body of :func:`analyze_module` (collector paused): ptxas runs in the background
    (:mod:`.analyze_compile`; ``early``: started before the parse) while kernels are analysed
    (the pieces ``run.parts`` names; the rest when first read)."""
    tgt, arch_source, arch_note = resolve_target(spec.target, module.target)
    chosen = _select(module, kernel, file)
    progress, explain = run.progress, run.explain
    if explain is None:
        explain = len(chosen) <= SUMMARY_ABOVE
    side = early.side if early is not None and early.target == tgt else None
    pool = (None if early or run.parts == ()    # the pool forks before ptxas starts
            else make_pool(module, chosen, tgt, ptx, run.jobs, compiling=compile))
    try:
        if compile and side is None:
            from .analyze_compile import start_compile

            side = start_compile(module if ptx is None else ptx, request, tgt, chosen, module,
                                 prefetch=explain)
        if progress is not None and len(chosen) > 1:   # e.g. the CLI's line on a terminal
            progress(0, len(chosen), chosen[0].name)
        parts, known = ((pool.parts(), {}) if pool is not None
                        else parts_here(chosen, tgt, progress, run.parts))
        if side is None:
            out = [_kernel_analysis(module, k, part, tgt, spec) for k, part in zip(chosen, parts)]
            return _module_analysis(module, file, tgt, arch_source, spec,
                                    tuple(n for n in (arch_note,) if n), out)
        res = side.result()
        compiled = res.compiled
        gaps = side.gaps(module, ptx, [k for k in chosen if k.is_entry], **known)
        if pool is not None and explain and res.sass is not None and res.sass[0] is not None:
            gaps.prefill(pool.gaps(res.sass[0], {s.name: s for s in compiled.kernels}))
    finally:
        if pool is not None:
            pool.close()
    ctx = _Compiled(res=res, gaps=gaps, source=module if ptx is None else ptx,
                    stats={s.name: s for s in compiled.kernels})
    out = [_kernel_analysis(module, k, part, tgt, spec, ctx) for k, part in zip(chosen, parts)]
    notes = tuple(n for n in (arch_note, compiled.note) if n)   # e.g. debug PTX at -O0
    return _module_analysis(module, file, tgt, arch_source, spec, notes, out, compiled)


@attrs.define(slots=True, kw_only=True)
class _Compiled:
    """The compiled side of one module's analysis, for each kernel of it."""

    res: CompiledResult
    gaps: SassGaps
    source: Any            # the PTX text (or module) ptxas compiled
    funcs: Any = None      # the build with the .funcs' own figures, when one is asked for
    stats: dict = attrs.Factory(dict)      # the entries' KernelStats by name


def _kernel_analysis(module: ir.Module, k: ir.Kernel, part: KernelPart, tgt: str,
                     spec: LaunchSpec, ctx: Optional[_Compiled] = None) -> KernelAnalysis:
    """One kernel's analysis from its PTX part and (compiled) the build's figures."""
    local = local_array_bytes(k)
    threads, block_source = resolve_block(k, spec.block)
    stats = stats_note = None
    callers = () if k.is_entry else callers_of(module, k.name)
    bank = None
    if ctx is not None:
        compiled = ctx.res.compiled
        if k.is_entry:
            stats = ctx.stats.get(k.name)
        else:
            from .analyze_compile import FUNC_NOTE, function_build

            ctx.funcs = ctx.funcs or function_build(compiled, ctx.source, tgt)
            stats, stats_note = function_stats(ctx.funcs, k.name, local)
            if ctx.funcs is not compiled:
                stats_note = "; ".join(n for n in (stats_note, FUNC_NOTE) if n)
    if stats is not None:
        assert ctx is not None
        bank = functools.partial(ctx.res.bank, k.name)
        kw = dict(shared=stats.shared, barriers=max(stats.barriers or 1, 1))
    else:
        kw = dict(shared=static_shared_bytes(module, k))
    kw["dynamic_shared"] = spec.dynamic_shared
    occ = at = cliffs = None
    note = unknown_arch_reason(tgt)
    if not k.is_entry:
        note = (f"{display_name(k.name)} is a .func, not a kernel: it is never launched "
                "on its own, so it has no occupancy; its registers and stack count toward "
                "each kernel that calls it"
                + (f" ({', '.join(display_name(c) or c for c in callers)})" if callers
                   else no_caller_note(module, k.name)))
    elif note is None:
        lim = launch_limits(k, stats)
        at = functools.partial(_occupancy_at, threads, tgt, kw, lim)
        # compiled: ptxas's count (the estimate's occupancy is computed when read)
        occ = at(min(part.pressure.peak.units, register_limit(tgt)) if stats is None
                 else stats.registers)
        cliffs = cliffs_at(occ.registers, threads, tgt, **kw, kernel_limits=lim)
    return KernelAnalysis(
        name=k.name, is_entry=k.is_entry, arch=tgt, block_size=threads, part=part,
        stats=stats, occupancy=occ, occupancy_at=at,
        cliffs=cliffs, kernel=k, occupancy_note=note, block_source=block_source,
        dynamic_shared=spec.dynamic_shared, local_bytes=local, cubin_bank=bank,
        stats_note=stats_note, callers=callers,
        mode_note=None if ctx is None else ctx.res.mode_notes.get(k.name),
        sass=ctx.gaps if ctx is not None and k.is_entry else None)


def _occupancy_at(threads: int, tgt: str, kw: dict, limits, registers: int) -> Occupancy:
    """Occupancy at ``registers`` for one kernel's launch (its :attr:`occupancy_at`)."""
    return occupancy(registers, threads, tgt, **kw, kernel_limits=limits)


def _module_analysis(module: ir.Module, file: str, tgt: str, arch_source: str, spec: LaunchSpec,
                     notes: tuple, out: list, compiled=None) -> ModuleAnalysis:
    notes += tuple(f"lenient parse: {w}" for w in module.warnings)  # what strict would refuse
    tool = backend = version = mode = None
    if compiled is not None:
        tool = compiled.tool or None
        backend, version, mode = compiled.backend, compiled.tool_version_text, compiled.mode
    return ModuleAnalysis(
        file=file, arch=tgt, block_size=DEFAULT_BLOCK if spec.block is None else spec.block,
        compiled=compiled is not None, backend=backend, ptx_version=module.version,
        ptx_target=module.target, kernels=tuple(out), arch_source=arch_source, notes=notes,
        dynamic_shared=spec.dynamic_shared, tool=tool, tool_version=version, mode=mode)


def _is_cubin(data) -> bool:
    head = data[:4]
    return head == (b"\x7fELF" if isinstance(head, (bytes, bytearray)) else "\x7fELF")


def analyze_ptx(text: Union[str, bytes], file: str = "<ptx>",
                spec: Union[LaunchSpec, str, int, None] = None, *, compile: bool = True,
                strict: bool = True, kernel: Optional[Union[str, Sequence[str]]] = None,
                request: Optional[CompileRequest] = None,
                run: Optional[RunOptions] = None) -> ModuleAnalysis:
    """Parse PTX text and :func:`analyze_module` it (ptxas compiles the text as given).

    ``spec`` (a :class:`~ptxforge.arch.spec.LaunchSpec`, or a target name), ``compile``,
    ``kernel``, ``request`` and ``run`` are :func:`analyze_module`'s.  Raises
    :class:`~ptxforge.errors.ParseError` with file, line and column for malformed PTX, and a
    PtxforgeError pointing to :func:`ptxforge.reports.cubin.analyze_cubin` when given a
    cubin.  ``strict=False`` (the CLI's ``--lenient``) turns the parser's strict checks
    (unknown opcode or modifier, undeclared register, wrong register class, missing label)
    into warnings listed in the module's ``notes``.

    Example::

        >>> a = analyze_ptx(".version 8.0\\n.target sm_80\\n.address_size 64\\n"
        ...                 ".visible .entry k() { ret; }", "k.ptx", "sm_86", compile=False)
        >>> a.arch, a.kernels[0].block_size
        ('sm_86', 256)
    """
    if _is_cubin(text):
        raise PtxforgeError(f"{file} is a cubin (ELF), not PTX: analyse it with "
                            "ptxforge.reports.cubin.analyze_cubin (ptxforge analyze reads "
                            "cubins too), `ptxforge sass` for its SASS, or pass the PTX")
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    spec, run = launch_spec(spec), run or RunOptions()
    early = None
    if compile and kernel is None:   # a small file compiles while it is parsed and analysed
        from .analyze_compile import early_compile
        early = early_compile(text, spec.target, request, run)
    with gc_paused():
        module = parse(text, file, strict=strict)
        return _analyze_module(module, spec, compile, kernel, text, file, request, run, early)
