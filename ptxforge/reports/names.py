"""Kernel names as users read them in a report: distinct short labels.

Every command prints a kernel by its demangled name without the parameter list, and every
command's ``--kernel`` accepts that name, the mangled one, the full demangled signature, or an
unambiguous prefix of any of them: that lookup lives in :mod:`ptxforge.ptx.names`, where the
library's ``compile_ptx(...)[name]`` and ``load(...)[name]`` use it too.  Long names are cut
in the middle so that templated names that differ only at their end stay distinct
(:func:`short_labels`).

Example::

    >>> short_labels(["cub::DeviceReduceKernel<Policy600, float*, int>",
    ...               "cub::DeviceReduceKernel<Policy600, double*, int>"], 30)
    ['cub::DeviceRedu…, float*, int>', 'cub::DeviceRedu… double*, int>']
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["short_label", "short_labels", "title_lines"]


def short_label(name: str, width: int = 40) -> str:
    """``name`` in at most ``width`` characters, cut in the middle (the head says which
    template, the tail which instantiation).

    Example::

        >>> short_label("void_kernel_with_a_really_long_name_and_suffix_v2", 20)
        'void_kerne…suffix_v2'
    """
    if len(name) <= width:
        return name
    tail = (width - 1) // 2
    return name[: width - 1 - tail] + "…" + name[-tail:]


def short_labels(names: Sequence[str], width: int = 40) -> list:
    """:func:`short_label` of each name, widened where two distinct names would print the
    same (up to the whole names)."""
    w = width
    while True:
        out = [short_label(n, w) for n in names]
        seen: dict = {}
        clash = False
        for full, short in zip(names, out):
            if seen.setdefault(short, full) != full:
                clash = True
        longest = max((len(n) for n in names), default=0)
        if not clash or w >= longest:
            return out
        w += 8


def title_lines(name: str, kind: str = "", mangled: str = "", width: int = 100) -> list:
    """A kernel's heading, ``== name (kind) ==``, wrapped at ``width``; a name with a word too
    long for a line (an ``extern "C"`` name of 1,000 characters) is cut in the middle there and
    given whole on a ``full name:`` line below, as the ``mangled name:`` line gives ``mangled``
    (when it differs from ``name``).

    Example::

        >>> [len(line) for line in title_lines("k" * 120, ".entry")]
        [100, 131]
    """
    from ptxforge._text import wrap

    tail = f" ({kind}) ==" if kind else " =="
    lines = wrap(f"== {name}{tail}", width, subsequent="   ")
    extra = []
    if any(len(line) > width for line in lines):
        lines = [f"== {short_label(name, width - 3 - len(tail))}{tail}"]
        extra = [f"full name: {name}"]
    if mangled and mangled != name:
        extra.append(f"mangled name: {mangled}")
    return lines + extra
