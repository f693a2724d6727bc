"""Warp-level ops (shuffles, votes, reductions) and special registers (``%tid.x``, ...).

Mixed into :class:`ptxforge.dsl.builder.KernelBuilder` next to the arithmetic and memory ops.
"""

from __future__ import annotations

from ptxforge.errors import BuildError
from ptxforge.ptx import ir
from ptxforge.ptx import types as T

from .arith import ArithOps
from .core import _register_internal, _where, caller_loc, type_error

__all__ = ["WarpOps", "SPECIAL_REGISTERS"]

_register_internal(__file__)

_AXES = ("x", "y", "z")

#: Special registers readable with ``kb.special(name)``, and their types.
SPECIAL_REGISTERS = {
    **{f"%{r}.{a}": T.u32 for r in ("tid", "ntid", "ctaid", "nctaid") for a in _AXES},
    "%laneid": T.u32, "%warpid": T.u32, "%nwarpid": T.u32, "%smid": T.u32, "%nsmid": T.u32,
    "%gridid": T.u64, "%clock": T.u32, "%clock64": T.u64, "%lanemask_eq": T.u32,
    "%lanemask_lt": T.u32, "%lanemask_le": T.u32, "%lanemask_gt": T.u32, "%lanemask_ge": T.u32,
}


class WarpOps(ArithOps):
    """Mixin: warp-level and special-register ops of :class:`KernelBuilder`."""

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
        dest, p = self._with_pred_result(out, with_pred, loc)
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


def _axis(axis: str) -> str:
    """Validate a special-register axis."""
    if axis not in _AXES:
        raise BuildError(f"axis must be 'x', 'y' or 'z', got {axis!r}{_where(caller_loc())}")
    return axis
