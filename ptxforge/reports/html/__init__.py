"""One self-contained HTML page per module: ``ptxforge report``'s register-pressure report.

:func:`html_report` analyses PTX (text, bytes or an ``ir.Module``) or reads a cubin and
returns the page: per kernel a summary card, the pressure timeline (PTX live count per
instruction, the SASS live count over it when nvdisasm is there, the peak marked, loops
shaded), the source view heat-coloured by the most registers live on each line, the
occupancy cliff chart and, with ``sweep=True``, the register-cap sweep charts; a sortable
index first when there are several kernels.  The charts are inline SVG written in Python
(:mod:`.svg`): no script library, no network, the same bytes for the same input.
See ``docs/report.md``.

Example::

    >>> page = html_report('''.version 8.0
    ... .target sm_80
    ... .address_size 64
    ... .visible .entry k(.param .u64 p)
    ... {
    ...     .reg .b64 %rd<3>;
    ...     ld.param.u64 %rd1, [p];
    ...     ld.global.u64 %rd2, [%rd1];
    ...     st.global.u64 [%rd1], %rd2;
    ...     ret;
    ... }''', "k.ptx", compile=False)
    >>> page.count('class="kernel"'), 'data-index="1"' in page
    (1, True)
"""

from __future__ import annotations

from typing import Optional, Union

import attrs

from ptxforge.arch.spec import LaunchSpec, launch_spec
from ptxforge.errors import PtxforgeError
from ptxforge.ptx import ir

from .data import SweepMark, cubin_view, kernel_view, ptx_line_numbers, sass_by_instruction
from .page import render_page

__all__ = ["PageOptions", "html_report"]


def _sass_series(text: str, analysis, kernels) -> tuple:
    """``{kernel: (SASS live per PTX instruction, SASS peak, local-memory traffic by source
    line)}`` and a note when the SASS could not be read (no nvdisasm, a compile failure)."""
    from ptxforge.reports.sass import sass_report
    from ptxforge.toolchain.sass_spills import spills_by_line

    try:
        rep = sass_report(text, analysis.arch, file=analysis.file)
    except PtxforgeError as exc:
        return {}, f"no SASS overlay: {str(exc).splitlines()[0]}"
    out = {}
    for k in kernels:
        try:
            sk = rep.kernel(k.name)
        except PtxforgeError:
            continue
        lines = ptx_line_numbers(text, k.kernel)
        out[k.name] = (sass_by_instruction(lines, sk.function), sk.sass_peak,
                       spills_by_line(sk.function))
    return out, None


def _marks(sweep, proofs: dict, budget: int) -> tuple:
    """The recommended rows of ``sweep`` with their levers (the proofs
    :func:`~ptxforge.reports.occupancy_sweep.recommendation_lines` made): the no-spill one,
    and the one within ``budget`` spill bytes when it gives more occupancy."""
    clean = proofs.get((sweep.kernel, 0))
    spilly = proofs.get((sweep.kernel, budget)) if budget > 0 else None
    floor = (clean.choice.occupancy if clean is not None and clean.choice is not None
             else -1.0)
    out = []
    for rec, label, above in ((clean, "recommended: most occupancy, no spills", -1.0),
                              (spilly, f"recommended within {budget} spill bytes", floor)):
        if rec is None or rec.choice is None or rec.choice.occupancy <= above:
            continue
        hold = rec.holding
        out.append(SweepMark(cap=rec.choice.cap, label=label,
                             lever=hold[0].lever.text if hold else None))
    return tuple(out)


def _advice(text: str, a, spec, kernel, request, page) -> tuple:
    """``{kernel: KernelAdvice dict}`` of ``ptxforge advise`` and a note when it failed."""
    from ptxforge.reports.advise import advise

    try:
        res = advise(text, a.file, attrs.evolve(spec, target=a.arch), kernel=kernel,
                     request=request, spill_budget=page.spill_budget,
                     source=page.cuda_source)
    except PtxforgeError as exc:
        return {}, f"no advise section: {str(exc).splitlines()[0]}"
    return {k.kernel: k.to_dict() for k in res.kernels}, None


def _header(a) -> list:
    tool = (a.tool or a.backend or "ptxas") if a.compiled else "not compiled"
    return [f"PTX {a.ptx_version} for {a.ptx_target}; analysed for {a.arch}; ptxas: {tool}"]


def _caps(value) -> tuple:
    out = tuple(value or ())
    for c in out:
        if not isinstance(c, int) or isinstance(c, bool) or not 16 <= c <= 255:
            raise PtxforgeError(f"PageOptions.caps: expected register caps in 16..255, got {c!r}")
    return out


def _spill_budget(_, attribute, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise PtxforgeError(f"PageOptions.spill_budget: expected an int >= 0 (bytes), got "
                            f"{value!r}")


@attrs.frozen(slots=True, kw_only=True)
class PageOptions:
    """What the page shows beyond the analysis, validated at construction.

    ``sass`` reads the SASS live counts with nvdisasm (a missing nvdisasm only drops the
    overlay, with a note) and with them the local-memory traffic by source line; ``sweep``
    compiles each kernel at the register caps of
    :func:`ptxforge.reports.occupancy_sweep.sweep_report` (plus ``caps``) and recommends a cap
    (``spill_budget``: spill bytes the second recommendation may spend); ``advise`` adds
    ``ptxforge advise``'s ranked changes (:mod:`ptxforge.reports.advise`); ``source_dirs``:
    folders searched for a source file its ``.loc`` path does not reach (the CLI passes the
    input file's folder).

    Example::

        >>> PageOptions(sweep=True, caps=[96]).caps
        (96,)
    """

    sass: bool = attrs.field(default=True, converter=bool)
    sweep: bool = attrs.field(default=False, converter=bool)
    caps: tuple = attrs.field(default=(), converter=_caps)
    spill_budget: int = attrs.field(default=0, validator=_spill_budget)
    source_dirs: tuple = attrs.field(default=(), converter=tuple)
    advise: bool = attrs.field(default=False, converter=bool)
    cuda_source: tuple | None = None


def html_report(source, file: str = "<ptx>", spec: Union[LaunchSpec, str, int, None] = None, *,
                compile: bool = True, request=None, kernel=None,
                page: Optional[PageOptions] = None, progress=None) -> str:
    """The report page for ``source`` (PTX text or bytes, an ``ir.Module``, or cubin bytes).

    ``spec`` (a :class:`~ptxforge.arch.spec.LaunchSpec`, or a target name), ``compile``,
    ``request`` and ``kernel`` are :func:`~ptxforge.reports.analyze.analyze_module`'s;
    ``page`` (:class:`PageOptions`) adds the SASS overlay (default) and the register-cap
    sweep; ``progress(i, n, name)`` is called before each kernel's slow work.
    """
    spec, page = launch_spec(spec), page or PageOptions()
    if isinstance(source, (bytes, bytearray)) and bytes(source[:4]) == b"\x7fELF":
        return _cubin_page(bytes(source), file, spec, kernel, page.source_dirs)
    from ptxforge.ptx.emit import emit
    from ptxforge.ptx.parse import parse
    from ptxforge.reports.analyze import analyze_module
    from ptxforge.reports.occupancy_sweep import recommendation_lines

    if isinstance(source, ir.Module):
        module, text = source, emit(source)
    else:
        text = source.decode("utf-8", "replace") if isinstance(source, (bytes, bytearray)) \
            else source
        module = parse(text, file)
    a = analyze_module(module, spec, compile, kernel=kernel, ptx=text, file=file,
                       request=request)
    notes = list(a.notes)
    overlay: dict = {}
    if compile and page.sass:
        if progress is not None:
            progress(0, len(a.kernels), "SASS")
        overlay, note = _sass_series(text, a, a.kernels)
        if note:
            notes.append(note)
    sweeps: dict = {}
    if page.sweep:
        from ptxforge.toolchain.sweep import sweep as run_sweep

        entries = [k for k in a.kernels if k.is_entry]
        for n, k in enumerate(entries):
            if progress is not None:
                progress(n, len(entries), k.name)
            at = attrs.evolve(spec, target=a.arch, block=k.block_size)
            sweeps[k.name] = run_sweep(text, k.name, at, extra_caps=page.caps)
    advice: dict = {}
    if compile and page.advise:
        if progress is not None:
            progress(0, len(a.kernels), "advise")
        advice, note = _advice(text, a, spec, kernel, request, page)
        if note:
            notes.append(note)
    views = []
    for i, k in enumerate(a.kernels):
        series, peak, spills = overlay.get(k.name, ((), None, None))
        sw = sweeps.get(k.name)
        proofs: dict = {}     # the recommendations with their proven levers, by budget
        rec = (recommendation_lines(sw, page.spill_budget, ptx=text, request=request,
                                    proofs=proofs) if sw is not None else ())
        extras = {"advice": advice.get(k.name), "spill_lines": spills,
                  "sweep_marks": _marks(sw, proofs, page.spill_budget) if sw else ()}
        views.append(kernel_view(k, i, sass=series, sass_peak=peak, sweep=sw, recommended=rec,
                                 source_dirs=page.source_dirs, extras=extras))
    return render_page(file, _header(a), views, notes)


def _cubin_page(data: bytes, file: str, spec: LaunchSpec, kernel, dirs) -> str:
    from ptxforge.reports.cubin import analyze_cubin
    from ptxforge.toolchain.sass import sass_liveness

    rep = analyze_cubin(data, file, spec, kernel=kernel)
    notes = []
    try:
        sass = sass_liveness(data)
    except PtxforgeError as exc:
        sass, notes = None, [f"no SASS liveness: {str(exc).splitlines()[0]}"]
    views = []
    for i, ck in enumerate(rep.kernels):
        if sass is None:
            continue
        views.append(cubin_view(ck, sass.function(ck.name), i, dirs, rep.arch))
    header = [(f"cubin for {rep.arch}: no PTX, so the timeline is the SASS live count "
              "(nvdisasm) and there is no estimate")]
    return render_page(file, header, views, notes)
