"""Parsing of PTX line information: the ``.file`` table, ``.debug_str`` and ``.loc``.

A pre-scan reads the ``.file`` table and the debug string section before the module is
parsed; :meth:`LineInfoParser.loc` turns each ``.loc`` directive into an interned
:class:`~ptxforge.ptx.ir.SourceLoc`, resolving ``function_name`` labels through ``.debug_str``
and ``inlined_at`` positions to the whole chain of call sites (each ``inlined_at`` names the
position of an earlier ``.loc``, which has its own call site), with a fast path keyed by the
raw tokens of the common shapes.
"""

from __future__ import annotations

from typing import Optional

from .. import ir
from .cursor import INT, TokenCursor, int_value

__all__ = ["LineInfoParser"]

_MAX_DEPTH = 64  # inlining chains deeper than this are cut (a guard against malformed input)


def _depth(loc: ir.SourceLoc) -> int:
    n = 1
    while loc.inlined_at is not None:
        loc, n = loc.inlined_at, n + 1
    return n


#: A decimal token of 0 to 255 and its value (the usual ``.b8`` item of ``.debug_str``).
_DECIMAL_BYTE = {str(v): v for v in range(256)}


class LineInfoParser(TokenCursor):
    """The line-information part of the parser (a mixin over :class:`TokenCursor`)."""

    # -- pre-scan: .file table and the debug string section --------------------------------
    def prescan(self) -> None:
        toks, n = self.toks, self.n
        k = -1
        while True:
            try:
                k = toks.index(".file", k + 1, n)
            except ValueError:
                break
            if INT.match(toks[k + 1]) and toks[k + 2].startswith('"'):
                path = toks[k + 2][1:-1].replace('\\"', '"').replace("\\\\", "\\")
                self.files[int_value(toks[k + 1])] = path
        k = -1
        while True:
            try:
                k = toks.index(".section", k + 1, n)
            except ValueError:
                break
            if toks[k + 1] == ".debug_str" and toks[k + 2] == "{":
                self._read_debug_str(k + 3)

    def _read_debug_str(self, k: int) -> None:
        toks = self.toks
        label: Optional[str] = None
        data: list[int] = []
        while k < self.n and toks[k] != "}":
            t = toks[k]
            if toks[k + 1] == ":" and t[0] != ".":
                if label is not None:
                    self.debug_str[label] = bytes(data)
                label, data = t, []
                k += 2
                continue
            if t == ".b8":
                fast = self._b8_run(k + 1)
                if fast is not None:
                    data.extend(fast[0])
                    k = fast[1]
                    continue
                k += 1
                while INT.match(toks[k]):
                    data.append(int_value(toks[k]) & 0xFF)
                    if toks[k + 1] != ",":
                        k += 1
                        break
                    k += 2
                continue
            if t == ".ascii" or t == ".asciz":
                s = toks[k + 1]
                if s.startswith('"'):
                    data.extend(s[1:-1].encode("utf-8", "replace"))
                    if t == ".asciz":
                        data.append(0)
                    k += 2
                    continue
            k += 1
        if label is not None:
            self.debug_str[label] = bytes(data)

    def _b8_run(self, j: int) -> Optional[tuple[bytes, int]]:
        """``(bytes, next index)`` of the ``.b8`` list starting at token ``j`` when it is plain
        decimal bytes up to the next ``.b8`` (a label may end it), read by slices (the
        section holds every inlined function's name: a third of a cub file's tokens); None
        for anything else (the token loop reads it)."""
        toks = self.toks
        try:
            stop = toks.index(".b8", j, self.n)
        except ValueError:
            return None   # the last list of the section: the token loop finds its end
        if toks[stop - 1] == ":":
            stop -= 2   # a label starts the next string
        if stop <= j or (stop - j) % 2 == 0:
            return None
        commas = toks[j + 1:stop:2]
        if commas.count(",") != len(commas):
            return None
        try:
            return bytes(map(_DECIMAL_BYTE.__getitem__, toks[j:stop:2])), stop
        except KeyError:
            return None

    # -- line information ----------------------------------------------------------------------
    def loc_begin_function(self) -> None:
        """Forget the locations of the previous function (call sites never cross functions)."""
        self.loc_last = {}

    def loc(self) -> ir.SourceLoc:
        """``.loc file line col [, function_name LABEL[+off], inlined_at file line col]``.

        The call site named by ``inlined_at`` is chained to the ``.loc`` that last introduced
        that position (see :meth:`_located`), so ``inlined_at`` holds the whole inlining chain.
        """
        # Fast path for the two shapes compilers emit on nearly every line, keyed by their
        # raw tokens: ``.loc F L C`` and ``.loc F L C, function_name X, inlined_at F L C``
        # (all plain decimals).  A miss parses in full below and remembers what it read.
        toks, i = self.toks, self.i
        key: Optional[tuple[str, ...]] = None
        if toks[i + 3].isdigit():
            if toks[i + 4] != ",":
                key, n = (toks[i + 1], toks[i + 2], toks[i + 3]), 4
            elif (toks[i + 5] == "function_name" and toks[i + 7] == ","
                  and toks[i + 8] == "inlined_at" and toks[i + 11].isdigit()
                  and toks[i + 12] != ","):
                key, n = tuple(toks[i + 1:i + 12]), 12
            if key is not None:
                parsed = self.loc_fast.get(key)
                if parsed is not None:
                    self.i = i + n
                    return self._located(*parsed)
        parsed = self._loc_tokens()
        if key is not None and self.i == i + n:  # it read exactly the key's tokens
            self.loc_fast[key] = parsed
        return self._located(*parsed)

    def _loc_tokens(self) -> tuple:
        """Read a ``.loc`` directive token by token: ((file, line, col), function, call site)."""
        self.i += 1
        f = self.integer("file index after .loc")
        line = self.integer("line number in .loc")
        col = self.integer("column in .loc") if INT.match(self.toks[self.i]) else 0
        fn: Optional[tuple] = None
        inl: Optional[tuple] = None
        toks = self.toks
        while toks[self.i] == ",":
            self.i += 1
            key = toks[self.i]
            self.i += 1
            if key == "function_name":
                label = self.ident("a debug-string label after function_name")
                off = 0
                if toks[self.i] == "+":
                    self.i += 1
                    off = self.integer("offset after function_name label+")
                fn = (label, off)
            elif key == "inlined_at":
                a = self.integer("file index after inlined_at")
                b = self.integer("line after inlined_at")
                c = self.integer("column after inlined_at") if INT.match(toks[self.i]) else 0
                inl = (a, b, c)
            else:
                raise self.error(f"unknown .loc attribute {key!r}; expected function_name or inlined_at",
                                 self.i - 1)
        return (f, line, col), self._function(fn), inl

    def _located(self, pos: tuple, function: Optional[str], inl: Optional[tuple]) -> ir.SourceLoc:
        """The interned SourceLoc of a ``.loc`` at ``pos``, chained to its call site.

        The PTX ISA requires the ``inlined_at`` position to lexically precede as a ``.loc`` of
        its own, and NVVM/LLVM emit the caller's ``.loc`` chain just before an inlined body, so
        the call site is the location of the last ``.loc`` at that (file, line, column) in this
        function, with its own call site in turn.  Without one, the call site is a bare
        location (no function, no further chain).
        """
        parent = None
        if inl is not None:
            parent = self.loc_last.get(inl)
            if parent is None or _depth(parent) >= _MAX_DEPTH:
                parent = self._interned(inl, None, None)
            elif inl == pos:  # a position that names itself: its caller is the previous one's
                parent = parent.inlined_at or self._interned(inl, None, None)
        loc = self._interned(pos, function, parent)
        self.loc_last[pos] = loc
        return loc

    def _interned(self, pos: tuple, function: Optional[str],
                  parent: Optional[ir.SourceLoc]) -> ir.SourceLoc:
        key = (pos, function, id(parent))  # parents are interned (kept alive by the cache)
        loc = self.loc_cache.get(key)
        if loc is None:
            loc = ir.SourceLoc(self._file(pos[0]), pos[1], pos[2], function, parent)
            self.loc_cache[key] = loc
        return loc

    def _file(self, index: int) -> str:
        return self.files.get(index, f"<file {index}>")

    def _function(self, fn: Optional[tuple]) -> Optional[str]:
        if fn is None:
            return None
        label, off = fn
        data = self.debug_str.get(label)
        if data is None:
            return label if off == 0 else f"{label}+{off}"
        end = data.find(b"\0", off)
        raw = data[off:] if end < 0 else data[off:end]
        return raw.decode("utf-8", "replace")
