"""Plain-text building blocks shared by every text report: tables, plurals, clipping, paths.

Paths and source locations are shortened from the left (:func:`short_path`, :func:`short_loc`):
the file name, the line number and the function are what a reader needs, the directories
least.  Long prose lines are wrapped (:func:`wrap`) and long lists capped (:func:`cap_list`).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

__all__ = ["cap_list", "clip", "plural", "short_loc", "short_path", "table", "wrap"]

#: Where a report's lines should end (a terminal of 100 columns).
WIDTH = 100


def table(header: Sequence[str], rows: Sequence[Sequence], right: set | None = None,
          indent: str = "  ", none: str = "-") -> list:
    """Aligned columns; columns in ``right`` (default: all but the first) right-aligned;
    ``None`` cells print as ``none``."""
    if right is None:
        right = set(range(1, len(header)))
    cells = [[str(h) for h in header]] + [[none if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[k]) for r in cells) for k in range(len(header))]
    out = []
    for r in cells:
        parts = [r[k].rjust(widths[k]) if k in right else r[k].ljust(widths[k])
                 for k in range(len(header))]
        out.append((indent + "  ".join(parts)).rstrip())
    return out


def plural(n: int, word: str) -> str:
    """``1 loop`` / ``2 loops`` (thousands separated)."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def clip(text: str, width: int) -> str:
    """Cut ``text`` to ``width`` characters with an ellipsis."""
    return text if len(text) <= width else text[: width - 1] + "…"


def short_path(path: str, width: int = 40) -> str:
    """``path`` in at most ``width`` characters, cut from the left at a ``/``: the file name
    (and the ``:line`` after it) is always kept whole, then as many parent folders as fit.

    Example::

        >>> short_path("/tmp/tmpa1b2c3/samples/nbody/bodysystemcuda.cu:211", 32)
        '…/nbody/bodysystemcuda.cu:211'
        >>> short_path("kernel.cu:7", 5)
        'kernel.cu:7'
    """
    if len(path) <= width:
        return path
    parts = path.split("/")
    if len(parts) == 1:
        return path
    tail = parts[-1]
    for part in reversed(parts[:-1]):
        if len(part) + len(tail) + 3 > width:
            break
        tail = part + "/" + tail
    return "…/" + tail


_LOC = re.compile(r"^(?P<path>.*?)(?P<line>:\d+(?::\d+)?)?(?P<rest> \(.*\))?$", re.DOTALL)


def short_loc(loc: str | None, width: int = 48) -> str:
    """A source location ``path:line`` with an optional `` (function)`` after it, in about
    ``width`` characters: the path shortened from the left (:func:`short_path`), the line
    number kept, the function clipped last (and never below 24 characters).

    Example::

        >>> short_loc("/home/me/cuda-samples/Samples/5_Domain/nbody/bodysystemcuda_impl.h:211"
        ...           " (bodyBodyInteraction)", 60)
        '…/nbody/bodysystemcuda_impl.h:211 (bodyBodyInteraction)'
        >>> short_loc(None)
        '?'
    """
    if loc is None:
        return "?"
    if len(loc) <= width:
        return loc
    m = _LOC.match(loc)
    path, line, rest = m.group("path"), m.group("line") or "", m.group("rest") or ""
    if rest:
        rest = " (" + clip(rest[2:-1], max(24, width // 2)) + ")"
    room = max(width - len(rest), len(path.rsplit("/", 1)[-1]) + len(line))
    return short_path(path + line, room) + rest


def wrap(text: str, width: int = WIDTH, indent: str = "", subsequent: str = "  ") -> list:
    """``text`` broken at spaces into lines of at most ``width`` characters (a word longer
    than a line stays whole); continuation lines start with ``subsequent``.

    Example::

        >>> wrap("note: " + "word " * 30, 40)[:2]
        ['note: word word word word word word word', '  word word word word word word word']
    """
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=subsequent,
                         break_long_words=False, break_on_hyphens=False) or [indent]


def cap_list(items: Sequence[str], limit: int = 6, sep: str = ", ") -> str:
    """The first ``limit`` items joined, then ``and N more``.

    Example::

        >>> cap_list(["a", "b", "c", "d"], 2)
        'a, b and 2 more'
    """
    items = list(items)
    if len(items) <= limit:
        return sep.join(items)
    return sep.join(items[:limit]) + f" and {len(items) - limit} more"
