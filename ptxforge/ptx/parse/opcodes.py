"""The strict parser's opcode checks, asked of the one opcode table (:mod:`ptxforge.ptx.opcodes`).

:func:`opcode_problem` says what is wrong with an opcode's text (``ad.f32``: unknown opcode;
``add.f32.foo``: ``.foo`` is no modifier of ``add``), or None.  The tables are written from
the PTX ISA reference (chapter 9, "Instruction Set", through ISA 9.x; the rows live in
:data:`ptxforge.ptx.opcodes.FAMILIES`) and err on the side of accepting: a false error on
valid PTX is far worse than a missed one.  So

* every PTX type name (``.f32``, ``.e4m3x2``, ``.b128`` …) is accepted on every opcode;
* classic families (arithmetic, comparison, conversion, moves, loads and stores, atomics,
  control flow) list their modifiers;
* the large asynchronous and tensor families (``cp``, ``mbarrier``, ``wgmma``, ``tcgen05``,
  ``tensormap``, ``multimem``, textures and surfaces, video instructions, …) are *loose*:
  any modifier the ISA uses anywhere, or that has the shape of one (``.m16n8k16``,
  ``.2d``, ``.x4``, ``.32x32b``, ``.cta_group::2``), is accepted, so only a token that is no
  PTX modifier at all (a typo) is refused.

Example::

    >>> from ptxforge.ptx.parse.opcodes import opcode_problem
    >>> opcode_problem("fma.rn.ftz.f32") is None
    True
    >>> opcode_problem("ad.f32")
    "unknown opcode 'ad'"
    >>> opcode_problem("ld.globl.f32")
    "unknown modifier '.globl' for ld"
    >>> operand_widths("setp.lt.s32"), operand_widths("cvt.f32.s32")
    ((1, 32, 32, 1), None)
"""

from __future__ import annotations

import re
from typing import Optional

from ..opcodes import FAMILIES as _TABLE
from ..opcodes import LOOSE_WORDS, TYPE_NAMES

__all__ = ["FAMILIES", "LOOSE_FAMILIES", "TYPE_NAMES", "opcode_problem", "operand_widths"]

#: Family -> the modifier words the strict check accepts (empty for a loose family).
FAMILIES: dict = {name: row.modifiers for name, row in _TABLE.items()}
#: Families whose modifiers are many and new: any known or modifier-shaped token is accepted.
LOOSE_FAMILIES = frozenset(name for name, row in _TABLE.items() if row.loose)
_ALL_WORDS = frozenset().union(*FAMILIES.values(), LOOSE_WORDS, TYPE_NAMES)
# Modifier shapes of the loose families: mma shapes, dimensions, counts, tcgen05 shapes,
# ldmatrix element formats, CTA groups, video byte/half selectors and texture geometries.
_SHAPE = re.compile(
    r"(?:m\d+n\d+(?:k\d+)?|\d+d|a\d+d|2dms|a2dms|cube|acube|x\d+|\d+x\d+b(?:x\d+)?"
    r"|cta_group::\d+|b[0-7]|h[01]|[0-9]+|v\d+|num_ctas::\d+)\Z")
# Type names PTX may add (new narrow float formats appear in most releases): accepted on every
# opcode when they have a type's shape (.s2f6x2, .e8m0, .b12x4), so a new type is no error.
_TYPE_SHAPE = re.compile(
    r"(?:[busf](?:1|2|4|6|8|16|32|64|128)|bf16|tf32|u?e\d+m\d+|s\d+f\d+)(?:x\d+)?(?:_p\d+)?\Z")

_cache: dict = {}


def opcode_problem(opcode: str) -> Optional[str]:
    """What is wrong with ``opcode`` (family and dotted modifiers), or None when it is valid."""
    try:
        return _cache[opcode]
    except KeyError:
        pass
    parts = opcode.split(".")
    family = parts[0]
    allowed = FAMILIES.get(family)
    problem = None
    if allowed is None:
        problem = f"unknown opcode {family!r}"
    else:
        loose = family in LOOSE_FAMILIES
        for part in parts[1:]:
            if part in allowed or part in TYPE_NAMES or _TYPE_SHAPE.match(part):
                continue
            if loose and (part in _ALL_WORDS or _SHAPE.match(part)):
                continue
            problem = f"unknown modifier '.{part}' for {family}"
            break
    _cache[opcode] = problem
    return problem


# -- register widths -------------------------------------------------------------------------
# The width pattern of a family is its row's ``widths`` (PTX ISA 9.4.1: only ld, st and cvt
# take wider registers; bit-size types agree with any type of their width): "=" is the type's
# width, 1 a predicate, an int a fixed width; the last entry repeats.
_WIDTH = {"pred": 1, "b128": 128, "f32x2": 64, "f16x2": 32, "bf16x2": 32, "u16x2": 32,
          "s16x2": 32}
_SKIP = frozenset({"wide", "v2", "v4", "v8"})
_widths: dict[str, Optional[tuple[int, ...]]] = {}


def _type_width(name: str) -> Optional[int]:
    if name in _WIDTH:
        return _WIDTH[name]
    m = re.fullmatch(r"[busf](8|16|32|64)|bf(16)", name)
    return int(m.group(1) or m.group(2)) if m else None


def operand_widths(opcode: str) -> Optional[tuple[int, ...]]:
    """The register width each operand of ``opcode`` must have (1: a predicate; the last one
    repeats), or None when ptxforge does not check this opcode's operands."""
    try:
        return _widths[opcode]
    except KeyError:
        pass
    parts = opcode.split(".")
    row = _TABLE.get(parts[0])
    out: Optional[tuple[int, ...]] = None
    types = [t for t in parts[1:] if t in TYPE_NAMES]
    mods = set(parts[1:])
    # lop3.and/.or (a predicate-output form) is unchecked, like any form with skipped modifiers
    skip = _SKIP | (row.modifiers if row is not None and row.family == "lop3" else frozenset())
    if row is not None and row.widths is not None and len(types) == 1 and not mods & skip:
        width = _type_width(types[0])
        if width is not None:
            out = tuple(width if w == "=" else w for w in row.widths)
    _widths[opcode] = out
    return out
