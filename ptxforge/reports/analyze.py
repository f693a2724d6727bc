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

import json
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

import attrs

from ptxforge.analysis.gc_pause import gc_paused
from ptxforge.analysis.mix import InstructionMix
from ptxforge.analysis.prediction import Prediction
from ptxforge.analysis.pressure import PressureReport
from ptxforge.arch.occupancy import Occupancy, RegisterCliffs, occupancy, unknown_arch_reason
from ptxforge.arch.spec import LaunchSpec, launch_spec
from ptxforge.arch.targets import target as as_target
from ptxforge.errors import NoKernelError, PtxforgeError, UnsupportedError
from ptxforge.ptx import ir
from ptxforge.ptx.demangle import display_name, full_name
from ptxforge.ptx.parse import parse

from .analyze_text import SUMMARY_ABOVE, render_kernel, render_module
from .kernel_pool import make_pool, parts_here

if TYPE_CHECKING:  # the compile machinery is imported when something is compiled
    from ptxforge.toolchain.compile import CompileRequest, KernelStats

    from .analyze_compile import CompiledResult, SassGaps
    from .gap import Gap
from ptxforge.ptx.names import match_kernels

from .estimate import Comparison, Estimate, compare_with_ptxas
from .peak import peak_groups
from .resources import (
    DEFAULT_BLOCK,
    callers_of,
    cliffs_at,
    function_stats,
    launch_limits,
    local_array_bytes,
    no_caller_note,
    ptxas_fields,
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


def occupancy_fields(occ: Occupancy) -> dict:
    """The JSON occupancy keys shared by every command (``blocks_per_sm``, ``occupancy``, …)."""
    return {"registers": occ.registers, "block_size": occ.block_size,
            "shared": occ.shared_per_block, "blocks_per_sm": occ.active_blocks,
            "occupancy": round(occ.occupancy, 6),
            "limiter": occ.limiting[0] if occ.limiting else None,
            "limiters": list(occ.limiting), "active_warps": occ.active_warps,
            "max_warps": occ.max_warps, "launchable": occ.launchable, "reason": occ.reason}


@attrs.frozen(slots=True, kw_only=True)
class KernelAnalysis:
    """Everything ``ptxforge analyze`` reports for one kernel (or ``.func``).

    ``occupancy`` is at ptxas's register count when the module was compiled and at the
    estimate otherwise (at most the register limit: above it ptxas spills); ``occupancy_
    estimate`` is always at the estimate; ``cliffs`` are the register cliffs around the count
    ``occupancy`` uses.  All three are None when the occupancy table lacks the architecture
    or the function is a ``.func`` (``occupancy_note`` says why); a block size the kernel's
    ``.reqntid``/``.maxntid`` (or ptxas) forbids gives 0 blocks with a ``reason``.
    ``block_source`` says where ``block_size`` came from (``"given"``, ``".reqntid"``,
    ``".maxntid"``, ``"default"``); ``stats_note`` why a compiled ``.func`` has no stats.
    """

    name: str
    is_entry: bool
    arch: str
    block_size: int
    mix: InstructionMix
    pressure: PressureReport
    stats: Optional[KernelStats]
    occupancy: Optional[Occupancy]
    occupancy_estimate: Optional[Occupancy]
    cliffs: Optional[RegisterCliffs]
    kernel: Optional[ir.Kernel] = attrs.field(default=None, eq=False, repr=False)
    occupancy_note: Optional[str] = None   # why occupancy is unknown (None: it is known)
    block_source: str = "given"
    dynamic_shared: int = 0
    local_bytes: int = 0                   # .local arrays declared in the PTX
    constant_bank0: Optional[int] = None   # ptxas's cmem[0] (log, else the cubin)
    param_bytes: Optional[int] = None      # of which kernel parameters (the cubin)
    stats_note: Optional[str] = None
    callers: tuple = ()                    # for a .func: the functions that call it
    mode_note: Optional[str] = None        # relocatable vs whole-program (toolchain.modes)
    prediction: Optional[Prediction] = None  # ptxas's count predicted from the PTX
    #: the SASS explanations, computed when :attr:`gap` is first read (entries compiled)
    sass: Optional[SassGaps] = attrs.field(default=None, eq=False, repr=False)

    @property
    def gap(self) -> Optional[Gap]:
        """REGCOUNT − estimate explained from the SASS (None: not compiled, not an entry,
        or the SASS could not be read); computed on first use."""
        return None if self.sass is None else self.sass.gap(self.name)

    @property
    def gap_note(self) -> Optional[str]:
        """Why the notes are the PTX's guesses (the SASS could not be read), or None."""
        return None if self.sass is None else self.sass.note(self.name)

    @property
    def estimate(self) -> Estimate:
        """Peak general registers (32-bit units) and peak predicates from liveness."""
        return Estimate(registers=self.pressure.peak.units,
                        predicates=self.pressure.pred_peak.units)

    @property
    def demangled(self) -> str:
        """The kernel's C++ name (the name itself when it is not mangled)."""
        return full_name(self.name)

    @property
    def register_limit(self) -> int:
        """The most registers a thread can have on the target (255)."""
        return register_limit(self.arch)

    @property
    def over_limit(self) -> int:
        """How many registers the estimate needs beyond :attr:`register_limit` (0: none)."""
        return max(self.estimate.registers - self.register_limit, 0)

    @property
    def comparison(self) -> Optional[Comparison]:
        """Estimate vs ptxas (with its explanatory notes); None when ptxas was not run."""
        if self.stats is None:
            return None
        spec = LaunchSpec(target=self.arch, block=self.block_size,
                          dynamic_shared=self.dynamic_shared)
        c = compare_with_ptxas(self.estimate, self.stats, spec, kernel=self.kernel, gap=self.gap)
        if not self.is_entry:  # a .func is not launched: no occupancy to compare
            c = attrs.evolve(c, occupancy_estimate=None, occupancy_ptxas=None)
        return c

    @property
    def occupancy_basis(self) -> str:
        """``"ptxas"`` or ``"estimate"``: which register count ``occupancy`` uses."""
        return "estimate" if self.stats is None else "ptxas"

    def notes(self) -> tuple:
        """This kernel's own notes: an estimate above the register limit, and (compiled) why
        ptxas's count differs from the estimate."""
        out = []
        if self.over_limit:
            est, lim, s = self.estimate.registers, self.register_limit, self.stats
            text = (f"The estimate needs {est} registers, {self.over_limit} more than the {lim} "
                    f"a thread can have on {self.arch}: as written, the PTX keeps more values "
                    "live than a thread can hold, so ptxas must reorder the code (shortening "
                    f"live ranges) or spill at least {self.over_limit} registers' worth of "
                    f"values; occupancy at the estimate is taken at {lim}.")
            if s is not None:
                text += (f" ptxas spilled {s.spill_stores} bytes (stores) with {s.registers} "
                         "registers." if s.spills else
                         f" ptxas reordered: {s.registers} registers, no spills.")
            out.append(text)
        if self.comparison is not None:
            out += self.comparison.notes(general=False)
        if self.gap_note:
            out.append(self.gap_note)
        if self.mode_note:
            out.append(self.mode_note)
        return tuple(out)

    def to_dict(self, top: int = 10) -> dict:
        """JSON-ready dict (keys in the module docstring); ``top`` caps the listed values,
        source lines, functions and call sites (0: all)."""
        cut = (lambda xs: list(xs)) if top <= 0 else (lambda xs: list(xs)[:top])
        p, s, lim = self.pressure.peak, self.stats, self.register_limit
        mix = self.mix.to_dict()
        ptxas = ptxas_fields(s, lim, self.constant_bank0, self.param_bytes)
        oe, c = self.occupancy_estimate, self.cliffs
        common = {"basis": self.occupancy_basis, "register_limit": lim,
                  "block_source": self.block_source, "dynamic_shared": self.dynamic_shared}
        if self.occupancy is None:
            est = min(p.units, lim)
            occ = {**common, "registers": s.registers if s else est,
                   "block_size": self.block_size, "shared": None, "blocks_per_sm": None,
                   "occupancy": None, "limiter": None, "limiters": [], "active_warps": None,
                   "max_warps": None, "launchable": None, "reason": self.occupancy_note,
                   "to_gain": None, "next_blocks": None, "headroom": None,
                   "estimate": {"registers": est, "blocks_per_sm": None, "occupancy": None,
                                "limiter": None}}
        else:
            assert oe is not None and c is not None   # known with the occupancy
            occ = {**common, **occupancy_fields(self.occupancy),
                   "to_gain": c.to_gain, "next_blocks": c.next_blocks, "headroom": c.headroom,
                   "estimate": {"registers": oe.registers, "blocks_per_sm": oe.active_blocks,
                                "occupancy": round(oe.occupancy, 6),
                                "limiter": oe.limiting[0] if oe.limiting else None}}
        return {
            "name": self.name,
            "demangled": self.demangled,
            "entry": self.is_entry,
            "instructions": self.mix.instructions,
            "vregs": mix["vregs"],
            "declared": mix["declared"],
            "mix": {k: mix[k] for k in ("by_family", "by_opcode", "groups", "selp")},
            "estimate": {"registers": p.units, "predicates": self.pressure.pred_peak.units,
                         "utilization": round(p.units / lim, 6), "over_limit": self.over_limit,
                         "local_array_bytes": self.local_bytes,
                         "peak_index": p.index, "peak_instruction": p.instruction,
                         "peak_count": len(p.indices), "by_class": dict(p.by_class),
                         "values_total": len(p.values),
                         "values": [v.to_dict() for v in cut(p.values)],
                         "by_source": [g.to_dict() for g in cut(p.by_source)],
                         "by_function": [g.to_dict() for g in cut(self.groups("function"))],
                         "by_callsite": [g.to_dict() for g in cut(self.groups("callsite"))]},
            "prediction": None if self.prediction is None else self.prediction.to_dict(),
            "ptxas": ptxas,
            "occupancy": occ,
            "gap": None if self.gap is None else [
                {"reason": r.reason, "registers": r.registers} for r in self.gap.reasons],
            "gap_effects": None if self.gap is None else [e.to_dict() for e in self.gap.effects()],
            "notes": list(self.notes()),
        }

    def groups(self, by: str = "line") -> tuple:
        """The values live at the peak grouped by ``"line"``, ``"function"`` or
        ``"callsite"`` (:mod:`ptxforge.reports.peak`)."""
        return peak_groups(self.kernel, self.pressure.peak, by)

    def to_text(self, top: int = 10, by: str = "line") -> str:
        """The kernel's section of the ``analyze`` text report."""
        return render_kernel(self, top, by)


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
                               run.progress, run.explain, run.jobs)


def _analyze_module(module: ir.Module, spec: LaunchSpec, compile: bool, kernel, ptx, file: str,
                    request: Optional[CompileRequest], progress=None,
                    explain: Optional[bool] = False, jobs: Optional[int] = 1,
                    early=None) -> ModuleAnalysis:
    """The body of :func:`analyze_module` (collector paused): ptxas runs in the background
    (:mod:`.analyze_compile`; ``early``: started before the parse) while kernels are analysed."""
    tgt, arch_source, arch_note = resolve_target(spec.target, module.target)
    chosen = _select(module, kernel, file)
    if explain is None:
        explain = len(chosen) <= SUMMARY_ABOVE
    side = early.side if early is not None and early.target == tgt else None
    pool = None if early else make_pool(module, chosen, tgt, ptx, jobs)  # forks before ptxas
    try:
        if compile and side is None:
            from .analyze_compile import start_compile

            side = start_compile(module if ptx is None else ptx, request, tgt, chosen, module,
                                 prefetch=explain)
        if progress is not None and len(chosen) > 1:   # e.g. the CLI's line on a terminal
            progress(0, len(chosen), chosen[0].name)
        parts, known = ((pool.parts(), {}) if pool is not None
                        else parts_here(chosen, tgt, progress))
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


def _kernel_analysis(module: ir.Module, k: ir.Kernel, part: tuple, tgt: str, spec: LaunchSpec,
                     ctx: Optional[_Compiled] = None) -> KernelAnalysis:
    """One kernel's analysis from its PTX part and (compiled) the build's figures."""
    mix, pressure, prediction = part
    local = local_array_bytes(k)
    threads, block_source = resolve_block(k, spec.block)
    stats = stats_note = None
    callers = () if k.is_entry else callers_of(module, k.name)
    cb0 = params = None
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
        cb0 = getattr(stats, "constant_bank0", None)
        bank, params = ctx.res.banks.get(k.name, (None, None))
        if cb0 is None:
            cb0 = bank or None
        kw = dict(shared=stats.shared, barriers=max(stats.barriers or 1, 1))
    else:
        kw = dict(shared=static_shared_bytes(module, k))
    kw["dynamic_shared"] = spec.dynamic_shared
    occ = occ_est = cliffs = None
    note = unknown_arch_reason(tgt)
    if not k.is_entry:
        note = (f"{display_name(k.name)} is a .func, not a kernel: it is never launched "
                "on its own, so it has no occupancy; its registers and stack count toward "
                "each kernel that calls it"
                + (f" ({', '.join(display_name(c) or c for c in callers)})" if callers
                   else no_caller_note(module, k.name)))
    elif note is None:
        lim = launch_limits(k, stats)
        est = min(pressure.peak.units, register_limit(tgt))
        occ_est = occupancy(est, threads, tgt, **kw, kernel_limits=lim)
        occ = occ_est if stats is None else occupancy(stats.registers, threads, tgt, **kw,
                                                      kernel_limits=lim)
        cliffs = cliffs_at(occ.registers, threads, tgt, **kw, kernel_limits=lim)
    return KernelAnalysis(
        name=k.name, is_entry=k.is_entry, arch=tgt, block_size=threads, mix=mix,
        pressure=pressure, stats=stats, occupancy=occ, occupancy_estimate=occ_est,
        cliffs=cliffs, kernel=k, occupancy_note=note, block_source=block_source,
        dynamic_shared=spec.dynamic_shared, local_bytes=local, constant_bank0=cb0,
        param_bytes=params, stats_note=stats_note, callers=callers,
        mode_note=None if ctx is None else ctx.res.mode_notes.get(k.name),
        prediction=prediction, sass=ctx.gaps if ctx is not None and k.is_entry else None)


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
        return _analyze_module(module, spec, compile, kernel, text, file, request, run.progress,
                               run.explain, run.jobs, early)
