"""PTX text → IR (:class:`~ptxforge.ptx.ir.Module`), with file/line/column errors.

The parser accepts what nvcc, NVRTC, clang, Julia (LLVM NVPTX), Triton and numba emit for
CUDA 11–13 / PTX ISA up to 9.x: module header, ``.entry``/``.func`` with parameters and
return values, register and variable declarations, ``.loc``/``.file`` line information
(resolving ``function_name``/``inlined_at``), debug sections (skipped), ``.pragma``, labels,
guards, vector/brace/paren/pipe operands, call sequences in ``{ }`` scopes, and every opcode
of PTX ISA 9.x (checked strictly: see :func:`parse`; a lenient parse keeps an unknown opcode
as a generic instruction whose first operand is the destination).

This module holds the entry points and the structure (module directives, functions and their
parameters, bodies, declarations).  The rest is split by concept: :mod:`ptxforge.ptx.lexer`
(tokens and syntax tables), :mod:`ptxforge.ptx.parse.cursor` (parse state, primitive readers,
errors), :mod:`ptxforge.ptx.parse.lineinfo` (``.file``/``.debug_str``/``.loc``) and
:mod:`ptxforge.ptx.parse.instructions` (instructions and operands).

Example::

    >>> from ptxforge.ptx.parse import parse
    >>> m = parse('''
    ... .version 8.0
    ... .target sm_80
    ... .address_size 64
    ... .visible .entry k(.param .u64 p)
    ... {
    ...     .reg .b32 %r<3>;
    ...     mov.u32 %r1, %tid.x;
    ...     add.s32 %r2, %r1, 1;
    ...     ret;
    ... }''')
    >>> inst = m.kernel("k").instructions[1]
    >>> inst.opcode, [r.name for r in inst.defs], [r.name for r in inst.uses]
    ('add.s32', ['%r2'], ['%r1'])
"""


from __future__ import annotations

import os
import re
from typing import Optional, Union

from ptxforge.errors import ParseError, PtxforgeError

from .. import ir
from ..lexer import BODY_VERBATIM_DIRECTIVES, PERF_DIRECTIVES
from ..types import PtxType, class_for_decl
from .cursor import EOF, IDENT, INT, int_value, show_token
from .instructions import InstructionParser
from .lineinfo import LineInfoParser

__all__ = ["parse", "parse_file"]

_LINKAGES = frozenset({".visible", ".extern", ".weak", ".common"})
_VAR_SPACES = frozenset({".global", ".shared", ".const", ".local", ".param"})
_VERSION = re.compile(r"[0-9]+\.[0-9]+\Z")
_VECTORS = {".v2": 2, ".v4": 4, ".v8": 8}
_OPAQUE_TYPES = frozenset({".texref", ".samplerref", ".surfref"})


def parse(text: Union[str, bytes], filename: str = "<ptx>", strict: bool = True) -> ir.Module:
    """Parse PTX text into a :class:`~ptxforge.ptx.ir.Module`.

    Raises :class:`~ptxforge.errors.ParseError` (with file, line, column and the offending
    line) for malformed input; never an internal exception.  Strict (the default) also
    refuses an unknown opcode, an unknown modifier of a known opcode, an undeclared register,
    a register of the wrong class (a non-predicate guard, a 64-bit register in a 32-bit
    add, …) and a branch to a missing label.  With ``strict=False`` those are warnings, one
    ``"file:line:col: message"`` each, in the module's ``warnings``; the instruction is kept,
    an undeclared register gets the type its name suggests, a missing label leaves the function.
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise ParseError(f"expected PTX text (str or bytes), got {type(text).__name__}",
                         file=str(filename), line=0, column=0)
    if text.startswith("\ufeff"):  # a UTF-8 byte order mark (editors on Windows add one)
        text = text[1:]
    _refuse_binary(text, filename)
    return _Parser(text, filename, strict).module()


#: A control character other than white space, or U+FFFD (a byte that did not decode).
_ODD = re.compile("[\x00-\x08\x0e-\x1f\ufffd]")


def _refuse_binary(text: str, filename) -> None:
    """A ParseError for binary data (many control or undecodable bytes near the start), so
    that the error never echoes raw binary to a terminal; a stray byte in a text file is left
    to the parser, which points at it."""
    head = text[:4096]
    odd = len(_ODD.findall(head))
    if odd > max(8, len(head) // 50):
        raise ParseError(f"not PTX text: the first {len(head):,} characters hold {odd} control "
                         "or undecodable bytes (a binary file?); expected PTX text (ptxforge "
                         "analyze and sass also read a cubin)", file=str(filename), line=0,
                         column=0)


def parse_file(path: Union[str, "os.PathLike[str]"], strict: bool = True) -> ir.Module:
    """Parse the PTX file at ``path`` (errors name the file); ``strict`` as for :func:`parse`."""
    with open(path, "rb") as fh:
        data = fh.read()
    return parse(data, filename=os.fspath(path), strict=strict)



def _empty(text: str) -> str:
    """Why a text holds no token: empty, or bare CR line breaks (old Mac style)."""
    if "\r" not in text or "\n" in text:
        return "empty PTX"
    return ("no PTX outside a comment: the line breaks are bare CR (old Mac style), so the '//' "
            "comment of the first line runs to the end of the file; use LF or CRLF line breaks")


class _Parser(LineInfoParser, InstructionParser):
    """Recursive-descent parser over the token list; one instance per text.

    This class reads the structure (module directives, functions and their parameters, bodies,
    declarations); line information and instructions come from its mixins.
    """

    # -- module -------------------------------------------------------------------------------
    def module(self) -> ir.Module:
        tk = self.tk
        if self.n == 0:
            raise ParseError(f"{_empty(tk.text)}: expected '.version' as the first directive",
                             file=tk.filename, line=1, column=1, text="")
        self.prescan()
        toks = self.toks
        if toks[0] != ".version":
            raise self.error(f"expected '.version' as the first directive, got {show_token(toks[0])}", 0)
        version: Optional[str] = None
        target: Optional[str] = None
        address_size = 64
        globals_: list[ir.VarDecl] = []
        kernels: list[ir.Kernel] = []
        directives: list[ir.Directive] = []
        layout: list[tuple[str, int]] = []  # source order of the three lists above

        def add_decls(decls: list) -> None:
            for d in decls:
                if isinstance(d, ir.Directive):
                    layout.append(("directive", len(directives)))
                    directives.append(d)
                else:
                    layout.append(("global", len(globals_)))
                    globals_.append(d)
        while self.i < self.n:
            start = self.i
            try:
                t = toks[self.i]
                if t == ".version":
                    if version is not None:
                        raise self.error("a second .version directive: expected one PTX module "
                                         "per file (two files joined?), the first begins at "
                                         "line 1")
                    self.i += 1
                    v = toks[self.i]
                    if not _VERSION.match(v):
                        raise self.error(f"expected a PTX ISA version such as 8.5 after .version, got {show_token(v)}")
                    version = v
                    self.i += 1
                elif t == ".target":
                    self.i += 1
                    parts = [self.ident("a target such as sm_90 after .target")]
                    while toks[self.i] == ",":
                        self.i += 1
                        parts.append(self.ident("a target modifier after ','"))
                    target = ", ".join(parts)
                elif t == ".address_size":
                    self.i += 1
                    address_size = self.integer("after .address_size")
                    if address_size not in (32, 64):
                        raise self.error(f"expected .address_size 32 or 64, got {address_size}",
                                         self.i - 1)
                elif t == ".file":
                    self.i += 1
                    self.integer("file index after .file")
                    if not toks[self.i].startswith('"'):
                        raise self.error(f"expected a quoted path after .file, got {show_token(toks[self.i])}")
                    self.i += 1
                    while toks[self.i] == ",":
                        self.i += 2
                elif t == ".section":
                    self.i += 1
                    self.ident_or_directive("a section name after .section")
                    self.expect("{", "to open the .section")
                    self.i = self.skip_to("}", ".section") + 1
                elif t in _LINKAGES or t == ".entry" or t == ".func":
                    linkage = ""
                    while toks[self.i] in _LINKAGES:
                        linkage = (linkage + " " + toks[self.i]).strip()
                        self.i += 1
                    t2 = toks[self.i]
                    if t2 == ".entry" or t2 == ".func":
                        layout.append(("kernel", len(kernels)))
                        kernels.append(self.function(linkage, t2 == ".entry"))
                    elif t2 in _VAR_SPACES:
                        add_decls(self.var_decls(linkage))
                    else:
                        raise self.error(f"expected .entry, .func or a variable after {linkage}, "
                                         f"got {show_token(t2)}")
                elif t in _VAR_SPACES:
                    add_decls(self.var_decls(""))
                elif t == ".pragma":
                    end = self.skip_to(";", ".pragma")
                    add_decls([ir.Directive(self.verbatim(start, end))])
                    self.i = end + 1
                elif t == ".loc":
                    self.loc()
                elif t == "}":
                    raise self.error("unbalanced '}' at module level: no open '{' to close")
                elif t.startswith(".") and len(t) > 1:
                    raise self.error(f"unknown directive {t} at module level; expected .version, "
                                     ".target, .address_size, .entry, .func, .global, .const, "
                                     ".shared, .pragma, .file or .section")
                else:
                    raise self.error(f"expected a directive at module level, got {show_token(t)}")
            except (ParseError, RecursionError):
                raise
            except Exception as exc:  # never leak an internal traceback
                raise self.error(f"cannot parse this statement ({type(exc).__name__}: {exc})", start) from None
        if target is None:
            raise self.error("missing .target directive (expected e.g. '.target sm_80')", 0)
        assert version is not None  # the first token is .version (checked above), read first
        return ir.Module(version=version, target=target, address_size=address_size,
                         globals=tuple(globals_), kernels=tuple(kernels),
                         files=tuple(sorted(self.files.items())), directives=tuple(directives),
                         layout=tuple(layout), warnings=tuple(self.warnings))

    def ident_or_directive(self, what: str) -> str:
        tok = self.toks[self.i]
        if not re.match(r"\.?[$A-Za-z_][\w$.]*\Z", tok):
            raise self.error(f"expected {what}, got {show_token(tok)}")
        self.i += 1
        return tok

    # -- declarations -------------------------------------------------------------------------
    def dims(self) -> tuple:
        out: list[Optional[int]] = []
        toks = self.toks
        while toks[self.i] == "[":
            self.i += 1
            if toks[self.i] == "]":
                out.append(None)
            else:
                out.append(self.integer("array size"))
            self.expect("]", "to close the array size")
        return tuple(out)

    def var_decls(self, linkage: str) -> list:
        """``.global/.shared/.const/.local/.param [.align N] .type name[dims] [= init], …;``."""
        toks = self.toks
        start = self.i
        space = toks[self.i][1:]
        self.i += 1
        align = vector = None
        while True:
            t = toks[self.i]
            if t == ".align":
                self.i += 1
                align = self.integer("after .align")
            elif t in _VECTORS:
                vector = _VECTORS[t]
                self.i += 1
            elif t == ".attribute" or t.startswith(".ptr") or t in _OPAQUE_TYPES:
                return self._verbatim_decl(start, linkage)
            else:
                break
        ty = self.ptx_type(f"the .{space} variable")
        out = []
        while True:
            name = self.ident(f"a variable name in the .{space} declaration")
            dims = self.dims()
            init = None
            if toks[self.i] == "=":
                self.i += 1
                first = self.i
                end = self.skip_to(";", "the initialiser")
                if end == first:
                    raise self.error("expected an initialiser after '='")
                init = self.verbatim(first, end - 1)
                # a ',' at brace depth 0 would start the next name; initialisers of several
                # names on one line are rare enough to keep with the last one verbatim.
                self.i = end
            out.append(ir.VarDecl(space=space, type=ty, name=name, align=align, dims=dims,
                                  init=init, linkage=linkage, vector=vector))
            if toks[self.i] == ",":
                self.i += 1
                continue
            self.expect(";", f"after the .{space} declaration of {name}")
            return out

    def _verbatim_decl(self, start: int, linkage: str) -> list:
        """Opaque (``.texref``, ``.surfref``, ``.samplerref``) or attributed variables, verbatim."""
        end = self.skip_to(";", "the declaration")
        self.i = end + 1
        text = self.verbatim(start, end)
        return [ir.Directive(f"{linkage} {text}" if linkage else text)]

    def reg_decl(self, nested: bool) -> list:
        """``.reg .type %a, %r<N>;`` → RegDecls (function level) or VarDecls (nested scope)."""
        toks = self.toks
        t = toks[self.i]
        if len(t) > 4:  # ``.reg.b16 hl;`` (cuda_fp16.hpp's inline asm): the type is glued on
            t = t[4:]
        else:
            self.i += 1
            t = toks[self.i]
        if t in _VECTORS:
            raise self.error(f"vector registers (.reg {t} …) are not supported: ptxforge cannot "
                             "count their components' registers; declare scalar registers "
                             "(.reg .f32 %a, %b, …) instead")
        if not t.startswith("."):
            raise self.error(f"bad register declaration: expected a type such as .b32 after .reg, "
                             f"got {show_token(t)}")
        try:
            cls = class_for_decl(t)
            ptype = PtxType.get(t)
        except PtxforgeError:
            raise self.error(f"bad register declaration: unknown register type {t}; expected one of "
                             ".pred, .b16, .b32, .b64, .u32, .s32, .f16, .f32, .f64, …") from None
        del cls
        self.i += 1
        out: list = []
        while True:
            name = toks[self.i]
            if not IDENT.match(name):
                raise self.error(f"bad register declaration: expected a register name, got {show_token(name)}")
            self.i += 1
            count = None
            if toks[self.i] == "<":
                self.i += 1
                tok = toks[self.i]
                if not INT.match(tok):
                    raise self.error(f"bad register declaration: expected a register count in "
                                     f"{name}<N>, got {show_token(tok)}")
                count = int_value(tok)
                self.i += 1
                self.expect(">", f"to close {name}<{count}")
                if nested:
                    self.shadow(self.ranges, name)
                    self.forget_range_registers()
                self.ranges[name] = (count, ptype)
                if name[0] != "%":
                    self.plain_ranges = True
            else:
                if nested:
                    self.shadow(self.regs, name)
                self.regs[name] = ir.Register(name, ptype)
                self.declared.add(name)
            if nested:
                shown = name if count is None else f"{name}<{count}>"
                out.append(ir.VarDecl(space="reg", type=ptype, name=shown))
            else:
                out.append(ir.RegDecl(type=ptype.name, name=name, count=count))
            t = toks[self.i]
            if t == ",":
                self.i += 1
                continue
            if t == ";":
                self.i += 1
                return out
            raise self.error(f"bad register declaration: expected ',' or ';' after {name}, got {show_token(t)}")

    # -- functions ---------------------------------------------------------------------------
    def param_list(self, what: str) -> tuple:
        self.expect("(", f"to open the {what}")
        toks = self.toks
        out = []
        if toks[self.i] == ")":
            self.i += 1
            return ()
        while True:
            out.append(self.param(what))
            t = toks[self.i]
            self.i += 1
            if t == ")":
                return tuple(out)
            if t != ",":
                raise self.error(f"expected ',' or ')' in the {what}, got {show_token(t)}", self.i - 1)

    def param(self, what: str) -> ir.Param:
        toks = self.toks
        t = toks[self.i]
        if t != ".param":
            if t == ".reg":
                raise self.error("register parameters (.reg) are not supported; expected .param")
            raise self.error(f"expected '.param' in the {what}, got {show_token(t)}")
        self.i += 1
        align = ptr_align = None
        pointer = False
        space = None
        ptype: Optional[PtxType] = None
        while True:
            t = toks[self.i]
            if t.startswith(".ptr"):
                pointer = True
                parts = ["." + p for p in t.split(".")[2:]]
                self.i += 1
                for p in parts:
                    if p == ".align":
                        ptr_align = self.integer("after .ptr.align")
                    else:
                        space = p[1:]
            elif t == ".align":
                self.i += 1
                if pointer:
                    ptr_align = self.integer("after .align")
                else:
                    align = self.integer("after .align")
            elif pointer and t in (".global", ".shared", ".const", ".local"):
                space = t[1:]
                self.i += 1
            elif t.startswith(".") and ptype is None:
                ptype = self.ptx_type("the parameter")
            else:
                break
        if ptype is None:
            raise self.error(f"expected a parameter type such as .u64, got {show_token(toks[self.i])}")
        name = self.ident("a parameter name")
        return ir.Param(name=name, type=ptype, pointer=pointer, align=align, dims=self.dims(),
                        state_space=space, ptr_align=ptr_align)

    def function(self, linkage: str, is_entry: bool) -> ir.Kernel:
        toks = self.toks
        self.i += 1
        returns: tuple = ()
        if not is_entry and toks[self.i] == "(":
            returns = self.param_list("return value list")
        name = self.ident("a function name")
        self.function_name = name
        self.loc_begin_function()
        params: tuple = ()
        if toks[self.i] == "(":
            params = self.param_list(f"parameter list of {name}")
        directives: list = []
        attributes: list = []
        while True:
            t = toks[self.i]
            if t in PERF_DIRECTIVES:
                self.i += 1
                values = []
                while INT.match(toks[self.i]):
                    values.append(int_value(toks[self.i]))
                    self.i += 1
                    if toks[self.i] == "," and INT.match(toks[self.i + 1]):
                        self.i += 1
                if t == ".noreturn" or t.startswith(".abi_preserve"):
                    attributes.append(t if not values else f"{t} " + ", ".join(map(str, values)))
                else:
                    directives.append((t, tuple(values)))
            elif t == ";":
                self.i += 1
                return ir.Kernel(name=name, params=params, body=None, is_entry=is_entry,
                                 linkage=linkage, returns=returns, directives=tuple(directives),
                                 attributes=tuple(attributes))
            elif t == "{":
                break
            elif t.startswith("."):
                raise self.error(f"unknown directive {t} in the header of {name}; expected a "
                                 "performance directive (.maxntid, .reqntid, .maxnreg, "
                                 ".minnctapersm, …), '{' or ';'")
            else:
                raise self.error(f"expected '{{' to open the body of {name}, got {show_token(t)}")
        body, reg_decls = self.body(name)
        return ir.Kernel(name=name, params=params, body=body, reg_decls=reg_decls,
                         is_entry=is_entry, linkage=linkage, returns=returns,
                         directives=tuple(directives), attributes=tuple(attributes))

    def body(self, name: str) -> tuple[tuple, tuple]:
        toks = self.toks
        open_index = self.i
        self.i += 1
        self.regs = {}
        self.ranges = {}
        self.declared = set()
        self.plain_ranges = False
        self.scopes_begin()
        stmts: list = []
        reg_decls: list = []
        depth = 1
        loc: Optional[ir.SourceLoc] = None
        append = stmts.append
        instruction = self.instruction
        while True:
            start = self.i
            t = toks[start]
            try:
                c = t[0]
                if c == "." and len(t) > 1:
                    if t == ".reg" or t.startswith(".reg."):
                        if depth == 1:
                            reg_decls.extend(self.reg_decl(False))
                        else:
                            stmts.extend(self.reg_decl(True))
                    elif t == ".loc":
                        loc = self.loc()
                    elif t in _VAR_SPACES:
                        stmts.extend(self.var_decls(""))
                    elif t in BODY_VERBATIM_DIRECTIVES:
                        end = self.skip_to(";", t)
                        if t == ".branchtargets":
                            self.branch_target_list(start, end)
                        append(ir.Directive(self.verbatim(start, end)))
                        self.i = end + 1
                    else:
                        raise self.error(f"unknown directive {t} inside function {name}; expected "
                                         ".reg, .local, .shared, .param, .loc, .pragma or an instruction")
                elif t == "{":
                    depth += 1
                    append(ir.Scope(True))
                    self.block_open()
                    self.i += 1
                elif t == "}":
                    depth -= 1
                    self.i += 1
                    if depth == 0:
                        stmts.extend(ir.Label(name) for name in self.labels_check())
                        return tuple(self.retarget_branches(stmts)), tuple(reg_decls)
                    append(ir.Scope(False))
                    self.block_close()
                elif toks[start + 1] == ":" and (c.isalpha() or c in "$_"):
                    append(ir.Label(self.label_defined(t, start)))
                    self.i += 2
                elif c == "@" or c.isalpha():
                    append(instruction(loc))
                elif t == EOF:
                    raise self.error(f"unexpected end of input inside function {name}: expected "
                                     f"'}}' to close the body opened at line "
                                     f"{self.tk.line_col(self.tk.offset(open_index))[0]}")
                else:
                    raise self.error(f"expected an instruction, label or directive inside function "
                                     f"{name}, got {show_token(t)}")
            except (ParseError, RecursionError):
                raise
            except Exception as exc:  # never leak an internal traceback
                raise self.error(f"cannot parse this statement ({type(exc).__name__}: {exc})", start) from None
