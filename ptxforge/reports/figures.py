"""One row of figures per kernel, from a PTX or a cubin analysis: what ``check`` and ``diff`` read.

:func:`kernel_figures` flattens a :class:`~ptxforge.reports.analyze.ModuleAnalysis` (PTX,
compiled or not) or a :class:`~ptxforge.reports.cubin.CubinReport` into
:class:`KernelFigures`: ptxas's registers, spill stores and loads (bytes), stack, occupancy at
the kernel's block size, the liveness estimate and, when the analysis has one, the predicted
register count; where the kernel is in its source (its first ``.loc`` line, else its
``.entry`` line in the PTX) and the source lines that hold the most values at the pressure
peak.  A figure the input cannot give is None: a cubin has no spill bytes (they are only in
ptxas's log) and no estimate; PTX analysed without compiling has no ptxas figures.

Example::

    >>> from ptxforge.reports.analyze import analyze_ptx
    >>> ptx = '''.version 8.0
    ... .target sm_80
    ... .address_size 64
    ... .visible .entry k(.param .u64 p)
    ... {
    ...     .reg .b64 %rd<3>;
    ...     ld.param.u64 %rd1, [p];
    ...     ld.global.u64 %rd2, [%rd1];
    ...     st.global.u64 [%rd1], %rd2;
    ...     ret;
    ... }'''
    >>> f = kernel_figures(analyze_ptx(ptx, "k.ptx", compile=False), ptx)[0]
    >>> f.name, f.estimate, f.registers, f.entry_line, f.blocks_per_sm
    ('k', 4, None, 4, 8)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Optional

import attrs

from ptxforge.arch.occupancy import KernelLimits, Occupancy, occupancy
from ptxforge.errors import PtxforgeError
from ptxforge.ptx.demangle import full_name

from .resources import launch_limits, register_limit

__all__ = ["DETAILS", "KernelFigures", "entry_lines", "first_source_line", "kernel_figures",
           "parts_for", "peak_source_lines", "with_peak_lines"]

#: The figures that need the PTX's liveness (``estimate``, ``peak_lines``) or the prediction:
#: a caller that prints none of them (``check``'s text and JUnit) leaves them out.
DETAILS = ("estimate", "prediction", "peak_lines")


def parts_for(reads) -> tuple:
    """The pieces of each kernel's PTX part (:class:`~ptxforge.reports.run_options.RunOptions`
    ``parts``) that the figures named in ``reads`` need, to compute them beside ptxas.

    Example::

        >>> parts_for(()), parts_for(["peak_lines"]), parts_for(DETAILS)
        ((), ('pressure',), ('pressure', 'prediction'))
    """
    reads = set(reads)
    return (("pressure",) if reads else ()) + (("prediction",) if "prediction" in reads else ())


@attrs.frozen(slots=True, kw_only=True)
class KernelFigures:
    """The figures of one kernel that a budget or a diff reads (None: the input cannot say).

    ``registers``, ``spill_stores``, ``spill_loads`` (bytes) and ``stack`` (bytes per thread,
    a lower bound when ``stack_known`` is False) are ptxas's; ``estimate`` is the liveness
    peak (32-bit registers) and ``prediction`` the predicted count when the analysis has one.
    ``occupancy`` (0..1) and ``blocks_per_sm`` are at ``block_size`` threads (from
    ``block_source``: ``"given"``, ``".reqntid"``, ``".maxntid"``, ``"default"``, or the
    front end's, e.g. ``"num_warps"``).  ``source`` is ``(file, line)`` of the kernel's
    first ``.loc``; ``entry_line`` the line of its ``.entry`` in ``file``; ``peak_lines``
    ``((file, line, units), ...)``: the source lines that define the most 32-bit units live
    at the peak, most first.  ``origin`` is ``"ptx"``, ``"cubin"`` or a front end
    (``"triton"``).  :meth:`occupancy_at` recomputes occupancy for another block size.
    """

    file: str
    name: str
    arch: str
    registers: Optional[int]
    estimate: Optional[int]
    spill_stores: Optional[int]
    spill_loads: Optional[int]
    stack: Optional[int]
    stack_known: bool
    block_size: int
    block_source: str
    blocks_per_sm: Optional[int]
    occupancy: Optional[float]
    prediction: Optional[int] = None
    source: Optional[tuple] = None
    entry_line: Optional[int] = None
    peak_lines: tuple = ()
    origin: str = "ptx"
    occupancy_note: Optional[str] = None
    _at: Optional[Callable] = attrs.field(default=None, eq=False, repr=False)
    #: the figures of :data:`DETAILS` not computed (None, ``()``): :meth:`to_dict` refuses
    unread: tuple = attrs.field(default=(), eq=False, repr=False)

    @property
    def demangled(self) -> str:
        """The kernel's C++ name (its name when not mangled)."""
        return full_name(self.name)

    @property
    def spills(self) -> Optional[int]:
        """Spill bytes, stores plus loads (None: unknown, e.g. a cubin)."""
        if self.spill_stores is None or self.spill_loads is None:
            return None
        return self.spill_stores + self.spill_loads

    def occupancy_at(self, block: int) -> Optional[Occupancy]:
        """Occupancy of this kernel at ``block`` threads per block (None: no occupancy table
        for the architecture, or nothing to compute it from)."""
        return None if self._at is None else self._at(block)

    def to_dict(self) -> dict:
        """JSON-ready dict of the figures (every one of them computed)."""
        if self.unread:
            raise PtxforgeError(f"{self.name}: the figures {', '.join(self.unread)} were not "
                                "computed (kernel_figures(..., reads=DETAILS) has them)")
        return {"file": self.file, "name": self.name, "demangled": self.demangled,
                "arch": self.arch, "origin": self.origin, "registers": self.registers,
                "estimate": self.estimate, "prediction": self.prediction,
                "spill_stores": self.spill_stores, "spill_loads": self.spill_loads,
                "stack": self.stack, "stack_known": self.stack_known,
                "block_size": self.block_size, "block_source": self.block_source,
                "blocks_per_sm": self.blocks_per_sm,
                "occupancy": None if self.occupancy is None else round(self.occupancy, 6),
                "source": None if self.source is None else {"file": self.source[0],
                                                            "line": self.source[1]},
                "entry_line": self.entry_line,
                "peak_lines": [{"file": f, "line": n, "units": u} for f, n, u in self.peak_lines]}


def entry_lines(text: Optional[str]) -> dict:
    """``{kernel name: 1-based line of its .entry}`` in PTX text (empty for None).

    Example::

        >>> entry_lines(".version 8.0\\n.target sm_80\\n.visible .entry k(\\n")
        {'k': 3}
    """
    if not text:
        return {}
    from ptxforge.ptx.directives import mask_comments

    text = mask_comments(text)   # a ``// .entry k`` comment names no kernel
    out: dict[str, int] = {}
    line, counted = 1, 0   # the line at offset ``counted``: one pass over the text in all
    for m in re.finditer(r"\.entry\s+([A-Za-z_$%][\w$%]*)", text):
        line += text.count("\n", counted, m.start())
        counted = m.start()
        out.setdefault(m.group(1), line)
    return out


def first_source_line(kernel) -> Optional[tuple]:
    """``(file, line)`` of the first known ``.loc`` of the kernel's own code, else of any
    code; None without line information."""
    fallback = None
    for item in kernel.body or ():
        loc = getattr(item, "loc", None)
        if loc is None or not loc.known:
            continue
        outer = loc.chain()[-1]
        if loc.inlined_at is None:
            return loc.file, loc.line
        if fallback is None:
            fallback = (outer.file, outer.line)
    return fallback


def peak_source_lines(pressure) -> tuple:
    """``((file, line, units), ...)``: the (at most 3) source lines that define the most
    32-bit units live at the peak of a :class:`~ptxforge.analysis.pressure.PressureReport`,
    most first (a figure's ``peak_lines``)."""
    return tuple((g.file, g.line, g.units) for g in pressure.peak.by_source
                 if g.file is not None and g.line)[:3]


def with_peak_lines(figures: KernelFigures, pressure) -> KernelFigures:
    """``figures`` with the peak lines of ``pressure`` (computed later than the rest: SARIF
    lists them for the kernels that fail only)."""
    return attrs.evolve(figures, peak_lines=peak_source_lines(pressure),
                        unread=tuple(f for f in figures.unread if f != "peak_lines"))


def _prediction(ka) -> Optional[int]:
    """The predicted register count when the analysis carries one (another report adds it)."""
    p = getattr(ka, "prediction", None)
    if p is None or isinstance(p, bool):
        return None
    if isinstance(p, int):
        return p
    value = getattr(p, "registers", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ptx_figures(res, text, origin, reads: frozenset) -> list:
    lines = entry_lines(text)
    out = []
    for ka in res.kernels:
        if not ka.is_entry:
            continue
        s, occ = ka.stats, ka.occupancy
        peak_lines = peak_source_lines(ka.pressure) if "peak_lines" in reads else ()
        out.append(KernelFigures(file=res.file, name=ka.name, arch=ka.arch,
                                 registers=None if s is None else s.registers,
                                 estimate=(ka.estimate.registers if "estimate" in reads
                                           else None),
                                 spill_stores=None if s is None else s.spill_stores,
                                 spill_loads=None if s is None else s.spill_loads,
                                 stack=None if s is None else s.stack_frame,
                                 stack_known=True if s is None else s.stack_known,
                                 block_size=ka.block_size, block_source=ka.block_source,
                                 blocks_per_sm=None if occ is None else occ.active_blocks,
                                 occupancy=None if occ is None else occ.occupancy,
                                 prediction=_prediction(ka) if "prediction" in reads else None,
                                 source=(first_source_line(ka.kernel)
                                         if ka.kernel is not None else None),
                                 entry_line=lines.get(ka.name), peak_lines=peak_lines,
                                 origin=origin, occupancy_note=ka.occupancy_note,
                                 at=None if occ is None else _ptx_occupancy(ka),
                                 unread=tuple(f for f in DETAILS if f not in reads)))
    return out


def _ptx_occupancy(ka) -> Callable:
    s = ka.stats
    regs = s.registers if s is not None else min(ka.estimate.registers, register_limit(ka.arch))
    static = max(ka.occupancy.shared_per_block - ka.dynamic_shared, 0)
    kw = dict(shared=static, barriers=max((s.barriers if s is not None else 1) or 1, 1),
              dynamic_shared=ka.dynamic_shared, kernel_limits=launch_limits(ka.kernel, s))
    return functools.partial(_occupancy_at, regs, ka.arch, kw)


def _occupancy_at(registers: int, arch: str, kw: dict, block: int) -> Occupancy:
    """Occupancy at ``block`` threads (a module-level function: figures pickle, for the
    worker processes of ``check`` and ``diff``)."""
    return occupancy(registers, block, arch, **kw)


def _cubin_figures(rep) -> list:
    out = []
    for k in rep.kernels:
        occ = k.occupancy
        at = functools.partial(
            _occupancy_at, min(k.registers, register_limit(rep.arch)), rep.arch,
            dict(shared=k.shared, dynamic_shared=k.dynamic_shared,
                 barriers=max(k.barriers or 1, 1),
                 kernel_limits=KernelLimits(max_threads=k.max_threads)))
        out.append(KernelFigures(file=rep.file, name=k.name, arch=rep.arch, registers=k.registers,
                                 estimate=None, spill_stores=None, spill_loads=None, stack=k.stack,
                                 stack_known=True, block_size=k.block_size,
                                 block_source=k.block_source,
                                 blocks_per_sm=None if occ is None else occ.active_blocks,
                                 occupancy=None if occ is None else occ.occupancy, prediction=None,
                                 source=None, entry_line=None, peak_lines=(), origin="cubin",
                                 occupancy_note=k.occupancy_note, at=None if occ is None else at))
    return out


def kernel_figures(analysis, text: Optional[str] = None, origin: Optional[str] = None,
                   reads=DETAILS) -> tuple:
    """The :class:`KernelFigures` of every kernel (``.entry``) of ``analysis`` (a
    ``ModuleAnalysis`` or a ``CubinReport``); ``text`` is the PTX, for the ``.entry`` lines;
    ``origin`` overrides ``"ptx"``/``"cubin"`` (a front end's name); ``reads`` names the
    figures of :data:`DETAILS` the caller reads (those left out are not computed: a PTX
    analysis made with fewer parts up front then skips liveness or the prediction)."""
    if hasattr(analysis, "compiled"):
        return tuple(_ptx_figures(analysis, text, origin or "ptx", frozenset(reads)))
    figs = _cubin_figures(analysis)
    return tuple(attrs.evolve(f, origin=origin) for f in figs) if origin else tuple(figs)
