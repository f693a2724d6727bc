"""The gap's net effects in plain words (``In effect: …``) come before its signed components
(``From the SASS: …``), net exactly those components, and are worded from the compiled
kernel's data: a real NVRTC compile of the source below, whole-program ptxas and nvdisasm."""

from __future__ import annotations

import re

from tests.support.corpus_util import compile_cu

from ptxforge.reports.analyze import analyze_ptx
from ptxforge.reports.gap import Gap, GapReason

DOT = r"""
__global__ void dot(const float* __restrict__ a, const float* __restrict__ b, float* out,
                    int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.f;
    for (int i = 0; i < n; ++i) {
        acc += a[i * 1024 + t] * b[i * 1024 + t];
    }
    out[t] = acc;
}
"""


def _kernel():
    ptx = compile_cu(DOT, "dot", "sm_80", lineinfo=True)
    (k,) = analyze_ptx(ptx, "dot.ptx", "sm_80").kernels
    return ptx, k


def test_effects_net_the_components_and_come_first():
    _, k = _kernel()
    g = k.gap
    assert g is not None
    effects = g.effects()
    parts = [p for e in effects for p in e.parts]
    # every non-zero component is netted exactly once, and the nets add up to the gap
    assert sorted(parts) == sorted((r.reason, r.registers) for r in g.reasons)
    assert all(e.registers == sum(n for _, n in e.parts) for e in effects)
    assert sum(e.registers for e in effects) == g.total == k.stats.registers - g.estimate
    notes = k.notes()
    first_effect = next(i for i, n in enumerate(notes) if n.startswith("In effect: "))
    first_part = next(i for i, n in enumerate(notes) if n.startswith("From the SASS: "))
    assert first_effect < first_part
    assert notes[first_effect] == f"In effect: {g.headline()}."
    assert f"({k.stats.registers} against {g.estimate}): " in notes[first_effect]
    tail = notes[first_effect].split("): ", 1)[1]
    assert [int(x) for x in re.findall(r" ([+-]\d+)(?=,|\.$)", tail)] == \
        [e.registers for e in effects if e.registers]        # the nets, largest first
    d = k.to_dict()
    assert [e["registers"] for e in d["gap_effects"]] == [e.registers for e in effects]


def test_hoisted_loads_are_named_as_loads():
    """The loop's loads: the values ptxas keeps longer that a PTX ld.global defines are
    counted and said to be loads hoisted; only PTX values such a load defines count."""
    ptx, k = _kernel()
    g = k.gap
    loaded = set(re.findall(r"ld\.global(?:\.\w+)*\s+(%\w+)", ptx))
    kept = g.get("kept longer")
    assert 0 < g.kept_loads <= min(kept, len(loaded))
    sched = next(e for e in g.effects() if e.effect == "schedule")
    assert f"{g.kept_loads} loaded values: loads hoisted" in sched.text or \
        f"keeps {kept} loaded values" in sched.text
    assert g.peak_loop is not None and "across the loop" in sched.text


def test_wording_follows_the_numbers():
    """The same effect reads differently by its sign and parts (no kernel names involved)."""
    neg = Gap(regcount=30, estimate=42, reasons=(
        GapReason(reason="kept longer", registers=4),
        GapReason(reason="not live here", registers=-16)))
    (e,) = neg.effects()
    assert e.registers == -12 and "12 fewer" in e.text and "rematerialised" in e.text
    assert neg.headline().startswith("ptxas needs 12 fewer registers")
    loads = Gap(regcount=40, estimate=12, reasons=(GapReason(reason="kept longer",
                                                             registers=28),),
                kept_loads=28, peak_loop=(4, 1))
    assert loads.effects()[0].text.startswith(
        "ptxas keeps 28 loaded values live across the loop unrolled 4x")
    over = Gap(regcount=10, estimate=6, reasons=(GapReason(reason="fixed overhead",
                                                           registers=3),
                                                 GapReason(reason="alignment holes",
                                                           registers=1)))
    assert over.effects()[0].text == ("4 registers hold no value of yours: 3 fixed overhead, "
                                      "1 alignment holes")
