"""``ptxforge report``: one self-contained HTML page of the register pressure of a file.

FILE is PTX, a cubin, or a Python file that builds a module.  A Python file is run as a
script (``runpy``, with its own folder on ``sys.path``) and must leave one of these at its
top level: ``module`` (an ``ir.Module``, or a ``KernelBuilder``/``ModuleBuilder``, which is
built), or ``build()`` returning one of those.  Its kernels carry the Python lines that made
each value, so the source view shows the Python file.
"""

from __future__ import annotations

import os
import runpy
import sys

from ptxforge.cli.common import (
    EXIT_OK,
    InputError,
    UsageError,
    add_common,
    add_jobs,
    caps_type,
    int_range,
    progress_printer,
    read_source,
    refuse_compiler_flags,
    spec_from_args,
)
from ptxforge.errors import PtxforgeError

__all__ = ["add", "load_python_module", "run"]


def add(sub) -> None:
    """Add the ``report`` sub-command to the sub-parsers ``sub``."""
    r = sub.add_parser("report", help="one self-contained HTML page with plots",
                       description="Write an offline HTML report: per kernel a summary card, "
                                   "the pressure timeline, the source view heat-coloured by "
                                   "live registers, the occupancy cliffs, and with --sweep "
                                   "the register-cap sweep. FILE is PTX, a cubin, or a Python "
                                   "file exposing `module` or `build()` (docs/report.md).")
    r.add_argument("files", nargs="+", metavar="FILE.ptx|FILE.cubin|FILE.py|DIR",
                   help="one file: one page; several files or a folder: a page per file "
                        "and an index.html, in the -o folder")
    r.add_argument("-o", "--output", default="report.html", metavar="HTML|FOLDER",
                   help="where to write the page (default report.html; '-': standard output); "
                        "for several inputs the folder of the pages (default ptxforge-report)")
    add_common(r, json=False)
    add_jobs(r)
    r.add_argument("--no-compile", action="store_true",
                   help="skip ptxas (and the SASS overlay)")
    r.add_argument("--no-sass", action="store_true",
                   help="do not read the SASS live counts (nvdisasm)")
    r.add_argument("--sweep", action="store_true",
                   help="compile each kernel at the occupancy-cliff caps and chart them")
    r.add_argument("--caps", type=caps_type, default=None,
                   help="with --sweep: caps added to the cliffs, e.g. 100,56")
    r.add_argument("--spill-budget", default=0, type=int_range(0, None, "spill budget"),
                   metavar="BYTES",
                   help="with --sweep: also recommend the best cap spilling at most BYTES")
    r.add_argument("--advise", action="store_true",
                   help="add `ptxforge advise`'s ranked changes, each compiled, per kernel")
    r.add_argument("--source-dir", action="append", default=[], metavar="DIR",
                   help="folder to look in for sources the .loc paths do not reach "
                        "(repeatable; the input file's folder is always searched)")


def _where(exc: BaseException, path: str) -> str:
    """``:LINE`` of the deepest frame of ``exc`` in the script ``path`` ('' when none)."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if os.path.abspath(f.filename) == os.path.abspath(path)]
    return f":{frames[-1].lineno}" if frames else ""


def load_python_module(path: str):
    """Run the Python file ``path`` and return the ``ir.Module`` it builds (see the module
    docstring); an InputError says what was expected when it builds none."""
    from ptxforge.ptx import ir

    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    try:
        names = runpy.run_path(path, run_name="__ptxforge_report__")
    except SystemExit:
        raise InputError(f"{path}: the script exited while being loaded; guard its main "
                         "code with `if __name__ == '__main__':`") from None
    except PtxforgeError:
        raise                         # a builder error already names the script's line
    except SyntaxError as exc:
        raise InputError(f"{path}:{exc.lineno}: the script is not valid Python: "
                         f"{exc.msg}") from None
    except Exception as exc:         # the user's script failed: say where, no traceback
        raise InputError(f"{path}{_where(exc, path)}: the script raised "
                         f"{type(exc).__name__}: {exc}") from None
    finally:
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    found = names.get("module")
    if found is None and callable(names.get("build")):
        found = names["build"]()
    if found is not None and not isinstance(found, ir.Module) and hasattr(found, "build"):
        found = found.build()
    if not isinstance(found, ir.Module):
        what = "nothing" if found is None else type(found).__name__
        raise InputError(f"{path}: expected a top-level `module` (ir.Module, KernelBuilder or "
                         f"ModuleBuilder) or a `build()` returning one; found {what}")
    return found


def _cuda_source(args):
    """``(text, path, compile)`` of a ``.cu`` input for ``--advise`` (its unroll changes are
    compiled with the same NVRTC flags), else None."""
    from ptxforge.frontends.cuda_source import compile_cuda, is_cuda_source

    if not args.advise or args.file == "-" or not is_cuda_source(args.file):
        return None

    def build(text):
        return compile_cuda(text, args.file, args.arch, args.cu_flags)

    with open(args.file, encoding="utf-8", errors="replace") as fh:
        return fh.read(), args.file, build


def run(args) -> int:
    """Run the command; the exit status."""
    from ptxforge.reports.html import PageOptions, html_report

    refuse_compiler_flags(args, "report")
    if args.no_compile and (args.sweep or args.advise):
        raise UsageError(f"report: {'--sweep' if args.sweep else '--advise'} compiles each "
                         "kernel several times; --no-compile compiles nothing (give one or "
                         "the other)")
    if (args.caps or args.spill_budget) and not args.sweep:
        raise UsageError("report: --caps and --spill-budget go with --sweep")
    dirs = list(args.source_dir)
    many = len(args.files) > 1 or (args.files[0] != "-" and os.path.isdir(args.files[0]))
    if many:
        from ptxforge.cli.report_many import run_many

        return run_many(args, PageOptions(sass=not args.no_sass, sweep=args.sweep,
                                          caps=args.caps, spill_budget=args.spill_budget,
                                          source_dirs=dirs, advise=args.advise),
                        spec_from_args(args))
    args.file = args.files[0]
    if args.file.endswith(".py"):
        source, name = load_python_module(args.file), args.file
    else:
        source, name = read_source(args.file, args)
    if args.file != "-":
        dirs.append(os.path.dirname(os.path.abspath(args.file)))
    options = PageOptions(sass=not args.no_sass, sweep=args.sweep, caps=args.caps,
                          spill_budget=args.spill_budget, source_dirs=dirs,
                          advise=args.advise, cuda_source=_cuda_source(args))
    page = html_report(source, name, spec_from_args(args), compile=not args.no_compile,
                       kernel=args.kernel, page=options, progress=progress_printer(args))
    if args.output == "-":
        sys.stdout.write(page)
        return EXIT_OK
    try:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(page)
    except OSError as exc:
        raise InputError(f"cannot write {args.output!r}: {exc.strerror or exc}") from None
    progress_printer(args, done=True)
    sys.stderr.write(f"wrote {args.output} ({len(page.encode()):,} bytes)\n")
    return EXIT_OK
