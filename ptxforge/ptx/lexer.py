"""PTX tokenizer and the small syntax tables the parser reads.

One compiled regular expression splits the whole text in C (``re.split``) into the white
space and comments before each token and the token, so a megabyte of PTX tokenizes in a few
tens of milliseconds and comments never reach the token list.  The pieces tile the text: a
token's offset is the length of the pieces before it, summed in C when asked for (error
messages, verbatim directives and initialisers).

Example::

    >>> from ptxforge.ptx.lexer import Tokens
    >>> Tokens("add.f32 %f1, %f2, 0f3F800000; // sum").toks
    ['add.f32', '%f1', ',', '%f2', ',', '0f3F800000', ';']
"""

from __future__ import annotations

import re
from itertools import accumulate
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

# The tokens: the alternatives start with disjoint characters (but the final catch-all), so
# their order only matters for speed: one-character punctuation (a third of the tokens are
# commas) first, then names and registers.  Every character is either white space (``\s``, as ``str.isspace`` has it), in a
# comment, or starts a token (``\S`` catches the rest).
_TOKEN_ALTERNATIVES = r"""
      [,;\[\]{}()+:@!|<>=-]
    | [%$A-Za-z_.][\w$.]*(?:::[\w$.]+)*
    | "(?:[^"\\\n]|\\.)*"
    | 0[fF][0-9a-fA-F]{8}(?![\w$])
    | 0[dD][0-9a-fA-F]{16}(?![\w$])
    | 0[xX][0-9a-fA-F]+U?
    | 0[bB][01]+U?
    | [0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?
    | [0-9]+[eE][+-]?[0-9]+
    | [0-9]+U?
    | \S
"""
_COMMENTS = r"//[^\n]*|/\*[\s\S]*?\*/"   # an unclosed ``/*`` is no comment: "/" is a token
#: One match per token, comments taken as tokens: the grammar as a plain scan reads it (the
#: tests' reference).
_TOKEN = re.compile(r"\s*(?:" + _COMMENTS + "|" + _TOKEN_ALTERNATIVES + ")", re.VERBOSE)
#: What :class:`Tokens` splits the text with: the white space and comments before a token
#: (one group) and the token (another).  Each match starts where the last ended, so the
#: groups tile the text up to its last token; a sentinel token after a line break ends the
#: text, so that trailing comments are skipped too (and never give back a "/" token).
_SPLIT = re.compile(r"(\s*(?:(?:" + _COMMENTS + r")\s*)*)(" + _TOKEN_ALTERNATIVES + ")",
                    re.VERBOSE)
_SENTINEL = "\n\x01"


class Tokens:
    """The token list of one PTX text, with lazy positions for error reporting.

    ``re.split`` gives ``[gap, skipped, token, gap, skipped, token, ..., tail]`` in C, where
    every gap is empty (the matches tile the text): the tokens are every third item, and the
    offset of token ``i`` is the length of the items before it, summed in C from the last
    offset asked for (a parse asks for a few thousand, in order: verbatim directives and
    initialisers), or read from :meth:`positions` once built."""

    __slots__ = ("text", "filename", "toks", "_pos", "_parts", "_at")

    def __init__(self, text: str, filename: str = "<ptx>") -> None:
        self.text = text
        self.filename = filename
        parts = _SPLIT.split(text + _SENTINEL)
        toks = parts[2::3]
        toks.pop()   # the sentinel
        self.toks: list[str] = toks
        self._parts = parts
        self._at = (0, 0)   # (item k of parts, the length of the items before it)
        self._pos: Optional[list[int]] = None

    # -- positions ------------------------------------------------------------------------
    def positions(self) -> list[int]:
        """Start offset of every (non-comment) token."""
        if self._pos is None:
            ends = list(accumulate(map(len, self._parts)))   # the end of every item
            self._pos = ends[1::3][:len(self.toks)]   # a token starts where its skip ends
            self._parts = []   # no longer needed
        return self._pos

    def offset(self, index: int) -> int:
        """Offset of token ``index`` (the end of the text when past the last token)."""
        if index >= len(self.toks):
            return len(self.text.rstrip())
        if self._pos is not None:
            return self._pos[index]
        k = 3 * index + 2   # the token's item: its offset is the length of the items before
        at, length = self._at
        if k < at:   # behind the last one asked for (an error message): every position
            return self.positions()[index]
        length += sum(map(len, self._parts[at:k]))
        self._at = (k, length)
        return length

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
