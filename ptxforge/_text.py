"""Plain-text building blocks shared by every text report: tables, plurals, clipping, paths.

Paths and source locations are shortened from the left (:func:`short_path`, :func:`short_loc`):
the file name, the line number and the function are what a reader needs, the directories
least.  Long prose lines are wrapped (:func:`wrap`) and long lists capped (:func:`cap_list`).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

__all__ = ["cap_list", "clip", "plural", "reg_ranges", "short_loc", "short_path", "table", "wrap"]

#: Where a report's lines should end (a terminal of 100 columns).
WIDTH = 100


def table(header: Sequence[str], rows: Sequence[Sequence], right: set | None = None,
          indent: str = "  ", none: str = "-", width: int | None = None,
          shrink: Sequence = (), wrap_last: bool = False) -> list:
    """Aligned columns; columns in ``right`` (default: all but the first) right-aligned;
    ``None`` cells print as ``none``.  With ``width``, the columns in ``shrink`` (an index, or
    ``(index, cut)`` with ``cut(text, width)``; default :func:`clip`) are narrowed in turn,
    never below their header nor 12 characters, until a line fits in ``width``; with
    ``wrap_last`` too, a last (left-aligned) column that still does not fit is wrapped onto
    continuation lines under itself instead.

    Example::

        >>> table(("name", "n"), [("a_rather_long_kernel_name", 1)], width=20, shrink=[0])
        ['  name             n', '  a_rather_long_…  1']
    """
    if right is None:
        right = set(range(1, len(header)))
    cells = [[str(h) for h in header]] + [[none if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[k]) for r in cells) for k in range(len(header))]
    if width is not None:
        excess = len(indent) + sum(widths) + 2 * (len(widths) - 1) - width
        for spec in shrink:
            if excess <= 0:
                break
            col, cut = spec if isinstance(spec, tuple) else (spec, clip)
            floor = max(len(cells[0][col]), 12)
            room = max(floor, widths[col] - excess)
            if room >= widths[col]:
                continue
            for r in cells[1:]:
                r[col] = r[col] if len(r[col]) <= room else cut(r[col], room)
            widths[col] = max(len(r[col]) for r in cells)
            excess = len(indent) + sum(widths) + 2 * (len(widths) - 1) - width
    last = len(header) - 1
    start = len(indent) + sum(widths[:last]) + 2 * last
    room = max(20, (width or 0) - start)
    wrapping = wrap_last and width is not None and widths[last] > room
    if wrapping:
        widths[last] = room
    out = []
    for r in cells:
        pieces = wrap(r[last], room, subsequent="") if wrapping else [r[last]]
        cols = [*r[:last], pieces[0]]
        parts = [cols[k].rjust(widths[k]) if k in right else cols[k].ljust(widths[k])
                 for k in range(len(header))]
        out.append((indent + "  ".join(parts)).rstrip())
        out += [" " * start + piece for piece in pieces[1:]]
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
    assert m is not None  # every part of the pattern is optional: it matches any text
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
    if len(indent) + len(text) <= width and text and not text[-1].isspace() \
            and _OTHER_SPACE.search(text) is None:
        return [indent + text]   # what textwrap gives for a line that fits, without its cost
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=subsequent,
                         break_long_words=False, break_on_hyphens=False) or [indent]


#: The white space textwrap turns into spaces (a text with any takes textwrap's path).
_OTHER_SPACE = re.compile("[\t\n\x0b\x0c\r]")


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


_REG = re.compile(r"^(?P<kind>[A-Za-z_%.]*?)(?P<n>\d+)$")


def reg_ranges(names: Sequence[str], sep: str = " ") -> str:
    """Register names with runs of consecutive numbers written as ranges, in the given order
    (a name without a number stays as it is).

    Example::

        >>> reg_ranges(["R0", "R1", "R2", "R5", "R7", "R8", "P0", "RZ"])
        'R0-R2 R5 R7-R8 P0 RZ'
    """
    out: list = []
    run: list = []          # [kind, first, last]
    for name in names:
        m = _REG.match(name)
        if m and run and m.group("kind") == run[0] and int(m.group("n")) == run[2] + 1:
            run[2] += 1
            continue
        if run:
            out.append(f"{run[0]}{run[1]}" + (f"-{run[0]}{run[2]}" if run[2] > run[1] else ""))
            run = []
        if m:
            run = [m.group("kind"), int(m.group("n")), int(m.group("n"))]
        else:
            out.append(name)
    if run:
        out.append(f"{run[0]}{run[1]}" + (f"-{run[0]}{run[2]}" if run[2] > run[1] else ""))
    return sep.join(out)
