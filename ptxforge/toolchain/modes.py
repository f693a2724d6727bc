"""Whole-program and relocatable compiles: pruning a compile to the kernels asked for, and
saying why a relocatable build's figures differ from the whole-program ones.

A whole-program compile (``ptxas`` alone, ``nvcc`` without ``-rdc``, the driver's JIT) sees
every function of the module; a relocatable one (``ptxas -c``, ``nvcc -rdc=true``,
nvJitLink) must keep calls to functions it cannot see inside the module as ABI calls.  The
helper routines ptxas itself supplies (``__cuda_sm70_shflsync_*`` for warp shuffles on
sm_70+, ``__cuda_sm20_div_*`` and ``__internal_*`` slow paths of division, square root and
trigonometric reduction) are the usual cause: whole-program they are inlined, relocatable they
are called, and the call's convention lifts the kernel's count.

Example::

    >>> from ptxforge.toolchain.modes import helper_kind
    >>> helper_kind("__cuda_sm70_shflsync_bfly_p"), helper_kind("_Z3fooi")
    ('ptxas helper', 'function')
"""

from __future__ import annotations

from typing import Optional

import attrs

from ptxforge.errors import PtxforgeError

__all__ = ["helper_kind", "mode_difference", "prune_to", "relocatable_notes"]

_HELPER_PREFIXES = ("__cuda_", "__internal_")


def helper_kind(name: str) -> str:
    """``"ptxas helper"`` for a routine ptxas or the CUDA headers supply, else ``"function"``."""
    return "ptxas helper" if name.startswith(_HELPER_PREFIXES) else "function"


def prune_to(options, chosen, module=None):
    """``options`` with ``entries`` set to the chosen kernels when they are a strict subset of
    the module's ``.entry`` kernels (ptxas ``-e``: code only for those); unchanged otherwise
    (a ``.func`` chosen, every kernel chosen, or entries already given).

    ``chosen`` are :class:`~ptxforge.ptx.ir.Kernel` objects (anything with ``name`` and
    ``is_entry``); ``module`` the :class:`~ptxforge.ptx.ir.Module` they come from.

    Example::

        >>> from ptxforge.toolchain.compile import CompileOptions
        >>> from ptxforge.ptx import ir
        >>> a, b = ir.Kernel("a", body=()), ir.Kernel("b", body=())
        >>> prune_to(CompileOptions(), [a], ir.Module("8.0", "sm_80", kernels=(a, b))).entries
        ('a',)
    """
    if options.entries or not chosen or not all(k.is_entry for k in chosen):
        return options
    if module is not None:
        every = [k.name for k in module.kernels if k.is_entry]
        if len(every) <= len(chosen):
            return options
    return attrs.evolve(options, entries=tuple(k.name for k in chosen))


def mode_difference(relocatable, whole) -> dict:
    """``{kernel: (relocatable registers, whole-program registers, added calls)}`` for the
    kernels whose counts differ between two :class:`~ptxforge.toolchain.compile.Compiled`
    of the same PTX; ``added calls`` are the functions the relocatable build calls that the
    whole-program one does not (helpers first)."""
    out = {}
    for k in relocatable.kernels:
        try:
            w = whole[k.name]
        except KeyError:
            continue
        if k.registers == w.registers:
            continue
        added = [c for c in k.callees if c not in w.callees]
        added.sort(key=lambda c: (helper_kind(c) != "ptxas helper", c))
        out[k.name] = (k.registers, w.registers, tuple(added))
    return out


def _note(regs: int, whole: int, added: tuple) -> str:
    head = f"relocatable build: {regs} registers, {regs - whole:+d} against whole-program ({whole})"
    helpers = [c for c in added if helper_kind(c) == "ptxas helper"]
    others = [c for c in added if helper_kind(c) != "ptxas helper"]
    if helpers or others:
        parts = []
        if helpers:
            parts.append(f"calls the ptxas helper{'s' if len(helpers) > 1 else ''} "
                         f"{', '.join(helpers)} through the ABI (whole-program inlines "
                         f"{'them' if len(helpers) > 1 else 'it'})")
        if others:
            parts.append(f"keeps ABI calls to {', '.join(others)}")
        return head + ": it " + " and ".join(parts) + "."
    return (head + ": no helper call explains it; ptxas scheduled and allocated the "
            "relocatable build differently.")


def relocatable_notes(compiled, source, target: str) -> dict:
    """``{kernel: note}`` for a relocatable :class:`~ptxforge.toolchain.compile.Compiled`:
    where its count differs from a whole-program compile of the same ``source`` (compiled here
    with the ptxas executable that accepts ``target``), the difference and the helper calls
    the relocatable build added.  Empty when no whole-program ptxas is installed."""
    from .backends import PtxasBackend
    from .compile import compile_ptx

    be: Optional[PtxasBackend] = PtxasBackend().for_target(target)
    if be is None:
        return {}
    try:
        whole = compile_ptx(source, target, backend=be,
                            options=attrs.evolve(compiled.options, relocatable=False))
    except PtxforgeError:
        return {}
    return {name: _note(*diff) for name, diff in mode_difference(compiled, whole).items()}
