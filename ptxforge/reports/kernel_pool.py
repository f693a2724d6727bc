"""The kernels of one module analysed in worker processes (``--jobs N``), in the order given.

A :class:`KernelPool` forks its workers when it is made, so each worker has the parsed module
without copying it; it must be made before any thread starts (:mod:`.analyze_compile` starts
ptxas on one).  :meth:`KernelPool.parts` gives each kernel's PTX part (instruction mix,
pressure, prediction: what needs no compiler) and :meth:`KernelPool.gaps` each entry's gap
explained from the SASS (the worker traces the kernel's SASS functions, which are sent to it).
Results come back in the kernels' order, so the output is the same bytes as with one process.
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

from ptxforge._parallel import can_fork, default_jobs
from ptxforge.errors import PtxforgeError
from ptxforge.ptx import ir

__all__ = ["PARTS", "KernelPart", "KernelPool", "kernel_part", "make_pool", "parts_here"]

#: What the workers inherit from the parent at the fork: module, kernels, target, PTX text.
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


def _part(i: int) -> tuple:
    k = _SHARED["chosen"][i]
    mix, _, pressure, prediction = kernel_part(k, _SHARED["target"])
    return mix, pressure, prediction   # the liveness is not kept: memory stays flat


def _gap(task: tuple) -> tuple:
    """(Gap or None, why not) of one entry, from its SASS functions."""
    from ptxforge.analysis.liveness import analyze_liveness
    from ptxforge.analysis.pressure import analyze_pressure

    from .sass import kernel_reports
    from .sass_trace import PtxLines

    i, sass, stats = task
    k = _SHARED["chosen"][i]
    if "lines" not in _SHARED:
        _SHARED["lines"] = PtxLines(_SHARED["text"])
    live = analyze_liveness(k)
    pressure = analyze_pressure(k, liveness=live)
    try:
        rep = kernel_reports({k.name: stats}, sass, _SHARED["module"],
                             _SHARED["text"], [k], lines=_SHARED["lines"],
                             liveness={k.name: live}, pressures={k.name: pressure})[0]
    except PtxforgeError as exc:
        return None, f"the SASS could not be read ({str(exc).splitlines()[0]})"
    return rep.gap, None


class KernelPool:
    """Worker processes holding one module (see the module docstring)."""

    def __init__(self, module: ir.Module, chosen: list, tgt: str, text: str, jobs: int) -> None:
        _SHARED.clear()
        _SHARED.update(module=module, chosen=list(chosen), target=tgt, text=text)
        self._chosen, self._target = list(chosen), tgt
        import multiprocessing

        self._pool = multiprocessing.get_context("fork").Pool(jobs)
        _SHARED.clear()   # the workers have their copy; the parent keeps nothing alive
        self.jobs = jobs

    def _chunk(self) -> int:
        return max(1, len(self._chosen) // (self.jobs * 8))

    def parts(self) -> list:
        """The :class:`KernelPart` of every kernel, in order (mix, pressure and prediction
        computed by the workers; the liveness is not kept)."""
        out = self._pool.map(_part, range(len(self._chosen)), chunksize=self._chunk())
        return [KernelPart(k, self._target, mix=mix, pressure=pressure, prediction=prediction)
                for k, (mix, pressure, prediction) in zip(self._chosen, out)]

    def gaps(self, sass, stats: dict) -> dict:
        """``{name: (Gap or None, why not)}`` of every entry, from the build's
        :class:`~ptxforge.toolchain.sass.SassLiveness` ``sass`` and ``{name: KernelStats}``."""
        from ptxforge.toolchain.sass import SassLiveness

        tasks, names = [], []
        for i, k in enumerate(self._chosen):
            if not k.is_entry or k.name not in stats or not sass.has(k.name):
                continue
            fns = tuple(sass.function(n) for n in sass.call_graph(k.name) if sass.has(n))
            sub = SassLiveness(arch=sass.arch, tool=sass.tool, version=sass.version,
                               functions=fns, line_info=sass.line_info,
                               ptx_lines=sass.ptx_lines)
            tasks.append((i, sub, stats[k.name]))
            names.append(k.name)
        out = self._pool.map(_gap, tasks, chunksize=self._chunk())
        return dict(zip(names, out))

    def close(self) -> None:
        """Stop the workers."""
        self._pool.terminate()
        self._pool.join()


def make_pool(module: ir.Module, chosen: list, tgt: str, text: Optional[str],
              jobs: Optional[int]) -> Optional[KernelPool]:
    """A :class:`KernelPool` for ``chosen`` when ``jobs`` (None: :func:`default_jobs`) is
    above 1, there are several kernels with enough instructions to pay for the workers, and
    ``fork`` is available; None otherwise (analyse in this process)."""
    jobs = default_jobs() if jobs is None else jobs
    jobs = min(jobs, len(chosen))
    if jobs <= 1 or text is None or sum(len(k.instructions) for k in chosen) < MIN_INSTRUCTIONS:
        return None
    return KernelPool(module, chosen, tgt, text, jobs) if can_fork() else None
