"""``ptxforge memory``: each global/shared/local access per warp: sectors, bank conflicts."""

from __future__ import annotations

import argparse

from ptxforge.cli.common import EXIT_OK, arch_type, emit, read_source

__all__ = ["add", "block_shape", "run"]


def block_shape(text: str) -> tuple:
    """``--block``: ``256``, ``32,8`` or ``32x8x1`` (x fastest), at most 1024 threads."""
    parts = text.replace("x", ",").replace("X", ",").split(",")
    try:
        dims = tuple(int(p, 0) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a block shape such as 256, 32,8 or 32x8, "
                                         f"got {text!r}") from None
    threads = 1
    for d in dims:
        threads *= d
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims) or threads > 1024:
        raise argparse.ArgumentTypeError(f"a block has 1 to 3 positive sizes and at most 1024 "
                                         f"threads, got {text!r}")
    return dims


def param_value(text: str) -> tuple:
    """``--param``: ``NAME=INT`` (a kernel parameter's value, e.g. a matrix width)."""
    name, sep, value = text.partition("=")
    try:
        number = int(value, 0)
    except ValueError:
        number = None
    if not sep or not name.strip() or number is None:
        raise argparse.ArgumentTypeError(f"expected NAME=INTEGER such as width=1024, got "
                                         f"{text!r}")
    return name.strip(), number


def add(sub) -> None:
    """Add the ``memory`` sub-command to the sub-parsers ``sub``."""
    s = sub.add_parser("memory", help="per-warp memory figures: sectors, bank conflicts",
                       description="Static memory analysis: for each global, shared and local "
                                   "access, its address as an affine function of the thread "
                                   "and block indices, and per warp request the 32-byte "
                                   "sectors (global, local) or the bank-conflict ways and "
                                   "wavefronts (shared), worst first; or data-dependent, "
                                   "with the reason; with checked fixes (padding, XOR "
                                   "swizzle, coalesced index order).")
    s.add_argument("file", metavar="FILE.ptx|FILE.cu")
    s.add_argument("--kernel", metavar="NAME", help="only this kernel (default: every .entry)")
    s.add_argument("--block", default=None, type=block_shape, metavar="B",
                   help="block shape: 256, 32,8 or 32x8 (default: the kernel's "
                        ".reqntid/.maxntid, else 256)")
    s.add_argument("--param", action="append", default=[], type=param_value,
                   metavar="NAME=VALUE",
                   help="a kernel parameter's value (repeatable): a thread stride that depends "
                        "on it then has figures (the PTX's parameter names, as the address "
                        "column prints them)")
    s.add_argument("--arch", default=None, metavar="ARCH", type=arch_type(False),
                   help="target for a .cu source (default sm_80)")
    s.add_argument("--json", action="store_true", help="machine-readable JSON output")


def run(args) -> int:
    """Run the command; the exit status."""
    from ptxforge.reports.memory import memory_report

    data, name = read_source(args.file, args)
    res = memory_report(data, name, kernel=args.kernel, block=args.block,
                        params=dict(args.param))
    emit(args, res.to_dict() if args.json else None, res.to_text)
    return EXIT_OK
