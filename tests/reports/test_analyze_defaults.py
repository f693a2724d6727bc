"""What ``ptxforge analyze`` takes from the PTX when the command line does not say: the
architecture from ``.target``, the block size from ``.reqntid``/``.maxntid``; and the inputs it
adds: ``--smem`` (dynamic shared memory), the ``.local`` arrays the PTX declares, the same
arch-specific names for every command.  Real PTX: CUDA C++ compiled with NVRTC here, the
Triton-style file in tests/data, and the corpus."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from by_hand import blocks_per_sm
from cli_util import flat, header, run, run_json
from corpus_util import compile_cu, corpus_ptx

ROOT = Path(__file__).resolve().parents[2]
TRITON = ROOT / "tests" / "data" / "styles" / "triton_style.ptx"

BOUNDS_CU = r"""
extern "C" __global__ void __launch_bounds__(128) bounded(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
extern "C" __global__ void plain(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * x[i];
}
"""

LOCAL_CU = r"""
extern "C" __global__ void depot(const int* idx, float* out) {
    float stack[32];                       // indexed by data: stays a local array
    for (int k = 0; k < 32; ++k) stack[k] = k * 0.5f;
    out[threadIdx.x] = stack[idx[threadIdx.x] & 31];
}
"""




@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("defaults")
    paths = {"bounds": d / "bounds.ptx", "bounds90": d / "bounds90.ptx",
             "local": d / "local.ptx", "sm61": d / "sm61.ptx", "sm99": d / "sm99.ptx"}
    paths["bounds"].write_text(compile_cu(BOUNDS_CU, "bounds", "sm_80"))
    paths["bounds90"].write_text(compile_cu(BOUNDS_CU, "bounds", "sm_90"))
    paths["local"].write_text(compile_cu(LOCAL_CU, "depot", "sm_80"))
    for name, word in (("sm61", "sm_61"), ("sm99", "sm_99")):
        paths[name].write_text(re.sub(r"^\.target sm_80", f".target {word}",
                                      compile_cu(BOUNDS_CU, "bounds", "sm_80"), flags=re.M))
    return paths


def _kernel(doc, name):
    (k,) = [k for k in doc["kernels"] if k["name"] == name]
    return k


# --- the architecture: --arch, else .target, else sm_80 with a note ------------------------

def test_arch_defaults_to_the_ptx_target(capsys, files):
    doc = run_json(capsys, "analyze", files["bounds90"], "--no-compile")
    assert (doc["arch"], doc["arch_source"], doc["ptx_target"]) == ("sm_90", "target", "sm_90")
    assert doc["notes"] == []
    code, out, err = run(capsys, "analyze", files["bounds90"], "--no-compile")
    assert "analysed for sm_90 (from .target)" in header(out)
    # --arch still wins, and says nothing about where it came from
    doc = run_json(capsys, "analyze", files["bounds90"], "--no-compile", "--arch", "sm_120")
    assert (doc["arch"], doc["arch_source"]) == ("sm_120", "given")


def test_an_arch_specific_target_compiles_without_arch(capsys):
    # .target sm_90a: analysing it for sm_80 (the old default) was a ptxas fatal error
    doc = run_json(capsys, "analyze", TRITON)
    assert (doc["arch"], doc["arch_source"], doc["compiled"]) == ("sm_90a", "target", True)
    assert doc["kernels"][0]["ptxas"]["registers"] > 0


def test_a_target_ptxforge_does_not_know_falls_back_with_a_note(capsys, files):
    doc = run_json(capsys, "analyze", files["sm99"], "--no-compile")
    assert (doc["arch"], doc["arch_source"]) == ("sm_80", "default")
    (note,) = doc["notes"]
    assert ".target sm_99" in note and "sm_80" in note and "--arch" in note
    code, out, err = run(capsys, "analyze", files["sm99"], "--no-compile")
    assert "analysed for sm_80 (default)" in flat(out) and f"note: {note}" in flat(out)


def test_every_registered_target_is_analysed_for_itself(capsys, files):
    # sm_61 is in the target registry (with Pascal's occupancy table): no fallback, no note
    doc = run_json(capsys, "analyze", files["sm61"], "--no-compile")
    assert (doc["arch"], doc["arch_source"], doc["notes"]) == ("sm_61", "target", [])
    assert doc["kernels"][0]["occupancy"]["blocks_per_sm"] > 0


# --- the block size: --block, else .reqntid/.maxntid, else 256 -----------------------------

def test_block_defaults_to_the_kernels_launch_bounds(capsys, files):
    doc = run_json(capsys, "analyze", files["bounds"])
    bounded, plain = _kernel(doc, "bounded")["occupancy"], _kernel(doc, "plain")["occupancy"]
    assert (bounded["block_size"], bounded["block_source"]) == (128, ".maxntid")
    assert (plain["block_size"], plain["block_source"]) == (256, "default")
    regs = _kernel(doc, "bounded")["ptxas"]["registers"]
    assert bounded["launchable"] is True
    assert bounded["blocks_per_sm"] == blocks_per_sm(regs, 128, max_threads=128)[0]
    code, out, err = run(capsys, "analyze", files["bounds"])
    assert "at 256 threads/block (bounded: 128, its .maxntid)" in header(out)
    assert "resources (sm_80, 128 threads/block from its .maxntid)" in out
    assert "cannot launch" not in out


def test_triton_reqntid_kernel_launches_at_its_own_size(capsys):
    doc = run_json(capsys, "analyze", TRITON)
    occ = doc["kernels"][0]["occupancy"]
    assert (occ["block_size"], occ["block_source"], occ["launchable"]) == (128, ".reqntid", True)
    assert occ["blocks_per_sm"] > 0


def test_an_explicit_block_still_wins_and_a_reqntid_violation_is_reported(capsys, files):
    doc = run_json(capsys, "analyze", TRITON, "--block", "256")
    occ = doc["kernels"][0]["occupancy"]
    assert (occ["block_size"], occ["block_source"]) == (256, "given")
    assert occ["launchable"] is False and occ["limiter"] == "reqntid"
    doc = run_json(capsys, "analyze", files["bounds"], "--block", "64")
    assert {k["occupancy"]["block_source"] for k in doc["kernels"]} == {"given"}
    assert {k["occupancy"]["block_size"] for k in doc["kernels"]} == {64}


# --- --smem: dynamic shared memory per block -----------------------------------------------

@pytest.mark.parametrize("extra", [[], ["--no-compile"]])
def test_smem_enters_occupancy(capsys, files, extra):
    base = _kernel(run_json(capsys, "analyze", files["bounds"], *extra), "plain")
    doc = run_json(capsys, "analyze", files["bounds"], "--smem", "49152", *extra)
    assert doc["dynamic_shared"] == 49152
    k = _kernel(doc, "plain")
    occ = k["occupancy"]
    regs = occ["registers"]
    want, _ = blocks_per_sm(regs, 256, shared=49152)           # by hand, not occupancy()
    assert occ["dynamic_shared"] == 49152 and occ["shared"] == 49152
    assert occ["blocks_per_sm"] == want == 3                   # 164 KB / (48 KB + 1 KB)
    assert occ["limiter"] == "shared_memory" and base["occupancy"]["blocks_per_sm"] == 8
    code, out, err = run(capsys, "analyze", files["bounds"], "--smem", "49152", *extra)
    assert "49,152 bytes shared (49,152 dynamic)" in out


def test_smem_in_sweep_and_compare(capsys, files):
    doc = run_json(capsys, "sweep", files["bounds"], "--kernel", "plain", "--caps", "32",
                   "--only-caps", "--smem", "49152")
    assert doc["dynamic_shared"] == 49152
    for row in doc["kernels"][0]["sweep"]["rows"]:
        assert row["blocks_per_sm"] == blocks_per_sm(row["registers"], 256, shared=49152)[0] == 3
    doc = run_json(capsys, "compare", files["bounds"], files["bounds"], "--smem", "49152",
                   "--no-compile")
    assert doc["a"]["dynamic_shared"] == 49152
    (pair,) = [p for p in doc["kernels"] if p["name"] == "plain"]
    rows = {r["metric"]: r for r in pair["rows"]}
    assert rows["blocks/SM (estimate)"]["a"] == 3


def test_usage_errors_of_the_new_options(capsys):
    for argv, needle in ((["analyze", "x.ptx", "--smem", "-1"], "shared memory size must be"),
                         (["analyze", "x.ptx", "--by", "file"], "invalid choice: 'file'")):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "" and needle in err and "usage:" in err


# --- .local arrays the PTX declares (no ptxas needed) ----------------------------------------

def test_no_compile_reports_the_local_arrays_the_ptx_declares(capsys, files):
    ptx = files["local"].read_text()
    decls = re.findall(r"\.local\s+\.align\s+\d+\s+\.b8\s+\w+\[(\d+)\]", ptx)
    declared = sum(int(n) for n in decls)
    assert declared == 128  # 32 floats
    doc = run_json(capsys, "analyze", files["local"], "--no-compile")
    k = doc["kernels"][0]
    assert k["estimate"]["local_array_bytes"] == declared and k["ptxas"]["stack"] is None
    code, out, err = run(capsys, "analyze", files["local"], "--no-compile")
    row = next(x for x in out.splitlines() if x.strip().startswith("local arrays in the PTX"))
    assert row.split()[-2:] == [str(declared), "-"]
    summary = out.split("\n\n")[1].splitlines()[1]     # the summary table's row
    assert f"{declared} (PTX)" in summary
    # compiled, ptxas's frame holds the array
    doc = run_json(capsys, "analyze", files["local"])
    k = doc["kernels"][0]
    assert k["ptxas"]["local_array_bytes"] == declared <= k["ptxas"]["stack"]


def test_a_kernel_without_local_arrays_has_no_such_row(capsys, tmp_path):
    ptx = corpus_ptx("weno", "sm_80")
    assert ".local" not in ptx
    path = tmp_path / "weno.ptx"
    path.write_text(ptx)
    code, out, err = run(capsys, "analyze", path, "--no-compile")
    assert code == 0 and "local arrays in the PTX" not in out
    assert run_json(capsys, "analyze", path, "--no-compile")["kernels"][0]["estimate"][
        "local_array_bytes"] == 0


# --- arch-specific names: every command accepts the same ones -------------------------------

@pytest.mark.parametrize("arch, ok", [("sm_90a", True), ("sm_100f", True), ("sm_80a", False),
                                      ("sm_90f", False)])
def test_arch_specific_names_are_accepted_alike(capsys, arch, ok):
    code, out, err = run(capsys, "occupancy", "--arch", arch, "--regs", "32", "--block", "128")
    assert (code == 0) is ok, err
    if ok:
        assert out.startswith(f"{arch}: 32 registers/thread")
    else:
        assert code == 2 and f"unknown target '{arch}'" in err and "sm_90a" in err
    code2, out2, err2 = run(capsys, "analyze", TRITON, "--arch", arch, "--no-compile")
    assert (code2 == 0) is ok and (code2 == 2) is (not ok)


def test_occupancy_json_names_the_arch_as_given(capsys):
    doc = run_json(capsys, "occupancy", "--arch", "sm_90a", "--regs", "32", "--block", "128")
    plain = run_json(capsys, "occupancy", "--arch", "sm_90", "--regs", "32", "--block", "128")
    assert doc["arch"] == "sm_90a" and plain["arch"] == "sm_90"
    assert doc["blocks_per_sm"] == plain["blocks_per_sm"] == 16


def test_library_defaults_match_the_command(files):
    from ptxforge.arch.spec import LaunchSpec
    from ptxforge.reports.analyze import analyze_ptx

    a = analyze_ptx(TRITON.read_text(), compile=False)
    assert (a.arch, a.arch_source) == ("sm_90a", "target")
    assert (a.kernels[0].block_size, a.kernels[0].block_source) == (128, ".reqntid")
    b = analyze_ptx(corpus_ptx("weno", "sm_80"), spec=LaunchSpec(dynamic_shared=1024),
                    compile=False)
    assert b.kernels[0].occupancy.shared_per_block == 1024
