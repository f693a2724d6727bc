"""The compiled side of ``analyze``: ptxas in the background while the PTX is analysed, SASS gaps on demand.

:func:`start_compile` runs ptxas (and what only needs its result: the cubin's constant banks,
the relocatable notes) on a thread, so the Python analysis of the kernels goes on while the
compiler works; :meth:`CompiledSide.result` waits for it.  The explanation of each kernel's
gap from the SASS (:class:`SassGaps`) needs nvdisasm and a trace of the kernel: it is computed
when a kernel's ``gap`` is first asked for, once per kernel, with one nvdisasm run for the
module; ``prefetch=True`` starts that nvdisasm run as soon as the cubin exists (for callers
that will print every gap, e.g. the JSON report).

Example::

    >>> side = start_compile(".version 8.0\\n.target sm_80\\n.address_size 64\\n"
    ...                      ".visible .entry k() { ret; }", None, "sm_80", [])  # doctest: +SKIP
    >>> side.result().compiled.kernels[0].registers                              # doctest: +SKIP
    2
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Optional

import attrs

from ptxforge.errors import BackendUnavailableError, PtxforgeError

if TYPE_CHECKING:
    import concurrent.futures

    from ptxforge.ptx import ir
    from ptxforge.toolchain.compile import Compiled, CompileRequest

    from .gap import Gap
    from .sass_trace import PtxLines

__all__ = ["EarlyCompile", "FUNC_NOTE", "SUMMARY_ABOVE", "CompiledResult", "CompiledSide", "SassGaps",
           "early_compile", "function_build", "read_sass", "start_compile", "start_early"]


@attrs.frozen(slots=True, kw_only=True)
class CompiledResult:
    """What the compile gave: the build, the relocatable notes per kernel and (read from the
    cubin when first asked, :meth:`bank`) each function's constant bank 0."""

    compiled: Compiled
    mode_notes: dict
    sass: Optional[tuple] = None    # (SassLiveness or None, why not) when read at once
    _banks: list = attrs.field(factory=list, eq=False, repr=False)   # [{function: bank}]

    def bank(self, name: str) -> tuple:
        """``(cmem[0] bytes, parameter bytes)`` of function ``name`` from the cubin (``(None,
        None)`` when the cubin does not say); the cubin is read once, on the first call."""
        if not self._banks:
            self._banks.append(_constant_banks(self.compiled))
        return self._banks[0].get(name, (None, None))


class SassGaps:
    """Each entry's gap (REGCOUNT − estimate) explained from the SASS, on demand: nvdisasm
    runs once for the module when the first gap is asked for (or at once with
    ``prefetch``), each kernel is traced when its gap is asked for.  Thread-safe."""

    def __init__(self, compiled: Compiled, module: ir.Module, ptx: Optional[str],
                 entries: list, *, sass: Optional[tuple] = None,
                 liveness: Optional[dict] = None, pressures: Optional[dict] = None) -> None:
        self._compiled, self._module, self._ptx = compiled, module, ptx
        self._entries = {k.name: k for k in entries}
        self._known = (liveness or {}, pressures or {})   # what the analysis computed already
        self._lock = threading.Lock()
        self._sass = sass
        self._gaps: dict = {}      # name -> (Gap or None, why the trace failed or None)
        self._lines: Optional[PtxLines] = None

    def _liveness(self) -> tuple:
        with self._lock:
            if self._sass is None:
                self._sass = read_sass(self._compiled)
        return self._sass

    def note(self, name: str) -> Optional[str]:
        """Why entry ``name``'s notes are the PTX's guesses (the SASS could not be read or
        traced), or None."""
        if name not in self._entries or self._compiled.cubin is None:
            return None
        why = self._liveness()[1] or self._explain(name)[1]
        if why is None:
            return None
        return (f"These notes are guessed from the PTX, not measured on the SASS: {why}; "
                "`pip install nvidia-cuda-nvdisasm` for the SASS-derived reasons.")

    def gap(self, name: str) -> Optional[Gap]:
        """The gap of entry ``name`` explained from the SASS; None when it is not an entry
        of this analysis, the SASS could not be read, or the kernel has no gap."""
        if name not in self._entries or self._compiled.cubin is None:
            return None
        return self._explain(name)[0]

    def prefill(self, explained: dict) -> None:
        """Take ``{name: (Gap or None, why not)}`` computed elsewhere (worker processes)."""
        self._gaps.update(explained)

    def _text(self):
        with self._lock:
            if self._lines is None:
                from .sass_trace import PtxLines

                text = self._ptx
                if text is None:
                    from ptxforge.ptx.emit import emit
                    text = emit(self._module, line_info=True)
                self._lines = PtxLines(text)
        return self._lines

    def _explain(self, name: str) -> tuple:
        if name in self._gaps:
            return self._gaps[name]
        sass, why = self._liveness()
        gap = None
        if sass is not None:
            from .sass import kernel_reports

            lines = self._text()
            try:
                rep = kernel_reports(self._compiled, sass, self._module, lines.text,
                                     [self._entries[name]], lines=lines,
                                     liveness=self._known[0], pressures=self._known[1])[0]
                gap = rep.gap
            except PtxforgeError as exc:
                why = f"the SASS could not be read ({str(exc).splitlines()[0]})"
        self._gaps[name] = (gap, why)
        return gap, why


class CompiledSide:
    """The compile running in the background (see the module docstring)."""

    def __init__(self, future: concurrent.futures.Future,
                 pool: concurrent.futures.ThreadPoolExecutor, prefetch: bool,
                 compiler_ended: threading.Event, launched: threading.Event) -> None:
        self._future, self._pool, self._prefetch = future, pool, prefetch
        self._compiler_ended, self._launched = compiler_ended, launched   # set by _build

    def result(self) -> CompiledResult:
        """Wait for the compile; its errors (CompileError with ptxas's log, …) raise here.
        While a compile that reads the SASS at once still runs, the modules that explain the
        gaps are imported first (the wait would otherwise idle)."""
        if self._prefetch and not self._future.done():
            for name in _SASS_READERS:
                importlib.import_module(name)
        try:
            return self._future.result()
        finally:
            self._pool.shutdown(wait=False)

    def wait_for_launch(self) -> None:
        """Wait until the compiler process has started, or the compile is over (failed
        included: :meth:`result` has the error)."""
        self._launched.wait()

    def wait_for_compiler(self) -> None:
        """Wait until the compiler itself has ended: ptxas has written the cubin (what is read
        from it after may still run) or the compile is over, failed included (:meth:`result`
        has the error)."""
        self._compiler_ended.wait()

    def gaps(self, module: ir.Module, ptx: Optional[str], entries: list, **known) -> SassGaps:
        """The :class:`SassGaps` of this build (``known``: the ``liveness`` and ``pressures``
        dicts the analysis computed already)."""
        res = self.result()
        return SassGaps(res.compiled, module, ptx, entries, sass=res.sass, **known)


#: What explaining the gaps from the SASS imports (SassGaps, the report's display names).
_SASS_READERS = ("ptxforge.ptx.itanium", "ptxforge.reports.sass", "ptxforge.reports.gap",
                 "ptxforge.reports.sass_explain", "ptxforge.reports.sass_trace")


def read_sass(compiled, started=None) -> tuple:
    """``(SassLiveness, None)`` of a build's cubin, or ``(None, why it could not be read)``;
    ``started``: nvdisasm's life-range listing already running on it (see :func:`_build`)."""
    from ptxforge.toolchain.sass import sass_liveness

    try:
        return sass_liveness(compiled, started=started), None
    except BackendUnavailableError as exc:
        return None, f"nvdisasm is unavailable ({str(exc).splitlines()[0]})"
    except PtxforgeError as exc:
        return None, f"the SASS could not be read ({str(exc).splitlines()[0]})"
    finally:
        if started is not None:     # read, or not wanted after an error: its files go
            started.discard()


def _constant_banks(compiled) -> dict:
    """``{function: (bytes of constant bank 0, parameter bytes)}`` from the cubin (the log
    omits ``cmem[0]`` on sm_90 and newer, and never gives the parameter bytes)."""
    try:
        info = compiled.cubin_info()
    except PtxforgeError:
        return {}
    return {} if info is None else {k.name: (k.constant0, k.param_bytes) for k in info.kernels}


def _build(request: CompileRequest, source, tgt: str, options, prefetch,
           ended: threading.Event, launched: threading.Event, after=None) -> CompiledResult:
    """The compile on its thread; ``prefetch`` (a bool, or a function asked once when the cubin
    exists) says whether to read the SASS at once; ``ended`` is set when ptxas has written
    the cubin, ``launched`` when the ptxas process has started, each also when the compile is
    over; ``after()``, when given, is waited for just before ptxas starts."""
    try:
        return _build_and_read(request, source, tgt, options, prefetch, ended, launched, after)
    finally:
        launched.set()
        ended.set()


def _build_and_read(request: CompileRequest, source, tgt: str, options, prefetch,
                    ended: threading.Event, launched: threading.Event,
                    after=None) -> CompiledResult:
    from ptxforge.toolchain.modes import relocatable_notes
    from ptxforge.toolchain.ptxas_run import when_cubin_written

    if not prefetch:
        with when_cubin_written(lambda path: ended.set(), launched.set, after):
            compiled = request.compile(source, tgt, options)
        sass = None
    else:   # nvdisasm starts the moment ptxas has written the cubin, not after its log is read
        from ptxforge.toolchain.nvdisasm import start

        decided: list = []
        started: list = []

        def wanted() -> bool:
            if not decided:
                decided.append(bool(prefetch()) if callable(prefetch) else True)
            return decided[0]

        def written(path: str) -> None:
            if wanted():
                started.append(start(None, path))
            ended.set()

        try:
            with when_cubin_written(written, launched.set, after):
                compiled = request.compile(source, tgt, options)
        except BaseException:
            _discard(started)
            raise
        # the last cubin written is the build's (a retry in relocatable mode writes a second)
        _discard(started[:-1])
        early = started[-1] if started else None
        sass = read_sass(compiled, early) if compiled.cubin is not None and wanted() else None
    notes = relocatable_notes(compiled, source, tgt) if compiled.mode == "relocatable" else {}
    return CompiledResult(compiled=compiled, mode_notes=notes, sass=sass)


def start_compile(source, request: Optional[CompileRequest], tgt: str, chosen: list,
                  module: Optional[ir.Module] = None, *, prefetch: bool = False
                  ) -> CompiledSide:
    """Start compiling ``source`` (PTX text or the module) for ``tgt`` with line info, as
    ``request`` says (default: the default :class:`~ptxforge.toolchain.compile.
    CompileRequest`), for the ``chosen`` kernels of ``module``; return at once.
    ``prefetch=True`` also reads the SASS (nvdisasm) as soon as the cubin exists, for a
    caller that will ask for every gap."""
    from ptxforge.toolchain.modes import prune_to

    return _start(source, request, tgt, prefetch and any(k.is_entry for k in chosen),
                  lambda options: prune_to(options, chosen, module))


def _discard(started: list) -> None:
    for run in started:
        if run is not None:
            run.discard()


def _start(source, request: Optional[CompileRequest], tgt: str, prefetch,
           prune=lambda options: options, after=None) -> CompiledSide:
    """The compile of :func:`start_compile` and :func:`start_early` on its thread
    (``prefetch`` and ``after``: see :func:`_build`)."""
    from ptxforge.toolchain.compile import CompileRequest

    request = request or CompileRequest()
    # line info for the SASS trace: it does not change the code (tests/reports/
    # test_analyze_gap.py checks every corpus kernel's SASS and registers)
    options = attrs.evolve(prune(request.options), line_info=True)
    import concurrent.futures  # not at import: analyze --no-compile reads SUMMARY_ABOVE here

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    ended, launched = threading.Event(), threading.Event()
    return CompiledSide(pool.submit(_build, request, source, tgt, options, prefetch, ended,
                                    launched, after), pool, bool(prefetch), ended, launched)


#: Above this many kernels ``analyze`` prints the summary table only (``--full`` for all), so
#: it reads no SASS at once.
SUMMARY_ABOVE = 20

#: PTX up to this size starts compiling before it is parsed (see :func:`start_early`): a file
#: this small never needs the kernel pool, which must fork before ptxas's thread starts.  A
#: bigger one does too where no pool can be made (``--jobs 1``, or no ``fork``).
EARLY_BYTES = 256 * 1024


@attrs.frozen(slots=True, eq=False, kw_only=True)
class EarlyCompile:
    """ptxas started by :func:`start_early` on ``text`` for ``target``, as ``request`` asked."""

    side: CompiledSide
    target: str
    text: str
    request: Optional["CompileRequest"]

    def serves(self, text: str, request: Optional["CompileRequest"]) -> bool:
        """Whether this compile is the one :func:`analyze_ptx` would start for ``text``."""
        return self.request is request and self.text == text


def start_early(text: str, target, request: Optional[CompileRequest], explain: Optional[bool],
                jobs: Optional[int] = None, after=None) -> Optional[EarlyCompile]:
    """ptxas started on the whole of ``text`` before it is parsed, the way
    :func:`start_compile` would start it after (every kernel chosen: the options are the
    request's as given), so the parse and the analysis run beside it; None for a text over
    :data:`EARLY_BYTES` that the kernel pool may analyse (``jobs``, None: the cores, above 1
    and ``fork`` available).  ``target`` is the launch spec's (None: the PTX's ``.target``).
    The CLI calls it before it imports the analysis and hands it over in
    :class:`~ptxforge.reports.run_options.RunOptions` ``started``.  ``after()``, when given,
    is waited for just before the ptxas process starts (everything before it done):
    ``check --jobs 1`` passes the previous file's :meth:`CompiledSide.wait_for_compiler`."""
    import re

    from ptxforge.arch.targets import resolve_target

    if len(text) > EARLY_BYTES and _pool_possible(jobs):
        return None
    declared = re.search(r"^\s*\.target\s+(\w+)", text, re.M)
    tgt = resolve_target(target, declared.group(1) if declared else None)[0]
    entries = len(re.findall(r"\.entry\s", text))
    if explain is None:
        explain = entries <= SUMMARY_ABOVE
    return EarlyCompile(side=_start(text, request, tgt, bool(explain and entries), after=after),
                        target=tgt, text=text, request=request)


def early_compile(text: str, target, request: Optional[CompileRequest], run
                  ) -> Optional[EarlyCompile]:
    """The early compile of ``text``: the one ``run.started`` holds when it serves this text
    and request (started by the CLI), else a new :func:`start_early`."""
    started = run.started
    if started is not None and started.serves(text, request):
        return started
    return start_early(text, target, request, run.explain, run.jobs)


def _pool_possible(jobs: Optional[int]) -> bool:
    """Whether the kernel pool may fork workers for ``jobs`` (None: the cores less the one ptxas
    runs on, :func:`~ptxforge._parallel.kernel_jobs`)."""
    from ptxforge._parallel import can_fork, kernel_jobs

    return kernel_jobs(jobs, True) > 1 and can_fork()


FUNC_NOTE = ("figures of the relocatable build, where a .func keeps its own code; "
              "whole-program ptxas folds it into the kernels that call it")


def function_build(compiled, source, tgt):
    """The build that has a ``.func``'s own figures (:data:`FUNC_NOTE` says what they are): ``compiled`` itself when relocatable,
    else a relocatable, linked build (nvJitLink; ptxas -c when nvJitLink refuses the target)."""
    if compiled.mode == "relocatable" or compiled.backend == "driver":
        return compiled
    from ptxforge.toolchain.compile import compile_ptx

    opts = attrs.evolve(compiled.options, relocatable=True, entries=())
    try:
        return compile_ptx(source, tgt, backend="nvjitlink", options=opts, isolate=True)
    except PtxforgeError:
        return compile_ptx(source, tgt, backend=compiled.backend, options=opts)
