"""The PTX liveness estimate beside the SASS ground truth and ptxas's REGCOUNT, per kernel.

Three numbers per kernel, in general registers:

* **estimate**: the peak of PTX liveness (:func:`~ptxforge.analysis.pressure.analyze_pressure`,
  32-bit units) — what the PTX needs if ptxas kept its instruction order;
* **SASS peak**: the most physical registers live at one SASS instruction (nvdisasm's life
  ranges, :mod:`ptxforge.toolchain.sass`) — what ptxas's schedule actually keeps live, R1 (the stack
  pointer every kernel sets up) included;
* **REGCOUNT**: what the kernel launches with.  Measured with ptxas 13.5 (sm_80, sm_90, every
  corpus kernel, whole-program and relocatable) it is the highest GPR index the kernel's own
  code touches + 1 + 2, or, when more, the span of the subroutines ptxas compiled into a
  whole-program kernel (``CALL.REL`` to a ``.func`` or a slow path such as
  ``__cuda_sm20_div_rn_f64_full``: subroutine code gets no +2, so REGCOUNT can equal the
  span), or a callee's REGCOUNT (relocatable: ``.func`` callees and, sm_75 … sm_89, the
  ``__cuda_sm70_*`` warp-sync helpers with 24).

``span - SASS peak`` are registers left unused below the highest one (allocation holes,
aligned pairs); ``REGCOUNT - span`` the 2 registers ptxas adds (0 … 2 when a subroutine
holds the highest register, more for a call-graph floor).

JSON (``"schema": "ptxforge.sass/1"``)::

    schema, file, arch, backend, mode, note, nvdisasm, line_info, ptx_lines, kernels: [KERNEL]
    KERNEL = {name, estimate: {registers, predicates, peak_index, peak_instruction} | null,
              sass: {registers, registers_without_call_clobbers, predicates, uniform, span,
                     used, instructions, peak_count,
                     peak_offsets, live_at_peak, peak_instructions: [INSTR]},
              ptxas: {registers, body_registers, spill_stores, spill_loads, register_cap},
              spills_by_line: [{file, line, stores, loads, store_bytes, load_bytes,
                                loop_depth, spill_accesses, offsets}],
              regcount_minus_span, holes, estimate_minus_sass, regcount_reason,
              call_graph: [{name, regcount, span, sass_peak}]}
    INSTR  = {offset, text, counts: {group: n}, source, ptx_line, ptx}

Example::

    >>> r = sass_report(kernels.saxpy(), "sm_80")            # doctest: +SKIP
    >>> k = r.kernels[0]; k.estimate.registers, k.sass_peak, k.span, k.regcount  # doctest: +SKIP
    (5, 5, 8, 10)
"""

from __future__ import annotations

import json
from typing import Optional, Union

import attrs

from ptxforge._text import clip, plural, reg_ranges, short_loc, short_path, table, wrap
from ptxforge.arch.ptxas_model import REGCOUNT_RESERVED, regcount_from_spans
from ptxforge.arch.spec import LaunchSpec, launch_spec
from ptxforge.errors import PtxforgeError
from ptxforge.ptx import ir
from ptxforge.ptx.demangle import display_name, full_name
from ptxforge.ptx.names import match_kernel
from ptxforge.toolchain.compile import CompileRequest, KernelStats
from ptxforge.toolchain.sass import SassFunction, SassLiveness, sass_liveness
from ptxforge.toolchain.sass_flow import code_spans
from ptxforge.toolchain.sass_spills import spills_by_line

from .estimate import Estimate
from .gap import Gap, explain_gap
from .names import short_labels, title_lines
from .resources import resolve_target
from .sass_explain import explain_dict, explain_text
from .sass_trace import KernelTrace, PtxLines, trace_kernel

__all__ = ["SCHEMA", "RESERVED", "SassKernelReport", "SassReport", "kernel_reports",
           "sass_report"]

SCHEMA = "ptxforge.sass/1"
#: Registers ptxas 13 counts beyond the highest GPR index + 1 of a kernel's own code
#: (:data:`ptxforge.arch.ptxas_model.REGCOUNT_RESERVED`, with its measurement).
RESERVED = REGCOUNT_RESERVED


@attrs.frozen(slots=True, kw_only=True)
class SassKernelReport:
    """One kernel: the PTX estimate (None for a cubin given alone), its SASS function, the
    functions its call graph reaches, and ptxas's stats (None for a cubin alone)."""

    name: str
    function: SassFunction
    callees: tuple                      # SassFunction of each function the kernel reaches
    estimate: Optional[Estimate] = None
    estimate_index: Optional[int] = None
    estimate_instruction: Optional[str] = None
    stats: Optional[KernelStats] = None
    trace: Optional[KernelTrace] = attrs.field(default=None, repr=False)
    gap: Optional[Gap] = None

    @property
    def gap_notes(self) -> tuple:
        """The gap's reasons as sentences (empty without a PTX estimate)."""
        return () if self.gap is None else self.gap.notes()

    @property
    def regcount(self) -> Optional[int]:
        """Registers the kernel launches with: ptxas's figure, else the cubin's REGCOUNT."""
        return self.stats.registers if self.stats is not None else self.function.regcount

    @property
    def sass_peak(self) -> int:
        return self.function.peak("GPR").count

    @property
    def sass_peak_across_calls(self) -> int:
        """The SASS peak without the registers CALLs assign (their possible clobbers)."""
        return self.function.peak("GPR", call_clobbers=False).count

    @property
    def span(self) -> int:
        return self.function.span("GPR")

    @property
    def own_span(self) -> int:
        """Highest GPR + 1 of the kernel's own code (its subroutines left out)."""
        return code_spans(self.function)[0]

    @property
    def subroutine_span(self) -> int:
        """Highest GPR + 1 of the subroutines ptxas compiled into the kernel (0: none)."""
        return code_spans(self.function)[1]

    @property
    def above_span(self) -> Optional[int]:
        """REGCOUNT − span (2, less when a subroutine holds the highest register, more for a
        call-graph floor)."""
        return None if self.regcount is None else self.regcount - self.span

    @property
    def holes(self) -> int:
        """span − SASS peak: registers below the highest one never live at the peak."""
        return self.span - self.sass_peak

    @property
    def estimate_minus_sass(self) -> Optional[int]:
        return None if self.estimate is None else self.estimate.registers - self.sass_peak

    def regcount_reason(self) -> str:
        """Why REGCOUNT is what it is, from the spans of the kernel's own code and of its
        subroutines, and the call graph (the rule measured in the module docstring)."""
        r, span = self.regcount, self.span
        if r is None:
            return "the cubin records no REGCOUNT for this kernel"
        own, sub = code_spans(self.function)
        top = max(self.callees, key=lambda f: (f.regcount or 0, f.name), default=None)
        floor = 0 if top is None else (top.regcount or 0)
        if not span:
            return f"REGCOUNT {r} with no GPR used"
        if r == own + RESERVED == regcount_from_spans(own, sub, floor):
            if not sub:
                return f"REGCOUNT {r} = highest GPR used (R{span - 1}) + 1 + {RESERVED}"
            return (f"REGCOUNT {r} = highest GPR of the kernel's own code (R{own - 1}) + 1 + "
                    f"{RESERVED}; its subroutines reach R{sub - 1}")
        if sub and r == sub and floor <= r:
            return (f"REGCOUNT {r} = highest GPR used (R{sub - 1}) + 1, in a subroutine ptxas "
                    f"compiled into the kernel: subroutine code gets no +{RESERVED} (the "
                    f"kernel's own code needs R{own - 1} + 1 + {RESERVED} = {own + RESERVED})")
        if top is not None and floor == r:
            return (f"REGCOUNT {r} is the call graph's maximum: {top.name} needs {r} (this "
                    f"kernel's own span + {RESERVED} is {own + RESERVED})")
        return (f"REGCOUNT {r} vs highest GPR used + 1 = {span}: {r - span} more, "
                f"not the {RESERVED} measured elsewhere, a subroutine's span nor a callee's "
                "count")

    def to_dict(self, top: int = 10) -> dict:
        f, s, e = self.function, self.stats, self.estimate
        peak = f.peak("GPR")
        ins = peak.instructions if top <= 0 else peak.instructions[:top]
        return {
            "name": self.name,
            "estimate": None if e is None else {
                "registers": e.registers, "predicates": e.predicates,
                "peak_index": self.estimate_index, "peak_instruction": self.estimate_instruction},
            "sass": {"registers": peak.count, "registers_without_call_clobbers":
                     self.sass_peak_across_calls, "predicates": f.peak("PRED").count,
                     "uniform": f.peak("UGPR").count, "span": self.span,
                     "used": len(f.used("GPR")), "instructions": len(f.instructions),
                     "peak_count": len(peak.instructions), "peak_offsets": list(peak.offsets),
                     "live_at_peak": list(peak.registers),
                     "peak_instructions": [i.to_dict() for i in ins]},
            "ptxas": {"registers": self.regcount,
                      "body_registers": None if s is None else s.body_registers,
                      "spill_stores": None if s is None else s.spill_stores,
                      "spill_loads": None if s is None else s.spill_loads,
                      "register_cap": None if s is None else s.register_cap},
            "spills_by_line": [x.to_dict() for x in spills_by_line(f)],
            "regcount_minus_span": self.above_span, "holes": self.holes,
            "estimate_minus_sass": self.estimate_minus_sass,
            "regcount_reason": self.regcount_reason(),
            "call_graph": [{"name": c.name, "regcount": c.regcount, "span": c.span("GPR"),
                            "sass_peak": c.peak("GPR").count} for c in self.callees],
            **explain_dict(self.trace, self.gap),
        }

    def to_text(self, top: int = 10) -> str:
        f, e = self.function, self.estimate
        peak = f.peak("GPR")
        at = plural(len(peak.instructions), "instruction")
        rows: list[tuple[str, Optional[int], str]] = []
        if e is not None:
            rows.append(("PTX liveness estimate (32-bit units)", e.registers,
                         f"at PTX instruction {self.estimate_index}: "
                         f"{clip(self.estimate_instruction or '?', 60)}"))
        rows.append(("SASS peak live GPRs", peak.count, f"at {at}"))
        if self.sass_peak_across_calls != peak.count:
            rows.append(("  without call clobbers", self.sass_peak_across_calls,
                         "at a CALL nvdisasm also counts what the callee may overwrite"))
        rows += [
                 ("highest GPR used + 1 (span)", self.span,
                  f"{len(f.used('GPR'))} distinct GPRs used; {self.holes} below the highest "
                  "never live at the peak"),
                 ("ptxas REGCOUNT", self.regcount, self.regcount_reason())]
        title = title_lines(full_name(self.name), mangled=self.name)
        lines = [*title, *table(("", "registers", ""), rows, right={1}, width=100,
                                wrap_last=True)]
        preds = f"predicates: SASS peak {f.peak('PRED').count}"
        if e is not None:
            preds += f", estimate {e.predicates}"
        if "UGPR" in f.groups:
            preds += f"; uniform registers (UGPR) peak {f.peak('UGPR').count}"
        lines.append("  " + preds)
        s = self.stats
        if s is not None and (s.spills or s.register_cap):
            lines.append(f"  ptxas: cap {s.register_cap or '-'}, spills {s.spill_stores} B "
                         f"stored / {s.spill_loads} B loaded")
        if self.callees:
            lines += wrap("call graph: " + ", ".join(
                f"{full_name(c.name)} (REGCOUNT {c.regcount}, span {c.span('GPR')})"
                for c in self.callees), indent="  ", subsequent="    ")
        shown = peak.instructions if top <= 0 else peak.instructions[:top]
        if shown:
            which = (at if len(shown) == len(peak.instructions)
                     else f"the first {len(shown)} of {at}")
            lines += ["", f"SASS peak ({peak.count} live GPRs) at {which}:"]
            at_peak = [(f"{i.offset:#06x}", clip(i.text, 48),
                        "-" if i.ptx_line is None else clip(f"{i.ptx_line}: {i.ptx or ''}", 44),
                        "-" if i.source is None else short_loc(str(i.source), 48))
                       for i in shown]
            lines += table(("offset", "SASS", "PTX line", "source"), at_peak, right=set(),
                           width=100, shrink=((3, short_loc), 2, 1))
            lines += wrap(f"live at {peak.instructions[0].offset:#06x}: "
                          + reg_ranges(peak.registers), indent="  ", subsequent="    ")
        lines += explain_text(self.trace, self.gap, top)
        return "\n".join(lines) + "\n"


@attrs.frozen(slots=True, kw_only=True)
class SassReport:
    """Every selected kernel of one module or cubin."""

    file: str
    arch: str
    backend: Optional[str]
    sass: SassLiveness = attrs.field(repr=False)
    kernels: tuple
    mode: str | None = None              # "whole-program" or "relocatable" (None: a cubin)
    note: str | None = None              # what ptxforge adjusted in the compile, and why

    def kernel(self, name: str) -> SassKernelReport:
        for k in self.kernels:
            if k.name == name:
                return k
        raise PtxforgeError(f"sass: no kernel named {name!r} in {self.file}; it has: "
                            f"{', '.join(k.name for k in self.kernels) or 'none'}")

    def to_dict(self, top: int = 10) -> dict:
        return {"schema": SCHEMA, "file": self.file, "arch": self.arch, "backend": self.backend,
                "mode": self.mode, "note": self.note, "nvdisasm": self.sass.version, "line_info": self.sass.line_info,
                "ptx_lines": self.sass.ptx_lines,
                "kernels": [k.to_dict(top) for k in self.kernels]}

    def to_json(self, top: int = 10, indent: Optional[int] = 2) -> str:
        return json.dumps(self.to_dict(top), indent=indent, sort_keys=True, ensure_ascii=False)

    def to_text(self, top: int = 10) -> str:
        via = (("ptxas; " if self.backend == "ptxas" else f"ptxas via {self.backend}; ")
               if self.backend else "")
        mode = "relocatable; " if self.mode == "relocatable" and self.backend == "ptxas" else ""
        head = [*wrap(f"{short_path(self.file, 48)}: {self.arch}; {via}{mode}nvdisasm "
                      f"{self.sass.version}"),
                *(wrap(f"note: {self.note}") if self.note else []), ""]
        names = [display_name(k.name) for k in self.kernels]
        rows = [("-" if k.estimate is None else k.estimate.registers, k.sass_peak,
                 k.span, k.regcount, k.above_span, len(k.callees) or "") for k in self.kernels]
        header = ("kernel", "estimate", "SASS peak", "span", "REGCOUNT", "REGCOUNT-span",
                  "callees")
        rest = max(len(x) for x in table(header, [("", *r) for r in rows])) - len(header[0])
        labels = short_labels(names, max(24, 100 - rest))
        head += table(header, [(n, *r) for n, r in zip(labels, rows)])
        if not self.sass.line_info and not self.sass.ptx_lines:
            head.append("  (the cubin has no line info: compile with line_info=True for the "
                        "PTX and source lines of the SASS peak)")
        return "\n".join(head) + "\n\n" + "\n".join(k.to_text(top) for k in self.kernels)


def _compiled_text(source, module: ir.Module) -> str:
    """The PTX text ptxas compiled (its line numbers are the SASS's PTX lines)."""
    if isinstance(source, ir.Module):
        from ptxforge.ptx.emit import emit
        return emit(module, line_info=True)
    return source.decode() if isinstance(source, (bytes, bytearray)) else source


def _is_cubin(source) -> bool:
    return isinstance(source, (bytes, bytearray, memoryview)) and bytes(source[:4]) == b"\x7fELF"


def _kernel_report(name: str, sass: SassLiveness, **kw) -> SassKernelReport:
    fn = sass.function(name)
    callees = tuple(sass.function(c) for c in sass.call_graph(name)[1:] if sass.has(c))
    return SassKernelReport(name=name, function=fn, callees=callees, **kw)


def sass_report(source, spec: Union[LaunchSpec, str, int, None] = None, *,
                kernel: Optional[str] = None, request: Optional[CompileRequest] = None,
                nvdisasm: Optional[str] = None, file: str = "<ptx>",
                strict: bool = True) -> SassReport:
    """Compile ``source`` (PTX text or bytes, or an ``ir.Module``) for ``spec``'s target
    (a :class:`~ptxforge.arch.spec.LaunchSpec` or a target name; default: the PTX's own
    ``.target``, else sm_80, as ``ptxforge analyze`` chooses) with line info, as ``request``
    (a :class:`~ptxforge.toolchain.compile.CompileRequest`) says, read its SASS liveness,
    and set estimate, SASS peak and REGCOUNT side by side for each ``.entry`` (or
    ``kernel``).  Cubin bytes (``\\x7fELF…``) are read as they are: no estimate, REGCOUNT
    from the cubin, the architecture from its header.

    Line info does not change the code: with and without ``-lineinfo`` ptxas 13 gives the
    same SASS and registers for every corpus kernel on sm_80 and sm_90.  ``strict=False``
    parses leniently (see :func:`ptxforge.ptx.parse.parse`); ptxas still judges the PTX.
    """
    if _is_cubin(source):
        sass = sass_liveness(bytes(source), nvdisasm=nvdisasm)
        names = [f.name for f in sass.entries] if kernel is None else [
            match_kernel([f.name for f in sass.entries], kernel, file)]
        reports = tuple(attrs.evolve(r, trace=trace_kernel(r.function))
                        for r in (_kernel_report(n, sass) for n in names))
        return SassReport(file=file, arch=sass.arch, backend=None, sass=sass, kernels=reports)
    from ptxforge.ptx.parse import parse

    module = source if isinstance(source, ir.Module) else parse(source, file, strict=strict)
    tgt = resolve_target(launch_spec(spec).target, module.target)[0]
    bodies = {k.name: k for k in module.kernels if k.body is not None}
    if kernel is not None:  # mangled, demangled or a prefix, as every command takes it
        kernel = match_kernel(list(bodies), kernel, file)
    chosen = [bodies[kernel]] if kernel is not None else [k for k in bodies.values()
                                                           if k.is_entry]
    if not chosen:
        raise PtxforgeError(f"sass: {file} has no .entry kernel (SASS of a .func alone is "
                            "not kept by ptxas)")
    request = request or CompileRequest()
    opts = attrs.evolve(request.options, line_info=True)
    compiled = request.compile(module if isinstance(source, ir.Module) else source, tgt, opts)
    sass = sass_liveness(compiled, nvdisasm=nvdisasm)
    reports = kernel_reports(compiled, sass, module, _compiled_text(source, module), chosen)
    return SassReport(file=file, arch=tgt, backend=compiled.backend, sass=sass, kernels=reports,
                      mode=compiled.mode, note=compiled.note)


def kernel_reports(compiled, sass: SassLiveness, module: ir.Module, text: str,
                   kernels, *, lines: Optional[PtxLines] = None,
                   liveness: Optional[dict] = None, pressures: Optional[dict] = None
                   ) -> tuple:
    """A traced, explained :class:`SassKernelReport` per kernel of ``kernels`` (``ir.Kernel``
    entries of ``module``): ``compiled`` is its :class:`~ptxforge.toolchain.compile.Compiled`
    (built with line info; a ``{name: KernelStats}`` mapping does too), ``sass`` that cubin's liveness and ``text`` the PTX ptxas compiled
    (its line numbers are the SASS's PTX lines).  ``ptxforge analyze`` uses it for the gap;
    ``lines`` (the text's :class:`~ptxforge.reports.sass_trace.PtxLines`) and ``liveness``
    (``{kernel name: Liveness}``) and ``pressures`` (``{kernel name: PressureReport}``) save
    work the caller has done already."""
    from ptxforge.analysis.liveness import analyze_liveness
    from ptxforge.analysis.pressure import analyze_pressure

    reports = []
    lines = lines if lines is not None else PtxLines(text)   # the text indexed once
    for k in kernels:
        live = (liveness or {}).get(k.name) or analyze_liveness(k)
        pr = (pressures or {}).get(k.name) or analyze_pressure(k, liveness=live)
        rep = _kernel_report(
            k.name, sass, estimate=Estimate(registers=pr.peak.units, predicates=pr.pred_peak.units),
            estimate_index=pr.peak.index, estimate_instruction=pr.peak.instruction,
            stats=compiled[k.name])
        trace = trace_kernel(rep.function, k, module=module, lines=lines)
        reports.append(attrs.evolve(rep, trace=trace, gap=explain_gap(rep, trace, live)))
    return tuple(reports)
