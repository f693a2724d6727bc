"""Parsing of PTX instructions and their operands.

:meth:`InstructionParser.instruction` reads ``[@[!]%p] opcode operand, …;``: registers
(resolved against the ``.reg`` declarations in scope whatever the name looks like, ``%r1``
or ``acc``, or special registers; a declared name shadows a symbol),
immediates (hex float literals exact), addresses ``[base+offset]``, texture and surface
references ``[tex, {x, y}]`` / ``[tex, sampler, {x, y}]`` (bracket vectors, whose registers
are read), vectors ``{…}``/``(…)``/``a|b``/``{…}|p``, negated predicates and names (anything
else in brackets is kept verbatim).  Strict checks (:mod:`.opcodes`): the opcode and its
modifiers exist in PTX ISA 9.x, the guard is a predicate, a register is declared, and register
widths fit the instruction type where PTX requires it; each is an error, or a warning when the
parse is lenient.  The number of destinations and branch targets come from the lexer's tables.
"""

from __future__ import annotations

import re
import struct
from typing import Optional, Union

from .. import ir
from ..lexer import SPECIAL_REGISTERS, is_no_def, special_register_type
from ..types import PtxType
from .cursor import EOF, IDENT, INT, int_value, show_token
from .opcodes import opcode_problem, operand_widths
from .scopes import ScopeTracker

__all__ = ["InstructionParser"]

_REG_SPLIT = re.compile(r"(.*?)([0-9]+)\Z")
_PREFIX_TYPES = (("%rd", "b64"), ("%fd", "f64"), ("%rs", "b16"), ("%rq", "b128"), ("%p", "pred"),
                 ("%f", "f32"), ("%h", "b16"))


def _guess_type(name: str) -> str:
    """The type nvcc's register prefix stands for (``%fd7``: f64); b32 for any other name."""
    m = _REG_SPLIT.match(name)
    prefix = m.group(1) if m else name
    return next((t for p, t in _PREFIX_TYPES if prefix == p), "b32")


class InstructionParser(ScopeTracker):
    """The instruction and operand part of the parser (a mixin over :class:`ScopeTracker`)."""

    def instruction(self, loc: Optional[ir.SourceLoc]) -> ir.Instruction:
        toks = self.toks
        start = self.i
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
            raise self.error(f"expected an opcode, got {show_token(opcode)}")
        op_index = self.i
        kind = self.opcode_kind.get(opcode)
        if kind is None:
            kind = self.opcode_kind[opcode] = (0 if is_no_def(opcode) else 1,
                                               opcode.startswith("bra") or opcode.startswith("brx"),
                                               opcode_problem(opcode), operand_widths(opcode))
        if kind[2] is not None:
            self.problem(kind[2], op_index)
        if guard is not None and guard.register.type is not None \
                and not guard.register.type.is_pred:
            self.problem(f"guard {guard.register.name} is a .{guard.register.type.name} register; "
                         "expected a .pred register", start + 1 + guard.negated)
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
            raise self.error(f"expected ',' or ';' after an operand of {opcode}, got {show_token(t)}",
                             self.i - 1)
        if kind[3] is not None:
            self.check_widths(opcode, operands, kind[3], op_index)
        if kind[1]:
            operands = [ir.LabelRef(o.name) if isinstance(o, ir.Symbol) else o for o in operands]
            for o in operands:
                if isinstance(o, ir.LabelRef):
                    self.label_used(o.name, toks.index(o.name, start, self.i))
        return ir.Instruction(opcode, tuple(operands), kind[0], guard, loc)

    def check_widths(self, opcode: str, operands: list, widths: tuple, op_index: int) -> None:
        """Strict check: each register operand has the width ``opcode``'s type needs."""
        last = len(widths) - 1
        for k, o in enumerate(operands):
            if type(o) is ir.Register:
                cls = o.type.reg_class
                have = 1 if cls.is_pred else cls.bits
                need = widths[k if k < last else last]
                if have != need:
                    want = ".pred" if need == 1 else f"a {need}-bit"
                    self.problem(f"register {o.name} (.{o.type.name}) used with the wrong class: "
                                 f"operand {k + 1} of {opcode} needs {want} register",
                                 self.toks.index(o.name, op_index, self.i))

    def range_register(self, name: str) -> Optional[ir.Register]:
        """The register ``name`` declared by a ``%r<N>`` range in scope, if any."""
        m = _REG_SPLIT.match(name)
        if m is not None:
            rng = self.ranges.get(m.group(1))
            if rng is not None and int(m.group(2)) < rng[0]:
                reg = ir.Register(name, rng[1])
                self.regs[name] = reg
                return reg
        return None

    def register(self, name: str) -> Union[ir.Register, ir.SpecialReg]:
        reg = self.regs.get(name)
        if reg is not None:
            return reg
        # range_register, inlined: the first use of every register in each function.  The
        # name's split and its Register are shared by all functions of the text (a file of
        # 840 kernels meets %r1 840 times): measured 0.28 s of a 0.9 s parse before
        split = self.split_cache.get(name)
        if split is None:
            m = _REG_SPLIT.match(name)
            split = self.split_cache[name] = (m.group(1), int(m.group(2))) if m else ("", -1)
        rng = self.ranges.get(split[0])
        if rng is not None and split[1] < rng[0]:
            key = (name, rng[1])
            reg = self.reg_cache.get(key)
            if reg is None:
                reg = self.reg_cache[key] = ir.Register(name, rng[1])
            self.regs[name] = reg
            return reg
        special = self.special_cache.get(name)
        if special is not None:
            return special
        if name in SPECIAL_REGISTERS:
            special = ir.SpecialReg(name, PtxType.get(special_register_type(name)))
            self.special_cache[name] = special
            return special
        if not name.startswith("%") and not IDENT.match(name):
            raise self.error(f"expected a register, got {show_token(name)}")
        self.problem(f"undeclared register {name} in function {self.function_name}; declare it "
                     "with .reg (or use a special register such as %tid.x)", self.i)
        # lenient: a register of the type its name suggests (nvcc's prefixes), declared from here
        reg = self.regs[name] = ir.Register(name, PtxType.get(_guess_type(name)))
        return reg

    def operand(self):
        toks = self.toks
        t = toks[self.i]
        c = t[0]
        reg: Union[ir.Register, ir.SpecialReg, None]
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
                        raise self.error(f"expected ',' or {close!r} in a vector operand, got {show_token(t2)}",
                                         self.i - 1)
            vec = ir.Vector(tuple(elems), "brace" if c == "{" else "paren")
            if toks[self.i] == "|":  # tex/tld4 ``{d0, d1, d2, d3}|p``: the residency predicate
                self.i += 1
                return ir.Vector((vec, self.operand()), "pipe")
            return vec
        if c == "!":
            self.i += 1
            reg = self.register(toks[self.i])
            if not isinstance(reg, ir.Register):
                raise self.error(f"expected a predicate register after '!', got {show_token(toks[self.i])}")
            self.i += 1
            return ir.Negated(reg)
        if c.isdigit() or c == "-":
            return self.immediate()
        if c == "_" and t == "_":
            self.i += 1
            if toks[self.i] == "|":  # ``elect.sync _|p, mask``: a sink beside a predicate
                self.i += 1
                return ir.Vector((ir.Raw("_"), self.operand()), "pipe")
            return ir.Raw("_")
        if c.isalpha() or c == "$" or c == "_":
            # a register declared without '%' (``.reg .f32 acc;``) shadows any symbol
            reg = self.regs.get(t)
            if reg is None and self.plain_ranges:
                reg = self.range_register(t)
            if reg is not None:
                self.i += 1
                if toks[self.i] == "|":
                    self.i += 1
                    return ir.Vector((reg, self.operand()), "pipe")
                return reg
            if not IDENT.match(t):
                raise self.error(f"expected an operand, got {show_token(t)}")
            self.i += 1
            sym = self.sym_cache.get(t)
            if sym is None:
                sym = self.sym_cache[t] = ir.Symbol(t)
            return sym
        raise self.error(f"expected an operand (register, literal, address, vector or name), got {show_token(t)}")

    def immediate(self) -> ir.Immediate:
        toks = self.toks
        t = toks[self.i]
        text = t
        if t == "-":
            nxt = toks[self.i + 1]
            if not nxt[0].isdigit():
                raise self.error(f"expected a number after '-', got {show_token(nxt)}", self.i + 1)
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
        elif INT.match(body):
            imm = ir.Immediate(sign * int_value(body), None, text)
        else:
            try:
                imm = ir.Immediate(sign * float(body), None, text)
            except ValueError:
                raise self.error(f"malformed numeric literal {text!r}", self.i - 1) from None
        self.imm_cache[text] = imm
        return imm

    def address(self) -> Union[ir.Address, ir.Raw, ir.Vector]:
        toks = self.toks
        start = self.i
        self.i += 1
        t = toks[self.i]
        base: Union[ir.Register, ir.Symbol, None] = None
        offset = 0
        if t[0] == "%":
            reg = self.register(t)
            if not isinstance(reg, ir.Register):
                return self._raw_address(start)
            base = reg
            self.i += 1
        elif t[0].isalpha() or t[0] in "$_":
            base = self.regs.get(t)
            if base is None and self.plain_ranges:
                base = self.range_register(t)
            if base is None:
                base = self.sym_cache.get(t)
                if base is None:
                    base = self.sym_cache[t] = ir.Symbol(t)
            self.i += 1
        elif t[0].isdigit() or t == "-":
            offset = self.integer("address")
        else:
            raise self.error(f"expected a register, name or offset in an address, got {show_token(t)}")
        t = toks[self.i]
        if t == "," and base is not None:
            return self._reference(base)
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

    def _reference(self, first) -> ir.Vector:
        """The rest of ``[tex, {x, y}]`` or ``[tex, sampler, {x, y}]`` after ``tex``: the
        texture/surface (a register or a name), an optional sampler and the coordinates."""
        toks = self.toks
        elems = [first]
        while toks[self.i] == ",":
            self.i += 1
            elems.append(self.operand())
        if toks[self.i] != "]":
            raise self.error(f"expected ',' or ']' in a texture or surface operand "
                             f"[tex, {{coordinates}}], got {show_token(toks[self.i])}")
        self.i += 1
        return ir.Vector(tuple(elems), "bracket")

    def _raw_address(self, start: int) -> ir.Raw:
        """A bracketed operand the IR cannot type, kept verbatim."""
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
            elif t == ";" or t == EOF:
                raise self.error("expected ']' to close the address", k)
            k += 1
        self.i = k + 1
        return ir.Raw(self.verbatim(start, k))
