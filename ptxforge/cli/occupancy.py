"""``ptxforge occupancy: blocks/SM, occupancy, limiter and register cliffs."""

from __future__ import annotations

from ptxforge.cli.common import EXIT_OK, add_common, emit, int_range

__all__ = ["add", "run"]


def add(sub) -> None:
    """Add the ``occupancy`` sub-command to the sub-parsers ``sub``."""
    o = sub.add_parser("occupancy", help="blocks/SM, occupancy, limiter and register cliffs",
                       description="Occupancy for a register count and block size.")
    add_common(o, compile_arch=False, kernel=False, ptx=False)
    o.add_argument("--regs", required=True, type=int_range(0, 255, "register count"),
                   help="registers per thread")
    o.add_argument("--smem", default=0, type=int_range(0, None, "shared memory size"),
                   help="shared memory per block in bytes (default 0)")


def run(args) -> int:
    """Run the command; the exit status."""
    from ptxforge.reports.occupancy_sweep import occupancy_report

    res = occupancy_report(args.arch, args.regs, args.block, args.smem)
    emit(args, res.to_dict() if args.json else None, res.to_text)
    return EXIT_OK
