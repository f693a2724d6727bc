"""SASS registers traced to PTX values, and the gap REGCOUNT − estimate split into reasons.

Real compilers only: NVRTC for the corpus (tests/corpus/*.cu, -lineinfo), ptxas through
ptxforge.toolchain.compile (whole-program by default, relocatable where the helper CALL
appears), nvdisasm for the life ranges.
"""

from __future__ import annotations

import json
import re

import pytest

from ptxforge.toolchain.compile import CompileOptions, CompileRequest
from ptxforge.toolchain.sass import find_nvdisasm

from corpus_util import corpus_ptx, corpus_sources

try:
    find_nvdisasm()
except Exception as exc:  # noqa: BLE001 - any reason nvdisasm is missing skips the module
    pytest.skip(f"nvdisasm not available: {exc}", allow_module_level=True)

from ptxforge.reports.sass import sass_report
from ptxforge.reports.sass_trace import ptx_line_map


def _report(name: str, arch: str = "sm_80", relocatable: bool = False, kernel=None):
    return sass_report(corpus_ptx(name, arch, True), arch, kernel=kernel, file=f"{name}.ptx",
                       request=CompileRequest(options=CompileOptions(relocatable=relocatable)))


@pytest.fixture(scope="module")
def corpus_reports():
    return {name: _report(name) for name in corpus_sources()}


def test_gap_adds_up_on_every_corpus_kernel(corpus_reports):
    seen = 0
    for name, rep in corpus_reports.items():
        for k in rep.kernels:
            g = k.gap
            assert g is not None, (name, k.name)
            assert g.regcount == k.regcount and g.estimate == k.estimate.registers
            assert sum(r.registers for r in g.reasons) == k.regcount - k.estimate.registers, \
                (name, k.name, g.to_list())
            assert all(r.registers != 0 for r in g.reasons)
            seen += 1
    assert seen >= 35


def test_peak_registers_traced_to_values(corpus_reports):
    """Where every SASS instruction has a PTX line and the SASS peak is in the kernel's own
    PTX (not in a function ptxas compiled into it), >= 95% of the peak's registers are
    traced; the peak values are exactly the registers nvdisasm marks there."""
    checked = 0
    for name, rep in corpus_reports.items():
        for k in rep.kernels:
            t = k.trace
            assert [v.register for v in t.peak_values] == list(k.function.peak().registers)
            assert t.line_map_ok, (name, k.name)
            if t.all_ptx_lines and t.peak_ptx_index is not None:
                assert t.traced_fraction >= 0.95, (name, k.name, t.by_kind())
                checked += 1
    assert checked >= 30


def test_line_map_lines_up_with_the_ptx():
    from ptxforge.ptx.parse import parse
    ptx = corpus_ptx("sobel_fnptr", "sm_80", True)
    k = parse(ptx).kernel("sobel_fnptr")
    m = ptx_line_map(ptx, k)
    lines = ptx.split("\n")
    assert len(m) == len(k.instructions)
    for n, i in m.items():
        assert k.instructions[i].opcode in lines[n - 1]
    # the call spanning several lines is at its first line
    call = next(n for n, i in m.items() if k.instructions[i].opcode == "call")
    assert lines[call - 1].strip().startswith("call")


def test_function_pointer_kernel_is_the_call_abi():
    k = _report("sobel_fnptr").kernel("sobel_fnptr")
    assert k.function.peak().instructions[0].is_call
    clobbers = k.gap.get("ABI call clobbers")
    assert clobbers >= 10
    assert clobbers == max(r.registers for r in k.gap.reasons)
    assert any(n.startswith(f"+{clobbers} ABI call clobbers") for n in k.gap_notes)
    assert dict(k.trace.peak_groups())["(call clobber)"] == clobbers


def test_scan_by_key_peak_is_the_shfl_helper_call_when_relocatable():
    k = _report("scan_by_key", relocatable=True).kernel("scan_by_key")
    at = k.function.peak().instructions[0]
    assert re.match(r"CALL\.ABS\.NOINC `\(__cuda_sm70_shflsync_(down|up)_p\)", at.text)
    assert at.ptx.startswith("shfl.sync")
    clobbers = k.gap.get("ABI call clobbers")
    assert clobbers == at.count("GPR") - at.count("GPR", call_clobbers=False) > 0
    assert clobbers == max(r.registers for r in k.gap.reasons)
    # whole-program: the shuffles are inline, no CALL at the peak, no clobbers
    whole = _report("scan_by_key").kernel("scan_by_key")
    assert not whole.function.peak().instructions[0].is_call
    assert whole.gap.get("ABI call clobbers") == 0
    assert whole.regcount < k.regcount


def test_tensor_core_gemm_folds_parameters_and_address_halves():
    from ptxforge.analysis.liveness import analyze_liveness
    from ptxforge.ptx.parse import parse
    from ptxforge.reports.gap import _live_units

    ptx = corpus_ptx("mma_gemm", "sm_80", True)
    rep = _report("mma_gemm")
    for name in ("mma_gemm_bf16", "mma_gemm_f64"):
        k = rep.kernel(name)
        assert k.gap.get("folded away") < 0
        kernel = parse(ptx).kernel(name)
        _, live = _live_units(analyze_liveness(kernel), k.trace.peak_ptx_index)
        folded = {p for p in live if p in k.trace.folded}
        assert len(folded) == -k.gap.get("folded away")
        ops = {i.defs[0].name: i.opcode for i in kernel.instructions if i.defs}
        # what ptxas folds: kernel parameters (c[0x0][…] operands), constant-offset
        # address arithmetic and its 64-bit high halves
        assert {ops[n].split(".")[0] for n, _ in folded} <= {"ld", "add", "cvta", "mov", "cvt",
                                                             "mul", "shl"}
        assert any(ops[n].startswith(("ld.param", "add.s64", "cvta")) for n, _ in folded)


def test_tensor_core_loop_unrolled_by_ptxas():
    """mma.cu's ldmatrix kernel: ptxas unrolls its PTX loop 4 times (the SASS loop body holds
    4 copies of each of its lines)."""
    k = _report("mma").kernel("mma_tf32_ldmatrix")
    assert [lp.unroll for lp in k.trace.loops] == [4]
    assert k.trace.loops[0].peak <= k.sass_peak


def test_json_contract_and_text_width():
    rep = _report("scan_by_key", relocatable=True)
    d = json.loads(rep.to_json())
    k = d["kernels"][0]
    assert all(set(v) >= {"register", "ptx", "source", "python"} for v in k["peak_values"])
    assert len(k["peak_values"]) == k["sass"]["registers"]
    assert all(set(x) >= {"source", "max_live"} for x in k["by_line"])
    assert max(x["max_live"] for x in k["by_line"]) == k["sass"]["registers"]
    assert all(set(x) >= {"ptx_lines", "peak", "unroll"} for x in k["loops"])
    assert sum(g["registers"] for g in k["gap"]) == (k["ptxas"]["registers"]
                                                    - k["estimate"]["registers"])
    text = rep.to_text()
    for head in ("by the source line of the value held", "heaviest source lines", "gap: REGCOUNT"):
        assert head in text
    mine = text[text.index("SASS peak (44 registers)"
                           if "SASS peak (44 registers)" in text else "by the source line"):]
    assert max(len(line) for line in mine.splitlines()) <= 100


def test_dsl_kernel_values_carry_python_lines():
    from ptxforge.dsl import kernels
    rep = sass_report(kernels.sgemm_tiled(), "sm_80")
    k = rep.kernels[0]
    pys = [v.python for v in k.trace.peak_values if v.kind in ("ptx", "merged")]
    assert pys and all(p and re.search(r"\.py:\d+", p) for p in pys)
    assert sum(r.registers for r in k.gap.reasons) == k.regcount - k.estimate.registers


def test_compare_notes_come_from_the_gap():
    from ptxforge.reports.estimate import compare_with_ptxas
    k = _report("sobel_fnptr").kernel("sobel_fnptr")
    guessed = compare_with_ptxas(k.estimate, k.stats, "sm_80")
    measured = compare_with_ptxas(k.estimate, k.stats, "sm_80", gap=k.gap)
    notes = measured.notes()
    assert [n for n in notes if n.startswith("From the SASS: ")] == [
        f"From the SASS: {n}" for n in k.gap.notes()]
    assert not any("schedules loads early" in n for n in notes)
    assert any("ABI call clobbers" in n for n in notes)
    assert not any("ABI call clobbers" in n for n in guessed.notes())
