"""The parser's cursor over the token list: parse state, primitive readers and error reporting.

:class:`TokenCursor` holds one parse's state (tokens, position, per-text caches, the current
function's registers) and reads the small things every part of the grammar needs: an
expected token, an integer, an identifier, a type, verbatim source text.  Errors carry the
file, line and column of a token.  The grammar itself lives in the parser mixins
(:mod:`ptxforge.ptx.parse.lineinfo`, :mod:`ptxforge.ptx.parse.instructions`) and :mod:`ptxforge.ptx.parse`.
"""

from __future__ import annotations

import re
from typing import Optional

from ptxforge.errors import ParseError, PtxforgeError

from .. import ir
from ..lexer import Tokens
from ..types import PtxType

__all__ = ["EOF", "IDENT", "INT", "TokenCursor", "int_value", "show_token"]

EOF = " end of input"  # sentinel token: real tokens never contain a space
INT = re.compile(r"(?:0[xX][0-9a-fA-F]+|0[bB][01]+|[0-9]+)U?\Z")
IDENT = re.compile(r"[$A-Za-z_%][\w$]*\Z")


def int_value(tok: str) -> int:
    """The value of an integer literal token (hex, binary, octal or decimal; ``U`` suffix)."""
    t = tok[:-1] if tok.endswith("U") else tok
    if len(t) > 1 and t[0] == "0" and t[1].isdigit():
        return int(t, 8)
    return int(t, 0)


def show_token(tok: str) -> str:
    """A token as error messages show it."""
    return "end of input" if tok == EOF else repr(tok)


class TokenCursor:
    """Position and state of one parse over the token list; the grammar's mixins build on it."""

    def __init__(self, text: str, filename: str, strict: bool = True) -> None:
        self.tk = Tokens(text, filename)
        # strict checks (unknown opcode or modifier, undeclared register, wrong register
        # width, missing branch target): errors, or warnings collected here when not strict
        self.strict = strict
        self.warnings: list[str] = []
        self._warned: set = set()
        self.n = len(self.tk.toks)
        self.toks = self.tk.toks + [EOF] * 8
        self.i = 0
        # line information (LineInfoParser)
        self.files: dict[int, str] = {}
        self.debug_str: dict[str, bytes] = {}
        self.loc_cache: dict[tuple, ir.SourceLoc] = {}  # (position, function, id(call site))
        self.loc_fast: dict[tuple, tuple] = {}  # raw .loc tokens -> what they say
        self.loc_last: dict[tuple, ir.SourceLoc] = {}  # (file, line, col) -> its last .loc
        # operands (InstructionParser)
        self.imm_cache: dict[str, ir.Immediate] = {}
        self.sym_cache: dict[str, ir.Symbol] = {}
        # opcode -> (ndefs, is a branch, its strict-mode problem, its operands' register widths)
        self.opcode_kind: dict[str, tuple[int, bool, Optional[str], Optional[tuple[int, ...]]]] = {}
        self.special_cache: dict[str, ir.SpecialReg] = {}
        self.split_cache: dict[str, tuple] = {}  # "%rd12" -> ("%rd", 12); ("", -1): no number
        self.reg_cache: dict[tuple, ir.Register] = {}  # (name, type) -> its Register
        # per function (declared by the structure parser, read by the operands)
        # registers by name, whatever the name looks like (``%r1``, ``acc``): those declared
        # one by one (names in ``declared``) and those met so far from ``%r<N>`` ranges
        self.regs: dict[str, ir.Register] = {}
        self.ranges: dict[str, tuple[int, PtxType]] = {}
        self.declared: set[str] = set()
        self.plain_ranges = False  # a range without '%' (``.reg .b32 r<4>;``) is declared
        self.function_name = ""

    # -- primitive readers -------------------------------------------------------------------
    def error(self, message: str, index: Optional[int] = None) -> ParseError:
        return self.tk.error(self.i if index is None else index, message)

    def problem(self, message: str, index: int) -> None:
        """A strict-mode check failed at token ``index``: raise, or (lenient) record a warning
        (each message once, at its first position)."""
        if self.strict:
            raise self.error(message, index)
        if message not in self._warned:
            self._warned.add(message)
            self.warnings.append(str(self.tk.error(index, message)).split("\n", 1)[0])

    def expect(self, tok: str, what: str = "") -> None:
        got = self.toks[self.i]
        if got != tok:
            where = f" {what}" if what else ""
            raise self.error(f"expected {tok!r}{where}, got {show_token(got)}")
        self.i += 1

    def integer(self, what: str) -> int:
        tok = self.toks[self.i]
        if tok.isdigit() and (tok[0] != "0" or len(tok) == 1):  # plain decimal: the common case
            self.i += 1
            return int(tok)
        neg = tok == "-"
        if neg:
            tok = self.toks[self.i + 1]
        if not INT.match(tok):
            raise self.error(f"expected an integer {what}, got {show_token(tok)}")
        self.i += 2 if neg else 1
        value = int_value(tok)
        return -value if neg else value

    def ident(self, what: str) -> str:
        tok = self.toks[self.i]
        if not IDENT.match(tok):
            raise self.error(f"expected {what}, got {show_token(tok)}")
        self.i += 1
        return tok

    def ptx_type(self, what: str) -> PtxType:
        tok = self.toks[self.i]
        if not tok.startswith("."):
            raise self.error(f"expected a type for {what}, got {show_token(tok)}")
        try:
            t = PtxType.get(tok)
        except PtxforgeError:
            raise self.error(f"unknown type {tok} for {what}; expected a PTX fundamental type "
                             "such as .b32, .u64, .f32, .f64, .pred") from None
        self.i += 1
        return t

    def verbatim(self, start: int, end: int) -> str:
        """Source text from token ``start`` to token ``end`` inclusive."""
        return self.tk.text[self.tk.offset(start):self.tk.end_offset(end)]

    def skip_to(self, tok: str, what: str) -> int:
        """Index of the next ``tok`` at or after the cursor (error if the input ends)."""
        try:
            j = self.toks.index(tok, self.i, self.n)
        except ValueError:
            raise self.error(f"expected {tok!r} to end {what}, got end of input", self.n) from None
        return j
