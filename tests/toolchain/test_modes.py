"""Ground truth: ptxforge's default figures are whole-program ptxas's, its relocatable ones
``ptxas -c``'s, each checked against the ptxas executable run as a separate process and read
by a parser of the tests' own (:func:`corpus_util.ptxas_stats`), for every kernel of the CUDA
C++ corpus and the DSL's ready-made kernels."""

from __future__ import annotations

import re
import subprocess

import pytest

from ptxforge import compile_ptx
from ptxforge.dsl import kernels as dsl_kernels
from ptxforge.ptx.emit import emit
from ptxforge.toolchain.backends import PtxasBackend
from ptxforge.toolchain.modes import helper_kind, mode_difference

from compile_sources import nvrtc
from corpus_util import corpus_ptx, corpus_sources, ptxas_stats

PTXAS = PtxasBackend().for_target("sm_80")
pytestmark = pytest.mark.skipif(PTXAS is None, reason="no ptxas executable accepts sm_80")


def _ptxas_v(ptx: str, tmp_path, *flags: str) -> dict:
    """{kernel: figures} from ``ptxas -arch=sm_80 -v FLAGS`` run as its own process."""
    src, out = tmp_path / "k.ptx", tmp_path / "k.cubin"
    src.write_text(ptx)
    proc = subprocess.run([PTXAS.path, "-arch=sm_80", "-v", *flags, str(src), "-o", str(out)],
                          capture_output=True, text=True, check=True)
    return ptxas_stats(proc.stdout + proc.stderr)


def _dsl_modules() -> dict:
    return {"saxpy": dsl_kernels.saxpy(), "block_reduce_sum": dsl_kernels.block_reduce_sum(),
            "modadd256": dsl_kernels.modadd256(), "sgemm_tiled": dsl_kernels.sgemm_tiled()}


def _sources() -> list:
    return [pytest.param(("cu", name), id=f"cu-{name}") for name in corpus_sources()] + \
        [pytest.param(("dsl", name), id=f"dsl-{name}") for name in _dsl_modules()]


def _ptx(which) -> str:
    kind, name = which
    if kind == "cu":
        return corpus_ptx(name, "sm_80")
    return emit(_dsl_modules()[name])


@pytest.mark.parametrize("which", _sources())
def test_default_figures_are_whole_program_ptxas(which, tmp_path):
    ptx = _ptx(which)
    truth = _ptxas_v(ptx, tmp_path)
    c = compile_ptx(ptx, "sm_80")
    assert (c.mode, c.backend) == ("whole-program", "ptxas")
    assert c.kernels, "no kernel compiled"
    for k in c.kernels:
        t = truth[k.name]
        assert (k.registers, k.spill_stores, k.spill_loads) == \
            (t["registers"], t["spill_stores"], t["spill_loads"]), k.name


@pytest.mark.parametrize("which", _sources())
def test_relocatable_figures_are_ptxas_dash_c(which, tmp_path):
    ptx = _ptx(which)
    truth = _ptxas_v(ptx, tmp_path, "-c")
    c = compile_ptx(ptx, "sm_80", relocatable=True)
    linked = compile_ptx(ptx, "sm_80", backend="nvjitlink")
    assert c.mode == linked.mode == "relocatable"
    for k in c.kernels:
        t = truth[k.name]
        # the kernel's own body: ptxas -c's 'Used N'; what it launches with after the device
        # link (the most over its call graph) is what nvJitLink's linker records
        assert (k.body_registers, k.body_spill_stores, k.body_spill_loads) == \
            (t["registers"], t["spill_stores"], t["spill_loads"]), k.name
        assert k.registers == linked[k.name].registers, k.name


def test_the_modes_disagree_where_helpers_become_calls(tmp_path):
    # warp shuffles: relocatable, each is a call to __cuda_sm70_shflsync_* (the ABI lifts the
    # count); whole-program ptxas inlines the helper
    ptx = corpus_ptx("warp", "sm_80")
    whole, reloc = compile_ptx(ptx, "sm_80"), compile_ptx(ptx, "sm_80", relocatable=True)
    diff = mode_difference(reloc, whole)
    assert diff, "no kernel of warp.cu differs between the modes"
    for name, (r, w, added) in diff.items():
        assert (r, w) == (reloc[name].registers, whole[name].registers) and r != w
    helpers = {c for (_, _, added) in diff.values() for c in added}
    assert any(c.startswith("__cuda_sm70_shflsync") for c in helpers)
    assert all(helper_kind(c) == "ptxas helper" for c in helpers if c.startswith("__cuda"))
    # and the whole-program build calls none of them
    assert not any(c.startswith("__cuda_sm70") for k in whole.kernels for c in k.callees)


def test_compile_prunes_to_the_entries_asked_for(tmp_path):
    ptx = corpus_ptx("gemm", "sm_80")
    every = compile_ptx(ptx, "sm_80")
    one = compile_ptx(ptx, "sm_80", entries=("sgemm_4x4",))
    assert [k.name for k in one.kernels] == ["sgemm_4x4"] and len(every.kernels) > 1
    assert one["sgemm_4x4"].registers == every["sgemm_4x4"].registers
    # the cubin holds code for the one kernel only (ptxas -e)
    assert [k.name for k in one.cubin_info().kernels] == ["sgemm_4x4"]
    with pytest.raises(Exception, match="names no kernel of the PTX"):
        compile_ptx(ptx, "sm_80", entries=("nope",))


def test_explicit_ptxas_path_and_env_are_honoured(tmp_path, monkeypatch, capsys):
    from ptxforge.cli import main

    path = tmp_path / "k.ptx"
    path.write_text(corpus_ptx("reduce", "sm_80"))
    assert main(["analyze", str(path), "--json", "--ptxas", PTXAS.path]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert doc["tool"] == f"ptxas {doc['tool_version']} ({PTXAS.path})"
    assert (doc["backend"], doc["mode"]) == ("ptxas", "whole-program")
    assert re.fullmatch(r"\d+\.\d+", doc["tool_version"])
    monkeypatch.setenv("PTXFORGE_PTXAS", PTXAS.path)
    assert main(["analyze", str(path), "--json", "--relocatable"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mode"] == "relocatable" and PTXAS.path in doc["tool"]
    # a path that is no ptxas is a usage error naming it, never a traceback
    assert main(["analyze", str(path), "--ptxas", str(tmp_path / "nope")]) == 2
    assert "--ptxas" in capsys.readouterr().err
    assert main(["analyze", str(path), "--ptxas", PTXAS.path, "--backend", "nvjitlink"]) == 2
    assert "cannot go with --backend nvjitlink" in capsys.readouterr().err


def test_nvjitlink_backend_says_its_figures_are_relocatable(tmp_path, capsys):
    from ptxforge.cli import main

    path = tmp_path / "k.ptx"
    path.write_text(nvrtc("__global__ void k(float *a) { a[threadIdx.x] *= 2.f; }", "k"))
    assert main(["analyze", str(path), "--backend", "nvjitlink"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "ptxas via nvjitlink (nvJitLink 13." in out and "), relocatable" in out


EXTERN_CALL = """
extern __device__ float scale_elsewhere(float x, int k);   // defined in another translation unit
__global__ void calls_out(float* out, const float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = scale_elsewhere(in[i], i & 7) + in[(i + 1) % n];
}
"""


def test_an_rdc_build_calling_another_unit_compiles_relocatable(tmp_path):
    """``nvcc -rdc=true`` PTX that calls a function of another translation unit
    (``.extern .func``) is valid PTX whole-program ptxas cannot link ('Unresolved extern
    function'): the default compile gives the figures of the build it comes from (ptxas -c)
    and says why, instead of failing."""
    from corpus_util import compile_cu

    ptx = compile_cu(EXTERN_CALL, "extern_call", "sm_80", options=("-rdc=true",))
    assert re.search(r"\.extern \.func .*scale_elsewhere", ptx)
    truth = _ptxas_v(ptx, tmp_path, "-c")
    c = compile_ptx(ptx, "sm_80")
    assert c.mode == "relocatable" and c.backend == "ptxas"
    assert "scale_elsewhere" in c.note and "ptxas -c" in c.note
    k = c["_Z9calls_outPfPKfi"]
    t = truth[k.name]
    assert (k.registers, k.stack_frame) == (t["registers"], t["stack"])
    assert "scale_elsewhere(float, int)" in c.note
