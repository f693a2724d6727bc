"""``ptxforge analyze: per-kernel registers, instruction mix, pressure peak, ptxas figures, occupancy."""

from __future__ import annotations

import os

import attrs

from ptxforge.cli.common import (
    EXIT_FAILURE,
    EXIT_OK,
    InputError,
    UsageError,
    add_common,
    add_jobs,
    count_type,
    emit,
    message,
    progress_printer,
    read_input,
    read_source,
    refuse_compiler_flags,
    request_from_args,
    spec_from_args,
)
from ptxforge.errors import PtxforgeError

__all__ = ["add", "run"]


def add(sub) -> None:
    """Add the ``analyze`` sub-command to the sub-parsers ``sub``."""
    a = sub.add_parser("analyze", help="per-kernel registers, instruction mix, pressure peak, "
                                       "ptxas figures and occupancy",
                       description="Analyse every kernel of PTX files or cubins ('-' reads "
                                   "stdin); a folder is searched for them (and Triton cache "
                                   "entries), several files or folders are analysed in turn "
                                   "(--jobs at a time).")
    a.add_argument("files", nargs="+", metavar="FILE.ptx|FILE.cubin|DIR")
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
    refuse_compiler_flags(args, "analyze")
    if len(args.files) > 1 or (args.files[0] != "-" and os.path.isdir(args.files[0])
                               and not _triton_dir(args.files[0])):
        return _run_many(args)
    args.file = args.files[0]
    return _run_one(args)


def _triton_dir(path: str) -> bool:
    from ptxforge.frontends import triton_cache

    return bool(triton_cache.scan(path))


def _run_one(args) -> int:
    """One file (or one Triton cache): its report."""
    if args.file != "-" and os.path.isdir(args.file):  # a Triton cache: every kernel in it
        return _run_cache(args)
    data, name = read_source(args.file, args)
    # the SASS explanations are read at once when every kernel's will be printed
    explain = True if args.json or args.full else False if args.summary else None
    request = request_from_args(args)
    data, started = _start_early(args, data, request, explain)
    from ptxforge.frontends import triton_cache

    spec = spec_from_args(args)
    entry = triton_cache.entry_for_ptx(args.file)  # Triton's PTX: its block size and shared
    if entry is not None:
        spec = attrs.evolve(spec, block=spec.block or entry.block_size,
                            dynamic_shared=spec.dynamic_shared or entry.shared)
    if isinstance(data, bytes):
        from ptxforge.frontends.fatbin import analyze_container, is_fatbin_container

        if is_fatbin_container(data):   # a fatbin or a .so: each entry
            if args.by != "line":
                raise UsageError("analyze: --by applies to PTX, not to a fat binary")
            rep = analyze_container(data, name, spec, kernel=args.kernel,
                                    compile=not args.no_compile, request=request)
            emit(args, rep.to_dict() if args.json else None, rep.to_text)
            return EXIT_OK
    if data[:4] == b"\x7fELF":
        from ptxforge.reports.cubin import analyze_cubin

        if args.no_compile or args.by != "line":
            raise UsageError("analyze: --no-compile and --by apply to PTX, not to a cubin")
        report = analyze_cubin(data, name, spec, kernel=args.kernel)
        emit(args, report.to_dict() if args.json else None, report.to_text)
        return EXIT_OK
    from ptxforge.reports.analyze import RunOptions, analyze_ptx

    res = analyze_ptx(data, name, spec, compile=not args.no_compile, strict=not args.lenient,
                      kernel=args.kernel, request=request,
                      run=RunOptions(progress=progress_printer(args), explain=explain,
                                     jobs=args.jobs, started=started))
    progress_printer(args, done=True)
    if entry is not None:
        res = triton_cache.with_n_spills_note(res)
    emit(args, res.to_dict(args.top) if args.json else None,
          lambda: res.to_text(args.top, args.by,
                              True if args.summary else False if args.full else None))
    return EXIT_OK


def _start_early(args, data, request, explain) -> tuple:
    """``(data, started)``: for PTX text (no NUL byte in its first 4 KiB: a cubin, a fat
    binary or a zip has some) compiled by default, ptxas started on it now, before the
    analysis and the other front doors load (``data`` then as text); else ``(data, None)``."""
    if args.no_compile or args.kernel is not None:
        return data, None
    if isinstance(data, bytes):
        if b"\0" in data[:4096]:
            return data, None
        data = data.decode("utf-8", errors="replace")
    from ptxforge.reports.analyze_compile import start_early

    started = start_early(data, args.arch, request, explain, args.jobs)
    if started is not None:   # the imports below would only slow ptxas's start (one lock)
        started.side.wait_for_launch()
    return data, started


def _run_cache(args) -> int:
    """A Triton cache folder: every kernel in it."""
    from ptxforge.frontends import triton_cache

    if not triton_cache.scan(args.file):
        raise InputError(f"{args.file!r} is a directory with no Triton cache in it "
                         "(HASH/NAME.ptx with NAME.json): analyze reads one PTX or cubin "
                         "file, or a Triton cache; check and diff read folders of PTX")
    cached = triton_cache.analyze_cache(args.file, kernel=args.kernel, target=args.arch,
                                        compile=not args.no_compile)
    emit(args, [r.to_dict(args.top) for r in cached] if args.json else None,
         lambda: "\n".join(r.to_text(args.top, args.by) for r in cached))
    return EXIT_OK


def _run_many(args) -> int:
    """Several files and folders: each file's report in turn (the files analysed ``--jobs``
    at a time, the output in the order given; JSON: a list of the files' reports); a file
    that cannot be analysed is named on standard error and the others still are (exit 1)."""
    import json
    import sys

    from ptxforge._parallel import ordered_map
    from ptxforge.frontends.inputs import expand

    if "-" in args.files:
        raise UsageError("analyze: '-' (standard input) cannot be one of several inputs")
    spec, request = spec_from_args(args), request_from_args(args)
    opts = dict(spec=spec, request=request, compile=not args.no_compile,
                strict=not args.lenient, kernel=args.kernel, json=args.json, top=args.top,
                arch=args.arch, cu_flags=args.cu_flags,
                by=args.by, summary=True if args.summary else False if args.full else None)
    tasks = []
    for path in args.files:
        try:
            tasks += [(kind, what, opts) for kind, what, _ in expand(path)]
        except PtxforgeError as exc:
            raise InputError(str(exc)) from None
    results = ordered_map(_analyze_file, tasks, args.jobs)
    failed = 0
    reports = []
    for ok, value in results:
        if ok:
            reports.append(value)
        else:
            failed += 1
            sys.stderr.write(f"ptxforge: error: {value}\n")
    if args.json:
        sys.stdout.write(json.dumps(reports, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write("\n".join(reports))
    return EXIT_FAILURE if failed else EXIT_OK


def _analyze_file(task: tuple) -> tuple:
    """``(True, report text or JSON dict)`` of one file, or ``(False, why not)`` (run in a
    worker process: errors travel back as text)."""
    from ptxforge.frontends import triton_cache
    from ptxforge.reports.analyze import SCHEMA, NoKernelError, RunOptions, analyze_ptx

    kind, what, o = task
    try:
        if kind == "triton":
            res, _ = triton_cache.analyze_entry(what, compile=o["compile"],
                                                target=o["spec"].target)
            return True, (res.to_dict(o["top"]) if o["json"] else res.to_text(o["top"], o["by"]))
        data, name = read_input(what)
        if kind == "cu":
            from ptxforge.frontends.cuda_source import compile_cuda

            data = compile_cuda(data, name, o["arch"], o["cu_flags"])
        if kind == "cubin":
            from ptxforge.reports.cubin import analyze_cubin

            rep = analyze_cubin(data, name, o["spec"], kernel=o["kernel"])
            return True, (rep.to_dict() if o["json"] else rep.to_text())
        explain = True if o["json"] or o["summary"] is False else None
        try:
            res = analyze_ptx(data, name, o["spec"], compile=o["compile"], strict=o["strict"],
                              kernel=o["kernel"], request=o["request"],
                              run=RunOptions(explain=explain))
        except NoKernelError:   # a file of globals, as build folders have: listed, not an error
            return True, ({"schema": SCHEMA, "file": name, "kernels": [],
                           "notes": ["no kernel: the file holds no .entry and no .func with a "
                                     "body"]} if o["json"] else
                          f"{name}: no kernel (no .entry and no .func with a body)\n")
        return True, (res.to_dict(o["top"]) if o["json"] else
                      res.to_text(o["top"], o["by"], o["summary"]))
    except PtxforgeError as exc:
        return False, message(exc)
