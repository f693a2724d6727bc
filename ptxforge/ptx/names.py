"""Kernel names as users write them: one lookup for the library and the CLI, numba names shown as Python's.

A kernel can be named by its mangled name (``_Z13MatrixMulCUDAILi32EEvPfS0_S0_ii``), the
demangled name every report prints (``MatrixMulCUDA<32>``), the full demangled signature, or an
unambiguous prefix of any of them; spaces do not matter (:func:`match_kernel`).  The same
lookup serves ``--kernel`` in every command, ``compile_ptx(...)[name]`` and
``load(...)[name]`` / ``module.kernel(name)``.

numba mangles a ``@cuda.jit`` function as a C++ name with ABI tags
(``_ZN2nb5saxpyB2v1B106cw51c…E5ArrayIfLi1E…``); :func:`numba_name` gives back the Python
function's dotted name (:func:`~ptxforge.ptx.demangle.numba_name`: ``nb.saxpy``), which is
how reports show it and another spelling :func:`match_kernel` accepts (with its last parts:
``saxpy``).

Example::

    >>> names = ["_Z13MatrixMulCUDAILi16EEvPfS0_S0_ii", "_Z13MatrixMulCUDAILi32EEvPfS0_S0_ii"]
    >>> match_kernel(names, "MatrixMulCUDA<32>")
    '_Z13MatrixMulCUDAILi32EEvPfS0_S0_ii'
"""

from __future__ import annotations

from collections.abc import Sequence

from ptxforge.errors import PtxforgeError

from .demangle import demangle_function, display_name, full_name, numba_name

__all__ = ["lookup", "match_kernel", "match_kernels"]

def _norm(text: str) -> str:
    return "".join(text.split())


def _spellings(name: str) -> tuple:
    out = [name, demangle_function(name), full_name(name)]
    py = numba_name(name)
    if py is not None:   # nb.Ops.scale, Ops.scale, scale
        parts = py.split(".")
        out += [".".join(parts[i:]) for i in range(len(parts))]
    return tuple(dict.fromkeys(_norm(s) for s in out))


def _candidates(names: Sequence[str], wanted: str) -> list:
    """The names ``wanted`` designates: the one exact spelling, else every prefix match."""
    key = _norm(wanted)
    spelled = [(n, _spellings(n)) for n in names]
    exact = [n for n, s in spelled if key in s]
    if len(exact) == 1:
        return exact
    return exact or [n for n, s in spelled if any(x.startswith(key) for x in s)]


def match_kernel(names: Sequence[str], wanted: str, file: str = "the file") -> str:
    """The one name of ``names`` (as the PTX spells them) that ``wanted`` designates: an exact
    mangled, demangled or full demangled name (for numba, the Python name or its last parts),
    else the only name one of whose spellings starts with ``wanted``.  No match, or several,
    is a PtxforgeError listing the names (demangled) and, for several, the candidates.

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
    hits = _candidates(names, wanted)
    if len(hits) == 1:
        return hits[0]
    if not hits:
        listed = ", ".join(display_name(n) for n in names) or "none"
        raise PtxforgeError(f"no kernel named {wanted!r} in {file}; it has: {listed}")
    shown = [f"{display_name(n)} ({n})" for n in hits[:8]]
    more = f" and {len(hits) - 8} more" if len(hits) > 8 else ""
    listed = ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0]
    raise PtxforgeError(f"kernel {wanted!r} is ambiguous in {file}: it names {listed}{more}; "
                        "give more of the name, or the mangled name")


def lookup(names: Sequence[str], wanted: str, where: str = "the module",
           error: type = PtxforgeError, missing_ok: bool = False) -> str:
    """:func:`match_kernel` for the library's ``[name]`` and ``kernel(name)``: ``wanted``
    itself when ``names`` holds it (or is empty: nothing to match against), else the one name
    it designates; no match or several raise ``error`` (a PtxforgeError subclass) with
    :func:`match_kernel`'s message (no match gives ``wanted`` back with ``missing_ok``: the
    caller has its own word for a name it cannot find).

    Example::

        >>> lookup(["_Z5sgemmPfS_", "_Z4axpyfPf"], "sgemm")
        '_Z5sgemmPfS_'
    """
    if not names or wanted in names:
        return wanted
    if missing_ok and not _candidates(names, wanted):
        return wanted
    try:
        return match_kernel(names, wanted, where)
    except PtxforgeError as exc:
        if error is PtxforgeError:
            raise
        raise error(str(exc)) from None


def match_kernels(names: Sequence[str], wanted, file: str = "the file") -> list:
    """:func:`match_kernel` for a name or a list of names (duplicates dropped, order kept).

    Example::

        >>> match_kernels(["_Z3fooPf", "_Z3barPf"], ["bar", "foo", "_Z3barPf"])
        ['_Z3barPf', '_Z3fooPf']
    """
    items = [wanted] if isinstance(wanted, str) else list(wanted)
    return list(dict.fromkeys(match_kernel(names, w, file) for w in items))
