"""A budget check as JUnit XML: one test case per kernel and budget kind, for CI test reports.

``<testsuites>`` holds one ``<testsuite>`` per input file (named by the file); each checked
limit of each kernel is a ``<testcase classname=FILE name="KERNEL: RULE">``; a limit that
fails has a ``<failure type=RULE message=…>``, one that cannot be checked an ``<error>``; a
file that could not be read, parsed or compiled is a suite of one ``input`` case in error.
Counts (``tests``, ``failures``, ``errors``) are on every suite and on the root.

Example::

    >>> from ptxforge.reports.check import CheckReport
    >>> junit_xml(CheckReport(findings=(), kernels=())).splitlines()[1]
    '<testsuites name="ptxforge check" tests="0" failures="0" errors="0" />'
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ptxforge.ptx.demangle import display_name

from .check import CheckReport

__all__ = ["junit_xml"]


def junit_xml(report: CheckReport) -> str:
    """The JUnit XML text of ``report`` (deterministic; files in the order checked)."""
    suites: dict = {}
    for f in report.findings:
        suites.setdefault(f.kernel.file, []).append(f)
    root = ET.Element("testsuites", {"name": "ptxforge check"})
    totals = [0, 0, 0]
    for file, findings in suites.items():
        fails = sum(f.status == "fail" for f in findings)
        errors = sum(f.status == "unknown" for f in findings)
        suite = ET.SubElement(root, "testsuite", {
            "name": file, "tests": str(len(findings)), "failures": str(fails),
            "errors": str(errors), "skipped": "0"})
        for f in findings:
            case = ET.SubElement(suite, "testcase", {
                "classname": file, "name": f"{display_name(f.kernel.name)}: {f.rule}"})
            if f.status == "fail":
                ET.SubElement(case, "failure", {"type": f.rule, "message": f.message}).text = (
                    f"limit {f.limit}, actual {f.actual}")
            elif f.status == "unknown":
                ET.SubElement(case, "error", {"type": f.rule, "message": f.message})
        totals[0] += len(findings)
        totals[1] += fails
        totals[2] += errors
    for file, error in report.not_checked:   # the file itself: one test case in error
        suite = ET.SubElement(root, "testsuite", {"name": file, "tests": "1", "failures": "0",
                                                  "errors": "1", "skipped": "0"})
        case = ET.SubElement(suite, "testcase", {"classname": file, "name": "input"})
        first = error.splitlines()[0] if error else "error"
        ET.SubElement(case, "error", {"type": "input-not-checked", "message": first}).text = error
        totals[0] += 1
        totals[2] += 1
    root.set("tests", str(totals[0]))
    root.set("failures", str(totals[1]))
    root.set("errors", str(totals[2]))
    ET.indent(root)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            + ET.tostring(root, encoding="unicode") + "\n")
