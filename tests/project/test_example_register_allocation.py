"""The main example's claims hold: it runs without a GPU and its figures are the analysis's."""

import importlib.util
import pathlib

from ptxforge import analyze_pressure

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "register_allocation.py"


def _example():
    spec = importlib.util.spec_from_file_location("register_allocation", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_eight_way_unroll_holds_eight_more_values_than_four_way():
    ex = _example()
    p4 = analyze_pressure(ex.dot(4, "sm_80").kernels[-1]).peak.units
    p8 = analyze_pressure(ex.dot(8, "sm_80").kernels[-1]).peak.units
    assert p8 - p4 == 8  # four more x and four more y loads, one f32 register each


def test_ssa_accumulator_reads_the_initial_value_and_inplace_reads_itself():
    ex = _example()
    from ptxforge import emit

    def loop_add(style):
        ptx = emit(ex.accumulate(style, "sm_80"))
        return next(l.split() for l in ptx.splitlines() if l.strip().startswith("add.f32"))

    _, dst, src, _x = loop_add("inplace")
    assert dst == src  # add.f32 %f1, %f1, ...
    _, dst, src, _x = loop_add("ssa")
    assert dst != src


def test_example_prints_estimate_and_ptxas_side_by_side(capsys):
    assert _example().main(["--arch", "sm_80", "--block", "256"]) == 0
    out = capsys.readouterr().out
    for name in ("vector_add", "dot_x4", "dot_x8", "accumulate_inplace", "accumulate_ssa"):
        line = next(l for l in out.splitlines() if l.strip().startswith(name))
        assert "estimate" in line and "ptxas" in line and "blocks/SM" in line
    assert "8-way needs 8 more registers than 4-way by the estimate" in out
