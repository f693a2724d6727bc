"""The kernels of one module analysed in worker processes (``--jobs N``), in the order given.

A :class:`KernelPool` forks its workers when it is made, so each worker has the parsed module
without copying it; it must be made before any thread starts (:mod:`.analyze_compile` starts
ptxas on one).  :meth:`KernelPool.parts` gives each kernel's PTX part (instruction mix,
pressure, prediction: what needs no compiler) and :meth:`KernelPool.gaps` each entry's gap
explained from the SASS (the worker traces the kernel's SASS functions, which are sent to it).
Results come back in the kernels' order, so the output is the same bytes as with one process.
Where ``fork`` is not available the pool is not made (:func:`make_pool` gives None) and
everything runs in the calling process.

Example::

    >>> pool = make_pool(module, module.kernels, "sm_80", text, jobs=2)   # doctest: +SKIP
    >>> [p[1].peak.units for p in pool.parts()]                         # doctest: +SKIP
    [12, 40]
"""

from __future__ import annotations

from typing import Optional

from ptxforge._parallel import can_fork, default_jobs
from ptxforge.errors import PtxforgeError
from ptxforge.ptx import ir

__all__ = ["KernelPool", "kernel_part", "make_pool", "parts_here"]

#: What the workers inherit from the parent at the fork: module, kernels, target, PTX text.
_SHARED: dict = {}
#: Below this many PTX instructions in all, a pool costs more than it saves.
MIN_INSTRUCTIONS = 4000


def kernel_part(k: ir.Kernel, tgt: str) -> tuple:
    """What needs only the PTX: ``(mix, liveness, pressure, prediction)`` of kernel ``k``."""
    from ptxforge.analysis.liveness import analyze_liveness
    from ptxforge.analysis.mix import instruction_mix
    from ptxforge.analysis.prediction import predict_registers
    from ptxforge.analysis.pressure import analyze_pressure

    live = analyze_liveness(k)
    pressure = analyze_pressure(k, liveness=live)
    prediction = predict_registers(k, live_units=pressure.peak.units, target=tgt)
    return instruction_mix(k), live, pressure, prediction


def parts_here(chosen: list, tgt: str, progress) -> tuple:
    """Each kernel's PTX part in this process, and the liveness and pressure by name (the
    SASS gaps use them again)."""
    parts, live, pressures = [], {}, {}
    for i, k in enumerate(chosen):
        if progress is not None and len(chosen) > 1 and i:
            progress(i, len(chosen), k.name)
        mix, lv, pressure, prediction = kernel_part(k, tgt)
        parts.append((mix, pressure, prediction))
        live[k.name], pressures[k.name] = lv, pressure
    return parts, {"liveness": live, "pressures": pressures}


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
        self._chosen = list(chosen)
        import multiprocessing

        self._pool = multiprocessing.get_context("fork").Pool(jobs)
        _SHARED.clear()   # the workers have their copy; the parent keeps nothing alive
        self.jobs = jobs

    def _chunk(self) -> int:
        return max(1, len(self._chosen) // (self.jobs * 8))

    def parts(self) -> list:
        """``[(mix, pressure, prediction)]`` of every kernel, in order."""
        return self._pool.map(_part, range(len(self._chosen)), chunksize=self._chunk())

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
