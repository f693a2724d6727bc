"""The interpreter's race check (ptxforge.launch.find_races) on CUDA C++ kernels written for it
(tests/support/memory_kernels.py, NVRTC with -lineinfo): a read-after-write race (a missing
__syncthreads between a shared store and a neighbour's load) and a write-after-read race (a
tile reused across loop iterations without the second barrier), each caught with both source
lines, their fixed versions not flagged; global-memory races between threads and blocks; a
same-value write; atomics not flagged; race-free kernels of the emulator's corpus not flagged."""

from __future__ import annotations

import numpy as np
import pytest

from ptxforge.emulator.memory import GLOBAL_BASE
from ptxforge.launch.loader import load
from ptxforge.launch.profile import find_races

from memory_kernels import line_of, memory_ptx


@pytest.fixture(scope="module")
def mod():
    return load(memory_ptx(), device="emulator")


def test_read_after_write_race_names_both_lines(mod):
    x = np.arange(512, dtype=np.float32)
    y = np.zeros(512, np.float32)
    races = find_races(mod["raw_race"], x, y, grid=2, block=256)
    assert len(races) == 1
    r = races[0]
    assert (r.kind, r.space) == ("RAW", "shared")
    assert (r.first.line, r.second.line) == (line_of("raw_store"), line_of("raw_load"))
    assert r.first.opcode.startswith("st.shared") and r.second.opcode.startswith("ld.shared")
    kernel = mod["raw_race"].module.emulator.program("raw_race").kernel
    assert kernel.instructions[r.first_index].opcode == r.first.opcode
    assert kernel.instructions[r.second_index].opcode == r.second.opcode
    # thread t reads s[t+1], which thread t+1 wrote: the reader is the writer's left neighbour
    (rb, rt), (wb, wt) = r.second_thread, r.first_thread
    assert rb == wb and wt[0] == (rt[0] + 1) % 256 and r.address == 4 * wt[0]
    assert r.count == 2 * 256 * 4           # every thread of both blocks, 4 bytes each
    msg = r.message()
    assert msg.startswith("RAW (read after write) on shared memory")
    assert f":{line_of('raw_load')}" in msg and f":{line_of('raw_store')}" in msg
    assert find_races(mod["raw_fixed"], x, y, grid=2, block=256) == []


def test_write_after_read_race_across_loop_iterations(mod):
    x = np.arange(3 * 256, dtype=np.float32)
    y = np.zeros(256, np.float32)
    races = find_races(mod["war_race"], x, y, 3, grid=1, block=256)
    assert [(r.kind, r.space, r.first.line, r.second.line) for r in races] == [
        ("WAR", "shared", line_of("war_load"), line_of("war_store"))]
    assert races[0].first.opcode.startswith("ld.shared")
    assert races[0].second.opcode.startswith("st.shared")
    assert races[0].count == 2 * 256 * 4    # iterations 2 and 3 overwrite what was read
    assert find_races(mod["war_fixed"], x, y, 3, grid=1, block=256) == []
    assert find_races(mod["war_race"], x, y, 1, grid=1, block=256) == []   # one tile: no reuse


def test_global_races_within_and_across_blocks(mod):
    data = np.arange(257, dtype=np.float32)
    races = find_races(mod["global_race"], data, grid=2, block=128)
    assert [(r.kind, r.space) for r in races] == [("WAR", "global")]
    r = races[0]
    assert r.first.line == r.second.line == line_of("global_race")
    assert r.first.opcode.startswith("ld.global") and r.second.opcode.startswith("st.global")
    assert r.address >= GLOBAL_BASE
    # 127 neighbours inside each block and the one pair across the two blocks
    assert r.count == (2 * 127 + 1) * 4


def test_same_value_writes_are_a_waw_race_that_says_so(mod):
    flag = np.zeros(1, np.int32)
    races = find_races(mod["same_value"], flag, grid=2, block=64)
    assert [(r.kind, r.same_value) for r in races] == [("WAW", True)]
    assert races[0].first.line == races[0].second.line == line_of("same_value")
    assert "same value" in races[0].message()
    assert flag.tolist() == [1]


def test_atomics_are_not_races(mod):
    ins = np.arange(512, dtype=np.int32)
    bins = np.zeros(16, np.int32)
    total = np.zeros(1, np.float32)
    assert find_races(mod["histogram"], ins, bins, total, grid=2, block=256) == []
    assert bins.tolist() == [32] * 16 and total.tolist() == [512.0]


@pytest.mark.parametrize("name", ["copy", "strided", "transpose_tile", "transpose_padded",
                                  "doubles", "broadcast"])
def test_race_free_kernels_are_not_flagged(mod, name):
    if name.startswith("transpose"):
        a = np.arange(64 * 64, dtype=np.float32)
        args, shape = (a, np.zeros_like(a), 64), {"grid": (2, 2), "block": (32, 32)}
    elif name == "doubles":
        args, shape = (np.arange(64.0), np.zeros(64)), {"grid": 1, "block": 64}
    else:
        args = (np.arange(1024, dtype=np.float32), np.zeros(512, np.float32))
        shape = {"grid": 2, "block": 256}
    assert find_races(mod[name], *args, **shape) == []


def test_the_gemm_without_its_second_barrier_is_caught():
    """The DSL's tiled SGEMM, and the same kernel with its second bar.sync removed: the blind
    spot docs/emulator.md described (the answer is still right on the interpreter)."""
    import attrs

    from ptxforge.dsl import kernels
    from ptxforge.ptx import ir

    module = kernels.sgemm_tiled()
    kernel = module.kernels[0]
    bars = [k for k, s in enumerate(kernel.body)
            if isinstance(s, ir.Instruction) and s.family == "bar"]
    assert len(bars) == 2
    body = tuple(s for k, s in enumerate(kernel.body) if k != bars[1])
    broken = attrs.evolve(module, kernels=(attrs.evolve(kernel, body=body),))
    n = 32
    rng = np.random.default_rng(1)
    a, b = rng.random((n, n), np.float32), rng.random((n, n), np.float32)
    for source, racy in ((module, False), (broken, True)):
        c = np.zeros((n, n), np.float32)
        k = load(source, device="emulator")["sgemm_tiled"]
        races = find_races(k, a, b, c, n, n, n, grid=(n // 16, n // 16), block=(16, 16))
        np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5)
        assert bool(races) == racy
        if racy:
            assert {(r.kind, r.space) for r in races} == {("WAR", "shared")}
            assert all(r.first.opcode.startswith("ld.shared") for r in races)
            assert all(r.second.opcode.startswith("st.shared") for r in races)


# --- the emulator's corpus (tests/corpus/*.cu): race-free as written, caught without a barrier

def _corpus_cases():
    rng = np.random.default_rng(4)
    x = rng.integers(-8, 8, 1000).astype(np.float32)
    m = rng.standard_normal((64, 96)).astype(np.float32)
    h = rng.integers(0, 256, 2000).astype(np.uint8)
    s = rng.standard_normal((5, 70)).astype(np.float32)
    return {
        "block_reduce_sum": ("reduce", lambda: (x, np.zeros(5, np.float32), 1000),
                             {"grid": 5, "block": 256}),
        "block_exclusive_scan": ("scan_transpose", lambda: (x, np.zeros(1000, np.float32),
                                                            np.zeros(2, np.float32), 1000),
                                 {"grid": 2, "block": 256}),
        "transpose_smem": ("scan_transpose", lambda: (m, np.zeros((96, 64), np.float32), 64, 96),
                           {"grid": (3, 2), "block": (32, 8)}),
        "histogram256": ("atomics", lambda: (h, np.zeros(256, np.uint32), 2000),
                         {"grid": 4, "block": 128}),
        "softmax_rows": ("softmax", lambda: (s, np.zeros_like(s), 5, 70),
                         {"grid": 2, "block": 128}),
    }


#: Barriers whose removal leaves the kernel race-free, by (source line, occurrence in the PTX):
#: the scan's first up-sweep level reads only what each thread stored itself, its first
#: down-sweep level runs thread 0 alone on its own elements, and its last level (offset 1)
#: leaves thread t with elements 2t and 2t+1, which it then stores.
BENIGN = {"block_exclusive_scan": {(11, 0), (22, 0), (30, 0)}}


@pytest.mark.parametrize("prefix", sorted(_corpus_cases()))
def test_corpus_kernels_with_a_barrier_removed_are_caught(prefix):
    import attrs

    from ptxforge.ptx import ir
    from ptxforge.ptx.parse import parse

    from corpus_util import corpus_ptx

    source, make, shape = _corpus_cases()[prefix]
    module = parse(corpus_ptx(source, "sm_80", True))
    kernel = next(k for k in module.entries if prefix in k.name)
    assert find_races((module, kernel.name), *make(), **shape) == []
    bars = [k for k, st in enumerate(kernel.body)
            if isinstance(st, ir.Instruction) and st.family == "bar"]
    assert bool(bars) == (prefix != "softmax_rows")   # softmax: warp shuffles, no barrier
    seen: dict = {}
    quiet = set()
    for cut in bars:
        body = tuple(st for k, st in enumerate(kernel.body) if k != cut)
        broken = attrs.evolve(module, kernels=tuple(
            attrs.evolve(k, body=body) if k is kernel else k for k in module.kernels))
        races = find_races((broken, kernel.name), *make(), **shape)
        line = kernel.body[cut].loc.line
        where = (line, seen.setdefault(line, 0))
        seen[line] += 1
        if not races:
            quiet.add(where)
        assert all(r.first.line and r.second.line for r in races)
    assert quiet == BENIGN.get(prefix, set())


def test_mbarrier_phases_and_grid_syncs_order_accesses():
    """cuda::barrier, cuda::pipeline and this_grid().sync() (tests/support/real_world_source.py)
    order the exchanges they guard: without the mbarrier phase rule barrier_rotate's shared
    exchange is a RAW race, without the grid rule grid_rotate's global one (both seen)."""
    from real_world_source import real_world_ptx

    module = load(real_world_ptx(), device="emulator")
    module.set("coef", np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    module.set("bias", np.array([7], np.int32))
    x = np.arange(512, dtype=np.float32)
    assert find_races(module["barrier_rotate"], x, np.zeros(512, np.float32), grid=2,
                      block=256) == []
    chunks = np.arange(128 * 5, dtype=np.float32)
    assert find_races(module["pipeline_sum"], chunks, np.zeros(128, np.float32), 5, grid=1,
                      block=128) == []
    data, out = np.zeros(256, np.int32), np.zeros(256, np.int32)
    assert find_races(module["grid_rotate"], data, out, grid=4, block=64,
                      cooperative=True) == []
    assert out.tolist() == [3 * ((i + 1) % 256) for i in range(256)]
