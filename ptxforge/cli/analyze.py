"""``ptxforge analyze: per-kernel registers, instruction mix, pressure peak, ptxas figures, occupancy."""

from __future__ import annotations

import os

import attrs

from ptxforge.cli.common import (
    EXIT_OK,
    InputError,
    UsageError,
    add_common,
    add_jobs,
    count_type,
    emit,
    progress_printer,
    read_input,
    request_from_args,
    spec_from_args,
)

__all__ = ["add", "run"]


def add(sub) -> None:
    """Add the ``analyze`` sub-command to the sub-parsers ``sub``."""
    a = sub.add_parser("analyze", help="per-kernel registers, instruction mix, pressure peak, "
                                       "ptxas figures and occupancy",
                       description="Analyse every kernel of a PTX file ('-' reads stdin).")
    a.add_argument("file", metavar="FILE.ptx|FILE.cubin")
    add_common(a)
    add_jobs(a)
    a.add_argument("--no-compile", action="store_true",
                   help="skip ptxas; occupancy uses the liveness estimate")
    a.add_argument("--top", default=10, type=count_type,
                   help="values, source lines and opcodes listed per kernel (default 10, 0: all)")
    size = a.add_mutually_exclusive_group()
    size.add_argument("--summary", action="store_true",
                      help="one line per kernel (the default above 20 kernels)")
    size.add_argument("--full", action="store_true",
                      help="every kernel's section even above 20 kernels")
    a.add_argument("--by", default="line", choices=("line", "function", "callsite"),
                   help="group the values live at the peak by defining source line, by "
                        "(inlined) function, or by the kernel's own line the inlined code was "
                        "called from (default line)")


def run(args) -> int:
    """Run the command; the exit status."""
    from ptxforge.frontends import triton_cache
    from ptxforge.reports.analyze import analyze_ptx

    if args.file != "-" and os.path.isdir(args.file):  # a Triton cache: every kernel in it
        if not triton_cache.scan(args.file):
            raise InputError(f"{args.file!r} is a directory with no Triton cache in it "
                             "(HASH/NAME.ptx with NAME.json): analyze reads one PTX or cubin "
                             "file, or a Triton cache; check and diff read folders of PTX")
        cached = triton_cache.analyze_cache(args.file, kernel=args.kernel, target=args.arch,
                                            compile=not args.no_compile)
        emit(args, [r.to_dict(args.top) for r in cached] if args.json else None,
             lambda: "\n".join(r.to_text(args.top, args.by) for r in cached))
        return EXIT_OK
    spec = spec_from_args(args)
    entry = triton_cache.entry_for_ptx(args.file)  # Triton's PTX: its block size and shared
    if entry is not None:
        spec = attrs.evolve(spec, block=spec.block or entry.block_size,
                            dynamic_shared=spec.dynamic_shared or entry.shared)
    data, name = read_input(args.file)
    if data[:4] == b"\x7fELF":
        from ptxforge.reports.cubin import analyze_cubin

        if args.no_compile or args.by != "line":
            raise UsageError("analyze: --no-compile and --by apply to PTX, not to a cubin")
        report = analyze_cubin(data, name, spec, kernel=args.kernel)
        emit(args, report.to_dict() if args.json else None, report.to_text)
        return EXIT_OK
    # the SASS explanations are read at once when every kernel's will be printed
    explain = True if args.json or args.full else False if args.summary else None
    res = analyze_ptx(data, name, spec, compile=not args.no_compile, strict=not args.lenient,
                      kernel=args.kernel, request=request_from_args(args),
                      progress=progress_printer(args), explain=explain, jobs=args.jobs)
    progress_printer(args, done=True)
    if entry is not None:
        res = triton_cache.with_n_spills_note(res)
    emit(args, res.to_dict(args.top) if args.json else None,
          lambda: res.to_text(args.top, args.by,
                              True if args.summary else False if args.full else None))
    return EXIT_OK
