"""What the ``ptxforge`` commands share: argument types, common options, input and output."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ptxforge.errors import PtxforgeError

__all__ = [
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "PROG",
    "InputError",
    "UsageError",
    "add_common",
    "add_compile_options",
    "add_jobs",
    "arch_type",
    "caps_type",
    "count_type",
    "dims_type",
    "emit",
    "int_range",
    "message",
    "pair_type",
    "progress_printer",
    "read_input",
    "read_source",
    "refuse_compiler_flags",
    "request_from_args",
    "spec_from_args",
]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
PROG = "ptxforge"


class InputError(PtxforgeError):
    """A file could not be read."""


class UsageError(PtxforgeError):
    """Arguments that parse but cannot be used together (exit 2)."""


# --- argument types (the library validates; argparse turns its errors into usage errors) ---

def arch_type(compile: bool):
    def convert(text: str) -> str:
        from ptxforge.reports.analyze import check_target

        try:
            return check_target(text, compile=compile)
        except PtxforgeError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = "architecture"
    return convert


def int_range(lo: int, hi: int | None, what: str):
    def convert(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer {what}, got {text!r}") from None
        if value < lo or (hi is not None and value > hi):
            bound = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise argparse.ArgumentTypeError(f"{what} must be {bound}, got {value}")
        return value
    convert.__name__ = what
    return convert


def caps_type(text: str) -> tuple:
    from ptxforge.toolchain.compile import CompileOptions

    caps = []
    for part in text.replace(" ", ",").split(","):
        if not part:
            continue
        try:
            cap = int(part, 0)
            CompileOptions(max_registers=cap)  # the library's range check (16..255)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected integers such as 255,128,64, "
                                             f"got {part!r}") from None
        except PtxforgeError:
            raise argparse.ArgumentTypeError(
                f"register caps must be in 16..255 (ptxas's --maxrregcount range), "
                f"got {cap}") from None
        caps.append(cap)
    if not caps:
        raise argparse.ArgumentTypeError("expected at least one register cap, e.g. 128,64")
    return tuple(caps)


def pair_type(text: str) -> tuple:
    a, sep, b = text.partition("=")
    if not sep or not a.strip() or not b.strip():
        raise argparse.ArgumentTypeError(f"expected KERNEL_A=KERNEL_B, got {text!r}")
    return a.strip(), b.strip()


count_type = int_range(0, None, "count")


def dims_type(what: str):
    """An argparse type for a grid or block shape: ``256``, ``16x16`` or ``32,8,1`` (a
    3-tuple)."""
    def convert(text: str) -> tuple:
        from ptxforge.launch.arg_specs import parse_dims

        try:
            return parse_dims(text, what)
        except PtxforgeError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = f"{what} shape"
    return convert


def add_common(sp, compile_arch: bool = True, kernel: bool = True, ptx: bool = True,
               json: bool = True, block_shape: bool = False) -> None:
    """The options every command shares: --arch, --block, --smem, --kernel, --json (when the
    command has JSON output), and for commands that compile PTX (``ptx``) --backend, --ptxas,
    --relocatable.  ``block_shape``: --block also takes a shape (16x16, a 3-tuple)."""
    if ptx:
        add_compile_options(sp)
        sp.add_argument("--arch", default=None, type=arch_type(compile_arch),
                        help="target architecture (default: the PTX's .target when "
                             "ptxforge knows it, else sm_80)")
        sp.add_argument("--block", default=None,
                        type=dims_type("block") if block_shape
                        else int_range(1, 1024, "block size"),
                        help="threads per block for occupancy (default: the kernel's "
                             ".reqntid/.maxntid, else 256)"
                        + ("; a shape such as 16x16 for the launch of --races"
                           if block_shape else ""))
        sp.add_argument("--smem", default=0, metavar="BYTES",
                        type=int_range(0, None, "shared memory size"),
                        help="dynamic shared memory per block in bytes, added to the "
                             "kernel's static shared memory for occupancy (default 0)")
        sp.add_argument("--lenient", action="store_true",
                        help="accept PTX the strict parser refuses (unknown opcode or "
                             "modifier, undeclared register, wrong register class, missing "
                             "label) and list each as a warning in the notes")
    else:
        sp.add_argument("--arch", default="sm_80", type=arch_type(compile_arch),
                        help="target architecture (default sm_80)")
        sp.add_argument("--block", default=256, type=int_range(1, 1024, "block size"),
                        help="threads per block (default 256)")
    if kernel:
        sp.add_argument("--kernel", metavar="NAME",
                        help="analyse only this kernel (default: every .entry)")
    if json:
        sp.add_argument("--json", action="store_true", help="machine-readable JSON output")


def refuse_compiler_flags(args, command: str) -> None:
    """A UsageError when ``--no-compile`` comes with a flag that only says how to compile
    (``--relocatable``, ``--backend``, ``--ptxas``): nothing would be compiled."""
    if not getattr(args, "no_compile", False):
        return
    given = [flag for flag, on in (("--relocatable", getattr(args, "relocatable", False)),
                                   ("--backend", getattr(args, "backend", "auto") != "auto"),
                                   ("--ptxas", getattr(args, "ptxas", None) is not None)) if on]
    if given:
        raise UsageError(f"{command}: {' and '.join(given)} say{'s' if len(given) == 1 else ''} "
                         "how to compile; --no-compile compiles nothing (give one or the other)")


def add_jobs(sp) -> None:
    """``--jobs N``: worker processes for the kernels and files (default: the cores)."""
    sp.add_argument("--jobs", "-j", type=int_range(1, 1024, "job count"), default=None,
                    metavar="N",
                    help="worker processes for kernels and files (default: the cores this "
                         "process may use; the output is the same for every N)")


# --- input and output -------------------------------------------------------------------------

def read_input(path: str) -> tuple:
    """(bytes, display name) of a file, or of standard input for ``-``."""
    if path == "-":
        return sys.stdin.buffer.read(), "<stdin>"
    try:
        with open(path, "rb") as fh:
            return fh.read(), path
    except OSError as exc:
        raise InputError(f"cannot read {path!r}: {exc.strerror or exc}") from None


def read_source(path: str, args) -> tuple:
    """:func:`read_input`, with a CUDA C++ source (``.cu``) compiled to PTX by NVRTC for
    ``--arch`` (default sm_80) with ``-lineinfo`` and the flags after ``--``: (bytes or PTX
    text, display name)."""
    data, name = read_input(path)
    from ptxforge.frontends.cuda_source import compile_cuda, is_cuda_source

    if not is_cuda_source(name):
        return data, name
    return compile_cuda(data, name, getattr(args, "arch", None),
                        getattr(args, "cu_flags", ())), name


def emit(args, obj, text_fn) -> None:
    if args.json:
        sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(text_fn())


def message(exc: PtxforgeError) -> str:
    """The error's text; a compiler crash (its stderr is noise) on one line with its hint."""
    from ptxforge.errors import CompilerCrashError

    if isinstance(exc, CompilerCrashError):
        return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return str(exc)


# --- which compiler, in which mode --------------------------------------------------------------

def add_compile_options(sp) -> None:
    """--backend, --ptxas and --relocatable: which compiler gives the ptxas figures, and how."""
    g = sp.add_argument_group("compiler")
    g.add_argument("--backend", default="auto", choices=("auto", "ptxas", "nvjitlink", "driver"),
                   help="auto (default): the newest ptxas executable that accepts the target, "
                        "whole-program as nvcc builds; nvjitlink: in-process, always relocatable; "
                        "driver: the GPU's JIT")
    g.add_argument("--ptxas", metavar="PATH", default=None,
                   help="this ptxas executable (implies --backend ptxas; $PTXFORGE_PTXAS does "
                        "the same)")
    g.add_argument("--relocatable", action="store_true",
                   help="relocatable figures (ptxas -c, nvcc -rdc=true); default whole-program")


def spec_from_args(args):
    """The :class:`~ptxforge.arch.spec.LaunchSpec` of ``--arch``, ``--block`` and ``--smem``
    (built once per command; argparse has checked each already)."""
    from ptxforge.arch.spec import LaunchSpec

    return LaunchSpec(target=args.arch, block=getattr(args, "block", None),
                      dynamic_shared=getattr(args, "smem", 0) or 0)


def request_from_args(args):
    """The :class:`~ptxforge.toolchain.compile.CompileRequest` of ``--backend``, ``--ptxas``
    and ``--relocatable``; None under ``--no-compile`` (the compile machinery is then never
    imported)."""
    if getattr(args, "no_compile", False) and getattr(args, "ptxas", None) is None:
        return None  # nothing compiles: the compile machinery is never imported
    from ptxforge.toolchain.compile import CompileOptions, CompileRequest

    backend = getattr(args, "backend", "auto")
    path = getattr(args, "ptxas", None)
    if path is not None:
        if backend not in ("auto", "ptxas"):
            raise UsageError(f"--ptxas names a ptxas executable; it cannot go with "
                             f"--backend {backend}")
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            what = "does not exist" if not os.path.exists(path) else "is not an executable file"
            raise UsageError(f"--ptxas {path!r}: the path {what}; expected the path of a ptxas "
                             "executable")
        from ptxforge.toolchain.backends import ptxas_version

        if ptxas_version(path) == (0, 0):
            raise UsageError(f"--ptxas {path!r}: '{path} --version' names no ptxas release; "
                             "expected the path of a ptxas executable")
    return CompileRequest(backend=backend, ptxas=path,
                          options=CompileOptions(relocatable=getattr(args, "relocatable", False)))


def progress_printer(args, done: bool = False):
    """A ``progress(i, n, name)`` callback that rewrites one line on standard error, or None
    when standard error is not a terminal or the output is JSON (piped output and programs
    never see it); ``done=True`` clears the line instead."""
    if getattr(args, "json", False) or not sys.stderr.isatty():
        return None
    if done:
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()
        return None

    def progress(i: int, n: int, name: str) -> None:
        from ptxforge.ptx.demangle import display_name

        label = (display_name(name) or "")[:50]
        sys.stderr.write(f"\r\x1b[K[{i + 1}/{n}] {label}")
        sys.stderr.flush()
    return progress
