"""Measure the register prediction on the family corpus and the fixed corpus: per row, per
source family, compiler and size class, on each validation set (docs/prediction.md, issue 29).

A **row** is one non-spilling kernel with ptxas's count (whole-program ptxas 13.x, sm_80), the
live count and the prediction.  The figures of a group of rows: the share within +-10% of
ptxas, the median |error|, Spearman's rank correlation, the number off by more than 2x
(either way) where the live count was within 25%, and the share of ptxas counts inside the
band [low, high] (with and without the "out of its depth" flag).

Example::

    >>> size_class(12), size_class(40), size_class(200)
    ('<=16', '33-64', '>128')
"""

from __future__ import annotations

import statistics

import attrs
from family_corpus import family_corpus

from ptxforge import analyze_pressure, parse
from ptxforge.analysis.prediction import predict_registers

from kernel_corpus import corpus, ground_truths

__all__ = ["SIZE_CLASSES", "Row", "accuracy", "figures", "measure", "size_class", "spearman", "table"]

SIZE_CLASSES = ("<=16", "17-32", "33-64", "65-128", ">128")


def size_class(registers: int) -> str:
    """The size class of a ptxas count."""
    for bound, name in ((16, "<=16"), (32, "17-32"), (64, "33-64"), (128, "65-128")):
        if registers <= bound:
            return name
    return ">128"


@attrs.frozen(slots=True)
class Row:
    """One non-spilling kernel: where it came from, ptxas's count, the live count, the
    prediction with its band and flags."""

    id: str
    family: str
    compiler: str
    role: str
    truth: int
    live: int
    predicted: int
    low: int
    high: int
    out_of_depth: bool

    @property
    def size(self) -> str:
        return size_class(self.truth)


def _ranks(xs: list) -> list:
    order = sorted(range(len(xs)), key=xs.__getitem__)
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2
        i = j + 1
    return ranks


def spearman(a: list, b: list) -> float:
    """Spearman's rank correlation (ties get their mean rank); nan for fewer than 3."""
    if len(a) < 3:
        return float("nan")
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / (va * vb) ** 0.5 if va and vb else float("nan")


def accuracy(pred: list, truth: list) -> dict:
    """n, within10 (share), median_error (share), spearman for predictions against truth."""
    if not truth:
        return {"n": 0, "within10": float("nan"), "median_error": float("nan"),
                "spearman": float("nan")}
    return {"n": len(truth),
            "within10": sum(abs(p - t) <= 0.1 * t for p, t in zip(pred, truth)) / len(truth),
            "median_error": statistics.median(abs(p - t) / t for p, t in zip(pred, truth)),
            "spearman": spearman(pred, truth)}


#: (PTX text, file) -> parsed Module and (PTX text, file, kernel) -> (live count, Prediction):
#: a kernel that several measurements of one process include (the test slices overlap) is
#: parsed and predicted once per process (modules are immutable, the analysis is pure).
_MODULES: dict = {}
_PREDICTED: dict = {}


def _predicted(k) -> tuple:
    """(live count, Prediction) of corpus kernel ``k``."""
    key = (k.ptx, k.file, k.kernel)
    hit = _PREDICTED.get(key)
    if hit is None:
        module = _MODULES.get((k.ptx, k.file))
        if module is None:
            module = _MODULES[(k.ptx, k.file)] = parse(k.ptx, k.file)
        kernel = module.kernel(k.kernel)
        live = analyze_pressure(kernel).peak.units
        hit = _PREDICTED[key] = (live, predict_registers(kernel, live_units=live))
    return hit


def _kernel_rows(items) -> list:
    """Rows for (CorpusKernel, family, compiler, role) items, non-spilling kernels only."""
    items = list(items)
    truth = ground_truths([it[0] for it in items])
    rows = []
    for k, family, compiler, role in items:
        g = truth[k.id]
        if g.spills or g.registers <= 0:
            continue
        live, p = _predicted(k)
        rows.append(Row(k.id, family, compiler, role, g.registers, live, p.registers, p.low,
                        p.high, bool(getattr(p, "out_of_depth", ()))))
    return rows


def measure(arch: str = "sm_80", only: tuple = (), fixed: bool = True) -> list:
    """Rows for the family corpus (or only the families in ``only``) and, with ``fixed``, the
    fixed corpus of :mod:`kernel_corpus` (family ``corpus/<file>``, its own split)."""
    items = [(f.kernel, f.family, f.compiler, f.role) for f in family_corpus(arch, only)]
    if fixed:
        items += [(k, "corpus/" + k.file.split("/")[-1], k.source, k.split) for k in corpus(arch)]
    return _kernel_rows(items)


def figures(rows: list) -> dict:
    """n, within10, median_error, spearman, live_within10, twox (off by more than 2x where the
    live count was within 25%), band coverage (all rows; rows not flagged)."""
    if not rows:
        return {"n": 0}
    calm = [r for r in rows if not r.out_of_depth]
    return {
        **accuracy([r.predicted for r in rows], [r.truth for r in rows]),
        "live_within10": sum(abs(r.live - r.truth) <= 0.1 * r.truth for r in rows) / len(rows),
        "twox": sum(1 for r in rows if abs(r.live - r.truth) <= 0.25 * r.truth
                    and (r.predicted > 2 * r.truth or 2 * r.predicted < r.truth)),
        "coverage": sum(r.low <= r.truth <= r.high for r in rows) / len(rows),
        "coverage_calm": (sum(r.low <= r.truth <= r.high for r in calm) / len(calm)
                          if calm else float("nan")),
        "flagged": len(rows) - len(calm),
    }


def table(rows: list, roles: tuple, by: str) -> list:
    """(group, figures) for the rows whose role is in ``roles``, grouped by ``by`` (``family``,
    ``compiler``, ``size`` or ``all``), groups in a stable order."""
    sel = [r for r in rows if r.role in roles]
    if by == "all":
        return [("all", figures(sel))]
    keys = sorted({getattr(r, by) for r in sel},
                  key=lambda k: SIZE_CLASSES.index(k) if by == "size" else k)
    return [(k, figures([r for r in sel if getattr(r, by) == k])) for k in keys]
