"""``check`` and ``diff`` over folders that also hold PTX with no kernel (globals only, as
NVRTC writes for a translation unit of ``__device__`` / ``__constant__`` tables): every kernel
is checked, the kernel-less files are listed by name, whatever ``--jobs``.
"""

from __future__ import annotations

import json
import re

import pytest

from build_kit import write_build
from cli_util import flat, run
from corpus_util import compile_cu

TABLES = """
__device__ int lookup[4] = {1, 2, 3, 4};
__constant__ float coeffs[8] = {0.5f, 0.25f};
"""


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    plain = write_build(tmp_path_factory.mktemp("plain"))
    mixed = write_build(tmp_path_factory.mktemp("mixed"))
    ptx = compile_cu(TABLES, "tables", "sm_80", lineinfo=True)
    assert ".global" in ptx and not re.search(r"\.(entry|func)\b", ptx)
    (mixed / "tables.ptx").write_text(ptx)
    (mixed / "sub").mkdir()
    (mixed / "sub" / "more_tables.ptx").write_text(ptx)
    return plain, mixed


@pytest.mark.parametrize("jobs", [1, 2])
def test_check_checks_every_kernel_and_names_the_kernelless_files(capsys, folders, jobs):
    plain, mixed = folders
    code, ref, _ = run(capsys, "check", plain, "--max-registers", 255, "--json")
    code, out, err = run(capsys, "check", mixed, "--max-registers", 255, "--json",
                         "--jobs", jobs)
    doc = json.loads(out)
    assert code == 0, err
    assert [k["name"] for k in doc["kernels"]] == [k["name"] for k in json.loads(ref)["kernels"]]
    assert doc["files_without_kernels"] == [str(mixed / "sub" / "more_tables.ptx"),
                                            str(mixed / "tables.ptx")]
    code, text, _ = run(capsys, "check", mixed, "--max-registers", 255, "--jobs", jobs)
    assert code == 0 and "no kernel in 2 files (globals only, nothing to check):" in flat(text)
    assert "more_tables.ptx" in text and "tables.ptx," in text
    # a failing budget still fails: the kernel-less files do not hide it
    assert run(capsys, "check", mixed, "--no-spills", "--jobs", jobs)[0] == 1
    # only kernel-less files: nothing to check is an error naming them
    code, out, err = run(capsys, "check", mixed / "tables.ptx", "--max-registers", 255)
    assert code == 1 and "no kernel" in err and "tables.ptx" in err


def test_diff_pairs_the_kernels_and_names_the_kernelless_files(capsys, folders):
    plain, mixed = folders
    code, out, err = run(capsys, "diff", plain, mixed, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["changed"] == 0 and doc["kernels"] == 7, err
    assert len(doc["files_without_kernels"]) == 2
    code, out, _ = run(capsys, "diff", plain, mixed)
    assert code == 0 and "no change in 7 kernels" in out
    assert "no kernel in 2 files (globals only):" in flat(out) and "more_tables.ptx" in out
    code, md, _ = run(capsys, "diff", plain, mixed, "--markdown")
    assert "no kernel in 2 files (globals only):" in md
