"""Parameters, arrays, loads and stores, atomics, barriers, warp-level ops, special registers
and device-function calls.

Pointers are 64-bit integer registers (32-bit for ``.shared`` arrays) that the builder tags
with their element type and state space when they come from ``load_param``, ``address_of``
or ``elem_ptr`` (and keeps through integer ``add``/``sub``), so ``ld``/``st`` infer both.
"""

from __future__ import annotations

from typing import Optional

from . import ir, isa
from . import types as T
from .builder_core import (
    Array,
    ParamRef,
    _expect_list,
    _register_internal,
    _where,
    caller_loc,
    ty_reg,
    type_error,
)
from .errors import BuildError

__all__ = ["MemoryOps", "SPECIAL_REGISTERS"]

_register_internal(__file__)

_SPACES = ("global", "shared", "local", "const", "param")
_AXES = ("x", "y", "z")

#: Special registers readable with ``kb.special(name)``, and their types.
SPECIAL_REGISTERS = {
    **{f"%{r}.{a}": T.u32 for r in ("tid", "ntid", "ctaid", "nctaid") for a in _AXES},
    "%laneid": T.u32, "%warpid": T.u32, "%nwarpid": T.u32, "%smid": T.u32, "%nsmid": T.u32,
    "%gridid": T.u64, "%clock": T.u32, "%clock64": T.u64, "%lanemask_eq": T.u32,
    "%lanemask_lt": T.u32, "%lanemask_le": T.u32, "%lanemask_gt": T.u32, "%lanemask_ge": T.u32,
}

_ATOM_TYPES = {
    "add": (T.u32, T.s32, T.u64, T.f32, T.f64, T.f16, T.f16x2, T.bf16, T.bf16x2),
    "min": (T.u32, T.s32, T.u64, T.s64), "max": (T.u32, T.s32, T.u64, T.s64),
    "inc": (T.u32,), "dec": (T.u32,),
    "exch": (T.b32, T.b64), "cas": (T.b32, T.b64),
    "and": (T.b32, T.b64), "or": (T.b32, T.b64), "xor": (T.b32, T.b64),
}


def _size(ty: T.PtxType) -> int:
    """Bytes per element."""
    return max(ty.bits // 8, 1)


class MemoryOps:
    """Mixin: parameters, memory, synchronisation, warp-level and special-register ops."""

    # -- parameters ---------------------------------------------------------------------

    def param(self, name: str, type) -> ParamRef:
        """Declare a scalar parameter. Example: ``n = kb.param("n", "u32")``."""
        loc = caller_loc()
        ty = T.as_type(type)
        if ty.is_pred:
            raise type_error("param", "a non-predicate parameter type", ty_reg(ty), loc)
        self._declare(name, "parameter", loc)
        self._params.append(ir.Param(name, isa.param_type(ty, entry=self.is_entry)))
        self._param_types[name] = ty
        return ParamRef(name, ty)

    def param_ptr(self, name: str, elem, space: str = "global") -> ParamRef:
        """Declare a pointer parameter to ``elem`` values in ``space`` ("global" or "generic").

        Example: ``x = kb.param_ptr("x", "f32")``
        """
        loc = caller_loc()
        elem = T.as_type(elem)
        if space not in ("global", "generic"):
            raise BuildError(f"param_ptr: space must be 'global' or 'generic', got {space!r}"
                             f"{_where(loc)}")
        self._declare(name, "parameter", loc)
        state = "global" if space == "global" else None
        self._params.append(ir.Param(name, T.u64, pointer=True, state_space=state,
                                     ptr_align=_size(elem) if state else None))
        return ParamRef(name, T.u64, elem, space)

    def _param_ref(self, p) -> ParamRef:
        """Resolve a parameter given by name or ParamRef."""
        if isinstance(p, ParamRef):
            return p
        for decl in self._params:
            if decl.name == p:
                return ParamRef(decl.name, self._param_types.get(decl.name, decl.type))
        raise BuildError(f"no parameter named {p!r} in {self.name}{_where(caller_loc())}")

    def load_param(self, p) -> ir.Register:
        """``ld.param`` a parameter into a register; pointers are converted with
        ``cvta.to.global`` and tagged with their element type.

        Example: ``x = kb.load_param(kb.param_ptr("x", "f32"))``
        """
        loc = caller_loc()
        ref = self._param_ref(p)
        st = isa.storage_type(ref.type)
        raw = self._new(ref.type, loc)
        self._emit(f"ld.param{st.ptx}", (raw, ir.Address(ir.Symbol(ref.name))), 1, loc,
                   op="load_param")
        if not ref.is_pointer:
            return raw
        if ref.space == "global":
            out = self._new(T.u64, loc)
            self._emit("cvta.to.global.u64", (out, raw), 1, loc, op="load_param")
            return self._tag(out, ref.elem, "global")
        return self._tag(raw, ref.elem, "")

    def set_return(self, name: str, value) -> None:
        """In a ``.func``: store ``value`` into return parameter ``name`` (``st.param``)."""
        loc = caller_loc()
        for r in self._returns:
            if r.name == name:
                src = self._src("set_return", value, r.type, loc)
                if not isinstance(src, ir.Register):
                    src = self.mov(value, type=r.type)
                self._emit(f"st.param{isa.storage_type(r.type).ptx}",
                           (ir.Address(ir.Symbol(name)), src), 0, loc, op="set_return")
                return
        raise BuildError(f"set_return: {self.name} has no return value named {name!r}{_where(loc)}")

    # -- arrays and addresses -----------------------------------------------------------

    def _array(self, space, name, type, count, align, init=None) -> Array:
        """Declare an array variable in ``space``."""
        loc = caller_loc()
        ty = T.as_type(type)
        if not isinstance(count, int) or count < 1:
            raise BuildError(f"{space} array {name!r}: count must be a positive int{_where(loc)}")
        align = align or _size(ty)
        if align & (align - 1) or align < _size(ty):
            raise BuildError(f"{space} array {name!r}: align must be a power of two >= "
                             f"{_size(ty)}, got {align}{_where(loc)}")
        self._declare(name, f"{space} array", loc)
        self._arrays[name] = Array(name, ty, count, space, align)
        decl = ir.VarDecl(space, isa.storage_type(ty), name, align, (count,), init)
        (self._globals if space == "const" else self._decls).append(decl)
        return self._arrays[name]

    def shared_array(self, name: str, type, count: int, *, align: Optional[int] = None) -> Array:
        """Declare ``.shared .align A .type name[count]``. Example:
        ``tile = kb.shared_array("tile", "f32", 256, align=16)``"""
        return self._array("shared", name, type, count, align)

    def local_array(self, name: str, type, count: int, *, align: Optional[int] = None) -> Array:
        """Declare a per-thread ``.local`` array. Example: ``buf = kb.local_array("buf", "u32", 8)``."""
        return self._array("local", name, type, count, align)

    def const_array(self, name: str, type, values, *, align: Optional[int] = None) -> Array:
        """Declare a module-level ``.const`` array initialised with integer ``values``.

        Example: ``lut = kb.const_array("lut", "u32", [1, 2, 4, 8])``
        """
        ty = T.as_type(type)
        loc = caller_loc()
        values = list(values)
        if not ty.is_int and not ty.is_bits:
            raise type_error("const_array", "an integer element type", ty_reg(ty), loc)
        from .builder_core import make_immediate

        init = "{" + ", ".join(str(make_immediate(v, ty, "const_array", loc).value) for v in values) + "}"
        return self._array("const", name, ty, len(values), align, init)

    def address_of(self, arr: Array) -> ir.Register:
        """The address of an array in its space (u32 for shared, u64 otherwise), as a tagged
        pointer. Example: ``base = kb.address_of(tile)``"""
        loc = caller_loc()
        if not isinstance(arr, Array):
            raise type_error("address_of", "an Array from shared_array/local_array/const_array",
                             arr, loc)
        ty = T.u32 if arr.space == "shared" else T.u64
        out = self._new(ty, loc)
        self._emit(f"mov{ty.ptx}", (out, ir.Symbol(arr.name)), 1, loc, op="address_of")
        return self._tag(out, arr.type, arr.space)

    def elem_ptr(self, base, index, *, elem=None) -> ir.Register:
        """Pointer to element ``index`` of ``base`` (a pointer register or an Array):
        ``base + index * sizeof(elem)``, with ``mul.wide`` for 32-bit indices.

        Example: ``p = kb.elem_ptr(x, i); v = kb.ld(p)``
        """
        loc = caller_loc()
        if isinstance(base, Array):
            base = self.address_of(base)
        self._check_pointer("elem_ptr", base, loc)
        tag = self.pointee(base)
        ety = T.as_type(elem) if elem is not None else (tag[0] if tag else None)
        if ety is None:
            raise type_error("elem_ptr", "a pointer with a known element type, or elem=", base, loc)
        size, space = _size(ety), (tag[1] if tag else "")
        if isinstance(index, int) and not isinstance(index, bool):
            out = self._new(base.type, loc)
            self._emit(f"add{_signed(base.type).ptx}",
                       (out, base, self._src("elem_ptr", index * size, _signed(base.type), loc)),
                       1, loc, op="elem_ptr")
            return self._tag(out, ety, space)
        if not isinstance(index, ir.Register) or not index.type.is_int:
            raise type_error("elem_ptr", "an integer index register or int", index, loc)
        if base.type.bits == 64 and index.type.bits == 32:
            off = self._new(_signed(base.type) if index.type.is_signed else T.u64, loc)
            self._emit(f"mul.wide{index.type.ptx}", (off, index, ir.Immediate(size, index.type)),
                       1, loc, op="elem_ptr")
            out = self._new(base.type, loc)
            self._emit("add.s64", (out, base, off), 1, loc, op="elem_ptr")
        elif index.type.bits == base.type.bits:
            out = self._new(base.type, loc)
            self._emit(f"mad.lo{index.type.ptx}", (out, index, ir.Immediate(size, index.type), base),
                       1, loc, op="elem_ptr")
        else:
            raise type_error("elem_ptr", f"a {base.type.bits}-bit or 32-bit index", index, loc)
        return self._tag(out, ety, space)

    def _check_pointer(self, op: str, reg, loc) -> None:
        """A pointer must be a 64-bit integer register (or a 32-bit shared/local address)."""
        ok = isinstance(reg, ir.Register) and (reg.type.is_int or reg.type.is_bits) and (
            reg.type.bits == 64 or (reg.type.bits == 32 and (self.pointee(reg) or ("", ""))[1]
                                    in ("shared", "local")))
        if not ok:
            raise type_error(op, "a pointer (a .u64 address register, or a .u32 shared "
                             "address from address_of/elem_ptr)", reg, loc)

    def _resolve_address(self, op, addr, type, space, offset, loc):
        """(ir.Address, element type, space) for a load/store/atomic target."""
        if isinstance(addr, Array):
            a = ir.Address(ir.Symbol(addr.name), offset)
            return a, T.as_type(type) if type is not None else addr.type, space or addr.space
        if isinstance(addr, ParamRef):
            return ir.Address(ir.Symbol(addr.name), offset), T.as_type(type or addr.type), "param"
        if isinstance(addr, ir.Address):
            base, offset = addr.base, addr.offset + offset
            arr = self._arrays.get(base.name) if isinstance(base, ir.Symbol) else None
            if arr is not None:
                ety = T.as_type(type) if type is not None else arr.type
                return ir.Address(base, offset), ety, space or arr.space
            if isinstance(base, ir.Symbol) or base is None:
                if type is None:
                    raise type_error(op, "type= for a symbol address", addr, loc)
                return ir.Address(base, offset), T.as_type(type), space or ""
            addr = base
        self._check_pointer(op, addr, loc)
        tag = self.pointee(addr)
        ety = T.as_type(type) if type is not None else (tag[0] if tag else None)
        if ety is None:
            raise type_error(op, "a pointer with a known element type, or type=", addr, loc)
        sp = space if space is not None else (tag[1] if tag else "")
        return ir.Address(addr, offset), ety, sp

    # -- loads and stores ---------------------------------------------------------------

    def ld(self, addr, *, type=None, space: Optional[str] = None, offset: int = 0, vec: int = 1,
           volatile: bool = False, nc: bool = False, pred=None):
        """``ld[.space][.vN].type``: load through a pointer register, ``ir.Address``, Array or
        ParamRef (``offset`` bytes further).  Returns a register (a tuple for ``vec=2/4``).

        Example: ``v = kb.ld(kb.elem_ptr(x, i))``;  ``a, b = kb.ld(p, vec=2)``
        """
        loc = caller_loc()
        address, ety, sp = self._resolve_address("ld", addr, type, space, offset, loc)
        if sp and sp not in _SPACES:
            raise BuildError(f"ld: unknown state space {sp!r}{_where(loc)}")
        if vec not in (1, 2, 4):
            raise BuildError(f"ld: vec must be 1, 2 or 4, got {vec}{_where(loc)}")
        if not isa.OPS["ld"].allows(ety):
            raise type_error("ld", f"a loadable type ({_expect_list(isa.OPS['ld'].types)})",
                             ty_reg(ety), loc)
        if vec * ety.bits > 128:
            raise BuildError(f"ld: .v{vec} of {ety.ptx} is wider than 128 bits{_where(loc)}")
        mods = ["volatile" if volatile else "", sp, "nc" if nc else "",
                f"v{vec}" if vec > 1 else ""]
        if nc and sp != "global":
            raise BuildError(f"ld: .nc needs the global space{_where(loc)}")
        outs = tuple(self._new(ety, loc) for _ in range(vec))
        dest = outs[0] if vec == 1 else ir.Vector(outs)
        opcode = ".".join(["ld", *(m for m in mods if m), isa.storage_type(ety).name])
        self._emit(opcode, (dest, address), 1, loc, pred, "ld")
        return outs[0] if vec == 1 else outs

    def st(self, addr, value, *, type=None, space: Optional[str] = None, offset: int = 0,
           volatile: bool = False, pred=None) -> None:
        """``st[.space][.vN].type``: store a register, number, or tuple of 2/4 registers
        through a pointer register, ``ir.Address`` or Array.

        Example: ``kb.st(kb.elem_ptr(y, i), v)``
        """
        loc = caller_loc()
        values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        if type is None and not isinstance(addr, Array):
            tag = self.pointee(addr) if isinstance(addr, ir.Register) else None
            if tag is None:
                first = next((v for v in values if isinstance(v, ir.Register)), None)
                type = first.type if first is not None else None
        address, ety, sp = self._resolve_address("st", addr, type, space, offset, loc)
        if sp in ("const",):
            raise BuildError(f"st: the {sp} space is read-only{_where(loc)}")
        if len(values) not in (1, 2, 4):
            raise BuildError(f"st: store 1, 2 or 4 values, got {len(values)}{_where(loc)}")
        srcs = []
        for v in values:
            if isinstance(v, ir.Register):
                if v.type is not ety and not (v.type.bits == ety.bits and not v.type.is_float
                                              and not ety.is_float and not v.type.is_pred):
                    raise type_error("st", f"a value of type {ety.ptx} (the element type)", v, loc)
                srcs.append(v)
            else:
                srcs.append(self.mov(v, type=ety))
        if len(srcs) * ety.bits > 128:
            raise BuildError(f"st: .v{len(srcs)} of {ety.ptx} is wider than 128 bits{_where(loc)}")
        mods = ["volatile" if volatile else "", sp, f"v{len(srcs)}" if len(srcs) > 1 else ""]
        opcode = ".".join(["st", *(m for m in mods if m), isa.storage_type(ety).name])
        src = srcs[0] if len(srcs) == 1 else ir.Vector(tuple(srcs))
        self._emit(opcode, (address, src), 0, loc, pred, "st")

    def cvta(self, ptr, space: str, *, to_generic: bool = False, pred=None) -> ir.Register:
        """``cvta.to.space`` (generic → space; default) or ``cvta.space`` (space → generic).

        Example: ``g = kb.cvta(raw, "global")``
        """
        loc = caller_loc()
        if space not in ("global", "shared", "local", "const", "param"):
            raise BuildError(f"cvta: unknown space {space!r}{_where(loc)}")
        if not isinstance(ptr, ir.Register) or ptr.type not in (T.u32, T.u64, T.b64, T.s64):
            raise type_error("cvta", "a .u32 or .u64 address register", ptr, loc)
        if to_generic and ptr.type.bits == 32:
            wide = self._new(T.u64, loc)
            self._emit("cvt.u64.u32", (wide, ptr), 1, loc, op="cvta")
            tag = self.pointee(ptr)
            ptr = self._tag(wide, *(tag or (None, "")))
        size = T.u64 if ptr.type.bits == 64 else T.u32
        out = self._new(size, loc)
        opcode = f"cvta.{space}{size.ptx}" if to_generic else f"cvta.to.{space}{size.ptx}"
        self._emit(opcode, (out, ptr), 1, loc, pred, "cvta")
        tag = self.pointee(ptr)
        return self._tag(out, tag[0] if tag else None, "" if to_generic else space)

    # -- atomics ------------------------------------------------------------------------

    def _atomic(self, family, op, addr, value, compare, type, space, offset, sem, scope, pred):
        """Shared checking for atom/red; returns (opcode, operands-after-dest, value type)."""
        loc = caller_loc()
        if op not in _ATOM_TYPES or (family == "red" and op in ("exch", "cas")):
            valid = [k for k in _ATOM_TYPES if family == "atom" or k not in ("exch", "cas")]
            raise BuildError(f"{family}: unknown operation {op!r}; valid: {', '.join(valid)}"
                             f"{_where(loc)}")
        if type is None and isinstance(value, ir.Register):
            type = value.type
        address, ety, sp = self._resolve_address(family, addr, type, space, offset, loc)
        if sp not in ("global", "shared", ""):
            raise BuildError(f"{family}: atomics work on global or shared memory, not {sp!r}"
                             f"{_where(loc)}")
        opty = isa.bits_type(ety) if op in ("exch", "cas", "and", "or", "xor") else ety
        if opty not in _ATOM_TYPES[op] or (op in ("and", "or", "xor") and ety.is_float):
            raise type_error(f"{family}.{op}", f"a value of type {_expect_list(_ATOM_TYPES[op])}",
                             value if isinstance(value, ir.Register) else ty_reg(ety), loc)
        srcs = []
        if op == "cas":
            if compare is None:
                raise BuildError(f"atom.cas needs compare=...{_where(loc)}")
            srcs.append(self._src(f"{family}.{op}", compare, opty, loc))
        srcs.append(self._src(f"{family}.{op}", value, opty, loc))
        noftz = "noftz" if op == "add" and ety.bits <= 32 and ety.is_float and ety is not T.f32 else ""
        opcode = ".".join(m for m in (family, sem, scope, sp, op, noftz, opty.name) if m)
        return opcode, address, srcs, ety, loc

    def atom(self, op: str, addr, value, *, compare=None, type=None, space=None, offset=0,
             sem: Optional[str] = None, scope: Optional[str] = None, pred=None) -> ir.Register:
        """``atom.space.op.type``: atomically update ``*addr`` and return the old value.
        ``op`` is add, min, max, inc, dec, exch, cas (``compare=``), and, or, xor.

        Example: ``old = kb.atom("add", counter_ptr, 1)``
        """
        opcode, address, srcs, ety, loc = self._atomic("atom", op, addr, value, compare, type,
                                                       space, offset, sem, scope, pred)
        out = self._new(ety, loc)
        self._emit(opcode, (out, address, *srcs), 1, loc, pred, "atom")
        return out

    def red(self, op: str, addr, value, *, type=None, space=None, offset=0,
            sem: Optional[str] = None, scope: Optional[str] = None, pred=None) -> None:
        """``red.space.op.type``: atomic update with no result. Example:
        ``kb.red("add", kb.elem_ptr(out, 0), partial)``"""
        opcode, address, srcs, _, loc = self._atomic("red", op, addr, value, None, type, space,
                                                     offset, sem, scope, pred)
        self._emit(opcode, (address, *srcs), 0, loc, pred, "red")

    # -- synchronisation ----------------------------------------------------------------

    def bar_sync(self, barrier: int = 0, count: Optional[int] = None, *, pred=None) -> None:
        """``bar.sync id[, count]``: block-wide barrier. Example: ``kb.bar_sync()``."""
        loc = caller_loc()
        ops = [self._src("bar_sync", barrier, T.u32, loc)]
        if count is not None:
            ops.append(self._src("bar_sync", count, T.u32, loc))
        self._emit("bar.sync", tuple(ops), 0, loc, pred, "bar_sync")

    def membar(self, level: str = "gl", *, pred=None) -> None:
        """``membar.cta|gl|sys``: memory barrier. Example: ``kb.membar("cta")``."""
        loc = caller_loc()
        if level not in ("cta", "gl", "sys"):
            raise BuildError(f"membar: level must be cta, gl or sys, got {level!r}{_where(loc)}")
        self._emit(f"membar.{level}", (), 0, loc, pred, "membar")

    def fence(self, sem: str = "acq_rel", scope: str = "gpu", *, pred=None) -> None:
        """``fence.sem.scope`` (sm_70+). Example: ``kb.fence("sc", "sys")``."""
        loc = caller_loc()
        if sem not in ("sc", "acq_rel") or scope not in ("cta", "gpu", "sys"):
            raise BuildError(f"fence: sem must be sc/acq_rel and scope cta/gpu/sys, got "
                             f"{sem!r}, {scope!r}{_where(loc)}")
        self._emit(f"fence.{sem}.{scope}", (), 0, loc, pred, "fence")

    # -- warp level ---------------------------------------------------------------------

    def shfl_sync(self, mode: str, a, b, c, mask=0xFFFFFFFF, *, with_pred: bool = False,
                  pred=None):
        """``shfl.sync.mode.b32 d[|p], a, b, c, mask`` for a 32-bit value ``a``; returns d
        (or ``(d, p)`` with ``with_pred=True``).  See shfl_down/up/bfly/idx for the common
        forms. Example: ``y = kb.shfl_sync("bfly", x, 16, 31)``"""
        loc = caller_loc()
        if mode not in ("up", "down", "bfly", "idx"):
            raise BuildError(f"shfl_sync: mode must be up, down, bfly or idx, got {mode!r}{_where(loc)}")
        if not isinstance(a, ir.Register) or a.type.bits != 32 or a.type.is_pred:
            raise type_error("shfl_sync", "a 32-bit register (.b32/.u32/.s32/.f32)", a, loc)
        ops = (a, self._src("shfl_sync", b, T.u32, loc, True), self._src("shfl_sync", c, T.u32, loc, True),
               self._src("shfl_sync", mask, T.b32, loc, True))
        out = self._new(a.type, loc)
        dest = out
        p = None
        if with_pred:
            p = self._new(T.pred, loc)
            dest = ir.Vector((out, p), "pipe")
        self._emit(f"shfl.sync.{mode}.b32", (dest, *ops), 1, loc, pred, "shfl_sync")
        return (out, p) if with_pred else out

    def shfl_down(self, a, delta, *, width: int = 32, mask=0xFFFFFFFF, pred=None):
        """Value from lane ``laneid + delta`` (CUDA ``__shfl_down_sync``)."""
        return self.shfl_sync("down", a, delta, ((32 - width) << 8) | 0x1F, mask, pred=pred)

    def shfl_up(self, a, delta, *, width: int = 32, mask=0xFFFFFFFF, pred=None):
        """Value from lane ``laneid - delta`` (CUDA ``__shfl_up_sync``)."""
        return self.shfl_sync("up", a, delta, (32 - width) << 8, mask, pred=pred)

    def shfl_bfly(self, a, lane_mask, *, width: int = 32, mask=0xFFFFFFFF, pred=None):
        """Value from lane ``laneid ^ lane_mask`` (CUDA ``__shfl_xor_sync``)."""
        return self.shfl_sync("bfly", a, lane_mask, ((32 - width) << 8) | 0x1F, mask, pred=pred)

    def shfl_idx(self, a, lane, *, width: int = 32, mask=0xFFFFFFFF, pred=None):
        """Value from lane ``lane`` (CUDA ``__shfl_sync``)."""
        return self.shfl_sync("idx", a, lane, ((32 - width) << 8) | 0x1F, mask, pred=pred)

    def vote_sync(self, mode: str, p, mask=0xFFFFFFFF, *, pred=None):
        """``vote.sync.all|any|uni.pred`` (returns a predicate) or ``vote.sync.ballot.b32``
        (returns a .u32 lane mask). Example: ``everyone = kb.vote_sync("all", ok)``"""
        loc = caller_loc()
        if mode not in ("all", "any", "uni", "ballot"):
            raise BuildError(f"vote_sync: mode must be all, any, uni or ballot, got {mode!r}"
                             f"{_where(loc)}")
        src = self._pred_src("vote_sync", p, loc)
        out = self._new(T.u32 if mode == "ballot" else T.pred, loc)
        suffix = "b32" if mode == "ballot" else "pred"
        self._emit(f"vote.sync.{mode}.{suffix}", (out, src, self._src("vote_sync", mask, T.b32, loc, True)),
                   1, loc, pred, "vote_sync")
        return out

    def activemask(self, *, pred=None) -> ir.Register:
        """``activemask.b32``: the mask of active lanes (.u32). Example: ``m = kb.activemask()``."""
        loc = caller_loc()
        out = self._new(T.u32, loc)
        self._emit("activemask.b32", (out,), 1, loc, pred, "activemask")
        return out

    def redux_sync(self, op: str, a, mask=0xFFFFFFFF, *, pred=None) -> ir.Register:
        """``redux.sync.op.type`` (sm_80+): warp-wide add/min/max (u32/s32) or and/or/xor.

        Example: ``total = kb.redux_sync("add", x)``
        """
        loc = caller_loc()
        if op not in ("add", "min", "max", "and", "or", "xor"):
            raise BuildError(f"redux_sync: unknown op {op!r}{_where(loc)}")
        if not isinstance(a, ir.Register) or a.type not in (T.u32, T.s32, T.b32):
            raise type_error("redux_sync", "a .u32 or .s32 register", a, loc)
        ty = T.b32 if op in ("and", "or", "xor") else (T.u32 if a.type is T.b32 else a.type)
        out = self._new(a.type, loc)
        self._emit(f"redux.sync.{op}{ty.ptx}", (out, a, self._src("redux_sync", mask, T.b32, loc, True)),
                   1, loc, pred, "redux_sync")
        return out

    # -- special registers --------------------------------------------------------------

    def special(self, name: str) -> ir.Register:
        """Read a special register (``"%tid.x"``, ``"%clock64"``) into a fresh register."""
        loc = caller_loc()
        ty = SPECIAL_REGISTERS.get(name)
        if ty is None:
            raise BuildError(f"unknown special register {name!r}; known: "
                             f"{', '.join(SPECIAL_REGISTERS)}{_where(loc)}")
        out = self._new(ty, loc)
        self._emit(f"mov{ty.ptx}", (out, ir.SpecialReg(name, ty)), 1, loc, op="special")
        return out

    def tid(self, axis: str = "x") -> ir.Register:
        """``%tid.axis``: thread index in the block. Example: ``t = kb.tid()``."""
        return self.special(f"%tid.{_axis(axis)}")

    def ntid(self, axis: str = "x") -> ir.Register:
        """``%ntid.axis``: block size."""
        return self.special(f"%ntid.{_axis(axis)}")

    def ctaid(self, axis: str = "x") -> ir.Register:
        """``%ctaid.axis``: block index in the grid."""
        return self.special(f"%ctaid.{_axis(axis)}")

    def nctaid(self, axis: str = "x") -> ir.Register:
        """``%nctaid.axis``: grid size in blocks."""
        return self.special(f"%nctaid.{_axis(axis)}")

    def laneid(self) -> ir.Register:
        """``%laneid``: lane in the warp (0-31)."""
        return self.special("%laneid")

    def warpid(self) -> ir.Register:
        """``%warpid``: the warp's slot on its SM (not its index in the block)."""
        return self.special("%warpid")

    def smid(self) -> ir.Register:
        """``%smid``: the SM the thread runs on."""
        return self.special("%smid")

    def clock(self) -> ir.Register:
        """``%clock``: 32-bit cycle counter."""
        return self.special("%clock")

    def clock64(self) -> ir.Register:
        """``%clock64``: 64-bit cycle counter (.u64)."""
        return self.special("%clock64")

    def global_id(self, axis: str = "x") -> ir.Register:
        """``ctaid * ntid + tid`` along ``axis`` (.u32): the global thread index.

        Example: ``i = kb.global_id()``
        """
        return self.mad(self.ctaid(axis), self.ntid(axis), self.tid(axis))

    # -- device functions ---------------------------------------------------------------

    def call(self, func, *args, uni: bool = True):
        """Call a ``.func`` made by ``ModuleBuilder.func``: returns None, one register, or a
        tuple for several return values. Example: ``r = kb.call(square, x)``"""
        loc = caller_loc()
        if getattr(func, "is_entry", True) or not hasattr(func, "_returns"):
            raise type_error("call", "a device function from ModuleBuilder.func", func, loc)
        if func._module is None or func._module is not self._module:
            raise BuildError(f"call: {func.name} belongs to another module{_where(loc)}")
        if len(args) != len(func._params):
            raise BuildError(f"call {func.name}: expected {len(func._params)} argument(s), got "
                             f"{len(args)}{_where(loc)}")
        self._body.append(ir.Scope(True))
        names = []
        for k, (p, a) in enumerate(zip(func._params, args)):
            name = f"param{k}"
            pty = func._param_types.get(p.name, p.type)
            self._body.append(ir.VarDecl("param", p.type, name))
            src = self._src(f"call {func.name}", a, pty, loc)
            if not isinstance(src, ir.Register):
                src = self.mov(a, type=pty)
            self._emit(f"st.param{p.type.ptx}",
                       (ir.Address(ir.Symbol(name)), src), 0, loc, op="call")
            names.append(ir.Symbol(name))
        rets = []
        for k, r in enumerate(func._returns):
            self._body.append(ir.VarDecl("param", isa.param_type(r.type, entry=False), f"retval{k}"))
            rets.append(ir.Symbol(f"retval{k}"))
        ops = []
        if rets:
            ops.append(ir.Vector(tuple(rets), "paren"))
        ops.append(ir.Symbol(func.name))
        if names:
            ops.append(ir.Vector(tuple(names), "paren"))
        self._emit("call.uni" if uni else "call", tuple(ops), 0, loc, op="call")
        outs = []
        for r, sym in zip(func._returns, rets):
            out = self._new(r.type, loc)
            self._emit(f"ld.param{isa.storage_type(r.type).ptx}", (out, ir.Address(sym)), 1, loc,
                       op="call")
            outs.append(out)
        self._body.append(ir.Scope(False))
        if func not in self._callees:
            self._callees.append(func)
        return None if not outs else outs[0] if len(outs) == 1 else tuple(outs)


def _axis(axis: str) -> str:
    """Validate a special-register axis."""
    if axis not in _AXES:
        raise BuildError(f"axis must be 'x', 'y' or 'z', got {axis!r}{_where(caller_loc())}")
    return axis


def _signed(ty: T.PtxType) -> T.PtxType:
    """The signed type of the same width (pointer arithmetic adds signed offsets)."""
    return T.s64 if ty.bits == 64 else T.s32
