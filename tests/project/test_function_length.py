"""Readable hot paths: no function of ptxforge is longer than :data:`LIMIT` lines.

A function this long has a seam worth a name (the list scheduler was 243 lines before its
dependence graph, heights, pressure state and issue loop were split; the liveness solver 183
before its simple/complex split, fixpoints and sweep).  Lines are counted from ``def`` to the
function's last line, docstring and comments included (``ast``'s ``end_lineno``).
"""

from __future__ import annotations

import ast

from package_modules import PACKAGE, package_modules
from source_trees import tree

#: The most lines one function may span.  After issue 23 the longest are the PTX reader's
#: module loop (101, ``ptx/parse/reader.py``) and the list scheduler's issue loop (100); the
#: margin leaves room for edits in flight.  Lower it to 100 once the reader's loop is split.
LIMIT = 110


def _long_functions(limit: int) -> list[str]:
    out = []
    for path in package_modules().values():
        for node in ast.walk(tree(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > limit:
                    rel = path.relative_to(PACKAGE).as_posix()
                    out.append(f"{rel}:{node.lineno} {node.name} ({length} lines)")
    return sorted(out)


def test_no_function_is_longer_than_the_limit():
    assert not _long_functions(LIMIT), _long_functions(LIMIT)


def test_the_check_can_fail():
    # the walk sees real functions: the package has some over a third of the limit
    assert _long_functions(LIMIT // 3)
