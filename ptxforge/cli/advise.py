"""``ptxforge advise``: ranked changes with figures before and after from real compiles."""

from __future__ import annotations

from ptxforge.cli.common import (
    EXIT_OK,
    InputError,
    add_common,
    emit,
    int_range,
    progress_printer,
    read_input,
    request_from_args,
    spec_from_args,
)

__all__ = ["add", "run"]


def add(sub) -> None:
    """Add the ``advise`` sub-command to the sub-parsers ``sub``."""
    s = sub.add_parser("advise", help="ranked changes, each proven by a compile",
                       description="Rank the changes that gain occupancy or remove spills "
                                   "(a register cap with the lever that takes effect for the "
                                   "kernel, the block size, shared memory per block), each "
                                   "with its figures before and after from real compiles.")
    s.add_argument("file", metavar="FILE.ptx|FILE.cu",
                   help="PTX, or a CUDA source compiled by NVRTC (flags after --); given the "
                        ".cu, an unroll change is compiled and proven")
    add_common(s)
    s.add_argument("--spill-budget", default=0, metavar="BYTES",
                   type=int_range(0, None, "spill budget"),
                   help="also propose the cap with the most occupancy whose spills (stores + "
                        "loads) stay within BYTES (default 0: no spills)")


def run(args) -> int:
    """Run the command; the exit status."""
    from ptxforge.frontends.cuda_source import compile_cuda, is_cuda_source
    from ptxforge.reports.advise import advise

    data, name = read_input(args.file)
    if data[:4] == b"\x7fELF":
        raise InputError(f"{name} is a cubin: advise recompiles the PTX with each change; "
                         "pass the PTX (analyze reads a cubin)")
    source = None
    if is_cuda_source(name):
        def build(text):
            return compile_cuda(text, name, args.arch, args.cu_flags)

        text = data.decode("utf-8", errors="replace")
        data, source = build(text).encode(), (text, name, build)
    res = advise(data, name, spec_from_args(args), kernel=args.kernel,
                 request=request_from_args(args), spill_budget=args.spill_budget,
                 progress=progress_printer(args), source=source)
    progress_printer(args, done=True)
    emit(args, res.to_dict() if args.json else None, res.to_text)
    return EXIT_OK
