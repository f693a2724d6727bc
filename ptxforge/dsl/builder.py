"""The KernelBuilder DSL: write PTX kernels in Python, one method call per instruction.

Every value-producing op allocates a fresh SSA :class:`~ptxforge.ptx.ir.Register` (``%f3``,
``%rd2``: class prefix + index per class) whose ``loc`` is the Python line that asked for it.
In-place ops (``iadd``, ``ifma``, ... and the trueno-gpu names such as ``add_f32_inplace``)
write an existing register, for accumulators and loop counters.  Operands are type-checked when
the op is called, so a mistake surfaces as a :class:`~ptxforge.errors.PtxTypeError` naming the
op, the expected and given types and the user's line, never as a ptxas error.

The checks live in :mod:`ptxforge.dsl.core`; the op families in
:mod:`ptxforge.dsl.arith`, :mod:`ptxforge.dsl.bits`, :mod:`ptxforge.dsl.memory`,
:mod:`ptxforge.dsl.warp`, :mod:`ptxforge.dsl.tensor` (mma, ldmatrix, wgmma),
:mod:`ptxforge.dsl.async_copy` (cp.async, setmaxnreg) and :mod:`ptxforge.dsl.flow` (while_,
raw); the operand checks in :mod:`ptxforge.dsl.checks`; the opcode table in
:mod:`ptxforge.ptx.isa`.  See ``docs/builder.md`` for the full reference.

Example::

    >>> from ptxforge.dsl.builder import KernelBuilder
    >>> kb = KernelBuilder("scale", target="sm_80")
    >>> x = kb.load_param(kb.param_ptr("x", "f32"))
    >>> p = kb.elem_ptr(x, kb.global_id())
    >>> kb.st(p, kb.mul(kb.ld(p), 2.0))
    >>> kb.build().version
    '7.0'
"""

from __future__ import annotations

from typing import Iterable

from ptxforge.arch.targets import target as as_target
from ptxforge.errors import BuildError
from ptxforge.ptx import ir
from ptxforge.ptx import types as T
from ptxforge.ptx.emit import emit

from .arith import SEED_INPLACE, ArithOps
from .async_copy import AsyncCopyOps
from .bits import BitOps, lop3_lut
from .core import Array, ParamRef, Value, _assemble, _Core, _register_internal, _where, caller_loc
from .flow import FlowOps
from .memory import MemoryOps
from .tensor import Fragment, TensorOps
from .warp import SPECIAL_REGISTERS, WarpOps

__all__ = [
    "KernelBuilder",
    "ModuleBuilder",
    "ParamRef",
    "Array",
    "Value",
    "Fragment",
    "SEED_INPLACE",
    "SPECIAL_REGISTERS",
    "lop3_lut",
]

_register_internal(__file__)


class KernelBuilder(TensorOps, AsyncCopyOps, WarpOps, MemoryOps, ArithOps, BitOps, FlowOps):
    """Build one ``.entry`` kernel (or, from :meth:`ModuleBuilder.func`, a ``.func``).

    The op families all derive from :class:`~ptxforge.dsl.core._Core`, which declares the
    builder's state and primitives; families that use another family's ops derive from it
    (memory, warp on arith; tensor, async copy on memory), so the bases run from the most
    derived family down.

    Example::

        kb = KernelBuilder("saxpy", target="sm_80")
        n = kb.load_param(kb.param("n", "u32"))
        i = kb.global_id()
        with kb.if_(kb.setp("lt", i, n)):
            ...
        print(kb.ptx())
    """


class ModuleBuilder:
    """Several kernels and device functions in one module.

    Example::

        mb = ModuleBuilder(target="sm_80")
        sq = mb.func("square", params=[("x", "f32")], returns=[("r", "f32")])
        x = sq.load_param("x")
        sq.set_return("r", sq.mul(x, x))
        kb = mb.kernel("k")
        r = kb.call(sq, 3.0)
        module = mb.build()
    """

    def __init__(self, target: str = "sm_80") -> None:
        self.target = as_target(target).name
        self._builders: list[KernelBuilder] = []

    def _add(self, builder: KernelBuilder) -> KernelBuilder:
        """Register a function, refusing duplicate names."""
        if any(b.name == builder.name for b in self._builders):
            raise BuildError(f"a function named {builder.name!r} already exists in this module"
                             f"{_where(caller_loc())}")
        self._builders.append(builder)
        return builder

    def kernel(self, name: str) -> KernelBuilder:
        """A new ``.entry`` kernel in this module. Example: ``kb = mb.kernel("k")``."""
        return self._add(KernelBuilder(name, self.target, _module=self))

    def func(self, name: str, params: Iterable = (), returns: Iterable = ()) -> KernelBuilder:
        """A new ``.func`` device function; ``params`` are (name, type) pairs and ``returns``
        holds at most one (name, type) pair.

        Read parameters with ``fb.load_param(name)``, set results with
        ``fb.set_return(name, value)``, call it with ``kb.call(fb, *args)``.
        """
        returns = list(returns)
        if len(returns) > 1:
            raise BuildError(f"func {name}: ptxas allows at most one .param return value, got "
                             f"{len(returns)}; return the others through a pointer"
                             f"{_where(caller_loc())}")
        fb = KernelBuilder(name, self.target, is_entry=False, _module=self)
        for pname, ptype in list(params) + returns:
            if T.as_type(ptype).is_pred:
                raise BuildError(f"func {name}: parameter or return {pname!r} is .pred; ptxas does "
                                 "not pass predicates to device functions: pass a .u32 (selp) "
                                 "and setp inside")
        for pname, ptype in params:
            fb.param(pname, ptype)
        for rname, rtype in returns:
            fb._declare(rname, "return value", caller_loc())
            fb._returns.append(ir.Param(rname, T.as_type(rtype)))
        return self._add(fb)

    def build(self) -> ir.Module:
        """The module: device functions first (so calls see them), then kernels, in order."""
        ordered: list[_Core] = []
        for b in [b for b in self._builders if not b.is_entry] + [b for b in self._builders if b.is_entry]:
            for dep in b._closure():
                if dep not in ordered:
                    ordered.append(dep)
        return _assemble(self.target, ordered)

    def ptx(self, *, line_info: bool = False) -> str:
        """The PTX text of :meth:`build` (``line_info=True`` adds .file/.loc directives)."""
        return emit(self.build(), line_info=line_info)
