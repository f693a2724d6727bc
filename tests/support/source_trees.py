"""Each source file read and parsed (``ast``) once per test session, for the tests that scan
the package's or the tests' source (layering, opcode table, function length, example counts).

The trees are shared: a caller walks them and never changes them.  A file is read again when
its size or modification time changes (a test that writes a sample file into ``tmp_path``
gets that file's tree).

Example::

    >>> import source_trees
    >>> source_trees.tree(source_trees.__file__).body[0].value.value.startswith("Each source")
    True
"""

from __future__ import annotations

import ast
import functools
import os
from pathlib import Path

__all__ = ["source", "tree"]


def _stamp(path) -> tuple:
    path = Path(path).resolve()
    st = os.stat(path)
    return path, st.st_size, st.st_mtime_ns


@functools.cache
def _read(path: Path, size: int, mtime: int) -> str:
    return path.read_text(encoding="utf-8")


@functools.cache
def _parse(path: Path, size: int, mtime: int) -> ast.Module:
    return ast.parse(_read(path, size, mtime), str(path))


def source(path) -> str:
    """The text of the file at ``path`` (read once while it is unchanged)."""
    return _read(*_stamp(path))


def tree(path) -> ast.Module:
    """The ``ast`` of the file at ``path`` (parsed once while it is unchanged; do not modify)."""
    return _parse(*_stamp(path))
