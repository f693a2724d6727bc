"""``ptxforge tune FILE.cu -D TILE=4,8,16``: a CUDA source's kernels over a matrix of defines, side by side."""

from __future__ import annotations

import argparse

from ptxforge.cli import common
from ptxforge.cli.common import EXIT_OK, InputError, add_common, emit, read_input, spec_from_args
from ptxforge.errors import PtxforgeError

__all__ = ["add", "run"]


def _define(text: str) -> tuple:
    from ptxforge.frontends.tune import parse_define

    try:
        return parse_define(text)
    except PtxforgeError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add(sub) -> None:
    """Add the ``tune`` sub-command to the sub-parsers ``sub``."""
    t = sub.add_parser(
        "tune", help="a .cu's kernels over a matrix of defines, side by side",
        description="Compile a CUDA source with NVRTC once per combination of the -D values "
                    "(their product), analyse each build with ptxas, and list each kernel's "
                    "registers, spills, stack and occupancy per combination. Flags after '--' "
                    "go to NVRTC for every build.")
    t.add_argument("file", metavar="FILE.cu")
    t.add_argument("-D", dest="defines", action="append", type=_define, required=True,
                   metavar="NAME=V1,V2,...", help="a macro and its values (repeatable: the "
                                                  "product of all is built)")
    add_common(t, kernel=False)


def run(args) -> int:
    """Run the command; the exit status."""
    from ptxforge.frontends.cuda_source import is_cuda_source
    from ptxforge.frontends.tune import tune

    data, name = read_input(args.file)
    if not is_cuda_source(name):
        raise InputError(f"{name}: tune compiles a CUDA source (.cu) per combination of "
                         "defines; got another file")
    rep = tune(data, name, args.defines, spec_from_args(args), args.cu_flags,
               common.request_from_args(args), strict=not args.lenient)
    emit(args, rep.to_dict() if args.json else None, rep.to_text)
    return EXIT_OK
