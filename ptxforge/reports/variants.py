"""Two variants of a kernel side by side: the seeds' "main vs branch" tables.

:func:`compare_variants` pairs the kernels of two :class:`~ptxforge.reports.analyze.ModuleAnalysis`
results (by name; two single-kernel modules pair their only kernels; ``pairs`` names pairs of
differently named kernels) and tabulates registers,
spills, stack, occupancy, the liveness estimate, virtual registers per type and instruction-mix
counts with a Delta and a relative change (``+281%``, ``-39%``, ``same``).

JSON form (``"schema": "ptxforge.compare/1"``)::

    schema, a: {file, arch, arch_source, block_size, dynamic_shared, compiled, backend, tool,
       tool_version, mode}, b: {…},
    kernels: [{name, a: KERNEL, b: KERNEL, rows: [ROW], opcodes: [ROW]}],
    only_a: [names], only_b: [names]
    ROW = {group, metric, a, b, delta, change}   change: (b - a) / a, null when a is 0 or missing

where KERNEL is the kernel object of ``ptxforge.analyze/1``.

Example::

    >>> from ptxforge.reports.analyze import analyze_ptx
    >>> src = '''.version 8.0
    ... .target sm_80
    ... .address_size 64
    ... .visible .entry k()
    ... {
    ...     .reg .b32 %r<3>;
    ...     mov.u32 %r1, %tid.x;
    ...     %s
    ...     ret;
    ... }'''
    >>> a = analyze_ptx(src.replace("%s", ""), "a.ptx", compile=False)
    >>> b = analyze_ptx(src.replace("%s", "add.s32 %r2, %r1, 1;"), "b.ptx", compile=False)
    >>> row = compare_variants(a, b).pairs[0].row("instructions")
    >>> row.a, row.b, row.delta
    (2, 3, 1)
"""

from __future__ import annotations

import json
from typing import Optional, Sequence

import attrs

from ptxforge._text import short_path, wrap
from ptxforge.errors import PtxforgeError
from ptxforge.ptx.demangle import display_name

from .analyze import KernelAnalysis, ModuleAnalysis
from .analyze_text import (
    KEY_ROWS,
    SELP_ROWS,
    change,
    compiler_text,
    key_count,
    percent,
    selp_value,
    table,
)

__all__ = ["SCHEMA", "DeltaRow", "KernelPair", "VariantComparison", "compare_variants"]

SCHEMA = "ptxforge.compare/1"


@attrs.frozen(slots=True, kw_only=True)
class DeltaRow:
    """One metric of both variants: ``a``, ``b`` (None: not available), their difference."""

    group: str
    metric: str
    a: Optional[float]
    b: Optional[float]
    percent: bool = False  # values are fractions shown as percentages (occupancy)

    @property
    def delta(self) -> Optional[float]:
        if self.a is None or self.b is None:
            return None
        d = self.b - self.a
        return round(d, 6) if isinstance(d, float) else d

    @property
    def change(self) -> Optional[float]:
        """Relative change ``(b - a) / a``; None when ``a`` is 0 or a side is missing."""
        if self.a is None or self.b is None or self.a == 0:
            return None
        return round((self.b - self.a) / self.a, 6)

    def to_dict(self) -> dict:
        return {"group": self.group, "metric": self.metric, "a": self.a, "b": self.b,
                "delta": self.delta, "change": self.change}

    def cells(self) -> tuple:
        """Text cells: metric, A, B, Delta, change."""
        if self.percent:
            fa, fb = percent(self.a), percent(self.b)
            d = self.delta
            fd = "-" if d is None else ("0" if d == 0 else f"{d * 100:+.1f} pp")
        else:
            fa = "-" if self.a is None else f"{self.a:,}"
            fb = "-" if self.b is None else f"{self.b:,}"
            d = self.delta
            fd = "-" if d is None else ("0" if d == 0 else f"{d:+,}")
        return (self.metric, fa, fb, fd, change(self.a, self.b))


@attrs.frozen(slots=True, kw_only=True)
class KernelPair:
    """A kernel in both variants and its rows (resources, registers, mix) and opcode rows."""

    a: KernelAnalysis
    b: KernelAnalysis
    rows: tuple
    opcodes: tuple

    @property
    def name(self) -> str:
        return self.a.name if self.a.name == self.b.name else f"{self.a.name} / {self.b.name}"

    def row(self, metric: str) -> DeltaRow:
        """The row called ``metric`` (KeyError otherwise)."""
        for r in self.rows + self.opcodes:
            if r.metric == metric:
                return r
        raise KeyError(metric)

    def to_dict(self, top: int = 10) -> dict:
        return {"name": self.name, "a": self.a.to_dict(top), "b": self.b.to_dict(top),
                "rows": [r.to_dict() for r in self.rows],
                "opcodes": [r.to_dict() for r in self.opcodes],
                "warnings": list(self.warnings())}

    def warnings(self) -> tuple:
        """A sentence when the liveness estimate and ptxas's count move in opposite
        directions from A to B (the estimate cannot be trusted for this change)."""
        sa, sb = self.a.stats, self.b.stats
        if sa is None or sb is None:
            return ()
        de = self.b.estimate.registers - self.a.estimate.registers
        dp = sb.registers - sa.registers
        if de * dp >= 0:
            return ()
        return (f"the estimate and ptxas move in opposite directions: the estimate "
                f"{'rises' if de > 0 else 'falls'} by {abs(de)} ({self.a.estimate.registers} "
                f"-> {self.b.estimate.registers}) while ptxas's count "
                f"{'rises' if dp > 0 else 'falls'} by {abs(dp)} ({sa.registers} -> "
                f"{sb.registers}): ptxas reordered or rematerialised differently, so judge "
                "this change by ptxas (or `ptxforge sass`), not by the estimate",)


def _meta(m: ModuleAnalysis) -> dict:
    return {"file": m.file, "arch": m.arch, "arch_source": m.arch_source,
            "block_size": m.block_size, "dynamic_shared": m.dynamic_shared,
            "compiled": m.compiled, "backend": m.backend, "tool": m.tool,
            "tool_version": m.tool_version, "mode": m.mode}


@attrs.frozen(slots=True, kw_only=True)
class VariantComparison:
    """Kernel pairs of two module analyses, and the kernels found in only one of them."""

    a: ModuleAnalysis
    b: ModuleAnalysis
    pairs: tuple
    only_a: tuple
    only_b: tuple

    def to_dict(self, top: int = 10) -> dict:
        """JSON-ready dict (see the module docstring)."""
        return {"schema": SCHEMA, "a": _meta(self.a), "b": _meta(self.b),
                "kernels": [p.to_dict(top) for p in self.pairs],
                "only_a": list(self.only_a), "only_b": list(self.only_b)}

    def to_json(self, top: int = 10, indent: Optional[int] = 2) -> str:
        return json.dumps(self.to_dict(top), indent=indent, ensure_ascii=False)

    def to_text(self, top: int = 10) -> str:
        """One table per kernel pair: metric, A, B, Delta, change."""
        a, b = self.a, self.b
        arch = a.arch if a.arch == b.arch else f"A {a.arch}, B {b.arch} (pass --arch for one)"
        lines = [f"A: {short_path(a.file, 96)}", f"B: {short_path(b.file, 96)}",
                 *wrap(f"{arch}, {a.block_size} threads/block"
                       + (f", {a.dynamic_shared:,} bytes dynamic shared" if a.dynamic_shared
                          else "")
                       + "; " + compiler_text(a))]
        for p in self.pairs:
            lines.append("")
            lines += wrap(f"== {_pair_title(p)} ==", subsequent="   ")
            if p.a.block_size != a.block_size or p.b.block_size != a.block_size:
                lines.append(f"threads/block: A {p.a.block_size} ({p.a.block_source}), "
                             f"B {p.b.block_size} ({p.b.block_source})")
            body, group = [], None
            for r in p.rows:
                if r.group != group and group is not None:
                    body.append(("", "", "", "", ""))
                group = r.group
                body.append(r.cells())
            lines += table(("", "A", "B", "Delta", "change"), body)
            lines += [w for text in p.warnings() for w in wrap("warning: " + text, 100)]
            changed = [r for r in p.opcodes if r.delta]
            shown = changed if top <= 0 else changed[:top]
            if shown:
                lines.append("")
                lines.append(f"opcodes that changed most ({len(shown)} of {len(changed)}):")
                lines += table(("opcode", "A", "B", "Delta", "change"), [r.cells() for r in shown])
        for side, names in (("A", self.only_a), ("B", self.only_b)):
            if names:
                lines.append("")
                lines += wrap(f"only in {side}: {', '.join(names)}")
        return "\n".join(lines) + "\n"


def _pair_title(p: KernelPair) -> str:
    x, y = display_name(p.a.name), display_name(p.b.name)
    return x if x == y else f"{x} / {y}"


def _occ(k: KernelAnalysis, attr: str):
    """An occupancy figure of ``k``; None when its occupancy is unknown (no table)."""
    if k.occupancy is None:
        return None
    v = getattr(k.occupancy, attr)
    return round(v, 6) if isinstance(v, float) else v


def _rows(a: KernelAnalysis, b: KernelAnalysis) -> tuple:
    """The comparison rows of one kernel pair."""
    sa, sb = a.stats, b.stats
    compiled = sa is not None and sb is not None

    def stat(s, attr):
        return getattr(s, attr) if s is not None else None

    rows = [
        DeltaRow(group="ptxas", metric="registers (ptxas)", a=stat(sa, "registers"),
                 b=stat(sb, "registers")),
        DeltaRow(group="ptxas", metric="spill stores (bytes)", a=stat(sa, "spill_stores"),
                 b=stat(sb, "spill_stores")),
        DeltaRow(group="ptxas", metric="spill loads (bytes)", a=stat(sa, "spill_loads"),
                 b=stat(sb, "spill_loads")),
        DeltaRow(group="ptxas", metric="stack (bytes)", a=stat(sa, "stack_frame"),
                 b=stat(sb, "stack_frame")),
        DeltaRow(group="occupancy", metric="blocks/SM" + ("" if compiled else " (estimate)"),
                 a=_occ(a, "active_blocks"), b=_occ(b, "active_blocks")),
        DeltaRow(group="occupancy", metric="occupancy" + ("" if compiled else " (estimate)"),
                 a=_occ(a, "occupancy"), b=_occ(b, "occupancy"), percent=True),
        DeltaRow(group="estimate", metric="registers (estimate)", a=a.pressure.peak.units,
                 b=b.pressure.peak.units),
        DeltaRow(group="estimate", metric="predicates (estimate)", a=a.pressure.pred_peak.units,
                 b=b.pressure.pred_peak.units),
        *_prediction_rows(a, b),
        DeltaRow(group="mix", metric="instructions", a=a.mix.instructions, b=b.mix.instructions),
    ]
    types = sorted(set(a.mix.vregs) | set(b.mix.vregs),
                   key=lambda t: (-max(a.mix.vregs.get(t, 0), b.mix.vregs.get(t, 0)), t))
    rows += [DeltaRow(group="vregs", metric=f"vregs .{t}", a=a.mix.vregs.get(t, 0),
                      b=b.mix.vregs.get(t, 0))
             for t in types]
    rows += [DeltaRow(group="mix", metric=label, a=key_count(a.mix, pre), b=key_count(b.mix, pre))
             for label, pre in KEY_ROWS]
    if a.mix.selp.total or b.mix.selp.total:
        rows += [DeltaRow(group="selp", metric=f"selp: {label.strip()}",
                          a=selp_value(a.mix.selp, attr), b=selp_value(b.mix.selp, attr))
                 for label, attr in SELP_ROWS]
    return tuple(rows)


def _prediction_rows(a: KernelAnalysis, b: KernelAnalysis) -> list:
    """The predicted ptxas count of both and its components (docs/prediction.md)."""
    pa, pb = a.prediction, b.prediction
    if pa is None and pb is None:
        return []

    def part(p, name):
        return None if p is None else next(
            (c.registers for c in p.components if c.name == name), 0)
    names = list(dict.fromkeys(c.name for p in (pa, pb) if p is not None for c in p.components))
    return [DeltaRow(group="prediction", metric="registers (predicted)",
                     a=None if pa is None else pa.registers,
                     b=None if pb is None else pb.registers),
            *(DeltaRow(group="prediction", metric=f"  {n}", a=part(pa, n), b=part(pb, n))
              for n in names)]


def _opcode_rows(a: KernelAnalysis, b: KernelAnalysis) -> tuple:
    """Every opcode of either variant, largest absolute change first."""
    oa, ob = a.mix.by_opcode, b.mix.by_opcode
    ops = sorted(set(oa) | set(ob), key=lambda o: (-abs(ob.get(o, 0) - oa.get(o, 0)),
                                                   -max(oa.get(o, 0), ob.get(o, 0)), o))
    return tuple(DeltaRow(group="opcode", metric=o, a=oa.get(o, 0), b=ob.get(o, 0)) for o in ops)


def _names(m: ModuleAnalysis) -> str:
    return ", ".join(k.name for k in m.kernels) or "none"


def _explicit(a: ModuleAnalysis, b: ModuleAnalysis, pairs) -> list:
    """The kernel pairs named in ``pairs`` ((name in a, name in b) each)."""
    matched = []
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise PtxforgeError(f"compare: a pair is (kernel of A, kernel of B), got {pair!r}")
        x, y = pair
        by_a = {k.name: k for k in a.kernels}
        by_b = {k.name: k for k in b.kernels}
        for name, side, m in ((x, by_a, a), (y, by_b, b)):
            if name not in side:
                raise PtxforgeError(f"compare: no kernel named {name!r} in {m.file}; it has: "
                                    f"{_names(m)}")
        matched.append((by_a[x], by_b[y]))
    return matched


def compare_variants(a: ModuleAnalysis, b: ModuleAnalysis, *,
                     pairs: Optional[Sequence[tuple]] = None) -> VariantComparison:
    """Pair the kernels of ``a`` and ``b`` and tabulate their differences.

    ``pairs`` names the pairs (``[("Gu", "u_horizontal")]``: kernel of ``a``, kernel of
    ``b``) when the names differ; by default kernels pair by name, and when both analyses
    hold exactly one kernel, those two pair whatever their names.  Raises
    :class:`~ptxforge.errors.PtxforgeError` when nothing pairs (listing each side's kernels)
    or a named kernel is missing.
    """
    if pairs:
        matched = _explicit(a, b, pairs)
    elif len(a.kernels) == 1 and len(b.kernels) == 1:
        matched = [(a.kernels[0], b.kernels[0])]
    else:
        names_b = {k.name: k for k in b.kernels}
        matched = [(k, names_b[k.name]) for k in a.kernels if k.name in names_b]
    if not matched:
        raise PtxforgeError(
            f"compare: no kernel names in common; {a.file} has {_names(a)}; {b.file} has "
            f"{_names(b)}; pair differently named kernels with --pair A=B (or --kernel-a A "
            "--kernel-b B; library: compare_variants(a, b, pairs=[(A, B)]))")
    used_a = {id(x) for x, _ in matched}
    used_b = {id(y) for _, y in matched}
    pairs_out = tuple(KernelPair(a=x, b=y, rows=_rows(x, y), opcodes=_opcode_rows(x, y))
                      for x, y in matched)
    return VariantComparison(a=a, b=b, pairs=pairs_out,
                             only_a=tuple(k.name for k in a.kernels if id(k) not in used_a),
                             only_b=tuple(k.name for k in b.kernels if id(k) not in used_b))
