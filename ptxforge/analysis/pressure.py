"""The register-pressure report: how many registers a kernel needs, where, and why.

:func:`analyze_pressure` runs the CFG and liveness (see :mod:`ptxforge.analysis.liveness` for the exact
definitions; "live at instruction i" is ``after(i) ∪ defs(i)``) and returns a frozen
:class:`PressureReport`.  General-register figures are 32-bit units (64-bit values count 2,
``.b128`` 4); predicates are reported separately.  ``report.to_text()`` renders tables and a
sparkline; ``report.to_dict()`` / ``to_json()`` give the stable form below.

JSON keys (``"schema": "ptxforge.pressure/1"``; lists are sorted as described, never by set
order)::

    schema, kernel, n_instructions, n_blocks, n_loops
    registers:   {total, by_type: {type: n}, by_class: {class: n}, declared: {decl type: n}}
    peak:        PEAK of general registers (units)
    pred_peak:   PEAK of predicates (count)
    class_peaks: {class: {values, units, index}}   largest number of values live at once
    timeline:    {before, after, at, pred_before, pred_after, pred_at}: one int per instruction
    blocks:      [{index, name, start, end, live_in, live_out, peak, peak_index, pred_peak}]
    loops:       [{header, name, blocks, depth, parent, live_in, carried, peak, peak_index,
                   values_total, values: [VALUE]}]   values: the top ones at the loop's peak
    graph:       null, or {max_edges, truncated, nodes, edges,
                   classes: [{reg_class, scope, window, nodes, edges, estimated_edges, truncated,
                              colors, max_clique, max_clique_exact}]}

    PEAK   = {units, index, indices, instruction, by_class: {class: n}, values: [VALUE], by_source: [SOURCE]}
    VALUE  = {name, type, reg_class, bits, units, def_index, def_text, def_count, last_use,
              live_length, loc, function, inlined_at}
    SOURCE = {loc, file, line, function, count, units, names}

``index`` is the first instruction where the peak is reached, ``indices`` all of them;
``values`` are the registers live there, longest-lived first (then by defining instruction,
then name); ``live_length`` is the number of instructions at which the value is live;
``loc`` is ``file:line`` of the register (builder: the Python line that created it) or of its
defining instruction (parsed PTX: its ``.loc``).  ``live_in`` of a loop is what is live on
entry to its header; ``carried`` the part of it that the loop itself redefines (loop-carried
values such as accumulators).

Example::

    >>> from ptxforge.ptx import ir, types
    >>> f = [ir.Register(f"%f{i}", types.f32) for i in range(3)]
    >>> body = (ir.Instruction("mov.f32", (f[0], ir.Immediate(1.0, types.f32)), 1),
    ...         ir.Instruction("mov.f32", (f[1], ir.Immediate(2.0, types.f32)), 1),
    ...         ir.Instruction("add.f32", (f[2], f[0], f[1]), 1),
    ...         ir.Instruction("st.global.f32", (ir.Address(ir.Symbol("out")), f[2])))
    >>> report = analyze_pressure(ir.Kernel("k", body=body))
    >>> report.peak.units, report.peak.indices, [v.name for v in report.peak.values]
    (2, (1,), ['%f0', '%f1'])
"""

from __future__ import annotations

import json
from array import array
from collections import Counter
from itertools import compress, count, repeat
from operator import attrgetter, eq
from typing import Optional

import attrs

from ptxforge.errors import PtxforgeError
from ptxforge.ptx import ir
from ptxforge.ptx.emit import format_instruction
from ptxforge.ptx.types import REG_CLASSES

from .gc_pause import gc_paused
from .liveness import CLASS_NAMES, Liveness, analyze_liveness

__all__ = [
    "SCHEMA",
    "LiveValue",
    "SourceGroup",
    "Peak",
    "BlockPressure",
    "LoopPressure",
    "Timeline",
    "PressureReport",
    "analyze_pressure",
    "pressure_by_kernel",
    "sparkline",
]

SCHEMA = "ptxforge.pressure/1"
_NC = len(REG_CLASSES)
_UNITS = {c.name: c.units for c in REG_CLASSES}
_BARS = "▁▂▃▄▅▆▇█"
_TYPE_NAME = attrgetter("type.name")


def _loc_str(loc: Optional[ir.SourceLoc]) -> Optional[str]:
    """``file:line``, or ``(compiler-generated)`` for line 0 (``.loc 1 0 0``)."""
    return None if loc is None else str(loc)


@attrs.frozen(slots=True, kw_only=True)
class LiveValue:
    """One register live at a peak, with where it was made and how long it lives."""

    name: str
    type: str
    reg_class: str
    bits: int
    units: int
    def_index: Optional[int]
    def_text: Optional[str]
    def_count: int
    last_use: Optional[int]
    live_length: int
    loc: Optional[str]
    function: Optional[str] = None
    inlined_at: Optional[str] = None

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in _VALUE_KEYS}


_VALUE_KEYS = ("name", "type", "reg_class", "bits", "units", "def_index", "def_text", "def_count",
               "last_use", "live_length", "loc", "function", "inlined_at")


@attrs.frozen(slots=True, kw_only=True)
class SourceGroup:
    """Values live at a peak that were defined on one source line."""

    loc: str
    file: Optional[str]
    line: Optional[int]
    function: Optional[str]
    count: int
    units: int
    names: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"loc": self.loc, "file": self.file, "line": self.line, "function": self.function,
                "count": self.count, "units": self.units, "names": list(self.names)}


@attrs.frozen(slots=True, kw_only=True)
class Peak:
    """A peak: its value, every instruction reaching it, the values live at the first one."""

    units: int
    index: Optional[int]
    indices: tuple[int, ...]
    instruction: Optional[str]
    by_class: tuple[tuple[str, int], ...]
    values: tuple[LiveValue, ...]
    by_source: tuple[SourceGroup, ...]

    def to_dict(self) -> dict:
        return {"units": self.units, "index": self.index, "indices": list(self.indices),
                "instruction": self.instruction,
                "by_class": dict(self.by_class), "values": [v.to_dict() for v in self.values],
                "by_source": [g.to_dict() for g in self.by_source]}


@attrs.frozen(slots=True, kw_only=True)
class BlockPressure:
    """Pressure of one basic block (general units; ``pred_peak`` in predicates)."""

    index: int
    name: str
    start: int
    end: int
    live_in: int
    live_out: int
    peak: int
    peak_index: Optional[int]
    pred_peak: int

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("index", "name", "start", "end", "live_in", "live_out",
                                               "peak", "peak_index", "pred_peak")}


@attrs.frozen(slots=True, kw_only=True)
class LoopPressure:
    """A natural loop: what is live into it, what it carries, and its own peak."""

    header: int
    name: str
    blocks: tuple[int, ...]
    depth: int
    parent: Optional[int]
    live_in: int
    carried: int
    peak: int
    peak_index: Optional[int]
    values_total: int
    values: tuple[LiveValue, ...]

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("header", "name", "depth", "parent", "live_in", "carried",
                                            "peak", "peak_index", "values_total")}
        d["blocks"] = list(self.blocks)
        d["values"] = [v.to_dict() for v in self.values]
        return d


@attrs.frozen(slots=True, kw_only=True)
class Timeline:
    """Live counts per instruction: general units and predicates, before/after/at."""

    before: array = attrs.field(repr=False)
    after: array = attrs.field(repr=False)
    at: array = attrs.field(repr=False)
    pred_before: array = attrs.field(repr=False)
    pred_after: array = attrs.field(repr=False)
    pred_at: array = attrs.field(repr=False)

    def __len__(self) -> int:
        return len(self.at)

    def to_dict(self) -> dict:
        return {k: getattr(self, k).tolist() for k in
                ("before", "after", "at", "pred_before", "pred_after", "pred_at")}


def sparkline(values, width: int = 72) -> str:
    """A one-line bar chart (▁..█) of ``values``, each column the max of its bucket.

    Example::

        >>> sparkline([0, 1, 2, 3, 4, 5, 6, 7, 8], width=9)
        '▁▁▂▃▄▅▆▇█'
    """
    n = len(values)
    if n == 0:
        return ""
    top = max(values)
    step = max(1, -(-n // max(1, width)))
    out = []
    for k in range(0, n, step):
        v = max(values[k:k + step])
        out.append(_BARS[0] if top <= 0 or v <= 0 else _BARS[min(7, (v * 8 - 1) // top)])
    return "".join(out)


@attrs.frozen(slots=True, kw_only=True)
class PressureReport:
    """Register pressure of one kernel; see the module docstring for the JSON keys.

    Example::

        >>> from ptxforge.ptx import ir
        >>> r = analyze_pressure(ir.Kernel("k", body=(ir.Instruction("ret"),)))
        >>> r.peak.units, r.to_dict()["schema"]
        (0, 'ptxforge.pressure/1')
    """

    kernel: str
    n_instructions: int
    n_blocks: int
    registers_by_type: tuple[tuple[str, int], ...]
    registers_by_class: tuple[tuple[str, int], ...]
    declared: tuple[tuple[str, int], ...]
    peak: Peak
    pred_peak: Peak
    class_peaks: tuple[tuple[str, int, int], ...]  # (class, values, first index)
    timeline: Timeline
    blocks: tuple[BlockPressure, ...]
    loops: tuple[LoopPressure, ...]
    graph: Optional[dict] = None

    @property
    def registers(self) -> int:
        """The estimate: peak live general registers in 32-bit units (``peak.units``)."""
        return self.peak.units

    @property
    def predicates(self) -> int:
        """Peak live predicates (``pred_peak.units``)."""
        return self.pred_peak.units

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "kernel": self.kernel,
            "n_instructions": self.n_instructions,
            "n_blocks": self.n_blocks,
            "n_loops": len(self.loops),
            "registers": {
                "total": sum(n for _, n in self.registers_by_type),
                "by_type": dict(self.registers_by_type),
                "by_class": dict(self.registers_by_class),
                "declared": dict(self.declared),
            },
            "peak": self.peak.to_dict(),
            "pred_peak": self.pred_peak.to_dict(),
            "class_peaks": {c: {"values": v, "units": v * _UNITS[c], "index": i}
                            for c, v, i in self.class_peaks},
            "timeline": self.timeline.to_dict(),
            "blocks": [b.to_dict() for b in self.blocks],
            "loops": [lp.to_dict() for lp in self.loops],
            "graph": self.graph,
        }

    def to_json(self, indent: Optional[int] = None) -> str:
        """The :meth:`to_dict` form as JSON text."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def sparkline(self, width: int = 72) -> str:
        """The ``at`` timeline as a sparkline of at most ``width`` characters."""
        return sparkline(self.timeline.at, width)

    def to_text(self, top: int = 20, width: int = 72) -> str:
        """A readable report: summary, sparkline, the values at the peak, loops, blocks."""
        from .pressure_text import render_text

        return render_text(self, top=top, width=width)

    def __str__(self) -> str:
        return self.to_text()


def _source_groups(values: tuple[LiveValue, ...]) -> tuple[SourceGroup, ...]:
    """Group values by (file, line, function) of their source location."""
    groups: dict[tuple, list[LiveValue]] = {}
    for v in values:
        key = (v.loc or "<unknown>", v.function)
        groups.setdefault(key, []).append(v)
    out = []
    for (loc, function), vs in groups.items():
        file, line = None, None
        if loc != "<unknown>" and ":" in loc:
            file, _, ln = loc.rpartition(":")
            line = int(ln) if ln.isdigit() else None
        out.append(SourceGroup(loc=loc, file=file, line=line, function=function, count=len(vs),
                               units=sum(v.units for v in vs),
                               names=tuple(sorted(v.name for v in vs))))
    out.sort(key=lambda g: (-g.units, -g.count, g.file or "\uffff", g.line or 0, g.function or ""))
    return tuple(out)


class _Builder:
    """Turns a Liveness into report pieces (shared state for values and lengths)."""

    def __init__(self, lv: Liveness) -> None:
        self.lv = lv
        self.insts = lv.cfg.instructions
        self.text_cache: dict[int, str] = {}

    def text(self, i: int) -> str:
        t = self.text_cache.get(i)
        if t is None:
            t = self.text_cache[i] = format_instruction(self.insts[i])
        return t

    def value(self, r: int, length: int) -> LiveValue:
        lv = self.lv
        reg = lv.registers[r]
        fd = lv.first_def[r]
        loc = reg.loc
        if loc is None and fd >= 0:
            loc = self.insts[fd].loc
        rc = reg.reg_class
        lu = lv.last_use[r]
        return LiveValue(
            name=reg.name, type=reg.type.name, reg_class=rc.name, bits=rc.bits, units=rc.units,
            def_index=fd if fd >= 0 else None, def_text=self.text(fd) if fd >= 0 else None,
            def_count=lv.def_count[r], last_use=lu if lu >= 0 else None, live_length=length,
            loc=_loc_str(loc), function=None if loc is None else loc.function,
            inlined_at=None if loc is None else _loc_str(loc.inlined_at))

    def values(self, regs, lengths: dict[int, int]) -> tuple[LiveValue, ...]:
        vals = [self.value(r, lengths[r]) for r in regs]
        vals.sort(key=lambda v: (-v.live_length, v.def_index if v.def_index is not None else 1 << 60, v.name))
        return tuple(vals)


def _indices_of(series, value: int) -> tuple[int, ...]:
    """Every index where ``series`` (counts, never negative) reaches its maximum ``value``."""
    if not value:  # the maximum is 0: everything is 0
        return tuple(range(len(series)))
    return tuple(compress(count(), map(eq, series, repeat(value))))


def _first_max(series, lo: int, hi: int) -> tuple[int, Optional[int]]:
    """(max, first index) of ``series[lo:hi]``; (0, None) when empty."""
    if hi <= lo:
        return 0, None
    chunk = series if lo == 0 and hi == len(series) else series[lo:hi]
    m = max(chunk)
    return m, lo + chunk.index(m)


def analyze_pressure(kernel: ir.Kernel, *, liveness: Optional[Liveness] = None, loop_values: int = 10,
                     graph: bool = False, max_edges: Optional[int] = None) -> PressureReport:
    """Analyse one kernel's register pressure.

    ``loop_values`` caps the values listed per loop (the global peak lists all of them).
    With ``graph=True`` the interference graph is built within ``max_edges`` and its scope,
    colours and largest cliques are added under ``graph``.

    Example::

        >>> from ptxforge.ptx import ir, types
        >>> a = ir.Register("%fd1", types.f64)
        >>> k = ir.Kernel("k", body=(ir.Instruction("mov.f64", (a, ir.Immediate(0.0, types.f64)), 1),
        ...                          ir.Instruction("st.global.f64", (ir.Address(ir.Symbol("g")), a))))
        >>> analyze_pressure(k).peak.units
        2
    """
    if not isinstance(kernel, ir.Kernel) or kernel.body is None:
        raise PtxforgeError(_not_a_kernel(kernel))
    with gc_paused():
        return _analyze(kernel, analyze_liveness(kernel) if liveness is None else liveness,
                        loop_values, graph, max_edges)


def _analyze(kernel: ir.Kernel, lv: Liveness, loop_values: int, graph: bool,
             max_edges: Optional[int]) -> PressureReport:
    """:func:`analyze_pressure` once the liveness is known."""
    cfg = lv.cfg
    n = lv.n_instructions
    bld = _Builder(lv)
    gen_before, gen_after, gen_at, p_before, p_after, p_at = lv._timelines()
    timeline = Timeline(before=gen_before, after=gen_after, at=gen_at, pred_before=p_before,
                        pred_after=p_after, pred_at=p_at)

    peak_units, peak_idx = _first_max(gen_at, 0, n)
    peak_all = _indices_of(gen_at, peak_units)
    ppeak, ppeak_idx = _first_max(p_at, 0, n)
    ppeak_all = _indices_of(p_at, ppeak)

    blocks = _block_pressures(cfg, timeline, (peak_units, peak_idx, ppeak))

    loop_info = []
    for lp in cfg.loops:
        best = 0
        where: Optional[int] = None
        for bidx in lp.blocks:
            blk = cfg.blocks[bidx]
            m, i = _first_max(gen_at, blk.start, blk.end)
            if i is not None and (where is None or m > best or (m == best and i < where)):
                best, where = m, i
        loop_info.append((lp, best, where))

    want = set()
    if peak_idx is not None:
        want.add(peak_idx)
    if ppeak_idx is not None:
        want.add(ppeak_idx)
    want.update(w for _, _, w in loop_info if w is not None)
    sets = lv.live_sets(want) if want else {}
    pred_pos = CLASS_NAMES.index("pred")
    general = {i: tuple(r for r in s if lv.reg_class[r] != pred_pos) for i, s in sets.items()}
    preds = {i: tuple(r for r in s if lv.reg_class[r] == pred_pos) for i, s in sets.items()}
    peak_regs = general.get(peak_idx, ()) if peak_idx is not None else ()
    ppeak_regs = preds.get(ppeak_idx, ()) if ppeak_idx is not None else ()
    need = set(peak_regs) | set(ppeak_regs)
    for _, _, w in loop_info:
        if w is not None:
            need.update(general[w])
    lengths = lv.live_lengths(need)

    def make_peak(units, idx, all_idx, regs) -> Peak:
        vals = bld.values(regs, lengths)
        by_class: dict[str, int] = {}
        for v in vals:
            by_class[v.reg_class] = by_class.get(v.reg_class, 0) + 1
        ordered = tuple((c, by_class[c]) for c in CLASS_NAMES if c in by_class)
        text = bld.text(idx) if idx is not None else None
        return Peak(units=units, index=idx, indices=all_idx, instruction=text, by_class=ordered,
                    values=vals, by_source=_source_groups(vals))

    peak = make_peak(peak_units, peak_idx, peak_all, peak_regs)
    pred_peak = make_peak(ppeak, ppeak_idx, ppeak_all, ppeak_regs)

    loops = []
    for lp, best, where in loop_info:
        header = cfg.blocks[lp.header]
        live_in = gen_before[header.start]
        entering = lv.live_in(lp.header)
        defined = lv.defined_in_blocks(lp.blocks, entering)
        carried = sum(lv.class_of(r).units for r in entering
                      if r in defined and lv.reg_class[r] != pred_pos)
        vals = bld.values(general[where], lengths) if where is not None else ()
        loops.append(LoopPressure(header=lp.header, name=header.name, blocks=lp.blocks,
                                  depth=lp.depth, parent=lp.parent, live_in=live_in,
                                  carried=carried,
                                  peak=best, peak_index=where, values_total=len(vals),
                                  values=vals[:loop_values]))

    by_type, by_class, declared = _register_counts(kernel, lv)
    graph_info = None
    if graph:
        graph_info = _graph_summary(lv, max_edges)

    class_peaks = lv.class_peaks()
    return PressureReport(
        kernel=kernel.name,
        n_instructions=n,
        n_blocks=len(cfg.blocks),
        registers_by_type=by_type,
        registers_by_class=by_class,
        declared=declared,
        peak=peak,
        pred_peak=pred_peak,
        class_peaks=tuple((c, v, i) for c, (v, i) in class_peaks.items()),
        timeline=timeline,
        blocks=tuple(blocks),
        loops=tuple(loops),
        graph=graph_info,
    )


def _block_pressures(cfg, timeline: Timeline, whole: tuple) -> list:
    """Per block: its :class:`BlockPressure` (``whole``: the kernel's general peak, its first
    instruction and the predicate peak, reused for a block that is the whole kernel)."""
    gen_at, p_at = timeline.at, timeline.pred_at
    gen_before, gen_after = timeline.before, timeline.after
    n = len(gen_at)
    blocks = []
    for b in cfg.blocks:
        if b.start == 0 and b.end == n:  # the whole kernel: the peaks above
            bp, bi, bpp = whole
        else:
            bp, bi = _first_max(gen_at, b.start, b.end)
            bpp = max(p_at[b.start:b.end])
        blocks.append(BlockPressure(
            index=b.index, name=b.name, start=b.start, end=b.end, live_in=gen_before[b.start],
            live_out=gen_after[b.end - 1], peak=bp, peak_index=bi, pred_peak=bpp))
    return blocks


def _register_counts(kernel: ir.Kernel, lv: Liveness) -> tuple[tuple, tuple, tuple]:
    """The kernel's registers per type and per class (in class order) and its ``.reg``
    declarations per type (sorted)."""
    by_type = lv._type_counts()
    if by_type is None:
        by_type = Counter(map(_TYPE_NAME, lv.registers))
    by_class = {CLASS_NAMES[c]: k for c in range(len(CLASS_NAMES)) if (k := lv.reg_class.count(c))}
    type_order = sorted(by_type, key=lambda t: (CLASS_NAMES.index(_class_of_type(t)), t))
    declared: dict[str, int] = {}
    for d in kernel.reg_decls:
        declared[d.type] = declared.get(d.type, 0) + (d.count if d.count is not None else 1)
    return (tuple((t, by_type[t]) for t in type_order),
            tuple((c, by_class[c]) for c in CLASS_NAMES if c in by_class),
            tuple(sorted(declared.items())))


def _class_of_type(name: str) -> str:
    """Register class name of a PTX type name."""
    from ptxforge.ptx.types import PtxType

    return PtxType.get(name).reg_class.name


def _graph_summary(lv: Liveness, max_edges: Optional[int]) -> dict:
    """Build the interference graph within budget; describe it with colours and cliques."""
    from .interference import DEFAULT_MAX_EDGES, build_interference, greedy_coloring, max_clique

    ig = build_interference(lv, max_edges=DEFAULT_MAX_EDGES if max_edges is None else max_edges)
    coloring = greedy_coloring(ig)
    info = ig.to_dict()
    for entry in info["classes"]:
        c = entry["reg_class"]
        entry["colors"] = coloring.count(c)
        q = max_clique(ig, c)
        entry["max_clique"] = q.size
        entry["max_clique_exact"] = q.exact
    return info


def _not_a_kernel(value) -> str:
    """The message for analysing something that is not a kernel with a body."""
    if isinstance(value, ir.Module):
        names = ", ".join(k.name for k in value.kernels if k.body is not None) or "none"
        return ("analyze_pressure: expected an ir.Kernel, got an ir.Module; pick one with "
                f"module.kernel(name) (it has: {names}) or use pressure_by_kernel(module)")
    if isinstance(value, ir.Kernel):
        return f"analyze_pressure: {value.name} is a prototype without a body"
    hint = "; build() it first" if hasattr(value, "build") else ""
    return f"analyze_pressure: expected an ir.Kernel, got {type(value).__name__}{hint}"


def pressure_by_kernel(module: ir.Module, **kwargs) -> dict[str, PressureReport]:
    """Reports for every function with a body in ``module``, in module order.

    Example::

        >>> from ptxforge.ptx import ir
        >>> m = ir.Module("8.0", "sm_80", kernels=(ir.Kernel("a", body=(ir.Instruction("ret"),)),))
        >>> list(pressure_by_kernel(m))
        ['a']
    """
    return {k.name: analyze_pressure(k, **kwargs) for k in module.kernels if k.body is not None}
