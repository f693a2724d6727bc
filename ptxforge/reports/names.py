"""Kernel names as users type and read them: ``--kernel`` matching and distinct short labels.

Every command prints a kernel by its demangled name without the parameter list
(:func:`~ptxforge.reports.peak.display_name`: ``MatrixMulCUDA<32>``), and every command's
``--kernel`` accepts that name, the mangled one, the full demangled signature, or an
unambiguous prefix of any of them (:func:`match_kernel`).  Spaces do not matter
(``map2<float,Saxpy<float>>`` names ``map2<float, Saxpy<float> >``).  Long names are cut in
the middle so that templated names that differ only at their end stay distinct
(:func:`short_labels`).

Example::

    >>> names = ["_Z13MatrixMulCUDAILi16EEvPfS0_S0_ii", "_Z13MatrixMulCUDAILi32EEvPfS0_S0_ii"]
    >>> match_kernel(names, "MatrixMulCUDA<32>")
    '_Z13MatrixMulCUDAILi32EEvPfS0_S0_ii'
    >>> short_labels(["cub::DeviceReduceKernel<Policy600, float*, int>",
    ...               "cub::DeviceReduceKernel<Policy600, double*, int>"], 30)
    ['cub::DeviceRedu…, float*, int>', 'cub::DeviceRedu… double*, int>']
"""

from __future__ import annotations

from collections.abc import Sequence

from ptxforge.errors import PtxforgeError
from ptxforge.ptx.demangle import display_name, full_name

__all__ = ["match_kernel", "match_kernels", "short_label", "short_labels"]


def _norm(text: str) -> str:
    return "".join(text.split())


def _spellings(name: str) -> tuple:
    return tuple(dict.fromkeys(_norm(s) for s in (name, display_name(name), full_name(name))))


def match_kernel(names: Sequence[str], wanted: str, file: str = "the file") -> str:
    """The one name of ``names`` (as the PTX spells them) that ``wanted`` designates: an exact
    mangled, demangled or full demangled name, else the only name one of whose spellings
    starts with ``wanted``.  No match, or several, is a PtxforgeError listing the names
    (demangled) and, for several, the candidates.

    Example::

        >>> match_kernel(["_Z3fooPf", "_Z3barPf"], "ba")
        '_Z3barPf'
        >>> match_kernel(["_Z4map2IfEvPf", "_Z4map2IdEvPd"], "map2")
        Traceback (most recent call last):
        ...
        ptxforge.errors.PtxforgeError: kernel 'map2' is ambiguous in the file: it names map2<float> (_Z4map2IfEvPf) and map2<double> (_Z4map2IdEvPd); give more of the name, or the mangled name
    """
    if wanted in names:
        return wanted
    key = _norm(wanted)
    exact = [n for n in names if key in _spellings(n)]
    if len(exact) == 1:
        return exact[0]
    hits = exact or [n for n in names if any(s.startswith(key) for s in _spellings(n))]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        listed = ", ".join(display_name(n) for n in names) or "none"
        raise PtxforgeError(f"no kernel named {wanted!r} in {file}; it has: {listed}")
    shown = [f"{display_name(n)} ({n})" for n in hits[:8]]
    more = f" and {len(hits) - 8} more" if len(hits) > 8 else ""
    raise PtxforgeError(f"kernel {wanted!r} is ambiguous in {file}: it names "
                        f"{', '.join(shown[:-1]) + ' and ' + shown[-1] if len(shown) > 1 else shown[0]}"
                        f"{more}; give more of the name, or the mangled name")


def match_kernels(names: Sequence[str], wanted, file: str = "the file") -> list:
    """:func:`match_kernel` for a name or a list of names (duplicates dropped, order kept)."""
    items = [wanted] if isinstance(wanted, str) else list(wanted)
    return list(dict.fromkeys(match_kernel(names, w, file) for w in items))


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
