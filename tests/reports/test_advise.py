"""``ptxforge advise``: every item's "after" is a real compile of the changed kernel, the
ranking follows the occupancy it buys, and a launch-bounds kernel is never told to use
-maxrregcount."""

from __future__ import annotations

import pytest
from tests.support.cli_util import run, run_json
from tests.support.corpus_util import CORPUS_DIR, compile_cu

from ptxforge.ptx.directives import with_directives
from ptxforge.reports.advise import advise
from ptxforge.reports.levers import compile_outcome

GEMM = (CORPUS_DIR / "gemm.cu").read_text()


@pytest.fixture(scope="module")
def gemm_ptx(tmp_path_factory):
    path = tmp_path_factory.mktemp("advise") / "gemm.ptx"
    path.write_text(compile_cu(GEMM, "gemm", "sm_80"))
    return path


def test_cap_items_are_compiles_of_the_lever(gemm_ptx):
    text = gemm_ptx.read_text()
    r = advise(text, "gemm.ptx", "sm_80", kernel="sgemm_4x4")
    k, = r.kernels
    caps = [it for it in k.items if it.kind == "register cap"]
    assert caps and caps[0].change.startswith("-maxrregcount=")
    cap = int(caps[0].change.split("=")[1])
    again = compile_outcome(text, "sgemm_4x4", "sm_80", 256, max_registers=cap)
    assert again == caps[0].after
    assert k.before == compile_outcome(text, "sgemm_4x4", "sm_80", 256)
    assert caps[0].after.blocks_per_sm > k.before.blocks_per_sm
    assert caps[0].after.instructions is not None and k.before.instructions is not None
    gains = [(it.after.occupancy or 0) - (it.before.occupancy or 0) for it in k.items]
    assert gains == sorted(gains, reverse=True)


def test_launch_bounds_kernel_json_names_launch_bounds_with_its_figures(capsys, gemm_ptx):
    code, out, _ = run(capsys, "advise", gemm_ptx, "--kernel", "sgemm_8x8")
    assert code == 0
    budget = int(out.split("--spill-budget ")[1].split()[0])
    d = run_json(capsys, "advise", gemm_ptx, "--kernel", "sgemm_8x8", "--spill-budget", budget)
    assert d["schema"] == "ptxforge.advise/1"
    k, = d["kernels"]
    item = next(it for it in k["items"] if it["kind"] == "register cap")
    assert item["lever"]["kind"] == "__launch_bounds__" and item["lever"]["holds"]
    assert all(lv["kind"] != "-maxrregcount" for lv in item["levers"])
    threads, blocks = item["lever"]["value"]
    # the lever as ptxas sees it: .minnctapersm written into the kernel's PTX
    got = compile_outcome(with_directives(gemm_ptx.read_text(), "sgemm_8x8",
                                          {"minnctapersm": blocks}), "sgemm_8x8", "sm_80", 64)
    after = dict(item["after"])
    lines = after.pop("spill_lines")
    assert {**got.to_dict(), "spill_lines": []} == {**after, "spill_lines": []}
    # the spills by source line add up to the local-memory traffic of the compile
    assert lines and sum(s["store_bytes"] for s in lines) >= got.spill_stores
    assert sum(s["load_bytes"] for s in lines) >= got.spill_loads
    assert item["costs"]["spill_bytes"] == got.spill <= budget
    assert item["buys"]["blocks_per_sm"] == got.blocks_per_sm - k["before"]["blocks_per_sm"] > 0


def test_advise_refuses_a_cubin(capsys, tmp_path):
    p = tmp_path / "k.cubin"
    p.write_bytes(b"\x7fELF" + b"\0" * 60)
    code, _, err = run(capsys, "advise", p)
    assert code == 1 and "is a cubin" in err and "Traceback" not in err


def test_spills_by_line_add_up_to_ptxas_spill_bytes(gemm_ptx):
    from ptxforge.toolchain.compile import compile_ptx
    from ptxforge.toolchain.sass import sass_liveness
    from ptxforge.toolchain.sass_spills import local_access, spills_by_line

    assert local_access("STL.128 [R1], R4") == ("store", 16)
    assert local_access("LDG.E R2, [R4]") is None
    # sgemm_8x8 has no local arrays: its STL/LDL are ptxas's spills, line by line
    ptx = with_directives(compile_cu(GEMM, "gemm", "sm_80", lineinfo=True), "sgemm_8x8",
                          {"maxnreg": 64})
    c = compile_ptx(ptx, "sm_80", entries=("sgemm_8x8",), line_info=True)
    k = c["sgemm_8x8"]
    lines = spills_by_line(sass_liveness(c).function("sgemm_8x8"))
    assert k.spill_stores > 0 and lines and all(s.file is not None for s in lines)
    assert sum(s.store_bytes for s in lines) == k.spill_stores
    assert sum(s.load_bytes for s in lines) == k.spill_loads
    assert sum(s.spill_accesses for s in lines) == sum(s.stores + s.loads for s in lines)
    assert max(s.loop_depth for s in lines) >= 1          # the K loop spills
    depths = [s.loop_depth for s in lines]
    assert depths == sorted(depths, reverse=True)


def test_sgemm_sass_peak_is_attributed_to_the_fma_line():
    """The PTX .loc view puts the accumulators on their initialisation; the SASS view puts
    the registers at the machine-code peak on the FMA loop's line."""
    from ptxforge.reports.analyze import analyze_ptx

    fma = next(n for n, t in enumerate(GEMM.splitlines(), 1) if "fmaf(" in t)
    ptx = compile_cu(GEMM, "gemm", "sm_80", lineinfo=True)
    a = analyze_ptx(ptx, "gemm.ptx", "sm_80", kernel="sgemm_8x8")
    k, = a.kernels
    (label, regs), *rest = k.gap.peak_lines
    assert label.startswith(f"gemm.cu:{fma} ") and regs > max(n for _, n in rest)
    assert regs <= k.gap.sass_peak == sum(n for _, n in k.gap.peak_lines)
    text = a.to_text()
    section = text.split("live at the SASS peak (")[1].splitlines()
    assert f"gemm.cu:{fma}" in section[2] and str(regs) in section[2].split()
    assert max(len(line) for line in text.splitlines()) <= 100
