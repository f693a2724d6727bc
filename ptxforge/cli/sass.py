"""``ptxforge sass: the estimate beside the SASS peak live registers and ptxas's REGCOUNT."""

from __future__ import annotations

from ptxforge.cli.common import (
    EXIT_OK,
    add_compile_options,
    arch_type,
    count_type,
    emit,
    read_source,
    request_from_args,
    spec_from_args,
)

__all__ = ["add", "run"]


def add(sub) -> None:
    """Add the ``sass`` sub-command to the sub-parsers ``sub``."""
    g = sub.add_parser("sass", help="estimate vs SASS peak live registers (nvdisasm) vs "
                                    "ptxas's REGCOUNT",
                       description="Compile with line info, read the physical register "
                                   "liveness of the SASS with nvdisasm, and set it beside the "
                                   "PTX estimate and REGCOUNT. A .cubin is read as it is.")
    g.add_argument("file", metavar="FILE")
    g.add_argument("--arch", default=None, type=arch_type(True),
                   help="target architecture for PTX input (default: the PTX's .target, "
                        "else sm_80)")
    g.add_argument("--kernel", metavar="NAME",
                   help="report only this kernel (default: every .entry)")
    g.add_argument("--json", action="store_true", help="machine-readable JSON output")
    g.add_argument("--top", default=10, type=count_type,
                   help="peak SASS instructions listed per kernel (default 10, 0: all)")
    g.add_argument("--lenient", action="store_true",
                   help="report strict-parse errors as warnings")
    add_compile_options(g)


def run(args) -> int:
    """Run the command; the exit status."""
    from ptxforge.reports.sass import sass_report

    data, name = read_source(args.file, args)
    if isinstance(data, bytes) and data[:4] != b"\x7fELF":
        data = data.decode("utf-8", errors="replace")
    res = sass_report(data, spec_from_args(args), kernel=args.kernel, file=name,
                      strict=not args.lenient, request=request_from_args(args))
    emit(args, res.to_dict(args.top) if args.json else None, lambda: res.to_text(args.top))
    return EXIT_OK
