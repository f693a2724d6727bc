"""What PTX text says about itself before ptxas reads it: the ``.version`` / ``.target`` line
(and whether it is debug PTX), each ``.entry`` with its performance directives and local
arrays; and the two edits ptxforge makes to PTX on request (a kernel's ``.maxnreg``, the
``.version`` line).  Text level, no parsing into the IR: it must work on any PTX ptxas reads.

Example::

    >>> t = ptx_target(".version 9.5\\n.target sm_80, debug\\n.address_size 64\\n")
    >>> t.version, t.arch, t.debug
    ((9, 5), 'sm_80', True)
"""

from __future__ import annotations

import math
import re
from typing import Any, Optional

import attrs

from ptxforge.errors import PtxforgeError

__all__ = ["PtxEntry", "PtxTarget", "ptx_entries", "ptx_target", "with_directives",
           "with_maxnreg", "with_version", "mask_comments"]


#: A string (kept as it is: ``//`` inside one is not a comment), a line or a block comment.
_COMMENT_OR_STRING = re.compile(r'"[^"]*(?:"|\Z)|//[^\n]*|/\*(?:.*?\*/|.*\Z)', re.S)
_NOT_NEWLINE = re.compile(r"[^\n]")


def _blank(m: re.Match) -> str:
    text = m.group(0)
    return text if text[0] == '"' else _NOT_NEWLINE.sub(" ", text)


#: the last text masked and its mask: a compile reads the ``.target`` line and the entries
#: of the same text (two masks of the whole file per compile, on the compile thread)
_LAST_MASKED: tuple = ("", "")


def mask_comments(ptx: str) -> str:
    """``ptx`` with comments blanked (newlines kept): offsets and line numbers stay valid.

    Example::

        >>> mask_comments('add.s32 %r1, %r2, 1; // x\\n/* a\\nb */ "//s"')
        'add.s32 %r1, %r2, 1;     \\n    \\n     "//s"'
    """
    global _LAST_MASKED
    last = _LAST_MASKED          # one read: another thread may replace it meanwhile
    if last[0] is ptx:
        return last[1]
    clean = _COMMENT_OR_STRING.sub(_blank, ptx)
    _LAST_MASKED = (ptx, clean)
    return clean


@attrs.frozen(slots=True, kw_only=True)
class PtxTarget:
    """The module's ``.version`` and ``.target`` (``debug``: ``.target sm_XX, debug``)."""

    version: Optional[tuple]
    arch: Optional[str]
    debug: bool = False
    options: tuple[str, ...] = ()  # every word of the .target line after the arch
    line: Optional[int] = None     # line of the .target directive


_VERSION = re.compile(r"^[ \t]*\.version[ \t]+(\d+)\.(\d+)", re.M)
_TARGET = re.compile(r"^[ \t]*\.target[ \t]+([^\n;]+)", re.M)


def ptx_target(ptx: str) -> PtxTarget:
    """The ``.version`` and ``.target`` of PTX text (None where a directive is missing)."""
    clean = mask_comments(ptx)
    v = _VERSION.search(clean)
    t = _TARGET.search(clean)
    words = [w.strip() for w in t.group(1).split(",")] if t else []
    return PtxTarget(version=(int(v.group(1)), int(v.group(2))) if v else None,
                     arch=words[0] if words else None, debug="debug" in words[1:],
                     options=tuple(words[1:]),
                     line=clean.count("\n", 0, t.start()) + 1 if t else None)


@attrs.frozen(slots=True, kw_only=True)
class PtxEntry:
    """An ``.entry`` found in PTX text, with its performance directives and local arrays."""

    name: str
    line: int
    maxnreg: Optional[int] = None
    maxntid: Optional[tuple] = None
    reqntid: Optional[tuple] = None
    minnctapersm: Optional[int] = None
    local_array_bytes: int = 0

    @property
    def threads(self) -> Optional[int]:
        """Threads per block the launch bounds allow (.reqntid, else .maxntid), or None."""
        dims = self.reqntid or self.maxntid
        return math.prod(dims) if dims else None


_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$%][\w$%]*)")
_LOCAL = re.compile(r"\.local\s+(?:\.align\s+\d+\s+)?\.([a-z]+)(\d+)\s+[\w$%]+((?:\s*\[\s*\d+\s*\])*)")


def _dims(text: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", text))


_BRACE = re.compile(r"[{}]")


def _headers(clean: str):
    """(name, start of .entry, start of directives, offset of '{', end of body) per entry."""
    for m in _ENTRY.finditer(clean):
        brace = clean.find("{", m.end())
        semi = clean.find(";", m.end())
        if brace < 0 or 0 <= semi < brace:
            continue                       # a declaration without a body
        head = clean.find("(", m.end(), brace)
        close = clean.rfind(")", m.end(), brace)
        directives = close + 1 if head >= 0 and close > head else m.end()
        depth, end = 0, brace
        for b in _BRACE.finditer(clean, brace):
            end = b.start()
            depth += 1 if b.group() == "{" else -1
            if depth == 0:
                break
        else:
            end = max(len(clean) - 1, brace)   # unclosed: the body runs to the end
        yield m.group(1), m.start(), directives, brace, end


def ptx_entries(ptx: str) -> tuple:
    """The kernels of a PTX module in source order (comments are ignored)."""
    clean = mask_comments(ptx)
    out = []
    line, counted = 1, 0   # the line at offset ``counted`` (entries come in source order)
    for name, start, directives, brace, end in _headers(clean):
        line += clean.count("\n", counted, start)
        counted = start
        header = clean[directives:brace]
        local = 0
        for lm in _LOCAL.finditer(clean[brace:end]):
            n = 1
            for d in _dims(lm.group(3)):
                n *= d
            local += max(int(lm.group(2)) // 8, 1) * n
        fields: dict[str, Any] = {}  # maxnreg, minnctapersm: int; maxntid, reqntid: tuple
        for key in ("maxnreg", "maxntid", "reqntid", "minnctapersm"):
            dm = re.search(rf"\.{key}\s+([\d\s,]+)", header)
            if dm:
                vals = _dims(dm.group(1))
                fields[key] = vals[0] if key in ("maxnreg", "minnctapersm") else vals
        out.append(PtxEntry(name=name, line=line,
                            local_array_bytes=local,
                            **fields))
    return tuple(out)


def with_maxnreg(ptx: str, kernel: str, registers: int) -> str:
    """``ptx`` with kernel ``kernel`` capped by ``.maxnreg registers`` (an existing
    ``.maxnreg`` of that kernel is replaced; nothing else changes).

    ptxas ignores ``--maxrregcount`` for a kernel with ``.maxntid`` or ``.reqntid``
    (``__launch_bounds__``) but honours ``.maxnreg`` there; with ``.minnctapersm`` the lower
    of the two caps wins.

    Example::

        >>> print(with_maxnreg(".entry k()\\n.maxntid 256\\n{\\nret;\\n}", "k", 64))
        .entry k()
        .maxntid 256
        .maxnreg 64
        {
        ret;
        }
    """
    if not isinstance(registers, int) or isinstance(registers, bool) or not 1 <= registers <= 255:
        raise PtxforgeError(f"with_maxnreg: expected a register count in 1..255, got {registers!r}")
    return with_directives(ptx, kernel, {"maxnreg": registers}, what="with_maxnreg")


_DIRECTIVE_NAMES = ("maxnreg", "maxntid", "reqntid", "minnctapersm")


def with_directives(ptx: str, kernel: str, changes: dict, *, what: str = "with_directives"
                    ) -> str:
    """``ptx`` with the performance directives of kernel ``kernel`` changed: ``changes`` maps
    ``"maxnreg"``, ``"maxntid"``, ``"reqntid"`` or ``"minnctapersm"`` to a value (an int or a
    tuple of ints; it replaces the kernel's own) or None (the directive is removed).  What a
    source-level change (``__launch_bounds__``, ``__maxnreg__``) does to the PTX.

    Example::

        >>> print(with_directives(".entry k()\\n.maxntid 64\\n{\\nret;\\n}", "k",
        ...                       {"maxntid": None, "maxnreg": 96}))
        .entry k()
        .maxnreg 96
        {
        ret;
        }
    """
    for key, value in changes.items():
        vals = (value,) if isinstance(value, int) else value
        if key not in _DIRECTIVE_NAMES or not (value is None or (
                isinstance(vals, tuple) and vals and all(
                    isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in vals))):
            raise PtxforgeError(f"{what}: expected {'/'.join(_DIRECTIVE_NAMES)} mapped to "
                                f"positive ints or None, got {key!r}: {value!r}")
    clean = mask_comments(ptx)
    names = []
    for name, _, directives, brace, _ in _headers(clean):
        names.append(name)
        if name != kernel:
            continue
        head = ptx[directives:brace]
        masked = clean[directives:brace]
        kept, pos = [], 0
        pattern = "|".join(changes)
        for m in re.finditer(rf"\.(?:{pattern})\s+\d+(?:\s*,\s*\d+)*\s*", masked):
            kept.append(head[pos:m.start()])
            pos = m.end()
        kept.append(head[pos:])
        head = "".join(kept).rstrip()
        added = "".join(f"\n.{key} {value if isinstance(value, int) else ', '.join(map(str, value))}"
                        for key, value in changes.items() if value is not None)
        return f"{ptx[:directives]}{head}{added}\n{ptx[brace:]}"
    raise PtxforgeError(f"{what}: no .entry {kernel!r} in the PTX; its kernels are: "
                        f"{', '.join(names) or 'none'}")


def with_version(ptx: str, version: tuple) -> str:
    """``ptx`` with its ``.version`` line set to ``version`` ((major, minor))."""
    clean = mask_comments(ptx)
    m = _VERSION.search(clean)
    if m is None:
        raise PtxforgeError("with_version: the PTX has no .version directive")
    return f"{ptx[:m.start(1)]}{version[0]}.{version[1]}{ptx[m.end(2):]}"
