"""Parameters, arrays, loads and stores, atomics, barriers and device-function calls.

Pointers are 64-bit integer registers (32-bit for ``.shared`` arrays) that the builder tags
with their element type and state space when they come from ``load_param``, ``address_of``
or ``elem_ptr`` (and keeps through integer ``add``/``sub``), so ``ld``/``st`` infer both.
"""

from __future__ import annotations

from typing import Optional

from ptxforge.errors import BuildError
from ptxforge.ptx import ir, isa
from ptxforge.ptx import types as T
from ptxforge.ptx.emit import format_immediate
from ptxforge.ptx.layout import element_size

from .arith import ArithOps
from .checks import _expect_list, check_vector_alignment, half_bits, make_immediate
from .core import Array, ParamRef, _register_internal, _where, caller_loc, ty_reg, type_error

__all__ = ["MemoryOps"]

_register_internal(__file__)

_SPACES = ("global", "shared", "local", "const", "param")

_ATOM_TYPES = {
    "add": (T.u32, T.s32, T.u64, T.f32, T.f64, T.f16, T.f16x2, T.bf16, T.bf16x2),
    "min": (T.u32, T.s32, T.u64, T.s64), "max": (T.u32, T.s32, T.u64, T.s64),
    "inc": (T.u32,), "dec": (T.u32,),
    "exch": (T.b32, T.b64), "cas": (T.b32, T.b64),
    "and": (T.b32, T.b64), "or": (T.b32, T.b64), "xor": (T.b32, T.b64),
}



#: The memory-ordering words of atom/red (PTX ISA 9.7.13.5): semantics, then scope.
_SEMANTICS = {"atom": ("relaxed", "acquire", "release", "acq_rel"), "red": ("relaxed", "release")}
_SCOPES = ("cta", "gpu", "sys")


def _memory_order(family: str, order: Optional[str], loc) -> tuple:
    """``(sem, scope)`` (either None) from an ``order=`` such as ``"relaxed.gpu"`` or ``"cta"``."""
    if order is None:
        return None, None
    words = order.split(".") if isinstance(order, str) else [order]
    sem = words[0] if words[0] in _SEMANTICS[family] else None
    rest = words[1:] if sem is not None else words
    scope = rest[0] if len(rest) == 1 and rest[0] in _SCOPES else None
    if len(rest) != (scope is not None):
        raise BuildError(f"{family}: order must be a semantics ({', '.join(_SEMANTICS[family])}), "
                         f"a scope ({', '.join(_SCOPES)}) or 'sem.scope', got {order!r}"
                         f"{_where(loc)}")
    return sem, scope


class MemoryOps(ArithOps):
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
        return ParamRef(name=name, type=ty)

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
                                     ptr_align=element_size(elem) if state else None))
        return ParamRef(name=name, type=T.u64, elem=elem, space=space)

    def _param_ref(self, p) -> ParamRef:
        """Resolve a parameter given by name or ParamRef."""
        if isinstance(p, ParamRef):
            return p
        for decl in self._params:
            if decl.name == p:
                return ParamRef(name=decl.name, type=self._param_types.get(decl.name, decl.type))
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
        align = align or element_size(ty)
        if align & (align - 1) or align < element_size(ty):
            raise BuildError(f"{space} array {name!r}: align must be a power of two >= "
                             f"{element_size(ty)}, got {align}{_where(loc)}")
        self._declare(name, f"{space} array", loc)
        self._arrays[name] = Array(name=name, type=ty, count=count, space=space, align=align)
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
        """Declare a module-level ``.const`` array initialised with ``values``: integers, or
        numbers for a float type (emitted exactly: ``0f3F800000``; f16/bf16 as bit patterns).

        Example: ``lut = kb.const_array("lut", "u32", [1, 2, 4, 8])``
        """
        ty = T.as_type(type)
        loc = caller_loc()
        values = list(values)
        if ty.is_pred or ty.is_packed:
            raise type_error("const_array", "an integer or scalar float element type",
                             ty_reg(ty), loc)
        if ty.bits == 16 and ty.is_float:
            words = [str(half_bits(_number(v, ty, loc), ty, "const_array", loc)) for v in values]
        else:
            words = [format_immediate(make_immediate(v, ty, "const_array", loc)) for v in values]
        return self._array("const", name, ty, len(values), align, "{" + ", ".join(words) + "}")

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
        size, space = element_size(ety), (tag[1] if tag else "")
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
        elem = T.as_type(type) if type is not None else (tag[0] if tag else None)
        if elem is None:
            raise type_error(op, "a pointer with a known element type, or type=", addr, loc)
        sp = space if space is not None else (tag[1] if tag else "")
        return ir.Address(addr, offset), elem, sp

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
        self._check_vector("ld", vec, ety, address, loc)
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
        if sp == "const":
            raise BuildError(f"st: the {sp} space is read-only{_where(loc)}")
        if sp == "param":
            raise BuildError(f"st: parameters are read-only (ptxas: illegal to write to a function "
                             f"input parameter); load it and work on the register, or return "
                             f"values from a .func with set_return{_where(loc)}")
        if len(values) not in (1, 2, 4):
            raise BuildError(f"st: store 1, 2 or 4 values, got {len(values)}{_where(loc)}")
        self._check_vector("st", len(values), ety, address, loc)
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

    def _check_vector(self, op: str, vec: int, ety: T.PtxType, address: ir.Address, loc) -> None:
        """A .vN access must be N*size aligned: the array the builder declared, and the offset."""
        base = address.base
        arr = self._arrays.get(base.name) if isinstance(base, ir.Symbol) else None
        check_vector_alignment(op, vec, ety, address.offset, arr, loc)

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

    def _atomic(self, family, op, addr, value, type, space, offset, order, pred):
        """Shared checking for atom/red; returns (opcode, operands-after-dest, value type)."""
        loc = caller_loc()
        sem, scope = _memory_order(family, order, loc)
        compare = None
        if op == "cas":
            if not (isinstance(value, tuple) and len(value) == 2):
                raise BuildError(f"atom.cas takes value=(compare, new), got {value!r}{_where(loc)}")
            compare, value = value
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
            srcs.append(self._src(f"{family}.{op}", compare, opty, loc))
        srcs.append(self._src(f"{family}.{op}", value, opty, loc))
        noftz = "noftz" if op == "add" and ety.bits <= 32 and ety.is_float and ety is not T.f32 else ""
        opcode = ".".join(m for m in (family, sem, scope, sp, op, noftz, opty.name) if m)
        return opcode, address, srcs, ety, loc

    def atom(self, op: str, addr, value, *, type=None, space=None, offset=0,
             order: Optional[str] = None, pred=None) -> ir.Register:
        """``atom[.sem][.scope].space.op.type``: atomically update ``*addr`` and return the old
        value.  ``op`` is add, min, max, inc, dec, exch, cas (``value=(compare, new)``), and,
        or, xor; ``order`` is the memory ordering, a semantics (relaxed, acquire, release,
        acq_rel), a scope (cta, gpu, sys) or both (``"relaxed.gpu"``).

        Example: ``old = kb.atom("add", counter_ptr, 1)``
        """
        opcode, address, srcs, ety, loc = self._atomic("atom", op, addr, value, type, space,
                                                       offset, order, pred)
        out = self._new(ety, loc)
        self._emit(opcode, (out, address, *srcs), 1, loc, pred, "atom")
        return out

    def red(self, op: str, addr, value, *, type=None, space=None, offset=0,
            order: Optional[str] = None, pred=None) -> None:
        """``red[.sem][.scope].space.op.type``: atomic update with no result (``order`` as in
        :meth:`atom`). Example: ``kb.red("add", kb.elem_ptr(out, 0), partial)``"""
        opcode, address, srcs, _, loc = self._atomic("red", op, addr, value, type, space,
                                                     offset, order, pred)
        self._emit(opcode, (address, *srcs), 0, loc, pred, "red")

    # -- synchronisation ----------------------------------------------------------------

    def bar_sync(self, barrier: int = 0, count: Optional[int] = None, *, pred=None) -> None:
        """``bar.sync id[, count]``: block-wide barrier. Example: ``kb.bar_sync()``."""
        loc = caller_loc()
        if not isinstance(barrier, ir.Register) and not (
                isinstance(barrier, int) and not isinstance(barrier, bool) and 0 <= barrier <= 15):
            raise BuildError(f"bar_sync: barrier id must be 0..15 (or a .u32 register), got "
                             f"{barrier!r}{_where(loc)}")
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
        ops: list[ir.Operand] = []
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


def _number(value, ty: T.PtxType, loc):
    """A Python number for a float element (bools and other objects raise PtxTypeError)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise type_error("const_array", f"a number for a {ty.ptx} element", value, loc)
    return value


def _signed(ty: T.PtxType) -> T.PtxType:
    """The signed type of the same width (pointer arithmetic adds signed offsets)."""
    return T.s64 if ty.bits == 64 else T.s32
