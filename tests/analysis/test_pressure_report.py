"""The pressure report: peak, live values, attribution, loops, blocks, text and pinned JSON keys."""

from __future__ import annotations

import json

from ptxforge.analysis.pressure import SCHEMA, analyze_pressure, pressure_by_kernel, sparkline
from ptxforge.ptx import ir, types

from liveness_kit import SAMPLES, inst, kernel


def report_of(name: str, **kw):
    return analyze_pressure(kernel(SAMPLES[name]), **kw)


def test_peak_value_indices_and_values_longest_lived_first():
    r = report_of("straight")
    assert (r.peak.units, r.peak.index, r.peak.indices) == (4, 2, (2, 4))
    assert r.peak.instruction == "ld.global.f32 %f2, [%rd1+4];"
    assert [(v.name, v.live_length, v.def_index, v.last_use) for v in r.peak.values] == \
        [("%rd1", 6, 0, 6), ("%f1", 2, 1, 3), ("%f2", 1, 2, 3)]
    v = r.peak.values[0]
    assert (v.type, v.reg_class, v.bits, v.units, v.def_text, v.def_count) == \
        ("u64", "b64", 64, 2, "ld.param.u64 %rd1, [p];", 1)
    assert r.peak.by_class == (("b64", 1), ("f32", 2))
    assert list(r.timeline.at) == [2, 3, 4, 3, 4, 3, 0, 0]
    assert list(r.timeline.before) == [0, 2, 3, 4, 3, 4, 3, 0]


def test_predicate_peak_is_separate():
    r = report_of("setp2")
    assert (r.pred_peak.units, r.pred_peak.indices) == (2, (2,))
    assert [(v.name, v.live_length) for v in r.pred_peak.values] == [("%p2", 2), ("%p1", 1)]
    assert r.peak.units == 3
    assert list(r.timeline.pred_at) == [0, 0, 2, 1, 0, 0]


def test_loop_live_in_carried_and_peak():
    r = report_of("loop")
    (lp,) = r.loops
    assert (lp.name, lp.blocks, lp.live_in, lp.carried, lp.peak, lp.peak_index) == ("LOOP", (1,), 4, 2, 5, 3)
    assert [(v.name, v.live_length) for v in lp.values] == [("%rd1", 8), ("%f1", 7), ("%r1", 6), ("%f2", 1)]
    assert lp.values_total == 4


def test_blocks_of_a_diamond():
    r = report_of("diamond")
    assert [(b.name, b.live_in, b.live_out, b.peak, b.peak_index, b.pred_peak) for b in r.blocks] == [
        ("bb0", 0, 3, 3, 1, 1), ("bb1", 3, 3, 4, 4, 0), ("ELSE", 2, 3, 3, 8, 0), ("JOIN", 3, 0, 0, 9, 0)]


def test_register_counts_per_type_class_and_declaration():
    r = report_of("setp2")
    assert r.registers_by_type == (("pred", 2), ("u64", 1), ("f32", 1))
    assert r.registers_by_class == (("pred", 2), ("b64", 1), ("f32", 1))
    assert r.declared == (("b64", 1), ("f32", 1), ("pred", 2))


def test_attribution_to_source_lines_with_inlining():
    here = ir.SourceLoc("kern.py", 10)
    jl = ir.SourceLoc("foo.jl", 92, function="weno", inlined_at=ir.SourceLoc("bar.jl", 7))
    body = (
        inst("ld.param.u64 %rd1, [p]", here),
        inst("ld.global.f32 %f1, [%rd1]", jl),
        inst("ld.global.f32 %f2, [%rd1+4]", jl),
        inst("ld.global.f32 %f3, [%rd1+8]", ir.SourceLoc("foo.jl", 93)),
        inst("add.f32 %f4, %f1, %f2"),
        inst("add.f32 %f4, %f4, %f3"),
        inst("st.global.f32 [%rd1], %f4"),
    )
    # A register's own loc wins over its defining instruction's.
    f9 = ir.Register("%f9", types.f32, ir.SourceLoc("gen.py", 5))
    rd1 = ir.Register("%rd1", types.u64)
    body = (body[0], ir.Instruction("mov.f32", (f9, ir.Immediate(0.0, text="0f00000000")), 1, loc=here),
            ir.Instruction("st.global.f32", (ir.Address(rd1), f9))) + body[1:]
    r = analyze_pressure(ir.Kernel("k", body=body))
    assert (r.peak.units, r.peak.index) == (5, 5)
    by = {v.name: (v.loc, v.function, v.inlined_at) for v in r.peak.values}
    assert by == {"%rd1": ("kern.py:10", None, None), "%f1": ("foo.jl:92", "weno", "bar.jl:7"),
                  "%f2": ("foo.jl:92", "weno", "bar.jl:7"), "%f3": ("foo.jl:93", None, None)}
    groups = [(g.loc, g.function, g.count, g.units, g.names) for g in r.peak.by_source]
    assert groups == [("foo.jl:92", "weno", 2, 2, ("%f1", "%f2")), ("kern.py:10", None, 1, 2, ("%rd1",)),
                      ("foo.jl:93", None, 1, 1, ("%f3",))]
    first = analyze_pressure(ir.Kernel("k", body=body[:3]))
    assert {v.name: v.loc for v in first.peak.values} == {"%rd1": "kern.py:10", "%f9": "gen.py:5"}
    text = r.to_text()
    assert "foo.jl:92 (weno, inlined at bar.jl:7)" in text


def test_text_form():
    text = report_of("loop").to_text()
    assert "peak: 5 general registers (32-bit units) at instruction 3" in text
    assert "  ▄▅▇█▇▇▇▇▁▁" in text
    assert "%f1   f32       1    1         8       7" in text
    assert "LOOP        1       1        4        2     5   3" in text


def test_sparkline_buckets_take_the_max():
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7, 8], width=9) == "▁▁▂▃▄▅▆▇█"
    assert sparkline([0, 8, 0, 0, 4, 0], width=3) == "█▁▄"
    assert sparkline([], width=5) == ""
    assert len(sparkline(list(range(1000)), width=40)) == 40


TOP_KEYS = ["schema", "kernel", "n_instructions", "n_blocks", "n_loops", "registers", "peak", "pred_peak",
            "class_peaks", "timeline", "blocks", "loops", "graph"]
PEAK_KEYS = ["units", "index", "indices", "instruction", "by_class", "values", "by_source"]
VALUE_KEYS = ["name", "type", "reg_class", "bits", "units", "def_index", "def_text", "def_count", "last_use",
              "live_length", "loc", "function", "inlined_at"]
SOURCE_KEYS = ["loc", "file", "line", "function", "count", "units", "names"]
BLOCK_KEYS = ["index", "name", "start", "end", "live_in", "live_out", "peak", "peak_index", "pred_peak"]
LOOP_KEYS = ["header", "name", "depth", "parent", "live_in", "carried", "peak", "peak_index", "values_total",
             "blocks", "values"]
GRAPH_KEYS = ["max_edges", "truncated", "nodes", "edges", "classes"]
GRAPH_CLASS_KEYS = ["reg_class", "scope", "window", "nodes", "edges", "estimated_edges", "truncated", "colors",
                    "max_clique", "max_clique_exact"]


def test_json_keys_are_pinned():
    d = json.loads(report_of("loop", graph=True).to_json())
    assert list(d) == TOP_KEYS
    assert d["schema"] == SCHEMA == "ptxforge.pressure/1"
    assert list(d["registers"]) == ["total", "by_type", "by_class", "declared"]
    assert list(d["peak"]) == PEAK_KEYS and list(d["pred_peak"]) == PEAK_KEYS
    assert list(d["peak"]["values"][0]) == VALUE_KEYS
    assert list(d["peak"]["by_source"][0]) == SOURCE_KEYS
    assert list(d["class_peaks"]) == ["pred", "b16", "b32", "b64", "b128", "f32", "f64"]
    assert list(d["class_peaks"]["b64"]) == ["values", "units", "index"]
    assert d["class_peaks"]["b64"] == {"values": 1, "units": 2, "index": 0}
    assert list(d["timeline"]) == ["before", "after", "at", "pred_before", "pred_after", "pred_at"]
    assert list(d["blocks"][0]) == BLOCK_KEYS
    assert list(d["loops"][0]) == LOOP_KEYS and list(d["loops"][0]["values"][0]) == VALUE_KEYS
    assert list(d["graph"]) == GRAPH_KEYS and list(d["graph"]["classes"][0]) == GRAPH_CLASS_KEYS
    f32 = [c for c in d["graph"]["classes"] if c["reg_class"] == "f32"][0]
    assert (f32["scope"], f32["nodes"], f32["edges"], f32["colors"], f32["max_clique"]) == ("full", 2, 1, 2, 2)
    assert report_of("loop").to_dict()["graph"] is None


def test_output_is_deterministic():
    a = report_of("diamond", graph=True)
    b = report_of("diamond", graph=True)
    assert a.to_json() == b.to_json()
    assert a.to_text() == b.to_text()
    assert a == b


def test_empty_kernel_and_module():
    m = ir.Module("8.0", "sm_80", kernels=(kernel(SAMPLES["straight"], "a"), kernel(SAMPLES["loop"], "b"),
                                           ir.Kernel("proto", body=None, is_entry=False)))
    reports = pressure_by_kernel(m)
    assert list(reports) == ["a", "b"]
    assert [r.peak.units for r in reports.values()] == [4, 5]
    empty = analyze_pressure(ir.Kernel("e", body=()))
    assert (empty.peak.units, empty.peak.index, empty.peak.indices, empty.n_blocks) == (0, None, (), 0)
    assert "no instructions" in empty.to_text()
    assert json.loads(empty.to_json())["timeline"]["at"] == []


def test_analyze_pressure_names_what_it_was_given_instead_of_a_kernel():
    import pytest

    from ptxforge import KernelBuilder, PtxforgeError
    from ptxforge.analysis.pressure import analyze_pressure
    from ptxforge.dsl import kernels

    with pytest.raises(PtxforgeError, match=r"got an ir.Module; pick one .* \(it has: saxpy\)"):
        analyze_pressure(kernels.saxpy())
    with pytest.raises(PtxforgeError, match="expected an ir.Kernel, got str"):
        analyze_pressure("saxpy")
    with pytest.raises(PtxforgeError, match="got KernelBuilder; build\\(\\) it first"):
        analyze_pressure(KernelBuilder("k"))


def test_a_report_is_an_estimate_for_compare():
    from ptxforge import compile_ptx, emit
    from ptxforge.analysis.pressure import analyze_pressure
    from ptxforge.dsl import kernels
    from ptxforge.reports.estimate import compare_with_ptxas

    module = kernels.saxpy()
    report = analyze_pressure(module.kernels[0])
    c = compare_with_ptxas(report, compile_ptx(emit(module), "sm_80")["saxpy"])
    assert (c.estimate.registers, c.estimate.predicates) == (report.peak.units, report.pred_peak.units)
    assert c.estimate.source == "PressureReport"


_LINE0_PTX = """.version 8.0
.target sm_80
.address_size 64
.file 1 "k.cu"
.visible .entry k(.param .u64 p)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    .loc 1 5 3
    ld.param.u64 %rd1, [p];
    .loc 1 0 0
    mov.u32 %r1, %tid.x;
    .loc 1 7 3
    add.s32 %r2, %r1, 1;
    st.global.u32 [%rd1], %r2;
    st.global.u32 [%rd1+4], %r1;
    ret;
}
"""


def test_line_zero_is_compiler_generated_not_a_source_line():
    """``.loc 1 0 0`` marks code without a source line: the value's location reads
    ``(compiler-generated)`` (not ``k.cu:0``) and its source group has no file or line."""
    from ptxforge.ptx.parse import parse

    peak = analyze_pressure(parse(_LINE0_PTX).kernels[0]).peak
    assert {v.name: v.loc for v in peak.values} == {
        "%rd1": "k.cu:5", "%r1": "(compiler-generated)", "%r2": "k.cu:7"}
    groups = {g.loc: (g.file, g.line, g.names) for g in peak.by_source}
    assert groups["(compiler-generated)"] == (None, None, ("%r1",))
    assert groups["k.cu:7"] == ("k.cu", 7, ("%r2",))
