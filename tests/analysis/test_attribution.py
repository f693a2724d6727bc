"""Source attribution: registers → the .loc line of their first definition, aggregated."""

from __future__ import annotations

from pathlib import Path

from ptxforge.analysis.attribution import attribute_registers, callsite, first_definitions
from ptxforge.ptx import ir
from ptxforge.ptx.parse import parse

from corpus_util import CORPUS_DIR, corpus_ptx

SNIPPET = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .pred %p<2>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<3>;
    .loc 1 10 1
    ld.param.u64 %rd1, [p];
    .loc 1 11 5
    ld.global.f32 %f1, [%rd1];
    ld.global.f32 %f2, [%rd1+4];
    .loc 2 3 9, function_name $L__info_string0, inlined_at 1 12 2
    mul.f32 %f3, %f1, %f2;
    setp.gt.f32 %p1, %f3, 0f00000000;
    .loc 1 11 5
    mov.f32 %f1, %f3;
    ret;
}
.file 1 "kern.cu"
.file 2 "helper.cuh"
.section .debug_str
{
$L__info_string0:
.b8 115,113,0
}
"""


def _regs(k: ir.Kernel, *names: str) -> list:
    found = {r.name: r for i in k.instructions for r in i.defs}
    return [found[n] for n in names]


def test_first_definition_wins():
    k = parse(SNIPPET).kernel("k")
    defs = first_definitions(k)
    f1 = _regs(k, "%f1")[0]
    assert defs[f1][0] == 1 and defs[f1][1].opcode == "ld.global.f32"


def test_aggregate_by_line():
    k = parse(SNIPPET).kernel("k")
    a = attribute_registers(k, _regs(k, "%f1", "%f2", "%f3", "%p1", "%rd1"))
    rows = [(s.loc.file, s.loc.line, s.values, s.units, s.predicates) for s in a.lines]
    # ordered by general-register units (64-bit %rd1 counts 2), then by number of values
    assert rows == [("kern.cu", 11, 2, 2, 0), ("kern.cu", 10, 1, 2, 0), ("helper.cuh", 3, 2, 1, 1)]
    helper = a.lines[2]
    assert helper.loc.function == "sq"
    assert (helper.loc.inlined_at.file, helper.loc.inlined_at.line) == ("kern.cu", 12)
    assert helper.registers == ("%f3", "%p1")
    assert a.unattributed == ()


def test_aggregate_by_callsite():
    k = parse(SNIPPET).kernel("k")
    a = attribute_registers(k, _regs(k, "%f1", "%f2", "%f3", "%p1"), by="callsite")
    rows = [(s.loc.file, s.loc.line, s.values) for s in a.lines]
    assert rows == [("kern.cu", 11, 2), ("kern.cu", 12, 2)]
    assert callsite(first_definitions(k)[_regs(k, "%f3")[0]][1].loc).line == 12


def test_without_loc_everything_is_unattributed():
    text = "\n".join(line for line in SNIPPET.splitlines() if ".loc" not in line)
    k = parse(text).kernel("k")
    a = attribute_registers(k, _regs(k, "%f1", "%f2"))
    assert a.lines == () and [v.register.name for v in a.unattributed] == ["%f1", "%f2"]
    assert a.to_dict()["unattributed"] == ["%f1", "%f2"]


def _loads_line() -> int:
    lines = (CORPUS_DIR / "pressure.cu").read_text().splitlines()
    return next(n for n, text in enumerate(lines, 1) if "// LOADS" in text)


def test_values_live_at_the_peak_come_from_the_loads_line():
    from ptxforge.analysis.liveness import analyze_liveness

    k = parse(corpus_ptx("pressure", "sm_80", True)).kernel("live_window")
    lv = analyze_liveness(k)
    series = lv.series()
    peak = series.index(max(series))
    live = [lv.register(r) for r in lv.live_at(peak)]
    a = attribute_registers(k, live)
    top = a.lines[0]
    assert Path(top.loc.file).name == "pressure.cu"
    assert top.loc.line == _loads_line()
    # most of the 32 loaded floats are live together at the peak
    assert top.values >= 24
    assert "live_window" not in (top.loc.function or "")
    text = a.format()
    assert f"pressure.cu:{_loads_line()}" in text.splitlines()[0]


def test_pressure_report_names_the_loads_line_at_the_peak():
    from ptxforge.analysis.pressure import analyze_pressure

    k = parse(corpus_ptx("pressure", "sm_90", True)).kernel("live_window")
    report = analyze_pressure(k)
    top = report.peak.by_source[0]
    assert Path(top.file).name == "pressure.cu" and top.line == _loads_line()
    assert top.count >= 24
    # the same answer from this module's helper on the report's own live values
    regs = {r.name: r for i in k.instructions for r in i.defs}
    mine = attribute_registers(k, [regs[v.name] for v in report.peak.values if v.name in regs])
    assert mine.lines[0].loc.line == top.line and mine.lines[0].values == top.count


# -- inlining chains, demangled names, compiler-generated lines ---------------------------------
NESTED = """.version 8.0
.target sm_80
.address_size 64
.visible .entry _Z2Gui(.param .u32 n)
{
    .reg .f64 %fd<6>;
    .loc 1 67 5
    .loc 1 38 13, function_name $L__info_string0, inlined_at 1 67 5
    .loc 1 22 5, function_name $L__info_string1, inlined_at 1 38 13
    mov.f64 %fd1, 0d3FF0000000000000;
    .loc 1 68 5
    .loc 1 38 13, function_name $L__info_string0, inlined_at 1 68 5
    .loc 1 22 5, function_name $L__info_string1, inlined_at 1 38 13
    mov.f64 %fd2, 0d4000000000000000;
    .loc 1 0 5
    add.f64 %fd3, %fd1, %fd2;
    .loc 1 70 1
    add.f64 %fd4, %fd3, %fd3;
    ret;
}
.file 1 "weno_big.cu"
.section .debug_str
{
$L__info_string0:
.b8 95,90,53,119,101,110,111,53,80,75,100,108,108,105,98,0
$L__info_string1:
.b8 95,90,50,115,99,105,105,105,0
}
"""


def test_format_shows_the_chain_with_demangled_names():
    k = parse(NESTED).kernel("_Z2Gui")
    regs = _regs(k, "%fd1", "%fd2", "%fd3", "%fd4")
    a = attribute_registers(k, regs[:1])
    assert a.format().splitlines() == [
        "      1 values     2 units  weno_big.cu:22 in sc ← :38 in weno5 ← :67 in Gu"]
    both = attribute_registers(k, regs[:2])  # line 22 reached through two call chains
    (share,) = both.lines
    assert (share.loc.line, share.values, share.contexts) == (22, 2, 2)
    assert both.format().splitlines() == [
        "      2 values     4 units  weno_big.cu:22 in sc (inlined at 2 call sites)"]
    by_call = attribute_registers(k, regs, by="callsite")
    assert [(s.loc.line, s.values) for s in by_call.lines] == [(0, 1), (67, 1), (68, 1), (70, 1)]
    assert by_call.format().splitlines()[0].endswith("units  (compiler-generated)")


def test_line_zero_is_compiler_generated():
    k = parse(NESTED).kernel("_Z2Gui")
    (fd3,) = _regs(k, "%fd3")
    loc = k.instructions[2].loc
    assert (loc.line, loc.known, str(loc)) == (0, False, "(compiler-generated)")
    a = attribute_registers(k, [fd3])
    (share,) = a.lines
    assert share.compiler_generated and share.registers == ("%fd3",)
    d = share.to_dict()
    assert d["line"] is None and d["file"] == "weno_big.cu"
    assert a.values[0].to_dict()["line"] is None
    assert "weno_big.cu:0" not in a.format()


def test_line_zero_is_one_group_whatever_the_file():
    text = NESTED.replace("    .loc 1 70 1\n", "    .loc 2 0 0\n").replace(
        '.file 1 "weno_big.cu"', '.file 1 "weno_big.cu"\n.file 2 "helpers.cuh"')
    k = parse(text).kernel("_Z2Gui")
    assert {i.loc.file for i in k.instructions[2:4]} == {"weno_big.cu", "helpers.cuh"}
    a = attribute_registers(k, _regs(k, "%fd3", "%fd4"))
    assert [(s.compiler_generated, s.registers) for s in a.lines] == [(True, ("%fd3", "%fd4"))]
    assert a.format().splitlines() == ["      2 values     4 units  (compiler-generated)"]


def test_line_zero_groups_together_in_nvrtc_output():
    # NVRTC writes `.loc 1 0 …` for address setup it generated; one group, whatever the column
    k = parse(corpus_ptx("gemm", "sm_80", True)).kernel("sgemm_4x4")
    defs = first_definitions(k)
    expected = sorted(r.name for r, (_, inst) in defs.items()
                      if inst.loc is not None and inst.loc.line == 0)
    assert len(expected) >= 10
    a = attribute_registers(k, list(defs))
    generated = [s for s in a.lines if s.compiler_generated]
    assert len(generated) == 1 and sorted(generated[0].registers) == expected
    assert all(s.loc.line > 0 for s in a.lines if not s.compiler_generated)
    assert ":0 " not in a.format(top=100) and "(compiler-generated)" in a.format(top=100)


def test_json_keeps_the_whole_chain():
    k = parse(NESTED).kernel("_Z2Gui")
    d = attribute_registers(k, _regs(k, "%fd1")).to_dict()["lines"][0]
    assert (d["line"], d["function"]) == (22, "_Z2sciii")
    weno5 = d["inlined_at"]
    assert (weno5["line"], weno5["column"], weno5["function"]) == (38, 13, "_Z5weno5PKdllib")
    kernel = weno5["inlined_at"]
    assert (kernel["line"], kernel["function"], kernel["inlined_at"]) == (67, None, None)


def test_describe_loc():
    from ptxforge.analysis.attribution import describe_loc

    outer = ir.SourceLoc("k.cu", 67, 5)
    mid = ir.SourceLoc("w.cuh", 38, 13, "_Z5weno5PKdllib", outer)
    inner = ir.SourceLoc("w.cuh", 0, 0, "_Z2sciii", mid)
    assert describe_loc(inner, "_Z2Gui") == \
        "(compiler-generated) in sc ← w.cuh:38 in weno5 ← k.cu:67 in Gu"
    assert describe_loc(outer, "Gu") == "k.cu:67"
    assert describe_loc(None) == "?"
    assert describe_loc(mid) == "w.cuh:38 in weno5 ← k.cu:67"


def test_templates_kernel_names_are_demangled_in_the_chain():
    k = parse(corpus_ptx("templates", "sm_80", True)).kernel("_Z4map2If5SaxpyIfEEvPKT_S4_PS2_T0_i")
    text = attribute_registers(k, [r for i in k.instructions for r in i.defs]).format()
    assert "in Saxpy<float>::operator() ← :" in text
    assert text.rstrip().count("in map2<float, Saxpy<float> >") >= 1


def test_doctests():
    import doctest

    from ptxforge.analysis import attribution

    result = doctest.testmod(attribution)
    assert result.failed == 0 and result.attempted >= 4
