"""Bit twiddling, byte permutes and small dot products: ``prmt``, ``lop3``, ``shf``, ``dp4a``,
``dp2a``, ``sad``, ``bfind``, ``fns``, ``mul24``, ``mad24``, ``szext``, ``bmsk``, ``copysign``
and ``testp``.

Each family is declared once from a factory (``sad = _op("sad", 3, ...)``) and checked in one
place, :meth:`BitOps._bitop`, against its row in :data:`ptxforge.ptx.isa.OPS`: the row's shape says
what each operand is (``d, a, b, n``: the value type, or a shift amount ``n``, a selector
``sel``, a truth table ``lut``, ...).  Immediates that PTX reads only partly are range-checked
here, so a typo is a :class:`~ptxforge.errors.BuildError` at the user's line rather than a
silently truncated constant.

Example::

    >>> from ptxforge.dsl.builder import KernelBuilder
    >>> kb = KernelBuilder("k", target="sm_80")
    >>> a, b, c = (kb.mov(v, type="u32") for v in (1, 2, 3))
    >>> d = kb.lop3(a, b, c, lambda x, y, z: (x & y) | (~x & z))   # immLut 0xca
    >>> hi = kb.shf_l(a, b, 8)                                     # bits 55..24 of {b, a}
"""

from __future__ import annotations

from ptxforge.errors import BuildError, PtxTypeError
from ptxforge.ptx import ir, isa
from ptxforge.ptx import types as T

from .checks import _expect_list, _register_internal, _where, caller_loc, ty_reg, type_error
from .core import _Core

__all__ = ["BitOps", "lop3_lut", "LOP3_BASIS", "PRMT_MODES", "TESTP_CLASSES"]

_register_internal(__file__)

#: The constants lop3's truth table is read from: ``immLut = F(0xF0, 0xCC, 0xAA) & 0xFF``.
LOP3_BASIS = (0xF0, 0xCC, 0xAA)
#: prmt's optional modes (no mode: four 4-bit byte selectors).
PRMT_MODES = ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")
#: testp's classes.
TESTP_CLASSES = isa.OPS["testp"].modifiers

# Families spelled with .b32 whose result keeps the value type of ``a`` (prmt on .u32 -> .u32).
_SPELL_BITS = isa.BITS_SPELLED
_CLAMP = (("clamp", "wrap"), "clamp")
_LOHI = (("lo", "hi"), "lo")
# family -> (valid mode= values, default); None is "no modifier".
_MODES = {"prmt": ((None,) + PRMT_MODES, None), "shf": _CLAMP, "szext": _CLAMP, "bmsk": _CLAMP,
          "mul24": _LOHI, "mad24": _LOHI, "dp2a": _LOHI, "bfind": ((None, "shiftamt"), None),
          "testp": (TESTP_CLASSES, None)}


def lop3_lut(fn, op: str = "lop3", loc=None) -> int:
    """lop3's ``immLut`` for a bitwise function of three words: ``fn(0xF0, 0xCC, 0xAA) & 0xFF``.

    The function must be bitwise (``& | ^ ~``): it is also evaluated one bit at a time, and
    a function that gives another table that way (``and``/``or``/``not``, ``+``, a constant
    such as ``1``) raises :class:`BuildError`.

    Example::

        >>> hex(lop3_lut(lambda a, b, c: a ^ b ^ c))
        '0x96'
    """
    lut = _to_byte(fn(*LOP3_BASIS), op, loc)
    per_bit = 0
    for i in range(8):
        bits = [(k >> i) & 1 for k in LOP3_BASIS]
        per_bit |= (_to_byte(fn(*bits), op, loc) & 1) << i
    if per_bit != lut:
        raise BuildError(f"{op}: expected a bitwise function of (a, b, c) (& | ^ ~ only), but it "
                         f"gives immLut 0x{lut:02x} on the words 0xF0, 0xCC, 0xAA and 0x{per_bit:02x}"
                         f" bit by bit (Python's and/or/not, arithmetic or a constant other than 0 "
                         f"and ~0 do not act bit by bit){_where(loc)}")
    return lut


def _to_byte(value, op: str, loc) -> int:
    """The low 8 bits of a LUT function's int result (BuildError for anything else)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BuildError(f"{op}: expected the LUT function to return an int, got "
                         f"{type(value).__name__} {value!r}{_where(loc)}")
    return value & 0xFF


def _op(family: str, arity: int, doc: str, example: str):
    """A method for an SSA op of ``arity`` sources (``kb.sad(a, b, c)``)."""

    def method(self, *srcs, mode=None, type=None, pred=None):
        if len(srcs) != arity:
            raise TypeError(f"{family}() takes {arity} operand(s), got {len(srcs)}")
        return self._bitop(family, srcs, mode=mode, type=type, pred=pred, op=family)

    method.__name__ = family
    method.__doc__ = f"``{family}``: {doc}. Example: ``{example}``"
    return method


def _shf(direction: str, doc: str):
    """``shf_l`` / ``shf_r``: a funnel shift of the 64-bit value {b, a} by n."""

    def method(self, a, b, n, *, mode="clamp", type=None, pred=None):
        return self._bitop("shf", (a, b, n), mode=mode, type=type, pred=pred, op=f"shf_{direction}",
                           prefix=(direction,))

    method.__name__ = f"shf_{direction}"
    method.__doc__ = (f"``shf.{direction}.mode.b32``: {doc}; ``mode='clamp'`` (default: n is "
                      f"min(n, 32)) or ``'wrap'`` (n mod 32). Example: "
                      f"``kb.shf_{direction}(lo, hi, 8)``")
    return method


def _dotop(family: str, doc: str):
    """``dp4a`` / ``dp2a``: byte dot products accumulated into c."""

    def method(self, a, b, c, *, mode=None, atype=None, btype=None, pred=None):
        return self._dot_product(family, a, b, c, mode=mode, atype=atype, btype=btype, pred=pred,
                                 op=family)

    method.__name__ = family
    method.__doc__ = (f"``{family}``: {doc}; .atype/.btype come from a's and b's registers "
                      f"(.u32/.s32) or ``atype=``/``btype=``; d and c are .u32 when both are, "
                      f"else .s32. Example: ``acc = kb.{family}(x, y, acc)``")
    return method


def _inplace(family: str, doc: str):
    """An in-place accumulate (``kb.isad(acc, a, b)``: acc = acc + |a - b|)."""

    def method(self, dst, a, b, *, mode=None, atype=None, btype=None, pred=None):
        name = "i" + family
        if family in ("dp4a", "dp2a"):
            self._dot_product(family, a, b, dst, mode=mode, atype=atype, btype=btype, pred=pred,
                              op=name, inplace=True)
        else:
            if atype is not None or btype is not None:
                raise TypeError(f"{name}() takes no atype/btype")
            self._bitop(family, (a, b), dst=dst, mode=mode, pred=pred, op=name)
        return dst

    method.__name__ = "i" + family
    method.__doc__ = (f"In-place ``{family}``: {doc} (dst is the accumulator c). Example: "
                      f"``kb.i{family}(acc, x, y)``")
    return method


class BitOps(_Core):
    """Mixin: the bit-twiddling, byte-permute and dot-product ops of :class:`KernelBuilder`."""

    # -- the one checker ----------------------------------------------------------------

    def _bitop(self, family, srcs, *, mode=None, type=None, dst=None, pred=None, sat=False,
               prefix=(), op=""):
        """Type-check and emit one op of ``family`` (sources as its isa shape says); with
        ``dst`` the op accumulates in place into its last source.  Returns the destination."""
        loc = caller_loc()
        spec = isa.OPS[family]
        out_kind, *kinds = (k.strip() for k in spec.shape.split(","))
        typed = tuple(v for k, v in zip(kinds, srcs) if k in ("a", "b", "c"))
        if dst is not None:
            if not isinstance(dst, ir.Register):
                raise type_error(op, "a destination register", dst, loc)
            ty, relaxed = dst.type, False
        elif "a" not in kinds:  # bmsk: only amounts, the type is the family's
            ty, relaxed = T.as_type(type) if type is not None else spec.types[0], True
        else:
            ty, relaxed = self._infer(op, typed, type, loc)
        opty = isa.bits_type(ty) if family in _SPELL_BITS and ty.is_int else ty
        if not spec.allows(opty) or ty.is_pred:
            given = dst if dst is not None else ty_reg(ty, "type=") if type is not None else next(
                (s for s in typed if isinstance(s, ir.Register)), ty_reg(ty))
            raise type_error(op, f"operands of type {_expect_list(spec.types)}", given, loc)
        mode = _check_mode(family, mode, op, loc)
        result = {"u32": T.u32, "b32": T.b32, "pred": T.pred}.get(out_kind, ty)
        values = srcs + ((dst,) if dst is not None else ())
        operands = [self._bit_operand(kind, v, opty, relaxed, mode, op, loc)
                    for kind, v in zip(kinds, values)]
        if dst is not None:
            if dst.type is not result:
                raise type_error(op, f"a {result.ptx} destination", dst, loc)
            out = dst
        else:
            out = self._new(result, loc)
        mods = (*prefix, mode, "sat" if sat else "")
        if family == "prmt":  # prmt.b32{.mode}
            opcode = ".".join(["prmt", opty.name, *(m for m in mods if m)])
        else:
            opcode = ".".join([family, *(m for m in mods if m), opty.name])
        self._emit(opcode, (out, *operands), 1, loc, pred, op)
        return out

    def _bit_operand(self, kind, value, ty, relaxed, mode, op, loc):
        """One source of shape ``kind`` (see :data:`ptxforge.ptx.isa.OPS`), checked."""
        if kind == "n":
            hi, why = (32, ".clamp treats larger amounts as 32") if mode == "clamp" else \
                (31, ".wrap takes amounts mod 32")
            _check_imm(op, "amount", value, 0, hi, why, loc)
            return self._src(op, value, T.u32, loc, relaxed=True)
        if kind == "sel":
            hi, text = (0xFFFF, "four 4-bit byte selectors") if mode is None else \
                (3, f".{mode} reads only the two low bits")
            if _check_imm(op, "selector", value, 0, hi, text, loc):
                return ir.Immediate(value, T.b32, f"0x{value:04x}" if mode is None else str(value))
            return self._src(op, value, T.b32, loc, relaxed=True)
        if kind == "lut":
            return self._lut(value, op, loc)
        if kind == "base":
            _check_imm(op, "base bit", value, 0, 31, "bits 0..31 of the mask", loc)
            return self._src(op, value, T.u32, loc, relaxed=True)
        if kind == "s32":
            return self._src(op, value, T.s32, loc, relaxed=True)
        return self._src(op, value, ty, loc, relaxed)

    def _lut(self, value, op, loc) -> ir.Immediate:
        """lop3's immLut: an int 0..255 or a bitwise function of (a, b, c)."""
        if callable(value) and not isinstance(value, ir.Register):
            lut = lop3_lut(value, op, loc)
        elif isinstance(value, int) and not isinstance(value, bool):
            _check_imm(op, "immLut", value, 0, 255, "an 8-bit truth table", loc)
            lut = value
        else:
            raise type_error(op, "an immediate immLut (an int 0..255, or a function such as "
                             "lambda a, b, c: a & b ^ c)", value, loc)
        return ir.Immediate(lut, T.b32, f"0x{lut:02x}")

    def _dot_product(self, family, a, b, c, *, mode, atype, btype, pred, op, inplace=False):
        """Emit ``dp4a``/``dp2a``: the types of a and b from their registers or the keywords."""
        loc = caller_loc()
        spec = isa.OPS[family]
        at = _dot_type(op, "a", a, atype, loc)
        bt = _dot_type(op, "b", b, btype, loc)
        if at is None and bt is None:
            raise PtxTypeError(f"{op}: cannot infer .atype/.btype from immediates {a!r}, {b!r}; "
                               f"pass atype= and btype= ('u32' or 's32'){_where(loc)}")
        at, bt = at or bt, bt or at
        for ty, value, which in ((at, a, "a"), (bt, b, "b")):
            if not spec.allows(ty):
                explicit = atype if which == "a" else btype
                given = value if isinstance(value, ir.Register) and explicit is None else \
                    ty_reg(ty, f"{which}type=")
                raise type_error(op, f"a .u32 or .s32 {which} (or {which}type='u32'/'s32' for "
                                 f"other 32-bit registers)", given, loc)
        mode = _check_mode(family, mode, op, loc)
        result = T.u32 if at is T.u32 and bt is T.u32 else T.s32
        if inplace:
            if not isinstance(c, ir.Register):
                raise type_error(op, "a destination register", c, loc)
            if c.type is not result:
                raise type_error(op, f"a {result.ptx} accumulator (.atype {at.ptx}, .btype "
                                 f"{bt.ptx})", c, loc)
        ops = (self._src(op, a, at, loc, atype is not None),
               self._src(op, b, bt, loc, btype is not None), self._src(op, c, result, loc))
        out = c if inplace else self._new(result, loc)
        opcode = ".".join([family, *((mode,) if mode else ()), at.name, bt.name])
        self._emit(opcode, (out, *ops), 1, loc, pred, op)
        return out

    # -- byte permute, three-input logic, funnel shifts ---------------------------------

    prmt = _op("prmt", 3, "d = four bytes of the 64-bit {b, a} (bytes 0-3 from a, 4-7 from b) "
               "picked by the nibbles of selector c (bit 3 of a nibble replicates the byte's "
               "sign); mode='f4e'|'b4e'|'rc8'|'ecl'|'ecr'|'rc16' reads c's two low bits",
               "swapped = kb.prmt(x, 0, 0x0123)")
    lop3 = _op("lop3", 4, "d = F(a, b, c) bit by bit; the 4th operand is F's 8-bit table "
               "(an int 0..255) or a function of (a, b, c) using & | ^ ~",
               "kb.lop3(a, b, c, lambda a, b, c: (a & b) ^ c)")
    shf_l = _shf("l", "d = the high word of ({b, a} << n) (64-bit shift left)")
    shf_r = _shf("r", "d = the low word of ({b, a} >> n) (64-bit shift right)")

    # -- bit search and masks -----------------------------------------------------------

    fns = _op("fns", 3, "d (u32) = position of the offset-th set bit of mask counting from "
              "bit base (offset > 0 upwards, < 0 downwards, 0: base itself), 0xffffffff if none "
              "(mask, base, offset)", "kb.fns(mask, 0, 3)")
    szext = _op("szext", 2, "d = the low n bits of a, sign-extended (.s32) or zero-extended "
                "(.u32); mode='clamp' (default) or 'wrap' for n >= 32 (a, n)",
                "kb.szext(x_s32, 12)")
    bmsk = _op("bmsk", 2, "d (b32) = width ones starting at bit pos; mode='clamp' (default) or "
               "'wrap' (pos, width)", "mask = kb.bmsk(4, 8)   # 0x00000ff0")

    def bfind(self, a, *, shiftamt: bool = False, type=None, pred=None):
        """``bfind[.shiftamt]``: d (u32) = the bit position of the most significant non-sign bit
        of a (0xffffffff if none); with ``shiftamt=True`` the left shift that moves it to the
        top. Example: ``log2 = kb.bfind(n)``"""
        return self._bitop("bfind", (a,), mode="shiftamt" if shiftamt else None, type=type,
                           pred=pred, op="bfind")

    # -- small integer arithmetic and dot products --------------------------------------

    sad = _op("sad", 3, "d = c + |a - b|", "acc = kb.sad(x, y, acc)")
    mul24 = _op("mul24", 2, "d = low (mode='lo', default) or high 32 bits of the 48-bit product "
                "of a's and b's low 24 bits", "kb.mul24(i, stride)")

    def mad24(self, a, b, c, *, mode=None, sat: bool = False, type=None, pred=None):
        """``mad24``: d = (low or high 32 bits of the 48-bit product of a's and b's low 24
        bits) + c; ``sat=True`` exists only as ``mad24.hi.sat.s32``. Example:
        ``kb.mad24(row, width, col)``"""
        return self._bitop("mad24", (a, b, c), mode=mode, type=type, pred=pred, sat=sat, op="mad24")

    dp4a = _dotop("dp4a", "d = c + the sum of the four byte products of a and b")
    dp2a = _dotop("dp2a", "d = c + the two products of a's 16-bit halves with b's low "
                "(mode='lo', default) or high (mode='hi') two bytes")

    isad = _inplace("sad", "acc = acc + |a - b|")
    imad24 = _inplace("mad24", "acc = acc + mul24(a, b) (mode='lo'|'hi')")
    idp4a = _inplace("dp4a", "acc = acc + the four byte products of a and b")
    idp2a = _inplace("dp2a", "acc = acc + the two 16x8-bit products (mode='lo'|'hi')")

    # -- floating-point bits ------------------------------------------------------------

    copysign = _op("copysign", 2, "d = b with the sign of a (PTX order: C's copysign(x, y) is "
                   "kb.copysign(y, x))", "kb.copysign(sign_from, magnitude)")

    def testp(self, cls: str, a, *, type=None, pred=None):
        """``testp.cls``: p = whether a (f32/f64) is ``finite``, ``infinite``, a ``number``,
        ``notanumber`` (NaN), ``normal`` or ``subnormal``. Example: ``ok = kb.testp("finite", x)``"""
        return self._bitop("testp", (a,), mode=cls, type=type, pred=pred, op="testp")


def _check_mode(family: str, mode, op: str, loc):
    """Validate and default ``mode=`` for ``family``."""
    valid, default = _MODES.get(family, ((None,), None))
    if mode is None:
        mode = default
    if mode not in valid:
        names = ", ".join(repr(m) for m in valid if m is not None) or "none"
        what = "class" if family == "testp" else "mode"
        raise BuildError(f"{op}: {what} {mode!r} is not valid for {family}; expected one of "
                         f"{names}{_where(loc)}")
    return mode


def _check_imm(op: str, what: str, value, lo: int, hi: int, why: str, loc) -> bool:
    """True if ``value`` is an int immediate (BuildError when outside [lo, hi]); False for
    anything else (registers are checked by the caller)."""
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    if not lo <= value <= hi:
        raise BuildError(f"{op}: immediate {what} {value} is out of range: expected [{lo}, {hi}] "
                         f"({why}){_where(loc)}")
    return True


def _dot_type(op: str, which: str, value, given, loc):
    """The .atype/.btype of a dp4a/dp2a source: ``given``, a register's type, or None."""
    if given is not None:
        ty = T.as_type(given)
        if isinstance(value, ir.Register) and (value.type.bits != 32 or value.type.is_float
                                               or value.type.is_pred):
            raise type_error(op, f"a 32-bit integer {which} for {which}type={ty.name}", value, loc)
        return ty
    if isinstance(value, ir.Register):
        return value.type
    return None
