"""The builder's checks per opcode family, as data: the legal types, the modifiers it emits,
the rules and the minimum PTX ISA version and SM architecture a form needs.

The operand shapes and the traits come from the one opcode table (:mod:`ptxforge.ptx.opcodes`);
this module adds what only the builder and the emitter's caller ask.  The builder validates every op against :data:`OPS` and the emitter's caller picks the module's
``.version`` with :func:`min_ptx_version`.  Requirements are read from the *opcode text*
(``add.rn.bf16``), so they apply equally to builder-made and parsed instructions.

Example::

    >>> from ptxforge.ptx import isa
    >>> isa.requirement("add.rn.bf16")
    Requirement(sm=90, ptx=(7, 8))
    >>> isa.min_ptx_version("sm_80", [])
    '7.0'
    >>> isa.OPS["fma"].types[:2]
    (<PtxType .f32>, <PtxType .f64>)
"""

from __future__ import annotations

import functools
from typing import Iterable

import attrs

from ptxforge.arch.targets import TARGETS
from ptxforge.arch.targets import target as as_target
from ptxforge.errors import BuildError, UnsupportedError

from . import types as T
from .opcodes import FAMILIES, OpInfo

__all__ = [
    "comparisons_for",
    "param_type",
    "Requirement",
    "Rule",
    "Forbid",
    "OpSpec",
    "OPS",
    "BITS_SPELLED",
    "ROUNDING_FLOAT",
    "ROUNDING_INT",
    "COMPARISONS",
    "requirement",
    "check_supported",
    "forbidden",
    "min_ptx_version",
    "storage_type",
    "move_type",
    "bits_type",
]


@attrs.frozen(slots=True, kw_only=True)
class Requirement:
    """What a form needs: the lowest SM number (``sm_90`` → 90) and PTX ISA version."""

    sm: int = 0
    ptx: tuple = (1, 0)
    #: For architecture-specific forms (``wgmma`` needs sm_90a): the only target names that
    #: accept it; empty when any target of SM ``sm`` or newer does.
    arch: tuple = attrs.field(default=(), repr=False)

    def join(self, other: "Requirement") -> "Requirement":
        """The requirement of needing both ``self`` and ``other``."""
        arch = (tuple(a for a in self.arch if a in other.arch) if self.arch and other.arch
                else self.arch or other.arch)
        return Requirement(sm=max(self.sm, other.sm), ptx=max(self.ptx, other.ptx), arch=arch)

    @property
    def minimum_target(self) -> str:
        """The oldest target name that accepts the form (``sm_80``, ``sm_90a``)."""
        return self.arch[0] if self.arch else f"sm_{self.sm}"

    def accepts(self, target_name: str, sm: int) -> bool:
        """Does a target (its registry name and SM number) meet this requirement?"""
        return sm >= self.sm and (not self.arch or target_name in self.arch)

    def __str__(self) -> str:
        where = self.minimum_target if len(self.arch) <= 1 else (
            f"an architecture-specific target ({', '.join(self.arch[:3])}, ...)")
        return f"{where} and PTX ISA {self.ptx[0]}.{self.ptx[1]}"


@attrs.frozen(slots=True, kw_only=True)
class Rule:
    """A requirement that applies when an opcode carries every token in ``tokens``."""

    tokens: tuple
    need: Requirement


@attrs.frozen(slots=True, kw_only=True)
class Forbid:
    """A form no target accepts: an opcode carrying every token in ``tokens`` (for ``cvt``,
    type tokens in (destination, source) order) is refused for ``reason``."""

    tokens: tuple
    reason: str


def _forbid(*rows: tuple) -> tuple:
    """Forbids from ``(tokens, reason)`` rows, tokens space-separated."""
    return tuple(Forbid(tokens=tuple(tokens.split()), reason=reason) for tokens, reason in rows)


@attrs.frozen(slots=True, kw_only=True)
class OpSpec:
    """One opcode family as the builder checks it: legal value types, the modifiers the builder
    writes (a subset of the table's :attr:`ptxforge.ptx.opcodes.OpInfo.modifiers`), rules and
    forbidden forms; the operand shape comes from the one opcode table."""

    family: str
    types: tuple
    modifiers: tuple = ()
    rules: tuple = ()
    doc: str = ""
    forbids: tuple = ()

    @property
    def info(self) -> OpInfo:
        """The family's row in the one opcode table (traits, modifiers, operand shape)."""
        return FAMILIES[self.family]

    @property
    def shape(self) -> str:
        """The operand shape as text (``"d, a, b"``), from :attr:`info`."""
        return FAMILIES[self.family].shape

    @property
    def operands(self) -> tuple:
        """The operand shape as structure (:class:`ptxforge.ptx.opcodes.OperandSlot` rows)."""
        return FAMILIES[self.family].operands

    def allows(self, ty: T.PtxType) -> bool:
        """True if ``ty`` is a legal instruction type of this family."""
        return ty in self.types


def _req(sm: int, ptx: str) -> Requirement:
    """Requirement from ``sm`` and a ``"maj.min"`` string."""
    major, minor = ptx.split(".")
    return Requirement(sm=sm, ptx=(int(major), int(minor)))


def _rules(*rows: tuple) -> tuple:
    """Rules from ``(tokens, sm, ptx)`` rows, tokens space-separated."""
    return tuple(Rule(tokens=tuple(tokens.split()), need=_req(sm, ptx)) for tokens, sm, ptx in rows)


def _arch_rule(tokens: str, ptx: str, arch: tuple) -> Rule:
    """A rule for a form only the targets named in ``arch`` accept (oldest first)."""
    need = _req(as_target(arch[0]).sm, ptx)
    return Rule(tokens=tuple(tokens.split()), need=Requirement(sm=need.sm, ptx=need.ptx,
                                                               arch=tuple(arch)))


def _variants_from(sm: int) -> tuple:
    """The registered ``a``/``f`` targets of SM ``sm`` or newer (oldest first): the targets
    that accept ``setmaxnreg`` (ptxas 13.5 accepts it on sm_90a, sm_100a/f, ... sm_121a/f and
    refuses sm_90 and sm_100)."""
    return tuple(t.name for t in TARGETS.values() if t.sm >= sm and t.suffix in ("a", "f"))


ROUNDING_FLOAT = ("rn", "rz", "rm", "rp")
ROUNDING_INT = ("rni", "rzi", "rmi", "rpi")
COMPARISONS = (
    "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
    "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan",
)


def comparisons_for(ty: T.PtxType) -> tuple:
    """The setp comparisons valid for ``ty`` (bits: eq/ne; floats: no unsigned forms)."""
    if ty.is_bits:
        return ("eq", "ne")
    if ty.is_float:
        return tuple(c for c in COMPARISONS if c not in ("lo", "ls", "hi", "hs"))
    if ty.is_signed:
        return ("eq", "ne", "lt", "le", "gt", "ge")
    return ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")


_I16 = (T.u16, T.s16)
_I32 = (T.u32, T.s32)
_I64 = (T.u64, T.s64)
_INTS = _I16 + _I32 + _I64
_SIGNED = (T.s16, T.s32, T.s64)
_F = (T.f32, T.f64)
_HALF = (T.f16, T.f16x2, T.bf16, T.bf16x2)
_BITS = (T.b16, T.b32, T.b64)
_LOGIC = (T.pred,) + _BITS
_CARRY = _I32 + _I64
_STORE = (T.b8, T.b16, T.b32, T.b64, T.b128, T.u8, T.s8) + _INTS + _F + _HALF
_NUMERIC = tuple(t for t in T.ALL_TYPES if not t.is_pred)

_RND = ROUNDING_FLOAT


def _half_rules(f16_sm: int, f16_ptx: str, bf16_sm: int, bf16_ptx: str) -> tuple:
    """Rules for the four half types given the f16 and bf16 minimums."""
    return _rules(("f16", f16_sm, f16_ptx), ("f16x2", f16_sm, f16_ptx),
                  ("bf16", bf16_sm, bf16_ptx), ("bf16x2", bf16_sm, bf16_ptx))


# min/max (PTX ISA 9.7.1.12-13, 9.7.3.10-11, 9.7.4.8-9): .ftz on .f32 and .f16/.f16x2; .NaN and
# .xorsign.abs on .f32 and the half types (sm_80 / PTX 7.0 and sm_86 / PTX 7.2); .relu on
# .s32 (and .s16x2) only, sm_90 / PTX 8.0.  The same words as the opcode table's min/max row.
_MINMAX_MODS = ("ftz", "NaN", "xorsign", "abs", "relu")
_MINMAX_RULES = _half_rules(80, "7.0", 80, "7.0") + _rules(
    ("NaN", 80, "7.0"), ("xorsign", 86, "7.2"), ("relu", 90, "8.0"))
_MINMAX_FORBIDS = _forbid(
    *((f"ftz {t.name}", f".ftz on .{t.name} min/max") for t in _INTS + (T.f64, T.bf16, T.bf16x2)),
    *((f"{m} {t.name}", f".{m} on .{t.name} min/max") for m in ("NaN", "xorsign", "abs")
      for t in _INTS + (T.f64,)),
    *((f"relu {t.name}", f".relu on .{t.name} min/max (only .s32 and .s16x2)")
      for t in _INTS + _F + _HALF if t is not T.s32))


def _op(family: str, types: tuple, modifiers: tuple = (), rules: tuple = (), doc: str = "",
        forbids: tuple = ()) -> OpSpec:
    """One row of the table below (the columns in :class:`OpSpec`'s order, for a readable table)."""
    return OpSpec(family=family, types=types, modifiers=modifiers, rules=rules, doc=doc,
                  forbids=forbids)


_ROWS = (
    # arithmetic ------------------------------------------------------------------------
    _op("add", _INTS + _F + _HALF, _RND + ("ftz", "sat", "cc"),
        _half_rules(53, "4.2", 90, "7.8"), "d = a + b"),
    _op("sub", _INTS + _F + _HALF, _RND + ("ftz", "sat", "cc"),
        _half_rules(53, "4.2", 90, "7.8"), "d = a - b"),
    _op("mul", _INTS + _F + _HALF, _RND + ("ftz", "sat", "lo", "hi", "wide"),
        _half_rules(53, "4.2", 90, "7.8"), "d = a * b (ints: .lo/.hi/.wide)"),
    _op("mad", _INTS + _F, _RND + ("ftz", "sat", "lo", "hi", "wide", "cc"),
        (), "d = a * b + c"),
    _op("fma", _F + _HALF, _RND + ("ftz", "sat"),
        _half_rules(53, "4.2", 80, "7.0"), "d = a * b + c, one rounding"),
    _op("div", _INTS + _F, _RND + ("approx", "full", "ftz"), (), "d = a / b"),
    _op("rem", _INTS, (), (), "d = a % b"),
    _op("abs", _SIGNED + _F + _HALF, ("ftz",),
        _half_rules(53, "6.5", 80, "7.0"), "d = |a|"),
    _op("neg", _SIGNED + _F + _HALF, ("ftz",),
        _half_rules(53, "6.0", 80, "7.0"), "d = -a"),
    _op("min", _INTS + _F + _HALF, _MINMAX_MODS, _MINMAX_RULES, "d = min(a, b)",
        _MINMAX_FORBIDS),
    _op("max", _INTS + _F + _HALF, _MINMAX_MODS, _MINMAX_RULES, "d = max(a, b)",
        _MINMAX_FORBIDS),
    _op("sqrt", _F, _RND + ("approx", "ftz"), (), "d = sqrt(a)"),
    _op("rsqrt", _F, ("approx", "ftz"), (), "d = 1/sqrt(a) (approx)"),
    _op("rcp", _F, _RND + ("approx", "ftz"), (), "d = 1/a"),
    _op("ex2", (T.f32, T.f16, T.f16x2), ("approx", "ftz"),
        _rules(("f16", 75, "7.0"), ("f16x2", 75, "7.0")), "d = 2**a (approx)"),
    _op("lg2", (T.f32,), ("approx", "ftz"), (), "d = log2(a) (approx)"),
    _op("sin", (T.f32,), ("approx", "ftz"), (), "d = sin(a) (approx)"),
    _op("cos", (T.f32,), ("approx", "ftz"), (), "d = cos(a) (approx)"),
    # extended-precision carry chains ----------------------------------------------------
    _op("addc", _CARRY, ("cc",), (), "d = a + b + CC.CF"),
    _op("subc", _CARRY, ("cc",), (), "d = a - (b + CC.CF)"),
    _op("madc", _CARRY, ("lo", "hi", "cc"), (), "d = a * b + c + CC.CF"),
    # logic and bits -------------------------------------------------------------------
    _op("and", _LOGIC, (), (), "d = a & b"),
    _op("or", _LOGIC, (), (), "d = a | b"),
    _op("xor", _LOGIC, (), (), "d = a ^ b"),
    _op("not", _LOGIC, (), (), "d = ~a"),
    _op("cnot", _BITS, (), (), "d = (a == 0)"),
    _op("shl", _BITS, (), (), "d = a << b"),
    _op("shr", _BITS + _INTS, (), (), "d = a >> b (.s: arithmetic)"),
    _op("popc", (T.b32, T.b64), (), (), "d = population count"),
    _op("clz", (T.b32, T.b64), (), (), "d = count leading zeros"),
    _op("brev", (T.b32, T.b64), (), (), "d = bit reverse"),
    _op("bfe", _I32 + _I64, (), (), "d = extract bits [pos, pos+len)"),
    _op("bfi", (T.b32, T.b64), (), (), "d = insert a into b"),
    # bit twiddling, byte permutes and small dot products (dsl/bits.py) ------------------
    # Operand kinds: n = a shift/width amount (u32; immediates 0..32 with .clamp, 0..31 with
    # .wrap); sel = prmt's selector; lut = lop3's 8-bit table (immediate only); base = fns's
    # start bit (u32, immediates 0..31).  The minimums that matter for a target ptxforge knows
    # (lop3, dp4a/dp2a, fns, szext, bmsk) were checked with ptxas at the version below
    # (rejected) and at the one listed (accepted).
    _op("prmt", (T.b32,), ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"),
        _rules(("", 20, "2.0")), "d = bytes of the 64-bit {b, a} chosen by selector c"),
    _op("lop3", (T.b32,), (), _rules(("", 50, "4.3")),
        "d = F(a, b, c) bitwise, F given by an 8-bit truth table"),
    _op("shf", (T.b32,), ("l", "r", "clamp", "wrap"), _rules(("", 32, "3.1")),
        "funnel shift of the 64-bit {b, a}: .l keeps the high word, .r the low word"),
    _op("dp4a", _I32, (), _rules(("", 61, "5.0")),
        "d = c + four byte products of a and b (types .atype.btype)"),
    _op("dp2a", _I32, ("lo", "hi"), _rules(("", 61, "5.0")),
        "d = c + two 16x8-bit products (a's halves, b's low or high bytes)"),
    _op("sad", _INTS, (), (), "d = c + |a - b|"),
    _op("bfind", _I32 + _I64, ("shiftamt",), _rules(("", 20, "2.0")),
        "d = position of the most significant non-sign bit (0xffffffff if none)"),
    _op("fns", (T.b32,), (), _rules(("", 30, "6.0")),
        "d = position of the n-th set bit of a from bit base (0xffffffff if none)"),
    _op("mul24", _I32, ("lo", "hi"), (), "d = 24x24-bit product, low or high"),
    _op("mad24", _I32, ("lo", "hi", "sat"), (),
        "d = 24x24-bit product (low or high 32 bits) + c",
        _forbid(("lo sat", ".sat on mad24.lo (only mad24.hi.sat.s32 exists)"),
                ("sat u32", ".sat on .u32 mad24 (only mad24.hi.sat.s32 exists)"))),
    _op("szext", _I32, ("clamp", "wrap"), _rules(("", 70, "7.6")),
        "d = the low n bits of a, sign- (.s32) or zero-extended (.u32)"),
    _op("bmsk", (T.b32,), ("clamp", "wrap"), _rules(("", 70, "7.6")),
        "d = a mask of b ones starting at bit a"),
    _op("copysign", _F, (), _rules(("", 20, "2.0")), "d = b with the sign of a"),
    _op("testp", _F, ("finite", "infinite", "number", "notanumber", "normal",
                                 "subnormal"),
        _rules(("", 20, "2.0")), "p = a is finite/infinite/a number/NaN/normal/subnormal"),
    # moves, selection, comparison, conversion -------------------------------------------
    _op("mov", (T.pred,) + _STORE, (), _rules(("b128", 70, "8.3")), "d = a"),
    _op("selp", _BITS + _INTS + _F, (), (), "d = c ? a : b"),
    _op("setp", _BITS + _INTS + _F + (T.f16, T.bf16),
        COMPARISONS + ("and", "or", "xor", "ftz"),
        _rules(("f16", 53, "4.2"), ("bf16", 90, "7.8")), "p = a cmp b"),
    _op("cvt", _NUMERIC, _RND + ROUNDING_INT + ("sat", "ftz", "relu"),
        _rules(("bf16 f32", 80, "7.0"), ("f32 bf16", 80, "7.1"), ("bf16x2 f32", 80, "7.0"),
               ("bf16 f64", 90, "7.8"), ("f64 bf16", 90, "7.8"), ("bf16 bf16", 90, "7.8"),
               ("bf16 f16", 90, "7.8"),
               ("f16 bf16", 90, "7.8"), ("bf16 u8", 90, "7.8"), ("bf16 s8", 90, "7.8"),
               ("bf16 u16", 90, "7.8"), ("bf16 s16", 90, "7.8"), ("bf16 u32", 90, "7.8"),
               ("bf16 s32", 90, "7.8"), ("bf16 u64", 90, "7.8"), ("bf16 s64", 90, "7.8"),
               ("u8 bf16", 90, "7.8"), ("s8 bf16", 90, "7.8"), ("u16 bf16", 90, "7.8"),
               ("s16 bf16", 90, "7.8"), ("u32 bf16", 90, "7.8"), ("s32 bf16", 90, "7.8"),
               ("u64 bf16", 90, "7.8"), ("s64 bf16", 90, "7.8"), ("ftz f32 bf16", 90, "7.8")),
        "d = convert(a)",
        # Found by compiling every pair x rounding x sat x ftz on sm_80 and sm_90.
        _forbid(("sat bf16", ".sat on conversions to or from .bf16"),
                *((pair, "conversions between .bf16 and 8-bit integers (convert through "
                   "a 16-bit integer)")
                  for pair in ("bf16 u8", "bf16 s8", "u8 bf16", "s8 bf16")))),
    _op("cvta", (T.u32, T.u64), ("to", "global", "shared", "local", "const"), (),
        "generic <-> state-space address"),
    # memory -----------------------------------------------------------------------------
    _op("ld", _STORE, ("param", "global", "shared", "local", "const", "v2", "v4",
                                 "volatile", "nc"),
        _rules(("b128", 70, "8.3")), "d = *a"),
    _op("st", _STORE, ("param", "global", "shared", "local", "v2", "v4",
                                 "volatile"),
        _rules(("b128", 70, "8.3")), "*a = b"),
    _op("atom", (T.b32, T.b64, T.u32, T.u64, T.s32, T.s64, T.f32, T.f64,
                              T.f16, T.f16x2, T.bf16, T.bf16x2),
        ("global", "shared", "add", "min", "max", "inc", "dec", "exch", "cas", "and", "or",
         "xor", "noftz", "relaxed", "acquire", "release", "acq_rel", "cta", "gpu", "sys"),
        _rules(("f64", 60, "5.0"), ("f16", 70, "6.3"), ("f16x2", 60, "6.2"),
               ("bf16", 90, "7.8"), ("bf16x2", 90, "7.8"), ("relaxed", 70, "6.0"),
               ("acquire", 70, "6.0"), ("release", 70, "6.0"), ("acq_rel", 70, "6.0")),
        "d = *a; *a = op(*a, b)"),
    _op("red", (T.b32, T.b64, T.u32, T.u64, T.s32, T.s64, T.f32, T.f64,
                          T.f16, T.f16x2, T.bf16, T.bf16x2),
        ("global", "shared", "add", "min", "max", "inc", "dec", "and", "or", "xor", "noftz",
         "relaxed", "release", "cta", "gpu", "sys"),
        _rules(("f64", 60, "5.0"), ("f16", 70, "6.3"), ("f16x2", 60, "6.2"),
               ("bf16", 90, "7.8"), ("bf16x2", 90, "7.8"), ("relaxed", 70, "6.0"),
               ("release", 70, "6.0")),
        "*a = op(*a, b)"),
    # synchronisation and warp-level -----------------------------------------------------
    _op("bar", (), ("sync", "arrive", "red")),
    _op("membar", (), ("cta", "gl", "sys")),
    _op("fence", (), ("sc", "acq_rel", "cta", "gpu", "sys"), _rules(("", 70, "6.0"))),
    _op("shfl", (T.b32,), ("sync", "up", "down", "bfly", "idx"),
        _rules(("sync", 30, "6.0"))),
    _op("vote", (T.pred, T.b32), ("sync", "all", "any", "uni", "ballot"),
        _rules(("sync", 30, "6.0"))),
    _op("activemask", (T.b32,), (), _rules(("", 30, "6.2"))),
    _op("redux", (T.u32, T.s32, T.b32), ("sync", "add", "min", "max", "and",
                                                       "or", "xor"),
        _rules(("", 80, "7.0"))),
    # tensor cores and asynchronous copies (dsl/tensor.py) -------------------------------
    # Minimums checked with ptxas 13.5 (sm_72: the CUDA 12.9 ptxas) at the target below
    # (refused: "Feature '.m16n8k16' requires .target sm_80 or higher") and the one listed.
    _op("mma", (T.f16, T.bf16, T.f32, T.f64, T.s8, T.u8, T.s32),
        ("sync", "aligned", "m16n8k4", "m16n8k8", "m16n8k16", "m16n8k32", "m8n8k4",
         "m8n8k16", "row", "col", "satfinite", "tf32"),
        _rules(("m8n8k4", 70, "6.4"), ("m8n8k4 f64", 80, "7.0"), ("m8n8k16", 75, "6.5"),
               ("m16n8k8", 75, "6.5"), ("m16n8k8 bf16", 80, "7.0"),
               ("m16n8k8 tf32", 80, "7.0"), ("m16n8k4", 80, "7.0"), ("m16n8k16", 80, "7.0"),
               ("m16n8k32", 80, "7.0")),
        "D = A * B + C on one warp's fragments (types .dtype.atype.btype.ctype)"),
    _op("ldmatrix", (T.b16,),
        ("sync", "aligned", "m8n8", "x1", "x2", "x4", "trans", "shared", "shared::cta"),
        _rules(("", 75, "6.5")), "load 1, 2 or 4 8x8 b16 matrices from shared memory"),
    _op("stmatrix", (T.b16,),
        ("sync", "aligned", "m8n8", "x1", "x2", "x4", "trans", "shared", "shared::cta"),
        _rules(("", 90, "7.8")), "store 1, 2 or 4 8x8 b16 matrices to shared memory"),
    _op("cp", (),
        ("async", "ca", "cg", "shared", "global", "shared::cta", "shared::cluster",
         "commit_group", "wait_group", "wait_all", "bulk", "bulk_group",
         "mbarrier::complete_tx::bytes"),
        _rules(("async", 80, "7.0"), ("async bulk", 90, "8.0")),
        "asynchronous global -> shared copies and their commit / wait groups"),
    _op("wgmma", (T.f16, T.bf16, T.f32, T.s32, T.s8, T.u8),
        ("mma_async", "sync", "aligned", "fence", "commit_group", "wait_group", "tf32")
        + tuple(f"m64n{n}k{k}" for k in (8, 16, 32) for n in range(8, 257, 8)),
        (_arch_rule("", "8.0", ("sm_90a",)),),
        "warpgroup D = A * B (+ D) from shared-memory descriptors, asynchronous"),
    _op("setmaxnreg", (T.u32,), ("inc", "dec", "sync", "aligned"),
        (_arch_rule("", "8.0", _variants_from(90)),),
        "raise or lower this warp's register budget to n (a multiple of 8 in [24, 256])"),
    # control flow ---------------------------------------------------------------------
    _op("bra", (), ("uni",)),
    _op("call", (), ("uni",)),
    _op("ret", (), ("uni",)),
    _op("exit", ()),
)

#: The opcode table, keyed by family name.
OPS: dict[str, OpSpec] = {row.family: row for row in _ROWS}

#: Value-computing families whose every legal type is a bit-size type (``and.b32``,
#: ``shl.b64``, ``prmt.b32``; no memory, warp or control trait): the builder spells their
#: integer forms with the ``.bN`` type of the value's width.
BITS_SPELLED = frozenset(name for name, spec in OPS.items()
                         if spec.types and not FAMILIES[name].traits
                         and all(t.is_bits or t.is_pred for t in spec.types))

_TYPE_NAMES = frozenset(t.name for t in T.ALL_TYPES)


def _matches(spec: OpSpec, tokens: tuple, parts: list) -> bool:
    """Does an opcode split into ``parts`` carry every token (cvt: types in order)?"""
    if not set(tokens) <= set(parts[1:]):
        return False
    if spec.family != "cvt":
        return True
    type_seq = tuple(p for p in parts[1:] if p in _TYPE_NAMES)
    want = tuple(t for t in tokens if t in _TYPE_NAMES)
    return len(want) < 2 or want == type_seq[:2]


@functools.lru_cache(maxsize=16384)
def forbidden(opcode: str) -> str:
    """Why no target accepts ``opcode`` (``cvt.rn.sat.bf16.f32``), or "" when some might."""
    parts = opcode.split(".")
    spec = OPS.get(parts[0])
    if spec is None:
        return ""
    return next((f.reason for f in spec.forbids if _matches(spec, f.tokens, parts)), "")


@functools.lru_cache(maxsize=16384)
def requirement(opcode: str) -> Requirement:
    """What the full dotted ``opcode`` (``cvt.rn.bf16.f64``) needs; unknown families need nothing.

    A rule applies when the opcode carries all of its tokens; for ``cvt`` a rule naming two
    types matches the (destination, source) pair in that order.
    """
    parts = opcode.split(".")
    spec = OPS.get(parts[0])
    need = Requirement()
    if spec is None:
        return need
    for rule in spec.rules:
        if _matches(spec, rule.tokens, parts):
            need = need.join(rule.need)
    return need


def check_supported(opcode: str, target: str, op: str = "", where: str = "") -> Requirement:
    """Raise BuildError if no target accepts ``opcode`` (:func:`forbidden`), UnsupportedError
    if it needs a newer SM than ``target``; else return its need."""
    at = f" at {where}" if where else ""
    name = op or opcode.split(".")[0]
    reason = forbidden(opcode)
    if reason:
        raise BuildError(f"{name}: ptxas rejects {reason} ({opcode}) on every target{at}")
    need = requirement(opcode)
    tgt = as_target(target)
    if not need.accepts(tgt.name, tgt.sm):
        raise UnsupportedError(
            f"{name}: {opcode} needs {need} (minimum target {need.minimum_target}), "
            f"but this kernel targets {target}{at}")
    return need


def min_ptx_version(target: str, instructions: Iterable) -> str:
    """The lowest PTX ISA version (``"7.8"``) that knows ``target`` and every instruction.

    ``instructions`` are :class:`ptxforge.ptx.ir.Instruction` objects (anything with ``opcode``).
    """
    best = as_target(target).min_ptx
    for inst in instructions:
        best = max(best, requirement(inst.opcode).ptx)
    return f"{best[0]}.{best[1]}"


_STORAGE = {T.f16: T.b16, T.bf16: T.b16, T.f16x2: T.b32, T.bf16x2: T.b32}
_MOVE = {**_STORAGE, T.u8: T.u16, T.s8: T.s16, T.b8: T.b16}


def storage_type(ty: T.PtxType) -> T.PtxType:
    """The type ld/st spell for a value type: half types move as ``.b16``/``.b32``."""
    return _STORAGE.get(ty, ty)


def move_type(ty: T.PtxType) -> T.PtxType:
    """The type mov/selp spell: as :func:`storage_type`, and 8-bit values as 16-bit (they
    live in 16-bit registers and mov has no 8-bit form)."""
    return _MOVE.get(ty, ty)


_BITS_OF = {8: T.b8, 16: T.b16, 32: T.b32, 64: T.b64, 128: T.b128}


def param_type(ty: T.PtxType, *, entry: bool) -> T.PtxType:
    """The type a ``.param`` is declared with.  Device functions take 8/16-bit values as
    ``.b8``/``.b16``: ptxas refuses ``.u16``/``.s8``/... parameters of a ``.func``."""
    if not entry and ty.bits < 32:
        return bits_type(ty)
    return storage_type(ty)


def bits_type(ty: T.PtxType) -> T.PtxType:
    """The ``.bN`` type of the same width (``.u32`` → ``.b32``); predicates stay ``.pred``."""
    if ty.is_pred:
        return ty
    return _BITS_OF[ty.bits]
