"""Triton kernels analysed without a GPU: ``ptxforge.frontends.triton.analyze`` and the cache.

Real ``triton.compile`` for a ``GPUTarget`` (no device), real ptxas; the peak's values must
name the kernel's own Python lines.  Skipped with a reason only when Triton is not installed.
"""

from __future__ import annotations

import inspect
import json
import warnings

import pytest

triton = pytest.importorskip("triton", reason="the triton extra is not installed "
                                              "(pip install ptxforge[triton])")

from ptxforge.frontends import triton as ptriton  # noqa: E402
from ptxforge.frontends import triton_cache  # noqa: E402
from ptxforge.reports.figures import kernel_figures  # noqa: E402

import triton_kernels as tk  # noqa: E402
from cli_util import run  # noqa: E402

MATMUL_TILE = {"BM": 128, "BN": 128, "BK": 32}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A fresh Triton cache directory for this module's compiles."""
    d = tmp_path_factory.mktemp("triton-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITON_CACHE_DIR", str(d))
        mp.setenv("TRITON_DEFAULT_FP_FUSION", "1")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield d


@pytest.fixture(scope="module")
def softmax(cache):
    return ptriton.analyze(tk.fused_softmax, tk.SOFTMAX_SIGNATURE, {"BLOCK": 1024},
                           num_warps=4, target="sm_80")


@pytest.fixture(scope="module")
def matmul(cache):
    return ptriton.analyze(tk.matmul, tk.MATMUL_SIGNATURE, MATMUL_TILE, num_warps=4,
                           target="sm_80")


def _lines(fn):
    """(file, first line, last line, source lines) of a @triton.jit function."""
    src, start = inspect.getsourcelines(fn.fn)
    return inspect.getsourcefile(fn.fn), start, start + len(src) - 1, src


def test_fused_softmax_peak_names_its_python_load_line(softmax):
    k = softmax.kernels[0]
    path, first, last, src = _lines(tk.fused_softmax)
    assert k.name == "fused_softmax" and k.block_size == 128  # 32 x num_warps
    assert k.stats is not None and k.stats.registers > 0
    groups = k.pressure.peak.by_source
    assert groups and all(g.file == path and first <= g.line <= last for g in groups)
    top = groups[0]
    assert "tl.load" in src[top.line - first]  # the loaded row stays live through max/exp
    assert top.units == max(g.units for g in groups)
    assert sum(g.units for g in groups) <= k.estimate.registers


def test_matmul_peak_is_the_accumulator_in_its_loop(matmul):
    k = matmul.kernels[0]
    path, first, last, src = _lines(tk.matmul)
    loop = next(i for i, t in enumerate(src) if t.strip().startswith("for ")) + first
    store = next(i for i, t in enumerate(src) if "tl.store" in t) + first
    # values Triton's PTX gives no line (.loc 1 0 0) form a group without a file
    groups = [g for g in k.pressure.peak.by_source if g.file is not None]
    assert groups and all(g.file == path and first <= g.line <= last for g in groups)
    tile = MATMUL_TILE["BM"] * MATMUL_TILE["BN"] // (32 * 4)  # fp32 accumulators per thread
    top = groups[0]
    assert loop <= top.line < store and top.units >= tile
    assert k.estimate.registers >= tile


def test_spills_are_spill_bytes_apart_from_stack_and_differ_from_n_spills(cache):
    res = ptriton.analyze(tk.matmul, tk.MATMUL_SIGNATURE, MATMUL_TILE, num_warps=4,
                          target="sm_80", options={"maxnreg": 64})
    s = res.kernels[0].stats
    assert s.registers <= 64 and s.spill_stores > 0 and s.spill_loads > 0
    n_spills = triton_cache.triton_n_spills(s.stack_frame)
    assert n_spills == s.stack_frame // 4 and n_spills * 4 != s.spill_stores
    note = next(n for n in res.notes if "n_spills" in n)
    assert f"spilled {s.spill_stores} bytes (stores) / {s.spill_loads} bytes (loads)" in note
    assert f"n_spills (local memory / 4) would say {n_spills}" in note and len(note) < 200
    f = kernel_figures(res, origin="triton")[0]
    from ptxforge.reports.check import Budget, check

    (finding,) = check([f], Budget(no_spills=True)).findings
    assert finding.status == "fail" and f"n_spills, its local memory / 4, would say " \
        f"{n_spills}" in finding.message
    assert (f.spill_stores, f.spill_loads, f.stack) == (s.spill_stores, s.spill_loads,
                                                        s.stack_frame)


def test_no_n_spills_note_when_nothing_spilled_and_no_stack(softmax):
    s = softmax.kernels[0].stats
    assert (s.spill_stores, s.spill_loads, s.stack_frame) == (0, 0, 0)
    assert not triton_cache.n_spills_differs(s)
    assert not any("n_spills" in n for n in softmax.notes)


def test_the_cache_gives_block_size_and_shared_memory_from_its_metadata(cache, softmax, matmul):
    entries = {e.name: e for e in triton_cache.scan(cache)}
    assert {"fused_softmax", "matmul"} <= set(entries)
    for name in ("fused_softmax", "matmul"):
        e = entries[name] if name == "fused_softmax" else next(
            x for x in triton_cache.scan(cache) if x.name == "matmul" and x.num_warps == 4)
        meta = json.loads(open(e.ptx_path[:-4] + ".json").read())
        res, text = triton_cache.analyze_entry(e)
        k = res.kernels[0]
        assert k.block_size == 32 * meta["num_warps"] == e.block_size
        assert k.dynamic_shared == meta["shared"]
        assert k.occupancy.shared_per_block >= meta["shared"]
    assert triton_cache.is_cache_dir(cache)


def test_check_reads_the_cache(capsys, cache, softmax, matmul):
    regs = softmax.kernels[0].stats.registers
    code, out, err = run(capsys, "check", "--triton-cache", cache, "--max-registers", regs,
                         "--json")
    data = json.loads(out)
    by = {(f["kernel"], f["rule"]): f for f in data["findings"]}
    assert by[("fused_softmax", "max-registers")]["status"] == "pass"
    assert by[("matmul", "max-registers")]["status"] == "fail" and code == 1
    kernels = {k["name"]: k for k in data["kernels"]}
    assert kernels["fused_softmax"]["block_size"] == 128
    assert kernels["fused_softmax"]["origin"] == "triton"
    assert kernels["matmul"]["source"]["file"].endswith("triton_kernels.py")
    # the cache as a plain FILE|DIR argument reads the same
    code2, out2, _ = run(capsys, "check", cache, "--max-registers", regs, "--json")
    assert code2 == code and json.loads(out2)["findings"] == data["findings"]


def test_analyze_cli_reads_block_and_shared_from_the_cache(capsys, cache, softmax):
    e = next(x for x in triton_cache.scan(cache) if x.name == "fused_softmax")
    code, out, _ = run(capsys, "analyze", e.ptx_path, "--json")
    k = json.loads(out)["kernels"][0]
    assert code == 0 and k["occupancy"]["block_size"] == e.block_size
    assert k["occupancy"]["dynamic_shared"] == e.shared > 0
    # the n_spills note only where Triton's n_spills (stack / 4) would differ from the spills
    differs = triton_cache.n_spills_differs(softmax.kernels[0].stats)
    assert any("n_spills" in n for n in json.loads(out)["notes"]) == differs
    code, out, _ = run(capsys, "analyze", cache)
    assert code == 0 and "== fused_softmax" in out and "== matmul" in out
    assert "triton_kernels.py:" in out


def test_signature_errors_name_the_arguments():
    from ptxforge.errors import PtxforgeError

    with pytest.raises(PtxforgeError, match="no type for argument 'n_cols'"):
        ptriton.normalize_signature(tk.fused_softmax, {"out_ptr": "*fp32", "in_ptr": "*fp32",
                                                       "in_stride": "i32", "out_stride": "i32"},
                                    {"BLOCK": 64})
    sig = ptriton.normalize_signature(tk.fused_softmax, "*fp32,*fp32,i32,i32,i32", {"BLOCK": 64})
    assert sig == {**tk.SOFTMAX_SIGNATURE, "BLOCK": "constexpr"}
    with pytest.raises(PtxforgeError, match="num_warps"):
        ptriton.compile_to_ptx(tk.fused_softmax, sig, {"BLOCK": 64}, num_warps=3)


def test_diff_of_two_triton_caches_shows_the_one_kernel_that_changed(capsys, tmp_path,
                                                                     monkeypatch):
    builds = {}
    for side, opts in (("old", None), ("new", {"maxnreg": 64})):
        monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / side))
        ptriton.compile_to_ptx(tk.fused_softmax, tk.SOFTMAX_SIGNATURE, {"BLOCK": 1024})
        ptriton.compile_to_ptx(tk.matmul, tk.MATMUL_SIGNATURE, MATMUL_TILE, options=opts)
        builds[side] = {e.name: e for e in triton_cache.scan(tmp_path / side)}
    code, out, err = run(capsys, "diff", tmp_path / "old", tmp_path / "new", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["kernels"] == 2 and data["changed"] == 1
    (row,) = data["rows"]
    assert row["kernel"] == "matmul" and row["new"]["registers"] <= 64
    assert row["deltas"]["registers"] < 0 and row["deltas"]["spill_stores"] > 0
    assert row["new"]["block_size"] == builds["new"]["matmul"].block_size == 128
