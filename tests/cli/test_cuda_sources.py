"""``.cu`` input: ``analyze``, ``sass``, ``report`` and ``check`` (a folder of sources) compile
CUDA C++ with NVRTC (``-lineinfo``, the target's arch, the flags after ``--``), and their ptxas
figures equal those of ``nvcc -cubin -Xptxas -v`` with the same flags, run here as a separate
process (the nvcc of the ``nvidia-cuda-nvcc`` wheel).  NVRTC's refusals are one line per
diagnostic.
"""

from __future__ import annotations

import json
import re

import pytest
from nvcc_util import nvcc_stats

from cli_util import run
from corpus_util import CORPUS_DIR, stable_folder

# TILE sets how many values each thread keeps live: its registers follow the define
TILED = """
#ifndef TILE
#define TILE 4
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
        acc += v[k] * v[TILE - 1 - k];
    out[i] = acc;
}
"""


def _figures(k: dict) -> dict:
    p = k["ptxas"]
    return {"registers": p["registers"], "spill_stores": p["spill_stores"],
            "spill_loads": p["spill_loads"], "stack": p.get("stack", p.get("stack_frame"))}


@pytest.fixture(scope="module")
def sources():
    # a folder named by its content, the same in every run: NVRTC's, ptxas's and nvcc's runs
    # on these sources are the tool memo's to answer (a new tmp folder is a new input to each)
    return stable_folder({"tiled.cu": TILED,
                          "pressure.cu": (CORPUS_DIR / "pressure.cu").read_text(),
                          "templates.cu": (CORPUS_DIR / "templates.cu").read_text()})


@pytest.mark.parametrize("flags", [(), ("-DTILE=32",)])
def test_analyze_cu_figures_equal_nvcc(capsys, sources, flags):
    path = sources / "tiled.cu"
    code, out, err = run(capsys, "analyze", path, "--json", "--", *flags)
    assert code == 0, err
    (k,) = json.loads(out)["kernels"]
    want = nvcc_stats(path, flags=flags)[k["name"]]
    assert _figures(k) == {f: want[f] for f in ("registers", "spill_stores", "spill_loads",
                                                  "stack")}


def test_the_define_reaches_the_compile(capsys, sources):
    small = run(capsys, "analyze", sources / "tiled.cu", "--json", "--", "-DTILE=2")
    large = run(capsys, "analyze", sources / "tiled.cu", "--json", "--", "-DTILE=32")
    r2, r32 = (json.loads(x[1])["kernels"][0]["ptxas"]["registers"] for x in (small, large))
    assert r32 > r2


def test_analyze_cu_for_another_arch_and_its_lines(capsys, sources):
    path = sources / "pressure.cu"
    code, out, err = run(capsys, "analyze", path, "--arch", "sm_86", "--json")
    assert code == 0, err
    doc = json.loads(out)
    want = nvcc_stats(path, "sm_86")
    for k in doc["kernels"]:
        assert _figures(k) == {f: want[k["name"]][f] for f in _figures(k)}
    # -lineinfo: the values live at the peak come from the .cu lines
    live = next(k for k in doc["kernels"] if k["name"] == "live_window")
    loads = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "// LOADS" in t)
    top = live["estimate"]["by_source"][0]
    assert top["file"] == str(path) and top["line"] == loads


def test_sass_cu_regcount_equals_nvcc(capsys, sources):
    path = sources / "tiled.cu"
    code, out, err = run(capsys, "sass", path, "--json", "--", "-DTILE=16")
    assert code == 0, err
    (k,) = json.loads(out)["kernels"]
    assert k["ptxas"]["registers"] == nvcc_stats(path, flags=("-DTILE=16",))[k["name"]][
        "registers"]


def test_report_cu_shows_nvcc_figures_and_source_lines(capsys, sources, tmp_path):
    path = sources / "pressure.cu"
    page = tmp_path / "r.html"
    code, _, err = run(capsys, "report", path, "-o", page)
    assert code == 0 and f"wrote {page}" in err
    html = page.read_text()
    want = nvcc_stats(path)
    for name, s in want.items():
        m = re.search(rf'>{name}</a></td><td>\d+</td><td>\d+</td><td data-sort="(\d+)">\d+</td>'
                      rf'<td data-sort="(\d+)">', html)
        assert m, name
        assert (int(m.group(1)), int(m.group(2))) == (s["registers"],
                                                      s["spill_stores"] + s["spill_loads"])
    assert "v[k] = in[i + k * stride]; // LOADS" in html.replace("&amp;", "&")


def test_check_folder_of_cu_equals_nvcc(capsys, sources):
    code, out, err = run(capsys, "check", sources, "--max-registers", 255, "--json", "--",
                         "-DTILE=8")
    assert code == 0, err
    doc = json.loads(out)
    want = {}
    for src in sorted(sources.glob("*.cu")):
        want.update(nvcc_stats(src, flags=("-DTILE=8",)))
    got = {k["name"]: k for k in doc["kernels"]}
    assert set(got) == set(want)
    for name, k in got.items():
        assert (k["registers"], k["spill_stores"], k["spill_loads"], k["stack"]) == (
            want[name]["registers"], want[name]["spill_stores"], want[name]["spill_loads"],
            want[name]["stack"])


def test_nvrtc_errors_are_one_line_per_diagnostic(capsys, tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(float* x)\n{\n    x[0] = TILE + WIDTH;\n}\n")
    code, out, err = run(capsys, "analyze", bad)
    lines = err.strip().splitlines()
    assert code == 1 and out == "" and "Traceback" not in err
    assert lines[0] == f"ptxforge: error: NVRTC could not compile {bad} for sm_80:"
    assert lines[1:] == [f'{bad}:3: error: identifier "TILE" is undefined',
                         f'{bad}:3: error: identifier "WIDTH" is undefined']
    code, _, err = run(capsys, "analyze", bad, "--", "-DTILE=1", "--no-such-flag")
    assert code == 1 and "--no-such-flag" in err and len(err.strip().splitlines()) == 2
    code, _, err = run(capsys, "occupancy", "--regs", 32, "--", "-DTILE=1")
    assert code == 2 and "reads no .cu" in err
