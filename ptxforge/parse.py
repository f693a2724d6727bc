"""PTX text → IR (:class:`~ptxforge.ir.Module`), with file/line/column errors.

The parser accepts what nvcc, NVRTC, clang, Julia (LLVM NVPTX), Triton and numba emit for
CUDA 11–13 / PTX ISA up to 9.x: module header, ``.entry``/``.func`` with parameters and
return values, register and variable declarations, ``.loc``/``.file`` line information
(resolving ``function_name``/``inlined_at``), debug sections (skipped), ``.pragma``, labels,
guards, vector/brace/paren/pipe operands, call sequences in ``{ }`` scopes, and every opcode:
unknown opcodes are kept as generic instructions whose first operand is the destination.

Example::

    >>> from ptxforge.parse import parse
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
import struct
from typing import Optional, Union

from . import ir
from .errors import ParseError, PtxforgeError
from .lexer import (
    BODY_VERBATIM_DIRECTIVES,
    PERF_DIRECTIVES,
    SPECIAL_REGISTERS,
    Tokens,
    is_no_def,
    special_register_type,
)
from .types import PtxType, class_for_decl

__all__ = ["parse", "parse_file"]

_EOF = " end of input"          # sentinel token: real tokens never contain a space
_LINKAGES = frozenset({".visible", ".extern", ".weak", ".common"})
_VAR_SPACES = frozenset({".global", ".shared", ".const", ".local", ".param"})
_VERSION = re.compile(r"[0-9]+\.[0-9]+\Z")
_INT = re.compile(r"(?:0[xX][0-9a-fA-F]+|0[bB][01]+|[0-9]+)U?\Z")
_REG_SPLIT = re.compile(r"(.*?)([0-9]+)\Z")
_IDENT = re.compile(r"[$A-Za-z_%][\w$]*\Z")


def parse(text: Union[str, bytes], filename: str = "<ptx>") -> ir.Module:
    """Parse PTX text into a :class:`~ptxforge.ir.Module`.

    Raises :class:`~ptxforge.errors.ParseError` (with file, line, column and the offending
    line) for malformed input; never an internal exception.
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise ParseError(f"expected PTX text (str or bytes), got {type(text).__name__}",
                         file=str(filename), line=0, column=0)
    return _Parser(text, filename).module()


def parse_file(path: Union[str, "os.PathLike[str]"]) -> ir.Module:
    """Parse the PTX file at ``path`` (errors name the file)."""
    with open(path, "rb") as fh:
        data = fh.read()
    return parse(data, filename=os.fspath(path))


def _int_value(tok: str) -> int:
    t = tok[:-1] if tok.endswith("U") else tok
    if len(t) > 1 and t[0] == "0" and t[1].isdigit():
        return int(t, 8)
    return int(t, 0)


def _show(tok: str) -> str:
    return "end of input" if tok == _EOF else repr(tok)


class _Parser:
    """Recursive-descent parser over the token list; one instance per text."""

    def __init__(self, text: str, filename: str) -> None:
        self.tk = Tokens(text, filename)
        self.n = len(self.tk.toks)
        self.toks = self.tk.toks + [_EOF] * 8
        self.i = 0
        self.files: dict[int, str] = {}
        self.debug_str: dict[str, bytes] = {}
        self.loc_cache: dict[tuple, ir.SourceLoc] = {}
        self.loc_fast: dict[tuple, ir.SourceLoc] = {}
        self.imm_cache: dict[str, ir.Immediate] = {}
        self.sym_cache: dict[str, ir.Symbol] = {}
        self.opcode_kind: dict[str, tuple[int, bool]] = {}  # opcode -> (ndefs, is a branch)
        self.special_cache: dict[str, ir.SpecialReg] = {}
        # per function
        self.regs: dict[str, ir.Register] = {}
        self.ranges: dict[str, tuple[int, PtxType]] = {}
        self.function_name = ""

    # -- helpers ----------------------------------------------------------------------------
    def error(self, message: str, index: Optional[int] = None) -> ParseError:
        return self.tk.error(self.i if index is None else index, message)

    def expect(self, tok: str, what: str = "") -> None:
        got = self.toks[self.i]
        if got != tok:
            where = f" {what}" if what else ""
            raise self.error(f"expected {tok!r}{where}, got {_show(got)}")
        self.i += 1

    def integer(self, what: str) -> int:
        tok = self.toks[self.i]
        if tok.isdigit() and (tok[0] != "0" or len(tok) == 1):  # plain decimal: the common case
            self.i += 1
            return int(tok)
        neg = tok == "-"
        if neg:
            tok = self.toks[self.i + 1]
        if not _INT.match(tok):
            raise self.error(f"expected an integer {what}, got {_show(tok)}")
        self.i += 2 if neg else 1
        value = _int_value(tok)
        return -value if neg else value

    def ident(self, what: str) -> str:
        tok = self.toks[self.i]
        if not _IDENT.match(tok):
            raise self.error(f"expected {what}, got {_show(tok)}")
        self.i += 1
        return tok

    def ptx_type(self, what: str) -> PtxType:
        tok = self.toks[self.i]
        if not tok.startswith("."):
            raise self.error(f"expected a type for {what}, got {_show(tok)}")
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

    # -- pre-scan: .file table and the debug string section --------------------------------
    def prescan(self) -> None:
        toks, n = self.toks, self.n
        k = -1
        while True:
            try:
                k = toks.index(".file", k + 1, n)
            except ValueError:
                break
            if _INT.match(toks[k + 1]) and toks[k + 2].startswith('"'):
                path = toks[k + 2][1:-1].replace('\\"', '"').replace("\\\\", "\\")
                self.files[_int_value(toks[k + 1])] = path
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
                k += 1
                while _INT.match(toks[k]):
                    data.append(_int_value(toks[k]) & 0xFF)
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

    # -- module -------------------------------------------------------------------------------
    def module(self) -> ir.Module:
        tk = self.tk
        if self.n == 0:
            raise ParseError("empty PTX: expected '.version' as the first directive",
                             file=tk.filename, line=1, column=1, text="")
        self.prescan()
        toks = self.toks
        if toks[0] != ".version":
            raise self.error(f"expected '.version' as the first directive, got {_show(toks[0])}", 0)
        version = target = None
        address_size = 64
        globals_: list[ir.VarDecl] = []
        kernels: list[ir.Kernel] = []
        while self.i < self.n:
            start = self.i
            try:
                t = toks[self.i]
                if t == ".version":
                    self.i += 1
                    v = toks[self.i]
                    if not _VERSION.match(v):
                        raise self.error(f"expected a PTX ISA version such as 8.5 after .version, got {_show(v)}")
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
                        raise self.error(f"expected a quoted path after .file, got {_show(toks[self.i])}")
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
                        kernels.append(self.function(linkage, t2 == ".entry"))
                    elif t2 in _VAR_SPACES:
                        globals_.extend(self.var_decls(linkage, module_level=True))
                    else:
                        raise self.error(f"expected .entry, .func or a variable after {linkage}, "
                                         f"got {_show(t2)}")
                elif t in _VAR_SPACES:
                    globals_.extend(self.var_decls("", module_level=True))
                elif t == ".loc":
                    self.loc()
                elif t == "}":
                    raise self.error("unbalanced '}' at module level: no open '{' to close")
                elif t.startswith(".") and len(t) > 1:
                    raise self.error(f"unknown directive {t} at module level; expected .version, "
                                     ".target, .address_size, .entry, .func, .global, .const, "
                                     ".shared, .file or .section")
                else:
                    raise self.error(f"expected a directive at module level, got {_show(t)}")
            except (ParseError, RecursionError):
                raise
            except Exception as exc:  # never leak an internal traceback
                raise self.error(f"cannot parse this statement ({type(exc).__name__}: {exc})", start) from None
        if target is None:
            raise self.error("missing .target directive (expected e.g. '.target sm_80')", 0)
        return ir.Module(version=version, target=target, address_size=address_size,
                         globals=tuple(globals_), kernels=tuple(kernels),
                         files=tuple(sorted(self.files.items())))

    def ident_or_directive(self, what: str) -> str:
        tok = self.toks[self.i]
        if not re.match(r"\.?[$A-Za-z_][\w$.]*\Z", tok):
            raise self.error(f"expected {what}, got {_show(tok)}")
        self.i += 1
        return tok

    # -- declarations -------------------------------------------------------------------------
    def dims(self) -> tuple:
        out = []
        toks = self.toks
        while toks[self.i] == "[":
            self.i += 1
            if toks[self.i] == "]":
                out.append(None)
            else:
                out.append(self.integer("array size"))
            self.expect("]", "to close the array size")
        return tuple(out)

    def var_decls(self, linkage: str, module_level: bool) -> list:
        """``.global/.shared/.const/.local/.param [.align N] .type name[dims] [= init], …;``."""
        toks = self.toks
        start = self.i
        space = toks[self.i][1:]
        self.i += 1
        align = None
        while True:
            t = toks[self.i]
            if t == ".align":
                self.i += 1
                align = self.integer("after .align")
            elif t in (".v2", ".v4", ".v8") or t == ".attribute" or t.startswith(".ptr"):
                return self._verbatim_decl(start, module_level, t)
            else:
                break
        if toks[self.i] in (".texref", ".samplerref", ".surfref"):
            return self._verbatim_decl(start, module_level, toks[self.i])
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
                                  init=init, linkage=linkage))
            if toks[self.i] == ",":
                self.i += 1
                continue
            self.expect(";", f"after the .{space} declaration of {name}")
            return out

    def _verbatim_decl(self, start: int, module_level: bool, what: str) -> list:
        if module_level:
            raise self.error(f"unsupported module-level variable form ({what}); ptxforge keeps "
                             "vector, attributed and texture variables only inside functions")
        end = self.skip_to(";", "the declaration")
        self.i = end + 1
        return [ir.Directive(self.verbatim(start, end))]

    def reg_decl(self, nested: bool) -> list:
        """``.reg .type %a, %r<N>;`` → RegDecls (function level) or VarDecls (nested scope)."""
        toks = self.toks
        self.i += 1
        t = toks[self.i]
        if t in (".v2", ".v4", ".v8"):
            raise self.error(f"vector registers ({t}) are not supported; expected .reg .type names")
        if not t.startswith("."):
            raise self.error(f"bad register declaration: expected a type such as .b32 after .reg, "
                             f"got {_show(t)}")
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
            if not _IDENT.match(name):
                raise self.error(f"bad register declaration: expected a register name, got {_show(name)}")
            self.i += 1
            count = None
            if toks[self.i] == "<":
                self.i += 1
                tok = toks[self.i]
                if not _INT.match(tok):
                    raise self.error(f"bad register declaration: expected a register count in "
                                     f"{name}<N>, got {_show(tok)}")
                count = _int_value(tok)
                self.i += 1
                self.expect(">", f"to close {name}<{count}")
                self.ranges[name] = (count, ptype)
            else:
                self.regs[name] = ir.Register(name, ptype)
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
            raise self.error(f"bad register declaration: expected ',' or ';' after {name}, got {_show(t)}")

    # -- line information ----------------------------------------------------------------------
    def loc(self) -> ir.SourceLoc:
        """``.loc file line col [, function_name LABEL[+off], inlined_at file line col]``."""
        # Fast path for the two shapes compilers emit on nearly every line, keyed by their
        # raw tokens: ``.loc F L C`` and ``.loc F L C, function_name X, inlined_at F L C``
        # (all plain decimals).  A miss parses in full below and remembers the result.
        toks, i = self.toks, self.i
        if toks[i + 3].isdigit():
            if toks[i + 4] != ",":
                key, n = (toks[i + 1], toks[i + 2], toks[i + 3]), 4
            elif (toks[i + 5] == "function_name" and toks[i + 7] == ","
                  and toks[i + 8] == "inlined_at" and toks[i + 11].isdigit()
                  and toks[i + 12] != ","):
                key, n = (tuple(toks[i + 1:i + 12]), self.function_name), 12
            else:
                key = None
            if key is not None:
                loc = self.loc_fast.get(key)
                if loc is not None:
                    self.i = i + n
                    return loc
                loc = self._loc_full()
                if self.i == i + n:  # it read exactly the key's tokens (and the lookahead)
                    self.loc_fast[key] = loc
                return loc
        return self._loc_full()

    def _loc_full(self) -> ir.SourceLoc:
        """Parse a ``.loc`` directive token by token."""
        self.i += 1
        f = self.integer("file index after .loc")
        line = self.integer("line number in .loc")
        col = self.integer("column in .loc") if _INT.match(self.toks[self.i]) else 0
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
                c = self.integer("column after inlined_at") if _INT.match(toks[self.i]) else 0
                inl = (a, b, c)
            else:
                raise self.error(f"unknown .loc attribute {key!r}; expected function_name or inlined_at",
                                 self.i - 1)
        key = (f, line, col, fn, inl)
        loc = self.loc_cache.get(key)
        if loc is None:
            inlined = None
            if inl is not None:
                inlined = ir.SourceLoc(self._file(inl[0]), inl[1], inl[2], self.function_name or None)
            loc = ir.SourceLoc(self._file(f), line, col, self._function(fn), inlined)
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
                raise self.error(f"expected ',' or ')' in the {what}, got {_show(t)}", self.i - 1)

    def param(self, what: str) -> ir.Param:
        toks = self.toks
        t = toks[self.i]
        if t != ".param":
            if t == ".reg":
                raise self.error("register parameters (.reg) are not supported; expected .param")
            raise self.error(f"expected '.param' in the {what}, got {_show(t)}")
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
            raise self.error(f"expected a parameter type such as .u64, got {_show(toks[self.i])}")
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
                while _INT.match(toks[self.i]):
                    values.append(_int_value(toks[self.i]))
                    self.i += 1
                    if toks[self.i] == "," and _INT.match(toks[self.i + 1]):
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
                raise self.error(f"expected '{{' to open the body of {name}, got {_show(t)}")
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
                    if t == ".reg":
                        if depth == 1:
                            reg_decls.extend(self.reg_decl(False))
                        else:
                            stmts.extend(self.reg_decl(True))
                    elif t == ".loc":
                        loc = self.loc()
                    elif t in _VAR_SPACES:
                        stmts.extend(self.var_decls("", module_level=False))
                    elif t in BODY_VERBATIM_DIRECTIVES:
                        end = self.skip_to(";", t)
                        append(ir.Directive(self.verbatim(start, end)))
                        self.i = end + 1
                    else:
                        raise self.error(f"unknown directive {t} inside function {name}; expected "
                                         ".reg, .local, .shared, .param, .loc, .pragma or an instruction")
                elif t == "{":
                    depth += 1
                    append(ir.Scope(True))
                    self.i += 1
                elif t == "}":
                    depth -= 1
                    self.i += 1
                    if depth == 0:
                        return tuple(stmts), tuple(reg_decls)
                    append(ir.Scope(False))
                elif toks[start + 1] == ":" and (c.isalpha() or c in "$_"):
                    append(ir.Label(t))
                    self.i += 2
                elif c == "@" or c.isalpha():
                    append(instruction(loc))
                elif t == _EOF:
                    raise self.error(f"unexpected end of input inside function {name}: expected "
                                     f"'}}' to close the body opened at line "
                                     f"{self.tk.line_col(self.tk.offset(open_index))[0]}")
                else:
                    raise self.error(f"expected an instruction, label or directive inside function "
                                     f"{name}, got {_show(t)}")
            except (ParseError, RecursionError):
                raise
            except Exception as exc:  # never leak an internal traceback
                raise self.error(f"cannot parse this statement ({type(exc).__name__}: {exc})", start) from None

    # -- instructions and operands ---------------------------------------------------------
    def instruction(self, loc: Optional[ir.SourceLoc]) -> ir.Instruction:
        toks = self.toks
        guard = None
        if toks[self.i] == "@":
            self.i += 1
            neg = toks[self.i] == "!"
            if neg:
                self.i += 1
            guard = ir.Guard(self.register(toks[self.i]), neg)
            self.i += 1
        opcode = toks[self.i]
        if not opcode[0].isalpha():
            raise self.error(f"expected an opcode, got {_show(opcode)}")
        self.i += 1
        if toks[self.i] == ";":
            self.i += 1
            return ir.Instruction(opcode, (), 0, guard, loc)
        operands = []
        operand = self.operand
        while True:
            operands.append(operand())
            t = toks[self.i]
            self.i += 1
            if t == ",":
                continue
            if t == ";":
                break
            raise self.error(f"expected ',' or ';' after an operand of {opcode}, got {_show(t)}",
                             self.i - 1)
        kind = self.opcode_kind.get(opcode)
        if kind is None:
            kind = self.opcode_kind[opcode] = (0 if is_no_def(opcode) else 1,
                                           opcode.startswith("bra") or opcode.startswith("brx"))
        if kind[1]:
            operands = [ir.LabelRef(o.name) if isinstance(o, ir.Symbol) else o for o in operands]
        return ir.Instruction(opcode, tuple(operands), kind[0], guard, loc)

    def register(self, name: str) -> Union[ir.Register, ir.SpecialReg]:
        reg = self.regs.get(name)
        if reg is not None:
            return reg
        m = _REG_SPLIT.match(name)
        if m is not None:
            rng = self.ranges.get(m.group(1))
            if rng is not None and int(m.group(2)) < rng[0]:
                reg = ir.Register(name, rng[1])
                self.regs[name] = reg
                return reg
        special = self.special_cache.get(name)
        if special is not None:
            return special
        if name in SPECIAL_REGISTERS:
            special = ir.SpecialReg(name, PtxType.get(special_register_type(name)))
            self.special_cache[name] = special
            return special
        if not name.startswith("%") and not _IDENT.match(name):
            raise self.error(f"expected a register, got {_show(name)}")
        raise self.error(f"undeclared register {name} in function {self.function_name}; declare it "
                         "with .reg (or use a special register such as %tid.x)")

    def operand(self):
        toks = self.toks
        t = toks[self.i]
        c = t[0]
        if c == "%":
            reg = self.regs.get(t)
            if reg is None:
                reg = self.register(t)
            self.i += 1
            if toks[self.i] == "|":
                self.i += 1
                return ir.Vector((reg, self.operand()), "pipe")
            return reg
        if c == "[":
            return self.address()
        if c == "{" or c == "(":
            close = "}" if c == "{" else ")"
            self.i += 1
            elems = []
            if toks[self.i] == close:
                self.i += 1
            else:
                while True:
                    elems.append(self.operand())
                    t2 = toks[self.i]
                    self.i += 1
                    if t2 == close:
                        break
                    if t2 != ",":
                        raise self.error(f"expected ',' or {close!r} in a vector operand, got {_show(t2)}",
                                         self.i - 1)
            return ir.Vector(tuple(elems), "brace" if c == "{" else "paren")
        if c == "!":
            self.i += 1
            reg = self.register(toks[self.i])
            if not isinstance(reg, ir.Register):
                raise self.error(f"expected a predicate register after '!', got {_show(toks[self.i])}")
            self.i += 1
            return ir.Negated(reg)
        if c.isdigit() or c == "-":
            return self.immediate()
        if c == "_" and t == "_":
            self.i += 1
            return ir.Raw("_")
        if c.isalpha() or c == "$" or c == "_":
            if not _IDENT.match(t):
                raise self.error(f"expected an operand, got {_show(t)}")
            self.i += 1
            sym = self.sym_cache.get(t)
            if sym is None:
                sym = self.sym_cache[t] = ir.Symbol(t)
            return sym
        raise self.error(f"expected an operand (register, literal, address, vector or name), got {_show(t)}")

    def immediate(self) -> ir.Immediate:
        toks = self.toks
        t = toks[self.i]
        text = t
        if t == "-":
            nxt = toks[self.i + 1]
            if not nxt[0].isdigit():
                raise self.error(f"expected a number after '-', got {_show(nxt)}", self.i + 1)
            text = "-" + nxt
            self.i += 1
        self.i += 1
        imm = self.imm_cache.get(text)
        if imm is not None:
            return imm
        body = text.lstrip("-")
        sign = -1 if text.startswith("-") else 1
        c1 = body[1:2]
        if len(body) == 10 and c1 in "fF" and body[0] == "0":
            value = struct.unpack(">f", bytes.fromhex(body[2:]))[0]
            imm = ir.Immediate(sign * value, PtxType.get("f32"), text)
        elif len(body) == 18 and c1 in "dD" and body[0] == "0":
            value = struct.unpack(">d", bytes.fromhex(body[2:]))[0]
            imm = ir.Immediate(sign * value, PtxType.get("f64"), text)
        elif _INT.match(body):
            imm = ir.Immediate(sign * _int_value(body), None, text)
        else:
            try:
                imm = ir.Immediate(sign * float(body), None, text)
            except ValueError:
                raise self.error(f"malformed numeric literal {text!r}", self.i - 1) from None
        self.imm_cache[text] = imm
        return imm

    def address(self) -> Union[ir.Address, ir.Raw]:
        toks = self.toks
        start = self.i
        self.i += 1
        t = toks[self.i]
        base = None
        offset = 0
        if t[0] == "%":
            base = self.register(t)
            if not isinstance(base, ir.Register):
                return self._raw_address(start)
            self.i += 1
        elif t[0].isalpha() or t[0] in "$_":
            base = self.sym_cache.get(t) or ir.Symbol(t)
            self.i += 1
        elif t[0].isdigit() or t == "-":
            offset = self.integer("address")
        else:
            raise self.error(f"expected a register, name or offset in an address, got {_show(t)}")
        t = toks[self.i]
        if t == "+" and base is not None:
            self.i += 1
            if not (toks[self.i][0].isdigit() or toks[self.i] == "-"):
                return self._raw_address(start)
            offset = self.integer("offset in an address")
        elif t == "-" and base is not None:
            self.i += 1
            offset = -self.integer("offset in an address")
        if toks[self.i] != "]":
            return self._raw_address(start)
        self.i += 1
        return ir.Address(base, offset)

    def _raw_address(self, start: int) -> ir.Raw:
        """A bracketed operand the IR cannot type (``[tex, {%f1, %f2}]``), kept verbatim."""
        depth = 0
        k = start
        while True:
            t = self.toks[k]
            if t == "[":
                depth += 1
            elif t == "]":
                depth -= 1
                if depth == 0:
                    break
            elif t == ";" or t == _EOF:
                raise self.error("expected ']' to close the address", k)
            k += 1
        self.i = k + 1
        return ir.Raw(self.verbatim(start, k))
