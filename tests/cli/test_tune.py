"""``ptxforge tune k.cu -D TILE=4,8,16``: one NVRTC build per combination of defines, each
kernel's ptxas figures side by side, equal to ``nvcc -cubin -Xptxas -v -DTILE=…`` per value.
"""

from __future__ import annotations

import json

import pytest
from nvcc_util import nvcc_stats

from cli_util import run
from corpus_util import stable_source

SOURCE = """
#ifndef SCALE
#define SCALE 1
#endif
__global__ void tiled(const float* __restrict__ in, float* __restrict__ out, int stride)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[TILE];
#pragma unroll
    for (int k = 0; k < TILE; ++k)
        v[k] = in[i + k * stride];
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < TILE; ++k)
        acc += v[k] * v[TILE - 1 - k] * SCALE;
    out[i] = acc;
}
"""


@pytest.fixture(scope="module")
def source():
    # the same path in every run: NVRTC's, ptxas's and nvcc's runs are the tool memo's
    return stable_source(SOURCE, "tiled.cu")


def test_tune_builds_each_value_as_nvcc_does(capsys, source):
    code, out, err = run(capsys, "tune", source, "-D", "TILE=4,8,16", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert [r["defines"] for r in doc["rows"]] == [{"TILE": v} for v in ("4", "8", "16")]
    for r in doc["rows"]:
        want = nvcc_stats(source, flags=(f"-DTILE={r['defines']['TILE']}",))[r["name"]]
        assert (r["registers"], r["spill_stores"], r["spill_loads"], r["stack"]) == (
            want["registers"], want["spill_stores"], want["spill_loads"], want["stack"])
    regs = [r["registers"] for r in doc["rows"]]
    assert regs == sorted(regs) and regs[0] < regs[-1]


def test_tune_takes_the_product_and_flags_after_dashes(capsys, source):
    code, out, err = run(capsys, "tune", source, "-D", "TILE=4,8", "-D", "SCALE=1,3", "--json",
                         "--", "-DUNUSED=1")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert [(r["defines"]["TILE"], r["defines"]["SCALE"]) for r in rows] == [
        ("4", "1"), ("4", "3"), ("8", "1"), ("8", "3")]
    code, text, _ = run(capsys, "tune", source, "-D", "TILE=4,8", "-D", "SCALE=1,3")
    lines = text.splitlines()
    assert code == 0 and "4 kernel builds over TILE, SCALE for sm_80" in lines[0]
    table = lines[lines.index("== tiled ==") + 1:]
    assert table[0].split()[:3] == ["TILE", "SCALE", "registers"] and len(table) == 5
    for line, r in zip(table[1:], rows):
        assert line.split()[:3] == [r["defines"]["TILE"], r["defines"]["SCALE"],
                                    str(r["registers"])]


def test_tune_refuses_what_it_cannot_build(capsys, source, tmp_path):
    code, _, err = run(capsys, "tune", source, "-D", "9TILE=4")
    assert code == 2 and "macro name" in err
    code, _, err = run(capsys, "tune", source, "-D", "SCALE=2")   # TILE undefined
    assert code == 1 and 'identifier "TILE" is undefined' in err
    ptx = tmp_path / "k.ptx"
    ptx.write_text(".version 8.0\n.target sm_80\n")
    code, _, err = run(capsys, "tune", ptx, "-D", "TILE=4")
    assert code == 1 and "(.cu)" in err
