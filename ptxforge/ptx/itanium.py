"""The Itanium C++ ABI mangled-name grammar, read into display text (used by :mod:`.demangle`).

:class:`Demangler` reads one ``_Z…`` name into a small tree of tuples and renders it the way
``c++filt`` does; a construct it does not cover raises :class:`Unsupported`, which
:func:`ptxforge.ptx.demangle.demangle` turns into the name as given.
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["Demangler", "Unsupported"]

_BUILTIN = {
    "v": "void", "w": "wchar_t", "b": "bool", "c": "char", "a": "signed char",
    "h": "unsigned char", "s": "short", "t": "unsigned short", "i": "int", "j": "unsigned int",
    "l": "long", "m": "unsigned long", "x": "long long", "y": "unsigned long long",
    "n": "__int128", "o": "unsigned __int128", "f": "float", "d": "double", "e": "long double",
    "g": "__float128", "z": "...",
}
_BUILTIN_D = {
    "Dh": "half", "Di": "char32_t", "Ds": "char16_t", "Du": "char8_t", "Da": "auto",
    "Dc": "decltype(auto)", "Dn": "decltype(nullptr)",
}
# literal template arguments: suffix for the integer types printed plainly, else a cast
_LITERAL_SUFFIX = {"i": "", "j": "u", "l": "l", "m": "ul", "x": "ll", "y": "ull"}
_OPERATORS = {
    "nw": "new", "na": "new[]", "dl": "delete", "da": "delete[]", "ps": "+", "ng": "-",
    "ad": "&", "de": "*", "co": "~", "pl": "+", "mi": "-", "ml": "*", "dv": "/", "rm": "%",
    "an": "&", "or": "|", "eo": "^", "aS": "=", "pL": "+=", "mI": "-=", "mL": "*=", "dV": "/=",
    "rM": "%=", "aN": "&=", "oR": "|=", "eO": "^=", "ls": "<<", "rs": ">>", "lS": "<<=",
    "rS": ">>=", "eq": "==", "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">=",
    "ss": "<=>", "nt": "!", "aa": "&&", "oo": "||", "pp": "++", "mm": "--", "cm": ",",
    "pm": "->*", "pt": "->", "cl": "()", "ix": "[]", "qu": "?",
}
_TRAITS = "<char, std::char_traits<char> >"
_STD = {  # spelled out as c++filt does
    "Sa": "std::allocator", "Sb": "std::basic_string",
    "Ss": "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
    "Si": "std::basic_istream" + _TRAITS, "So": "std::basic_ostream" + _TRAITS,
    "Sd": "std::basic_iostream" + _TRAITS,
}
_SPECIAL = {"TV": "vtable for ", "TT": "VTT for ", "TI": "typeinfo for ",
            "TS": "typeinfo name for "}
_CLONE_PART = r"\.[a-z_]+(?:\.[0-9]+)*|\.[0-9]+"
_CLONE = re.compile(f"(?:{_CLONE_PART})+\\Z")


class Unsupported(Exception):
    """The name uses a construct this demangler does not cover."""


def _decl(node: tuple, d: str = "") -> str:
    """Render a type node with the declarator text ``d`` (``*``, ``&``, `` (*)(int)`` …)."""
    kind = node[0]
    if kind == "n":
        return node[1] + d
    if kind == "q":
        return _decl(node[1], " " + node[2] + d)
    if kind == "p":  # no space between '*' and the '(' of a function or array declarator
        return _decl(node[1], node[2] + (d[1:] if node[1][0] in "fa" and d[:2] == " (" else d))
    if kind == "m":
        return _decl(node[2], f" {node[1]}::*" + d)
    if kind == "f":
        params = ", ".join(_decl(p) for p in node[2])
        inner = f" ({d.strip()})" if d else ""
        return _decl(node[1], f"{inner}({params}){node[3]}" if inner else f" ({params}){node[3]}")
    if kind == "a":
        if not d:
            return _decl(node[1], f" [{node[2]}]")
        if d.startswith(" ["):
            return _decl(node[1], f"{d}[{node[2]}]")
        return _decl(node[1], f" ({d.strip()}) [{node[2]}]")
    if kind == "v":
        return _decl(node[1], f" __vector({node[2]})" + d)
    if kind == "pack":  # a pack expansion: the declarator applies to every element
        return ", ".join(_decl(x, d) for x in node[1])
    raise Unsupported(kind)


def _args_text(args: list) -> str:
    if any(a == ("pack", []) for a in args[:-1]):
        raise Unsupported("an empty pack before other template arguments")
    inner = ", ".join(a for a in (_decl(x) for x in args) if a)
    return "<" + inner + (" >" if inner.endswith(">") else ">")


def _simple(node: tuple) -> bool:
    """True when a type prints as ``base`` plus a suffix (no function or array declarator)."""
    if node[0] in ("n", "pack"):
        return True
    if node[0] in ("q", "p", "v"):
        return _simple(node[1])
    return False


class Demangler:
    """A recursive-descent reader over one mangled name."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 2
        self.subs: list[tuple] = []
        self.targs: list[tuple] = []
        self.short = False  # names only: no parameter lists, no return types
        self.function = False  # the whole name is a function (it has a parameter list)

    # -- cursor -------------------------------------------------------------------------------
    def peek(self, n: int = 1) -> str:
        return self.s[self.i:self.i + n]

    def take(self, tok: str) -> bool:
        if self.s.startswith(tok, self.i):
            self.i += len(tok)
            return True
        return False

    def need(self, tok: str) -> None:
        if not self.take(tok):
            raise Unsupported(f"expected {tok!r} at {self.i}")

    def number(self) -> int:
        return int(self.digits())

    def digits(self) -> str:
        """A decimal number as written (``n`` is a minus sign), leading zeros kept."""
        neg = self.take("n")
        j = self.i
        while self.i < len(self.s) and self.s[self.i].isdigit():
            self.i += 1
        if j == self.i:
            raise Unsupported("expected a number")
        return ("-" if neg else "") + self.s[j:self.i]

    def seq_id(self) -> int:
        """``_`` is 0, ``<base 36>_`` is value + 1 (substitutions and template parameters)."""
        if self.take("_"):
            return 0
        j = self.i
        while self.s[self.i] != "_":
            self.i += 1
        value = int(self.s[j:self.i], 36)
        self.i += 1
        return value + 1

    # -- top level -----------------------------------------------------------------------------
    def whole(self, short: bool = False) -> str:
        self.short = short
        s = self.s
        clone = _CLONE.search(s)
        end = clone.start() if clone else len(s)
        self.s = s[:end]
        two = self.peek(2)
        if two in _SPECIAL:
            self.i += 2
            text = _SPECIAL[two] + _decl(self.type())
        elif two == "GV":
            self.i += 2
            text = "guard variable for " + self.name()[0]
        else:
            text = self.encoding(short)
        if self.i != len(self.s):
            raise Unsupported("trailing characters")
        if clone and not self.function:
            raise Unsupported("a clone suffix on something that is not a function")
        if clone and not short:
            text += "".join(f" [clone {part}]" for part in re.findall(_CLONE_PART, s[end:]))
        return text

    def encoding(self, short: bool = False, local: bool = False) -> str:
        saved = self.targs
        name, is_template, suffix, no_return = self.name(top=True)
        if self.i >= len(self.s) or self.peek() == "E":
            self.targs = saved
            return name + suffix  # a variable (or a local name's entity)
        ret = None
        if is_template and not no_return:
            ret = self.type()
        params = self.bare_params()
        self.function = not local
        self.targs = saved
        if short:
            return name
        text = f"{name}({params}){suffix}"
        if ret is None or local:  # c++filt shows no return type for a local name's function
            return text
        if not _simple(ret):
            raise Unsupported("function returning a function or array pointer")
        return f"{_decl(ret)} {text}"

    def bare_params(self) -> str:
        types = []
        only_void = self.peek() == "v"
        while self.i < len(self.s) and self.peek() != "E":
            types.append(self.type())
        if not types:
            raise Unsupported("no parameter types")
        if len(types) == 1 and only_void:
            return ""
        return ", ".join(t for t in (_decl(x) for x in types) if t)

    # -- names ---------------------------------------------------------------------------------
    def name(self, top: bool = False) -> tuple:
        """(text, ends with template args, cv/ref suffix for a member function, no return type)."""
        c = self.peek()
        if c == "N":
            return self.nested(top)
        if c == "Z":
            return self.local(top)
        if self.peek(2) == "St":
            self.i += 2
            text, kind = self.unqualified("std")
            text = "std::" + text
        elif c == "S":
            text = _decl(self.substitution())
            kind = "name"
            if self.peek() != "I":
                raise Unsupported("a substitution as a whole name")
        else:
            text, kind = self.unqualified(None)
        if self.peek() == "I":
            self.subs.append(("n", text))
            args = self.template_args()
            if top:
                self.targs = args
            text += (" " if text.endswith("<") else "") + _args_text(args)
            return text, True, "", kind == "conv"
        return text, False, "", kind in ("ctor", "conv")

    def nested(self, top: bool) -> tuple:
        self.need("N")
        quals = self.cv_quals()
        ref = " &&" if self.take("O") else " &" if self.take("R") else ""
        parts: list[str] = []
        last = ""
        kind = "name"
        is_template = False
        while not self.take("E"):
            c = self.peek()
            is_template = False
            if c == "S" and not parts:
                if self.take("St"):
                    parts.append("std")
                    continue
                node = self.substitution()
                parts.append(_decl(node))
                last = _base_name(parts[-1])
                continue
            if c == "I":
                if not parts:
                    raise Unsupported("template args without a name")
                args = self.template_args()
                if top:
                    self.targs = args
                parts[-1] += (" " if parts[-1].endswith("<") else "") + _args_text(args)
                is_template = True
                if self.peek() != "E":
                    self.subs.append(("n", "::".join(parts)))
                continue
            if c == "T":
                parts.append(_decl(self.template_param()))
                self.subs.append(("n", "::".join(parts)))
                continue
            if c == "M":  # data-member-prefix of a closure in a default member initialiser
                self.i += 1
                continue
            text, kind = self.unqualified(last)
            if kind == "source":
                last = text.split("[abi:", 1)[0]
            parts.append(text)
            if self.peek() != "E":
                self.subs.append(("n", "::".join(parts)))
        if not parts:
            raise Unsupported("empty nested name")
        suffix = ("" if not quals else " " + quals) + ref
        no_return = kind in ("ctor", "dtor", "conv")
        return "::".join(parts), is_template, suffix, no_return

    def local(self, top: bool) -> tuple:
        self.need("Z")
        outer_targs = self.targs
        function = self.encoding(self.short, local=True)
        self.targs = outer_targs
        self.need("E")
        if self.take("s"):
            self.discriminator()
            return function + "::string literal", False, "", False
        text, is_template, suffix, no_return = self.name(top)
        self.discriminator()
        return f"{function}::{text}", is_template, suffix, no_return

    def discriminator(self) -> None:
        if self.take("__"):
            self.number()
            self.need("_")
        elif self.peek() == "_" and self.peek(2)[1:].isdigit():
            self.i += 1
            self.number()

    def unqualified(self, enclosing: Optional[str]) -> tuple:
        """(text, kind): kind is 'name', 'ctor', 'dtor' or 'conv'."""
        c = self.peek()
        if c.isdigit():
            text = self.source_name()
            kind = "source"
        elif c == "C" and self.peek(2)[1:2] in ("1", "2", "3"):
            self.i += 2
            if enclosing is None:
                raise Unsupported("constructor outside a class")
            text, kind = enclosing.split("<", 1)[0], "ctor"
        elif c == "D" and self.peek(2)[1:2] in ("0", "1", "2"):
            self.i += 2
            if enclosing is None:
                raise Unsupported("destructor outside a class")
            text, kind = "~" + enclosing.split("<", 1)[0], "dtor"
        elif self.peek(2) == "Ul":
            self.i += 2
            params = []
            while not self.take("E"):
                params.append(self.type())
            shown = "" if params == [("n", "void")] else ", ".join(_decl(p) for p in params)
            text, kind = f"{{lambda({shown})#{self.closure_number()}}}", "name"
        elif self.peek(2) == "Ut":
            self.i += 2
            text, kind = f"{{unnamed type#{self.closure_number()}}}", "name"
        elif self.peek(2) == "cv":
            self.i += 2
            text, kind = "operator " + _decl(self.type()), "conv"
        elif self.peek(2) == "li":
            self.i += 2
            text, kind = 'operator"" ' + self.source_name(), "name"
        elif self.peek(2) in _OPERATORS:
            op = _OPERATORS[self.peek(2)]
            self.i += 2
            text, kind = ("operator " if op[0].isalpha() else "operator") + op, "name"
        else:
            raise Unsupported(f"unqualified name at {self.i}")
        while self.take("B"):
            text += f"[abi:{self.source_name()}]"
        return text, kind

    def closure_number(self) -> int:
        """``_`` is #1, ``<decimal>_`` is #(value + 2) (lambdas and unnamed types)."""
        n = 1 if self.peek() == "_" else self.number() + 2
        self.need("_")
        return n

    def source_name(self) -> str:
        n = self.number()
        if n <= 0 or self.i + n > len(self.s):
            raise Unsupported("bad source-name length")
        ident = self.s[self.i:self.i + n]
        self.i += n
        if ident.startswith("_GLOBAL__N"):
            return "(anonymous namespace)"
        return ident

    # -- substitutions and template arguments ---------------------------------------------------
    def substitution(self) -> tuple:
        two = self.peek(2)
        if two in _STD:
            self.i += 2
            return ("n", _STD[two])
        self.need("S")
        k = self.seq_id()
        if k >= len(self.subs):
            raise Unsupported("substitution out of range")
        return self.subs[k]

    def template_param(self) -> tuple:
        self.need("T")
        k = self.seq_id()
        if k >= len(self.targs):
            raise Unsupported("template parameter out of range")
        return self.targs[k]

    def template_args(self) -> list:
        self.need("I")
        args = []
        while not self.take("E"):
            args.append(self.template_arg())
        return args

    def template_arg(self) -> tuple:
        c = self.peek()
        if c == "L":
            return self.literal()
        if c == "J":
            self.i += 1
            items = []
            while not self.take("E"):
                items.append(self.template_arg())
            return ("pack", items)
        if c == "X":
            raise Unsupported("expression template argument")
        return self.type()

    def literal(self) -> tuple:
        self.need("L")
        if self.take("_Z") or self.take("Z"):
            saved, function = self.targs, self.function
            text = self.encoding()
            self.targs, self.function = saved, function
            self.need("E")
            return ("n", text)
        c = self.peek()
        if c in _LITERAL_SUFFIX:
            self.i += 1
            text = f"{self.digits()}{_LITERAL_SUFFIX[c]}"
        elif c == "b":
            self.i += 1
            value = self.digits()
            text = {"1": "true", "0": "false"}.get(value, f"(bool){value}")
        elif c in "fde" and c in _BUILTIN:
            self.i += 1
            j = self.i
            while self.s[self.i] in "0123456789abcdef":
                self.i += 1
            if j == self.i:
                raise Unsupported("float literal without hex digits")
            text = f"({_BUILTIN[c]})[{self.s[j:self.i]}]"
        elif c in _BUILTIN and c not in "vz":
            self.i += 1
            text = f"({_BUILTIN[c]}){self.digits()}"
        else:
            ty = self.type()
            if ty[0] != "n":
                raise Unsupported("literal of a compound type")
            text = f"({ty[1]}){self.digits()}"
        self.need("E")
        return ("n", text)

    # -- types ---------------------------------------------------------------------------------
    def cv_quals(self) -> str:
        found = set()
        while self.peek() in ("r", "V", "K") and self.peek():
            found.add(self.peek())
            self.i += 1
        return " ".join(q for c, q in (("K", "const"), ("V", "volatile"), ("r", "restrict"))
                        if c in found)

    def function_type(self, member: bool) -> tuple:
        """A function type ``F [Y] <return> <parameters> [R|O] E`` (at its ``F``): the node
        ``("f", return, parameters, ref-qualifier)``."""
        self.i += 1
        self.take("Y")
        ret = self.type()
        if ret[0] in "fa":
            raise Unsupported("a function returning a function or an array")
        params = []
        while self.peek() != "E" and self.peek(2) not in ("RE", "OE"):
            params.append(self.type())
        ref = " &&" if self.take("O") else " &" if self.take("R") else ""
        self.need("E")
        if not params or (ref and not member):
            raise Unsupported("function type without parameters, or ref-qualified outside a class")
        if params == [("n", "void")]:
            params = []
        return ("f", ret, params, ref)

    def type(self, member: bool = False) -> tuple:
        """One type; ``member`` allows a ref-qualified function type (a member function's)."""
        c = self.peek()
        if not c:
            raise Unsupported("end of name where a type was expected")
        two = self.peek(2)
        if c in _BUILTIN:
            self.i += 1
            return ("n", _BUILTIN[c])
        if two in _BUILTIN_D:
            self.i += 2
            return ("n", _BUILTIN_D[two])
        if self.take("DF16_"):
            return ("n", "_Float16")
        if c in "rVK":
            quals = self.cv_quals()
            node = _qualified(self.type(member), quals)
            self.subs.append(node)
            return node
        if c in "PRO":
            self.i += 1
            inner = self.type()
            sym = {"P": "*", "R": "&", "O": "&&"}[c]
            if inner[0] == "p" and inner[2] in ("&", "&&") and sym != "*":  # reference collapsing
                inner, sym = inner[1], "&" if "&" in (sym, inner[2]) else "&&"
            node = ("p", inner, sym)
            self.subs.append(node)
            return node
        if c == "F":
            node = self.function_type(member)
            self.subs.append(node)
            return node
        if c == "A":
            self.i += 1
            dim = "" if self.peek() == "_" else self.digits()
            self.need("_")
            node = ("a", self.type(), dim)
            self.subs.append(node)
            return node
        if c == "M":
            self.i += 1
            cls = _decl(self.type())
            node = ("m", cls, self.type(member=True))
            self.subs.append(node)
            return node
        if two == "Dv":
            self.i += 2
            n = self.number()
            self.need("_")
            node = ("v", self.type(), n)
            self.subs.append(node)
            return node
        if two == "Dp":
            self.i += 2
            node = self.type()
            if node[0] != "pack" and not (node[0] in "pq" and node[1][0] == "pack"):
                raise Unsupported("a pack expansion of something that is not a pack")
            self.subs.append(node)
            return node
        if c == "T":
            node = self.template_param()
            self.subs.append(node)
            if self.peek() == "I":
                node = ("n", _decl(node) + _args_text(self.template_args()))
                self.subs.append(node)
            return node
        if c == "S":
            if two == "St":
                text, _, _, _ = self.name()
                node = ("n", text)
                self.subs.append(node)
                return node
            node = self.substitution()
            if self.peek() == "I":
                node = ("n", _decl(node) + _args_text(self.template_args()))
                self.subs.append(node)
            return node
        if c == "u":
            self.i += 1
            return ("n", self.source_name())
        if c == "U":
            raise Unsupported("vendor qualifier")
        if c in "NZ" or c.isdigit():
            text, _, _, _ = self.name()
            node = ("n", text)
            self.subs.append(node)
            return node
        raise Unsupported(f"type at {self.i}")


def _qualified(node: tuple, quals: str) -> tuple:
    """``node`` under cv-qualifiers: on a function type they qualify the member function, on an
    array its elements, and they merge with qualifiers already there."""
    if node[0] == "f":
        return ("f", node[1], node[2], " " + quals + node[3])
    if node[0] == "a":
        return ("a", _qualified(node[1], quals), node[2])
    if node[0] == "q":
        merged = set(quals.split()) | set(node[2].split())
        return ("q", node[1], " ".join(q for q in ("const", "volatile", "restrict") if q in merged))
    return ("q", node, quals)


def _base_name(text: str) -> str:
    """The last component of a qualified name, without its template arguments."""
    depth = 0
    out = []
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out).rsplit("::", 1)[-1]
