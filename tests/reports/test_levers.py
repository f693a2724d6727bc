"""The lever of a recommended register cap, applied as the user would (the CUDA source edited
and recompiled with NVRTC, Triton recompiled with ``maxnreg``, the DSL kernel rebuilt with
``kb.maxnreg``), gives the registers, spills and blocks per SM the recommendation promised."""

from __future__ import annotations

import pytest
from tests.support.corpus_util import CORPUS_DIR, compile_cu

from ptxforge.arch.occupancy import KernelLimits, occupancy
from ptxforge.arch.spec import LaunchSpec
from ptxforge.ptx.directives import ptx_entries, with_directives
from ptxforge.reports.levers import detect_frontend, levers_for
from ptxforge.reports.occupancy_sweep import proven_recommendation as prove_recommendation
from ptxforge.toolchain.compile import compile_ptx
from ptxforge.toolchain.sweep import sweep

GEMM = (CORPUS_DIR / "gemm.cu").read_text()


def _figures(ptx: str, kernel: str, block: int, target: str = "sm_80", **opts) -> tuple:
    """(registers, spill bytes, blocks per SM) of ``kernel`` compiled from ``ptx``."""
    k = compile_ptx(ptx, target, entries=(kernel,), **opts)[kernel]
    entry = next(e for e in ptx_entries(ptx) if e.name == kernel)
    occ = occupancy(k.registers, block, target, shared=k.shared,
                    kernel_limits=KernelLimits(max_threads=k.max_threads_per_block,
                                               required_threads=entry.threads
                                               if entry.reqntid else None))
    return k.registers, k.spill_stores + k.spill_loads, occ.active_blocks


def _first_spilling_budget(s) -> int:
    """The least spill bytes of a row that gains blocks over the uncapped compile."""
    base = s.rows[0].blocks_per_sm
    return min(r.spill_stores + r.spill_loads for r in s.rows
               if r.ok and r.blocks_per_sm > base and r.spill_stores + r.spill_loads > 0)


def _promise(rec) -> tuple:
    p = rec.promise
    return p.registers, p.spill, p.blocks_per_sm


def _delivers(got: tuple, rec) -> bool:
    """The promised registers and blocks per SM exactly, spills at most the promised ones:
    NVVM reads __launch_bounds__ and __maxnreg__ too (measured with NVRTC 13.5 on sgemm_8x8:
    __launch_bounds__(64, 10) gives 96 registers and no spills where the same .minnctapersm
    written into the PTX gives 96 and 92 spill bytes)."""
    want = _promise(rec)
    return got[0] == want[0] and got[2] == want[2] and got[1] <= want[1]


def test_launch_bounds_kernel_gets_launch_bounds_or_maxnreg_not_maxrregcount():
    ptx = compile_cu(GEMM, "gemm", "sm_80")
    assert detect_frontend(ptx) == "cuda"
    s = sweep(ptx, "sgemm_8x8", LaunchSpec(target="sm_80", block=64))
    rec = prove_recommendation(s, ptx, _first_spilling_budget(s))
    cap = rec.choice.cap
    kinds = [p.lever.kind for p in rec.holding]
    assert kinds[0] == "__launch_bounds__" and "-maxrregcount" not in kinds
    assert rec.promise.blocks_per_sm > s.rows[0].blocks_per_sm
    # the user's edit: __launch_bounds__(64, k), recompiled with NVRTC
    lb = rec.holding[0].lever
    edited = compile_cu(GEMM.replace("__launch_bounds__(64)", lb.text), "gemm", "sm_80")
    assert _delivers(_figures(edited, "sgemm_8x8", 64), rec)
    # or __maxnreg__(cap) in place of the launch bounds
    mx = next(p.lever for p in rec.holding if p.lever.kind == "__maxnreg__")
    assert mx.text.startswith(f"__maxnreg__({cap}) in place of")
    edited = compile_cu(GEMM.replace("__launch_bounds__(64)", f"__maxnreg__({cap})"),
                        "gemm", "sm_80")
    assert _delivers(_figures(edited, "sgemm_8x8", 64), rec)
    # why not -maxrregcount: ptxas ignores it here, the count stays the uncapped one
    assert _figures(ptx, "sgemm_8x8", 64, max_registers=cap)[0] == s.rows[0].registers


def test_kernel_without_launch_bounds_gets_maxrregcount():
    ptx = compile_cu(GEMM, "gemm", "sm_80")
    s = sweep(ptx, "sgemm_4x4", LaunchSpec(target="sm_80", block=256))
    rec = prove_recommendation(s, ptx, 0)
    cap = rec.choice.cap
    assert cap is not None and rec.promise.spill == 0
    assert rec.promise.blocks_per_sm > s.rows[0].blocks_per_sm
    assert rec.holding[0].lever.text == f"-maxrregcount={cap}"
    assert _figures(ptx, "sgemm_4x4", 256, max_registers=cap) == _promise(rec)
    edited = compile_cu(GEMM.replace('extern "C" __global__ void sgemm_4x4',
                                     f'extern "C" __global__ void __maxnreg__({cap}) sgemm_4x4'),
                        "gemm", "sm_80")
    assert _figures(edited, "sgemm_4x4", 256) == _promise(rec)


def test_triton_kernel_gets_maxnreg():
    ptriton = pytest.importorskip("ptxforge.frontends.triton")
    from tests.support import triton_kernels as tk

    tile = {"BM": 64, "BN": 64, "BK": 32}
    ptx, _ = ptriton.compile_to_ptx(tk.matmul, tk.MATMUL_SIGNATURE, tile, target="sm_80")
    assert detect_frontend(ptx) == "triton"
    s = sweep(ptx, "matmul", LaunchSpec(target="sm_80", block=128))
    rec = prove_recommendation(s, ptx, _first_spilling_budget(s))
    lever = rec.holding[0].lever
    assert lever.kind == "triton maxnreg"
    again, _ = ptriton.compile_to_ptx(tk.matmul, tk.MATMUL_SIGNATURE, tile, target="sm_80",
                                      options={"maxnreg": rec.choice.cap})
    assert _figures(again, "matmul", 128) == _promise(rec)


def test_triton_num_warps_lever_recompiles_for_each_warp_count():
    """num_warps changes the code Triton generates: each W is recompiled (triton.compile for a
    GPUTarget, no GPU) and its figures stand beside the promise of 32 x W threads at the
    present registers; the test recompiles W itself and reads the same figures."""
    ptriton = pytest.importorskip("ptxforge.frontends.triton")
    from tests.support import triton_kernels as tk

    tile = {"BM": 64, "BN": 64, "BK": 32}
    now, proven = ptriton.num_warps_levers(tk.matmul, tk.MATMUL_SIGNATURE, tile,
                                           num_warps=4, target="sm_80", choices=(2, 4, 8))
    assert [p.lever.value for p in proven] in ([(2,), (8,)], [(8,), (2,)])
    assert all(p.lever.kind == "triton num_warps" for p in proven)
    occs = [p.outcome.occupancy for p in proven]
    assert occs == sorted(occs, reverse=True)
    for p in proven:
        (w,) = p.lever.value
        ptx, meta = ptriton.compile_to_ptx(tk.matmul, tk.MATMUL_SIGNATURE, tile, num_warps=w,
                                           target="sm_80")
        k = compile_ptx(ptx, "sm_80")["matmul"]
        dyn = int(meta["shared"])
        occ = occupancy(k.registers, 32 * w, "sm_80", shared=k.shared, dynamic_shared=dyn,
                        kernel_limits=KernelLimits(max_threads=k.max_threads_per_block,
                                                   required_threads=32 * w))
        assert (p.outcome.registers, p.outcome.spill, p.outcome.blocks_per_sm) == \
            (k.registers, k.spill_stores + k.spill_loads, occ.active_blocks)
        promised = occupancy(now.registers, 32 * w, "sm_80", dynamic_shared=dyn)
        assert p.promise.registers == now.registers
        assert p.promise.blocks_per_sm == promised.active_blocks
        assert p.holds == (p.outcome.spill <= now.spill
                           and p.outcome.occupancy >= promised.occupancy - 1e-9)
        assert p.to_dict()["promise"]["blocks_per_sm"] == promised.active_blocks
        assert f"num_warps={w}" in p.text() and "promised: " in p.text()


def _dsl_kernel(maxnreg=None):
    from ptxforge.dsl.builder import KernelBuilder
    from ptxforge.ptx import types as T

    kb = KernelBuilder("wide", target="sm_80")
    x = kb.param_ptr("x", T.f32)
    out = kb.param_ptr("out", T.f32)
    if maxnreg is not None:
        kb.maxnreg(maxnreg)
    i = kb.global_id()
    base = kb.load_param(x)
    vals = [kb.ld(kb.elem_ptr(base, kb.add(i, 4096 * j))) for j in range(96)]
    acc = kb.mul(vals[0], vals[-1])
    for j in range(1, 48):
        acc = kb.fma(vals[j], vals[-1 - j], acc)
    kb.st(kb.elem_ptr(kb.load_param(out), i), acc)
    kb.ret()
    return kb.build()


def test_dsl_kernel_gets_kb_maxnreg():
    from ptxforge.ptx.emit import emit

    ptx = emit(_dsl_kernel())
    assert detect_frontend(ptx) == "dsl"
    s = sweep(ptx, "wide", LaunchSpec(target="sm_80", block=256))
    rec = prove_recommendation(s, ptx, 0)
    assert rec.choice.cap is not None and rec.promise.blocks_per_sm > s.rows[0].blocks_per_sm
    lever = rec.holding[0].lever
    assert lever.text == f"kb.maxnreg({rec.choice.cap})"
    rebuilt = emit(_dsl_kernel(maxnreg=rec.choice.cap))
    assert _figures(rebuilt, "wide", 256) == _promise(rec)


def test_levers_follow_the_kernel_and_the_front_end():
    bounded, = ptx_entries(".entry k()\n.maxntid 64\n{\nret;\n}")
    plain, = ptx_entries(".entry k()\n{\nret;\n}")
    req, = ptx_entries(".entry k()\n.reqntid 128\n{\nret;\n}")
    assert [lv.kind for lv in levers_for(bounded, "cuda", 96, 64, "sm_80")] == \
        ["__launch_bounds__", "__maxnreg__"]
    assert [lv.kind for lv in levers_for(plain, "cuda", 64, 256, "sm_80")] == \
        ["-maxrregcount", "__maxnreg__", "__launch_bounds__"]
    assert [lv.kind for lv in levers_for(req, "triton", 64, 128, "sm_80")] == ["triton maxnreg"]
    assert [lv.kind for lv in levers_for(bounded, "ptx", 96, 64, "sm_80")] == \
        [".minnctapersm", ".maxnreg"]
    assert all(lv.kind != "-maxrregcount" for fe in ("cuda", "ptx", "numba", "dsl")
               for lv in levers_for(bounded, fe, 96, 64, "sm_80"))
    own, = ptx_entries(".entry k()\n.maxnreg 32\n{\nret;\n}")
    assert [lv.text for lv in levers_for(own, "cuda", 48, 256, "sm_80")] == \
        ["__maxnreg__(48) in place of __maxnreg__(32)"]


def test_with_directives_replaces_and_removes():
    src = ".entry k()\n.maxntid 64, 1, 1\n.minnctapersm 2\n{\nret;\n}"
    out = with_directives(src, "k", {"maxntid": None, "minnctapersm": None, "maxnreg": 80})
    e, = ptx_entries(out)
    assert (e.maxntid, e.minnctapersm, e.maxnreg) == (None, None, 80)
    e, = ptx_entries(with_directives(src, "k", {"minnctapersm": 10}))
    assert (e.maxntid, e.minnctapersm) == ((64, 1, 1), 10)


def test_sweep_text_and_json_name_the_lever_not_maxrregcount(capsys, tmp_path):
    from tests.support.cli_util import run, run_json

    path = tmp_path / "gemm.ptx"
    path.write_text(compile_cu(GEMM, "gemm", "sm_80"))
    s = sweep(path.read_text(), "sgemm_8x8", LaunchSpec(target="sm_80", block=64))
    budget = _first_spilling_budget(s)
    code, out, err = run(capsys, "sweep", path, "--kernel", "sgemm_8x8", "--spill-budget",
                         budget)
    assert code == 0, err
    tail = out[out.index(f"with up to {budget} spill bytes"):]
    assert "change: __launch_bounds__(64, " in tail and "holds" in tail
    assert "-maxrregcount=" not in tail
    sw = run_json(capsys, "sweep", path, "--kernel", "sgemm_8x8", "--spill-budget",
                  budget)["kernels"][0]["sweep"]
    rec = sw["recommended_with_spills"]
    assert rec["lever"]["kind"] == "__launch_bounds__" and rec["lever"]["holds"]
    assert rec["lever"]["compiled"]["registers"] == rec["registers"] == rec["promise"]["registers"]
    assert rec["lever"]["compiled"]["blocks_per_sm"] == rec["blocks_per_sm"]
