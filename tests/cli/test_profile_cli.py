"""``ptxforge profile`` and ``ptxforge check --races`` on NVRTC kernels written for them
(tests/support/memory_kernels.py): the figures in text and JSON, races with both source lines
and exit 1, SARIF results for races, and a one-line error for every kind of bad input."""

from __future__ import annotations

import json

import pytest

from cli_util import run
from memory_kernels import SOURCE, line_of, memory_ptx


@pytest.fixture(scope="module")
def ptx(tmp_path_factory):
    path = tmp_path_factory.mktemp("p") / "mem.ptx"
    path.write_text(memory_ptx())
    return path


TRANSPOSE = ["--grid", "2x2", "--block", "32,32", "--arg", "0=f32[4096]:iota",
             "--arg", "1=f32[4096]", "--arg", "2=64"]


def test_profile_text_names_the_figures_and_the_nsight_metrics(capsys, ptx):
    code, out, err = run(capsys, "profile", ptx, "--kernel", "transpose_naive", *TRANSPOSE)
    assert code == 0 and err == ""
    assert out.startswith("kernel transpose_naive: grid (2, 2, 1), block (32, 32, 1)")
    rows = [line.split() for line in out.splitlines() if line.split()[2:3] == ["st.global.f32"]]
    line = str(line_of("naive"))
    assert rows == [[line, rows[0][1], "st.global.f32", "global", "128", "128", "4096", "32",
                     "-", "-", "-", "-"]]
    assert "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum" in out
    assert "smsp__inst_executed.sum" in out


def test_profile_json_rows_and_totals(capsys, ptx):
    code, out, _ = run(capsys, "profile", ptx, "--kernel", "transpose_tile", *TRANSPOSE, "--json")
    data = json.loads(out)
    assert code == 0 and data["kernel"] == "transpose_tile"
    shared = [r for r in data["instructions"] if r["space"] == "shared"]
    assert [(r["opcode"].split(".")[0], r["ways"], r["wavefronts_per_request"], r["line"])
            for r in shared] == [("st", 1, 1.0, line_of("tile_store")),
                                 ("ld", 32, 32.0, line_of("tile_load"))]
    assert data["nsight"]["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 31 * 128
    assert data["nsight_names"]["branch_efficiency"] == \
        "smsp__sass_average_branch_targets_threads_uniform.pct"


def test_profile_races_exit_1_with_both_lines(capsys, ptx):
    argv = ["profile", ptx, "--kernel", "war_race", "--grid", "1", "--block", "256",
            "--arg", "0=f32[768]:random", "--arg", "1=f32[256]", "--arg", "tiles=3"]
    code, out, _ = run(capsys, *argv[:-2], "--arg", "war_race_param_2=3", "--races")
    assert code == 1
    race = [line for line in out.splitlines() if line.strip().startswith("WAR")]
    assert len(race) == 1
    assert f":{line_of('war_store')} st.shared" in race[0]
    assert f":{line_of('war_load')} ld.shared" in race[0]
    code, out, _ = run(capsys, "profile", ptx, "--kernel", "war_fixed", *argv[4:-2],
                       "--arg", "2=3", "--races", "--json")
    assert code == 0 and json.loads(out)["races"] == []


@pytest.mark.parametrize("extra, status, said", [
    (["--kernel", "copy", "--grid", "0", "--block", "32"], 2, "--grid '0': expected one to three"),
    (["--kernel", "copy", "--grid", "1", "--block", "32", "--arg", "x"], 2,
     "expected NAME=VALUE (a number) or NAME=TYPE[N]"),
    (["--kernel", "copy", "--grid", "1", "--block", "32", "--arg", "0=q32[4]"], 2,
     "unknown element type 'q32'"),
    (["--kernel", "copy", "--grid", "1", "--block", "32", "--arg", "0=f32[32]"], 2,
     "needs --arg for 1 copy_param_1 (.u64)"),
    (["--kernel", "copy", "--grid", "1", "--block", "32", "--arg", "0=f32[32]",
      "--arg", "1=f32[32]", "--arg", "zz=1"], 2, "has no parameter 'zz'"),
    (["--kernel", "copy", "--block", "32"], 2, "needs its launch: give --grid G"),
    (["--grid", "1", "--block", "32"], 2, "has 15 kernels"),
    (["--kernel", "nope", "--grid", "1", "--block", "32"], 1, "no kernel named 'nope'"),
    (["--kernel", "copy", "--grid", "1", "--block", "32", "--arg", "0=f32[8]",
      "--arg", "1=f32[8]"], 1, "out-of-bounds global access"),
])
def test_bad_input_is_one_line(capsys, ptx, extra, status, said):
    code, out, err = run(capsys, "profile", ptx, *extra)
    assert code == status and out == ""
    assert "Traceback" not in err and said in err, err
    assert len(err.strip().splitlines()) == (1 if status == 1 else err.count("\n")), err
    assert said in err.strip().splitlines()[-1]


def test_profile_reads_cuda_sources(capsys, tmp_path):
    src = tmp_path / "strided.cu"
    src.write_text(SOURCE)
    code, out, err = run(capsys, "profile", src, "--kernel", "strided", "--grid", "2",
                         "--block", "256", "--arg", "0=f32[1024]", "--arg", "1=f32[512]",
                         "--json")
    assert code == 0, err
    loads = [r for r in json.loads(out)["instructions"] if r["opcode"].startswith("ld.global")]
    assert [(r["sectors_per_request"], r["line"]) for r in loads] == [(8.0, line_of("strided"))]


def test_check_races_writes_a_sarif_result_per_race(capsys, ptx, tmp_path):
    sarif = tmp_path / "r.sarif"
    launch = ["--grid", "2", "--block", "256", "--arg", "0=f32[512]", "--arg", "1=f32[512]"]
    code, out, err = run(capsys, "check", ptx, "--races", "--kernel", "raw_race", *launch,
                         "--sarif", sarif)
    assert code == 1 and out.startswith("race: RAW (read after write) on shared memory")
    assert err == f"wrote {sarif}\n"
    log = json.loads(sarif.read_text())
    results = log["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["data-race"]
    assert log["runs"][0]["tool"]["driver"]["rules"][results[0]["ruleIndex"]]["id"] == \
        "data-race"
    assert results[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == \
        line_of("raw_load")
    assert results[0]["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == \
        line_of("raw_store")
    assert log["runs"][0]["invocations"][0]["exitCode"] == 1
    code, out, _ = run(capsys, "check", ptx, "--races", "--kernel", "raw_fixed", *launch,
                       "--max-registers", "255")
    assert code == 0 and "races: none in kernel raw_fixed" in out and "checks hold" in out


@pytest.mark.parametrize("files, extra, said", [
    (1, [], "needs its launch: give --grid G and --block B"),
    (2, ["--grid", "1", "--block", "32"], "--races runs one kernel of one file"),
])
def test_check_races_says_what_it_needs(capsys, ptx, files, extra, said):
    code, out, err = run(capsys, "check", *[ptx] * files, "--races", "--kernel", "copy",
                         *extra)
    assert code == 2 and out == "" and said in err.strip().splitlines()[-1]
