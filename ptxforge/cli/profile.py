"""``ptxforge profile``: run a kernel on the PTX interpreter and print its profile (and races).

Per instruction: executed counts, global/local requests and 32-byte sectors, shared wavefronts
and bank conflicts; for the kernel: branch efficiency, active threads, the instruction mix and
the figures under their Nsight Compute names (docs/memory.md).  ``--races`` adds the data races
the run had (exit 1 when there is one).
"""

from __future__ import annotations

import argparse
import sys

from ptxforge.cli.common import EXIT_FAILURE, EXIT_OK, UsageError, dims_type, int_range, read_source
from ptxforge.errors import PtxforgeError

__all__ = ["add", "add_launch", "launch_from_args", "run"]


def _arg(text: str) -> str:
    from ptxforge.launch.arg_specs import parse_arg

    try:
        parse_arg(text)
    except PtxforgeError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_launch(sp, block: bool = True) -> None:
    """``--grid``, ``--arg`` (and ``--block`` when ``block``): a launch on the interpreter."""
    sp.add_argument("--grid", type=dims_type("grid"), metavar="G",
                    help="blocks: 4, 4x2 or 4,2,1")
    if block:
        sp.add_argument("--block", type=dims_type("block"), metavar="B",
                        help="threads per block: 256, 16x16 or 32,8,1")
    sp.add_argument("--arg", action="append", default=[], type=_arg, metavar="NAME=VALUE",
                    help="a parameter (by name or position): NAME=VALUE for a number, "
                         "NAME=TYPE[N] for an array of N zeros (TYPE f32, f64, s32, u8, ...), "
                         "NAME=TYPE[N]:iota / :random / :VALUE to fill it; repeat per parameter")
    sp.add_argument("--shared-mem", type=int_range(0, None, "shared memory size"), default=0,
                    metavar="BYTES",
                    help="dynamic shared memory per block (default 0)")


def add(sub) -> None:
    """Add the ``profile`` sub-command to the sub-parsers ``sub``."""
    p = sub.add_parser(
        "profile", help="run a kernel on the PTX interpreter: memory requests, sectors, bank "
                        "conflicts, divergence, instruction counts (and races)",
        description="Run one kernel of a PTX or CUDA C++ file on the PTX interpreter (no GPU) "
                    "and print per-instruction executed counts, global/local requests and "
                    "sectors, shared-memory wavefronts and bank conflicts, branch efficiency "
                    "and the instruction mix, with the Nsight Compute metric each figure "
                    "corresponds to. Exit status: 0 done (with --races: and no race), 1 the "
                    "input cannot be read or run, or --races found one, 2 usage.")
    p.add_argument("path", metavar="FILE", help="a PTX file or a CUDA C++ source (.cu)")
    p.add_argument("--kernel", metavar="NAME",
                   help="the kernel to run (default: the file's only kernel)")
    add_launch(p)
    p.add_argument("--races", action="store_true",
                   help="also check the run for data races (shared and global memory)")
    p.add_argument("--json", action="store_true", help="machine-readable JSON output")


def launch_from_args(args, command: str):
    """(EmulatedKernel, kwargs, grid, block) of ``FILE``, ``--kernel``, ``--grid``, ``--block``
    and ``--arg``; a UsageError naming what is missing."""
    block = getattr(args, "launch_block", None) or getattr(args, "block", None)
    missing = [flag for flag, v in (("--grid G", args.grid), ("--block B", block)) if v is None]
    if missing:
        raise UsageError(f"{command} runs the kernel on the interpreter and needs its launch: "
                         f"give {' and '.join(missing)} (and --arg NAME=VALUE or "
                         "NAME=TYPE[N] for each parameter)")
    from ptxforge.launch.arg_specs import bind_specs
    from ptxforge.launch.emulated import EmulatedModule

    data, _ = read_source(args.path, args)
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    module = EmulatedModule(text)
    if args.kernel is None:
        if len(module.names) != 1:
            raise UsageError(f"{args.path} has {len(module.names)} kernels "
                             f"({', '.join(module.names) or 'none'}); give --kernel NAME")
        kernel = module[module.names[0]]
    else:
        kernel = module[args.kernel]
    try:
        kwargs = bind_specs(kernel.name, kernel.params, args.arg)
    except PtxforgeError as exc:  # the arguments do not fit the kernel: a usage error
        raise UsageError(str(exc)) from None
    return kernel, kwargs, args.grid, block


def run(args) -> int:
    """Run the command; the exit status."""
    import json

    from ptxforge.launch.profile import profile_and_races, profile_text

    kernel, kwargs, grid, block = launch_from_args(args, "profile")
    prof, races = profile_and_races(kernel, grid=grid, block=block,
                                    shared_mem=args.shared_mem, races=args.races, **kwargs)
    if args.json:
        data = prof.to_dict()
        if args.races:
            data["races"] = [r.to_dict() for r in races]
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        out = profile_text(prof)
        if args.races:
            out += "\n" + (f"{len(races)} data race(s):\n" + "".join(
                f"  {r.message()}\n" for r in races) if races else "no data race in this run\n")
        sys.stdout.write(out)
    return EXIT_FAILURE if races else EXIT_OK
