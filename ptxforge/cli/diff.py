"""``ptxforge diff OLD NEW``: per-kernel deltas between two builds (files, folders, Triton caches).

Kernels are matched by name (:mod:`ptxforge.reports.diff`); registers, spill stores and loads,
stack, occupancy, the estimate and the prediction are compared.  Only what changed is
printed unless ``--all``; ``--markdown`` gives a table for a pull-request comment, ``--json``
the deltas for programs.  Exit status 0 (whatever changed), 1 input that cannot be analysed,
2 usage.
"""

from __future__ import annotations

import sys

from ptxforge.cli.common import EXIT_OK, UsageError, add_common, add_jobs, spec_from_args

__all__ = ["add", "run"]


def add(sub) -> None:
    """Add the ``diff`` sub-command to the sub-parsers ``sub``."""
    d = sub.add_parser(
        "diff", help="per-kernel register, spill, stack and occupancy deltas between two builds",
        description="Compare two builds: two PTX files or cubins, two folders of them, or two "
                    "Triton caches; kernels are matched by name.")
    d.add_argument("old", metavar="OLD")
    d.add_argument("new", metavar="NEW")
    d.add_argument("--all", action="store_true", help="list unchanged kernels too")
    d.add_argument("--markdown", action="store_true",
                   help="a Markdown table (for a pull-request comment)")
    add_common(d, kernel=False)
    add_jobs(d)


def run(args) -> int:
    """Run the command; the exit status."""
    from ptxforge.frontends.inputs import collect, without_kernels
    from ptxforge.reports.diff import diff_figures

    if args.markdown and args.json:
        raise UsageError("diff: --markdown and --json are alternatives; give one")
    sides, empty = [], []
    for path in (args.old, args.new):
        units = collect([path], spec=spec_from_args(args), jobs=args.jobs,
                        cu_flags=getattr(args, "cu_flags", ()))
        sides.append([f for u in units for f in u.figures])
        empty += without_kernels(units)
    report = diff_figures(sides[0], sides[1], args.old, args.new, empty)
    if args.json:
        sys.stdout.write(report.to_json(args.all))
    elif args.markdown:
        sys.stdout.write(report.to_markdown(args.all))
    else:
        sys.stdout.write(report.to_text(args.all))
    return EXIT_OK
