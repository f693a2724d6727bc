"""``sweep --caps`` sweeps exactly the caps given; ``analyze --relocatable`` prints the
relocatable explanation in its text and does not call its prediction line whole-program.

NVRTC PTX of the corpus; each figure checked against a separate ptxas compile.
"""

from __future__ import annotations

import json
import re

import pytest

from ptxforge import compile_ptx
from ptxforge.toolchain.sweep import default_caps

from cli_util import flat, run
from corpus_util import corpus_ptx


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("modes")
    out = {}
    for name in ("pressure", "warp"):
        out[name] = d / f"{name}.ptx"
        out[name].write_text(corpus_ptx(name, "sm_80", lineinfo=True))
    return out


def _caps(capsys, path, *argv):
    code, out, err = run(capsys, "sweep", path, "--kernel", "live_window", "--json", *argv)
    assert code == 0, err
    (k,) = json.loads(out)["kernels"]
    return [r["cap"] for r in k["sweep"]["rows"]]


def test_sweep_caps_are_exactly_the_caps_given(capsys, files):
    assert _caps(capsys, files["pressure"], "--caps", "255,128,96,64") == [None, 255, 128, 96, 64]
    assert _caps(capsys, files["pressure"], "--caps", "40") == [None, 40]
    default = _caps(capsys, files["pressure"])
    assert default == [None, *default_caps("sm_80", 256)] and 96 not in default  # the cliffs
    code, out, _ = run(capsys, "sweep", files["pressure"], "--kernel", "live_window",
                       "--caps", "255,128,96,64")
    rows = re.findall(r"^\s+(none|\d+)\*?\s+\d+", out, re.M)
    assert code == 0 and rows == ["none", "255", "128", "96", "64"]


def test_relocatable_explanation_is_in_the_text(capsys, files):
    ptx = files["warp"].read_text()
    whole = compile_ptx(ptx, "sm_80")
    rdc = compile_ptx(ptx, "sm_80", relocatable=True)
    differ = [k.name for k in rdc.kernels if k.registers != whole[k.name].registers]
    assert differ, "the warp corpus has kernels whose relocatable count differs"
    code, out, err = run(capsys, "analyze", files["warp"], "--relocatable")
    assert code == 0, err
    sections = {m.group(1): m.group(2) for m in re.finditer(
        r"^== (\S+) \(\.entry\) ==\n(.*?)(?=^== |\Z)", out, re.M | re.S)}
    for name in differ:
        r, w = rdc[name].registers, whole[name].registers
        text = flat(sections[name])
        assert (f"relocatable build: {r} registers, {r - w:+d} against whole-program ({w}): "
                "it calls the ptxas helper") in text
        pred = re.search(r"predicted ptxas count: (\d+) registers \(.*?\); live count \d+; "
                         r"(.*?); (\S+)", text)
        assert pred and pred.group(2) == f"relocatable ptxas {r} ({r - int(pred.group(1)):+d})"
        line = text[pred.start():text.index("registers component")]
        assert "whole-program" not in line and "without -rdc" in line
    code, out, _ = run(capsys, "analyze", files["warp"])
    assert code == 0 and "relocatable build:" not in out and "whole-program ptxas" in out


def test_rdc_ptx_with_a_call_to_another_unit_is_analysed(capsys, tmp_path):
    """Dynamic parallelism needs -rdc=true, and its PTX calls the device runtime
    (``.extern .func``): analyze and sass give the relocatable build's figures and say why."""
    from corpus_util import compile_cu

    src = ("__global__ void child(float* p, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
           " if (i < n) p[i] *= 2; }\n__global__ void parent(float* p, int n) {"
           " if (threadIdx.x == 0) child<<<(n + 255) / 256, 256>>>(p, n); }\n")
    path = tmp_path / "dp.ptx"
    path.write_text(compile_cu(src, "dynpar", "sm_80", options=("-rdc=true",)))
    whole = compile_ptx(path.read_text(), "sm_80", relocatable=True)
    code, out, err = run(capsys, "analyze", path, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["mode"] == "relocatable" and any("-rdc=true" in n for n in doc["notes"])
    assert [k["ptxas"]["registers"] for k in doc["kernels"]] == \
        [k.registers for k in whole.kernels]
    code, out, err = run(capsys, "sass", path, "--kernel", "parent")
    assert code == 0 and "REGCOUNT" in out
    assert "relocatable" in out.split("\n\n")[0] and "-rdc=true" in flat(out)
    code, out, err = run(capsys, "sass", path, "--kernel", "parent", "--json")
    doc = json.loads(out)
    assert doc["mode"] == "relocatable" and "-rdc=true" in doc["note"]
