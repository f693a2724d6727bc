"""The interpreter's profile (ptxforge.launch.profile_kernel) on CUDA C++ kernels whose memory
behaviour is known by construction (tests/support/memory_kernels.py, NVRTC with -lineinfo):
sectors per request of coalesced, strided, broadcast and transposed accesses, shared-memory
wavefronts of a tile with and without padding and of 8-byte accesses, branch efficiency of a
divergent branch, the instruction counts, and the observer costing nothing when off."""

from __future__ import annotations

import numpy as np
import pytest

from ptxforge.emulator.profile import NSIGHT, sectors, shared_wavefronts
from ptxforge.errors import LaunchError
from ptxforge.launch.loader import load
from ptxforge.launch.profile import profile_and_races, profile_kernel

from memory_kernels import line_of, memory_ptx


@pytest.fixture(scope="module")
def mod():
    return load(memory_ptx(), device="emulator")


def _rows(prof, marker, space=None):
    line = line_of(marker)
    return [r for r in prof.instructions
            if r.line == line and r.executed and (space is None or r.space == space)]


def _one(prof, marker, opcode_start):
    rows = [r for r in _rows(prof, marker) if r.opcode.startswith(opcode_start)]
    assert len(rows) == 1, [r.opcode for r in _rows(prof, marker)]
    return rows[0]


N = 64


def _transpose(mod, name):
    a = np.arange(N * N, dtype=np.float32)
    out = np.zeros_like(a)
    prof = profile_kernel(mod[name], a, out, N, grid=(2, 2), block=(32, 32))
    assert out.reshape(N, N).tolist() == a.reshape(N, N).T.tolist()   # it still computes
    return prof


def test_naive_transpose_stores_touch_32_sectors_per_request(mod):
    prof = _transpose(mod, "transpose_naive")
    load, store = _one(prof, "naive", "ld.global"), _one(prof, "naive", "st.global")
    warps = (N * N) // 32
    assert (load.executed, load.requests, load.sectors) == (warps, warps, 4 * warps)
    assert (load.direction, load.width, store.direction, store.width) == ("ld", 4, "st", 4)
    assert load.sectors_per_request == 4.0
    assert (store.requests, store.sectors, store.sectors_per_request) == (warps, 32 * warps, 32.0)
    assert store.index is not None and prof.instructions[store.index].opcode == store.opcode
    m = prof.metrics()
    assert m["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] == 32 * warps
    assert m["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == warps


@pytest.mark.parametrize("name, store, load, ways", [
    ("transpose_tile", "tile_store", "tile_load", 32),
    ("transpose_padded", "padded_store", "padded_load", 1),
])
def test_shared_tile_conflicts_without_and_with_padding(mod, name, store, load, ways):
    prof = _transpose(mod, name)
    warps = (N * N) // 32
    st, ld = _one(prof, store, "st.shared"), _one(prof, load, "ld.shared")
    assert (st.requests, st.wavefronts, st.ways, st.bank_conflicts) == (warps, warps, 1, 0)
    assert (ld.requests, ld.ways, ld.wavefronts_per_request) == (warps, ways, float(ways))
    assert ld.bank_conflicts == (ways - 1) * warps
    m = prof.metrics()
    assert m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == (ways - 1) * warps
    assert m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == ways * warps
    # the global side of both tiled versions is coalesced both ways
    assert [r.sectors_per_request for r in prof.instructions if r.space == "global"] == [4.0, 4.0]


@pytest.mark.parametrize("name, per_request", [("copy", 4.0), ("strided", 8.0)])
def test_coalesced_and_stride_2_loads(mod, name, per_request):
    x = np.arange(1024, dtype=np.float32)
    y = np.zeros(512, np.float32)
    prof = profile_kernel(mod[name], x, y, grid=2, block=256)
    load = _one(prof, name, "ld.global")
    assert (load.requests, load.sectors_per_request) == (16, per_request)
    assert _one(prof, name, "st.global").sectors_per_request == 4.0
    assert y.tolist() == (x[:512] if name == "copy" else x[::2]).tolist()


def test_broadcast_is_one_sector_and_one_wavefront(mod):
    x = np.arange(512, dtype=np.float32)
    y = np.zeros(512, np.float32)
    prof = profile_kernel(mod["broadcast"], x, y, grid=2, block=256)
    rows = _rows(prof, "broadcast")
    g = [r for r in rows if r.opcode.startswith("ld.global")]
    s = [r for r in rows if r.opcode.startswith("ld.shared")]
    assert [(r.requests, r.sectors) for r in g] == [(16, 16)]         # in[0]: one sector
    assert [(r.requests, r.wavefronts, r.ways) for r in s] == [(16, 16, 1)]   # s[0]: broadcast
    assert y.tolist() == [x[0] + x[0]] * 512


def test_eight_byte_shared_accesses_take_two_phases(mod):
    d = np.arange(64, dtype=np.float64)
    out = np.zeros(64)
    prof = profile_kernel(mod["doubles"], d, out, grid=1, block=64)
    st = _one(prof, "double_store", "st.shared")
    assert (st.requests, st.wavefronts, st.ways, st.bank_conflicts) == (2, 4, 1, 0)
    assert (st.direction, st.width) == ("st", 8)
    ld = _one(prof, "double_stride2", "ld.shared")  # d[2t]: 16 threads cover the banks twice
    assert (ld.requests, ld.wavefronts, ld.ways, ld.bank_conflicts) == (2, 8, 2, 4)
    assert out.tolist() == [float(2 * t) if 2 * t < 64 else 2 * t - 64 + 1.0 for t in range(64)]


def test_branch_divergence_and_active_threads(mod):
    x = np.arange(512, dtype=np.float32)
    y = np.zeros(512, np.float32)
    prof = profile_kernel(mod["diverge"], x, y, 5, grid=2, block=256)
    warps = 16
    at_if = [r for r in _rows(prof, "diverge") if r.family == "bra"]
    assert [(r.branches, r.divergent_branches) for r in at_if] == [(warps, warps)]
    others = [r for r in prof.instructions if r.family == "bra" and r not in at_if]
    assert others and all(r.divergent_branches == 0 for r in others)
    total = sum(r.branches for r in prof.instructions)
    assert prof.branch_efficiency == (total - warps) / total
    assert prof.metrics()[NSIGHT["branch_efficiency"]] == round(100 * (total - warps) / total, 2)
    # half the threads run the loop: thread-level counts below 32 per warp-instruction
    loop = [r for r in prof.instructions if r.opcode.startswith("fma")]
    assert loop and all(r.threads == 16 * r.executed for r in loop)
    assert prof.active_thread_efficiency == prof.threads / (32 * prof.executed) < 1
    assert prof.mix["bra"] == sum(r.executed for r in prof.instructions if r.family == "bra")
    assert prof.mix["ld.global"] == warps
    want = x.copy()
    for _ in range(5):
        want[1::2] = want[1::2] * np.float32(0.5) + np.float32(1)
    assert y.tolist() == want.tolist()


def test_counts_are_per_warp_and_per_thread(mod):
    x = np.arange(96, dtype=np.float32)
    y = np.zeros(96, np.float32)
    prof = profile_kernel(mod["copy"], x, y, grid=1, block=96)   # three full warps
    assert all(r.executed == 3 and r.threads == 96 for r in prof.instructions)
    assert prof.executed == 3 * len(prof.instructions)
    assert prof.active_thread_efficiency == 1.0
    y2 = np.zeros(40, np.float32)
    part = profile_kernel(mod["copy"], x[:40], y2, grid=1, block=40)   # a warp of 8 threads
    assert all(r.executed == 2 and r.threads == 40 for r in part.instructions)
    assert _one(part, "copy", "ld.global").sectors == 4 + 1


def test_rules_on_hand_made_addresses():
    lanes = np.arange(32)
    w = np.zeros(32, np.int64)
    assert sectors(w, lanes * 4, 4) == (1, 4)
    assert sectors(w, lanes * 4 + 2, 4) == (1, 5)            # misaligned: straddles a sector
    assert sectors(np.repeat([0, 1], 16), np.r_[lanes[:16], lanes[:16]] * 4, 4) == (2, 4)
    assert shared_wavefronts(w, lanes, lanes * 4, 4) == (1, 1, 1)
    assert shared_wavefronts(w, lanes, np.zeros(32, np.int64), 4) == (1, 1, 1)   # broadcast
    assert shared_wavefronts(w, lanes, lanes * 8, 4) == (2, 1, 2)                # stride 2
    assert shared_wavefronts(w, lanes, lanes * 16, 16) == (4, 4, 1)              # 16-byte
    assert shared_wavefronts(w, lanes, lanes % 2, 1) == (1, 1, 1)                # bytes of a word


def test_profile_and_races_in_one_run_and_refusals(mod):
    x = np.arange(512, dtype=np.float32)
    y = np.zeros(512, np.float32)
    prof, races = profile_and_races(mod["raw_race"], x, y, grid=2, block=256)
    assert prof.executed > 0 and [r.kind for r in races] == ["RAW"]
    with pytest.raises(LaunchError, match="kernels .*expected one"):
        profile_kernel(memory_ptx(), x, y, grid=1, block=32)
    with pytest.raises(LaunchError, match="grid= and block= are required"):
        profile_kernel(mod["copy"], x, y)
    prof = profile_kernel((memory_ptx(), "copy"), x, y, grid=1, block=32)
    assert prof.kernel == "copy" and prof.block == (32, 1, 1)
    data = prof.to_dict()
    assert data["nsight"]["smsp__inst_executed.sum"] == prof.executed
    row = next(r for r in data["instructions"] if r["opcode"].startswith("ld.global"))
    assert (row["sectors_per_request"], row["line"]) == (4.0, line_of("copy"))


@pytest.mark.parametrize("gpu_file", ["ncu_memory_h100.csv", "ncu_memory_h200.csv"])
def test_memory_figures_equal_nsight_compute_on_hopper_gpus(gpu_file):
    """bench/ncu_memory.py's launches of these kernels, measured by Nsight Compute on an H100
    and an H200 (sm_90, nvcc 13.0, bench/ncu_memory.sh; tests/launch/data/, 2026-11-27),
    against the interpreter's profile of the same launches: every global request and sector
    count and every shared wavefront and bank-conflict count is equal.  (Branch efficiency is
    not compared: the SASS has other branches than the PTX.)"""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "bench"))
    try:
        import ncu_memory
    finally:
        sys.path.remove(str(root / "bench"))
    gpu = ncu_memory.read_ncu(str(Path(__file__).parent / "data" / gpu_file))
    emu = ncu_memory.interpreter()
    assert sorted(gpu) == sorted(emu)
    compared = 0
    for kernel, metrics in emu.items():
        for metric in ncu_memory.METRICS:
            if metric.startswith("smsp__sass_average_branch"):
                continue
            assert metrics.get(metric, 0) == gpu[kernel][metric], (kernel, metric)
            compared += 1
    assert compared == 8 * 8
    assert gpu["transpose_tile"]["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] \
        == 31 * 128
