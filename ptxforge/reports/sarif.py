"""A budget check as SARIF 2.1.0, the format code-scanning UIs read to annotate source lines.

One run (tool ``ptxforge``, one rule per budget kind, :data:`ptxforge.reports.check.RULES`);
one result per limit that fails (level ``error``) or cannot be checked (level ``warning``,
which ``ptxforge check`` still counts as a failure).  Each result is located at the kernel's
own source line (its first ``.loc``: the CUDA, Triton or numba line that defines the kernel)
when the PTX has line information, else at its ``.entry`` line in the PTX file, with the
kernel as a logical location and the source lines that hold the most registers at the
pressure peak as related locations.  Paths under ``root`` (default: the current directory)
become relative URIs against ``%SRCROOT%``; others become ``file://`` URIs.  Data races from
``ptxforge check --races`` are results too, under the ``data-race`` rule (:func:`race_results`),
and so is each input file that could not be read, parsed or compiled (``input-not-checked``,
at the line its error names).

Example::

    >>> from ptxforge.reports.check import CheckReport
    >>> log = sarif_log(CheckReport(findings=(), kernels=()))
    >>> log["version"], log["runs"][0]["tool"]["driver"]["name"], log["runs"][0]["results"]
    ('2.1.0', 'ptxforge', [])
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Optional

from ptxforge.ptx.demangle import display_name

from .check import RULES, CheckReport

__all__ = ["NOT_CHECKED_RULE", "RACE_RULE", "SARIF_SCHEMA", "artifact_uri", "race_results",
           "sarif_log", "sarif_text"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_INFO_URI = "https://github.com/ptxforge/ptxforge"


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("ptxforge")
    except Exception:  # pragma: no cover - not installed
        return "0"


def artifact_uri(path: str, root: Optional[str] = None) -> tuple:
    """``(uri, uriBaseId or None)`` for a file: relative to ``root`` (default the current
    directory) when under it, else an absolute ``file://`` URI.

    Example::

        >>> artifact_uri("/src/kern/a.py", "/src")
        ('kern/a.py', '%SRCROOT%')
        >>> artifact_uri("/opt/x.ptx", "/src")
        ('file:///opt/x.ptx', None)
    """
    p = pathlib.PurePosixPath(path.replace(os.sep, "/"))
    base = pathlib.PurePosixPath((root or os.getcwd()).replace(os.sep, "/"))
    if not p.is_absolute():
        return p.as_posix(), "%SRCROOT%"
    try:
        return p.relative_to(base).as_posix(), "%SRCROOT%"
    except ValueError:
        return pathlib.Path(str(p)).as_uri() if os.sep == "/" else "file://" + p.as_posix(), None


def _physical(path: str, line: Optional[int], root: Optional[str]) -> dict:
    uri, base = artifact_uri(path, root)
    loc = {"artifactLocation": {"uri": uri, **({"uriBaseId": base} if base else {})}}
    if line:
        loc["region"] = {"startLine": int(line)}
    return loc


def _result(f, index: int, root: Optional[str]) -> dict:
    k = f.kernel
    if k.source is not None:
        physical = _physical(k.source[0], k.source[1], root)
    else:
        physical = _physical(k.file, k.entry_line, root)
    related = []
    for i, (file, line, units) in enumerate(k.peak_lines):
        related.append({"id": i + 1, "physicalLocation": _physical(file, line, root),
                        "message": {"text": f"defines {units} of the 32-bit registers live at "
                                            "the pressure peak"}})
    out = {
        "ruleId": f.rule,
        "ruleIndex": index,
        "level": "error" if f.status == "fail" else "warning",
        "message": {"text": f.message},
        "locations": [{"physicalLocation": physical,
                       "logicalLocations": [{"name": display_name(k.name),
                                             "fullyQualifiedName": k.demangled,
                                             "decoratedName": k.name, "kind": "function"}]}],
        "partialFingerprints": {"ptxforgeKernel/v1": f"{k.name}:{f.rule}"},
        "properties": {"status": f.status, "limit": f.limit, "actual": f.actual,
                       "kernel": k.name, "file": k.file, "arch": k.arch},
    }
    if related:
        out["relatedLocations"] = related
    return out


#: The rule of an input file ``check`` could not read, parse or compile (it fails the check).
NOT_CHECKED_RULE = ("input-not-checked", ("the file could not be read, parsed or compiled, so "
                                          "none of its kernels was checked"))


def _not_checked_result(path: str, error: str, index: int, root: Optional[str]) -> dict:
    """The SARIF result of a file ``check`` could not check (its line when the error names
    one: ``file:line:col: ...``)."""
    first = error.splitlines()[0] if error else "error"
    line = None
    if first.startswith(path + ":"):
        head = first[len(path) + 1:].split(":", 1)[0]
        line = int(head) if head.isdigit() and int(head) > 0 else None
    return {"ruleId": NOT_CHECKED_RULE[0], "ruleIndex": index, "level": "error",
            "message": {"text": error or "error"},
            "locations": [{"physicalLocation": _physical(path, line, root)}],
            "partialFingerprints": {"ptxforgeInput/v1": f"{path}:{NOT_CHECKED_RULE[0]}"},
            "properties": {"file": path}}


#: The rule of a data race found on the interpreter (``ptxforge check --races``).
RACE_RULE = ("data-race", ("two threads access the same memory, at least one writing, with no "
                           "barrier between them (found by running the kernel on the PTX "
                           "interpreter)"))


def _site_location(site, kernel_file: str, root: str | None) -> dict:
    """A race side's location: its .loc line, else its line in the PTX file."""
    if site.line is not None and site.file:
        return _physical(site.file, site.line, root)
    return _physical(kernel_file, site.ptx_line, root)


def race_results(races, kernel: str, kernel_file: str, index: int,
                 root: str | None = None) -> list:
    """SARIF results for ``races`` (:class:`ptxforge.emulator.races.Race` values) of
    ``kernel`` read from ``kernel_file``: each at the later access's line, the earlier access
    as a related location; ``index`` is the rule's index in the run.

    Example::

        >>> race_results([], "k", "k.ptx", 4)
        []
    """
    out = []
    for race in races:
        first, second = race.first, race.second
        out.append({
            "ruleId": RACE_RULE[0], "ruleIndex": index, "level": "error",
            "message": {"text": race.message()},
            "locations": [{"physicalLocation": _site_location(second, kernel_file, root),
                           "logicalLocations": [{"name": display_name(kernel),
                                                 "decoratedName": kernel, "kind": "function"}]}],
            "relatedLocations": [{"id": 1,
                                  "physicalLocation": _site_location(first, kernel_file, root),
                                  "message": {"text": f"the other access: {first.opcode} "
                                                      f"(instruction {first.index})"}}],
            "partialFingerprints": {"ptxforgeRace/v1": f"{kernel}:{race.kind}:{first.index}:"
                                                       f"{second.index}"},
            "properties": {"kind": race.kind, "space": race.space, "address": race.address,
                           "first_index": first.index, "second_index": second.index,
                           "same_value": race.same_value, "kernel": kernel},
        })
    return out


def sarif_log(report: CheckReport, root: Optional[str] = None, races: tuple = ()) -> dict:
    """The SARIF 2.1.0 log (a dict) of ``report``; see the module docstring.  ``races``:
    ``(kernel, file, [Race, ...])`` triples from ``ptxforge check --races``, one result each
    under the ``data-race`` rule."""
    ids = list(RULES)
    rules = [{"id": rid, "name": "".join(w.title() for w in rid.split("-")),
              "shortDescription": {"text": desc},
              "defaultConfiguration": {"level": "error"},
              "helpUri": _INFO_URI + "/blob/main/docs/ci.md"}
             for rid, (_, desc) in RULES.items()]
    results = [_result(f, ids.index(f.rule), root) for f in report.failures]
    if report.not_checked:
        rules.append({"id": NOT_CHECKED_RULE[0], "name": "InputNotChecked",
                      "shortDescription": {"text": NOT_CHECKED_RULE[1]},
                      "defaultConfiguration": {"level": "error"},
                      "helpUri": _INFO_URI + "/blob/main/docs/ci.md"})
        results += [_not_checked_result(p, e, len(rules) - 1, root)
                     for p, e in report.not_checked]
    if races:
        rules.append({"id": RACE_RULE[0], "name": "DataRace",
                      "shortDescription": {"text": RACE_RULE[1]},
                      "defaultConfiguration": {"level": "error"},
                      "helpUri": _INFO_URI + "/blob/main/docs/memory.md"})
        for kernel, file, found in races:
            results += race_results(found, kernel, file, len(rules) - 1, root)
    run = {"tool": {"driver": {"name": "ptxforge", "version": _version(),
                               "informationUri": _INFO_URI, "rules": rules}},
           "originalUriBaseIds": {"%SRCROOT%": {"uri": pathlib.Path(
               os.path.abspath(root or os.getcwd())).as_uri() + "/"}},
           "invocations": [{"executionSuccessful": True,
                            "exitCode": max(report.exit_status,
                                            int(any(found for _, _, found in races)))}],
           "results": results}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def sarif_text(report: CheckReport, root: Optional[str] = None, races: tuple = ()) -> str:
    """:func:`sarif_log` as JSON text (deterministic: sorted keys, two-space indent)."""
    return json.dumps(sarif_log(report, root, races), indent=2, sort_keys=True,
                      ensure_ascii=False) + "\n"
