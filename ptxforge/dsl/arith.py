"""Arithmetic, logic, carry-chain, comparison, selection, conversion and move ops.

Each opcode family is declared once, from a factory (``add = _op("add", 2)``); the checks
(legal types from :data:`ptxforge.ptx.isa.OPS`, modifiers, immediates, the target) live in
:meth:`_ArithOps._arith`.  In-place forms (``iadd``, ``ifma``, ...) write their first argument.
"""

from __future__ import annotations

from typing import Optional

from ptxforge.errors import BuildError
from ptxforge.ptx import ir, isa
from ptxforge.ptx import types as T

from .checks import (
    _expect_list,
    _register_internal,
    _where,
    caller_loc,
    half_bits,
    ty_reg,
    type_error,
)
from .core import _Core

__all__ = ["ArithOps", "SEED_INPLACE", "SETP_SYMBOLS"]

_register_internal(__file__)

# Families whose integer forms are spelled with the .bN type (and.b32, shl.b32, popc.b32).
_BITWISE = isa.BITS_SPELLED
_INT_MODES = {"mul": ("lo", "hi", "wide"), "mad": ("lo", "hi", "wide"), "madc": ("lo", "hi")}
_FLOAT_MODES = {"div": ("approx", "full"), "sqrt": ("approx",), "rcp": ("approx",),
                "rsqrt": ("approx",), "ex2": ("approx",), "lg2": ("approx",),
                "sin": ("approx",), "cos": ("approx",)}
# Default modifier when the caller gives none: (integer types, floating types).
_DEFAULT = {"mul": ("lo", None), "mad": ("lo", "rn"), "madc": ("lo", None), "fma": (None, "rn"),
            "div": (None, "rn"), "sqrt": (None, "rn"), "rcp": (None, "rn"),
            "rsqrt": (None, "approx"), "ex2": (None, "approx"), "lg2": (None, "approx"),
            "sin": (None, "approx"), "cos": (None, "approx")}
_WIDE = {T.u16: T.u32, T.s16: T.s32, T.u32: T.u64, T.s32: T.s64}


def _opcode(family: str, ty: T.PtxType, mods: tuple) -> str:
    """``family.mod1.mod2.type`` skipping empty modifiers."""
    return ".".join([family, *(m for m in mods if m), ty.name])


def _op(family: str, arity: int, doc: str):
    """A method for an SSA op of ``arity`` sources of one type (``kb.add(a, b)``)."""

    def method(self, *srcs, type=None, pred=None, mode=None, rnd=None, ftz=False, sat=False):
        if len(srcs) != arity:
            raise TypeError(f"{family}() takes {arity} operand(s), got {len(srcs)}")
        return self._arith(family, srcs, type=type, pred=pred, mode=mode, rnd=rnd, ftz=ftz,
                           sat=sat, op=family)

    method.__name__ = family if family not in ("and", "or", "not") else family + "_"
    method.__doc__ = f"``{family}``: {doc}. Example: ``d = kb.{method.__name__}(" + ", ".join(
        "abc"[:arity]) + ")``"
    return method


def _inplace(family: str, arity: int, doc: str):
    """A method for an in-place op writing its first argument (``kb.iadd(acc, x)``)."""

    def method(self, dst, *srcs, pred=None, mode=None, rnd=None, ftz=False, sat=False):
        if len(srcs) != arity:
            raise TypeError(f"i{family}() takes a destination and {arity} operand(s)")
        self._arith(family, srcs, dst=dst, pred=pred, mode=mode, rnd=rnd, ftz=ftz, sat=sat,
                    op="i" + family)
        return dst

    method.__name__ = "i" + family
    args = ", ".join("xy"[:arity])
    method.__doc__ = (f"In-place ``{family}``: {doc} (dst is both the destination and the first "
                      f"operand; fma/mad: dst = a*b + dst). Example: ``kb.i{family}(acc, {args})``")
    return method


def _seed(inplace: str, ty: T.PtxType):
    """A trueno-gpu style alias (``add_f32_inplace``) that also insists on the type."""

    def method(self, dst, *srcs):
        loc = caller_loc()
        name = f"{inplace[1:]}_{ty.name}_inplace"
        if not isinstance(dst, ir.Register) or dst.type is not ty:
            raise type_error(name, f"a {ty.ptx} destination register", dst, loc)
        return getattr(self, inplace)(dst, *srcs)

    method.__name__ = f"{inplace[1:]}_{ty.name}_inplace"
    method.__doc__ = f"trueno-gpu name for ``kb.{inplace}`` on a {ty.ptx} register."
    return method


#: setp's comparison symbols and the PTX names they stand for.
SETP_SYMBOLS = {"<": "lt", "<=": "le", "==": "eq", "!=": "ne", ">=": "ge", ">": "gt"}

#: The trueno-gpu in-place names and the generic ops they map to.
SEED_INPLACE = {
    "add_u32_inplace": ("iadd", T.u32), "add_f32_inplace": ("iadd", T.f32),
    "fma_f32_inplace": ("ifma", T.f32), "max_f32_inplace": ("imax", T.f32),
    "mul_f32_inplace": ("imul", T.f32), "div_f32_inplace": ("idiv", T.f32),
    "shr_u32_inplace": ("ishr", T.u32),
}


class ArithOps(_Core):
    """Mixin: every arithmetic/logic/compare/convert op of :class:`KernelBuilder`."""

    # -- the one checker ----------------------------------------------------------------

    def _arith(self, family, srcs, *, type=None, dst=None, pred=None, mode=None, rnd=None,
               ftz=False, sat=False, cc=False, op=""):
        """Type-check and emit one arithmetic/logic op; return the destination register."""
        loc = caller_loc()
        spec = isa.OPS[family]
        if dst is not None:
            if not isinstance(dst, ir.Register):
                raise type_error(op, "a destination register", dst, loc)
            ty, relaxed = dst.type, False
        else:
            ty, relaxed = self._infer(op, srcs, type, loc)
        opty = isa.bits_type(ty) if family in _BITWISE and ty.is_int else ty
        if not spec.allows(opty):
            given = dst if dst is not None else ty_reg(ty, "type=") if type is not None else next(
                (s for s in srcs if isinstance(s, ir.Register)), ty_reg(ty))
            raise type_error(op, f"operands of type {_expect_list(spec.types)}", given, loc)
        mode, rnd = self._modifiers(family, opty, mode, rnd, ftz, sat, op, loc)
        result_ty = ty
        kinds = [k.strip() for k in spec.shape.split(",")][1:]
        if dst is not None and family not in ("fma", "mad", "madc"):
            kinds = kinds[1:]  # dst supplies the first source
        if mode == "wide":
            if dst is not None or ty not in _WIDE:
                given = dst if dst is not None else next(
                    (s for s in srcs if isinstance(s, ir.Register)), ty_reg(ty))
                raise type_error(op, "a 16/32-bit integer for .wide (SSA form only)", given, loc)
            result_ty = _WIDE[ty]
        operands = []
        for kind, value in zip(kinds, srcs):
            if kind == "u32":
                operands.append(self._src(op, value, T.u32, loc, relaxed=True))
            elif kind == "c" and mode == "wide":
                operands.append(self._src(op, value, result_ty, loc, relaxed))
            else:
                operands.append(self._src(op, value, opty if family in _BITWISE else ty, loc, relaxed))
        if spec.shape.startswith("u32"):
            result_ty = T.u32
        if dst is not None:
            if result_ty is not dst.type:
                raise type_error(op, f"a {result_ty.ptx} destination", dst, loc)
            out = dst
            if family in ("fma", "mad", "madc"):
                operands.append(dst)
            else:
                operands.insert(0, dst)
        else:
            out = self._new(result_ty, loc)
        opcode = _opcode(family, opty, (mode, rnd, "cc" if cc else "", "ftz" if ftz else "",
                                        "sat" if sat else ""))
        self._emit(opcode, (out, *operands), 1, loc, pred, op)
        if family in ("add", "sub") and ty.bits >= 32 and ty.is_int:
            for s in srcs:
                tag = self.pointee(s) if isinstance(s, ir.Register) else None
                if tag is not None:
                    self._tag(out, *tag)
                    break
        return out

    def _modifiers(self, family, ty, mode, rnd, ftz, sat, op, loc):
        """Validate and default (mode, rounding) for ``family`` on type ``ty``."""
        is_float = ty.is_float
        if mode is not None:
            allowed = (_FLOAT_MODES if is_float else _INT_MODES).get(family, ())
            if mode not in allowed:
                raise BuildError(f"{op}: mode {mode!r} is not valid for {family} on {ty.ptx}; "
                                 f"valid: {', '.join(allowed) or 'none'}{_where(loc)}")
            if mode in ("approx", "full") and ty is not T.f32 and not (
                    family in ("rsqrt", "ex2") and ty.bits <= 64):
                raise BuildError(f"{op}: .{mode} exists only for .f32{_where(loc)}")
        if rnd is not None:
            if not is_float or rnd not in isa.ROUNDING_FLOAT:
                raise BuildError(f"{op}: rounding {rnd!r} needs a float type and one of "
                                 f"{', '.join(isa.ROUNDING_FLOAT)}; got {ty.ptx}{_where(loc)}")
            if mode in ("approx", "full"):
                raise BuildError(f"{op}: rounding {rnd!r} conflicts with .{mode}{_where(loc)}")
            if family in _FLOAT_MODES and "approx" in _FLOAT_MODES[family] and \
                    _DEFAULT.get(family, (None, None))[1] == "approx":
                raise BuildError(f"{op}: {family} is approximate only; no rounding{_where(loc)}")
        if ftz and ty not in (T.f32, T.f16, T.f16x2):
            raise BuildError(f"{op}: .ftz applies to .f32 (and some .f16) ops, not {ty.ptx}"
                             f"{_where(loc)}")
        if sat and not (ty in (T.s32, T.f32, T.f16, T.f16x2)):
            raise BuildError(f"{op}: .sat applies to .s32 and .f32 ops, not {ty.ptx}{_where(loc)}")
        if mode is None and rnd is None:
            default = _DEFAULT.get(family, (None, None))[1 if is_float else 0]
            if default in isa.ROUNDING_FLOAT:
                if ty.bits >= 32 or family in ("fma", "mad"):
                    rnd = default
            else:
                mode = default
        return mode, rnd

    # -- SSA arithmetic -----------------------------------------------------------------

    add = _op("add", 2, "d = a + b")
    sub = _op("sub", 2, "d = a - b")
    mul = _op("mul", 2, "d = a * b (ints: mode='lo' default, 'hi', 'wide' doubles the width)")
    mad = _op("mad", 3, "d = a * b + c (ints: mode lo/hi/wide; floats: rnd='rn')")
    fma = _op("fma", 3, "d = a * b + c with one rounding (rnd='rn' default)")
    div = _op("div", 2, "d = a / b (f32: rnd='rn' default, mode='approx' or 'full')")
    rem = _op("rem", 2, "d = a % b (integers)")
    abs = _op("abs", 1, "d = |a|")
    neg = _op("neg", 1, "d = -a")
    min = _op("min", 2, "d = min(a, b)")
    max = _op("max", 2, "d = max(a, b)")
    sqrt = _op("sqrt", 1, "d = sqrt(a) (rnd='rn' default, mode='approx' for f32)")
    rsqrt = _op("rsqrt", 1, "d = 1/sqrt(a), approximate")
    rcp = _op("rcp", 1, "d = 1/a (rnd='rn' default, mode='approx' for f32)")
    ex2 = _op("ex2", 1, "d = 2**a, approximate")
    lg2 = _op("lg2", 1, "d = log2(a), approximate")
    sin = _op("sin", 1, "d = sin(a), approximate")
    cos = _op("cos", 1, "d = cos(a), approximate")
    and_ = _op("and", 2, "d = a & b (pred, or any 16/32/64-bit integer)")
    or_ = _op("or", 2, "d = a | b")
    xor = _op("xor", 2, "d = a ^ b")
    not_ = _op("not", 1, "d = ~a")
    cnot = _op("cnot", 1, "d = 1 if a == 0 else 0")
    shl = _op("shl", 2, "d = a << b (b: u32)")
    shr = _op("shr", 2, "d = a >> b (b: u32; arithmetic for signed a)")
    popc = _op("popc", 1, "d (u32) = number of set bits")
    clz = _op("clz", 1, "d (u32) = number of leading zeros")
    brev = _op("brev", 1, "d = a with its bits reversed")
    bfe = _op("bfe", 3, "d = bits [pos, pos+len) of a, extended (a, pos, len)")
    bfi = _op("bfi", 4, "d = b with bits [pos, pos+len) replaced by a's low bits (a, b, pos, len)")

    # -- in place -----------------------------------------------------------------------

    iadd = _inplace("add", 1, "dst = dst + x")
    isub = _inplace("sub", 1, "dst = dst - x")
    imul = _inplace("mul", 1, "dst = dst * x (ints: low half)")
    idiv = _inplace("div", 1, "dst = dst / x")
    irem = _inplace("rem", 1, "dst = dst % x")
    ifma = _inplace("fma", 2, "dst = a * b + dst")
    imad = _inplace("mad", 2, "dst = a * b + dst")
    imin = _inplace("min", 1, "dst = min(dst, x)")
    imax = _inplace("max", 1, "dst = max(dst, x)")
    iand = _inplace("and", 1, "dst = dst & x")
    ior = _inplace("or", 1, "dst = dst | x")
    ixor = _inplace("xor", 1, "dst = dst ^ x")
    ishl = _inplace("shl", 1, "dst = dst << x")
    ishr = _inplace("shr", 1, "dst = dst >> x")

    add_u32_inplace = _seed("iadd", T.u32)
    add_f32_inplace = _seed("iadd", T.f32)
    fma_f32_inplace = _seed("ifma", T.f32)
    max_f32_inplace = _seed("imax", T.f32)
    mul_f32_inplace = _seed("imul", T.f32)
    div_f32_inplace = _seed("idiv", T.f32)
    shr_u32_inplace = _seed("ishr", T.u32)

    # -- carry chains -------------------------------------------------------------------

    def _carry(self, family, srcs, *, cc, carry_in, mode=None, type=None, pred=None, op):
        """Emit one carry-chain op after checking its type and the carry flag."""
        loc = caller_loc()
        ty, _ = self._infer(op, srcs, type, loc)
        if ty not in isa.OPS["addc"].types:
            raise type_error(op, f"operands of type {_expect_list(isa.OPS['addc'].types)}",
                             next((s for s in srcs if isinstance(s, ir.Register)), ty_reg(ty)), loc)
        if carry_in:
            self._check_cc(op, loc)
        return self._arith(family, srcs, type=type, pred=pred, mode=mode, cc=cc, op=op)

    def add_cc(self, a, b, *, type=None, pred=None):
        """``add.cc``: d = a + b, setting the carry flag. Example: ``lo = kb.add_cc(a0, b0)``."""
        return self._carry("add", (a, b), cc=True, carry_in=False, type=type, pred=pred, op="add_cc")

    def addc(self, a, b, *, cc=False, type=None, pred=None):
        """``addc[.cc]``: d = a + b + carry (cc=True also writes the carry). Example:
        ``hi = kb.addc(a1, b1, cc=True)``"""
        return self._carry("addc", (a, b), cc=cc, carry_in=True, type=type, pred=pred, op="addc")

    def sub_cc(self, a, b, *, type=None, pred=None):
        """``sub.cc``: d = a - b, setting the borrow. Example: ``d0 = kb.sub_cc(a0, p0)``."""
        return self._carry("sub", (a, b), cc=True, carry_in=False, type=type, pred=pred, op="sub_cc")

    def subc(self, a, b, *, cc=False, type=None, pred=None):
        """``subc[.cc]``: d = a - (b + borrow). Example: ``d1 = kb.subc(a1, p1, cc=True)``."""
        return self._carry("subc", (a, b), cc=cc, carry_in=True, type=type, pred=pred, op="subc")

    def mad_cc(self, a, b, c, *, hi=False, type=None, pred=None):
        """``mad.lo.cc`` (``hi=True``: ``mad.hi.cc``): d = a*b + c, setting the carry."""
        return self._carry("mad", (a, b, c), cc=True, carry_in=False, mode="hi" if hi else "lo",
                           type=type, pred=pred, op="mad_cc")

    def madc(self, a, b, c, *, hi=False, cc=False, type=None, pred=None):
        """``madc.lo[.cc]`` / ``madc.hi[.cc]``: d = a*b + c + carry."""
        return self._carry("madc", (a, b, c), cc=cc, carry_in=True, mode="hi" if hi else "lo",
                           type=type, pred=pred, op="madc")

    # -- compare and select -------------------------------------------------------------

    def setp(self, cmp: str, a, b, *, type=None, combine: Optional[tuple] = None,
             both: bool = False, ftz: bool = False, pred=None):
        """``setp.cmp[.combine].type``: p = a cmp b (``cmp`` a PTX name or one of
        ``< <= == != >= >``); with ``combine=(op, c)``, ``op`` ``'and'|'or'|'xor'`` and ``c`` a
        predicate (or ``ir.Negated(c)``): p = (a cmp b) op c; with ``both=True`` returns
        ``(p, q)`` where q is the complement (``p|q``).

        Example: ``in_range = kb.setp("lt", i, n)``
        """
        loc = caller_loc()
        cmp = SETP_SYMBOLS.get(cmp, cmp)
        ty, relaxed = self._infer("setp", (a, b), type, loc)
        spec = isa.OPS["setp"]
        if not spec.allows(ty):
            raise type_error("setp", f"operands of type {_expect_list(spec.types)}",
                             a if isinstance(a, ir.Register) else ty_reg(ty), loc)
        valid = isa.comparisons_for(ty)
        if cmp not in valid:
            hint = ""
            if ty.is_bits and cmp in isa.COMPARISONS:
                hint = (f"; .bN values compare only for (in)equality: pass type='s{ty.bits}' "
                        f"(signed) or type='u{ty.bits}' (unsigned)")
            elif ty.is_signed and cmp in ("lo", "ls", "hi", "hs"):
                hint = (f"; lo/ls/hi/hs are the unsigned comparisons: use lt/le/gt/ge on "
                        f"{ty.ptx}, or compare as type='u{ty.bits}'")
            raise BuildError(f"setp: comparison {cmp!r} is not valid for {ty.ptx}; valid: "
                             f"{', '.join(valid)} (or < <= == != >= >){hint}{_where(loc)}")
        c, how = None, None
        if combine is not None:
            if not (isinstance(combine, tuple) and len(combine) == 2
                    and combine[0] in ("and", "or", "xor")):
                raise BuildError(f"setp: combine must be ('and'|'or'|'xor', predicate), got "
                                 f"{combine!r}{_where(loc)}")
            how, c = combine
        if ftz and ty is not T.f32:
            raise BuildError(f"setp: .ftz applies to .f32 only, not {ty.ptx}{_where(loc)}")
        if both and ty.bits == 16 and ty.is_float:
            raise BuildError(f"setp: {ty.ptx} has no two-result (p|q) form{_where(loc)}")
        srcs = [self._src("setp", a, ty, loc, relaxed), self._src("setp", b, ty, loc, relaxed)]
        if c is not None:
            srcs.append(self._pred_src("setp", c, loc))
        p = self._new(T.pred, loc)
        dest, q = self._with_pred_result(p, both, loc)
        opcode = _opcode("setp", ty, (cmp, how, "ftz" if ftz else ""))
        self._emit(opcode, (dest, *srcs), 1, loc, pred, "setp")
        return (p, q) if both else p

    def selp(self, a, b, p, *, type=None, pred=None):
        """``selp``: d = a if p else b. Example: ``m = kb.selp(x, 0.0, positive)``."""
        loc = caller_loc()
        ty, relaxed = self._infer("selp", (a, b), type, loc)
        st = isa.move_type(ty)
        if not isa.OPS["selp"].allows(st) or ty.is_pred:
            raise type_error("selp", f"operands of type {_expect_list(isa.OPS['selp'].types)}",
                             a if isinstance(a, ir.Register) else ty_reg(ty), loc)
        srcs = (self._src("selp", a, ty, loc, relaxed), self._src("selp", b, ty, loc, relaxed),
                self._pred_src("selp", p, loc))
        out = self._new(ty, loc)
        self._emit(_opcode("selp", st, ()), (out, *srcs), 1, loc, pred, "selp")
        return out

    # -- conversion and moves -----------------------------------------------------------

    def cvt(self, a, to, *, rnd: Optional[str] = None, sat: bool = False, ftz: bool = False,
            type=None, pred=None):
        """``cvt``: convert ``a`` to type ``to``.  Defaults follow C: float→int ``.rzi``,
        int→float and narrowing float→float ``.rn``; ``rnd`` may be any of rn/rz/rm/rp (float
        results) or rni/rzi/rmi/rpi (integer results, or rounding a float to an integral value
        of the same type); ``sat`` clamps to the destination range.

        Example: ``fi = kb.cvt(i, "f32")``
        """
        loc = caller_loc()
        to = T.as_type(to)
        if not isinstance(a, ir.Register):
            raise type_error("cvt", "a register source", a, loc)
        src = T.as_type(type) if type is not None else a.type
        if type is not None and not _fits_src(a.type, src):
            raise type_error("cvt", f"a source register of type {src.ptx}", a, loc)
        given = {"source": a if type is None else ty_reg(src, "type="),
                 "destination": ty_reg(to, "destination type")}
        for t, what in ((src, "source"), (to, "destination")):
            if t.is_pred or t.is_bits or t.is_packed:
                raise type_error("cvt", f"a numeric {what} type (.u8-.u64, .s8-.s64, .f16, .bf16, "
                                 f".f32, .f64); reinterpret bits with type=", given[what], loc)
        rnd = _cvt_rounding(src, to, rnd, loc)
        if sat and not _can_saturate(src, to):
            raise BuildError(f"cvt {src.ptx} -> {to.ptx}: .sat needs a conversion that can go out "
                             f"of range (every {src.ptx} value fits in {to.ptx}){_where(loc)}")
        if ftz and T.f32 not in (src, to):
            raise BuildError(f"cvt: .ftz needs an .f32 source or destination{_where(loc)}")
        out = self._new(to, loc)
        opcode = ".".join(["cvt", *(m for m in (rnd, "ftz" if ftz else "", "sat" if sat else "")
                                    if m), to.name, src.name])
        # forms no target accepts (isa.OPS["cvt"].forbids) raise here, naming the pair
        self._emit(opcode, (out, a), 1, loc, pred, f"cvt {src.ptx} -> {to.ptx}")
        return out

    def mov(self, a, *, type=None, pred=None):
        """``mov``: a fresh register holding ``a`` (register, number, special register or
        array).  Half-precision numbers are moved as exact bit patterns.

        Example: ``acc = kb.mov(0.0, type="f32")``
        """
        loc = caller_loc()
        if isinstance(a, ir.SpecialReg):
            ty = T.as_type(type) if type is not None else (a.type or T.u32)
            out = self._new(ty, loc)
            self._emit(_opcode("mov", ty, ()), (out, a), 1, loc, pred, "mov")
            return out
        ty, relaxed = self._infer("mov", (a,), type, loc)
        return self._mov_into(self._new(ty, loc), a, ty, relaxed, loc, pred, "mov")

    def assign(self, dst, src, *, pred=None):
        """In-place ``mov``: dst = src (an existing register). Example: ``kb.assign(acc, 0.0)``."""
        loc = caller_loc()
        if not isinstance(dst, ir.Register):
            raise type_error("assign", "a destination register", dst, loc)
        return self._mov_into(dst, src, dst.type, False, loc, pred, "assign")

    def _mov_into(self, out, a, ty, relaxed, loc, pred, op):
        """Emit ``mov`` of ``a`` into ``out`` (half-float numbers become bit patterns)."""
        st = isa.move_type(ty)
        number = isinstance(a, (int, float)) and not isinstance(a, bool)
        src: ir.Operand
        if number and ty.bits == 16 and ty.is_float:
            src = ir.Immediate(half_bits(a, ty, op, loc), T.b16)
        elif number and ty.is_packed:
            lane = half_bits(a, T.f16 if ty is T.f16x2 else T.bf16, op, loc, ty)
            src = ir.Immediate(lane | (lane << 16), T.b32)  # the same value in both halves
        elif isinstance(a, ir.Register) and a.type is ty:
            src = a  # same type: nothing to check or convert
        else:
            src = self._src(op, a, st if st is not ty and isinstance(a, ir.Register) and a.type is ty
                            else ty, loc, relaxed)
        self._emit(_opcode("mov", st, ()), (out, src), 1, loc, pred, op)
        return out

    def pack(self, parts, to, *, pred=None):
        """``mov.bN d, {a, b, ...}``: join equal-width registers (lowest first) into one.

        Example: ``q = kb.pack((lo, hi), "b128")``
        """
        loc = caller_loc()
        to = T.as_type(to)
        parts = tuple(parts)
        if not parts or not all(isinstance(p, ir.Register) for p in parts):
            raise type_error("pack", "a tuple of registers", parts, loc)
        width = parts[0].type.bits
        if any(p.type.bits != width for p in parts) or width * len(parts) != to.bits:
            raise type_error("pack", f"{to.bits // max(len(parts), 1)}-bit parts filling {to.ptx}",
                             parts[0], loc)
        out = self._new(to, loc)
        self._emit(_opcode("mov", isa.bits_type(to), ()), (out, ir.Vector(parts)), 1, loc, pred, "pack")
        return out

    def unpack(self, a, parts: int = 2, *, type=None, pred=None):
        """``mov.bN {d0, d1, ...}, a``: split a register into ``parts`` equal pieces.

        Example: ``lo, hi = kb.unpack(x64)``  (two .u32 registers)
        """
        loc = caller_loc()
        if not isinstance(a, ir.Register) or a.type.is_pred or a.type.bits % parts:
            raise type_error("unpack", f"a register divisible into {parts} parts", a, loc)
        bits = a.type.bits // parts
        ty = T.as_type(type) if type is not None else {8: T.u8, 16: T.u16, 32: T.u32, 64: T.u64}[bits]
        outs = tuple(self._new(ty, loc) for _ in range(parts))
        self._emit(_opcode("mov", isa.bits_type(a.type), ()), (ir.Vector(outs), a), 1, loc, pred,
                   "unpack")
        return outs


def _fits_src(reg_t: T.PtxType, ty: T.PtxType) -> bool:
    """A register may be reinterpreted as ``ty`` for cvt when widths match."""
    return reg_t.bits == ty.bits and not reg_t.is_pred


def _can_saturate(src: T.PtxType, to: T.PtxType) -> bool:
    """True unless ``to`` holds every value of the integer type ``src``."""
    if not (src.is_int and to.is_int):
        return True
    lo_s, hi_s = _irange(src)
    lo_d, hi_d = _irange(to)
    return lo_d > lo_s or hi_d < hi_s


def _irange(ty: T.PtxType) -> tuple:
    """Value range of an integer type."""
    if ty.is_signed:
        return -(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1
    return 0, (1 << ty.bits) - 1


def _cvt_rounding(src: T.PtxType, to: T.PtxType, rnd, loc):
    """Validate or default the rounding modifier of a cvt from ``src`` to ``to``."""
    need: tuple[str, ...]
    default: Optional[str]
    if src.is_float and to.is_int:
        need, default = isa.ROUNDING_INT, "rzi"
    elif src.is_int and to.is_float:
        need, default = isa.ROUNDING_FLOAT, "rn"
    elif src.is_float and to.is_float:
        if to.bits < src.bits:
            need, default = isa.ROUNDING_FLOAT, "rn"
        elif to is src:
            if rnd not in isa.ROUNDING_INT:
                raise BuildError(f"cvt {src.ptx} -> {to.ptx} needs an integer rounding "
                                 f"(rni/rzi/rmi/rpi){_where(loc)}")
            return rnd
        else:
            need, default = (), None
    else:
        need, default = (), None
    if rnd is None:
        return default
    if rnd not in need:
        valid = ", ".join(need) or "none"
        raise BuildError(f"cvt {src.ptx} -> {to.ptx}: rounding {rnd!r} is not valid; valid: "
                         f"{valid}{_where(loc)}")
    return rnd
