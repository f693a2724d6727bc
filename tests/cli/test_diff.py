"""``ptxforge diff``: two builds of the same kernels that differ in one kernel.

The old build is the corpus as is; the new one compiles ``pressure.cu`` with a looser
``__maxnreg__`` on ``spill_capped`` only, so exactly that kernel's registers and spills move.
Both as single files, as folders of PTX, and as folders of cubins.
"""

from __future__ import annotations

import json
import re

import pytest

from ptxforge import compile_ptx

from build_kit import analyze_json, write_build
from cli_util import run
from corpus_util import CORPUS_DIR, compile_cu


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    old = write_build(tmp_path_factory.mktemp("old"))
    new = write_build(tmp_path_factory.mktemp("new"))
    src = (CORPUS_DIR / "pressure.cu").read_text()
    looser, n = re.subn(r"__maxnreg__\(32\)", "__maxnreg__(64)", src)
    assert n == 1
    (new / "pressure.ptx").write_text(compile_cu(looser, "pressure", "sm_80", lineinfo=True))
    return old, new


def _cubins(src_dir, out_dir):
    out_dir.mkdir()
    for ptx in src_dir.glob("*.ptx"):
        (out_dir / f"{ptx.stem}.cubin").write_bytes(compile_ptx(ptx.read_text(), "sm_80").cubin)
    return out_dir


def test_two_folders_differ_in_one_kernel(capsys, builds):
    old, new = builds
    a = analyze_json(capsys, old / "pressure.ptx")["spill_capped"]["ptxas"]
    b = analyze_json(capsys, new / "pressure.ptx")["spill_capped"]["ptxas"]
    assert a["registers"] < b["registers"] and a["spill_stores"] > b["spill_stores"]
    code, out, err = run(capsys, "diff", old, new, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["kernels"] == 7 and data["changed"] == 1
    (row,) = data["rows"]
    assert row["kernel"] == "spill_capped" and row["status"] == "changed"
    assert row["deltas"]["registers"] == b["registers"] - a["registers"]
    assert row["deltas"]["spill_stores"] == b["spill_stores"] - a["spill_stores"]
    assert row["old"]["registers"] == a["registers"] and row["new"]["registers"] == b["registers"]
    code, out, _ = run(capsys, "diff", old, new, "--json", "--all")
    rows = json.loads(out)["rows"]
    assert len(rows) == 7 and sorted(r["status"] for r in rows) == ["changed"] + ["same"] * 6


def test_text_and_markdown_show_only_the_change(capsys, builds):
    old, new = builds
    a = analyze_json(capsys, old / "pressure.ptx")["spill_capped"]["ptxas"]["registers"]
    b = analyze_json(capsys, new / "pressure.ptx")["spill_capped"]["ptxas"]["registers"]
    code, out, _ = run(capsys, "diff", old / "pressure.ptx", new / "pressure.ptx")
    assert code == 0 and "1 of 2 kernels changed" in out
    assert f"{a} → {b} (+{b - a})" in out and "live_window" not in out
    code, md, _ = run(capsys, "diff", old, new, "--markdown")
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert table[0].startswith("| kernel | status | registers |") and len(table) == 3
    assert table[2].startswith("| `spill_capped` | changed |") and f"(+{b - a})" in table[2]
    code, md_all, _ = run(capsys, "diff", old, new, "--markdown", "--all")
    assert len([line for line in md_all.splitlines() if line.startswith("| `")]) == 7


def test_added_and_removed_kernels(capsys, builds, tmp_path):
    old, new = builds
    code, out, _ = run(capsys, "diff", old / "local_array.ptx", new / "templates.ptx", "--json")
    rows = {r["kernel"]: r["status"] for r in json.loads(out)["rows"]}
    assert rows.pop("local_array") == "removed"
    assert set(rows.values()) == {"added"} and len(rows) == 4


def test_two_folders_of_cubins(capsys, builds, tmp_path):
    old, new = builds
    co, cn = _cubins(old, tmp_path / "old"), _cubins(new, tmp_path / "new")
    code, out, err = run(capsys, "diff", co, cn, "--json")
    assert code == 0, err
    (row,) = json.loads(out)["rows"]
    assert row["kernel"] == "spill_capped" and "registers" in row["deltas"]
    assert row["new"]["spill_stores"] is None  # a cubin does not record spill bytes


def test_bad_input_is_one_message(capsys, builds, tmp_path):
    old, _ = builds
    code, _, err = run(capsys, "diff", old, tmp_path / "missing")
    assert code == 1 and "missing" in err and "Traceback" not in err
    code, _, err = run(capsys, "diff", old, old, "--json", "--markdown")
    assert code == 2


def test_header_keeps_the_summary_whole_with_long_paths():
    # a 200-character path (CI's temporary folders can be that long) must not split the
    # sentence "1 of 2 kernels changed" across lines
    from ptxforge.reports.diff import DiffReport
    long = "/tmp/" + "x" * 180 + "/build/kernels.ptx"
    for old, new in ((long, long + ".new"), ("a.ptx", "b.ptx")):
        text = DiffReport(old=old, new=new, rows=()).to_text()
        lines = text.splitlines()
        assert any(line.strip() == "no change in 0 kernels" or line.endswith(": no change in 0 kernels")
                   for line in lines), text
        assert all(len(line) <= 100 for line in lines), text
    assert DiffReport(old="a.ptx", new="b.ptx", rows=()).to_text() == "a.ptx → b.ptx: no change in 0 kernels\n"
