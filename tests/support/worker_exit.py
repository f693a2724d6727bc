"""An xdist worker ends without tearing its heap down, once its session has finished.

At the end of a run the controller waits for every worker process to exit, and a worker that
has run half the suite holds large session caches (parsed corpora, reference schedules,
hypothesis's engine, the tool memo): the interpreter's own finalization (clearing every module
and freeing every object) took about 2 s of wall time at the end of a run of four of the
heaviest files, after the last test had reported.  :func:`install` registers an exit handler,
in an xdist worker only, that flushes standard output and error and ends the process with
``os._exit`` once the worker's session has finished (:func:`finished`); the results, the
reports and every file a test wrote are with the controller or on disk by then.  It is
registered when tests/conftest.py is imported, before the tests run, so the exit handlers
registered later (by the tests and the libraries they import) still run before it (handlers
run last registered first).  A worker that did not reach the end of its session (a crash, an
interrupt) exits as Python would.  ``PTXFORGE_WORKER_EXIT=full`` keeps the full finalization.

Example::

    >>> import worker_exit
    >>> worker_exit.wanted({"PYTEST_XDIST_WORKER": "gw0"})
    True
    >>> worker_exit.wanted({"PYTEST_XDIST_WORKER": "gw0", "PTXFORGE_WORKER_EXIT": "full"})
    False
"""

from __future__ import annotations

import atexit
import os
import sys

__all__ = ["finished", "install", "wanted"]

_STATE = {"installed": False, "finished": False}


def wanted(environ=os.environ) -> bool:
    """Whether this process is an xdist worker that may skip its finalization."""
    return bool(environ.get("PYTEST_XDIST_WORKER")) and \
        environ.get("PTXFORGE_WORKER_EXIT", "") != "full"


def install() -> None:
    """Register the exit handler (once, and only where :func:`wanted`)."""
    if _STATE["installed"] or not wanted():
        return
    _STATE["installed"] = True
    pid = os.getpid()

    def _end() -> None:
        # only the worker itself (a forked child inherits the handler) and only after its
        # session finished
        if os.getpid() != pid or not _STATE["finished"]:
            return
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(0)

    atexit.register(_end)


def finished() -> None:
    """Mark the worker's session as finished (tests/conftest.py's ``pytest_sessionfinish``)."""
    _STATE["finished"] = True
