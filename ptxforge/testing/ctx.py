"""What every catalogue entry of :mod:`ptxforge.testing.ops` works with: :class:`Entry` (a
key, how it writes registers, and the function that performs it) and :class:`_Ctx` (the builder,
the scoped pools of live values, the data pointer).  Private: use :mod:`ptxforge.testing.strategies`.
"""

from __future__ import annotations

from typing import Callable

import attrs

from ptxforge.dsl.builder import KernelBuilder
from ptxforge.ptx import types as T

__all__ = ["Entry", "KINDS", "REGION_MEM", "REGION_SINK", "REGION_EXTRA"]

#: How an entry writes registers: "def" (fresh SSA results), "inplace" (overwrites an
#: existing value) or "nodef" (writes no register: stores, barriers, red).
KINDS = ("def", "inplace", "nodef")


@attrs.frozen(slots=True, kw_only=True)
class Entry:
    """One op form: its key (``"add.f32"``), how it writes registers, and its interpreter."""

    key: str
    kind: str
    run: Callable = attrs.field(repr=False, eq=False)


#: Types that never appear as immediates (no PTX literal, or none the builder takes).
_NO_IMM = frozenset({T.f16, T.bf16, T.f16x2, T.bf16x2, T.b128, T.pred, T.u8, T.s8, T.b8})

#: Where the data pointer's regions start (bytes): loads/stores, the sink, extra live values.
REGION_MEM, REGION_SINK, REGION_EXTRA = 0, 8192, 4096


def _size(ty: T.PtxType) -> int:
    return max(ty.bits // 8, 1)


class _Ctx:
    """Interpreter state for one function: the builder, the scoped value pools, the pointer."""

    def __init__(self, kb: KernelBuilder, ptr, funcs: list, module_index: int) -> None:
        self.kb = kb
        self.ptr = ptr
        self.funcs = funcs
        self.pools: dict = {}
        self.readonly: set = set()
        self.arrays: dict = {}
        self.scopes: list = []
        self.tag = module_index

    # -- pools --------------------------------------------------------------------------
    def add(self, value) -> None:
        """Add a register (or a tuple of them) to the pools."""
        if value is None:
            return
        for v in value if isinstance(value, tuple) else (value,):
            self.pools.setdefault(v.type, []).append(v)

    def push(self) -> None:
        """Open a scope: values added inside are dropped by :meth:`pop`."""
        self.scopes.append({ty: len(vs) for ty, vs in self.pools.items()})

    def pop(self) -> None:
        """Close a scope (values defined in a branch or loop body do not escape it)."""
        snap = self.scopes.pop()
        for ty in list(self.pools):
            del self.pools[ty][snap.get(ty, 0):]

    def get(self, ty: T.PtxType, pick: int, writable: bool = False):
        """A live value of type ``ty`` (made on demand)."""
        pool = self.pools.get(ty, [])
        if writable:
            pool = [v for v in pool if v.name not in self.readonly]
        if pool:
            return pool[pick % len(pool)]
        return self.fresh(ty, pick)

    def fresh(self, ty: T.PtxType, pick: int):
        """Make a new value of type ``ty``: a constant, a load, or a comparison (predicates)."""
        kb = self.kb
        if ty is T.pred:
            v = kb.setp("lt", self.get(T.u32, pick), pick % 61 + 1)
        elif ty in (T.b128, T.u8, T.s8, T.b8, T.f16x2, T.bf16x2) or (pick % 3 == 0):
            v = kb.ld(self.ptr, type=ty, space="global", offset=self.offset(pick))
        elif ty.is_float:
            v = kb.mov((pick % 17) * 0.25 + 0.5, type=ty.name)
        else:
            v = kb.mov(pick % 61 + 1, type=ty.name)
        self.add(v)
        return v

    def src(self, ty: T.PtxType, pick: int):
        """A source operand of type ``ty``: a live value, or (1 in 5) an immediate."""
        if pick % 5 == 4 and ty not in _NO_IMM and ty.reg_class.units <= 2:
            return (pick % 17) * 0.25 + 0.5 if ty.is_float else pick % 61 + 1
        return self.get(ty, pick)

    def u32(self, pick: int, bound: int = 32):
        """A .u32 operand (shift amounts, bit positions): an immediate or a live value."""
        if pick % 2 == 0:
            return pick % bound
        return self.get(T.u32, pick)

    @staticmethod
    def offset(pick: int) -> int:
        """A 16-byte-aligned offset into the load/store region."""
        return REGION_MEM + (pick % 64) * 16

    def array(self, space: str, ty: T.PtxType):
        """The (lazily declared) shared or local array of element type ``ty``."""
        key = (space, ty)
        if key not in self.arrays:
            name = f"{space[:2]}_{ty.name}"
            decl = self.kb.shared_array if space == "shared" else self.kb.local_array
            self.arrays[key] = decl(name, ty.name, 64, align=16)
        return self.arrays[key]
