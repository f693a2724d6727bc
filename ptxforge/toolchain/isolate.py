"""Run compiles in child processes, so that a crash inside an in-process compiler (nvJitLink
is a native library) cannot take the caller's process down with it.

A :class:`WorkerPool` keeps a few ``python`` children alive; each answers one job at a time.
When a child dies (a signal, ``os._exit``), its job comes back as a :class:`Crash` and the
next job gets a fresh child; the other jobs are not disturbed.  Children start with
``sys.executable -c`` and load :mod:`ptxforge.toolchain._worker` by path (no ``multiprocessing``: that
would re-import the user's ``__main__`` script), so the nvJitLink fast path does not import
ptxforge at all; ``call`` jobs import what they name, with the parent's ``sys.path``.

Example::

    >>> from ptxforge.toolchain.isolate import WorkerPool
    >>> with WorkerPool(2) as pool:                                   # doctest: +SKIP
    ...     pool.map([("call", ("os", "getpid", ()))] * 2)
    [('ok', 4242), ('ok', 4243)]
"""

from __future__ import annotations

import atexit
import os
import pickle
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Optional

import attrs

from ptxforge.errors import BackendUnavailableError, CompileError, PtxforgeError

from ._worker import read_frame, write_frame

__all__ = ["Crash", "WorkerPool", "shared_pool", "shutdown_workers",
           "error_from_child"]

_WORKER_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_worker.py")
_BOOT = ("import importlib.util, sys\n"
         "sys.path[:] = {path!r}\n"
         "spec = importlib.util.spec_from_file_location('_ptxforge_worker', {file!r})\n"
         "mod = importlib.util.module_from_spec(spec)\n"
         "spec.loader.exec_module(mod)\n"
         "mod.serve()\n")


@attrs.frozen(slots=True, kw_only=True)
class Crash:
    """A child that died while it ran a job: ``signal`` (e.g. 11) or ``exit_code``."""

    exit_code: int
    stderr: str = ""

    @property
    def signal(self) -> Optional[int]:
        return -self.exit_code if self.exit_code < 0 else None

    def describe(self) -> str:
        """``"signal 11, SIGSEGV"`` or ``"exit code 3"``."""
        if self.signal is None:
            return f"exit code {self.exit_code}"
        try:
            name = signal.Signals(self.signal).name
        except ValueError:
            name = "unknown signal"
        return f"signal {self.signal}, {name}"


def error_from_child(info: dict) -> PtxforgeError:
    """The exception a child reported, rebuilt (ptxforge's own classes keep their kind)."""
    kind = info["type"].rsplit(".", 1)[-1]
    message = info["message"]
    if kind == "CompileError":
        return CompileError(message.split("\n--- ")[0], log=info["log"], backend=info["backend"])
    if kind == "BackendUnavailableError":
        return BackendUnavailableError(message)
    if info["type"].startswith("ptxforge.errors."):
        from ptxforge import errors
        cls = getattr(errors, kind, PtxforgeError)
        try:
            return cls(message)
        except TypeError:
            return PtxforgeError(message)
    return PtxforgeError(f"isolated compile: the child raised {info['type']}: {message}\n"
                         f"{info['trace'].rstrip()}")


class _Worker:
    """One child process and its pipes."""

    def __init__(self) -> None:
        self.err = tempfile.TemporaryFile()
        code = _BOOT.format(path=[p for p in sys.path if isinstance(p, str)], file=_WORKER_FILE)
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.err)
        except OSError as exc:
            self.err.close()
            raise BackendUnavailableError(
                f"isolated compile: cannot start a worker with {sys.executable!r} ({exc}); "
                "pass isolate=False to compile in this process") from exc

    def run(self, job):
        """The child's answer to ``job``, or a :class:`Crash`."""
        try:
            write_frame(self.proc.stdin, job)
            return pickle.loads(read_frame(self.proc.stdout))
        except (EOFError, BrokenPipeError, OSError):
            code = self.proc.wait()
            self.err.seek(0)
            tail = self.err.read()[-4000:].decode(errors="replace")
            self.close()
            return Crash(exit_code=code if code != 0 else 1, stderr=tail)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        try:
            if self.proc.stdin and not self.proc.stdin.closed:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        self.err.close()


class WorkerPool:
    """Up to ``workers`` child processes that answer jobs (see :mod:`ptxforge.toolchain._worker`).

    A job is ``("nvjitlink", (args, ptx_bytes))`` or ``("call", (module, qualname, args))``;
    its outcome is ``("ok", value)``, ``("raise", info)`` (an exception in the child, see
    :func:`error_from_child`) or a :class:`Crash`.
    """

    def __init__(self, workers: Optional[int] = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._idle: list = []
        self._lock = threading.Lock()

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                w = self._idle.pop()
                if w.alive:
                    return w
                w.close()
        return _Worker()

    def _give(self, w: _Worker) -> None:
        with self._lock:
            if w.alive and len(self._idle) < self.workers:
                self._idle.append(w)
                return
        w.close()

    def run(self, job):
        """One job's outcome."""
        w = self._take()
        out = w.run(job)
        if not isinstance(out, Crash):
            self._give(w)
        return out

    def map(self, jobs, workers: Optional[int] = None) -> list:
        """Outcomes of ``jobs`` in order, at most ``workers`` (default: the pool's) at once."""
        jobs = list(jobs)
        n = min(len(jobs), workers or self.workers)
        if n <= 1:
            return [self.run(j) for j in jobs]
        todo: queue.Queue = queue.Queue()
        for i, j in enumerate(jobs):
            todo.put((i, j))
        out: list = [None] * len(jobs)

        def drain() -> None:
            while True:
                try:
                    i, j = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    out[i] = self.run(j)
                except BaseException as exc:   # e.g. no worker could start
                    out[i] = exc

        threads = [threading.Thread(target=drain, daemon=True) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for o in out:
            if isinstance(o, BaseException):
                raise o
        return out

    def close(self) -> None:
        """Stop the idle children."""
        with self._lock:
            idle, self._idle = self._idle, []
        for w in idle:
            w.close()

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_SHARED: Optional[WorkerPool] = None
_SHARED_LOCK = threading.Lock()
_AT_EXIT: list = []


def shared_pool() -> WorkerPool:
    """The process-wide pool (``os.cpu_count()`` children, started on first use, stopped at
    exit or by :func:`shutdown_workers`)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = WorkerPool()
            if not _AT_EXIT:
                _AT_EXIT.append(atexit.register(shutdown_workers))
        return _SHARED


def shutdown_workers() -> None:
    """Stop the shared pool's idle children (a later isolated compile starts new ones)."""
    global _SHARED
    with _SHARED_LOCK:
        pool, _SHARED = _SHARED, None
    if pool is not None:
        pool.close()
