"""Build-to-build deltas: the same kernels in two builds, matched by name, figure by figure.

:func:`diff_figures` pairs the :class:`~ptxforge.reports.figures.KernelFigures` of an old
and a new build by kernel name (a name that occurs more than once on a side is told apart by
its block size, then by its file) and compares registers, spill stores and loads, stack,
occupancy, the liveness estimate and the prediction (when the analysis has one).
:class:`DiffReport` prints only the kernels that changed, were added or removed, unless
``all``; :meth:`DiffReport.to_markdown` gives a table fit for a pull-request comment.

Example::

    >>> from ptxforge.reports.figures import KernelFigures
    >>> def k(regs):
    ...     return KernelFigures(file="a.ptx", name="k", arch="sm_80", registers=regs,
    ...                          estimate=regs, spill_stores=0, spill_loads=0, stack=0,
    ...                          stack_known=True, block_size=256, block_source="default",
    ...                          blocks_per_sm=4, occupancy=0.5)
    >>> d = diff_figures([k(40)], [k(48)])
    >>> d.rows[0].status, d.rows[0].changes[0]
    ('changed', ('registers', 40, 48))
    >>> print(d.to_text().splitlines()[1:])
    ['  kernel     registers      estimate', '  k       40 → 48 (+8)  40 → 48 (+8)']

A figure one build does not know (a cubin has no spill bytes and no estimate) is no change:
its cell says ``n/a``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Optional

import attrs

from ptxforge._text import WIDTH, short_path, table, wrap
from ptxforge.ptx.demangle import display_name

from .figures import KernelFigures
from .names import short_labels

__all__ = ["FIELDS", "DiffReport", "KernelDelta", "diff_figures", "match_keys"]

#: The figures compared, in column order: (attribute, column title).
FIELDS = (("registers", "registers"), ("spill_stores", "spill st"),
          ("spill_loads", "spill ld"), ("stack", "stack"), ("occupancy", "occupancy"),
          ("estimate", "estimate"), ("prediction", "prediction"))


def match_keys(figures: Sequence) -> list:
    """A key per kernel: its name, unless the name occurs more than once, then ``name
    @BLOCK`` (block size), then ``FILE:name``."""
    names = [f.name for f in figures]
    out = []
    for f in figures:
        if names.count(f.name) == 1:
            out.append(f.name)
            continue
        same_block = sum(1 for g in figures if g.name == f.name and g.block_size == f.block_size)
        out.append(f"{f.name} @{f.block_size}" if same_block == 1 else f"{f.file}:{f.name}")
    return out


@attrs.frozen(slots=True, kw_only=True)
class KernelDelta:
    """One kernel in both builds: ``status`` ``"changed"``, ``"same"``, ``"added"`` or
    ``"removed"``; ``changes`` the ``(field, old, new)`` that differ."""

    key: str
    old: Optional[KernelFigures]
    new: Optional[KernelFigures]
    status: str
    changes: tuple = ()

    def to_dict(self) -> dict:
        """JSON-ready dict: both builds' figures and the deltas."""
        deltas = {}
        for field, a, b in self.changes:
            deltas[field] = (None if a is None or b is None
                             else round(b - a, 6) if isinstance(a, float) else b - a)
        return {"kernel": self.key, "status": self.status,
                "old": None if self.old is None else self.old.to_dict(),
                "new": None if self.new is None else self.new.to_dict(), "deltas": deltas}


def _fmt(field: str, v) -> str:
    if v is None:
        return "-"
    return f"{100 * v:.1f}%" if field == "occupancy" else str(v)


#: The text and Markdown columns: (title, fields shown in one cell, ``/`` between them).
_COLUMNS = (("registers", ("registers",)), ("spill st/ld", ("spill_stores", "spill_loads")),
            ("stack", ("stack",)), ("occupancy", ("occupancy",)), ("estimate", ("estimate",)),
            ("prediction", ("prediction",)))


#: The fields whose cell adds ``(+N)`` to ``old → new``.
_DELTAS = ("registers", "stack", "occupancy", "estimate", "prediction")


def _delta(field: str, a, b) -> str:
    if a is None or b is None:
        return ""
    d = b - a
    if field == "occupancy":
        return f" ({100 * d:+.1f} pp)"
    return f" ({d:+d})"


def _cell(d: KernelDelta, fields: Sequence, deltas: bool = True) -> str:
    """One column's cell: the value, ``old → new (delta)`` when it changed, ``n/a`` when
    only one build knows it."""
    a = [None if d.old is None else getattr(d.old, f) for f in fields]
    b = [None if d.new is None else getattr(d.new, f) for f in fields]
    one = "/".join

    def fmt(values):
        return one(_fmt(f, v) for f, v in zip(fields, values))
    if d.old is None:
        return fmt(b)
    if d.new is None:
        return fmt(a)
    if any((x is None) != (y is None) for x, y in zip(a, b)):
        return "n/a"
    if a == b:
        return fmt(a)
    delta = _delta(fields[0], a[0], b[0]) if deltas and fields[0] in _DELTAS else ""
    return f"{fmt(a)} → {fmt(b)}{delta}"


@attrs.frozen(slots=True, kw_only=True)
class DiffReport:
    """Every kernel of both builds (:class:`KernelDelta`), in the new build's order, then
    the removed ones."""

    old: str
    new: str
    rows: tuple
    no_kernel: tuple = ()        # files of either build that hold no kernel (globals only)

    @property
    def changed(self) -> tuple:
        """The rows that are not ``"same"``."""
        return tuple(r for r in self.rows if r.status != "same")

    def _shown(self, all: bool) -> tuple:
        return self.rows if all else self.changed

    def _columns(self, rows, all: bool) -> list:
        """The columns worth showing: those any shown kernel has a value for, and (unless
        ``all``) a change in."""
        changed = {f for r in rows for f, _, _ in r.changes}
        return [(t, fs) for t, fs in _COLUMNS
                if any(getattr(x, f) is not None for r in rows for x in (r.old, r.new) if x
                       for f in fs)
                and (all or changed & set(fs) or any(r.status != "changed" for r in rows)
                     and not changed)]

    def to_dict(self, all: bool = False) -> dict:
        """JSON-ready dict (``schema`` ``ptxforge.diff/1``)."""
        return {"schema": "ptxforge.diff/1", "old": self.old, "new": self.new,
                "changed": len(self.changed), "kernels": len(self.rows),
                "rows": [r.to_dict() for r in self._shown(all)],
                "files_without_kernels": list(self.no_kernel)}

    def to_json(self, all: bool = False) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(all), indent=2, ensure_ascii=False) + "\n"

    def _no_kernel_note(self, width: int = 60) -> list:
        """``no kernel in N files (globals only): …`` (nothing when every file has one)."""
        if not self.no_kernel:
            return []
        n = len(self.no_kernel)
        return wrap(f"no kernel in {n} file{'s' if n != 1 else ''} (globals only): "
                    + ", ".join(short_path(p, width) for p in self.no_kernel))

    def _summary(self) -> str:
        n, c = len(self.rows), len(self.changed)
        return (f"{c} of {n} kernel{'s' if n != 1 else ''} changed" if c else
                f"no change in {n} kernel{'s' if n != 1 else ''}")

    def to_text(self, all: bool = False) -> str:
        """An aligned table of the changed kernels (every kernel with ``all``)."""
        rows = self._shown(all)
        paths = f"{short_path(self.old, 44)} → {short_path(self.new, 44)}"
        # the summary is never split: beside the paths when it fits, else on its own line
        one = f"{paths}: {self._summary()}"
        head = [one] if len(one) <= WIDTH else [f"{paths}:", f"  {self._summary()}"]
        if not rows:
            return "\n".join(head + self._no_kernel_note()) + "\n"
        cols = self._columns(rows, all)
        short = {"estimate": "est.", "prediction": "pred."} if len(cols) > 5 else {}
        header = ("kernel", *(short.get(t, t) for t, _ in cols))
        names = [display_name(r.key) for r in rows]
        # the status is in the cells (old → new) and after added and removed kernels' names
        tags = ["" if r.status in ("changed", "same") else f" ({r.status})" for r in rows]
        for deltas in (True, False):   # without the (delta)s when names would get too short
            body = [tuple(_cell(r, fs, deltas) for _, fs in cols) for r in rows]
            rest = max(len(x) for x in table(header, [("", *b) for b in body])) - len("kernel")
            if rest + min(24, max(map(len, names))) <= WIDTH:
                break
        room = max(16, WIDTH - rest - max(map(len, tags)))
        labels = [n + t for n, t in zip(short_labels(names, room), tags)]
        return "\n".join(head + table(header, [(n, *b) for n, b in zip(labels, body)])
                         + self._no_kernel_note()) + "\n"

    def to_markdown(self, all: bool = False) -> str:
        """A GitHub-flavoured Markdown table for a pull-request comment."""
        rows = self._shown(all)
        lines = [f"**ptxforge diff**: {self._summary()}", ""]
        if self.no_kernel:
            lines[1:1] = ["", " ".join(self._no_kernel_note(1000))]
        if not rows:
            return "\n".join(lines)
        cols = self._columns(rows, all)
        lines.append("| kernel | status | " + " | ".join(t for t, _ in cols) + " |")
        lines.append("|---|---|" + "---:|" * len(cols))
        for r in rows:
            cells = [_cell(r, fs).replace("|", "\\|") for _, fs in cols]
            name = display_name(r.key).replace("|", "\\|")
            lines.append(f"| `{name}` | {r.status} | " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"


def diff_figures(old: Sequence, new: Sequence, old_name: str = "old",
                 new_name: str = "new", no_kernel: Sequence = ()) -> DiffReport:
    """Pair the kernels of two builds by :func:`match_keys` and compare :data:`FIELDS`;
    ``no_kernel`` names the files of either build that hold no kernel (listed)."""
    olds = dict(zip(match_keys(old), old))
    news = dict(zip(match_keys(new), new))
    rows = []
    for key, b in news.items():
        a = olds.get(key)
        if a is None:
            rows.append(KernelDelta(key=key, old=None, new=b, status="added"))
            continue
        changes = tuple((f, getattr(a, f), getattr(b, f)) for f, _ in FIELDS
                        if getattr(a, f) is not None and getattr(b, f) is not None
                        and getattr(a, f) != getattr(b, f))
        rows.append(KernelDelta(key=key, old=a, new=b, status="changed" if changes else "same",
                                changes=changes))
    rows += [KernelDelta(key=key, old=a, new=None, status="removed")
             for key, a in olds.items() if key not in news]
    return DiffReport(old=old_name, new=new_name, rows=tuple(rows), no_kernel=tuple(no_kernel))
