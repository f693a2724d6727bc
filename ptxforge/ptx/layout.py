"""Sizes, alignments and offsets of parameters and variables: the one layout every wing asks.

The launcher packs a kernel's parameter buffer with it, the emulator places parameters and
``.shared`` / ``.local`` / ``.const`` variables with it, the builder sizes its arrays with it
and the resource report adds up declared memory with it, so all four agree with ptxas.

**The rule, as ptxas applies it** (measured with ptxas 13.0 on sm_80, reading the parameter
offsets from the cubin's ``EIATTR_KPARAM_INFO`` and the ``.nv.shared`` section sizes; the test
``tests/ptx/test_layout.py`` compiles signatures with the real ptxas and compares): an item
starts at the next multiple of its alignment, which is the *larger* of the ``.align`` it
declares and its natural alignment (element size × vector width).  A smaller ``.align`` never
moves an item below its natural alignment::

    (.param .u32 a, .param .align 4 .b64 x[2])   ->  a at 0, x at 8 (not 4), 24 bytes
    .shared .u8 a; .shared .align 1 .b32 f;     ->  f at 4, 8 bytes

No padding is added after the last item.  A pointer parameter's ``.ptr.align`` is the
pointee's alignment and does not move the parameter.

Example::

    >>> from ptxforge.ptx import ir, types
    >>> [(s.offset, s.size) for s in param_layout((ir.Param("a", types.u32),
    ...                                            ir.Param("x", types.b64, align=4, dims=(2,))))]
    [(0, 4), (8, 16)]
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence, Union

import attrs

from . import ir
from .types import PtxType

__all__ = [
    "DYNAMIC_SHARED_ALIGN",
    "element_size",
    "element_count",
    "natural_align",
    "param_size",
    "param_align",
    "ParamSlot",
    "param_layout",
    "params_size",
    "var_size",
    "var_align",
    "var_layout",
    "shared_layout",
]

#: Alignment of an unsized ``.extern .shared`` array with no ``.align`` (dynamic shared memory
#: starts after the static variables, at a multiple of 16 bytes).
DYNAMIC_SHARED_ALIGN = 16

Item = Union[ir.Param, ir.VarDecl]


def _round_up(at: int, align: int) -> int:
    return -(-at // align) * align


def element_size(ty: PtxType) -> int:
    """Bytes of one element of ``ty`` (``.pred`` and ``.b8`` are 1).

    Example::

        >>> from ptxforge.ptx import types
        >>> element_size(types.f64), element_size(types.pred)
        (8, 1)
    """
    return max(ty.bits // 8, 1)


def element_count(dims: Iterable[Optional[int]]) -> Optional[int]:
    """Elements of an array with dimensions ``dims`` (1 for a scalar; None if one is unsized).

    Example::

        >>> element_count((2, 3)), element_count(()), element_count((None,))
        (6, 1, None)
    """
    count = 1
    for d in dims:
        if d is None:
            return None
        count *= int(d)
    return count


def natural_align(ty: PtxType, vector: Optional[int] = None) -> int:
    """The alignment an item of ``ty`` (a ``.vN`` vector when ``vector``) has with no ``.align``.

    Example::

        >>> from ptxforge.ptx import types
        >>> natural_align(types.b64), natural_align(types.f32, vector=4)
        (8, 16)
    """
    return element_size(ty) * (vector or 1)


def _size(item: Item, vector: Optional[int]) -> int:
    count = element_count(item.dims)
    return element_size(item.type) * (vector or 1) * (count or 0)


def _align(item: Item, vector: Optional[int]) -> int:
    natural = natural_align(item.type, vector)
    return max(int(item.align), natural) if item.align is not None else natural


def param_size(param: ir.Param) -> int:
    """Bytes of a parameter as the kernel sees it (8 for a 64-bit pointer; 0 if unsized).

    Example::

        >>> from ptxforge.ptx import ir, types
        >>> param_size(ir.Param("c", types.u32, align=4, dims=(3,)))
        12
    """
    return _size(param, None)


def param_align(param: ir.Param) -> int:
    """Alignment of a parameter: the larger of its ``.align`` and its element's size.

    ptxas never places a parameter below its element's natural alignment, whatever ``.align``
    says (``.param .align 4 .b64 x[2]`` lands on a multiple of 8).

    Example::

        >>> from ptxforge.ptx import ir, types
        >>> param_align(ir.Param("x", types.b64, align=4, dims=(2,)))
        8
    """
    return _align(param, None)


@attrs.frozen(slots=True, kw_only=True)
class ParamSlot:
    """Where one parameter lives in the kernel's parameter buffer."""

    name: str
    offset: int
    size: int
    align: int


def param_layout(params: Sequence[ir.Param]) -> tuple[ParamSlot, ...]:
    """Byte offset, size and alignment of each parameter, as ptxas lays them out.

    Each parameter starts at the next multiple of :func:`param_align`.  This is what ptxas
    records in the cubin (``EIATTR_KPARAM_INFO``), what the driver reports through
    ``cuFuncGetParamInfo`` and what ``cuLaunchKernel`` packs by.

    Example::

        >>> from ptxforge.ptx import ir, types
        >>> [(s.offset, s.size) for s in param_layout((ir.Param("a", types.u8),
        ...                                            ir.Param("b", types.f64)))]
        [(0, 1), (8, 8)]
    """
    slots, end = [], 0
    for param in params:
        align, size = param_align(param), param_size(param)
        offset = _round_up(end, align)
        slots.append(ParamSlot(name=param.name, offset=offset, size=size, align=align))
        end = offset + size
    return tuple(slots)


def params_size(slots: Sequence[ParamSlot]) -> int:
    """Bytes of the parameter buffer :func:`param_layout` gave (the end of the last slot).

    Example::

        >>> from ptxforge.ptx import ir, types
        >>> params_size(param_layout((ir.Param("a", types.u8), ir.Param("b", types.f64))))
        16
    """
    return slots[-1].offset + slots[-1].size if slots else 0


def var_size(var: ir.VarDecl) -> int:
    """Bytes a variable occupies (an unsized ``[]`` array: 0).

    Example::

        >>> from ptxforge.ptx import ir, types
        >>> var_size(ir.VarDecl("shared", types.f32, "v", vector=4, dims=(8,)))
        128
    """
    return _size(var, var.vector)


def var_align(var: ir.VarDecl) -> int:
    """Alignment of a variable: the larger of its ``.align`` and element size × vector width.

    Example::

        >>> from ptxforge.ptx import ir, types
        >>> var_align(ir.VarDecl("shared", types.b32, "f", align=1))
        4
    """
    return _align(var, var.vector)


def var_layout(decls: Iterable[ir.VarDecl], start: int = 0) -> tuple[dict, int]:
    """Offsets of variables placed in order, each at :func:`var_align`: ``({name: offset}, end)``.

    Example::

        >>> from ptxforge.ptx import ir, types
        >>> var_layout([ir.VarDecl("shared", types.u8, "a"),
        ...             ir.VarDecl("shared", types.b64, "b", align=4, dims=(2,))])
        ({'a': 0, 'b': 8}, 24)
    """
    out, at = {}, start
    for v in decls:
        at = _round_up(at, var_align(v))
        out[v.name] = at
        at += var_size(v)
    return out, at


def shared_layout(decls: Iterable[ir.VarDecl]) -> tuple[dict, int]:
    """A block's shared memory: ``({name: offset}, where dynamic shared memory starts)``.

    The sized variables are placed in order (:func:`var_layout`); each unsized array (the
    ``.extern .shared`` window of dynamic shared memory) then starts at the next multiple of
    its ``.align`` or :data:`DYNAMIC_SHARED_ALIGN`, and the end returned includes that padding.

    Example::

        >>> from ptxforge.ptx import ir, types
        >>> shared_layout([ir.VarDecl("shared", types.u8, "a"),
        ...                ir.VarDecl("shared", types.f32, "dyn", dims=(None,))])
        ({'a': 0, 'dyn': 16}, 16)
    """
    decls = tuple(decls)
    dynamic = [v for v in decls if v.dims and v.dims[-1] is None]
    unsized = {id(v) for v in dynamic}
    offsets, end = var_layout(v for v in decls if id(v) not in unsized)
    for v in dynamic:
        end = _round_up(end, v.align or DYNAMIC_SHARED_ALIGN)
        offsets[v.name] = end
    return offsets, end
