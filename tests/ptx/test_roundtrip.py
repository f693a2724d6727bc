"""Round trip: emit(parse(ptx)) compiles to the same ptxas figures; emission is a fixed point."""

from __future__ import annotations

import functools

import pytest

from ptxforge.ptx.emit import emit
from ptxforge.ptx.parse import parse

from corpus_util import VARIANTS, corpus_ptx, corpus_sources


@functools.lru_cache(maxsize=None)
def _stats(ptx: str, arch: str) -> dict:
    from ptxforge.toolchain.compile import compile_ptx

    compiled = compile_ptx(ptx, arch, backend="nvjitlink")
    return {k.name: (k.registers, k.spill_stores, k.spill_loads, k.stack_frame) for k in compiled}


@pytest.mark.parametrize("arch,lineinfo", VARIANTS)
@pytest.mark.parametrize("name", corpus_sources())
def test_roundtrip_same_ptxas_figures(name, arch, lineinfo):
    ptx = corpus_ptx(name, arch, lineinfo)
    module = parse(ptx, f"{name}.ptx")
    again = emit(module, line_info=lineinfo)
    original, emitted = _stats(ptx, arch), _stats(again, arch)
    assert original, "ptxas reported no kernels"
    assert set(original) == {k.name for k in module.entries}
    assert emitted == original


@pytest.mark.parametrize("arch,lineinfo", VARIANTS)
@pytest.mark.parametrize("name", corpus_sources())
def test_emit_parse_emit_is_a_fixed_point(name, arch, lineinfo):
    once = emit(parse(corpus_ptx(name, arch, lineinfo)), line_info=lineinfo)
    module = parse(once)
    assert emit(module, line_info=lineinfo) == once
    if lineinfo:
        assert ".loc" in once


def test_roundtrip_keeps_spills_and_stack():
    # the corpus has kernels that spill under a cap and kernels with local stacks: the
    # figures compared above must include non-zero spills and stack, or the test is vacuous
    stats = _stats(emit(parse(corpus_ptx("pressure", "sm_80"))), "sm_80")
    regs, stores, loads, stack = stats["spill_capped"]
    assert regs <= 32 and stores > 0 and loads > 0 and stack > 0
    tree = _stats(emit(parse(corpus_ptx("tree", "sm_80"))), "sm_80")
    assert tree["bvh_count_hits"][3] >= 128  # int stack[32]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_roundtrip_bit_ops(arch):
    """Every bit-twiddling catalogue form (prmt, lop3, shf, dp4a, szext, testp, ...), plain and
    guarded, survives parse -> emit unchanged, and ptxas compiles it."""
    from ptxforge.testing.bits import bit_entries
    from ptxforge.testing.strategies import KernelRecipe, ModuleRecipe, generated

    keys = [e.key for e in bit_entries()]
    steps = tuple(("op", key, (k, k + 1, k + 2, k + 3), k if k % 3 == 0 else None)
                  for k, key in enumerate(keys))
    ptx = generated(ModuleRecipe(target=arch, funcs=(), kernels=(KernelRecipe(steps=steps),))).ptx
    module = parse(ptx)
    assert emit(module) == ptx
    families = {i.family for i in module.kernels[0].instructions}
    assert {"prmt", "lop3", "shf", "dp4a", "dp2a", "sad", "bfind", "fns", "mul24", "mad24",
            "szext", "bmsk", "copysign", "testp"} <= families
    assert set(_stats(ptx, arch)) == {"k0"}
