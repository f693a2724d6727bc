"""``Liveness.peak_units`` and the IR's cached ``defs``/``uses``/``family``, on real PTX.

The kernel corpus (NVRTC, Triton and numba-cuda modules, :mod:`kernel_corpus`) is parsed once;
every function with a body is checked against the slow definitions: the peak is the maximum of
the per-instruction series, and an instruction's registers are those the operands name.
"""

from __future__ import annotations

import attrs
import pytest

from ptxforge.analysis.liveness import analyze_liveness
from ptxforge.analysis.pressure import analyze_pressure
from ptxforge.ptx import ir, types

from kernel_corpus import corpus_modules


@pytest.fixture(scope="module")
def functions() -> list:
    """Every function with a body in the sm_80 corpus, one parse per module (shared with the
    other tests that walk the corpus: kernel_corpus.corpus_modules)."""
    return [k for module in corpus_modules("sm_80").values() for k in module.kernels if k.body]


def _reference(inst: ir.Instruction) -> tuple[tuple, tuple]:
    """defs and uses by their definition, straight from the operands (never cached)."""
    nd = inst.ndefs
    defs = tuple(r for o in inst.operands[:nd] if not ir._read_only(o)
                 for r in ir.registers_in(o))
    rw = nd > 0 and ir.reads_destination(inst)
    uses = [r for o in inst.operands[:nd] if rw or ir._read_only(o) for r in ir.registers_in(o)]
    uses += [r for o in inst.operands[nd:] for r in ir.registers_in(o)]
    if inst.guard is not None:
        uses.append(inst.guard.register)
    return defs, tuple(uses)


def test_corpus_is_large_and_mixed(functions):
    assert len(functions) >= 300
    assert sum(len(k.instructions) for k in functions) > 50_000


def test_peak_units_is_the_max_of_the_series(functions):
    tops = set()
    for k in functions:
        lv = analyze_liveness(k)
        g, p = lv.series("at"), lv.series("at", "pred")
        want = (max(g) if g else 0, max(p) if p else 0)
        assert lv.peak_units() == want, k.name
        assert analyze_pressure(k, liveness=lv).peak.units == want[0], k.name
        tops.add(want)
    assert len(tops) > 50  # many different peaks, predicates included
    assert any(p > 0 for _, p in tops) and max(g for g, _ in tops) > 100


def test_peak_units_of_an_empty_kernel():
    assert analyze_liveness(ir.Kernel("k", body=())).peak_units() == (0, 0)


def test_cached_defs_uses_family_match_their_definition(functions):
    seen_vector = seen_guard = 0
    for k in functions:
        for inst in k.instructions:
            want = _reference(inst)
            assert (inst.defs, inst.uses) == want, inst
            assert (inst.defs, inst.uses) == want  # the second read comes from the cache
            assert inst.family == inst.opcode.split(".", 1)[0]
            seen_vector += any(type(o) is ir.Vector for o in inst.operands)
            seen_guard += inst.guard is not None
    assert seen_vector > 100 and seen_guard > 1000


def test_cache_is_invisible_to_equality_hash_repr_and_evolve():
    a, b = ir.Register("%r1", types.u32), ir.Register("%r2", types.u32)
    fresh = ir.Instruction("add.s32", (a, b, ir.Immediate(1)), 1)
    used = ir.Instruction("add.s32", (a, b, ir.Immediate(1)), 1)
    assert (used.family, used.defs, used.uses) == ("add", (a,), (b,))
    assert used == fresh and hash(used) == hash(fresh) and repr(used) == repr(fresh)
    moved = attrs.evolve(used, operands=(b, a, ir.Immediate(1)))
    assert (moved.defs, moved.uses) == ((b,), (a,))  # evolve starts a fresh cache
    assert "_defs" not in repr(used) and "_uses" not in repr(used)
