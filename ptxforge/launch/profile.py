"""Profile a kernel and find its data races on the PTX interpreter, from Python.

:func:`profile_kernel` and :func:`find_races` take what an emulated launch takes
(``load(..., device="emulator")[name](*args, grid=, block=)``): the kernel, its arguments
(NumPy arrays are copied in and back, as for a launch), the grid and the block.  The kernel is
an :class:`~.emulated.EmulatedKernel`, or a module (an ``ir.Module`` or PTX text) with one
entry, or ``(module, name)``.  See docs/memory.md for every figure.

Example::

    >>> import numpy as np
    >>> from ptxforge.dsl import kernels
    >>> x = np.arange(64, dtype=np.float32); y = np.ones(64, np.float32)
    >>> prof = profile_kernel(kernels.saxpy(), 64, 2.0, x, y, grid=2, block=32)
    >>> [(r.opcode, r.requests, r.sectors) for r in prof.instructions if r.space == "global"]
    [('ld.global.f32', 2, 8), ('ld.global.f32', 2, 8), ('st.global.f32', 2, 8)]
    >>> find_races(kernels.saxpy(), 64, 2.0, x, y, grid=2, block=32)
    []
"""

from __future__ import annotations

from typing import Any

from ptxforge.emulator.observe import Tee
from ptxforge.emulator.profile import Profile, Profiler, profile_text
from ptxforge.emulator.races import Race, RaceDetector
from ptxforge.errors import LaunchError

from .emulated import EmulatedKernel, EmulatedModule

__all__ = ["Profile", "Race", "find_races", "profile_and_races", "profile_kernel",
           "profile_text"]


def _kernel(kernel: Any) -> EmulatedKernel:
    """An :class:`EmulatedKernel` from a kernel, a one-entry module, or (module, name)."""
    if isinstance(kernel, EmulatedKernel):
        return kernel
    name = None
    if isinstance(kernel, tuple) and len(kernel) == 2:
        kernel, name = kernel
    module = kernel if isinstance(kernel, EmulatedModule) else EmulatedModule(kernel)
    if name is None:
        if len(module.names) != 1:
            raise LaunchError(f"the module has {len(module.names)} kernels "
                              f"({', '.join(module.names) or 'none'}); expected one, or give "
                              "(module, name)")
        name = module.names[0]
    return module[name]


def profile_and_races(kernel: Any, *args: Any, grid: Any = None, block: Any = None,
                      shared_mem: int = 0, races: bool = True, cooperative: bool = False,
                      **kwargs: Any) -> tuple[Profile, list]:
    """One launch that gives both the :class:`Profile` and the races (``races=False``: an
    empty list, no race check); ``cooperative`` as for a launch (every block at once, grid
    sync).

    Example::

        >>> import numpy as np
        >>> from ptxforge.dsl import kernels
        >>> x = np.zeros(32, np.float32); y = np.zeros(32, np.float32)
        >>> prof, found = profile_and_races(kernels.saxpy(), 32, 1.0, x, y, grid=1, block=32)
        >>> prof.executed > 0, found
        (True, [])
    """
    k = _kernel(kernel)
    profiler, detector = Profiler(), RaceDetector()
    observer = Tee(profiler, detector) if races else profiler
    g, b = k.run(args, kwargs, grid=grid, block=block, shared_mem=shared_mem,
                 cooperative=cooperative, observer=observer)
    return profiler.result(k.name, g, b), detector.races if races else []


def profile_kernel(kernel: Any, *args: Any, grid: Any = None, block: Any = None,
                   shared_mem: int = 0, cooperative: bool = False, **kwargs: Any) -> Profile:
    """Run ``kernel`` on the interpreter with ``args`` and return its :class:`Profile`:
    per-instruction executed counts, global/local requests and sectors, shared wavefronts and
    bank conflicts, branch divergence, and the kernel totals (see the module example)."""
    return profile_and_races(kernel, *args, grid=grid, block=block, shared_mem=shared_mem,
                             races=False, cooperative=cooperative, **kwargs)[0]


def find_races(kernel: Any, *args: Any, grid: Any = None, block: Any = None,
               shared_mem: int = 0, cooperative: bool = False, **kwargs: Any) -> list:
    """Run ``kernel`` on the interpreter with ``args`` and return its data races, a list of
    :class:`~ptxforge.emulator.races.Race` (empty when the run had none; see the module
    example)."""
    k = _kernel(kernel)
    detector = RaceDetector()
    k.run(args, kwargs, grid=grid, block=block, shared_mem=shared_mem, cooperative=cooperative,
          observer=detector)
    return detector.races
