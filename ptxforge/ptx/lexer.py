"""PTX tokenizer and the small syntax tables the parser reads.

One compiled regular expression splits the whole text into tokens in C (``findall``), so a
megabyte of PTX tokenizes in a few tens of milliseconds.  Each match carries the white space
before its token, so the matches tile the text: a token's offset is the running sum of the
matches' lengths less its own length, computed in C (``accumulate``) when first needed (error
messages, verbatim directives and initialisers).  Comments are tokens there, and are cut out
of the token list by slices between them (a few thousand in a large file, found by offset).

Example::

    >>> from ptxforge.ptx.lexer import Tokens
    >>> Tokens("add.f32 %f1, %f2, 0f3F800000; // sum").toks
    ['add.f32', '%f1', ',', '%f2', ',', '0f3F800000', ';']
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from itertools import accumulate
from operator import sub
from typing import Optional

from ptxforge.errors import ParseError
from .opcodes import WritesNoRegister, families_with, opcode_of

__all__ = [
    "Tokens",
    "SPECIAL_REGISTERS",
    "special_register_type",
    "NO_DEF_FAMILIES",
    "NO_DEF_OPCODES",
    "PERF_DIRECTIVES",
    "BODY_VERBATIM_DIRECTIVES",
    "STATE_SPACES",
]

# A match is the white space before a token and the token (no group: ``findall`` gives whole
# matches, so that their lengths add up to offsets).  Every character is either white space
# (``\s``, as ``str.isspace`` has it) or starts a token (``\S`` catches the rest), so the
# matches tile the text but its trailing white space, and ``str.lstrip`` gives the token.
# Comments are tokens (so positions stay countable) and are cut out afterwards.
# The alternatives start with disjoint characters (but the final catch-all), so their order
# only matters for speed: names and registers first, then one-character punctuation.
_TOKEN = re.compile(
    r"""\s*(?:
      [%$A-Za-z_.][\w$.]*(?:::[\w$.]+)*
    | [,;\[\]{}()+:@!|<>=-]
    | //[^\n]*
    | /\*[\s\S]*?\*/
    | "(?:[^"\\\n]|\\.)*"
    | 0[fF][0-9a-fA-F]{8}(?![\w$])
    | 0[dD][0-9a-fA-F]{16}(?![\w$])
    | 0[xX][0-9a-fA-F]+U?
    | 0[bB][01]+U?
    | [0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?
    | [0-9]+[eE][+-]?[0-9]+
    | [0-9]+U?
    | \S
    )""",
    re.VERBOSE,
)


class Tokens:
    """The token list of one PTX text, with lazy positions for error reporting."""

    __slots__ = ("text", "filename", "toks", "_pos", "_all", "_ends", "_keep", "_kept_before")

    def __init__(self, text: str, filename: str = "<ptx>") -> None:
        self.text = text
        self.filename = filename
        whole = _TOKEN.findall(text)
        tokens = list(map(str.lstrip, whole))     # comments included
        ends = array("q", accumulate(map(len, whole)))  # end offset of every match
        del whole
        keep = _between_comments(text, tokens, ends)
        self.toks: list[str] = tokens if keep is None else _cut(tokens, keep)
        self._all, self._ends, self._keep = tokens, ends, keep
        self._pos: Optional[list[int]] = None
        self._kept_before: list[int] | None = None  # per slice of ``keep``: tokens before it

    # -- positions ------------------------------------------------------------------------
    def positions(self) -> list[int]:
        """Start offset of every (non-comment) token."""
        if self._pos is None:
            starts = list(map(sub, self._ends, map(len, self._all)))
            self._pos = starts if self._keep is None else _cut(starts, self._keep)
            self._all, self._ends = [], array("q")   # no longer needed
        return self._pos

    def offset(self, index: int) -> int:
        """Offset of token ``index`` (the end of the text when past the last token).  Read
        from the matches' end offsets, without :meth:`positions` (a parse asks for a few
        hundred offsets, for verbatim directives, of a million tokens)."""
        if self._pos is not None:
            pos = self._pos
            return pos[index] if index < len(pos) else len(self.text.rstrip())
        if index >= len(self.toks):
            return len(self.text.rstrip())
        j = index  # the token's index among all tokens, comments included
        keep = self._keep
        if keep is not None:
            before = self._kept_before
            if before is None:
                before = self._kept_before = list(accumulate((b - a for a, b in keep),
                                                             initial=0))
            k = bisect_right(before, index) - 1
            j = keep[k][0] + index - before[k]
        return self._ends[j] - len(self._all[j])

    def end_offset(self, index: int) -> int:
        """Offset just after token ``index``."""
        return self.offset(index) + len(self.toks[index])

    def line_col(self, offset: int) -> tuple[int, int, str]:
        """1-based line and column of ``offset`` and the text of that line."""
        line = self.text.count("\n", 0, offset) + 1
        start = self.text.rfind("\n", 0, offset) + 1
        end = self.text.find("\n", offset)
        if end < 0:
            end = len(self.text)
        return line, offset - start + 1, self.text[start:end].rstrip("\r")

    def error(self, index: int, message: str) -> ParseError:
        """A :class:`ParseError` pointing at token ``index``."""
        offset = self.offset(index)
        line, col, text = self.line_col(offset)
        return ParseError(message, file=self.filename, line=line, column=col, text=text)


_COMMENT_START = re.compile(r"//|/\*")


def _between_comments(text: str, tokens: list, ends: array) -> Optional[list]:
    """``[(start, end), ...]`` slices of ``tokens`` that hold no comment, or None when the
    text has none.  A ``//`` or ``/*`` in the text starts a comment token only where a token
    of two or more characters starts at that offset (else it lies inside a comment or a
    string, or it is an unclosed ``/*``)."""
    cuts = []
    for m in _COMMENT_START.finditer(text):
        at = m.start()
        j = bisect_right(ends, at)
        if j < len(tokens) and len(tokens[j]) > 1 and ends[j] - len(tokens[j]) == at:
            cuts.append(j)   # a lone "/" (an unclosed "/*") is a token, not a comment
    if not cuts:
        return None
    keep, start = [], 0
    for j in cuts:
        if j > start:
            keep.append((start, j))
        start = j + 1
    if start < len(tokens):
        keep.append((start, len(tokens)))
    return keep


def _cut(items: list, keep: list) -> list:
    """The ``items`` in the slices ``keep`` (see :func:`_between_comments`), in order."""
    out: list = []
    for a, b in keep:
        out.extend(items[a:b])
    return out


# -- special registers --------------------------------------------------------------------
_VEC_SPECIALS = ("tid", "ntid", "ctaid", "nctaid", "clusterid", "nclusterid",
                 "cluster_ctaid", "cluster_nctaid")
_SCALAR_SPECIALS = (
    "laneid", "warpid", "nwarpid", "smid", "nsmid", "gridid", "lanemask_eq", "lanemask_le",
    "lanemask_lt", "lanemask_ge", "lanemask_gt", "clock", "clock_hi", "clock64",
    "globaltimer", "globaltimer_lo", "globaltimer_hi", "total_smem_size", "dynamic_smem_size",
    "aggr_smem_size", "is_explicit_cluster", "cluster_ctarank", "cluster_nctarank",
    "current_graph_exec", "reserved_smem_offset_begin", "reserved_smem_offset_end",
    "reserved_smem_offset_cap", "reserved_smem_offset_0", "reserved_smem_offset_1",
)
_SPECIALS_64 = {"%clock64", "%globaltimer", "%gridid", "%current_graph_exec"}

SPECIAL_REGISTERS: frozenset[str] = frozenset(
    [f"%{n}" for n in _SCALAR_SPECIALS]
    + [f"%{n}" for n in _VEC_SPECIALS]
    + [f"%{n}.{c}" for n in _VEC_SPECIALS for c in "xyzw"]
    + [f"%pm{i}" for i in range(8)]
    + [f"%pm{i}_64" for i in range(8)]
    + [f"%envreg{i}" for i in range(32)]
)


def special_register_type(name: str) -> str:
    """The PTX type name of a special register (``u64`` for 64-bit counters, else ``u32``)."""
    if name in _SPECIALS_64 or name.endswith("_64"):
        return "u64"
    return "u32"


# -- opcode and directive tables ----------------------------------------------------------
# Families whose instructions write no register (every operand is a use) carry the
# WritesNoRegister trait in the one opcode table, with the sub-opcodes that do write one
# (mbarrier.try_wait, wgmma.mma_async, bar.red ...).  Every other opcode defines its first
# operand; ir.reads_destination says which of those also read it (wgmma.mma_async).
NO_DEF_FAMILIES: frozenset[str] = frozenset(families_with(WritesNoRegister))
NO_DEF_OPCODES = NO_DEF_FAMILIES  # alias kept for readers looking for "opcodes"


def is_no_def(opcode: str) -> bool:
    """True when ``opcode`` writes no register operand (``st.global.f32``, ``bra``)."""
    return opcode_of(opcode).no_def


PERF_DIRECTIVES: frozenset[str] = frozenset({
    ".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxnreg", ".explicitcluster",
    ".reqnctapercluster", ".maxclusterrank", ".blocksareclusters", ".noreturn", ".abi_preserve",
    ".abi_preserve_control",
})
# Directives kept verbatim (up to their ';') when they appear inside a function body.
BODY_VERBATIM_DIRECTIVES: frozenset[str] = frozenset({
    ".pragma", ".callprototype", ".calltargets", ".branchtargets", ".alias",
})
STATE_SPACES: frozenset[str] = frozenset({
    ".global", ".shared", ".const", ".local", ".param", ".tex",
})
