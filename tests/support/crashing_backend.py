"""Test-only entry points for :mod:`ptxforge.toolchain.isolate`: a child that really dies.

The worker children import this module by name (they get the parent's ``sys.path``).
"""

from __future__ import annotations

import os
import resource
import signal

from ptxforge.toolchain.backends import Backend, NvJitLinkBackend

__all__ = ["segfault", "exit_with", "CrashAtCap"]


def _no_core() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))


def segfault() -> None:
    """Kill the calling process with SIGSEGV."""
    _no_core()
    os.kill(os.getpid(), signal.SIGSEGV)


def exit_with(code: int) -> None:
    """End the calling process at once with ``code`` (no cleanup, like a native abort)."""
    os._exit(code)


class CrashAtCap(NvJitLinkBackend):
    """nvJitLink, except that a compile at ``max_registers <= crash_at`` kills its process
    with SIGSEGV.  Isolated compiles go through the generic ``call`` job, so the child runs
    :meth:`compile` itself."""

    def __init__(self, crash_at: int) -> None:
        self.crash_at = crash_at

    def compile(self, ptx, target, options):
        if options.max_registers is not None and options.max_registers <= self.crash_at:
            segfault()
        return super().compile(ptx, target, options)

    isolated_job = Backend.isolated_job
    finish = Backend.finish
