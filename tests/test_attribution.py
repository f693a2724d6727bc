"""Source attribution: registers → the .loc line of their first definition, aggregated."""

from __future__ import annotations

from pathlib import Path

from ptxforge import ir
from ptxforge.attribution import attribute_registers, callsite, first_definitions
from ptxforge.parse import parse

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
    from ptxforge.liveness import analyze_liveness

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
    from ptxforge.pressure import analyze_pressure

    k = parse(corpus_ptx("pressure", "sm_90", True)).kernel("live_window")
    report = analyze_pressure(k)
    top = report.peak.by_source[0]
    assert Path(top.file).name == "pressure.cu" and top.line == _loads_line()
    assert top.count >= 24
    # the same answer from this module's helper on the report's own live values
    regs = {r.name: r for i in k.instructions for r in i.defs}
    mine = attribute_registers(k, [regs[v.name] for v in report.peak.values if v.name in regs])
    assert mine.lines[0].loc.line == top.line and mine.lines[0].values == top.count
