"""The comparison's "fixed overhead" note at its edges and signs.

ptxas's count is the highest register the SASS uses + 1, plus 2, with R1 live throughout: 3
registers the PTX has no value for, plus a few pair holes.  The note says a gap of +1 to +6 is
that overhead; a gap of +7 or more is not (it is pressure, or scheduling), and a gap of 0 or
below is no overhead at all.  The expected answers below are written out by hand, not taken
from ptxforge's constants, so a moved boundary or a lost sign guard fails here.
"""

from __future__ import annotations

import pytest

from ptxforge.reports.estimate import Estimate, compare_with_ptxas
from ptxforge.toolchain.kernel_stats import KernelStats

ESTIMATE = 40  # above every register floor, so no floor note competes


def _notes(gap: int) -> tuple:
    stats = KernelStats(name="k", target="sm_80", backend="nvjitlink", registers=ESTIMATE + gap)
    return compare_with_ptxas(Estimate(registers=ESTIMATE), stats, "sm_80").notes(general=False)


def _overhead_note(gap: int):
    found = [n for n in _notes(gap) if "fixed overhead" in n]
    assert len(found) <= 1
    return found[0] if found else None


@pytest.mark.parametrize("gap, fires", [
    (1, True), (3, True), (5, True),
    (6, True),            # the last gap the overhead explains (3 + up to 3 of pair holes)
    (7, False),           # one beyond the boundary
    (8, False), (20, False),
    (0, False),           # no gap at all
    (-1, False), (-6, False), (-7, False),   # ptxas below the estimate: not an overhead
])
def test_fixed_overhead_note_boundary_and_sign(gap, fires):
    note = _overhead_note(gap)
    assert (note is not None) is fires, (gap, _notes(gap))
    if fires:
        assert f"The gap (+{gap})" in note
        assert "(3 in all)" in note


def test_no_note_names_a_negative_gap_an_overhead():
    for gap in range(-12, 1):
        assert not any("overhead" in n for n in _notes(gap)), gap
