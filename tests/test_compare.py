"""Estimate vs ptxas comparison."""

import json
from pathlib import Path

import pytest

from ptxforge.compare import Estimate, compare
from ptxforge.compile import compile_ptx
from ptxforge.errors import PtxforgeError

PTX = Path(__file__).parent / "data" / "ptx"


def test_compare_pressure_kernel():
    k = compile_ptx((PTX / "pressure.ptx").read_text(), "sm_80")["pressure"]
    c = compare(Estimate(registers=69, predicates=0), k, block_size=256)
    assert c.difference == 3 and c.ratio == pytest.approx(72 / 69)
    assert c.occupancy_estimate.active_blocks == 3 and c.occupancy_ptxas.active_blocks == 3
    text = c.to_text()
    assert "+3 registers" in text and "Predicates live in their own file" in text
    d = json.loads(c.to_json())
    assert set(d) == {"kernel", "target", "block_size", "estimate", "ptxas", "difference",
                      "ratio", "occupancy", "notes"}
    assert d["ptxas"]["registers"] == 72 and d["occupancy"]["ptxas"]["active_blocks"] == 3


def test_compare_notes_spills_cap_and_occupancy_change():
    k = compile_ptx((PTX / "pressure.ptx").read_text(), "sm_80", max_registers=32)["pressure"]
    c = compare((69, 9), k, block_size=256)
    notes = " ".join(c.notes())
    assert "cap (32) binds" in notes and "468 bytes stored" in notes
    assert "9 live predicates exceed" in notes
    assert "3 blocks/SM at the estimate, 8 at ptxas's count" in notes


def test_estimate_from_objects():
    class Report:
        max_registers = 40
        max_predicates = 3
    e = Estimate.of(Report())
    assert (e.registers, e.predicates, e.source) == (40, 3, "Report")
    with pytest.raises(PtxforgeError, match="cannot read a register estimate"):
        Estimate.of("forty")


def test_scheduling_note_appears_only_when_ptxas_far_exceeds_the_estimate():
    from ptxforge.compile import KernelStats

    stats = KernelStats(name="k", target="sm_80", backend="nvjitlink", registers=255)
    far = compare(Estimate(50, 1), stats, block_size=256, target="sm_80")
    near = compare(Estimate(250, 1), stats, block_size=256, target="sm_80")
    assert any("ptxas uses 5.1x the estimate" in n and "schedules loads early" in n
               for n in far.notes())
    assert not any("schedules loads early" in n for n in near.notes())
