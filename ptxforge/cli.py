"""The ``ptxforge`` command: a thin layer over :mod:`ptxforge.reports.analyze` and friends.

Commands (``ptxforge COMMAND --help`` for the options; ``docs/cli.md`` for the output)::

    ptxforge analyze FILE.ptx|FILE.cubin [--arch ARCH] [--kernel NAME] [--block N]
                              [--smem BYTES] [--no-compile] [--json] [--top N]
                              [--by line|function|callsite]
    ptxforge compare A.ptx B.ptx [--arch] [--block] [--smem] [--kernel] [--pair A=B]
                              [--kernel-a NAME --kernel-b NAME] [--no-compile] [--json] [--top N]
    ptxforge sweep FILE.ptx [--caps 255,128,64] [--arch] [--block] [--smem] [--kernel] [--json]
    ptxforge occupancy --arch sm_86 --regs 51 --block 256 [--smem BYTES] [--json]
    ptxforge sass FILE.ptx|FILE.cubin [--arch sm_80] [--kernel NAME] [--json] [--top N]

``--arch`` defaults to the PTX's ``.target``, ``--block`` to the kernel's ``.reqntid`` /
``.maxntid`` (else 256).  ``-`` as a file reads standard input.  Exit status: 0 success, 1
the input could not be read, parsed, compiled or analysed (unknown kernel included), 2 usage
error (bad option or value, unknown architecture).  Errors are one message on standard error,
never a traceback.

Example::

    >>> main(["occupancy", "--arch", "sm_86", "--regs", "51", "--block", "256"])  # doctest: +SKIP
    0
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Optional, Sequence

from ptxforge.errors import PtxforgeError

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_FAILURE", "EXIT_USAGE"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
PROG = "ptxforge"


class _InputError(PtxforgeError):
    """A file could not be read."""


class _UsageError(PtxforgeError):
    """Arguments that parse but cannot be used together (exit 2)."""


# --- argument types (the library validates; argparse turns its errors into usage errors) ---

def _arch(compile: bool):
    def convert(text: str) -> str:
        from ptxforge.reports.analyze import check_target

        try:
            return check_target(text, compile=compile)
        except PtxforgeError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = "architecture"
    return convert


def _int_range(lo: int, hi: Optional[int], what: str):
    def convert(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer {what}, got {text!r}") from None
        if value < lo or (hi is not None and value > hi):
            bound = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise argparse.ArgumentTypeError(f"{what} must be {bound}, got {value}")
        return value
    convert.__name__ = what
    return convert


def _caps(text: str) -> tuple:
    from ptxforge.toolchain.compile import CompileOptions

    caps = []
    for part in text.replace(" ", ",").split(","):
        if not part:
            continue
        try:
            cap = int(part, 0)
            CompileOptions(max_registers=cap)  # the library's range check (16..255)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected integers such as 255,128,64, "
                                             f"got {part!r}") from None
        except PtxforgeError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        caps.append(cap)
    if not caps:
        raise argparse.ArgumentTypeError("expected at least one register cap, e.g. 128,64")
    return tuple(caps)


def _pair(text: str) -> tuple:
    a, sep, b = text.partition("=")
    if not sep or not a.strip() or not b.strip():
        raise argparse.ArgumentTypeError(f"expected KERNEL_A=KERNEL_B, got {text!r}")
    return a.strip(), b.strip()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ptxforge`` command."""
    p = argparse.ArgumentParser(
        prog=PROG, description="Analyse the register pressure of PTX kernels.",
        epilog="exit status: 0 success, 1 analysis or compile failure, 2 usage error")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def common(sp, compile_arch: bool = True, kernel: bool = True, ptx: bool = True):
        if ptx:
            sp.add_argument("--arch", default=None, type=_arch(compile_arch),
                            help="target architecture (default: the PTX's .target when "
                                 "ptxforge knows it, else sm_80)")
            sp.add_argument("--block", default=None, type=_int_range(1, 1024, "block size"),
                            help="threads per block for occupancy (default: the kernel's "
                                 ".reqntid/.maxntid, else 256)")
            sp.add_argument("--smem", default=0, metavar="BYTES",
                            type=_int_range(0, None, "shared memory size"),
                            help="dynamic shared memory per block in bytes, added to the "
                                 "kernel's static shared memory for occupancy (default 0)")
        else:
            sp.add_argument("--arch", default="sm_80", type=_arch(compile_arch),
                            help="target architecture (default sm_80)")
            sp.add_argument("--block", default=256, type=_int_range(1, 1024, "block size"),
                            help="threads per block (default 256)")
        if kernel:
            sp.add_argument("--kernel", metavar="NAME",
                            help="analyse only this kernel (default: every .entry)")
        sp.add_argument("--json", action="store_true", help="machine-readable JSON output")

    top = _int_range(0, None, "count")
    a = sub.add_parser("analyze", help="per-kernel registers, instruction mix, pressure peak, "
                                       "ptxas figures and occupancy",
                       description="Analyse every kernel of a PTX file ('-' reads stdin).")
    a.add_argument("file", metavar="FILE.ptx|FILE.cubin")
    common(a)
    a.add_argument("--no-compile", action="store_true",
                   help="skip ptxas; occupancy uses the liveness estimate")
    a.add_argument("--top", default=10, type=top,
                   help="values, source lines and opcodes listed per kernel (default 10, 0: all)")
    a.add_argument("--by", default="line", choices=("line", "function", "callsite"),
                   help="group the values live at the peak by defining source line, by "
                        "(inlined) function, or by the kernel's own line the inlined code was "
                        "called from (default line)")

    c = sub.add_parser("compare", help="two variants side by side with deltas",
                       description="Compare two PTX files kernel by kernel (matched by name; "
                                   "two single-kernel files pair their kernels).")
    c.add_argument("file_a", metavar="A.ptx")
    c.add_argument("file_b", metavar="B.ptx")
    common(c)
    c.add_argument("--no-compile", action="store_true", help="skip ptxas")
    c.add_argument("--pair", action="append", default=[], metavar="A=B", type=_pair,
                   help="compare kernel A of A.ptx with kernel B of B.ptx (repeatable); "
                        "default: kernels with the same name")
    c.add_argument("--kernel-a", metavar="NAME", help="with --kernel-b: one pair, as --pair")
    c.add_argument("--kernel-b", metavar="NAME", help="with --kernel-a: one pair, as --pair")
    c.add_argument("--top", default=10, type=top,
                   help="changed opcodes listed per kernel (default 10, 0: all)")

    s = sub.add_parser("sweep", help="compile at several register caps",
                       description="Compile each kernel uncapped and at each --maxrregcount cap.")
    s.add_argument("file", metavar="FILE.ptx")
    common(s)
    s.add_argument("--caps", type=_caps, default=None,
                   help="comma-separated caps added to the default ones (the occupancy "
                        "cliffs down to 24), e.g. 100,56")
    s.add_argument("--only-caps", action="store_true",
                   help="sweep only the --caps named, not the occupancy cliffs")
    s.add_argument("--top", default=10, type=top, help=argparse.SUPPRESS)

    o = sub.add_parser("occupancy", help="blocks/SM, occupancy, limiter and register cliffs",
                       description="Occupancy for a register count and block size.")
    common(o, compile_arch=False, kernel=False, ptx=False)
    o.add_argument("--regs", required=True, type=_int_range(0, 255, "register count"),
                   help="registers per thread")
    o.add_argument("--smem", default=0, type=_int_range(0, None, "shared memory size"),
                   help="shared memory per block in bytes (default 0)")

    g = sub.add_parser("sass", help="estimate vs SASS peak live registers (nvdisasm) vs "
                                    "ptxas's REGCOUNT",
                       description="Compile with line info, read the physical register "
                                   "liveness of the SASS with nvdisasm, and set it beside the "
                                   "PTX estimate and REGCOUNT. A .cubin is read as it is.")
    g.add_argument("file", metavar="FILE")
    g.add_argument("--arch", default=None, type=_arch(True),
                   help="target architecture for PTX input (default: the PTX's .target, "
                        "else sm_80)")
    g.add_argument("--kernel", metavar="NAME",
                   help="report only this kernel (default: every .entry)")
    g.add_argument("--json", action="store_true", help="machine-readable JSON output")
    g.add_argument("--top", default=10, type=top,
                   help="peak SASS instructions listed per kernel (default 10, 0: all)")
    return p


# --- commands -------------------------------------------------------------------------------

def _read(path: str) -> tuple:
    """(bytes, display name) of a file, or of standard input for ``-``."""
    if path == "-":
        return sys.stdin.buffer.read(), "<stdin>"
    try:
        with open(path, "rb") as fh:
            return fh.read(), path
    except OSError as exc:
        raise _InputError(f"cannot read {path!r}: {exc.strerror or exc}") from None


def _emit(args, obj, text_fn) -> None:
    if args.json:
        sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(text_fn())


def _analyze(args) -> int:
    from ptxforge.reports.analyze import analyze_ptx

    data, name = _read(args.file)
    if data[:4] == b"\x7fELF":
        from ptxforge.reports.cubin import analyze_cubin

        if args.no_compile or args.by != "line":
            raise _UsageError("analyze: --no-compile and --by apply to PTX, not to a cubin")
        res = analyze_cubin(data, name, args.arch, args.block, kernel=args.kernel,
                            dynamic_shared=args.smem)
        _emit(args, res.to_dict() if args.json else None, res.to_text)
        return EXIT_OK
    res = analyze_ptx(data, name, args.arch, args.block, not args.no_compile, kernel=args.kernel,
                      dynamic_shared=args.smem)
    _emit(args, res.to_dict(args.top) if args.json else None,
          lambda: res.to_text(args.top, args.by))
    return EXIT_OK


def _pairs(args) -> list:
    pairs = list(args.pair)
    if (args.kernel_a is None) != (args.kernel_b is None):
        raise _UsageError("compare: --kernel-a and --kernel-b go together (or use --pair A=B)")
    if args.kernel_a is not None:
        pairs.append((args.kernel_a, args.kernel_b))
    if pairs and args.kernel:
        raise _UsageError("compare: --kernel selects by a common name; with --pair or "
                          "--kernel-a/--kernel-b name the kernels of each side there")
    return pairs


def _compare(args) -> int:
    from ptxforge.reports.analyze import analyze_ptx
    from ptxforge.reports.variants import compare_variants

    if args.file_a == "-" and args.file_b == "-":
        raise _UsageError("compare: only one of A and B can be '-' (standard input can be "
                          "read once)")
    pairs = _pairs(args)
    sides = []
    for i, path in enumerate((args.file_a, args.file_b)):
        data, name = _read(path)
        if data[:4] == b"\x7fELF":
            raise _InputError(f"{name} is a cubin: compare reads PTX (analyze reads a cubin)")
        wanted = [p[i] for p in pairs] if pairs else args.kernel
        sides.append(analyze_ptx(data, name, args.arch, args.block, not args.no_compile,
                                 kernel=wanted, dynamic_shared=args.smem))
    res = compare_variants(*sides, pairs=pairs or None)
    _emit(args, res.to_dict(args.top) if args.json else None, lambda: res.to_text(args.top))
    return EXIT_OK


def _sweep(args) -> int:
    from ptxforge.reports.occupancy_sweep import sweep_report

    if args.only_caps and not args.caps:
        raise _UsageError("sweep: --only-caps needs --caps")
    data, name = _read(args.file)
    if data[:4] == b"\x7fELF":
        raise _InputError(f"{name} is a cubin: sweep recompiles the PTX at each cap; pass the "
                          "PTX (analyze reads a cubin)")
    res = sweep_report(data, name, args.arch, args.block, args.caps, args.kernel,
                       only_caps=args.only_caps, dynamic_shared=args.smem)
    _emit(args, res.to_dict(args.top) if args.json else None, res.to_text)
    return EXIT_OK


def _occupancy(args) -> int:
    from ptxforge.reports.occupancy_sweep import occupancy_report

    res = occupancy_report(args.arch, args.regs, args.block, args.smem)
    _emit(args, res.to_dict() if args.json else None, res.to_text)
    return EXIT_OK


def _sass(args) -> int:
    from ptxforge.reports.sass import sass_report

    data, name = _read(args.file)
    if data[:4] != b"\x7fELF":
        data = data.decode("utf-8", errors="replace")
    res = sass_report(data, args.arch, kernel=args.kernel, file=name)
    _emit(args, res.to_dict(args.top) if args.json else None, lambda: res.to_text(args.top))
    return EXIT_OK


def _message(exc: PtxforgeError) -> str:
    """The error's text; a compiler crash (its stderr is noise) on one line with its hint."""
    from ptxforge.errors import CompilerCrashError

    if isinstance(exc, CompilerCrashError):
        return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return str(exc)


_COMMANDS = {"analyze": _analyze, "compare": _compare, "sweep": _sweep, "occupancy": _occupancy,
             "sass": _sass}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``ptxforge`` command with ``argv`` (default ``sys.argv[1:]``); the exit status.

    Example::

        >>> main(["occupancy", "--regs", "32", "--block", "128", "--json"])  # doctest: +SKIP
        0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors (2), --help (0)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return _COMMANDS[args.command](args)
    except _UsageError as exc:  # argparse's format: the command's usage, then the message
        sub = parser._subparsers._group_actions[0].choices[args.command]
        sys.stderr.write(sub.format_usage() + f"{sub.prog}: error: {exc}\n")
        return EXIT_USAGE
    except PtxforgeError as exc:
        sys.stderr.write(f"{PROG}: error: {_message(exc)}\n")
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
