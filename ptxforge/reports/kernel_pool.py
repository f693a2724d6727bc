"""The kernels of one module analysed in N processes (``--jobs N``), in the order given.

A :class:`KernelPool` of ``jobs`` forks ``jobs - 1`` workers when it is made, so each worker has
the parsed module without copying it; it must be made before any thread starts
(:mod:`.analyze_compile` starts ptxas on one).  The calling process is the last of the
``jobs``: it analyses kernels beside the workers, so its share is neither pickled nor sent,
and with two jobs one fork is made, not two.  Every process takes the next kernel from one
shared counter, the biggest kernels first, until none is left.  :meth:`KernelPool.parts`
gives each kernel's PTX part (instruction mix, pressure, prediction: what needs no compiler)
and :meth:`KernelPool.gaps` each entry's gap explained from the SASS (the SASS is sent to each
worker once; it traces the kernels it takes).  Results are put back in the kernels' order, so
the output is the same bytes as with one process.
Where ``fork`` is not available the pool is not made (:func:`make_pool` gives None) and
everything runs in the calling process.  There, :class:`KernelPart` holds one kernel's part and
computes each piece when first read (:func:`parts_here` computes up front only the pieces it
is asked for: ``check`` without ``--json`` reads none of them).

Example::

    >>> pool = make_pool(module, module.kernels, "sm_80", text, jobs=2)   # doctest: +SKIP
    >>> [p.pressure.peak.units for p in pool.parts()]                   # doctest: +SKIP
    [12, 40]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

from ptxforge._parallel import can_fork, kernel_jobs
from ptxforge.errors import PtxforgeError
from ptxforge.ptx import ir

__all__ = ["PARTS", "KernelPart", "KernelPool", "kernel_part", "make_pool", "parts_here"]

#: What the workers inherit from the parent at the fork: module, kernels, target, PTX text, and
#: the two counters (parts, gaps) every process takes its next kernel from.
_SHARED: dict = {}
#: Below this many PTX instructions in all, a pool costs more than it saves.
MIN_INSTRUCTIONS = 4000
#: The pieces of a kernel's PTX part a caller can ask for up front (:class:`KernelPart`).
PARTS = ("mix", "pressure", "prediction")
_UNSET = object()


def kernel_part(k: ir.Kernel, tgt: str) -> tuple:
    """What needs only the PTX: ``(mix, liveness, pressure, prediction)`` of kernel ``k``."""
    part = KernelPart(k, tgt)
    return part.mix, part.liveness, part.pressure, part.prediction


class KernelPart:
    """One kernel's PTX part: ``mix``, ``liveness``, ``pressure`` and ``prediction``, each
    computed when first read (a piece given to the constructor is taken as computed).

    Example::

        >>> part = KernelPart(kernel, "sm_80")          # doctest: +SKIP
        >>> part.pressure.peak.units                     # doctest: +SKIP
        12
    """

    __slots__ = ("_liveness", "_mix", "_prediction", "_pressure", "kernel", "target")

    def __init__(self, kernel: ir.Kernel, target: str, *, mix=_UNSET, liveness=_UNSET,
                 pressure=_UNSET, prediction=_UNSET) -> None:
        self.kernel, self.target = kernel, target
        self._mix, self._liveness = mix, liveness
        self._pressure, self._prediction = pressure, prediction

    @property
    def mix(self):
        """The instruction mix (:func:`~ptxforge.analysis.mix.instruction_mix`)."""
        if self._mix is _UNSET:
            from ptxforge.analysis.mix import instruction_mix

            self._mix = instruction_mix(self.kernel)
        return self._mix

    @property
    def liveness(self):
        """The liveness (:func:`~ptxforge.analysis.liveness.analyze_liveness`)."""
        if self._liveness is _UNSET:
            from ptxforge.analysis.liveness import analyze_liveness

            self._liveness = analyze_liveness(self.kernel)
        return self._liveness

    @property
    def pressure(self):
        """The pressure report (:func:`~ptxforge.analysis.pressure.analyze_pressure`)."""
        if self._pressure is _UNSET:
            from ptxforge.analysis.pressure import analyze_pressure

            self._pressure = analyze_pressure(self.kernel, liveness=self.liveness)
        return self._pressure

    @property
    def prediction(self):
        """ptxas's register count predicted from the PTX (:mod:`ptxforge.analysis.prediction`)."""
        if self._prediction is _UNSET:
            from ptxforge.analysis.prediction import predict_registers

            self._prediction = predict_registers(self.kernel, live_units=self.pressure.peak.units,
                                                 target=self.target, cfg=self.liveness.cfg)
        return self._prediction

    def computed(self) -> tuple:
        """The pieces computed so far, e.g. ``("liveness", "pressure")``."""
        return tuple(n for n in ("mix", "liveness", "pressure", "prediction")
                     if getattr(self, f"_{n}") is not _UNSET)

    def liveness_if_known(self):
        """The liveness when it was computed (else None: the SASS trace computes its own)."""
        return None if self._liveness is _UNSET else self._liveness

    def pressure_if_known(self):
        """The pressure report when it was computed, else None."""
        return None if self._pressure is _UNSET else self._pressure


class _Known(Mapping):
    """``{kernel name: liveness or pressure}`` of the parts that computed it (what
    :class:`~ptxforge.reports.analyze_compile.SassGaps` reuses)."""

    def __init__(self, parts: list, which: str) -> None:
        self._parts = {p.kernel.name: p for p in parts}
        self._which = which

    def __getitem__(self, name: str):
        value = getattr(self._parts[name], f"{self._which}_if_known")()
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self):
        return (n for n in self._parts if n in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def parts_here(chosen: list, tgt: str, progress, upfront: Optional[tuple] = None) -> tuple:
    """Each kernel's :class:`KernelPart` in this process, with the pieces named in ``upfront``
    (None: all of :data:`PARTS`) computed now, the rest when first read; and the liveness
    and pressure by name (the SASS gaps use them again)."""
    parts = []
    for i, k in enumerate(chosen):
        if progress is not None and len(chosen) > 1 and i:
            progress(i, len(chosen), k.name)
        part = KernelPart(k, tgt)
        for name in PARTS if upfront is None else upfront:
            getattr(part, name)
        parts.append(part)
    return parts, {"liveness": _Known(parts, "liveness"), "pressures": _Known(parts, "pressure")}


def _claim(work: dict, phase: str) -> Optional[int]:
    """The next kernel (an index into ``chosen``) of ``phase`` no process has taken, or None:
    the parent and the workers take kernels from one counter, the biggest first, so each
    process is busy until the last kernel is taken."""
    counter, order = work[phase]
    with counter.get_lock():
        k = counter.value
        counter.value = k + 1
    return order[k] if k < len(order) else None


def _parts_share(work: dict) -> list:
    """``[(index, (mix, pressure, prediction))]`` of the kernels this process took."""
    out = []
    while (i := _claim(work, "parts")) is not None:
        mix, _, pressure, prediction = kernel_part(work["chosen"][i], work["target"])
        out.append((i, (mix, pressure, prediction)))   # the liveness is not kept: memory flat
    return out


def _gaps_share(work: dict, sass, stats: dict) -> list:
    """``[(index, (Gap or None, why not))]`` of the entries this process took."""
    out = []
    while (i := _claim(work, "gaps")) is not None:
        k = work["chosen"][i]
        if k.name in stats and sass.has(k.name):   # else ptxas or the SASS lacks it
            out.append((i, _gap(work, k, sass, stats)))
    return out


def _worker_parts(_task) -> list:
    return _parts_share(_SHARED)


def _worker_gaps(task: tuple) -> list:
    return _gaps_share(_SHARED, *task)


def _gap(work: dict, k: ir.Kernel, sass, stats: dict) -> tuple:
    """(Gap or None, why not) of entry ``k``, from its SASS functions."""
    from ptxforge.analysis.liveness import analyze_liveness
    from ptxforge.analysis.pressure import analyze_pressure
    from ptxforge.toolchain.sass import SassLiveness

    from .sass import kernel_reports
    from .sass_trace import PtxLines

    if "lines" not in work:
        work["lines"] = PtxLines(work["text"])
    fns = tuple(sass.function(n) for n in sass.call_graph(k.name) if sass.has(n))
    sub = SassLiveness(arch=sass.arch, tool=sass.tool, version=sass.version, functions=fns,
                       line_info=sass.line_info, ptx_lines=sass.ptx_lines)
    live = analyze_liveness(k)
    pressure = analyze_pressure(k, liveness=live)
    try:
        rep = kernel_reports({k.name: stats[k.name]}, sub, work["module"], work["text"], [k],
                             lines=work["lines"], liveness={k.name: live},
                             pressures={k.name: pressure})[0]
    except PtxforgeError as exc:
        return None, f"the SASS could not be read ({str(exc).splitlines()[0]})"
    return rep.gap, None


class KernelPool:
    """Worker processes holding one module (see the module docstring); ``jobs`` processes in
    all: ``jobs - 1`` workers and this one, which analyses its share while they do theirs."""

    def __init__(self, module: ir.Module, chosen: list, tgt: str, text: str, jobs: int) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        biggest = sorted(range(len(chosen)), key=lambda i: -len(chosen[i].instructions))
        self._work = dict(module=module, chosen=list(chosen), target=tgt, text=text,
                          parts=(ctx.Value("i", 0), biggest),
                          gaps=(ctx.Value("i", 0), [i for i in biggest if chosen[i].is_entry]))
        _SHARED.clear()
        _SHARED.update(self._work)
        self._chosen, self._target = list(chosen), tgt
        self._pool = ctx.Pool(jobs - 1)
        _SHARED.clear()   # the workers have their copy
        self.jobs = jobs

    def parts(self) -> list:
        """The :class:`KernelPart` of every kernel, in order (mix, pressure and prediction
        computed by the workers and this process; the liveness is not kept)."""
        theirs = self._pool.map_async(_worker_parts, range(self.jobs - 1), chunksize=1)
        got = dict(_parts_share(self._work))
        for share in theirs.get():
            got.update(share)
        return [KernelPart(k, self._target, mix=got[i][0], pressure=got[i][1],
                           prediction=got[i][2]) for i, k in enumerate(self._chosen)]

    def gaps(self, sass, stats: dict) -> dict:
        """``{name: (Gap or None, why not)}`` of every entry, from the build's
        :class:`~ptxforge.toolchain.sass.SassLiveness` ``sass`` and ``{name: KernelStats}``
        (an entry ptxas or the SASS does not have is left out); the SASS is sent to each
        worker once."""
        theirs = self._pool.map_async(_worker_gaps, [(sass, stats)] * (self.jobs - 1),
                                      chunksize=1)
        got = dict(_gaps_share(self._work, sass, stats))
        for share in theirs.get():
            got.update(share)
        return {self._chosen[i].name: got[i] for i in sorted(got)}

    def close(self) -> None:
        """Stop the workers."""
        self._pool.terminate()
        self._pool.join()


def make_pool(module: ir.Module, chosen: list, tgt: str, text: Optional[str],
              jobs: Optional[int], compiling: bool = False) -> Optional[KernelPool]:
    """A :class:`KernelPool` for ``chosen`` when ``jobs`` (None: :func:`kernel_jobs`, the
    cores, less one where ``compiling``: ptxas runs beside the pool) is above 1, there are
    several kernels with enough instructions to pay for the workers, and ``fork`` is
    available; None otherwise (analyse in this process)."""
    jobs = min(kernel_jobs(jobs, compiling), len(chosen))
    if jobs <= 1 or text is None or sum(len(k.instructions) for k in chosen) < MIN_INSTRUCTIONS:
        return None
    return KernelPool(module, chosen, tgt, text, jobs) if can_fork() else None
