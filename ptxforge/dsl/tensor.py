"""Tensor-core ops: ``mma.sync`` on fragments, ``ldmatrix`` / ``stmatrix``, and sm_90a's
``wgmma.mma_async`` with its fence / commit / wait and shared-memory descriptors.

A :class:`Fragment` is one thread's share of a matrix tile: a group of registers, one value
per register, so liveness counts each register (a 16x8 f32 accumulator is 4 ``.f32``
registers per thread).  The fragment sizes come from :data:`MMA_FORMS` (the PTX ISA's
per-shape operand lists); the minimum target of each form from :data:`ptxforge.ptx.isa.OPS`.

Example::

    >>> from ptxforge.dsl.builder import KernelBuilder
    >>> kb = KernelBuilder("k", target="sm_80")
    >>> a = kb.mma_fragment("a", "m16n8k16", "f16")
    >>> b = kb.mma_fragment("b", "m16n8k16", "f16")
    >>> acc = kb.mma_fragment("c", "m16n8k16", "f16", fill=0.0)
    >>> len(a), len(b), len(acc), acc[0].type.ptx
    (4, 2, 4, '.f32')
    >>> _ = kb.imma(acc, a, b, shape="m16n8k16", atype="f16")
    >>> "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in kb.ptx()
    True
"""

from __future__ import annotations

from typing import Optional, Union

import attrs

from ptxforge.errors import BuildError
from ptxforge.ptx import ir
from ptxforge.ptx import types as T

from .checks import _register_internal, _where, caller_loc, type_error
from .memory import MemoryOps

__all__ = ["Fragment", "MMA_FORMS", "TensorOps", "wgmma_accumulators"]

_register_internal(__file__)


@attrs.frozen(slots=True, kw_only=True)
class Fragment:
    """One thread's registers of an mma operand (``role`` a, b, c or ldmatrix), in PTX order."""

    regs: tuple
    role: str
    shape: str
    type: str

    def __len__(self) -> int:
        return len(self.regs)

    def __iter__(self):
        return iter(self.regs)

    def __getitem__(self, i):
        return self.regs[i]


#: (shape, A/B element type) -> (A registers, B registers, accumulator registers, the
#: accumulator types allowed).  From the PTX ISA's mma operand lists (9.7.14.5); every row is
#: compiled by ptxas in tests/dsl/test_tensor_ops.py.
MMA_FORMS = {
    ("m16n8k4", "tf32"): (2, 1, 4, ("f32",)),
    ("m16n8k8", "tf32"): (4, 2, 4, ("f32",)),
    ("m16n8k8", "f16"): (2, 1, 4, ("f32", "f16")),
    ("m16n8k8", "bf16"): (2, 1, 4, ("f32",)),
    ("m16n8k16", "f16"): (4, 2, 4, ("f32", "f16")),
    ("m16n8k16", "bf16"): (4, 2, 4, ("f32",)),
    ("m16n8k16", "s8"): (2, 1, 4, ("s32",)),
    ("m16n8k16", "u8"): (2, 1, 4, ("s32",)),
    ("m16n8k32", "s8"): (4, 2, 4, ("s32",)),
    ("m16n8k32", "u8"): (4, 2, 4, ("s32",)),
    ("m8n8k16", "s8"): (1, 1, 2, ("s32",)),
    ("m8n8k16", "u8"): (1, 1, 2, ("s32",)),
    ("m8n8k4", "f64"): (1, 1, 2, ("f64",)),
}

# Register type of one accumulator register; f16 accumulators hold two halves (.f16x2).
_ACC_TYPE = {"f32": T.f32, "f16": T.f16x2, "s32": T.s32, "f64": T.f64}
_INTS = ("s8", "u8")


def wgmma_accumulators(n: int, dtype: str = "f32") -> int:
    """Registers per thread of a ``wgmma`` m64nNk accumulator: N/2 for f32, N/4 for f16.

    Example: ``wgmma_accumulators(128) == 64``
    """
    return n // 2 if dtype == "f32" else n // 4


_WGMMA_K = {"f16": 16, "bf16": 16, "tf32": 8}


def _ab_types(atype) -> tuple:
    """``(atype, btype)`` from an mma ``atype=``: one type for both, or an (A, B) pair."""
    if isinstance(atype, tuple) and len(atype) == 2:
        return atype
    return atype, None


class TensorOps(MemoryOps):
    """Mixin: mma fragments, ``mma.sync``, ``ldmatrix``/``stmatrix`` and ``wgmma``."""

    # -- mma.sync ---------------------------------------------------------------------------

    def _mma_form(self, op, shape, atype, btype, dtype, loc):
        """(A count, B count, C count, dtype) of an mma form, or BuildError listing the forms."""
        btype = btype or atype
        form = MMA_FORMS.get((shape, atype))
        if form is None or (btype != atype and not (atype in _INTS and btype in _INTS)):
            known = ", ".join(f"{s}.{t}" for s, t in MMA_FORMS)
            raise BuildError(f"{op}: no mma form {shape} with .{atype}.{btype} operands; known "
                             f"forms: {known}{_where(loc)}")
        dtype = dtype or form[3][0]
        if dtype not in form[3]:
            raise BuildError(f"{op}: {shape}.{atype} accumulates in "
                             f"{' or '.join('.' + d for d in form[3])}, not .{dtype}{_where(loc)}")
        return form[0], form[1], form[2], dtype, btype

    def mma_fragment(self, role: str, shape: str, atype: str, dtype: Optional[str] = None, *,
                     fill=None) -> Fragment:
        """Fresh registers for one thread's share of an mma operand: ``role`` "a", "b" or "c"
        (the accumulator; ``fill`` sets every register, e.g. 0.0).  A/B registers are ``.b32``
        (``.f64`` for f64); accumulators ``.f32``, ``.f16x2``, ``.s32`` or ``.f64``.

        Example: ``acc = kb.mma_fragment("c", "m16n8k16", "f16", fill=0.0)``
        """
        loc = caller_loc()
        na, nb, nc, dtype, _ = self._mma_form("mma_fragment", shape, atype, None, dtype, loc)
        if role not in ("a", "b", "c"):
            raise BuildError(f"mma_fragment: role must be 'a', 'b' or 'c', got {role!r}"
                             f"{_where(loc)}")
        if role == "c":
            ty = _ACC_TYPE[dtype]
            count = nc // 2 if dtype == "f16" else nc
        else:
            ty = T.f64 if atype == "f64" else T.b32
            count = na if role == "a" else nb
        regs = tuple(self._new(ty, loc) for _ in range(count))
        if fill is not None:
            for r in regs:
                self.assign(r, fill)
        return Fragment(regs=regs, role=role, shape=shape, type=dtype if role == "c" else atype)

    def _fragment_regs(self, op, what, frag, count, ty, loc) -> tuple:
        """The registers of a fragment operand, checked for count and register class."""
        regs = tuple(frag) if isinstance(frag, (Fragment, tuple, list)) else (frag,)
        if len(regs) != count or not all(isinstance(r, ir.Register) for r in regs):
            raise BuildError(f"{op}: the {what} fragment needs {count} {ty.ptx} register"
                             f"{'s' if count != 1 else ''}, got {len(regs)}{_where(loc)}")
        for r in regs:
            if r.type.reg_class is not ty.reg_class:
                raise type_error(op, f"{what} registers of class {ty.reg_class.decl} "
                                 f"({ty.ptx})", r, loc)
        return regs

    def _mma(self, op, a, b, c, shape, atype, btype, dtype, satfinite, dst, pred):
        """Check and emit one ``mma.sync``; ``dst`` None allocates a fresh D fragment."""
        loc = caller_loc()
        na, nb, nc, dtype, btype = self._mma_form(op, shape, atype, btype, dtype, loc)
        ab = T.f64 if atype == "f64" else T.b32
        acc = _ACC_TYPE[dtype]
        ncr = nc // 2 if dtype == "f16" else nc
        a_regs = self._fragment_regs(op, "A", a, na, ab, loc)
        b_regs = self._fragment_regs(op, "B", b, nb, ab, loc)
        c_regs = self._fragment_regs(op, "C", c, ncr, acc, loc)
        if satfinite and dtype != "s32":
            raise BuildError(f"{op}: .satfinite applies to integer (s32) accumulators{_where(loc)}")
        if dst is None:
            d_regs = tuple(self._new(acc, loc) for _ in range(ncr))
        else:
            d_regs = self._fragment_regs(op, "D", dst, ncr, acc, loc)
        mods = ["mma", "sync", "aligned", shape, "row", "col"]
        if satfinite:
            mods.append("satfinite")
        opcode = ".".join(mods + [dtype, atype, btype, dtype])
        self._emit(opcode, (ir.Vector(d_regs), ir.Vector(a_regs), ir.Vector(b_regs),
                            ir.Vector(c_regs)), 1, loc, pred, op)
        return Fragment(regs=d_regs, role="c", shape=shape, type=dtype)

    def mma(self, a, b, c, *, shape: str, atype: Union[str, tuple], dtype: Optional[str] = None,
            satfinite: bool = False, pred=None) -> Fragment:
        """``mma.sync.aligned.<shape>.row.col``: D = A * B + C into a fresh fragment; ``atype``
        is the A and B type, or ``(atype, btype)`` when they differ (``("u8", "s8")``).

        Example: ``d = kb.mma(a, b, c, shape="m16n8k16", atype="f16")``
        """
        atype, btype = _ab_types(atype)
        return self._mma("mma", a, b, c, shape, atype, btype, dtype, satfinite, None, pred)

    def imma(self, acc, a, b, *, shape: str, atype: Union[str, tuple], dtype: Optional[str] = None,
             satfinite: bool = False, pred=None) -> Fragment:
        """In-place ``mma.sync``: acc = A * B + acc (the accumulator of a K loop); ``atype`` as
        in :meth:`mma`.

        Example: ``kb.imma(acc, a, b, shape="m16n8k16", atype="f16")``
        """
        if dtype is None and isinstance(acc, Fragment):
            dtype = acc.type
        atype, btype = _ab_types(atype)
        return self._mma("imma", a, b, acc, shape, atype, btype, dtype, satfinite, acc, pred)

    # -- ldmatrix / stmatrix ----------------------------------------------------------------

    def _matrix_address(self, op, addr, offset, loc) -> ir.Address:
        """A shared-memory address for ldmatrix/stmatrix."""
        address, _, space = self._resolve_address(op, addr, T.b16, None, offset, loc)
        if space != "shared":
            raise BuildError(f"{op}: needs a shared-memory address (address_of/elem_ptr of a "
                             f"shared_array), got the {space or 'generic'} space{_where(loc)}")
        return address

    def ldmatrix(self, addr, num: int = 4, *, trans: bool = False, offset: int = 0,
                 pred=None) -> Fragment:
        """``ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16``: ``num`` (1, 2, 4) 8x8
        matrices of 16-bit values into ``num`` ``.b32`` registers per thread; lanes 0-7,
        8-15, ... give the row addresses of matrix 0, 1, ...

        Example: ``a = kb.ldmatrix(kb.elem_ptr(tile, row_offset), 4)``
        """
        loc = caller_loc()
        if num not in (1, 2, 4):
            raise BuildError(f"ldmatrix: num must be 1, 2 or 4 matrices, got {num!r}{_where(loc)}")
        address = self._matrix_address("ldmatrix", addr, offset, loc)
        regs = tuple(self._new(T.b32, loc) for _ in range(num))
        opcode = ".".join(["ldmatrix", "sync", "aligned", "m8n8", f"x{num}",
                           *(("trans",) if trans else ()), "shared", "b16"])
        self._emit(opcode, (ir.Vector(regs), address), 1, loc, pred, "ldmatrix")
        return Fragment(regs=regs, role="ldmatrix", shape="m8n8", type="b16")

    def stmatrix(self, addr, frag, *, trans: bool = False, offset: int = 0, pred=None) -> None:
        """``stmatrix.sync.aligned.m8n8.x{len(frag)}[.trans].shared.b16`` (sm_90): store 1, 2
        or 4 8x8 matrices from ``.b32`` registers.

        Example: ``kb.stmatrix(kb.address_of(tile), frag)``
        """
        loc = caller_loc()
        n = len(tuple(frag)) if isinstance(frag, (Fragment, tuple, list)) else 1
        if n not in (1, 2, 4):
            raise BuildError(f"stmatrix: store 1, 2 or 4 registers, got {n}{_where(loc)}")
        regs = self._fragment_regs("stmatrix", "source", frag, n, T.b32, loc)
        address = self._matrix_address("stmatrix", addr, offset, loc)
        opcode = ".".join(["stmatrix", "sync", "aligned", "m8n8", f"x{n}",
                           *(("trans",) if trans else ()), "shared", "b16"])
        self._emit(opcode, (address, ir.Vector(regs)), 0, loc, pred, "stmatrix")

    # -- wgmma (sm_90a) ---------------------------------------------------------------------

    def wgmma_fence(self) -> None:
        """``wgmma.fence.sync.aligned``: order register / shared accesses before wgmma."""
        self._emit("wgmma.fence.sync.aligned", (), 0, caller_loc(), op="wgmma_fence")

    def wgmma_commit(self) -> None:
        """``wgmma.commit_group.sync.aligned``: close the group of wgmma ops issued so far."""
        self._emit("wgmma.commit_group.sync.aligned", (), 0, caller_loc(), op="wgmma_commit")

    def wgmma_wait(self, n: int = 0) -> None:
        """``wgmma.wait_group.sync.aligned n``: wait until at most ``n`` groups are pending."""
        loc = caller_loc()
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= 7:
            raise BuildError(f"wgmma_wait: n must be an int in [0, 7], got {n!r}{_where(loc)}")
        self._emit("wgmma.wait_group.sync.aligned", (ir.Immediate(n, T.u32),), 0, loc,
                   op="wgmma_wait")

    def wgmma_desc(self, addr, *, lbo: int, sbo: int, swizzle: int = 0) -> ir.Register:
        """A 64-bit wgmma matrix descriptor for a shared-memory tile: bits 0-13 the address
        >> 4, 16-29 the leading-dimension byte offset >> 4, 32-45 the stride byte offset >> 4,
        62-63 the swizzle mode (0 none, 1 128-byte, 2 64-byte, 3 32-byte).

        Example: ``da = kb.wgmma_desc(kb.address_of(a_tile), lbo=128, sbo=256)``
        """
        loc = caller_loc()
        for name, v in (("lbo", lbo), ("sbo", sbo)):
            if not isinstance(v, int) or v < 0 or v % 16 or v >> 4 >= 1 << 14:
                raise BuildError(f"wgmma_desc: {name} must be a multiple of 16 below 2**18, got "
                                 f"{v!r}{_where(loc)}")
        if swizzle not in (0, 1, 2, 3):
            raise BuildError(f"wgmma_desc: swizzle must be 0, 1, 2 or 3, got {swizzle!r}"
                             f"{_where(loc)}")
        address = self._matrix_address("wgmma_desc", addr, 0, loc)
        base = address.base
        if not isinstance(base, ir.Register):
            base = self.mov(base, type=T.u32) if isinstance(base, ir.Symbol) else base
        start = self.and_(self.shr(base, 4, type=T.u32), 0x3FFF, type=T.b32)
        wide = self.cvt(self.mov(start, type=T.u32), T.u64)
        const = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (swizzle << 62)
        return self.or_(wide, self.mov(const, type=T.b64), type=T.b64)

    def wgmma_fragment(self, n: int, dtype: str = "f32", *, fill=None) -> Fragment:
        """The accumulator of an m64nNk wgmma: N/2 ``.f32`` (N/4 ``.f16x2``) registers per
        thread. Example: ``acc = kb.wgmma_fragment(64, fill=0.0)``"""
        loc = caller_loc()
        if n not in range(8, 257, 8) or dtype not in ("f32", "f16"):
            raise BuildError(f"wgmma_fragment: N must be a multiple of 8 in [8, 256] and dtype "
                             f"f32 or f16, got N={n!r}, dtype={dtype!r}{_where(loc)}")
        regs = tuple(self._new(_ACC_TYPE[dtype], loc) for _ in range(wgmma_accumulators(n, dtype)))
        if fill is not None:
            for r in regs:
                self.assign(r, fill)
        return Fragment(regs=regs, role="c", shape=f"m64n{n}k", type=dtype)

    def iwgmma(self, acc, a_desc, b_desc, *, n: int, atype: str = "f16", scale_d=1,
               scale_ab: tuple = (1, 1), trans_ab: tuple = (0, 0)) -> Fragment:
        """``wgmma.mma_async.sync.aligned.m64nNk{K}``: acc = A * B + (scale_d ? acc : 0), A and
        B from shared-memory descriptors (:meth:`wgmma_desc`); ``scale_d`` is 0, 1 or a
        predicate (0: acc is only written, which liveness sees); ``scale_ab`` (1 or -1 each)
        and ``trans_ab`` (0 or 1 each) are the immediates for A and B.  Asynchronous: fence
        before, commit and wait after.

        Example: ``kb.iwgmma(acc, da, db, n=64)``
        """
        loc = caller_loc()
        if atype not in _WGMMA_K:
            raise BuildError(f"iwgmma: atype must be one of {', '.join(_WGMMA_K)}, got "
                             f"{atype!r}{_where(loc)}")
        dtype = acc.type if isinstance(acc, Fragment) else "f32"
        if atype != "f16" and dtype != "f32":
            raise BuildError(f"iwgmma: .{atype} accumulates in .f32 only{_where(loc)}")
        count = wgmma_accumulators(n, dtype)
        regs = self._fragment_regs("iwgmma", "accumulator", acc, count, _ACC_TYPE[dtype], loc)
        descs = []
        for what, d in (("A", a_desc), ("B", b_desc)):
            if not isinstance(d, ir.Register) or d.type.bits != 64 or d.type.is_float:
                raise type_error("iwgmma", f"a 64-bit {what} descriptor (wgmma_desc)", d, loc)
            descs.append(d)
        if isinstance(scale_d, int) and not isinstance(scale_d, bool):
            if scale_d not in (0, 1):
                raise BuildError(f"iwgmma: scale_d must be 0, 1 or a predicate{_where(loc)}")
            sd = ir.Immediate(scale_d, T.pred)
        else:
            sd = self._pred_src("iwgmma", scale_d, loc)
        if not (isinstance(scale_ab, tuple) and len(scale_ab) == 2
                and isinstance(trans_ab, tuple) and len(trans_ab) == 2):
            raise BuildError(f"iwgmma: scale_ab and trans_ab are pairs (A, B), got "
                             f"{scale_ab!r} and {trans_ab!r}{_where(loc)}")
        (scale_a, scale_b), (trans_a, trans_b) = scale_ab, trans_ab
        imms = []
        for name, v, ok in (("scale_a", scale_a, (1, -1)), ("scale_b", scale_b, (1, -1)),
                            ("trans_a", trans_a, (0, 1)), ("trans_b", trans_b, (0, 1))):
            if v not in ok:
                raise BuildError(f"iwgmma: {name} must be one of {ok}, got {v!r}{_where(loc)}")
            if name.startswith("trans") and atype == "tf32":
                if v:
                    raise BuildError(f"iwgmma: .tf32 has no transpose{_where(loc)}")
                continue
            imms.append(ir.Immediate(v, T.s32))
        opcode = (f"wgmma.mma_async.sync.aligned.m64n{n}k{_WGMMA_K[atype]}.{dtype}.{atype}."
                  f"{atype}")
        self._emit(opcode, (ir.Vector(regs), *descs, sd, *imms), 1, loc, None, "iwgmma")
        return Fragment(regs=regs, role="c", shape=f"m64n{n}k{_WGMMA_K[atype]}", type=dtype)
