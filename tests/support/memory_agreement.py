"""The comparison of tests/launch/test_memory_agreement*.py: every figure the static memory
analysis gives for a kernel against the interpreter's profile of a launch with the same block
shape (global sectors per request; shared bank-conflict ways and wavefronts per request)."""

from __future__ import annotations

import math

from ptxforge.analysis.memory_access import analyze_memory
from ptxforge.launch.loader import load
from ptxforge.launch.profile import profile_kernel
from ptxforge.ptx.parse import parse

__all__ = ["agree"]


def _shape(block) -> tuple:
    dims = (block,) if isinstance(block, int) else tuple(block)
    return tuple(dims) + (1,) * (3 - len(dims))


def agree(ptx: str, name: str, grid, block, args: list, params: dict) -> int:
    """Compare every figure the static analysis gives for kernel ``name`` of ``ptx`` with the
    profile of a launch (``grid``, ``block``, ``args``; ``params``: {parameter position:
    value} the static analysis is told); the number of figures compared (AssertionError
    naming the access on the first that differs).

    Example::

        >>> agree(ptx, "copy", 2, 128, [x, y], {})   # doctest: +SKIP
        2
    """
    kernel = next(k for k in parse(ptx).kernels if k.name == name)
    named = {kernel.params[i].name: v for i, v in params.items()}
    static = analyze_memory(kernel, block=_shape(block), params=named or None)
    prof = profile_kernel(load(ptx, device="emulator")[name], *args, grid=grid, block=block)
    rows = {r.index: r for r in prof.instructions if r.index is not None}
    compared = 0
    for a in static.accesses:
        row = rows.get(a.index)
        assert row is not None and row.opcode == a.opcode, (name, a.index, a.opcode)
        if a.space == "global" and a.sectors_per_request is not None:
            assert row.requests, (name, a.opcode, "not executed")
            assert math.isclose(row.sectors_per_request, a.sectors_per_request), \
                (name, a.index, a.opcode, a.address, row.sectors_per_request, a.sectors_per_request)
            compared += 1
        if a.space == "shared" and a.ways is not None:
            assert row.requests, (name, a.opcode, "not executed")
            assert (row.ways, row.wavefronts_per_request) == (a.ways, a.wavefronts_per_request), \
                (name, a.index, a.opcode, a.address, row.ways, row.wavefronts_per_request, a.ways,
                 a.wavefronts_per_request)
            compared += 1
    return compared
