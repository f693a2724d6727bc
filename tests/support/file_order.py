"""The order the xdist workers take the test files in: the longest first.

``--dist loadfile`` hands each worker one file at a time from a queue; by default xdist sorts
that queue by the number of tests in a file, so a file of a few long tests (the property tests,
the list scheduler against its reference, the examples) came last and one worker ran it while
the other sat idle.  :func:`ordered` puts the files of :data:`LONGEST` first, longest first, then
the rest by their number of tests as xdist would; pyproject's addopts pass
``--no-loadscope-reorder`` so xdist keeps this order.  Only the order in which files start
changes: the tests of one file keep theirs and run in one worker, as before.

Example::

    >>> import file_order
    >>> file_order.rank("tests/ptx/test_properties_parser.py", 1) < \\
    ...     file_order.rank("tests/ptx/test_names.py", 40)
    True
"""

from __future__ import annotations

import collections

__all__ = ["LONGEST", "ordered", "rank"]

#: The files that take longest (wall time of each in one worker of a full run, 2026-11-27),
#: longest first.  A file missing here is only scheduled later; nothing else depends on it.
LONGEST = (
    "tests/ptx/test_properties_parser.py",
    "tests/analysis/test_listsched_reference.py",
    "tests/dsl/test_properties_ptxas.py",
    "tests/analysis/test_properties_liveness.py",
    "tests/project/test_examples.py",
    "tests/browser/test_report_browser.py",
    "tests/reports/test_html_report.py",
    "tests/ptx/test_strict_breadth.py",
    "tests/frontends/test_triton.py",
    "tests/analysis/test_prediction.py",
    "tests/analysis/test_interference.py",
    "tests/ptx/test_strict.py",
    "tests/cli/test_scaling.py",
)


def rank(path: str, count: int) -> tuple:
    """The sort key of the file ``path`` (relative to the repository) holding ``count`` tests."""
    if path in LONGEST:
        return (0, LONGEST.index(path))
    return (1, -count)


def ordered(items: list) -> list:
    """``items`` (pytest's) with whole files moved by :func:`rank`, each file's tests in their
    own order."""
    def path(item) -> str:
        return item.nodeid.split("::", 1)[0]

    counts = collections.Counter(path(item) for item in items)
    first = {}
    for i, item in enumerate(items):
        first.setdefault(path(item), i)
    return sorted(items, key=lambda item: (rank(path(item), counts[path(item)]),
                                           first[path(item)]))
