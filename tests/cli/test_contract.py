"""One CLI contract: the same exit status for the same failure in every command, options that
do not go together refused with the command's usage, files written announced, headers and
summaries worded right, and wrapping that does not depend on a path's length.

The PTX comes from NVRTC (the corpus sources, compiled in the fixture); ptxas is real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptxforge.cli import EPILOG, build_parser

from build_kit import analyze_json, write_build
from cli_util import run


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    return write_build(tmp_path_factory.mktemp("b"))


# --- a missing file: exit 1 in every command -------------------------------------------------

_MISSING = {"analyze": ["{m}"], "sweep": ["{m}"], "sass": ["{m}"], "report": ["{m}", "-o", "{o}"],
            "compare": ["{m}", "{p}"], "diff": ["{m}", "{p}"], "check": ["{m}", "--no-spills"],
            "profile": ["{m}", "--grid", "1", "--block", "32"],
            "memory": ["{m}"]}


@pytest.mark.parametrize("command", sorted(_MISSING))
def test_a_missing_file_is_exit_1_in_every_command(capsys, build, tmp_path, command):
    missing = tmp_path / "nope.ptx"
    fill = {"m": missing, "p": build / "pressure.ptx", "o": tmp_path / "r.html"}
    code, out, err = run(capsys, command, *(a.format(**fill) for a in _MISSING[command]))
    assert code == 1 and out == "" and "nope.ptx" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_the_top_level_help_states_the_contract(capsys):
    code, out, _ = run(capsys, "--help")
    flat = " ".join(out.split())
    assert code == 0 and " ".join(EPILOG.split()) in flat
    assert "a missing file is 1 in every command" in flat
    doc = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()
    assert "a missing file is 1 in every command" in " ".join(doc.lower().split())


# --- options that do not apply: the command's usage, exit 2 -----------------------------------

@pytest.mark.parametrize("argv, said", [
    (["analyze", "{f}", "--no-compile", "--relocatable"], "--relocatable"),
    (["analyze", "{f}", "--no-compile", "--backend", "nvjitlink"], "--backend"),
    (["analyze", "{f}", "--no-compile", "--ptxas", "{ptxas}"], "--ptxas"),
    (["compare", "{f}", "{f}", "--no-compile", "--relocatable"], "--relocatable"),
    (["report", "{f}", "-o", "-", "--no-compile", "--sweep"], "--sweep"),
    (["report", "{f}", "-o", "-", "--no-compile", "--relocatable"], "--relocatable"),
])
def test_flags_that_do_not_apply_are_refused_with_the_usage(capsys, build, argv, said):
    from ptxforge.toolchain.backends import find_ptxas

    fill = {"f": build / "pressure.ptx", "ptxas": find_ptxas()}
    code, out, err = run(capsys, *(a.format(**fill) for a in argv))
    assert code == 2 and out == ""
    assert err.startswith(f"usage: ptxforge {argv[0]}") and said in err.splitlines()[-1]


def test_report_has_no_json_option_and_announces_the_file(capsys, build, tmp_path):
    sub = build_parser()._subparsers._group_actions[0].choices["report"]
    assert "--json" not in sub.format_help()
    assert run(capsys, "report", build / "pressure.ptx", "--json")[0] == 2
    page = tmp_path / "page.html"
    code, out, err = run(capsys, "report", build / "pressure.ptx", "-o", page, "--no-compile")
    size = page.stat().st_size
    assert code == 0 and out == "" and err == f"wrote {page} ({size:,} bytes)\n"


def test_check_announces_the_files_it_writes(capsys, build, tmp_path):
    sarif, junit = tmp_path / "c.sarif", tmp_path / "c.xml"
    code, _, err = run(capsys, "check", build / "pressure.ptx", "--max-registers", 255,
                       "--sarif", sarif, "--junit", junit)
    assert code == 0 and err == f"wrote {sarif}\nwrote {junit}\n"
    assert sarif.stat().st_size > 0 and junit.stat().st_size > 0


# --- wording -------------------------------------------------------------------------------------

def test_sass_header_names_ptxas_once(capsys, build):
    code, out, _ = run(capsys, "sass", build / "pressure.ptx")
    head = out.splitlines()[0]
    assert code == 0 and "ptxas via ptxas" not in out and "; ptxas; nvdisasm " in head


def test_check_counts_its_checks_in_words(capsys, build):
    code, out, _ = run(capsys, "check", build / "local_array.ptx", "--max-registers", 255)
    assert code == 0 and out.rstrip().endswith("the 1 check holds on 1 kernel")
    code, out, _ = run(capsys, "check", build / "pressure.ptx", "--max-registers", 255,
                       "--max-stack", 100000)
    assert code == 0 and out.rstrip().endswith("all 4 checks hold on 2 kernels")


# --- a 200-character path does not change how sentences wrap ------------------------------------

def _deep(root, build):
    deep = root / ("folder_of_kernels_" + "x" * 20)   # one level at least: the root may be long
    while len(str(deep)) < 200:
        deep = deep / ("folder_of_kernels_" + "x" * 20)
    deep.mkdir(parents=True)
    for f in build.glob("*.ptx"):
        (deep / f.name).write_text(f.read_text())
    assert len(str(deep / "pressure.ptx")) > 200
    return deep


@pytest.mark.parametrize("argv", [["analyze", "{d}/pressure.ptx"],
                                  ["check", "{d}", "--no-spills"],
                                  ["diff", "{d}/pressure.ptx", "{d}/templates.ptx"]])
def test_a_long_path_wraps_no_sentence(capsys, build, tmp_path, monkeypatch, argv):
    deep = _deep(tmp_path, build)
    (tmp_path / "b").mkdir()
    for f in build.glob("*.ptx"):
        (tmp_path / "b" / f.name).write_text(f.read_text())
    monkeypatch.chdir(tmp_path)
    code_s, short, _ = run(capsys, *(a.format(d="b") for a in argv))
    code_l, long, _ = run(capsys, *(a.format(d=deep) for a in argv))
    assert code_s == code_l and all(len(line) <= 100 for line in long.splitlines())
    # the same lines, but for the path itself (shortened to the same width as "b/NAME")
    for name in ("pressure.ptx", "templates.ptx", "local_array.ptx"):
        long = long.replace(f"…/{name}", f"b/{name}")
    assert long == short
    assert [len(line) for line in long.splitlines()] == [len(line) for line in short.splitlines()]


def test_diff_shows_the_occupancy_delta(capsys, build, tmp_path):
    import re

    src = (build / "pressure.ptx").read_text()
    new = tmp_path / "new"
    write_build(new, sources=("pressure",), local_array=False)
    from corpus_util import CORPUS_DIR, compile_cu

    looser, n = re.subn(r"__maxnreg__\(32\)", "__maxnreg__(64)",
                        (CORPUS_DIR / "pressure.cu").read_text())
    assert n == 1 and src
    (new / "pressure.ptx").write_text(compile_cu(looser, "pressure", "sm_80", lineinfo=True))
    a = analyze_json(capsys, build / "pressure.ptx")["spill_capped"]["occupancy"]["occupancy"]
    b = analyze_json(capsys, new / "pressure.ptx")["spill_capped"]["occupancy"]["occupancy"]
    assert a != b
    code, out, _ = run(capsys, "diff", build / "pressure.ptx", new / "pressure.ptx")
    want = f"{100 * a:.1f}% → {100 * b:.1f}% ({100 * (b - a):+.1f} pp)"
    assert code == 0 and want in out
    code, out, _ = run(capsys, "diff", build / "pressure.ptx", new / "pressure.ptx", "--json")
    (row,) = json.loads(out)["rows"]
    assert row["deltas"]["occupancy"] == pytest.approx(b - a)
