"""Files, folders and Triton caches to per-kernel figures: what ``check`` and ``diff`` read.

:func:`collect` takes paths: a ``.ptx`` file, a CUDA source (``.cu``, compiled with NVRTC:
:mod:`ptxforge.frontends.cuda_source`), a cubin, a folder (searched recursively for ``*.ptx``,
``*.cu`` and ``*.cubin``; a cubin or ``.cu`` beside a PTX of the same stem is left out, the
PTX tells more) or a Triton cache (a folder holding ``HASH/NAME.json`` metadata beside ``NAME.ptx``:
each kernel is analysed at its own block size, 32 × num_warps, with its shared memory, see
:mod:`ptxforge.frontends.triton_cache`).  Each file becomes an :class:`Input` with its
analysis and :class:`~ptxforge.reports.figures.KernelFigures`.  The figures come from
:mod:`ptxforge.reports.analyze` (compiled with the default backend) and
:mod:`ptxforge.reports.cubin`.

Example::

    >>> units = collect(["build/kernels/"])          # doctest: +SKIP
    >>> [f.name for u in units for f in u.figures]   # doctest: +SKIP
    ['gemm', 'softmax']
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional, Union

import attrs

from ptxforge._parallel import default_jobs, ordered_map
from ptxforge.arch.spec import LaunchSpec, launch_spec
from ptxforge.errors import NoKernelError, PtxforgeError
from ptxforge.reports.figures import DETAILS, kernel_figures, parts_for, with_peak_lines

from . import triton_cache
from .cuda_source import compile_cuda, is_cuda_source

if TYPE_CHECKING:  # imported by _one when a file is analysed
    from ptxforge.reports.analyze import ModuleAnalysis
    from ptxforge.reports.cubin import CubinReport

__all__ = ["Input", "collect", "expand", "fill_peak_lines", "not_checked", "without_kernels"]


@attrs.frozen(slots=True, kw_only=True)
class Input:
    """One analysed file: its path, kind (``"ptx"``, ``"cubin"``, ``"triton"``), the path
    relative to the folder it was found in (``rel``), the analysis (None when the file was
    analysed in a worker process) and the figures; ``no_kernel`` for PTX that holds only
    globals or declarations (no figures: listed by ``check`` and ``diff``, not an error);
    ``error`` the message of a file that could not be read, parsed or compiled, when
    :func:`collect` was asked to go on past it (``keep_going``)."""

    path: str
    kind: str
    rel: str
    analysis: Union[ModuleAnalysis, CubinReport, None] = attrs.field(eq=False, repr=False)
    figures: tuple = attrs.field(eq=False, repr=False)
    no_kernel: bool = False
    error: Optional[str] = None


def _is_cubin(path: pathlib.Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def expand(path) -> list:
    """``[(kind, file path or CacheEntry, relative name)]`` for one path (see the module
    docstring); PtxforgeError for a path that does not exist or holds nothing to analyse."""
    p = pathlib.Path(path)
    if p.is_file():
        kind = "cubin" if _is_cubin(p) else "cu" if is_cuda_source(p) else "ptx"
        return [(kind, str(p), p.name)]
    if not p.is_dir():
        raise PtxforgeError(f"{str(path)!r}: no such file or directory (expected PTX, a "
                            "cubin, a folder of them or a Triton cache)")
    entries = [e for j in sorted(p.rglob("*.json")) if (e := triton_cache.read_entry(j))]
    taken = {pathlib.Path(e.ptx_path) for e in entries}
    taken |= {pathlib.Path(e.cubin_path) for e in entries if e.cubin_path}
    out: list[tuple[str, Union[str, triton_cache.CacheEntry], str]] = [
        ("triton", e, os.path.relpath(e.ptx_path, p)) for e in entries]
    for f in sorted(p.rglob("*")):
        if f in taken or not f.is_file():
            continue
        if f.suffix == ".ptx":
            out.append(("ptx", str(f), os.path.relpath(f, p)))
        elif f.suffix == ".cu" and not f.with_suffix(".ptx").is_file():  # its PTX tells more
            out.append(("cu", str(f), os.path.relpath(f, p)))
        elif f.suffix == ".cubin" or (f.suffix == "" and _is_cubin(f)):
            if f.with_suffix(".ptx").is_file():
                continue
            out.append(("cubin", str(f), os.path.relpath(f, p)))
    if not out:
        raise PtxforgeError(f"{str(path)!r} holds no .ptx, .cu, .cubin or Triton cache entry")
    return out


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise PtxforgeError(f"cannot read {path!r}: {exc.strerror or exc}") from None


def _one(kind: str, what, rel: str, spec: LaunchSpec, compile: bool,
         cu_flags: Sequence[str] = (), reads: tuple = DETAILS, jobs: Optional[int] = 1,
         ahead: Optional[tuple] = None) -> Input:
    """One file's :class:`Input`; ``ahead``: ``(text, EarlyCompile)`` of a PTX file whose
    compile :func:`_in_turn` started already."""
    if kind == "triton":
        res, text = triton_cache.analyze_entry(what, compile=compile, target=spec.target)
        return Input(path=what.ptx_path, kind=kind, rel=rel, analysis=res,
                     figures=kernel_figures(res, text, "triton"))
    if ahead is not None:
        text, started = ahead
        return _ptx_input(text, what, rel, spec, compile, reads, jobs, started)
    data = _read(what)
    if kind == "cubin":
        from ptxforge.reports.cubin import analyze_cubin

        res = analyze_cubin(data, what, spec)
        return Input(path=what, kind=kind, rel=rel, analysis=res, figures=kernel_figures(res))
    text = (compile_cuda(data, what, spec.target, cu_flags) if kind == "cu"
            else data.decode("utf-8", errors="replace"))
    return _ptx_input(text, what, rel, spec, compile, reads, jobs, None, kind)


def _ptx_input(text: str, what: str, rel: str, spec: LaunchSpec, compile: bool, reads: tuple,
               jobs: Optional[int], started, kind: str = "ptx") -> Input:
    from ptxforge.reports.analyze import RunOptions, analyze_ptx

    try:
        res = analyze_ptx(text, what, spec, compile=compile,
                          run=RunOptions(jobs=jobs, parts=parts_for(reads), started=started))
    except NoKernelError:   # globals only: a build folder has such files; listed, not fatal
        return Input(path=what, kind=kind, rel=rel, analysis=None, figures=(), no_kernel=True)
    return Input(path=what, kind=kind, rel=rel, analysis=res,
                 figures=kernel_figures(res, text, reads=reads))


def without_kernels(units: Sequence) -> list:
    """The paths of the :class:`Input` s that hold no kernel (PTX of globals only), in order.

    Example::

        >>> without_kernels(collect(["build/"]))   # doctest: +SKIP
        ['build/constants.ptx']
    """
    return [u.path for u in units if u.no_kernel]


def not_checked(units: Sequence) -> list:
    """``[(path, error message), ...]`` of the :class:`Input` s whose file could not be read,
    parsed or compiled (``collect(..., keep_going=True)``), in order.

    Example::

        >>> not_checked(collect(["build/"], keep_going=True))   # doctest: +SKIP
        [('build/broken.ptx', 'build/broken.ptx:3:1: expected ...')]
    """
    return [(u.path, u.error) for u in units if u.error is not None]


def collect(paths: Sequence, *, spec: Union[LaunchSpec, str, None] = None,
            compile: bool = True, jobs: Optional[int] = 1,
            cu_flags: Sequence[str] = (), reads: Sequence[str] = DETAILS,
            keep_going: bool = False) -> tuple:
    """Analyse every kernel under ``paths`` (files, folders, Triton caches) into
    :class:`Input` s, in the order given (folders sorted).  ``spec`` is the
    :class:`~ptxforge.arch.spec.LaunchSpec` (or a target name): its target None uses each
    PTX's ``.target``; its block None each kernel's own launch bounds (Triton: 32 ×
    num_warps), else 256.  Raises PtxforgeError (with the file) for unreadable, malformed or
    uncompilable input.  ``jobs`` above 1 (None: the cores) analyses the files in that many
    worker processes; their Inputs then carry the figures only (``analysis`` is None).
    A ``.cu`` source is compiled with NVRTC for the spec's target (default sm_80) with
    ``-lineinfo`` and ``cu_flags`` (:mod:`ptxforge.frontends.cuda_source`).  ``reads`` names
    the figures of :data:`~ptxforge.reports.figures.DETAILS` the caller reads (the liveness
    and the prediction of a PTX kernel are computed only for those; ``check`` without
    ``--json`` or ``--sarif`` reads none).  ``keep_going`` turns a file's error into an
    :class:`Input` with ``error`` set (``check`` reports it and goes on with the rest)."""
    spec = launch_spec(spec)
    if not paths:
        raise PtxforgeError("no input: give PTX files, cubins, folders or a Triton cache")
    tasks = [(kind, what, rel, spec, compile, tuple(cu_flags), tuple(reads)) for path in paths
             for kind, what, rel in expand(path)]
    if (default_jobs() if jobs is None else jobs) <= 1 or len(tasks) < 2:
        results = list(_in_turn(tasks, jobs, keep_going))  # one file: its kernels
    else:                                                               # in parallel
        results = ordered_map(_one_in_worker, tasks, jobs)
    out = []
    for task, res in zip(tasks, results):
        if isinstance(res, str):   # the first failing file, as in one process
            if not keep_going:
                raise PtxforgeError(res)
            res = _failed(task, res)
        out.append(res)
    return tuple(out)


def _in_turn(tasks: list, jobs: Optional[int], keep_going: bool):
    """:func:`_one_or_error` of each task in turn, in this process, with the next PTX file's
    compile under way before this one is analysed: ptxas works on file N + 1 while the
    analysis of file N runs, as it does beside the parse of one file.  One compiler at a
    time: the compile of file N + 1 is made ready (its options, its temporary folder) while
    ptxas works on file N and starts its process the moment that one has ended.  The analysis
    of file N waits until the process of file N + 1 has begun: the compile thread's last
    steps would otherwise share the interpreter's lock with the analysis, and ptxas would
    start about twice as late (the analysis, shorter than a compile, loses nothing)."""
    ahead = _start_ahead(tasks[0]) if tasks else None
    for i, task in enumerate(tasks):
        mine = ahead
        after = mine[1].side.wait_for_compiler if mine is not None else None
        ahead = _start_ahead(tasks[i + 1], after) if i + 1 < len(tasks) else None
        if ahead is not None:
            ahead[1].side.wait_for_launch()
        yield _one_or_error(task, jobs, keep_going, mine)


def _start_ahead(task: tuple, after=None) -> Optional[tuple]:
    """``(text, EarlyCompile)`` of a PTX task that compiles, ptxas started on it (its process
    once ``after()`` returns, when given); None for other tasks and for a file that cannot be
    read (its own turn reports that)."""
    kind, what, _, spec, compile, _, _ = task
    if kind != "ptx" or not compile:
        return None
    from ptxforge.reports.analyze_compile import start_early

    try:
        text = _read(what).decode("utf-8", errors="replace")
        started = start_early(text, spec.target, None, False, 1, after)
    except PtxforgeError:
        return None
    return None if started is None else (text, started)


def _one_or_error(task: tuple, jobs: Optional[int], keep_going: bool,
                  ahead: Optional[tuple] = None):
    """:func:`_one` in this process: the Input, or (``keep_going``) the error's message."""
    kind, what, rel, spec, compile, cu_flags, reads = task
    try:
        return _one(kind, what, rel, spec, compile, cu_flags, reads, jobs=jobs, ahead=ahead)
    except PtxforgeError as exc:
        if not keep_going:
            raise
        return str(exc)


def _failed(task: tuple, message: str) -> Input:
    """The :class:`Input` of a file whose analysis failed with ``message``."""
    kind, what, rel = task[:3]
    path = what.ptx_path if kind == "triton" else what
    return Input(path=str(path), kind=kind, rel=rel, analysis=None, figures=(), error=message)


def _one_in_worker(task: tuple):
    """:func:`_one` in a worker process: the Input without the analysis (only its figures
    travel back), or the error's message."""
    try:
        return attrs.evolve(_one(*task), analysis=None)
    except PtxforgeError as exc:
        return str(exc)


def fill_peak_lines(units: Sequence, wanted: Sequence, spec: Union[LaunchSpec, str, None] = None,
                    cu_flags: Sequence[str] = ()) -> tuple:
    """The :class:`Input` s with the peak lines of the figures in ``wanted`` computed (those
    :func:`collect` left out, ``reads`` without ``"peak_lines"``): from the analysis held, else
    (a worker's Input) from the file parsed again; ``spec`` and ``cu_flags`` are
    :func:`collect`'s (a ``.cu`` source is compiled again).  ``check --sarif`` lists the peak
    lines of the kernels that fail only, so only theirs are computed.

    Example::

        >>> units = collect(["build/"], reads=())                   # doctest: +SKIP
        >>> fill_peak_lines(units, [units[0].figures[0]])[0].figures[0].peak_lines  # doctest: +SKIP
        (('gemm.cu', 41, 8),)
    """
    want = {id(f) for f in wanted}
    out = []
    for u in units:
        todo = {f.name for f in u.figures if id(f) in want and "peak_lines" in f.unread}
        if not todo:
            out.append(u)
            continue
        pressure = _pressures(u, todo, launch_spec(spec), tuple(cu_flags))
        out.append(attrs.evolve(u, figures=tuple(
            with_peak_lines(f, pressure[f.name]) if f.name in todo else f for f in u.figures)))
    return tuple(out)


def _pressures(u: Input, names: set, spec: LaunchSpec, cu_flags: tuple) -> dict:
    """``{kernel: PressureReport}`` of the kernels ``names`` of one PTX (or ``.cu``) input."""
    if u.analysis is not None:
        return {k.name: k.pressure for k in u.analysis.kernels if k.name in names}
    from ptxforge.ptx.parse import parse
    from ptxforge.reports.kernel_pool import KernelPart

    data = _read(u.path)
    text = (compile_cuda(data, u.path, spec.target, cu_flags) if u.kind == "cu"
            else data.decode("utf-8", errors="replace"))
    module = parse(text, u.path)
    return {k.name: KernelPart(k, module.target).pressure for k in module.kernels if k.name in names}
