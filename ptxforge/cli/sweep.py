"""``ptxforge sweep: compile at several register caps."""

from __future__ import annotations

import argparse

import attrs

from ptxforge.cli.common import (
    EXIT_OK,
    InputError,
    UsageError,
    add_common,
    caps_type,
    count_type,
    emit,
    int_range,
    progress_printer,
    read_source,
    request_from_args,
    spec_from_args,
)

__all__ = ["add", "run"]


def add(sub) -> None:
    """Add the ``sweep`` sub-command to the sub-parsers ``sub``."""
    s = sub.add_parser("sweep", help="compile at several register caps",
                       description="Compile each kernel uncapped and at each --maxrregcount cap.")
    s.add_argument("file", metavar="FILE.ptx")
    add_common(s)
    s.add_argument("--caps", type=caps_type, default=None,
                   help="comma-separated caps to sweep, exactly these, e.g. 255,128,96,64 "
                        "(default: the occupancy cliffs down to 24)")
    s.add_argument("--only-caps", action="store_true",
                   help=argparse.SUPPRESS)  # what --caps does now; kept for old scripts
    s.add_argument("--spill-budget", default=0, metavar="BYTES",
                   type=int_range(0, None, "spill budget"),
                   help="also recommend the cap with the most occupancy whose spills "
                        "(stores + loads) stay within BYTES (default 0: only the no-spill one)")
    s.add_argument("--top", default=10, type=count_type, help=argparse.SUPPRESS)


def run(args) -> int:
    """Run the command; the exit status."""
    from ptxforge.reports.occupancy_sweep import sweep_report

    if args.only_caps and not args.caps:
        raise UsageError("sweep: --only-caps needs --caps")
    data, name = read_source(args.file, args)
    if data[:4] == b"\x7fELF":
        raise InputError(f"{name} is a cubin: sweep recompiles the PTX at each cap; pass the "
                          "PTX (analyze reads a cubin)")
    res = sweep_report(data, name, spec_from_args(args), caps=args.caps,
                       only_caps=bool(args.caps), kernel=args.kernel,
                       request=request_from_args(args), progress=progress_printer(args))
    res = attrs.evolve(res, spill_budget=args.spill_budget)
    progress_printer(args, done=True)
    emit(args, res.to_dict(args.top) if args.json else None, res.to_text)
    return EXIT_OK
