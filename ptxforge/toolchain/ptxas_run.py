"""One ptxas process: its output in files, and the hooks that fire when it has started and when
it has written the cubin.

:func:`when_cubin_written` lets ``analyze`` start nvdisasm the moment ptxas has written the
cubin (before its log is read) and let the analysis go on once the process has begun;
:func:`run_to_files` runs the command and fires the start hook; the backend fires the cubin
hook (:func:`announce_cubin`), also for a result the result cache answers, as a run would.

Example::

    >>> import sys, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     run_to_files([sys.executable, "-c", "print('ok')"], folder)
    (0, 'ok\\n')
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading

__all__ = ["announce_cubin", "announce_started", "run_to_files", "when_cubin_written"]

_HOOKS = threading.local()


@contextlib.contextmanager
def when_cubin_written(callback, started=None, gate=None):
    """Within this block, on this thread, ``callback(path)`` runs the moment a ptxas executable
    has written a cubin at ``path``, before anything else reads it (the file is removed once
    the compile returns: a callback that wants it later links or copies it).  ``analyze``
    starts nvdisasm there, so nothing of the compile's own work delays it.  ``started()``,
    when given, runs the moment the ptxas process has started (``analyze`` lets the
    analysis go on from there: until then it would only slow the compile's start).
    ``gate()``, when given, runs just before the ptxas process starts, everything else of
    the compile done (``check --jobs 1`` waits there for the previous file's ptxas to end,
    so the next one starts the moment it does).

    Example::

        >>> with when_cubin_written(print):                               # doctest: +SKIP
        ...     PtxasBackend().compile(ptx, "sm_80", CompileOptions())
        /tmp/ptxforge-x1y2/kernel.cubin
    """
    before = (getattr(_HOOKS, "callback", None), getattr(_HOOKS, "started", None),
              getattr(_HOOKS, "gate", None))
    _HOOKS.callback, _HOOKS.started, _HOOKS.gate = callback, started, gate
    try:
        yield
    finally:
        _HOOKS.callback, _HOOKS.started, _HOOKS.gate = before


def announce_started() -> None:
    """Fire this thread's start hook (a ptxas process has begun, or the cache answered)."""
    started = getattr(_HOOKS, "started", None)
    if started is not None:
        started()


def announce_cubin(path: str) -> None:
    """Fire this thread's cubin hook for the cubin at ``path``."""
    written = getattr(_HOOKS, "callback", None)
    if written is not None:
        written(path)


def run_to_files(cmd: list, folder: str) -> tuple:
    """Run ``cmd`` with its output in files under ``folder``: ``(exit status, stdout then
    stderr)``; the gate hook runs just before the process starts, the start hook once it
    has begun.  Files, not pipes: the
    waiting thread sleeps in one ``waitpid`` and wants the interpreter's lock once, where
    reading pipes wakes it (and waits for the lock, held by the analysis running beside the
    compile) at every chunk of ptxas's log."""
    out_path, err_path = os.path.join(folder, "ptxas.out"), os.path.join(folder, "ptxas.err")
    gate = getattr(_HOOKS, "gate", None)
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        if gate is not None:
            gate()
        # close_fds=False lets subprocess start the tool with posix_spawn (its path given)
        # instead of fork, whose start lets go of the interpreter's lock and takes it back
        # several times, each time waiting for the analysis thread beside it: 7 ms a process
        # against 0.6 ms with a busy thread at Python's default switch interval, paid between
        # one ptxas and the next in ``check`` over a folder and before nvdisasm in
        # ``analyze``.  Nothing leaks: Python opens its files non-inheritable.
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                close_fds=False)
        try:
            announce_started()
            returncode = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    with open(out_path, "rb") as out, open(err_path, "rb") as err:
        text = (out.read() + err.read()).decode("utf-8", errors="replace")
    return returncode, text
