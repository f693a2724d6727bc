"""``ptxforge check``: a CI gate on register budgets (exit 0 all hold, 1 a failure, 2 usage).

Reads PTX files, cubins, folders of them and Triton caches (:mod:`ptxforge.frontends.inputs`),
checks each kernel against the flags and a TOML budget file
(:mod:`ptxforge.reports.check`), prints a table and every failure with its source line, and
writes SARIF 2.1.0 (``--sarif``) and JUnit XML (``--junit``) for CI.  ``--races`` runs one
kernel on the PTX interpreter (``--grid``, ``--block``, ``--arg``) and fails on a data race
(:mod:`ptxforge.launch.profile`), one SARIF result per race.
"""

from __future__ import annotations

import argparse
import sys

from ptxforge.cli.common import (
    EXIT_USAGE,
    UsageError,
    add_common,
    add_jobs,
    int_range,
    message,
    spec_from_args,
)
from ptxforge.cli.profile import add_launch, launch_from_args
from ptxforge.errors import PtxforgeError

__all__ = ["add", "run"]


def _occupancy(text: str) -> float:
    from ptxforge.reports.check import parse_occupancy

    try:
        return parse_occupancy(text, "--min-occupancy")
    except PtxforgeError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add(sub) -> None:
    """Add the ``check`` sub-command to the sub-parsers ``sub``."""
    c = sub.add_parser(
        "check", help="check kernels against register, spill, stack and occupancy budgets "
                      "(for CI)",
        description="Check every kernel of PTX files, cubins, folders of them or Triton "
                    "caches against budgets. Exit status: 0 every budget holds, 1 a budget "
                    "fails or cannot be checked (an input that cannot be read, parsed or "
                    "compiled included), 2 usage (a bad option, no budget, a bad budget "
                    "file).")
    c.add_argument("paths", nargs="*", metavar="FILE|DIR",
                   help="PTX files, cubins, folders (searched recursively) or Triton caches")
    c.add_argument("--triton-cache", nargs="?", const="", default=None, metavar="DIR",
                   help="also check every kernel in a Triton cache (default: "
                        "$TRITON_CACHE_DIR, else ~/.triton/cache)")
    c.add_argument("--max-registers", type=int_range(1, 255, "register budget"), metavar="N",
                   help="fail a kernel that uses more than N registers")
    c.add_argument("--no-spills", action="store_true",
                   help="fail a kernel that spills (any spill store or load)")
    c.add_argument("--max-stack", type=int_range(0, None, "stack budget"), metavar="BYTES",
                   help="fail a kernel whose per-thread stack exceeds BYTES")
    c.add_argument("--min-occupancy", type=_occupancy, metavar="X",
                   help="fail a kernel whose occupancy at --block is below X (0.5 or 50%%)")
    c.add_argument("--budget", metavar="FILE.toml",
                   help="per-kernel budgets: [defaults] and [kernels.\"GLOB\"] tables "
                        "(globs on mangled or demangled names; see docs/ci.md)")
    c.add_argument("--sarif", metavar="OUT.sarif", help="write the result as SARIF 2.1.0")
    c.add_argument("--junit", metavar="OUT.xml", help="write the result as JUnit XML")
    c.add_argument("--source-root", metavar="DIR",
                   help="make SARIF paths relative to DIR (default: the current directory)")
    r = c.add_argument_group("races", "run one kernel of one file on the PTX interpreter and "
                                      "fail on a data race (a SARIF result each)")
    r.add_argument("--races", action="store_true",
                   help="check for data races; needs --grid, --block and an --arg per "
                        "parameter")
    r.add_argument("--kernel", metavar="NAME",
                   help="with --races: the kernel to run (default: the file's only kernel)")
    add_launch(r, block=False)
    add_common(c, kernel=False, block_shape=True)
    add_jobs(c)


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
    except OSError as exc:
        raise PtxforgeError(f"cannot write {path!r}: {exc.strerror or exc}") from None
    sys.stderr.write(f"wrote {path}\n")   # every file a command writes is announced


def run(args) -> int:
    """Run the command; the exit status (0 every budget holds; 1 a budget fails, or an input
    cannot be read, parsed or compiled; 2 usage: a bad option, no budget, a bad budget file)."""
    import json

    from ptxforge.frontends import triton_cache
    from ptxforge.frontends.inputs import collect, not_checked, without_kernels
    from ptxforge.reports.check import Budget, check, load_budget

    paths = list(args.paths)
    if args.triton_cache is not None:
        paths.append(args.triton_cache or str(triton_cache.default_cache_dir()))
    if not paths:
        raise UsageError("nothing to check: give FILE|DIR arguments or --triton-cache")
    args.launch_block, args.block = args.block, _threads(args.block)
    races = _races(args, paths) if args.races else ()
    base = Budget(max_registers=args.max_registers,
                  no_spills=True if args.no_spills else None, max_stack=args.max_stack,
                  min_occupancy=args.min_occupancy, block=args.block)
    try:
        budget_file = load_budget(args.budget) if args.budget else None
    except PtxforgeError as exc:  # the gate's own configuration: a usage error
        sys.stderr.write(f"ptxforge: error: {message(exc)}\n")
        return EXIT_USAGE
    if base.empty and (budget_file is None or (
            budget_file.defaults.empty and all(b.empty for _, b in budget_file.kernels))):
        if args.races:
            return _race_only(args, races)
        raise UsageError("no budget to check: give --max-registers, --no-spills, "
                         "--max-stack, --min-occupancy, --budget FILE.toml or --races")
    units = collect(paths, spec=spec_from_args(args), jobs=args.jobs,  # a bad file: listed,
                    cu_flags=args.cu_flags, reads=_reads(args), keep_going=True)  # exit 1
    kernels = [f for u in units for f in u.figures]
    failed = not_checked(units)
    if not kernels and (not failed or len(units) == 1):
        if failed:   # the one input: its own error, as every command gives it
            raise PtxforgeError(failed[0][1])
        raise PtxforgeError(f"check: no kernel (.entry) in {', '.join(paths)}")
    report = check(kernels, base, budget_file, without_kernels(units), failed)
    if args.sarif and report.failures and not args.json:   # the failing kernels' peak lines
        from ptxforge.frontends.inputs import fill_peak_lines

        units = fill_peak_lines(units, [f.kernel for f in report.failures],
                                spec_from_args(args), args.cu_flags)
        kernels = [f for u in units for f in u.figures]
        report = check(kernels, base, budget_file, without_kernels(units), failed)
    if args.sarif:
        from ptxforge.reports.sarif import sarif_text

        _write(args.sarif, sarif_text(report, args.source_root, races))
    if args.junit:
        from ptxforge.reports.junit import junit_xml

        _write(args.junit, junit_xml(report))
    if args.json:
        data = report.to_dict()
        if args.races:
            data["races"] = [r.to_dict() for _, _, found in races for r in found]
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(report.to_text() + (_race_text(races) if args.races else ""))
    return max(report.exit_status, int(any(found for _, _, found in races)))


def _reads(args) -> tuple:
    """The figures beyond ptxas's that the output prints for every kernel (the rest is not
    computed): JSON the estimate, prediction and peak lines; the text and JUnit none; SARIF
    the peak lines of the failing kernels only (computed once the budgets are checked)."""
    from ptxforge.reports.figures import DETAILS

    return DETAILS if args.json else ()


def _threads(block) -> int | None:
    """Threads per block of a --block shape (what the occupancy budget reads)."""
    return None if block is None else block[0] * block[1] * block[2]


def _races(args, paths: list) -> tuple:
    """``((kernel, file, [Race, ...]),)``: one kernel of one file run on the interpreter."""
    from ptxforge.launch.profile import find_races

    if len(paths) != 1:
        raise UsageError(f"--races runs one kernel of one file on the interpreter; got "
                         f"{len(paths)} inputs ({', '.join(paths)})")
    args.path = paths[0]
    kernel, kwargs, grid, block = launch_from_args(args, "check --races")
    found = find_races(kernel, grid=grid, block=block, shared_mem=args.shared_mem, **kwargs)
    return ((kernel.name, args.path, found),)


def _race_text(races: tuple) -> str:
    lines = []
    for kernel, _, found in races:
        if not found:
            lines.append(f"races: none in kernel {kernel} on this launch")
        for r in found:
            lines.append(f"race: {r.message()}")
    return "\n" + "\n".join(lines) + "\n"


def _race_only(args, races: tuple) -> int:
    """``check --races`` without a budget: the races, SARIF and JSON of them alone."""
    import json

    from ptxforge.reports.check import CheckReport

    report = CheckReport(findings=(), kernels=())
    if args.sarif:
        from ptxforge.reports.sarif import sarif_text

        _write(args.sarif, sarif_text(report, args.source_root, races))
    if args.junit:
        raise UsageError("--junit writes budget results; --races alone has none (use --sarif)")
    found = [r for _, _, rs in races for r in rs]
    if args.json:
        sys.stdout.write(json.dumps({"schema": "ptxforge.check/1", "ok": not found,
                                     "races": [r.to_dict() for r in found]}, indent=2,
                                    ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(_race_text(races).lstrip("\n"))
    return int(bool(found))
