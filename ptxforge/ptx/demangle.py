"""Display names for C++ (Itanium ABI) mangled names, written for ptxforge.

PTX from nvcc and NVRTC names template kernels, functions in namespaces and the functions
``.loc`` says code was inlined from by their mangled names (``_Z9dot_blockILi128EEvPKfS1_Pfi``).
:func:`demangle` turns them into what ``c++filt`` prints (``void dot_block<128>(float const*,
float const*, float*, int)``) without running anything: Python has no demangler and
``c++filt`` (binutils) is not on every machine.

It covers what CUDA code produces: nested names, namespaces (anonymous ones too),
constructors and destructors, operators, templates with type, literal, pack and
template-parameter arguments, builtin types, pointers, references, cv-qualifiers,
arrays, function and member pointers, substitutions (``S_``, ``S0_``, ``St``, ``Sa`` …),
local names (``__shared__`` arrays: ``f()::smem``), lambdas (``{lambda(int)#1}``), ABI tags
and ``[clone .x]`` suffixes.  Anything else (expressions in template arguments,
``decltype``, thunks) is given back unchanged: :func:`demangle` never raises.

Example::

    >>> from ptxforge.ptx.demangle import demangle
    >>> demangle("_Z9dot_blockILi128EEvPKfS1_Pfi")
    'void dot_block<128>(float const*, float const*, float*, int)'
    >>> demangle("_Z2sciii"), demangle("Gu")
    ('sc(int, int, int)', 'Gu')
"""

from __future__ import annotations

import re
from typing import Optional, overload

__all__ = ["demangle", "demangle_function", "display_name", "full_name", "numba_name"]


@overload
def display_name(name: str) -> str: ...
@overload
def display_name(name: None) -> None: ...
@overload
def display_name(name: Optional[str]) -> Optional[str]: ...


def display_name(name: Optional[str]) -> Optional[str]:
    """A short demangled name (no parameter list) for reports, None for None; a numba
    kernel's Python name (:func:`numba_name`).

    Example::

        >>> display_name("_Z6helperPKdll"), display_name("k_simple"), display_name(None)
        ('helper', 'k_simple', None)
    """
    return None if name is None else numba_name(name) or demangle_function(name)


@overload
def full_name(name: str) -> str: ...
@overload
def full_name(name: None) -> None: ...
@overload
def full_name(name: Optional[str]) -> Optional[str]: ...


def full_name(name: Optional[str]) -> Optional[str]:
    """The full demangled name, parameters included (unmangled names unchanged; None for None;
    a numba kernel's Python name, :func:`numba_name`, then its parameter types).

    Example::

        >>> full_name("_Z2sciii")
        'sc(int, int, int)'
    """
    if name is None:
        return None
    py = numba_name(name)
    if py is not None:   # the Python name, then numba's parameter types
        full, short = demangle(name), demangle_function(name)
        return py + full[len(short):] if full.startswith(short) else py
    return demangle(name)


def demangle(name: str) -> str:
    """The C++ spelling of an Itanium-mangled ``name``; any other name comes back unchanged.

    Never raises: a name it cannot read (not mangled, malformed, or using a construct it does
    not cover) is returned as given.
    """
    return _run(name, short=False)


def demangle_function(name: str) -> str:
    """A short display name: the demangled name without its parameter list or return type
    (``dot_block<128>`` for ``_Z9dot_blockILi128EEvPKfS1_Pfi``; unmangled names unchanged)."""
    return _run(name, short=True)


_MEMO: dict = {}  # (name, short) -> text: a report asks for each shown name several times


def _run(name: str, short: bool) -> str:
    if not isinstance(name, str) or not name.startswith("_Z"):
        return name
    key = (name, short)
    text = _MEMO.get(key)
    if text is not None:
        return text
    from .itanium import Demangler  # the grammar's tables load with the first mangled name

    try:
        text = Demangler(name).whole(short)
    except Exception:  # Unsupported, or malformed input: the name as given, never an error
        text = name
    if len(_MEMO) < 65536:
        _MEMO[key] = text
    return text


# numba's tags: [abi:v1] (the overload's version) and [abi:cw51…] (the target's flags)
_ABI_TAG = re.compile(r"\[abi:[^\]]*\]")
_NUMBA = re.compile(r"\[abi:v\d+\]")
# numba escapes a character an identifier cannot hold as ``_XX`` but leaves ``_`` alone, so
# ``nb_2d`` is a name as written, not ``nb-``: in a Python qualified name only ``<locals>``
# (``<lambda>``, …) and non-ASCII letters (their UTF-8 bytes, 0x80 and up) are escaped
_ANGLED = re.compile(r"_3c([A-Za-z]+)_3e")
_UTF8 = re.compile(r"(?:_[89a-f][0-9a-f])+")


def numba_name(name: str) -> Optional[str]:
    """The Python function's dotted name (module, then qualified name) of a numba-mangled
    kernel name (numba writes ``module::qualname`` with ABI tags and ``_XX`` for characters
    an identifier cannot hold); None for any other name.

    Example::

        >>> numba_name("_ZN2nb3Ops5inner12_3clocals_3e5scaleB2v2B4cw51E5ArrayIfLi1E1A7mutable7alignedE")
        'nb.Ops.inner.<locals>.scale'
        >>> numba_name("_Z3fooPf") is None
        True
    """
    if not name.startswith("_ZN"):
        return None
    short = demangle_function(name)
    if not _NUMBA.search(short):
        return None
    bare = _ABI_TAG.sub("", short)

    return ".".join(_unescape(part) for part in bare.split("::"))


def _unescape(part: str) -> str:
    def utf8(m: re.Match) -> str:
        try:
            return bytes.fromhex(m.group(0).replace("_", "")).decode()
        except UnicodeDecodeError:
            return m.group(0)
    return _UTF8.sub(utf8, _ANGLED.sub(r"<\1>", part))
