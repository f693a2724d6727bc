"""The whole analysis of a PTX module in one call: what ``ptxforge analyze`` prints.

Per kernel: virtual registers per type, the instruction mix with the ``selp`` breakdown
(:mod:`ptxforge.mix`), the register-pressure peak with the values live there and their source
lines (:mod:`ptxforge.pressure`), what ptxas assigned (:mod:`ptxforge.compile`), and occupancy
with its register cliffs for a block size (:mod:`ptxforge.occupancy`).  This module only
combines those pieces; the command line (:mod:`ptxforge.cli`) and other callers share it.

JSON form (``"schema": "ptxforge.analyze/1"``; see ``docs/cli.md``)::

    schema, file, arch, block_size, compiled, backend, ptx_version, ptx_target,
    kernels: [KERNEL]
    KERNEL = {name, entry, instructions, vregs: {type: n}, declared: {type: n},
              mix: {by_family, by_opcode, groups, selp},
              estimate: {registers, predicates, peak_index, peak_instruction, peak_count,
                         by_class, values_total, values: [VALUE], by_source: [SOURCE]},
              ptxas: {registers, spill_stores, spill_loads, stack, local_array_bytes, shared,
                      barriers, register_cap},          (values null when not compiled)
              occupancy: {basis, registers, block_size, shared, blocks_per_sm, occupancy,
                          limiter, limiters, active_warps, max_warps, to_gain, next_blocks,
                          headroom, estimate: {registers, blocks_per_sm, occupancy, limiter}},
              notes: [str]}     (why ptxas's count differs from the estimate; [] when not compiled)

Example::

    >>> from ptxforge.analysis import analyze_ptx
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

import contextlib
import gc
import json
from typing import Iterator, Optional, Sequence, Union

import attrs

from . import ir
from ._analysis_text import render_kernel, render_module, render_occupancy
from .compare import Comparison, Estimate, compare
from .compile import CompileOptions, KernelStats, compile_ptx, normalize_target
from .errors import PtxforgeError
from .mix import InstructionMix, instruction_mix
from .occupancy import (Occupancy, RegisterCliffs, arch_props, occupancy, register_cliffs,
                        unknown_arch_reason)
from .parse import parse
from .pressure import PressureReport, analyze_pressure

__all__ = [
    "SCHEMA",
    "KernelAnalysis",
    "ModuleAnalysis",
    "OccupancyReport",
    "SweepReport",
    "check_arch",
    "analyze_module",
    "analyze_ptx",
    "occupancy_report",
    "sweep_report",
    "static_shared_bytes",
    "occupancy_fields",
    "launch_limits",
]

SCHEMA = "ptxforge.analyze/1"


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while the IR is built: parsing a large module makes
    hundreds of thousands of acyclic objects, and the collections they trigger cost ~15% of
    the analysis time.  The previous state is restored (nested use is fine)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def check_arch(arch: Union[str, int], *, compile: bool = True) -> str:
    """Normalise ``arch`` (``"sm_86"``, ``"86"``, ``"8.6"``) or raise a PtxforgeError naming
    the accepted ones.  ``compile=True`` accepts every target ptxas knows (its occupancy is
    then reported as unknown when the occupancy table lacks it); ``compile=False`` checks
    only the occupancy table.

    Example::

        >>> check_arch("8.6")
        'sm_86'
    """
    if compile:
        return normalize_target(arch)
    props = arch_props(arch)
    return f"sm_{props.major}{props.minor}"


def occupancy_fields(occ: Occupancy) -> dict:
    """The JSON occupancy keys shared by every command (``blocks_per_sm``, ``occupancy``, …)."""
    return {"registers": occ.registers, "block_size": occ.block_size,
            "shared": occ.shared_per_block, "blocks_per_sm": occ.active_blocks,
            "occupancy": round(occ.occupancy, 6),
            "limiter": occ.limiting[0] if occ.limiting else None,
            "limiters": list(occ.limiting), "active_warps": occ.active_warps,
            "max_warps": occ.max_warps, "launchable": occ.launchable, "reason": occ.reason}


def _dims_product(values) -> Optional[int]:
    n = 1
    for v in values or ():
        n *= v
    return n if values else None


def launch_limits(kernel: ir.Kernel, stats: Optional[KernelStats] = None) -> dict:
    """The kernel's own block-size limits as :func:`~ptxforge.occupancy.occupancy` keywords:
    ``required_threads`` from ``.reqntid``, ``max_threads`` from ``.maxntid`` or, when
    compiled, from what ptxas (or the driver) reports."""
    d = dict(kernel.directives)
    required = _dims_product(d.get(".reqntid"))
    limit = stats.max_threads_per_block if stats is not None else None
    if limit is None:
        limit = _dims_product(d.get(".maxntid")) or required
    return {"max_threads": limit, "required_threads": required}


def _var_bytes(v: ir.VarDecl) -> int:
    """Size of a declared variable in bytes (0 for an unsized ``[]`` array)."""
    n = max(v.type.bits // 8, 1) * (getattr(v, "vector", None) or 1)
    for d in v.dims:
        if d is None:
            return 0
        n *= d
    return n


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


def static_shared_bytes(module: ir.Module, kernel: ir.Kernel) -> int:
    """Static shared memory of ``kernel`` read from the PTX: its own ``.shared`` declarations
    plus module-level ``.shared`` variables its instructions name (an estimate: variables used
    only through called functions are not seen; ptxas's figure replaces it when compiled)."""
    total = sum(_var_bytes(s) for s in (kernel.body or ())
                if isinstance(s, ir.VarDecl) and s.space.lstrip(".") == "shared")
    module_vars = [g for g in module.globals
                   if isinstance(g, ir.VarDecl) and g.space.lstrip(".") == "shared"]
    if module_vars:
        used = _symbols(kernel)
        total += sum(_var_bytes(g) for g in module_vars if g.name in used)
    return total


@attrs.frozen(slots=True)
class KernelAnalysis:
    """Everything ``ptxforge analyze`` reports for one kernel.

    ``occupancy`` is at ptxas's register count when the module was compiled and at the
    estimate otherwise; ``occupancy_estimate`` is always at the estimate; ``cliffs`` are the
    register cliffs around the count ``occupancy`` uses.  All three are None when the
    occupancy table lacks the architecture (``occupancy_note`` says so); a block size the
    kernel's ``.reqntid``/``.maxntid`` (or ptxas) forbids gives 0 blocks with a ``reason``.
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

    @property
    def estimate(self) -> Estimate:
        """Peak general registers (32-bit units) and peak predicates from liveness."""
        return Estimate(self.pressure.peak.units, self.pressure.pred_peak.units)

    @property
    def comparison(self) -> Optional[Comparison]:
        """Estimate vs ptxas (with its explanatory notes); None when ptxas was not run."""
        if self.stats is None:
            return None
        return compare(self.estimate, self.stats, block_size=self.block_size, target=self.arch,
                       kernel=self.kernel)

    @property
    def occupancy_basis(self) -> str:
        """``"ptxas"`` or ``"estimate"``: which register count ``occupancy`` uses."""
        return "estimate" if self.stats is None else "ptxas"

    def to_dict(self, top: int = 10) -> dict:
        """JSON-ready dict (keys in the module docstring); ``top`` caps the listed values
        and source lines (0: all)."""
        cut = (lambda xs: list(xs)) if top <= 0 else (lambda xs: list(xs)[:top])
        p, s = self.pressure.peak, self.stats
        mix = self.mix.to_dict()
        ptxas = {"registers": None, "spill_stores": None, "spill_loads": None, "stack": None,
                 "local_array_bytes": None, "shared": None, "barriers": None,
                 "register_cap": None}
        if s is not None:
            ptxas = {"registers": s.registers, "spill_stores": s.spill_stores,
                     "spill_loads": s.spill_loads, "stack": s.stack_frame,
                     "local_array_bytes": s.local_array_bytes, "shared": s.shared,
                     "barriers": s.barriers, "register_cap": s.register_cap}
        oe, c = self.occupancy_estimate, self.cliffs
        if self.occupancy is None:
            est = min(p.units, 255)
            occ = {"basis": self.occupancy_basis, "registers": s.registers if s else est,
                   "block_size": self.block_size, "shared": None, "blocks_per_sm": None,
                   "occupancy": None, "limiter": None, "limiters": [], "active_warps": None,
                   "max_warps": None, "launchable": None, "reason": self.occupancy_note,
                   "to_gain": None, "next_blocks": None, "headroom": None,
                   "estimate": {"registers": est, "blocks_per_sm": None, "occupancy": None,
                                "limiter": None}}
        else:
            occ = {"basis": self.occupancy_basis, **occupancy_fields(self.occupancy),
                   "to_gain": c.to_gain, "next_blocks": c.next_blocks, "headroom": c.headroom,
                   "estimate": {"registers": oe.registers, "blocks_per_sm": oe.active_blocks,
                                "occupancy": round(oe.occupancy, 6),
                                "limiter": oe.limiting[0] if oe.limiting else None}}
        return {
            "name": self.name,
            "entry": self.is_entry,
            "instructions": self.mix.instructions,
            "vregs": mix["vregs"],
            "declared": mix["declared"],
            "mix": {k: mix[k] for k in ("by_family", "by_opcode", "groups", "selp")},
            "estimate": {"registers": p.units, "predicates": self.pressure.pred_peak.units,
                         "peak_index": p.index, "peak_instruction": p.instruction,
                         "peak_count": len(p.indices), "by_class": dict(p.by_class),
                         "values_total": len(p.values),
                         "values": [v.to_dict() for v in cut(p.values)],
                         "by_source": [g.to_dict() for g in cut(p.by_source)]},
            "ptxas": ptxas,
            "occupancy": occ,
            "notes": [] if self.comparison is None else list(self.comparison.notes(general=False)),
        }

    def to_text(self, top: int = 10) -> str:
        """The kernel's section of the ``analyze`` text report."""
        return render_kernel(self, top)


@attrs.frozen(slots=True)
class ModuleAnalysis:
    """The analysis of every selected kernel of one PTX module."""

    file: str
    arch: str
    block_size: int
    compiled: bool
    backend: Optional[str]
    ptx_version: str
    ptx_target: str
    kernels: tuple

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
                "block_size": self.block_size, "compiled": self.compiled,
                "backend": self.backend, "ptx_version": self.ptx_version,
                "ptx_target": self.ptx_target,
                "kernels": [k.to_dict(top) for k in self.kernels]}

    def to_json(self, top: int = 10, indent: Optional[int] = 2) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(top), indent=indent, ensure_ascii=False)

    def to_text(self, top: int = 10) -> str:
        """The ``analyze`` text report: a header and one section per kernel."""
        return render_module(self, top)


def _select(module: ir.Module, kernel: Optional[Union[str, Sequence[str]]], file: str) -> list:
    """The functions to analyse: the named ones, else every entry (else every function)."""
    bodies = [k for k in module.kernels if k.body is not None]
    if kernel is None:
        chosen = [k for k in bodies if k.is_entry] or bodies
        if not chosen:
            raise PtxforgeError(f"{file}: no kernel or function with a body to analyse")
        return chosen
    wanted = [kernel] if isinstance(kernel, str) else list(kernel)
    by_name = {k.name: k for k in bodies}
    missing = [n for n in wanted if n not in by_name]
    if missing:
        raise PtxforgeError(f"no kernel named {missing[0]!r} in {file}; it has: "
                            f"{', '.join(by_name) or 'none'}")
    return [by_name[n] for n in wanted]


def analyze_module(module: ir.Module, arch: Union[str, int] = "sm_80", block: int = 256,
                   compile: bool = True, *, kernel: Optional[Union[str, Sequence[str]]] = None,
                   ptx: Optional[str] = None, file: str = "<ptx>",
                   backend: str = "auto", options: Optional[CompileOptions] = None,
                   ) -> ModuleAnalysis:
    """Analyse the kernels of ``module`` for ``arch`` at ``block`` threads per block.

    ``compile=True`` runs ptxas on ``ptx`` (the original text; emitted from ``module`` when
    None) and reads registers, spills and stack; ``kernel`` selects one function (or a list)
    by name, default every ``.entry``.  Raises :class:`~ptxforge.errors.PtxforgeError` for
    an unknown arch or kernel and :class:`~ptxforge.errors.CompileError` with ptxas's log.

    Example::

        >>> from ptxforge import ir
        >>> m = ir.Module("8.0", "sm_80", kernels=(ir.Kernel("k", body=(ir.Instruction("ret"),)),))
        >>> analyze_module(m, "sm_86", 128, compile=False).kernels[0].occupancy.active_blocks
        12
    """
    with _gc_paused():
        return _analyze_module(module, arch, block, compile, kernel, ptx, file, backend, options)


def _analyze_module(module, arch, block, compile, kernel, ptx, file, backend, options):
    """The body of :func:`analyze_module` (run with the collector paused)."""
    tgt = check_arch(arch)
    if not isinstance(block, int) or isinstance(block, bool) or not 1 <= block <= 1024:
        raise PtxforgeError(f"block size must be an int in 1..1024, got {block!r}")
    chosen = _select(module, kernel, file)
    compiled = None
    if compile:
        compiled = compile_ptx(module if ptx is None else ptx, tgt, backend=backend,
                               options=options)
        by_name = {s.name: s for s in compiled.kernels}
    out = []
    unknown = unknown_arch_reason(tgt)
    for k in chosen:
        mix = instruction_mix(k)
        pressure = analyze_pressure(k)
        stats = by_name.get(k.name) if compiled is not None else None
        if stats is not None:
            kw = dict(shared=stats.shared, barriers=max(stats.barriers or 1, 1))
        else:
            kw = dict(shared=static_shared_bytes(module, k))
        occ = occ_est = cliffs = None
        if unknown is None:
            lim = launch_limits(k, stats)
            est = pressure.peak.units
            occ_est = occupancy(min(est, 255), block, tgt, **kw, **lim)
            occ = occ_est if stats is None else occupancy(stats.registers, block, tgt, **kw,
                                                          **lim)
            cliffs = register_cliffs(occ.registers, block, tgt, **kw, **lim)
        out.append(KernelAnalysis(k.name, k.is_entry, tgt, block, mix, pressure, stats, occ,
                                  occ_est, cliffs, k, unknown))
    return ModuleAnalysis(file, tgt, block, compiled is not None,
                          compiled.backend if compiled is not None else None,
                          module.version, module.target, tuple(out))


def analyze_ptx(text: Union[str, bytes], filename: str = "<ptx>", arch: Union[str, int] = "sm_80",
                block: int = 256, compile: bool = True, **kwargs) -> ModuleAnalysis:
    """Parse PTX text and :func:`analyze_module` it (ptxas compiles the text as given).

    Raises :class:`~ptxforge.errors.ParseError` with file, line and column for malformed PTX.
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    with _gc_paused():
        module = parse(text, filename)
        return analyze_module(module, arch, block, compile, ptx=text, file=filename, **kwargs)


@attrs.frozen(slots=True)
class OccupancyReport:
    """``ptxforge occupancy``: occupancy at a register count and the cliffs around it."""

    occupancy: Occupancy
    cliffs: RegisterCliffs

    def to_dict(self) -> dict:
        """JSON-ready dict: the occupancy keys plus ``arch`` and ``cliffs``."""
        c = self.cliffs
        return {"arch": self.occupancy.arch, **occupancy_fields(self.occupancy),
                "limits": self.occupancy.to_dict()["limits"],
                "cliffs": {"to_gain": c.to_gain, "next_blocks": c.next_blocks,
                           "headroom": c.headroom,
                           "steps": [{"max_registers": r, "blocks_per_sm": b} for r, b in c.steps]}}

    def to_text(self) -> str:
        """Readable summary with the per-resource limits and the register plateaus."""
        return render_occupancy(self)


def occupancy_report(arch: Union[str, int], registers: int, block: int, smem: int = 0
                     ) -> OccupancyReport:
    """Occupancy of ``registers`` per thread at ``block`` threads with ``smem`` bytes of
    shared memory per block, and the register cliffs.

    Example::

        >>> r = occupancy_report("sm_86", 51, 256)
        >>> r.occupancy.active_blocks, round(r.occupancy.occupancy * 100, 1)
        (4, 66.7)
    """
    props = arch_props(arch)
    if not isinstance(registers, int) or not 0 <= registers <= props.max_regs_per_thread:
        raise PtxforgeError(f"registers must be an int in 0..{props.max_regs_per_thread}, "
                            f"got {registers!r}")
    if not isinstance(block, int) or not 1 <= block <= props.max_threads_per_block:
        raise PtxforgeError(f"block size must be an int in 1..{props.max_threads_per_block}, "
                            f"got {block!r}")
    occ = occupancy(registers, block, props, shared=smem)
    return OccupancyReport(occ, register_cliffs(registers, block, props, shared=smem))


@attrs.frozen(slots=True)
class SweepReport:
    """``ptxforge sweep``: per kernel its analysis (uncapped) and the register-cap sweep."""

    analysis: ModuleAnalysis
    sweeps: tuple  # one ptxforge.sweep.Sweep per kernel of ``analysis``

    def to_dict(self, top: int = 10) -> dict:
        """``{schema, file, arch, block_size, backend, kernels: [KERNEL + {sweep}]}``."""
        a = self.analysis
        return {"schema": "ptxforge.sweep/1", "file": a.file, "arch": a.arch,
                "block_size": a.block_size, "backend": a.backend,
                "kernels": [{**k.to_dict(top), "sweep": s.to_dict()}
                            for k, s in zip(a.kernels, self.sweeps)]}

    def to_text(self) -> str:
        """The sweep tables, one per kernel, with the liveness estimate beside them."""
        parts = []
        for k, s in zip(self.analysis.kernels, self.sweeps):
            parts.append(s.to_text() + f"\nliveness estimate: {k.estimate.registers} registers "
                         f"(32-bit units), {k.estimate.predicates} predicates\n")
        return "\n".join(parts)


def sweep_report(text: Union[str, bytes], filename: str = "<ptx>", arch: Union[str, int] = "sm_80",
                 block: int = 256, caps: Optional[Sequence[int]] = None,
                 kernel: Optional[str] = None, backend: str = "auto", *,
                 only_caps: bool = False) -> SweepReport:
    """Parse, analyse and sweep every selected kernel at the occupancy cliffs of
    :func:`ptxforge.sweep.default_caps` plus ``caps``; ``only_caps=True`` sweeps ``caps``
    alone.  Only ``.entry`` kernels can be swept (a file of ``.func`` only is an error that
    names its functions)."""
    from .sweep import sweep

    if only_caps and not caps:
        raise PtxforgeError("sweep: only_caps needs at least one cap")
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    a = analyze_ptx(text, filename, arch, block, True, kernel=kernel, backend=backend)
    chosen, extra = (tuple(caps), ()) if only_caps else (None, tuple(caps or ()))
    sweeps = tuple(sweep(text, k.name, a.arch, block_size=block, caps=chosen, extra_caps=extra,
                         backend=backend) for k in a.kernels)
    return SweepReport(a, sweeps)
