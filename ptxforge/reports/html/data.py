"""What the HTML report draws, per kernel, as plain frozen data (no HTML here).

:func:`kernel_view` turns one :class:`~ptxforge.reports.analyze.KernelAnalysis` (plus an
optional SASS report and register-cap sweep) into a :class:`KernelView`: the PTX timeline,
the SASS live counts placed on PTX instruction indices, the loop spans, the source lines with
the most registers live at each, the values live at the peak by line, the occupancy plateaus
and the sweep rows.  :func:`sass_by_instruction` does the SASS placement: nvdisasm gives the
PTX line of each SASS instruction; :func:`ptx_line_numbers` finds the line of each PTX
instruction in the text that was compiled.

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
    >>> v = kernel_view(a.kernels[0])
    >>> v.timeline, v.peak_index, v.steps[:2]
    ((2, 4, 0, 0), 1, ((255, 1), (128, 2)))
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Optional

import attrs

from ptxforge.ptx.demangle import display_name, full_name
from ptxforge.ptx.emit import format_instruction

from ..names import short_label

__all__ = ["KernelView", "LoopSpan", "MemoryRow", "SourceLine", "SweepMark", "SweepPoint",
           "cubin_view", "heat_classes", "kernel_view", "memory_rows", "ptx_line_numbers",
           "sass_by_instruction"]

#: Heat classes of the source view: 0 (coolest) to HEAT_CLASSES - 1 (the hottest line).
HEAT_CLASSES = 5


def heat_classes(values: Sequence) -> tuple:
    """The heat class of each live count among a kernel's code lines, by quantile: the
    hottest count alone gets the top class; the others are split into the classes below by
    their share of the lines under the top (a class per quarter of them), so a hot loop whose
    lines span 76 to 86 of 86 is spread over the scale, not painted one colour.

    Example::

        >>> heat_classes([10, 76, 78, 80, 82, 84, 86, 86])
        (0, 1, 1, 2, 3, 3, 4, 4)
    """
    top = max(values, default=0)
    below = sorted(v for v in values if v < top)
    n, k = len(below), HEAT_CLASSES - 1
    out = []
    for v in values:
        if v >= top:
            out.append(k)
            continue
        upto = sum(1 for b in below if b <= v)      # the lines at or under v, of those below
        out.append(min(k - 1, -(-upto * k // n) - 1))
    return tuple(out)

#: Source lines shown around the lines that hold code (a file is shown from its first to
#: its last such line, at most this many lines; longer files show only the code lines).
MAX_SOURCE_LINES = 600


@attrs.frozen(slots=True, kw_only=True)
class LoopSpan:
    """A run of instructions inside a loop: ``[start, end)``, its loop's name and depth."""

    start: int
    end: int
    name: str
    depth: int


@attrs.frozen(slots=True, kw_only=True)
class SourceLine:
    """One line of the source view: ``live`` is the most registers live at any instruction
    of the line (None: no code), ``values`` the registers live at the peak it defined."""

    file: str
    line: int
    text: str
    live: int | None = None
    instructions: int = 0
    values: tuple = ()


@attrs.frozen(slots=True, kw_only=True)
class SweepPoint:
    """One compile of the sweep: cap (None: uncapped), registers, spill bytes, occupancy."""

    cap: int | None
    registers: int | None
    spill_stores: int | None
    spill_loads: int | None
    occupancy: float | None
    blocks: int | None


@attrs.frozen(slots=True, kw_only=True)
class SweepMark:
    """A recommended sweep row: its cap, which recommendation (``"no spills"`` or ``"within
    N spill bytes"``) and the lever that takes effect (None: none proven)."""

    cap: int
    label: str
    lever: str | None = None


@attrs.frozen(slots=True, kw_only=True)
class KernelView:
    """Everything the page shows for one kernel (see the module docstring)."""

    name: str
    label: str
    demangled: str
    anchor: str
    is_entry: bool
    arch: str
    block_size: int
    instructions: int
    estimate: int
    predicates: int
    prediction: str | None
    ptxas_registers: int | None
    spill_stores: int | None
    spill_loads: int | None
    stack: int | None
    occupancy: float | None
    blocks: int | None
    limiter: str | None
    occupancy_note: str | None
    to_gain: int | None
    next_blocks: int | None
    headroom: int | None
    max_warps: int | None
    warps_per_block: int
    steps: tuple
    timeline: tuple
    sass: tuple
    sass_peak: int | None
    peak_index: int | None
    peak_instruction: str | None
    loops: tuple
    source: tuple
    source_note: str | None
    sweep: tuple
    recommended: tuple
    notes: tuple
    timeline_of: str = "PTX"       # "SASS" for a cubin: the timeline is over SASS instructions
    sweep_marks: tuple = ()        # SweepMark s: the recommended rows of the sweep table
    advice: dict | None = None     # the kernel's ``ptxforge advise`` (KernelAdvice.to_dict())
    spill_lines: tuple | None = None   # SpillLine s from the SASS (None: SASS not read)
    memory: tuple = ()             # MemoryRow per source line, worst first (PTX kernels)
    memory_fixes: tuple = ()       # the checked fixes, as sentences
    memory_block: tuple = ()       # the block shape the memory figures are for


@attrs.frozen(slots=True, kw_only=True)
class MemoryRow:
    """One source line of the memory table: its worst access and how many it has."""

    file: str | None
    line: int | None
    count: int
    space: str
    direction: str
    width: int
    figure: str
    severity: float | None
    detail: str


def memory_rows(kernel, block_size: int) -> tuple:
    """(rows by source line worst first, fix sentences, block shape) of the static memory
    analysis of ``kernel`` (an ``ir.Kernel``) for blocks of ``block_size`` threads (the
    launch bounds' shape when they give that many threads, else ``(block_size, 1, 1)``)."""
    import math

    from ptxforge.analysis.memory_access import analyze_memory, kernel_block, severity
    from ptxforge.reports.memory import figure_text

    shape = kernel_block(kernel, None)
    if math.prod(shape) != block_size:
        shape = (block_size, 1, 1)
    rep = analyze_memory(kernel, block=shape)
    rows = tuple(MemoryRow(file=r.file, line=r.line, count=len(r.accesses), space=r.worst.space,
                           direction=r.worst.direction, width=r.worst.width,
                           figure=figure_text(r.worst), severity=severity(r.worst),
                           detail=r.worst.address or r.worst.reason or "")
                 for r in rep.by_line())
    unit = {"padding": "ways", "swizzle": "ways", "coalesce": "sectors/request"}
    said: dict = {}        # the same fix for several accesses of a line: said once, counted
    for f in rep.fixes:
        text = (f"line {_line_of(rep, f.index)}: {f.kind}, {f.before:g} -> {f.after:g} "
                f"{unit[f.kind]}: {f.text}")
        said[text] = said.get(text, 0) + 1
    fixes = tuple(t if n == 1 else f"{t} ({n} accesses)" for t, n in said.items())
    return rows, fixes, rep.block


def _line_of(rep, index: int) -> str:
    a = next(a for a in rep.accesses if a.index == index)
    return str(a.line) if a.line is not None else f"#{index}"


def ptx_line_numbers(ptx: str, kernel) -> tuple:
    """The 1-based line of ``ptx`` holding each instruction of ``kernel`` (None where an
    instruction was not found), matched in order after the kernel's ``.entry``/``.func``.

    Example::

        >>> from ptxforge.ptx.parse import parse
        >>> text = ".version 8.0\\n.target sm_80\\n.address_size 64\\n.entry k()\\n{\\nret;\\n}\\n"
        >>> ptx_line_numbers(text, parse(text).kernels[0])
        (6,)
    """
    lines = ptx.splitlines()
    start = 0
    for n, line in enumerate(lines):
        words = line.replace("(", " ").split()
        if kernel.name in words and (".entry" in words or ".func" in words):
            start = n
            break
    out: list[Optional[int]] = []
    pos = start
    for inst in kernel.instructions:
        key = "".join(format_instruction(inst).split()).rstrip(";")
        found = None
        for n in range(pos, min(len(lines), pos + 200)):
            text = "".join(lines[n].split()).rstrip(";")
            if text == key or text.endswith(key):
                found = n
                break
        if found is None:
            out.append(None)
        else:
            out.append(found + 1)
            pos = found + 1
    return tuple(out)


def sass_by_instruction(lines: Sequence, sass_function) -> tuple:
    """The most physical registers live at a SASS instruction compiled from each PTX
    instruction (``lines``: their PTX line numbers), None where no SASS maps to it."""
    best: dict = {}
    for ins in sass_function.instructions:
        if ins.ptx_line is not None:
            n = ins.count("GPR")
            best[ins.ptx_line] = max(best.get(ins.ptx_line, 0), n)
    return tuple(None if ln is None else best.get(ln) for ln in lines)


def _loop_spans(report) -> tuple:
    spans = []
    blocks = {b.index: b for b in report.blocks}
    for loop in report.loops:
        ranges = sorted((blocks[b].start, blocks[b].end) for b in loop.blocks if b in blocks)
        merged: list = []
        for s, e in ranges:
            e = max(e, s + 1) if e <= s else e
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        spans += [LoopSpan(start=s, end=e, name=loop.name, depth=loop.depth) for s, e in merged]
    return tuple(spans)


def _read_lines(path: str, dirs: Sequence = ()) -> list | None:
    """The lines of ``path``, else of the file of that name in one of ``dirs``."""
    for candidate in (path, *(os.path.join(d, os.path.basename(path)) for d in dirs)):
        try:
            with open(candidate, encoding="utf-8", errors="replace") as fh:
                return fh.read().splitlines()
        except OSError:
            continue
    return None


def _source_view(k, dirs: Sequence = ()) -> tuple:
    """(lines, note): the source lines of the kernel's code, heat from the timeline."""
    kernel, at = k.kernel, k.pressure.timeline.at
    per_line: dict = {}
    if kernel is None:
        return (), "no IR kept for this kernel"
    for i, inst in enumerate(kernel.instructions):
        loc = inst.loc
        if loc is None or not loc.known:
            continue
        key = (loc.file, loc.line)
        live, count = per_line.get(key, (0, 0))
        per_line[key] = (max(live, at[i]), count + 1)
    if not per_line:
        return (), ("no source lines: the PTX has no .loc (compile with -lineinfo) and was "
                    "not written with the KernelBuilder")
    values: dict = {}
    for g in k.pressure.peak.by_source:
        if g.file is not None and g.line is not None:
            values[(g.file, g.line)] = tuple(g.names)
    out, missing = [], []
    for file in sorted({f for f, _ in per_line}):
        code = sorted(ln for f, ln in per_line if f == file)
        text = _read_lines(file, dirs)
        shown: Sequence[int]
        if text is None:
            missing.append(file)
            shown = code
        elif code[-1] - code[0] < MAX_SOURCE_LINES:
            shown = range(code[0], code[-1] + 1)
        else:
            shown = code
        for ln in shown:
            live, count = per_line.get((file, ln), (None, 0))
            src = text[ln - 1] if text is not None and 0 < ln <= len(text) else ""
            out.append(SourceLine(file=file, line=ln, text=src.rstrip(), live=live,
                                  instructions=count, values=values.get((file, ln), ())))
    note = None
    if missing:
        note = ("source not on this machine (line numbers only): "
                + ", ".join(os.path.basename(f) for f in missing))
    return tuple(out), note


def _sass_source(fn, dirs: Sequence = ()) -> tuple:
    """Source lines of a cubin's kernel from nvdisasm's line annotations."""
    per_line: dict = {}
    for ins in fn.instructions:
        if ins.source is not None and ins.source.line > 0:
            key = (ins.source.file, ins.source.line)
            live, count = per_line.get(key, (0, 0))
            per_line[key] = (max(live, ins.count("GPR")), count + 1)
    out = []
    for file in sorted({f for f, _ in per_line}):
        text = _read_lines(file, dirs)
        for (f, ln), (live, count) in sorted(per_line.items()):
            if f == file:
                src = text[ln - 1] if text is not None and 0 < ln <= len(text) else ""
                out.append(SourceLine(file=file, line=ln, text=src.rstrip(), live=live,
                                      instructions=count))
    return tuple(out)


def cubin_view(ck, fn, index: int = 0, source_dirs: Sequence = (), arch: str = ""
               ) -> KernelView:
    """The view of a cubin's kernel ``ck`` (:class:`~ptxforge.reports.cubin.CubinKernelReport`)
    with its SASS function ``fn``: the timeline is the SASS live count per SASS instruction
    (there is no PTX), the source view from the cubin's line info."""
    o, c = ck.occupancy, ck.cliffs
    counts = tuple(i.count("GPR") for i in fn.instructions)
    peak = fn.peak("GPR")
    first = peak.instructions[0].offset if peak.instructions else None
    idx = next((n for n, i in enumerate(fn.instructions) if i.offset == first), None)
    source = _sass_source(fn, source_dirs)
    return KernelView(
        name=ck.name, label=short_label(display_name(ck.name), 60), demangled=full_name(ck.name),
        anchor=f"k{index}", is_entry=True, arch=arch, block_size=ck.block_size,
        instructions=len(counts), estimate=peak.count, predicates=fn.peak("PRED").count,
        prediction=None, ptxas_registers=ck.registers, spill_stores=None, spill_loads=None,
        stack=ck.stack, occupancy=None if o is None else o.occupancy,
        blocks=None if o is None else o.active_blocks,
        limiter=(o.limiting[0] if o is not None and o.limiting else None),
        occupancy_note=ck.occupancy_note, to_gain=None if c is None else c.to_gain,
        next_blocks=None if c is None else c.next_blocks,
        headroom=None if c is None else c.headroom,
        max_warps=None if o is None else o.max_warps, warps_per_block=-(-ck.block_size // 32),
        steps=() if c is None else tuple(c.steps), timeline=counts, sass=(), sass_peak=None,
        peak_index=idx, peak_instruction=None if idx is None else fn.instructions[idx].text,
        loops=(), source=source,
        source_note=None if source else "the cubin has no line info (compile with -lineinfo)",
        sweep=(), recommended=(), notes=(), timeline_of="SASS")


def _sweep_points(sweep) -> tuple:
    if sweep is None:
        return ()
    return tuple(SweepPoint(cap=r.cap, registers=r.registers, spill_stores=r.spill_stores,
                            spill_loads=r.spill_loads, occupancy=r.occupancy,
                            blocks=r.blocks_per_sm) for r in sweep.rows)


def _prediction(k) -> str | None:
    """The analysis's prediction of ptxas's count, when the analysis has one."""
    p = getattr(k, "prediction", None)
    if p is None:
        p = getattr(k.pressure, "prediction", None)
    if p is None:
        return None
    for attr in ("registers", "predicted", "value"):
        v = getattr(p, attr, None)
        if isinstance(v, int):
            return str(v)
    return str(p)


def kernel_view(k, index: int = 0, *, sass: tuple = (), sass_peak: int | None = None,
                sweep=None, recommended: tuple = (), source_dirs: Sequence = (),
                extras: dict | None = None) -> KernelView:
    """The :class:`KernelView` of analysis ``k`` (the ``index``-th kernel of the page);
    ``sass``: SASS live counts per PTX instruction (:func:`sass_by_instruction`);
    ``sweep``: its :class:`~ptxforge.toolchain.sweep.Sweep`; ``recommended``: sentences;
    ``source_dirs``: folders searched for a source file not found at its ``.loc`` path;
    ``extras``: further :class:`KernelView` fields (``sweep_marks``, ``advice``,
    ``spill_lines``)."""
    r, s, o, c = k.pressure, k.stats, k.occupancy, k.cliffs
    source, note = _source_view(k, source_dirs)
    warps = -(-k.block_size // 32)
    memory, fixes, shape = memory_rows(k.kernel, k.block_size) if k.kernel is not None \
        else ((), (), ())
    return KernelView(
        name=k.name, label=short_label(display_name(k.name), 60), demangled=full_name(k.name),
        anchor=f"k{index}", is_entry=k.is_entry, arch=k.arch, block_size=k.block_size,
        instructions=k.mix.instructions, estimate=r.peak.units, predicates=r.pred_peak.units,
        prediction=_prediction(k),
        ptxas_registers=None if s is None else s.registers,
        spill_stores=None if s is None else s.spill_stores,
        spill_loads=None if s is None else s.spill_loads,
        stack=None if s is None else s.stack_frame,
        occupancy=None if o is None else o.occupancy,
        blocks=None if o is None else o.active_blocks,
        limiter=(o.limiting[0] if o is not None and o.limiting else None),
        occupancy_note=k.occupancy_note,
        to_gain=None if c is None else c.to_gain,
        next_blocks=None if c is None else c.next_blocks,
        headroom=None if c is None else c.headroom,
        max_warps=None if o is None else o.max_warps, warps_per_block=warps,
        steps=() if c is None else tuple(c.steps),
        timeline=tuple(r.timeline.at), sass=tuple(sass), sass_peak=sass_peak,
        peak_index=r.peak.index, peak_instruction=r.peak.instruction,
        loops=_loop_spans(r), source=source, source_note=note,
        sweep=_sweep_points(sweep), recommended=tuple(recommended), notes=tuple(k.notes()),
        memory=memory, memory_fixes=fixes, memory_block=shape, **(extras or {}))
