"""Plain-text building blocks shared by every text report: aligned tables, plurals, clipping."""

from __future__ import annotations

from typing import Optional, Sequence

__all__ = ["table", "plural", "clip"]


def table(header: Sequence[str], rows: Sequence[Sequence], right: Optional[set] = None,
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
