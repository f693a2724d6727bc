"""`ptxforge analyze` explains REGCOUNT − estimate from the SASS when it compiles.

Real NVRTC corpus kernels, whole-program ptxas 13.5 (relocatable where a test says so) and
nvdisasm: the notes and the JSON ``gap`` come from :func:`ptxforge.reports.gap.explain_gap`.
"""

from __future__ import annotations

import pytest

from ptxforge.reports.analyze import analyze_ptx
from ptxforge.toolchain.compile import CompileOptions, CompileRequest, compile_ptx
from ptxforge.toolchain.sass import NVDISASM_ENV, sass_liveness

from corpus_util import corpus_ptx, corpus_sources

PTX_GUESSES = ("schedules loads early", "none in this file calls it",
               "is ptxas's fixed overhead, not pressure")


def _gap_sums(k) -> dict:
    gap = k.to_dict()["gap"]
    assert gap is not None and sum(g["registers"] for g in gap) == \
        k.stats.registers - k.estimate.registers
    return {g["reason"]: g["registers"] for g in gap}


def _sass_notes(k) -> list:
    notes = k.notes()
    assert not any(g in n for n in notes for g in PTX_GUESSES), notes
    return [n for n in notes if n.startswith("From the SASS: ")]


@pytest.mark.parametrize("name", corpus_sources())
def test_line_info_does_not_change_the_code(name):
    """analyze compiles with -lineinfo for the trace: the same SASS and REGCOUNT."""
    ptx = corpus_ptx(name, "sm_80", False)
    plain = compile_ptx(ptx, "sm_80")
    lined = compile_ptx(ptx, "sm_80", line_info=True)
    assert [(k.name, k.registers, k.spill_stores) for k in plain] == \
           [(k.name, k.registers, k.spill_stores) for k in lined]
    a, b = sass_liveness(plain), sass_liveness(lined)
    assert [(f.name, [i.text for i in f.instructions]) for f in a.functions] == \
           [(f.name, [i.text for i in f.instructions]) for f in b.functions]
    assert b.ptx_lines and not a.ptx_lines    # -lineinfo is what gives the PTX lines


def test_function_pointer_sobel_is_the_call_abi():
    """Estimate 21 vs 26: the SASS peak is at the CALL into the square-root slow path, with
    13 registers the callee may clobber; no load to blame (the old note said loads)."""
    a = analyze_ptx(corpus_ptx("sobel_fnptr", "sm_80", False), "sobel_fnptr.ptx", "sm_80")
    (k,) = a.kernels
    gap = _gap_sums(k)
    assert gap["ABI call clobbers"] == max(gap.values()) == 13
    notes = _sass_notes(k)
    assert notes[0].startswith("From the SASS: -16 peak elsewhere")
    assert any("+13 ABI call clobbers" in n for n in notes)
    assert "plus 0 (a subroutine" in next(n for n in notes if "fixed overhead" in n)
    f = analyze_ptx(corpus_ptx("sobel_fnptr", "sm_80", False), "sobel_fnptr.ptx", "sm_80",
                    kernel="_Z9sobel_magffffffff").kernels[0]
    assert f.occupancy_note.endswith("(called through a function pointer: its address is "
                                     "taken in the initializer of sobel_ops)")


def test_relocatable_scan_by_key_is_the_helper_call():
    """Relocatable, the shuffles call __cuda_sm70_shflsync_*: the peak is at that CALL, 21
    of the 50 registers its clobbers; whole-program there is no call and no clobber."""
    ptx = corpus_ptx("scan_by_key", "sm_80", False)
    (k,) = analyze_ptx(ptx, "scan_by_key.ptx", "sm_80",
                       request=CompileRequest(options=CompileOptions(relocatable=True))).kernels
    gap = _gap_sums(k)
    assert k.stats.registers == 50 and gap["ABI call clobbers"] == max(gap.values()) == 21
    assert _sass_notes(k)[0].startswith("From the SASS: +21 ABI call clobbers")
    (w,) = analyze_ptx(ptx, "scan_by_key.ptx", "sm_80").kernels
    assert "ABI call clobbers" not in _gap_sums(w) and w.stats.registers == 24


def test_tensor_core_gemm_folds_constant_offsets():
    """bf16 and f64 mma GEMMs: the estimate counts address values ptxas folds into constant
    offsets of its loads; each gets SASS notes (the bf16 one had none before)."""
    a = analyze_ptx(corpus_ptx("mma_gemm", "sm_80", False), "mma_gemm.ptx", "sm_80")
    folded = {}
    for k in a.kernels:
        gap = _gap_sums(k)
        folded[k.name] = gap["folded away"]
        assert any("folded away" in n for n in _sass_notes(k))
    assert folded == {"mma_gemm_bf16": -5, "mma_gemm_f64": -8}
    d = a.to_dict()["kernels"][0]
    assert d["gap"] == [{"reason": r.reason, "registers": r.registers}
                        for r in a.kernels[0].gap.reasons]
    assert d["notes"] == list(a.kernels[0].notes())


def test_without_nvdisasm_the_notes_say_they_are_guesses(monkeypatch, tmp_path):
    monkeypatch.setenv(NVDISASM_ENV, str(tmp_path))
    (k,) = analyze_ptx(corpus_ptx("sobel_fnptr", "sm_80", False), "s.ptx", "sm_80").kernels
    assert k.gap is None and k.to_dict()["gap"] is None
    assert not any(n.startswith("From the SASS") for n in k.notes())
    assert any(n.startswith("These notes are guessed from the PTX, not measured on the SASS: "
                            "nvdisasm is unavailable") for n in k.notes())


def test_not_compiled_has_no_gap():
    (k,) = analyze_ptx(corpus_ptx("weno", "sm_80", False), "w.ptx", "sm_80",
                       compile=False).kernels
    assert k.gap is None and k.to_dict()["gap"] is None and k.gap_note is None
