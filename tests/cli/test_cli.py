"""The ``ptxforge`` command on real PTX from the CUDA C++ corpus (NVRTC) and through ptxas.

Most tests call :func:`ptxforge.cli.main` in-process and read its output with ``capsys``; a few
run ``python -m ptxforge`` as a subprocess (standard input, exit status, no traceback).
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from by_hand import blocks_per_sm, ptxas_v

from ptxforge.cli import main
from ptxforge.ptx.parse import parse
from ptxforge.toolchain.compile import compile_ptx

from cli_util import run, run_json
from corpus_util import CORPUS_DIR, compile_cu, corpus_ptx

ROOT = Path(__file__).resolve().parents[2]

KERNEL_KEYS = {"name", "demangled", "instructions", "vregs", "estimate", "ptxas", "occupancy",
               "notes"}
ESTIMATE_KEYS = {"registers", "predicates", "utilization", "over_limit", "local_array_bytes",
                 "by_function", "by_callsite"}
# the whole ptxas object, pinned: a key added or dropped is a deliberate change (docs/cli.md)
PTXAS_KEYS = {"registers", "utilization", "spill_stores", "spill_loads", "stack", "stack_known",
              "local_array_bytes", "shared", "constant_bank0", "param_bytes", "barriers",
              "register_cap", "register_cap_source", "register_cap_note", "body_registers",
              "body_spill_stores", "body_spill_loads", "body_stack_frame", "callees"}
OCCUPANCY_KEYS = {"blocks_per_sm", "occupancy", "limiter", "register_limit", "block_size",
                  "block_source", "dynamic_shared"}

BROKEN_FOR_PTXAS = """.version 8.0
.target sm_80
.address_size 64

.visible .entry broken(.param .u64 p)
{
    .reg .b32 %r<3>;
    .reg .f32 %f<3>;
    mov.u32 %r1, %tid.x;
    add.s32 %r2, %f1, %r1;
    ret;
}
"""

MALFORMED = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k()
{
    .reg .b32 %r<2>;
    mov.u32 %r1, %tid.x
    ret;
}
"""




def _variant_16(source: str) -> str:
    """live_window with 16 loads instead of 32 (the other kernel unchanged)."""
    head, sep, tail = source.partition("extern \"C\" __global__ void __maxnreg__")
    return head.replace("32", "16").replace("31", "15") + sep + tail


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Corpus PTX written to files: weno and pressure with -lineinfo, a 16-load variant."""
    d = tmp_path_factory.mktemp("cli")
    paths = {
        "weno": d / "weno.ptx",
        "pressure": d / "pressure.ptx",
        "pressure16": d / "pressure16.ptx",
        "reduce": d / "reduce.ptx",
        "broken": d / "broken.ptx",
        "malformed": d / "malformed.ptx",
    }
    paths["weno"].write_text(corpus_ptx("weno", "sm_80", True))
    paths["pressure"].write_text(corpus_ptx("pressure", "sm_80", True))
    src16 = _variant_16((CORPUS_DIR / "pressure.cu").read_text())
    paths["pressure16"].write_text(compile_cu(src16, "pressure16", "sm_80", False))
    paths["reduce"].write_text(corpus_ptx("reduce", "sm_80", False))
    paths["broken"].write_text(BROKEN_FOR_PTXAS)
    paths["malformed"].write_text(MALFORMED)
    return paths


def _kernel(doc: dict, name: str) -> dict:
    (k,) = [k for k in doc["kernels"] if k["name"] == name]
    return k


# --- analyze --------------------------------------------------------------------------------

def test_analyze_json_pins_the_kernel_keys_and_values(capsys, files):
    doc = run_json(capsys, "analyze", files["weno"], "--arch", "sm_80", "--block", "256")
    assert doc["schema"] == "ptxforge.analyze/1"
    assert (doc["arch"], doc["block_size"], doc["compiled"]) == ("sm_80", 256, True)
    assert (doc["arch_source"], doc["dynamic_shared"], doc["notes"]) == ("given", 0, [])
    k = _kernel(doc, "weno5_reconstruct")
    assert KERNEL_KEYS <= set(k)
    assert ESTIMATE_KEYS <= set(k["estimate"])
    assert set(k["ptxas"]) == PTXAS_KEYS
    assert OCCUPANCY_KEYS <= set(k["occupancy"])

    ptx = files["weno"].read_text()
    body = parse(ptx).kernel("weno5_reconstruct")
    assert k["instructions"] == len(body.instructions)
    # virtual registers: the distinct %fd/%rd/%r/%p names in the body, counted from the text
    names = set(re.findall(r"%(fd|rd|r|p)(\d+)\b", ptx.split(".entry", 1)[1]))
    prefix = {"fd": "f64", "rd": "b64", "r": "b32", "p": "pred"}
    expect = {}
    for pre, _ in names:
        expect[prefix[pre]] = expect.get(prefix[pre], 0) + 1
    assert k["vregs"] == expect
    # every selp in the text is in the breakdown, and the categories add up
    selp = k["mix"]["selp"]
    assert selp["total"] == len(re.findall(r"^\s*selp\.", ptx, re.M)) > 0
    assert selp["literal_pair"] + selp["literal_register"] + selp["register_pair"] == selp["total"]

    stats = compile_ptx(ptx, "sm_80")["weno5_reconstruct"]
    truth = ptxas_v(ptx)["weno5_reconstruct"]                    # ptxas -v, its own process
    assert k["ptxas"]["registers"] == truth["registers"] == stats.registers
    assert (k["ptxas"]["spill_stores"], k["ptxas"]["spill_loads"]) == (0, 0)
    assert k["ptxas"]["stack"] == truth["stack"]
    # weno5_reconstruct calls ptxas's double-division helper (a call of ptxas's own)
    # whole-program: the f64 division's slow path is inlined (relocatable, it is a call to
    # __cuda_sm20_div_rn_f64_full)
    assert k["ptxas"]["callees"] == [] and doc["mode"] == "whole-program"
    assert k["ptxas"]["stack_known"] is True
    assert (k["ptxas"]["body_registers"], k["ptxas"]["body_stack_frame"]) == (
        stats.body_registers, stats.body_stack_frame)
    assert doc["tool"] == compile_ptx(ptx, "sm_80").tool
    blocks, limiting = blocks_per_sm(truth["registers"], 256)    # by hand, not occupancy()
    assert k["occupancy"]["blocks_per_sm"] == blocks
    assert k["occupancy"]["occupancy"] == pytest.approx(blocks * 8 / 64, abs=1e-6)
    assert k["occupancy"]["limiter"] == limiting[0]
    assert k["occupancy"]["basis"] == "ptxas"
    assert 0 < k["estimate"]["registers"] <= stats.registers
    assert k["estimate"]["predicates"] >= 1


def test_analyze_names_the_cuda_source_line_of_the_values_live_at_the_peak(capsys, files):
    lines = (CORPUS_DIR / "pressure.cu").read_text().splitlines()
    loads = 1 + next(i for i, text in enumerate(lines) if "// LOADS" in text)
    doc = run_json(capsys, "analyze", files["pressure"], "--kernel", "live_window", "--top", "0")
    assert [k["name"] for k in doc["kernels"]] == ["live_window"]
    est = doc["kernels"][0]["estimate"]
    top = est["by_source"][0]
    assert top["file"].endswith("pressure.cu") and top["line"] == loads
    # the 32 values loaded on that line are (nearly) all live at the peak
    assert top["count"] >= 30
    on_line = [v for v in est["values"] if v["loc"] and v["loc"].endswith(f"pressure.cu:{loads}")]
    assert len(on_line) == top["count"]
    assert est["values_total"] == len(est["values"])

    code, out, err = run(capsys, "analyze", files["pressure"], "--kernel", "live_window")
    assert code == 0, err
    assert f"pressure.cu:{loads}" in out
    section = out.split("live at the peak by source line")[1]
    first_row = section.splitlines()[2]
    assert f"pressure.cu:{loads}" in first_row and str(top["count"]) in first_row.split()


def test_analyze_text_has_the_seed_tables(capsys, files):
    code, out, err = run(capsys, "analyze", files["weno"], "--top", "5")
    assert code == 0 and err == ""
    for heading in ("resources (sm_80, 256 threads/block)", "key instructions:",
                    "selp by operand kind", "peak pressure:", "values live at the peak (5 of",
                    "live at the peak by source line"):
        assert heading in out
    stats = compile_ptx(files["weno"].read_text(), "sm_80")["weno5_reconstruct"]
    row = next(line for line in out.splitlines() if line.startswith("  registers (32-bit)"))
    assert row.split()[-1] == str(stats.registers)
    selp_row = next(line for line in out.splitlines() if line.strip().startswith("selp ")
                    and line.split()[-1].isdigit())
    assert int(selp_row.split()[-1]) == files["weno"].read_text().count("\tselp.")


def test_analyze_no_compile_uses_the_estimate(capsys, files):
    doc = run_json(capsys, "analyze", files["reduce"], "--no-compile", "--block", "128")
    assert doc["compiled"] is False and doc["backend"] is None
    assert [k["name"] for k in doc["kernels"]] == ["block_reduce_sum", "warp_reduce_max",
                                                  "reduce_f64_atomic"]
    for k in doc["kernels"]:
        assert set(k["ptxas"].values()) == {None}
        assert k["occupancy"]["basis"] == "estimate"
        assert k["occupancy"]["registers"] == k["estimate"]["registers"]
    # block_reduce_sum declares 1 KB of shared memory (256 floats): it enters occupancy
    k = _kernel(doc, "block_reduce_sum")
    assert k["occupancy"]["shared"] == 1024
    blocks, _ = blocks_per_sm(k["estimate"]["registers"], 128, shared=1024)
    assert k["occupancy"]["blocks_per_sm"] == blocks


def test_analyze_output_is_deterministic(capsys, files):
    first = run(capsys, "analyze", files["pressure"], "--no-compile", "--json")
    second = run(capsys, "analyze", files["pressure"], "--no-compile", "--json")
    assert first == second and first[0] == 0


# --- errors and exit status ----------------------------------------------------------------

def test_missing_file_is_exit_1_with_one_message(capsys, tmp_path):
    missing = tmp_path / "nope.ptx"
    code, out, err = run(capsys, "analyze", missing)
    assert code == 1 and out == ""
    assert err == f"ptxforge: error: cannot read {str(missing)!r}: No such file or directory\n"


def test_malformed_ptx_reports_file_line_and_column(capsys, files):
    code, out, err = run(capsys, "analyze", files["malformed"], "--no-compile")
    assert code == 1 and out == ""
    assert err.startswith(f"ptxforge: error: {files['malformed']}:8:5: expected ',' or ';'")
    assert "ret;" in err and "Traceback" not in err


def test_ptxas_failure_is_exit_1_with_the_log(capsys, files):
    code, out, err = run(capsys, "analyze", files["broken"])
    assert code == 1 and out == ""
    assert err.startswith("ptxforge: error: ")
    assert "Arguments mismatch for instruction 'add'" in err
    assert "line 10" in err


def test_unknown_kernel_lists_the_names(capsys, files):
    code, out, err = run(capsys, "analyze", files["reduce"], "--kernel", "nope", "--no-compile")
    assert code == 1 and out == ""
    assert "no kernel named 'nope'" in err
    assert "block_reduce_sum, warp_reduce_max, reduce_f64_atomic" in err


@pytest.mark.parametrize("argv, needle", [
    (["analyze", "X", "--arch", "sm_99"], "unknown target 'sm_99'"),
    (["occupancy", "--arch", "sm_42", "--regs", "32"], "unknown target 'sm_42'"),
    (["analyze", "X", "--block", "0"], "block size must be 1..1024"),
    (["analyze", "X", "--top", "-1"], "count must be >= 0"),
    (["sweep", "X", "--caps", "128,8"], "16..255"),
    (["sweep", "X", "--caps", "many"], "expected integers"),
    (["occupancy", "--regs", "300"], "register count must be 0..255"),
    (["analyze"], "required: FILE.ptx"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_usage_errors_are_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert needle in err and "usage:" in err


# --- compare, sweep, occupancy ---------------------------------------------------------------

def test_compare_two_variants(capsys, files):
    doc = run_json(capsys, "compare", files["pressure"], files["pressure16"])
    assert doc["schema"] == "ptxforge.compare/1"
    assert doc["only_a"] == [] and doc["only_b"] == []
    (pair,) = [p for p in doc["kernels"] if p["name"] == "live_window"]
    for side in ("a", "b"):
        assert KERNEL_KEYS <= set(pair[side])
    rows = {r["metric"]: r for r in pair["rows"]}
    assert (rows["ld.global"]["a"], rows["ld.global"]["b"]) == (32, 16)
    assert rows["ld.global"]["delta"] == -16 and rows["ld.global"]["change"] == -0.5
    assert (rows["fma"]["a"], rows["fma"]["b"]) == (32, 16)
    regs = rows["registers (ptxas)"]
    assert regs["a"] == pair["a"]["ptxas"]["registers"]
    assert regs["b"] == pair["b"]["ptxas"]["registers"]
    assert regs["delta"] == regs["b"] - regs["a"] < 0
    assert rows["blocks/SM"]["b"] >= rows["blocks/SM"]["a"]

    code, out, err = run(capsys, "compare", files["pressure"], files["pressure16"])
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.strip().startswith("ld.global"))
    assert line.split() == ["ld.global", "32", "16", "-16", "-50%"]
    assert "Delta" in out and "change" in out


def test_compare_single_kernel_files_pair_whatever_the_names(capsys, files, tmp_path):
    renamed = tmp_path / "renamed.ptx"
    renamed.write_text(files["weno"].read_text().replace("weno5_reconstruct", "weno_branch"))
    doc = run_json(capsys, "compare", files["weno"], renamed, "--no-compile")
    (pair,) = doc["kernels"]
    assert pair["name"] == "weno5_reconstruct / weno_branch"
    assert all(r["delta"] in (0, None) for r in pair["rows"])


def test_compare_without_common_kernels_fails(capsys, files):
    code, out, err = run(capsys, "compare", files["reduce"], files["pressure"], "--no-compile")
    assert code == 1 and "no kernel names in common" in err


def test_sweep_caps_are_the_caps_swept(capsys, files):
    doc = run_json(capsys, "sweep", files["pressure"], "--kernel", "live_window",
                   "--caps", "100")
    caps = [r["cap"] for r in doc["kernels"][0]["sweep"]["rows"]]
    assert caps == [None, 100]
    code, out, err = run(capsys, "sweep", files["pressure"], "--only-caps")
    assert code == 2 and "--only-caps needs --caps" in err and "usage:" in err


def test_sweep_two_caps(capsys, files):
    doc = run_json(capsys, "sweep", files["pressure"], "--kernel", "live_window",
                   "--caps", "128,32", "--only-caps")
    (k,) = doc["kernels"]
    assert KERNEL_KEYS <= set(k) and k["name"] == "live_window"
    rows = k["sweep"]["rows"]
    assert [r["cap"] for r in rows] == [None, 128, 32]
    assert rows[0]["registers"] == k["ptxas"]["registers"]
    assert rows[2]["registers"] <= 32
    assert rows[2]["registers"] < rows[0]["registers"]
    for r in rows:
        assert r["blocks_per_sm"] == blocks_per_sm(r["registers"], 256)[0]

    code, out, err = run(capsys, "sweep", files["pressure"], "--kernel", "live_window",
                         "--caps", "128,32", "--only-caps")
    assert code == 0, err
    assert "register-cap sweep: live_window on sm_80" in out
    # a cap above the uncapped count still changes ptxas's allocation (48 -> 46 with ptxas
    # 13.5 here): the row is starred and its note says it is ptxas's own behaviour
    unreached = rows[1]["registers"] != rows[0]["registers"]
    assert [line.split()[0] for line in out.splitlines()[2:5]] == \
        ["none", "128*" if unreached else "128", "32"]
    assert ("ptxas allocates differently whenever a register cap is given" in out) is unreached


def test_occupancy_sm86_51_registers(capsys):
    code, out, err = run(capsys, "occupancy", "--arch", "sm_86", "--regs", "51", "--block", "256")
    assert code == 0, err
    assert "blocks/SM   4" in out and "occupancy   66.7%" in out
    assert "limited by  registers" in out
    doc = run_json(capsys, "occupancy", "--arch", "sm_86", "--regs", "51", "--block", "256")
    assert doc["blocks_per_sm"] == 4 and doc["limiter"] == "registers"
    assert round(doc["occupancy"] * 100, 1) == 66.7
    assert (doc["cliffs"]["to_gain"], doc["cliffs"]["next_blocks"]) == (3, 5)
    steps = {s["max_registers"]: s["blocks_per_sm"] for s in doc["cliffs"]["steps"]}
    assert steps[64] == 4 and steps[48] == 5


def test_occupancy_shared_memory_limits(capsys):
    doc = run_json(capsys, "occupancy", "--arch", "sm_80", "--regs", "32", "--block", "128",
                   "--smem", "49152")
    assert doc["shared"] == 49152
    assert doc["limiter"] == "shared_memory"
    # 164 KB carveout, (48 KB + 1 KB reserved) per block: 3 blocks
    assert doc["blocks_per_sm"] == 3


# --- the real command in a subprocess --------------------------------------------------------

def _python_m(*argv, stdin=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "ptxforge", *map(str, argv)], input=stdin,
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)


def test_python_m_ptxforge_reads_standard_input(files):
    p = _python_m("analyze", "-", "--no-compile", "--json", stdin=files["weno"].read_text())
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["file"] == "<stdin>"
    assert [k["name"] for k in doc["kernels"]] == ["weno5_reconstruct"]


def test_python_m_ptxforge_errors_without_traceback(files, tmp_path):
    p = _python_m("analyze", tmp_path / "missing.ptx")
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.startswith("ptxforge: error: cannot read") and "Traceback" not in p.stderr
    p = _python_m("analyze", "-", stdin="garbage {\n")
    assert p.returncode == 1
    assert p.stderr.startswith("ptxforge: error: <stdin>:1:1:") and "Traceback" not in p.stderr
    p = _python_m("occupancy", "--arch", "sm_86", "--regs", "51", "--block", "256")
    assert p.returncode == 0 and "66.7%" in p.stdout


def test_analyze_every_corpus_variant(capsys, tmp_path):
    """Every corpus source, sm_80/sm_90, with and without -lineinfo: exit 0, every .entry
    reported in file order with ptxas's figures, text and JSON alike; without --block each
    kernel is analysed at its own launch bounds (else 256), so every one can launch."""
    from ptxforge.toolchain.compile import ptx_entries

    from corpus_util import all_corpus_ptx

    own_sizes = 0
    for (name, arch, lineinfo), ptx in sorted(all_corpus_ptx().items()):
        path = tmp_path / f"{name}-{arch}-{int(lineinfo)}.ptx"
        path.write_text(ptx)
        doc = run_json(capsys, "analyze", path, "--arch", arch)
        assert [k["name"] for k in doc["kernels"]] == [e.name for e in ptx_entries(ptx)], path
        entries = {e.name: e for e in ptx_entries(ptx)}
        for k in doc["kernels"]:
            assert k["ptxas"]["registers"] > 0 and k["estimate"]["registers"] >= 0
            e = entries[k["name"]]
            dims = e.reqntid or e.maxntid
            limit = math.prod(dims) if dims else None
            block = limit if limit is not None else 256
            assert (k["ptxas"]["barriers"] or 0) <= 1       # the barrier limit never binds
            blocks, _ = blocks_per_sm(k["ptxas"]["registers"], block, arch,
                                      shared=k["ptxas"]["shared"], max_threads=limit)
            assert k["occupancy"]["block_size"] == block
            assert k["occupancy"]["block_source"] == (
                "default" if limit is None else ".reqntid" if e.reqntid else ".maxntid")
            assert k["occupancy"]["blocks_per_sm"] == blocks
            assert k["occupancy"]["launchable"] is True
            own_sizes += limit is not None
        code, out, err = run(capsys, "analyze", path, "--arch", arch, "--no-compile")
        assert code == 0 and err == "" and out.count("\n== ") == len(doc["kernels"])
    assert own_sizes > 0  # sgemm_8x8 (__launch_bounds__(64)) and dot_block<128> at least


def test_analyze_explains_the_gap_with_the_kernels_own_notes(capsys, tmp_path):
    # warp_reduce_max (reduce.cu) uses shfl.sync: relocatable (ptxas -c) it calls the
    # __cuda_sm70_shflsync_bfly_p helper through the ABI, which lifts it to 24 registers;
    # whole-program ptxas inlines the helper.
    from corpus_util import corpus_ptx

    path = tmp_path / "reduce.ptx"
    path.write_text(corpus_ptx("reduce", "sm_80"))
    assert main(["analyze", str(path), "--kernel", "warp_reduce_max", "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert whole["mode"] == "whole-program" and whole["kernels"][0]["ptxas"]["registers"] < 24
    assert main(["analyze", str(path), "--arch", "sm_80", "--kernel", "warp_reduce_max", "--json",
                 "--relocatable"]) == 0
    doc = json.loads(capsys.readouterr().out)
    k = doc["kernels"][0]
    assert doc["mode"] == "relocatable" and doc["tool"].startswith("ptxas ")
    assert k["ptxas"]["registers"] == 24 and k["estimate"]["registers"] < 24
    regs = whole["kernels"][0]["ptxas"]["registers"]
    assert (f"relocatable build: 24 registers, {24 - regs:+d} against whole-program ({regs}): it "
            "calls the ptxas helper __cuda_sm70_shflsync_bfly_p through the ABI") in k["notes"][-1]
    # the SASS gap names the helper's floor (was the PTX guess "warp-synchronous instructions")
    assert any(n.startswith("From the SASS: ") and "call-graph floor" in n for n in k["notes"])
    assert main(["analyze", str(path), "--arch", "sm_80", "--kernel", "warp_reduce_max",
                 "--relocatable"]) == 0
    text = capsys.readouterr().out
    assert "why ptxas differs from the estimate" in text and "From the SASS: " in text
    assert main(["analyze", str(path), "--no-compile", "--json"]) == 0
    assert all(k["notes"] == [] for k in json.loads(capsys.readouterr().out)["kernels"])


# --- launch limits, targets without an occupancy table, stdin twice ------------------------

REQNTID_128 = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p) .reqntid 128, 1, 1
{
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [p];
    ld.global.u64 %rd2, [%rd1];
    st.global.u64 [%rd1], %rd2;
    ret;
}
"""


@pytest.mark.parametrize("compile_flag", [[], ["--no-compile"]])
def test_reqntid_kernel_at_another_block_size_cannot_launch(capsys, tmp_path, compile_flag):
    path = tmp_path / "req.ptx"
    path.write_text(REQNTID_128)
    doc = run_json(capsys, "analyze", path, "--block", "1024", *compile_flag)
    occ = doc["kernels"][0]["occupancy"]
    assert occ["blocks_per_sm"] == 0 and occ["occupancy"] == 0
    assert occ["limiter"] == "reqntid" and occ["launchable"] is False
    assert "exactly 128 threads" in occ["reason"]
    code, out, err = run(capsys, "analyze", path, "--block", "1024", *compile_flag)
    assert code == 0, err
    assert "cannot launch at 1024 threads/block: reqntid: the kernel requires exactly 128" in out
    doc = run_json(capsys, "analyze", path, "--block", "128", *compile_flag)
    assert doc["kernels"][0]["occupancy"]["launchable"] is True


@pytest.mark.parametrize("argv, resource, words", [
    (["--regs", "32", "--block", "256", "--smem", "300000"], "shared_memory",
     ["300000 bytes", "167936"]),
    (["--regs", "255", "--block", "1024"], "registers", ["262144 registers", "65536"]),
])
def test_occupancy_that_cannot_launch_says_why(capsys, argv, resource, words):
    code, out, err = run(capsys, "occupancy", "--arch", "sm_80", *argv)
    assert code == 0, err
    assert "blocks/SM   0" in out and f"cannot launch: {resource.replace('_', ' ')}" in out
    for w in words:
        assert w in out
    doc = run_json(capsys, "occupancy", "--arch", "sm_80", *argv)
    assert doc["blocks_per_sm"] == 0 and doc["limiter"] == resource
    assert doc["launchable"] is False and words[0] in doc["reason"]


@pytest.mark.parametrize("arch", ["sm_88", "sm_101", "sm_110"])
def test_targets_without_an_occupancy_table_are_analysed_with_occupancy_na(capsys, files, arch):
    doc = run_json(capsys, "analyze", files["weno"], "--arch", arch, "--no-compile")
    (k,) = doc["kernels"]
    assert doc["arch"] == arch and k["estimate"]["registers"] > 0
    occ = k["occupancy"]
    assert occ["blocks_per_sm"] is None and occ["occupancy"] is None and occ["limiter"] is None
    assert f"no occupancy table for {arch}" in occ["reason"]
    code, out, err = run(capsys, "analyze", files["weno"], "--arch", arch, "--no-compile")
    assert code == 0 and "occupancy n/a: no occupancy table" in out


def test_sm_110_still_compiles(capsys, files):
    from ptxforge.toolchain.compile import get_backend

    if not get_backend("nvjitlink").supports("sm_110"):
        pytest.skip("this nvJitLink does not target sm_110")
    doc = run_json(capsys, "analyze", files["weno"], "--arch", "sm_110")
    (k,) = doc["kernels"]
    assert k["ptxas"]["registers"] > 0 and k["occupancy"]["blocks_per_sm"] is None


def test_compare_stdin_twice_is_a_usage_error(capsys, monkeypatch):
    # in-process (the process boundary is tested by the _python_m tests above)
    monkeypatch.setattr(sys, "stdin", io.StringIO(REQNTID_128))
    code, out, err = run(capsys, "compare", "-", "-")
    assert code == 2 and out == ""
    assert "standard input can be read once" in err and "usage:" in err


def test_static_shared_counts_vector_arrays_whole():
    from ptxforge.reports.analyze import static_shared_bytes

    ptx = (".version 8.0\n.target sm_80\n.address_size 64\n"
           ".visible .entry k()\n{\n\t.shared .align 16 .v4 .f32 tile[16];\n"
           "\t.shared .align 4 .f32 plain[8];\n\tret;\n}\n")
    module = parse(ptx)
    assert static_shared_bytes(module, module.kernel("k")) == 16 * 16 + 8 * 4


def test_commands_run_with_a_short_thread_switch_interval_and_restore_it(monkeypatch, capsys):
    # the thread that drives ptxas waits for the analysis thread to let go of the interpreter's
    # lock at each step between two processes: a command runs with a short interval
    import sys

    import ptxforge.cli as cli

    seen = []
    monkeypatch.setattr(cli.occupancy, "run", lambda args: seen.append(sys.getswitchinterval()) or 0)
    before = sys.getswitchinterval()
    assert cli.main(["occupancy", "--regs", "32", "--block", "128"]) == 0
    assert seen == [min(before, cli._SWITCH_INTERVAL)] and seen[0] <= 0.001
    assert sys.getswitchinterval() == before
