"""Fat binaries and shared libraries built here with nvcc (the ``nvidia-cuda-nvcc`` wheel):
``ptxforge analyze`` lists every kernel of every embedded cubin and PTX, per arch, and the
cubins' figures equal what ptxas said in that nvcc run (``-Xptxas -v``, per arch).
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ptxforge.frontends.fatbin import entries, is_fatbin_container

import content_memo
from cli_util import run
from corpus_util import CORPUS_DIR

ARCHES = ("sm_80", "sm_86")
GENCODE = ("-gencode", "arch=compute_80,code=sm_80",
           "-gencode", "arch=compute_86,code=[sm_86,compute_86]")


def _nvcc() -> str:
    import nvidia

    for root in nvidia.__path__:
        for exe in sorted(Path(root).glob("cu*/bin/nvcc")):
            return str(exe)
    pytest.skip("no nvcc (the nvidia-cuda-nvcc wheel is a dependency)")


def _host_compilers() -> tuple:
    return tuple(content_memo.identity(exe) for name in ("cc", "c++", "gcc", "g++")
                 if (exe := shutil.which(name)))


def _build(*argv) -> dict:
    """Run nvcc with ``-Xptxas -v``; ``{(kernel, arch): (registers, stack)}`` from its log.

    A successful build (its log and the file ``-o`` names) is remembered on disk
    (tests/support/content_memo.py), keyed by nvcc's and the host compilers' identity, the
    flags and the text of every source: a warm run copies the file instead of building."""
    nvcc, args = _nvcc(), [str(a) for a in argv]
    target = Path(args[args.index("-o") + 1])
    inputs = tuple((Path(a).name, Path(a).read_bytes()) if a.endswith(".cu") else a
                   for a in args if Path(a) != target)

    def build() -> dict:
        proc = subprocess.run([nvcc, "-Xptxas", "-v", *GENCODE, *args],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        return {"log": proc.stdout + proc.stderr,
                "file": base64.b64encode(target.read_bytes()).decode()}

    kept = content_memo.remembered(
        "nvcc-build", (content_memo.identity(nvcc), _host_compilers(), GENCODE, inputs),
        build, package=False)
    target.write_bytes(base64.b64decode(kept["file"]))
    out, current = {}, None
    for line in kept["log"].splitlines():
        m = re.search(r"Compiling entry function '([^']+)' for '(sm_\d+)'", line)
        if m:
            current = (m.group(1), m.group(2))
        m = re.search(r"Used (\d+) registers", line)
        if m and current is not None:
            stack = re.search(r"(\d+) bytes cumulative stack size", line)
            out[current] = (int(m.group(1)), int(stack.group(1)) if stack else 0)
            current = None
    assert out
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("fat")
    fat = d / "pressure.fatbin"
    fat_stats = _build("-fatbin", "--compress-mode=none", CORPUS_DIR / "pressure.cu", "-o", fat)
    lib = d / "libkernels.so"
    lib_stats = _build("-shared", "-Xcompiler", "-fPIC", CORPUS_DIR / "pressure.cu",
                       CORPUS_DIR / "templates.cu", "-o", lib)
    return fat, fat_stats, lib, lib_stats


def _kernels(doc: dict, kind: str) -> dict:
    out = {}
    for e in doc["entries"]:
        if e["kind"] == kind:
            for k in e["report"]["kernels"]:
                out[(k["name"], e["arch"])] = k
    return out


def test_a_fatbin_lists_every_kernel_per_arch(capsys, built):
    fat, stats, _, _ = built
    assert [(e.kind, e.arch) for e in entries(fat.read_bytes())] == [
        ("cubin", "sm_80"), ("cubin", "sm_86"), ("ptx", "sm_86")]
    code, out, err = run(capsys, "analyze", fat, "--json")
    assert code == 0, err
    doc = json.loads(out)
    cubins = _kernels(doc, "cubin")
    assert set(cubins) == set(stats)                      # every kernel, every arch
    for key, k in cubins.items():
        assert (k["registers"], k["stack"]) == stats[key], key
    ptx = _kernels(doc, "ptx")                            # the PTX, compiled here for sm_86
    assert {n for n, _ in ptx} == {n for n, _ in stats}
    for (name, arch), k in ptx.items():
        assert arch == "sm_86" and k["ptxas"]["registers"] == stats[(name, "sm_86")][0]
    code, out, _ = run(capsys, "analyze", fat, "--arch", "sm_80", "--json")
    assert {e["arch"] for e in json.loads(out)["entries"]} == {"sm_80"}


def test_a_shared_library_lists_every_kernel_per_arch(capsys, built):
    _, _, lib, stats = built
    data = lib.read_bytes()
    assert data[:4] == b"\x7fELF" and is_fatbin_container(data)
    code, out, err = run(capsys, "analyze", lib, "--json")
    assert code == 0, err
    doc = json.loads(out)
    cubins = _kernels(doc, "cubin")
    assert set(cubins) == set(stats) and {a for _, a in cubins} == set(ARCHES)
    for key, k in cubins.items():
        assert (k["registers"], k["stack"]) == stats[key], key
    # nvcc compresses the PTX by default: listed, not read
    assert {s["kind"] for s in doc["skipped"] if "compressed" in s["why"]} == {"ptx"}
    code, text, _ = run(capsys, "analyze", lib)
    assert code == 0 and "dot_block<128>" in text and "zstd-compressed" in text
    code, out, _ = run(capsys, "analyze", lib, "--kernel", "dot_block", "--json")
    doc = json.loads(out)
    assert code == 0 and {(k, a) for k, a in _kernels(doc, "cubin")} == {
        (n, a) for n, a in stats if n.startswith("_Z9dot_block")}


def test_a_malformed_container_is_one_line(capsys, tmp_path, built):
    fat = built[0]
    cut = tmp_path / "cut.fatbin"
    cut.write_bytes(fat.read_bytes()[:400])
    code, out, err = run(capsys, "analyze", cut)
    assert code == 1 and out == "" and "truncated" in err and len(err.splitlines()) == 1


def test_a_wheel_lists_every_kernel_of_its_libraries(capsys, built, tmp_path):
    """A wheel holding a CUDA extension (the .so built above) beside pure-Python files: the
    same kernels and figures as the .so itself, each entry naming its member."""
    import zipfile

    _, _, lib, stats = built
    wheel = tmp_path / "kernels-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("kernels/__init__.py", "from ._ops import *\n")
        zf.write(lib, "kernels/_ops.cpython-311-x86_64-linux-gnu.so")
        zf.writestr("kernels-1.0.dist-info/METADATA", "Name: kernels\nVersion: 1.0\n")
    code, out, err = run(capsys, "analyze", wheel, "--json")
    assert code == 0, err
    doc = json.loads(out)
    cubins = _kernels(doc, "cubin")
    assert set(cubins) == set(stats)
    for key, k in cubins.items():
        assert (k["registers"], k["stack"]) == stats[key], key
    assert {e["member"] for e in doc["entries"]} == {
        "kernels/_ops.cpython-311-x86_64-linux-gnu.so"}
    empty = tmp_path / "pure-1.0-py3-none-any.whl"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("pure/__init__.py", "")
    code, out, err = run(capsys, "analyze", empty)
    assert code == 1 and out == "" and "no CUDA code" in err and len(err.splitlines()) == 1
