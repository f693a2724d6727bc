"""``ptxforge report`` over several files or folders: one page per file and an index, ``--jobs`` at a time."""

from __future__ import annotations

import html
import os
import sys

from ptxforge.cli.common import EXIT_FAILURE, EXIT_OK, InputError, UsageError, message
from ptxforge.errors import PtxforgeError

__all__ = ["DEFAULT_FOLDER", "run_many"]

#: Where the pages go when ``-o`` is not given.
DEFAULT_FOLDER = "ptxforge-report"


def _page(task: tuple) -> tuple:
    """``(True, html)`` of one file's page, or ``(False, why not)`` (run in a worker)."""
    import attrs

    from ptxforge.cli.common import read_input
    from ptxforge.reports.html import html_report

    path, o = task
    page = attrs.evolve(o["page"], source_dirs=[*o["page"].source_dirs,
                                                os.path.dirname(os.path.abspath(path))])
    try:
        source, name = read_input(path)
        return True, html_report(source, name, o["spec"], compile=o["compile"],
                                 kernel=o["kernel"], page=page)
    except PtxforgeError as exc:
        return False, message(exc)


def _targets(files: list) -> list:
    """``[(input path, page name relative to the output folder)]``; a folder's files keep
    their path under it, names that would collide get the argument's number."""
    from ptxforge.frontends.inputs import expand

    out, seen = [], set()
    for n, path in enumerate(files, 1):
        try:
            found = expand(path)
        except PtxforgeError as exc:
            raise InputError(str(exc)) from None
        for kind, what, rel in found:
            src = what.ptx_path if kind == "triton" else what
            page = os.path.splitext(rel)[0] + ".html"
            if page in seen:
                page = os.path.join(str(n), page)
            seen.add(page)
            out.append((src, page))
    return out


def _index(rows: list) -> str:
    items = "\n".join(
        f'<tr><td><a href="{html.escape(page)}">{html.escape(src)}</a></td><td>ok</td></tr>'
        if ok else f"<tr><td>{html.escape(src)}</td><td>{html.escape(why)}</td></tr>"
        for src, page, ok, why in rows)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>ptxforge reports</title><style>body{font-family:sans-serif;margin:2em}"
            "td,th{padding:.2em 1em .2em 0;text-align:left;vertical-align:top}</style></head><body><h1>ptxforge reports</h1>"
            f"<table><tr><th>file (its page)</th><th>status</th></tr>\n{items}\n</table></body></html>\n")


def _write(path: str, text: str) -> None:
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise InputError(f"cannot write {path!r}: {exc.strerror or exc}") from None


def run_many(args, page_options, spec) -> int:
    """Write one page per input file into the ``-o`` folder (default
    :data:`DEFAULT_FOLDER`) and an ``index.html`` linking them; each file written is
    announced on standard error; a file that cannot be analysed is named there and in the
    index (exit 1), the others still get their page."""
    from ptxforge._parallel import ordered_imap

    if "-" in args.files:
        raise UsageError("report: '-' (standard input) cannot be one of several inputs")
    folder = DEFAULT_FOLDER if args.output in (None, "report.html") else args.output
    if folder == "-":
        raise UsageError("report: several inputs write several pages: give -o FOLDER")
    targets = _targets(list(args.files))
    opts = {"spec": spec, "compile": not args.no_compile, "kernel": args.kernel,
            "page": page_options}
    results = ordered_imap(_page, [(src, opts) for src, _ in targets], args.jobs)
    rows, failed = [], 0
    for (src, page), (ok, value) in zip(targets, results):
        if ok:
            _write(os.path.join(folder, page), value)
            sys.stderr.write(f"wrote {os.path.join(folder, page)}\n")
        else:
            failed += 1
            sys.stderr.write(f"ptxforge: error: {value}\n")
        rows.append((src, page, ok, "" if ok else value))
    index = os.path.join(folder, "index.html")
    _write(index, _index(rows))
    sys.stderr.write(f"wrote {index} ({len(rows) - failed} of {len(rows)} pages)\n")
    return EXIT_FAILURE if failed else EXIT_OK
