"""A CUDA source over a matrix of defines, side by side: what ``ptxforge tune k.cu -D TILE=4,8,16`` prints.

Each combination of the ``-D NAME=v1,v2,…`` values (their product, in the order given) is
compiled with NVRTC (:mod:`ptxforge.frontends.cuda_source`), analysed and compiled by ptxas
(:mod:`ptxforge.reports.analyze`), and each kernel's figures
(:class:`~ptxforge.reports.figures.KernelFigures`: registers, spills, stack, occupancy, the
liveness estimate) become one row per combination.

Example::

    >>> rep = tune(open("k.cu").read(), "k.cu", [("TILE", ("4", "8", "16"))])   # doctest: +SKIP
    >>> [(r.defines, r.figures.registers) for r in rep.rows]                      # doctest: +SKIP
    [((('TILE', '4'),), 18), ((('TILE', '8'),), 26), ((('TILE', '16'),), 40)]
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Optional, Union

import attrs

from ptxforge._text import short_path, table, wrap
from ptxforge.arch.spec import LaunchSpec, launch_spec
from ptxforge.errors import PtxforgeError
from ptxforge.ptx.demangle import display_name
from ptxforge.reports.figures import KernelFigures, kernel_figures

from .cuda_source import compile_cuda

__all__ = ["TuneReport", "TuneRow", "parse_define", "tune"]


def parse_define(text: str) -> tuple:
    """``("TILE", ("4", "8"))`` of ``TILE=4,8``; a value-less ``NAME`` is ``(NAME, ("1",))``.

    Example::

        >>> parse_define("TILE=4,8,16"), parse_define("FAST")
        (('TILE', ('4', '8', '16')), ('FAST', ('1',)))
    """
    name, sep, values = text.partition("=")
    name = name.strip()
    if not name or not (name[0].isalpha() or name[0] == "_") or not all(
            c.isalnum() or c == "_" for c in name):
        raise PtxforgeError(f"expected -D NAME=V1,V2,... with NAME a macro name, got {text!r}")
    vals = tuple(v.strip() for v in values.split(",")) if sep else ("1",)
    if not vals or any(v == "" for v in vals):
        raise PtxforgeError(f"expected -D NAME=V1,V2,... with no empty value, got {text!r}")
    return name, vals


@attrs.frozen(slots=True, kw_only=True)
class TuneRow:
    """One kernel compiled with one combination of defines (``((NAME, value), ...)``)."""

    defines: tuple
    figures: KernelFigures

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        return {"defines": dict(self.defines), **self.figures.to_dict()}


@attrs.frozen(slots=True, kw_only=True)
class TuneReport:
    """Every kernel of every combination: ``rows`` in combination order, kernels in file order."""

    file: str
    arch: str
    names: tuple            # the define names, in the order given
    rows: tuple

    def to_dict(self) -> dict:
        """JSON-ready dict (``schema`` ``ptxforge.tune/1``)."""
        return {"schema": "ptxforge.tune/1", "file": self.file, "arch": self.arch,
                "defines": list(self.names), "rows": [r.to_dict() for r in self.rows]}

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def to_text(self) -> str:
        """Per kernel, one line per combination: registers, spills, stack, occupancy."""
        out = wrap(f"{short_path(self.file, 40)}: {len(self.rows)} kernel builds over "
                   f"{', '.join(self.names)} for {self.arch}")
        kernels = list(dict.fromkeys(display_name(r.figures.name) for r in self.rows))
        for k in kernels:
            rows = [r for r in self.rows if display_name(r.figures.name) == k]
            body = []
            for r in rows:
                f = r.figures
                occ = "n/a" if f.occupancy is None else f"{100 * f.occupancy:.1f}%"
                spills = "-" if f.spill_stores is None else f"{f.spill_stores}/{f.spill_loads}"
                body.append((*(v for _, v in r.defines), f.registers, spills, f.stack,
                             f.blocks_per_sm, occ, f.estimate))
            head = (*self.names, "registers", "spill st/ld", "stack", "blk/SM", "occup.",
                    "estimate")
            out += ["", f"== {k} ==", *table(head, body, right=set(range(len(head))))]
        return "\n".join(out) + "\n"


def tune(source: Union[str, bytes], path: str, defines: Sequence[tuple],
         spec: Union[LaunchSpec, str, None] = None, flags: Sequence[str] = (),
         request=None, strict: bool = True) -> TuneReport:
    """Compile and analyse ``source`` once per combination of ``defines`` (``[(NAME,
    (v1, v2, ...)), ...]``: their product), with ``flags`` for NVRTC too; the
    :class:`TuneReport`.  ``spec``'s target defaults to sm_80.

    Example::

        >>> tune("__global__ void k(float* x) { x[0] = N; }", "k.cu",
        ...      [("N", ("1", "2"))]).rows[1].defines                           # doctest: +SKIP
        (('N', '2'),)
    """
    from ptxforge.reports.analyze import analyze_ptx

    spec = launch_spec(spec)
    if not defines:
        raise PtxforgeError("tune: give at least one -D NAME=V1,V2,...")
    names = tuple(n for n, _ in defines)
    if len(set(names)) != len(names):
        raise PtxforgeError(f"tune: each define once, got {', '.join(names)}")
    target: Optional[str] = spec.target
    rows = []
    for combo in itertools.product(*(vals for _, vals in defines)):
        pairs = tuple(zip(names, combo))
        ptx = compile_cuda(source, path, target, [*flags, *(f"-D{n}={v}" for n, v in pairs)])
        res = analyze_ptx(ptx, path, spec, request=request, strict=strict)
        target = res.arch
        rows += [TuneRow(defines=pairs, figures=f) for f in kernel_figures(res, ptx)]
    return TuneReport(file=path, arch=target or "sm_80", names=names, rows=tuple(rows))
