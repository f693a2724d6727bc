"""Estimate vs ptxas comparison."""

import json
from pathlib import Path

import pytest

from ptxforge.errors import PtxforgeError
from ptxforge.reports.estimate import Estimate, compare_with_ptxas
from ptxforge.toolchain.compile import compile_ptx

PTX = Path(__file__).parents[1] / "data" / "ptx"


def test_compare_pressure_kernel():
    k = compile_ptx((PTX / "pressure.ptx").read_text(), "sm_80")["pressure"]
    c = compare_with_ptxas(Estimate(registers=69, predicates=0), k)
    assert c.difference == 3 and c.ratio == pytest.approx(72 / 69)
    assert c.occupancy_estimate.active_blocks == 3 and c.occupancy_ptxas.active_blocks == 3
    text = c.to_text()
    assert "+3 registers" in text
    # no predicates and no cap: neither general note applies, so neither is shown
    assert "Predicates live in their own file" not in text and "Under a register cap" not in text
    with_preds = compare_with_ptxas(Estimate(registers=69, predicates=2), k).to_text()
    assert "Predicates live in their own file" in with_preds
    assert "Under a register cap" not in with_preds
    d = json.loads(c.to_json())
    assert set(d) == {"kernel", "target", "block_size", "estimate", "ptxas", "difference",
                      "ratio", "occupancy", "notes"}
    assert d["ptxas"]["registers"] == 72 and d["occupancy"]["ptxas"]["active_blocks"] == 3


def test_compare_notes_spills_cap_and_occupancy_change():
    k = compile_ptx((PTX / "pressure.ptx").read_text(), "sm_80", max_registers=32)["pressure"]
    c = compare_with_ptxas((69, 9), k)
    notes = " ".join(c.notes())
    assert "cap (32) binds" in notes and "468 bytes stored" in notes
    assert "Under a register cap ptxas trades registers for spills" in notes  # a cap applies
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
    from ptxforge.toolchain.compile import KernelStats

    stats = KernelStats(name="k", target="sm_80", backend="nvjitlink", registers=255)
    far = compare_with_ptxas(Estimate(registers=50, predicates=1), stats, "sm_80")
    near = compare_with_ptxas(Estimate(registers=250, predicates=1), stats, "sm_80")
    assert any("ptxas uses 5.1x the estimate" in n and "schedules loads early" in n
               for n in far.notes())
    assert not any("schedules loads early" in n for n in near.notes())


@pytest.mark.parametrize("estimate, registers, scheduling", [
    (3, 8, False),     # +5: R1 + the 2 above the highest register + pair holes
    (4, 8, False),
    (6, 12, False),    # +6, 2.0x: still within the overhead
    (10, 24, True),    # +14, 2.4x: more than the overhead
])
def test_the_fixed_overhead_is_not_called_scheduling(estimate, registers, scheduling):
    from ptxforge.reports.estimate import FIXED_OVERHEAD
    from ptxforge.toolchain.compile import KernelStats

    stats = KernelStats(name="k", target="sm_80", backend="nvjitlink", registers=registers)
    notes = compare_with_ptxas(Estimate(registers=estimate), stats, "sm_80").notes(general=False)
    assert FIXED_OVERHEAD == 3
    assert any("schedules loads early" in n for n in notes) is scheduling
    assert any("is ptxas's fixed overhead" in n for n in notes) is (not scheduling)


def _floor_kernel(target: str, body: str):
    """A tiny builder kernel: a plain load/store, plus one shfl (``warp``) or one call."""
    from ptxforge import ModuleBuilder

    mb = ModuleBuilder(target)
    if body == "call":
        f = mb.func("sq", params=[("x", "f32")], returns=[("r", "f32")])
        x = f.load_param("x")
        f.set_return("r", f.mul(x, x))
    kb = mb.kernel("k")
    p = kb.load_param(kb.param_ptr("a", "f32"))
    addr = kb.elem_ptr(p, kb.tid())
    v = kb.ld(addr)
    if body == "warp":
        v = kb.add(v, kb.shfl_bfly(v, 1))
    elif body == "call":
        v = kb.call(f, v)
    kb.st(addr, v)
    return mb.build()


def _compare_built(module, target):
    from ptxforge import analyze_pressure, emit

    kernel = module.kernel("k")
    report = analyze_pressure(kernel)
    stats = compile_ptx(emit(module), target, backend="nvjitlink")["k"]
    return compare_with_ptxas((report.peak.units, report.pred_peak.units), stats, target,
                              kernel=kernel)


@pytest.mark.parametrize("target,floored", [("sm_80", True), ("sm_86", True), ("sm_90", False)])
def test_warp_sync_floor_is_what_ptxas_13_does_and_is_explained(target, floored):
    # Measured with nvJitLink 13.5: one shfl.sync lifts a kernel that needs 8 registers to 24
    # on sm_75..sm_89, not on sm_90+.  If a new ptxas changes that, this test says so.
    plain = _compare_built(_floor_kernel(target, "plain"), target)
    warp = _compare_built(_floor_kernel(target, "warp"), target)
    assert warp.features == ("warp-sync",) and plain.features == ()
    assert plain.stats.registers < 24
    assert (warp.stats.registers == 24) is floored
    explained = any("warp-synchronous instructions" in n for n in warp.notes())
    assert explained is floored
    assert not any("warp-synchronous" in n for n in plain.notes())


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_call_floor_is_explained(target):
    c = _compare_built(_floor_kernel(target, "call"), target)
    assert c.features == ("call",)
    assert c.stats.registers >= 24 > c.estimate.registers
    assert any("maximum over its call graph" in n for n in c.notes())


def test_floor_replaces_the_scheduling_note():
    c = _compare_built(_floor_kernel("sm_80", "warp"), "sm_80")
    assert c.ratio >= 1.5
    assert not any("schedules loads early" in n for n in c.notes())
    assert len(c.notes(general=False)) < len(c.notes())


def test_compare_speaks_the_cli_vocabulary_too():
    k = compile_ptx((PTX / "pressure.ptx").read_text(), "sm_80")["pressure"]
    d = compare_with_ptxas(Estimate(registers=69), k).to_dict()["occupancy"]["ptxas"]
    assert d["blocks_per_sm"] == d["active_blocks"] == 3
    assert d["limiter"] == d["limiting"][0] == "registers"
    assert d["launchable"] is True and d["reason"] is None


def test_compare_given_a_whole_compiled_module_says_to_pick_a_kernel():
    c = compile_ptx((PTX / "pressure.ptx").read_text(), "sm_80")
    with pytest.raises(PtxforgeError, match=r"pick one with compiled\[name\], "
                                            r"e.g. compiled\['pressure'\]"):
        compare_with_ptxas(Estimate(registers=69), c)
    with pytest.raises(PtxforgeError, match="expected a KernelStats"):
        compare_with_ptxas(Estimate(registers=69), {"registers": 72})


def test_compare_on_a_target_without_occupancy_table():
    k = compile_ptx((PTX / "pressure.ptx").read_text(), "sm_80")["pressure"]
    c = compare_with_ptxas(Estimate(registers=69), k, "sm_110")
    assert c.occupancy_ptxas is None and c.to_dict()["occupancy"] == {"estimate": None,
                                                                      "ptxas": None}
    assert "occupancy n/a" in c.to_text()


_OWN_AND_CALLEE = r"""
__device__ __noinline__ float helper(const float* p, int i) {
    float w[16];
    for (int k = 0; k < 16; ++k) w[k] = p[i + k];
    return w[(i * 7) & 15] + w[i & 15];
}
extern "C" __global__ void own_and_callee(const float* p, float* out, int j) {
    float a[8];
    for (int k = 0; k < 8; ++k) a[k] = p[k * j];
    out[threadIdx.x] = a[j & 7] + helper(p, threadIdx.x + j);
}
"""


def test_local_array_note_tells_the_own_frame_from_the_call_graphs_stack():
    # nvJitLink 13.5, sm_80: the kernel declares 32 bytes of .local, ptxas keeps its own frame
    # at 0 bytes; helper's frame makes the stack the launch needs 72 bytes.
    from compile_sources import nvrtc

    s = compile_ptx(nvrtc(_OWN_AND_CALLEE, "own_and_callee", "sm_80"), "sm_80",
                    backend="nvjitlink")["own_and_callee"]     # relocatable: helper kept apart
    assert (s.local_array_bytes, s.body_stack_frame, s.stack_known) == (32, 0, True)
    assert s.stack_frame > 0 and s.callees == ("_Z6helperPKfi",)
    c = compare_with_ptxas(10, s)
    (note,) = [n for n in c.notes() if "local arrays" in n]
    assert note == ("The PTX declares 32 bytes of local arrays, but the kernel's own frame is "
                    "0 bytes: ptxas kept the rest out of it (in registers, or optimised away). "
                    f"The stack it needs is {s.stack_frame} bytes with the frames of the "
                    "functions it calls.")
    assert f"stack {s.stack_frame} B (own frame 0 B, 32 B local arrays)" in c.to_text()
    assert "-byte stack frame are local arrays" not in "\n".join(c.notes())


def test_the_target_goes_through_the_registry():
    from ptxforge.errors import UnsupportedError
    from ptxforge.toolchain.compile import KernelStats

    stats = KernelStats(name="k", target="sm_80", backend="nvjitlink", registers=40)
    assert compare_with_ptxas(Estimate(registers=40, predicates=1), stats, "8.6").target == "sm_86"
    assert compare_with_ptxas(Estimate(registers=40, predicates=1), stats).target == "sm_80"
    with pytest.raises(UnsupportedError, match="unknown target 'sm_99'"):
        compare_with_ptxas(Estimate(registers=40, predicates=1), stats, "sm_99")
    # a target without an occupancy table: the comparison stands, occupancy is n/a
    c = compare_with_ptxas(Estimate(registers=40, predicates=1), stats, "sm_110")
    assert c.occupancy_ptxas is None and c.difference == 0
