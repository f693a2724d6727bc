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

__all__ = ["short_label", "short_labels"]


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
