"""``ptxforge memory``: the per-warp figures per instruction and per line, text and JSON, and
the CLI contract (a missing file or a bad --block is one line, exit 1 or 2, no traceback)."""

from __future__ import annotations

import json

import pytest

from ptxforge import emit

import memory_builders as mk
from cli_util import flat, run
from corpus_util import stable_folder

_FIELDS = {"index", "opcode", "line", "file", "space", "direction", "width", "address",
           "sectors_per_request", "ways", "wavefronts_per_request", "reason"}


@pytest.fixture(scope="module")
def files():
    # a folder named by its content, the same in every run: NVRTC's and ptxas's runs on the
    # .cu files are the tool memo's to answer (a new tmp folder is a new input to each)
    return stable_folder({"transpose.ptx": emit(mk.transpose_naive()),
                          "tile.ptx": emit(mk.shared_tile()),
                          "transposes.cu": mk.CUDA_TRANSPOSES,
                          "runtime.cu": mk.CUDA_RUNTIME_SIZES})


def test_json_rows_worst_first_with_every_field(capsys, files):
    code, out, err = run(capsys, "memory", files / "transpose.ptx", "--json")
    assert code == 0, err
    (k,) = json.loads(out)["kernels"]
    assert k["kernel"] == "transpose_naive" and k["block"] == [32, 8, 1]
    rows = k["accesses"]
    assert all(set(r) == _FIELDS for r in rows)
    assert [(r["direction"], r["sectors_per_request"]) for r in rows] == [("store", 32.0),
                                                                          ("load", 4.0)]
    assert k["fixes"][0]["kind"] == "coalesce" and k["fixes"][0]["after"] == 4.0


def test_text_names_the_figures_and_the_fix(capsys, files):
    code, out, _ = run(capsys, "memory", files / "tile.ptx")
    text = flat(out)
    assert code == 0 and "32-way (32 wavefronts)" in text
    assert "padding: 32 -> 1 ways" in text and "Swizzle<5,2,5>" in text


def test_a_cu_source_per_kernel_and_block(capsys, files):
    code, out, err = run(capsys, "memory", files / "transposes.cu", "--kernel", "naive",
                         "--block", "32x8", "--json")
    assert code == 0, err
    (k,) = json.loads(out)["kernels"]
    (line,) = [r for r in k["lines"] if r["line"] == mk.CUDA_LINES("STORE_NAIVE")]
    assert line["sectors_per_request"] == 32.0 and line["space"] == "global"
    assert k["lines"][0] == line


@pytest.mark.parametrize("block", ["0", "abc", "2000", "32,32,32", "1,2,3,4"])
def test_a_bad_block_is_a_usage_error(capsys, files, block):
    code, out, err = run(capsys, "memory", files / "tile.ptx", "--block", block)
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.startswith("usage: ptxforge memory") and "--block" in err.splitlines()[-1]


def test_a_missing_file_and_an_unknown_kernel_are_exit_1(capsys, files, tmp_path):
    code, out, err = run(capsys, "memory", tmp_path / "nope.ptx")
    assert code == 1 and out == "" and "nope.ptx" in err and len(err.strip().splitlines()) == 1
    code, out, err = run(capsys, "memory", files / "tile.ptx", "--kernel", "zz")
    assert code == 1 and "zz" in err and "tile" in err and "Traceback" not in err


def test_param_gives_a_runtime_stride_its_figures(capsys, files):
    code, out, err = run(capsys, "memory", files / "runtime.cu", "--block", "32,8", "--json")
    assert code == 0, err
    rows = json.loads(out)["kernels"][0]["accesses"]
    assert all(r["sectors_per_request"] is None and "naive_rt_param_3" in "".join(
        r["reason"] + r["address"] for r in rows if r["direction"] == "store") for r in rows)
    code, out, err = run(capsys, "memory", files / "runtime.cu", "--block", "32,8", "--json",
                         "--param", "naive_rt_param_2=1024", "--param", "naive_rt_param_3=1024")
    assert code == 0, err
    rows = json.loads(out)["kernels"][0]["accesses"]
    assert [(r["direction"], r["sectors_per_request"]) for r in rows] == [("store", 32.0),
                                                                          ("load", 4.0)]
    code, out, err = run(capsys, "memory", files / "runtime.cu", "--param", "nope=3")
    assert code == 1 and "nope" in err and "naive_rt_param_0" in err and out == ""
    code, out, err = run(capsys, "memory", files / "runtime.cu", "--param", "nope")
    assert code == 2 and "NAME=INTEGER" in err
