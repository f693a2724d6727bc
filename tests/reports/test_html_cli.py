"""The readable CLI that goes with the report: short paths, --summary, --kernel names,
the recommended cap, the compare warning, and no progress in piped or JSON output."""

from __future__ import annotations

import json
import re

import pytest

from ptxforge._text import short_loc, short_path
from ptxforge.errors import PtxforgeError
from ptxforge.ptx.names import match_kernel
from ptxforge.reports.names import short_labels
from ptxforge.reports.occupancy_sweep import recommend_cap
from ptxforge.toolchain.sweep import Sweep, SweepRow

from cli_util import run
from corpus_util import corpus_ptx

TEMPLATE_NAMES = ["_Z4map2If5SaxpyIfEEvPKT_S4_PS2_T0_i", "_Z4map2Id5SaxpyIdEEvPKT_S4_PS2_T0_i",
                  "_Z4map2Ii5SaxpyIiEEvPKT_S4_PS2_T0_i", "_Z9dot_blockILi128EEvPKfS1_Pfi"]


@pytest.mark.parametrize("path, width, expected", [
    ("/tmp/tmpx8/cuda-samples/Samples/5_Domain_Specific/nbody/bodysystemcuda.cu:211", 40,
     "…/nbody/bodysystemcuda.cu:211"),
    ("/a/b/c/d/kernel.cu:7", 14, "…/kernel.cu:7"),
    ("/a/very/long/folder/name/with_a_long_file_name_of_its_own.cu:1234", 10,
     "…/with_a_long_file_name_of_its_own.cu:1234"),    # file and line never cut
    ("short.cu:3", 40, "short.cu:3"),
])
def test_paths_shorten_from_the_left_keeping_file_and_line(path, width, expected):
    assert short_path(path, width) == expected


def test_locations_keep_line_and_function():
    loc = ("/tmp/tmpab/cuda-samples/Samples/5_Domain_Specific/nbody/bodysystemcuda_impl.h:211 "
           "(bodyBodyInteraction<float>)")
    got = short_loc(loc, 60)
    assert got == "…/bodysystemcuda_impl.h:211 (bodyBodyInteraction<float>)"
    assert len(got) <= 64


def test_kernel_names_match_mangled_demangled_and_prefixes():
    assert match_kernel(TEMPLATE_NAMES, "map2<double, Saxpy<double> >") == TEMPLATE_NAMES[1]
    assert match_kernel(TEMPLATE_NAMES, "map2<double,Saxpy<double>>") == TEMPLATE_NAMES[1]
    assert match_kernel(TEMPLATE_NAMES, "map2<int") == TEMPLATE_NAMES[2]
    assert match_kernel(TEMPLATE_NAMES, "dot_block<128>") == TEMPLATE_NAMES[3]
    assert match_kernel(TEMPLATE_NAMES, "void dot_block<128>(float const*, float const*, "
                        "float*, int)") == TEMPLATE_NAMES[3]
    assert match_kernel(TEMPLATE_NAMES, TEMPLATE_NAMES[0]) == TEMPLATE_NAMES[0]
    with pytest.raises(PtxforgeError, match=r"'map2' is ambiguous.*map2<float, Saxpy<float> >"
                                            r".*map2<double.*map2<int"):
        match_kernel(TEMPLATE_NAMES, "map2")
    with pytest.raises(PtxforgeError, match=r"no kernel named 'gemm'.*it has: map2<float"):
        match_kernel(TEMPLATE_NAMES, "gemm")


def test_templated_names_stay_distinct_when_shortened():
    names = [f"cub::DeviceReduceSingleTileKernel<cub::DeviceReducePolicy<{t}, int, "
             f"cub::Sum>::Policy600, {t} const*, {t}*, int, cub::Sum, {t}>"
             for t in ("float", "double", "int")]
    labels = short_labels(names, 40)
    assert len(set(labels)) == 3 and all(len(x) <= 48 for x in labels)
    assert len({n[:39] for n in names}) == 1   # a cut from the right would merge them


def test_every_command_takes_the_printed_name(capsys, tmp_path):
    ptx = tmp_path / "templates.ptx"
    ptx.write_text(corpus_ptx("templates", "sm_80", True))
    code, out, err = run(capsys, "analyze", ptx, "--no-compile", "--kernel", "map2<int")
    assert code == 0, err
    assert "== void map2<int, Saxpy<int> >(int const*, int const*, int*, Saxpy<int>, int)" in out
    code, _, err = run(capsys, "analyze", ptx, "--no-compile", "--kernel", "map2")
    assert code == 1 and "ambiguous" in err and "_Z4map2Id5SaxpyIdEEvPKT_S4_PS2_T0_i" in err
    from ptxforge.reports.sass import sass_report

    out = sass_report(ptx.read_text(), "sm_80", kernel="dot_block<128>", file="t.ptx").to_text()
    assert "== void dot_block<128>(float const*, float const*, float*, int) ==" in out
    assert "  dot_block<128>  " in out     # the summary row: the same (demangled) name


def _many_kernels(n: int) -> str:
    body = ("{\n .reg .b32 %r<3>;\n .reg .b64 %rd<2>;\n ld.param.u64 %rd1, [p];\n"
            " mov.u32 %r1, %tid.x;\n add.u32 %r2, %r1, 1;\n st.global.u32 [%rd1], %r2;\n"
            " ret;\n}\n")
    head = ".version 8.0\n.target sm_80\n.address_size 64\n"
    return head + "".join(f".visible .entry kernel_{i:02d}(.param .u64 p)\n{body}"
                          for i in range(n))


def test_summary_is_the_default_above_twenty_kernels(capsys, tmp_path):
    many, few = tmp_path / "many.ptx", tmp_path / "few.ptx"
    many.write_text(_many_kernels(21))
    few.write_text(_many_kernels(3))
    code, out, _ = run(capsys, "analyze", many, "--no-compile")
    assert code == 0 and "== kernel_00" not in out
    assert len(re.findall(r"^  kernel_\d\d ", out, re.MULTILINE)) == 21
    assert "note: 21 kernels, so one line each" in out and "--full" in out
    assert max(len(line) for line in out.splitlines()) <= 100
    code, out, _ = run(capsys, "analyze", many, "--no-compile", "--full")
    assert out.count("== kernel_") == 21
    code, out, _ = run(capsys, "analyze", few, "--no-compile")
    assert out.count("== kernel_") == 3 and "one line each" not in out
    code, out, _ = run(capsys, "analyze", few, "--no-compile", "--summary")
    assert out.count("== kernel_") == 0 and len(re.findall(r"^  kernel_\d\d ", out, re.MULTILINE)) == 3


def test_analyze_text_has_the_timeline_and_the_loop_table(capsys):
    code, out, err = run(capsys, "analyze", "tests/data/ptx/pressure.ptx", "--no-compile")
    assert code == 0, err
    assert re.search(r"^timeline \(live units per instruction", out, re.MULTILINE)
    spark = out.split("timeline (", 1)[1].splitlines()[1].strip()
    assert set(spark) <= set("▁▂▃▄▅▆▇█") and "█" in spark


def test_recommended_cap_most_occupancy_without_and_with_spills():
    rows = (SweepRow(cap=None, registers=90, spill_stores=0, spill_loads=0, stack_frame=0,
                     blocks_per_sm=2, occupancy=0.5, limiting=("registers",)),
            SweepRow(cap=128, registers=90, spill_stores=0, spill_loads=0, stack_frame=0,
                     blocks_per_sm=2, occupancy=0.5, limiting=("registers",)),
            SweepRow(cap=72, registers=72, spill_stores=0, spill_loads=0, stack_frame=0,
                     blocks_per_sm=3, occupancy=0.75, limiting=("registers",)),
            SweepRow(cap=64, registers=64, spill_stores=0, spill_loads=0, stack_frame=0,
                     blocks_per_sm=3, occupancy=0.75, limiting=("registers",)),
            SweepRow(cap=48, registers=48, spill_stores=40, spill_loads=40, stack_frame=40,
                     blocks_per_sm=4, occupancy=1.0, limiting=("warps",)),
            SweepRow(cap=32, registers=32, spill_stores=400, spill_loads=600, stack_frame=400,
                     blocks_per_sm=4, occupancy=1.0, limiting=("warps",)))
    s = Sweep(kernel="k", target="sm_80", block_size=256, backend="ptxas", rows=rows)
    clean = recommend_cap(s)
    assert (clean.cap, clean.registers, clean.spill) == (72, 72, 0)   # most registers at 75%
    assert recommend_cap(s, 79).cap == 72                             # 80 bytes > 79
    spilly = recommend_cap(s, 80)
    assert (spilly.cap, spilly.spill, spilly.occupancy) == (48, 80, 1.0)


def test_sweep_ends_with_the_recommended_cap(capsys):
    code, out, err = run(capsys, "sweep", "tests/data/ptx/pressure.ptx", "--spill-budget",
                         "200", "--json")
    assert code == 0, err
    sw = json.loads(out)["kernels"][0]["sweep"]
    ok = [r for r in sw["rows"] if r["status"] == "ok" and r["occupancy"] is not None]
    best = max(r["occupancy"] for r in ok if r["spill_stores"] + r["spill_loads"] == 0)
    assert sw["recommended"]["occupancy"] == pytest.approx(best)
    assert sw["recommended"]["spill_bytes"] == 0
    within = max(r["occupancy"] for r in ok if r["spill_stores"] + r["spill_loads"] <= 200)
    assert sw["recommended_with_spills"]["occupancy"] == pytest.approx(within)
    code, text, _ = run(capsys, "sweep", "tests/data/ptx/pressure.ptx", "--spill-budget", "200")
    assert "recommended cap (most occupancy, no spills):" in text
    assert "each row is one compile at --maxrregcount=cap" in text
    assert "\x1b" not in text and "\r" not in text     # no progress in piped output


def test_compare_warns_when_estimate_and_ptxas_disagree():
    import attrs

    from ptxforge.reports.analyze import analyze_ptx
    from ptxforge.reports.kernel_pool import KernelPart
    from ptxforge.reports.variants import compare_variants

    text = corpus_ptx("weno", "sm_80", False)
    a = analyze_ptx(text, "a.ptx", "sm_80")
    k = a.kernels[0]
    fewer = attrs.evolve(k.stats, registers=k.stats.registers - 4)
    more_live = attrs.evolve(k.pressure, peak=attrs.evolve(k.pressure.peak,
                                                           units=k.pressure.peak.units + 3))
    part = KernelPart(k.kernel, k.arch, mix=k.mix, pressure=more_live, prediction=k.prediction)
    b = attrs.evolve(a, file="b.ptx", kernels=(attrs.evolve(k, stats=fewer, part=part),))
    out = compare_variants(a, b).to_text()
    assert "warning: the estimate and ptxas move in opposite directions: the estimate rises " \
           "by 3" in out
    assert compare_variants(a, a).to_text().count("warning:") == 0
