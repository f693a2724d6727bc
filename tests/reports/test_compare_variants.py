"""``ptxforge compare`` pairing differently named kernels of multi-kernel files (a monolithic
kernel against its split version), and its error when nothing pairs.  CUDA C++ compiled with
NVRTC here."""

from __future__ import annotations

import json

import pytest

from ptxforge.errors import PtxforgeError
from ptxforge.reports.analyze import analyze_ptx
from ptxforge.reports.variants import compare_variants
from ptxforge.toolchain.compile import CompileRequest

from cli_util import run
from corpus_util import compile_cu

MONO_CU = r"""
extern "C" __global__ void Gu(const double* q, double* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double h = q[i] - 2.0 * q[i + 1] + q[i + 2];
    double v = q[i] - 2.0 * q[i + n] + q[i + 2 * n];
    out[i] = h * h + v * v;
}
extern "C" __global__ void init(double* out) { out[threadIdx.x] = 0.0; }
"""

SPLIT_CU = r"""
extern "C" __global__ void u_horizontal(const double* q, double* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double h = q[i] - 2.0 * q[i + 1] + q[i + 2];
    out[i] = h * h;
}
extern "C" __global__ void u_vertical(const double* q, double* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = q[i] - 2.0 * q[i + n] + q[i + 2 * n];
    out[i] += v * v;
}
"""



@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("variants")
    mono, split = d / "mono.ptx", d / "split.ptx"
    mono.write_text(compile_cu(MONO_CU, "mono", "sm_80"))
    split.write_text(compile_cu(SPLIT_CU, "split", "sm_80"))
    return mono, split


def test_no_common_name_lists_both_sides_and_suggests_pairing(capsys, files):
    mono, split = files
    code, out, err = run(capsys, "compare", mono, split, "--no-compile")
    assert code == 1 and out == "" and len(err.splitlines()) == 1
    assert f"{mono} has Gu, init; {split} has u_horizontal, u_vertical" in err
    assert "--pair A=B" in err


@pytest.mark.parametrize("how", [["--pair", "Gu=u_horizontal"],
                                 ["--kernel-a", "Gu", "--kernel-b", "u_horizontal"]])
def test_pair_names_the_kernels_of_each_side(capsys, files, how):
    mono, split = files
    code, out, err = run(capsys, "compare", mono, split, *how, "--json")
    assert code == 0, err
    doc = json.loads(out)
    (pair,) = doc["kernels"]
    assert pair["name"] == "Gu / u_horizontal"
    assert (pair["a"]["name"], pair["b"]["name"]) == ("Gu", "u_horizontal")
    a = analyze_ptx(mono.read_text(), str(mono), kernel="Gu").kernel("Gu")
    b = analyze_ptx(split.read_text(), str(split), kernel="u_horizontal").kernel("u_horizontal")
    rows = {r["metric"]: r for r in pair["rows"]}
    assert (rows["registers (ptxas)"]["a"], rows["registers (ptxas)"]["b"]) == (
        a.stats.registers, b.stats.registers)
    assert (rows["instructions"]["a"], rows["instructions"]["b"]) == (
        a.mix.instructions, b.mix.instructions)
    assert rows["ld.global"]["a"] > rows["ld.global"]["b"]    # Gu loads both stencils
    code, out, err = run(capsys, "compare", mono, split, *how)
    assert "== Gu / u_horizontal ==" in out


def test_several_pairs_and_unknown_names(capsys, files):
    mono, split = files
    code, out, err = run(capsys, "compare", mono, split, "--pair", "Gu=u_horizontal",
                         "--pair", "Gu=u_vertical", "--no-compile", "--json")
    assert code == 0, err
    assert [p["name"] for p in json.loads(out)["kernels"]] == ["Gu / u_horizontal",
                                                               "Gu / u_vertical"]
    code, out, err = run(capsys, "compare", mono, split, "--pair", "Gu=nope", "--no-compile")
    assert code == 1 and f"no kernel named 'nope' in {split}" in err
    assert "u_horizontal, u_vertical" in err


@pytest.mark.parametrize("argv, needle", [
    (["--kernel-a", "Gu"], "--kernel-a and --kernel-b go together"),
    (["--pair", "Gu"], "expected KERNEL_A=KERNEL_B"),
    (["--pair", "Gu=u_horizontal", "--kernel", "Gu"], "--kernel selects by a common name"),
])
def test_pair_usage_errors(capsys, files, argv, needle):
    mono, split = files
    code, out, err = run(capsys, "compare", mono, split, *argv, "--no-compile")
    assert code == 2 and out == "" and needle in err and "usage:" in err


def test_library_pairs(files):
    mono, split = files
    a = analyze_ptx(mono.read_text(), "mono.ptx", compile=False)
    b = analyze_ptx(split.read_text(), "split.ptx", compile=False)
    res = compare_variants(a, b, pairs=[("Gu", "u_vertical")])
    assert [p.name for p in res.pairs] == ["Gu / u_vertical"]
    assert res.only_a == ("init",) and res.only_b == ("u_horizontal",)
    with pytest.raises(PtxforgeError, match="no kernel names in common"):
        compare_variants(a, b)


CALLS_CU = r"""
__device__ __noinline__ double helper(const double* q, int n) {
    double t[24];
    for (int j = 0; j < 24; ++j) t[j] = q[(j * 7) % n];
    double s = 0;
    for (int j = 0; j < n % 24; ++j) s += t[(j * 5) % 24];
    return s;
}
extern "C" __global__ void Gu(const double* q, double* out, int n) {
    out[threadIdx.x] = helper(q, n);
}
"""


def test_stack_row_is_the_call_graph_stack(files, tmp_path):
    """The side-by-side "stack" row is the stack the kernel launches with, callees
    included, not the kernel's own frame."""
    mono, _ = files
    calls = tmp_path / "calls.ptx"
    calls.write_text(compile_cu(CALLS_CU, "calls", "sm_80"))
    # relocatable and linked (nvJitLink): the helper keeps its own frame
    linked = CompileRequest(backend="nvjitlink")
    a = analyze_ptx(mono.read_text(), str(mono), kernel="Gu", request=linked)
    b = analyze_ptx(calls.read_text(), str(calls), kernel="Gu", request=linked)
    sb = b.kernel("Gu").stats
    assert sb.stack_frame > sb.body_stack_frame      # the helper's array is in its frame
    (pair,) = compare_variants(a, b).pairs
    row = pair.row("stack (bytes)")
    assert (row.a, row.b) == (a.kernel("Gu").stats.stack_frame, sb.stack_frame)
