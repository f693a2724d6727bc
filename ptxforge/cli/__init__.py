"""The ``ptxforge`` command: a thin layer over :mod:`ptxforge.reports.analyze` and friends.

One module per command (``ptxforge COMMAND --help`` for the options, ``docs/cli.md`` for
the output)::

    ptxforge analyze FILE.ptx|FILE.cubin [--arch ARCH] [--kernel NAME] [--block N]
                              [--smem BYTES] [--no-compile] [--json] [--top N]
                              [--by line|function|callsite]
    ptxforge compare A.ptx B.ptx [--arch] [--block] [--smem] [--kernel] [--pair A=B]
                              [--kernel-a NAME --kernel-b NAME] [--no-compile] [--json] [--top N]
    ptxforge sweep FILE.ptx [--caps 255,128,64] [--arch] [--block] [--smem] [--kernel] [--json]
    ptxforge occupancy --arch sm_86 --regs 51 --block 256 [--smem BYTES] [--json]
    ptxforge sass FILE.ptx|FILE.cubin [--arch sm_80] [--kernel NAME] [--json] [--top N]
    ptxforge report FILE.ptx|FILE.cubin|FILE.py -o report.html [--sweep] [--spill-budget B]
    ptxforge check FILE|DIR... [--max-registers N] [--no-spills] [--max-stack B]
                              [--min-occupancy X --block N] [--budget ptxforge.toml]
                              [--sarif OUT] [--junit OUT] [--triton-cache [DIR]]
                              (exit 0 every budget holds, 1 a violation or bad input, 2 usage)
    ptxforge diff OLD NEW [--all] [--markdown] [--json]   (files, folders or Triton caches)
    ptxforge advise FILE.ptx [--kernel NAME] [--spill-budget B] [--json]
    ptxforge memory FILE.ptx|FILE.cu [--kernel NAME] [--block 256|32,8] [--param N=V] [--json]
    ptxforge tune FILE.cu -D NAME=V1,V2,... [-D ...] [--arch] [--block] [--json] [-- NVRTC flags]
    ptxforge profile FILE.ptx|FILE.cu [--kernel NAME] --grid G --block B --arg NAME=VALUE
                              --arg NAME=TYPE[N] ... [--races] [--json]   (on the interpreter)

``--arch`` defaults to the PTX's ``.target``, ``--block`` to the kernel's ``.reqntid`` /
``.maxntid`` (else 256).  ``-`` as a file reads standard input.  Exit status, the same in
every command (:data:`EPILOG`): 0 success, 1 the input could not be read, parsed, compiled or
analysed (a missing file, an unknown kernel; for check also a budget that fails), 2 usage
error (bad option or value, unknown architecture, options that do not go together).  Errors are one message on standard error,
never a traceback.

Example::

    >>> main(["occupancy", "--arch", "sm_86", "--regs", "51", "--block", "256"])  # doctest: +SKIP
    0
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Sequence

from ptxforge.analysis.gc_pause import gc_paused
from ptxforge.cli import (
    advise,
    analyze,
    check,
    compare,
    diff,
    memory,
    occupancy,
    profile,
    report,
    sass,
    sweep,
    tune,
)
from ptxforge.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, PROG, UsageError, message
from ptxforge.errors import PtxforgeError

__all__ = ["EPILOG", "EXIT_FAILURE", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]

#: The exit-status contract of every command (the top-level ``--help`` prints it).
EPILOG = ("exit status, the same in every command: 0 success; 1 an input that is missing, "
          "unreadable, malformed or does not compile (a missing file is 1 in every command), "
          "an unknown kernel, or for check a budget that fails; 2 usage: a bad option or "
          "value, or options that do not go together (printed with the command's usage)")

#: The commands that read ``.cu`` sources (compiled with NVRTC; flags after ``--``).
_CU_COMMANDS = ("analyze", "compare", "sweep", "sass", "check", "diff", "report", "tune",
                "advise", "profile", "memory")

# The commands, in the order ``--help`` lists them: each module has ``add(sub)`` and ``run(args)``.
_COMMANDS = {"analyze": analyze, "compare": compare, "sweep": sweep, "occupancy": occupancy,
             "sass": sass, "check": check, "diff": diff, "report": report, "advise": advise,
             "tune": tune, "profile": profile, "memory": memory}


#: The interpreter's thread switch interval while a command runs (Python's default: 5 ms).
#: The thread that drives ptxas and nvdisasm takes the interpreter's lock for a few short
#: steps between one process's end and the next one's start (waking from the wait, reading
#: the log, writing the next PTX, starting the process), each time waiting for the analysis
#: thread to let go of it: with a busy thread beside, a process's wake-up took about 4 ms
#: more and its start (fork) 7 ms against 0.4 ms at this interval, paid per file by
#: ``check --jobs 1`` over a folder, and before nvdisasm in ``analyze``.
_SWITCH_INTERVAL = 0.0005


def _run(args) -> int:
    """The command, with the cyclic collector off while it runs: it would only walk the IR the
    command built (about 5% of analyze on an 840-kernel file); reference counting still frees
    memory, and the collector is on again afterwards (main() is also called in-process).  The
    thread switch interval is ``_SWITCH_INTERVAL`` meanwhile, and as it was afterwards."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, _SWITCH_INTERVAL))
    try:
        with gc_paused():
            return _COMMANDS[args.command].run(args)
    finally:
        sys.setswitchinterval(before)


def _parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The command's parser and each command's own (by name: its usage for a UsageError)."""
    p = argparse.ArgumentParser(
        prog=PROG, description="Analyse the register pressure of PTX kernels.",
        epilog=EPILOG)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _COMMANDS.values():
        module.add(sub)
    return p, sub.choices


@functools.cache
def _shared_parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """:func:`_parsers`, built once per process: main() called in-process many times (a
    build script, the tests) would otherwise pay about 10 ms rebuilding the same parsers.
    Parsing does not change a parser (``append`` options copy their default list)."""
    return _parsers()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ptxforge`` command (a new one, the caller's to change)."""
    return _parsers()[0]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ptxforge`` command with ``argv`` (default ``sys.argv[1:]``); the exit status.

    Example::

        >>> main(["occupancy", "--regs", "32", "--block", "128", "--json"])  # doctest: +SKIP
        0
    """
    parser, commands = _shared_parsers()
    argv = list(sys.argv[1:] if argv is None else argv)
    # what follows `--` goes to NVRTC for .cu inputs (-D, -I, -std, ...), not to argparse
    cut = argv.index("--") if "--" in argv else len(argv)
    argv, cu_flags = argv[:cut], tuple(argv[cut + 1:])
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors (2), --help (0)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    args.cu_flags = cu_flags
    try:
        if cu_flags and args.command not in _CU_COMMANDS:
            raise UsageError(f"flags after '--' go to NVRTC for .cu inputs; {args.command} "
                             "reads no .cu")
        return _run(args)
    except UsageError as exc:  # argparse's format: the command's usage, then the message
        sub = commands[args.command]
        sys.stderr.write(sub.format_usage() + f"{sub.prog}: error: {exc}\n")
        return EXIT_USAGE
    except PtxforgeError as exc:
        sys.stderr.write(f"{PROG}: error: {message(exc)}\n")
        return EXIT_FAILURE
    except BrokenPipeError:  # output piped into head & co.: stop quietly
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):  # pragma: no cover - no real stdout
            pass
        return EXIT_OK
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except Exception as exc:  # never a traceback for the user; the debug switch shows it
        if os.environ.get("PTXFORGE_DEBUG"):
            raise
        sys.stderr.write(f"{PROG}: internal error: {type(exc).__name__}: {exc} "
                         "(set PTXFORGE_DEBUG=1 for the traceback and please report it)\n")
        return EXIT_FAILURE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
