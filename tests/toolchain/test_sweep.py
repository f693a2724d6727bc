"""Register-cap sweep on the high-pressure kernel."""

import json
from pathlib import Path

from ptxforge.arch.spec import LaunchSpec
from ptxforge.toolchain.compile import CompileRequest
from ptxforge.toolchain.sweep import default_caps, sweep

PTX = (Path(__file__).parents[1] / "data" / "ptx" / "pressure.ptx").read_text()


def test_default_caps_are_the_cliffs_down_to_24():
    assert default_caps("sm_80", 256) == (255, 128, 80, 64, 48, 40, 32, 24)
    assert default_caps("sm_86", 256, floor=40) == (255, 128, 80, 64, 48, 40)


def test_sweep_table():
    s = sweep(PTX, spec=LaunchSpec(target="sm_80", block=256), caps=(64, 48), extra_caps=(32,))
    caps = [r.cap for r in s.rows]
    assert caps == [None, 64, 48, 32]
    base, c64, c48, c32 = s.rows
    assert base.registers == 72 and base.spill_stores == 0 and base.blocks_per_sm == 3
    assert c64.registers <= 64 and c64.blocks_per_sm == 4
    assert c48.registers <= 48 and c48.blocks_per_sm == 5
    assert c32.registers == 32 and c32.spill_stores == 468 and c32.blocks_per_sm == 8
    assert c32.occupancy == 1.0
    text = s.to_text()
    assert "pressure on sm_80" in text and "none" in text and "100.0%" in text
    d = json.loads(s.to_json())
    assert list(d) == sorted(d) and d["rows"][0]["cap"] is None
    assert sorted(d["rows"][3]) == ["backend", "blocks_per_sm", "cap", "error", "limiting",
                                    "min_registers", "note", "occupancy", "reason",
                                    "register_cap", "register_cap_source", "registers",
                                    "spill_loads", "spill_stores", "stack_frame", "status",
                                    "tool"]
    assert d["rows"][3]["reason"] is None and d["rows"][3]["status"] == "ok"
    assert (d["rows"][3]["register_cap"], d["rows"][3]["register_cap_source"]) == \
        (32, "--maxrregcount")
    assert d["cap_method"] == "--maxrregcount" and d["notes"] == []


FUNC_ONLY = """.version 8.0
.target sm_80
.address_size 64
.visible .func (.param .b32 r) f(.param .b32 a)
{
\t.reg .b32 %r<3>;
\tld.param.b32 %r1, [a];
\tadd.s32 %r2, %r1, 1;
\tst.param.b32 [r], %r2;
\tret;
}
"""


def test_a_file_of_functions_only_says_so_and_names_them():
    import pytest

    from ptxforge.errors import PtxforgeError

    with pytest.raises(PtxforgeError, match=r"'f' is a \.func, not an \.entry kernel: the PTX "
                                            r"has no \.entry kernels, only functions \(f\)"):
        sweep(FUNC_ONLY, "f", "sm_80")
    with pytest.raises(PtxforgeError, match="kernels none; name the one"):
        sweep(FUNC_ONLY, None, "sm_80")


def test_unknown_occupancy_target_sweeps_with_generic_caps():
    from ptxforge.toolchain.sweep import GENERIC_CAPS

    assert default_caps("sm_110", 256) == GENERIC_CAPS
    s = sweep(PTX, spec=LaunchSpec(target="sm_110", block=256), caps=(64,))
    assert [r.cap for r in s.rows] == [None, 64]
    assert all(r.blocks_per_sm is None and r.occupancy is None for r in s.rows)
    assert "no occupancy table for sm_110" in s.rows[0].reason
    assert "n/a" in s.to_text()


# --- crashes, refusals, launch bounds, calls ---------------------------------------------------

import pytest  # noqa: E402

from ptxforge.toolchain.backends import PtxasBackend  # noqa: E402
from ptxforge.toolchain.compile import compile_ptx  # noqa: E402

from compile_sources import CALLS, LIVE64, MMA_AND_COPY, OCTREE_WALK, nvrtc  # noqa: E402
from crashing_backend import CrashAtCap  # noqa: E402


def test_a_crashing_cap_is_a_row_retried_with_the_ptxas_executable():
    alt = PtxasBackend().for_target("sm_80")
    if alt is None:
        pytest.skip("no ptxas executable accepts sm_80 here")
    s = sweep(PTX, "pressure", "sm_80", caps=(64, 32, 24),
              request=CompileRequest(backend=CrashAtCap(32)))
    base, c64, c32, c24 = s.rows
    assert (base.backend, c64.backend, c64.note) == ("nvjitlink", "nvjitlink", None)
    for row in (c32, c24):
        assert row.ok and row.backend == "ptxas" and row.tool.endswith(f"({alt.path})")
        assert row.note.startswith(f"nvJitLink crashed (signal 11, SIGSEGV) at cap {row.cap} "
                                   "compiling for sm_80; this row is from ptxas ")
        by_ptxas = compile_ptx(PTX, "sm_80", backend=alt, max_registers=row.cap)["pressure"]
        assert (row.registers, row.spill_stores) == (by_ptxas.registers, by_ptxas.spill_stores)
    text = s.to_text()
    assert "\n      32*" in text and "\n* cap 32: nvJitLink crashed" in text


def test_a_crash_with_nothing_to_retry_with_is_a_crashed_row(monkeypatch, tmp_path):
    monkeypatch.setenv("PTXFORGE_PTXAS", str(tmp_path / "missing-ptxas"))
    s = sweep(PTX, "pressure", "sm_80", caps=(64, 32),
              request=CompileRequest(backend=CrashAtCap(32)))
    base, c64, c32 = s.rows
    assert base.ok and c64.ok and c64.registers == 64
    assert (c32.status, c32.registers, c32.blocks_per_sm) == ("crashed", None, None)
    assert c32.error.startswith("nvJitLink crashed (signal 11, SIGSEGV) at cap 32")
    assert "no ptxas executable here accepts sm_80 to retry with (PTXFORGE_PTXAS=" in c32.error
    assert "       32    crashed" in s.to_text()


def test_the_real_nvjitlink_crash_in_a_sweep():
    ptx = nvrtc(OCTREE_WALK, "walk", "sm_80")
    s = sweep(ptx, "walk", "sm_80", caps=(32, 28, 24), request=CompileRequest(backend="nvjitlink"))
    crashed = [r for r in s.rows if "crashed" in (r.note or r.error or "")]
    if not crashed:
        pytest.skip("this nvJitLink no longer crashes on the octree walk at caps 28/24")
    assert [r.cap for r in crashed] == [28, 24]
    assert s.rows[1].ok and s.rows[1].backend == "nvjitlink" and s.rows[1].registers <= 32
    for r in crashed:
        text = r.note or r.error
        assert text.startswith(f"nvJitLink crashed (signal 11, SIGSEGV) at cap {r.cap}")
        if r.ok:
            assert r.backend == "ptxas" and r.registers <= r.cap
            assert "this row is from ptxas" in text


def test_a_cap_ptxas_refuses_is_a_row_with_its_reason():
    ptx = nvrtc(MMA_AND_COPY, "mma_copy", "sm_80")
    s = sweep(ptx, "tile_mma", "sm_80", caps=(32, 28, 24))
    base, c32, c28, c24 = s.rows
    assert (base.registers, c32.registers, c28.registers) == (30, 30, 28)
    assert (c24.status, c24.registers, c24.min_registers) == ("refused", None, 28)
    assert c24.error.startswith("refused by ptxas: (C7602) Insufficient registers (24) to "
                                "compile instruction at line")
    assert "in function tile_mma" in c24.error
    assert "       24    refused" in s.to_text() and "cap 24: refused by ptxas" in s.to_text()
    d = json.loads(s.to_json())["rows"][3]
    assert (d["status"], d["min_registers"], d["registers"]) == ("refused", 28, None)
    # the other kernel of the module compiles at 24: the sweep compiles only the kernel it
    # sweeps (ptxas -e), so tile_mma's refusal at 24 cannot fail copy's row
    copy = sweep(ptx, "copy", "sm_80", caps=(24,)).rows[1]
    assert copy.ok and copy.registers <= 24 and copy.register_cap_source == "--maxrregcount"
    assert copy.note is None


def test_caps_reach_a_kernel_with_launch_bounds():
    ptx = nvrtc(LIVE64.replace("BOUNDS", "__launch_bounds__(256)"), "live64")
    s = sweep(ptx, "live64", "sm_80", caps=(64, 48))
    assert s.cap_method == ".maxnreg" and "ptxas ignores --maxrregcount" in s.notes[0]
    base, c64, c48 = s.rows
    assert (base.registers, c64.registers, c48.registers) == (74, 64, 48)   # ptxas 13.5
    assert (c64.register_cap, c64.register_cap_source) == (64, ".maxnreg")
    assert c48.spill_stores > c64.spill_stores > 0 == base.spill_stores
    four = sweep(nvrtc(LIVE64.replace("BOUNDS", "__launch_bounds__(256, 4)"), "live64"),
                 "live64", "sm_80", caps=(128, 40))
    base, c128, c40 = four.rows
    assert (base.registers, base.register_cap, base.register_cap_source) == \
        (64, 64, "launch bounds")
    assert c128.registers == 64 and c128.note.startswith("not binding: ptxas compiled under 64, "
                                                         "from the launch bounds: .maxntid 256")
    assert (c40.registers, c40.register_cap_source, c40.note) == (40, ".maxnreg", None)


def test_a_cap_below_ptxas_floor_says_it_was_raised():
    s = sweep(nvrtc(LIVE64.replace("BOUNDS", ""), "live64"), "live64", "sm_80", caps=(16,))
    row = s.rows[1]
    assert (row.registers, row.register_cap) == (24, 24)
    assert row.note == "ptxas raised the cap to 24, its lower bound for sm_80"
    assert "\n* cap 16: ptxas raised the cap to 24" in s.to_text()


def test_sweep_rows_carry_the_call_graph():
    from ptxforge.toolchain.compile import CompileOptions, compile_ptx

    ptx = nvrtc(CALLS, "calls")
    for opts in (CompileOptions(), CompileOptions(relocatable=True)):
        s = sweep(ptx, "calls", "sm_80", caps=(32,), request=CompileRequest(options=opts))
        k = compile_ptx(ptx, "sm_80", options=opts)["calls"]
        base = s.rows[0]
        assert (base.registers, base.spill_stores, base.spill_loads, base.stack_frame) == \
            (k.registers, k.spill_stores, k.spill_loads, k.stack_frame)
        assert s.rows[1].registers <= 32 and s.rows[1].stack_frame >= base.stack_frame
    # relocatable: the callees' spills (ptxas -c's records for them) run on the kernel's behalf
    assert (k.registers, k.spill_stores, k.spill_loads, k.stack_frame) == (67, 56, 56, 160)


def test_sweep_of_debug_ptx_runs_at_O0():
    s = sweep(nvrtc(OCTREE_WALK, "walk", "sm_80", "-G"), "walk", "sm_80", caps=(64,))
    assert s.rows[0].registers == compile_ptx(nvrtc(OCTREE_WALK, "walk", "sm_80", "-G"),
                                              "sm_80")["walk"].registers
    assert any("compiled at -O0" in n for n in s.notes)
