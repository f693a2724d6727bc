"""The examples and the benchmark without a GPU: their checking logic, the CUDA C++ SGEMM being
the same algorithm as ptxforge's, and the one-line message they print when there is no GPU.

(tests/launch/test_gpu.py runs the examples on a GPU and checks they print PASS.)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ptxforge.launch.device import gpu_unavailable_reason

ROOT = Path(__file__).resolve().parents[2]
NO_GPU = gpu_unavailable_reason()
without_gpu = pytest.mark.skipif(NO_GPU is None, reason="a GPU is present: tests/launch/test_gpu.py runs the examples")

for folder in (ROOT / "examples", ROOT / "bench"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


# --- what the examples print without a GPU ------------------------------------------------------

@without_gpu
@pytest.mark.parametrize("script, entry", [("saxpy.py", "saxpy"),
                                           ("block_reduction.py", "block_reduce_sum"),
                                           ("sgemm.py", "sgemm_tiled"),
                                           ("modadd256.py", "modadd256")])
def test_example_without_gpu_explains_and_exits_zero(script, entry):
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout
    assert f"built {entry} (" in lines[0] and "bytes of PTX" in lines[0]
    assert "needs a GPU" in lines[0]
    assert proc.stderr == ""


@without_gpu
def test_example_ptx_size_is_the_emitted_size():
    from ptxforge import emit
    from ptxforge.dsl import kernels

    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "saxpy.py")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    size = len(emit(kernels.saxpy(target="sm_80")))
    assert f"({size} bytes of PTX" in proc.stdout


@without_gpu
def test_benchmark_without_gpu_explains_and_exits_zero():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_gpu.py"), "--quick"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("bench_gpu: needs an NVIDIA GPU and driver; not run here")
    assert len(proc.stdout.strip().splitlines()) == 1


# --- the examples' checks accept right answers and refuse wrong ones ---------------------------

def test_saxpy_check_accepts_fused_and_unfused_and_refuses_a_wrong_result():
    from saxpy import check_saxpy

    rng = np.random.default_rng(0)
    x = rng.standard_normal(10_000, dtype=np.float32)
    y0 = rng.standard_normal(10_000, dtype=np.float32)
    a = np.float32(1.75)
    unfused = a * x + y0                                              # two roundings
    fused = (np.float64(a) * x.astype(np.float64) + y0).astype(np.float32)   # one rounding
    assert check_saxpy(1.75, x, y0, unfused) <= 1.0
    assert check_saxpy(1.75, x, y0, fused) <= 1.0
    wrong = fused.copy()
    wrong[1234] = np.nextafter(np.nextafter(wrong[1234], np.inf), np.inf) * np.float32(1 + 1e-5)
    assert check_saxpy(1.75, x, y0, wrong) > 1.0
    assert check_saxpy(1.75, x, y0, a * x) > 1.0                      # y forgotten


def test_sgemm_check_scales_with_k_and_catches_unwritten_elements():
    from sgemm import TILE, run

    def fake_kernel(result):
        def launch(a, b, c, m, n, k, grid, block):
            assert grid == (n // TILE, m // TILE) and block == (TILE, TILE)
            c[...] = result(a, b)
        return launch

    exact32 = fake_kernel(lambda a, b: (a.astype(np.float64) @ b).astype(np.float32))
    naive32 = fake_kernel(lambda a, b: np.einsum("ik,kj->ij", a, b, dtype=np.float32))
    assert run(exact32, 64, 32, 512, np.random.default_rng(1)) <= 1.0
    assert run(naive32, 64, 32, 512, np.random.default_rng(1)) <= 1.0  # float32 accumulation

    def one_wrong(a, b):
        c = (a.astype(np.float64) @ b).astype(np.float32)
        c[3, 5] += 1e-2 * abs(c[3, 5]) + 1e-2
        return c

    assert run(fake_kernel(one_wrong), 64, 32, 512, np.random.default_rng(1)) > 1.0

    def unwritten(a, b):
        c = (a.astype(np.float64) @ b).astype(np.float32)
        c[-1, -1] = np.nan                                  # what run() pre-fills
        return c

    assert not run(fake_kernel(unwritten), 64, 32, 512, np.random.default_rng(1)) <= 1.0


def _kernel_by_the_book(x, grid, block):
    """block_reduce_sum read off its PTX, one thread and one shuffle at a time (slow, small)."""
    f32 = np.float32
    n, stride, nwarps = x.size, grid * block, block // 32
    out = []
    for b in range(grid):
        acc = [f32(0)] * block
        for t in range(block):
            i = b * block + t
            while i < n:
                acc[t] = f32(acc[t] + x[i])
                i += stride
        for offset in (16, 8, 4, 2, 1):                          # shfl.sync.bfly, then add.f32
            acc = [f32(acc[t] + acc[(t & ~31) | ((t & 31) ^ offset)]) for t in range(block)]
        warp_sums = [acc[32 * w] for w in range(nwarps)]
        total = [warp_sums[t] if t < nwarps else f32(0) for t in range(32)]
        delta = (1 << (nwarps - 1).bit_length()) // 2
        while delta:                                             # shfl.sync.down, c = 31
            total = [f32(total[t] + total[t + delta if t + delta < 32 else t]) for t in range(32)]
            delta //= 2
        out.append(total[0])
    return np.array(out, np.float32)


@pytest.mark.parametrize("n, grid, block", [(1000, 3, 64), (77, 5, 32), (4096, 2, 256), (5000, 1, 96)])
def test_block_reduction_emulation_is_the_kernels_order(n, grid, block):
    from block_reduction import emulate_partials

    x = np.random.default_rng(n).random(n, dtype=np.float32) * np.float32(1000)
    np.testing.assert_array_equal(emulate_partials(x, grid, block), _kernel_by_the_book(x, grid, block))


def test_block_reduction_checks():
    from block_reduction import BLOCK, check, emulate_partials, reference_partials

    n = (1 << 20) + 77
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 2, n).astype(np.float32)
    x = rng.random(n, dtype=np.float32)
    for grid in (1, 7, 160):
        # 0/1 data: float32 sums it exactly, so the exact comparison in main() is sound
        np.testing.assert_array_equal(emulate_partials(bits, grid, BLOCK), reference_partials(bits, grid, BLOCK))
        good = emulate_partials(x, grid, BLOCK)
        ratio, exact = check(good, x, grid)
        assert exact and ratio <= 1.0
        skipped = good.copy()
        skipped[-1] -= x[-1]                                   # one element not summed
        assert check(skipped, x, grid)[1] is False
    with_one_more = reference_partials(bits, 7, BLOCK).astype(np.float32)
    with_one_more[0] += 1                                      # an element read twice
    assert not np.array_equal(with_one_more, reference_partials(bits, 7, BLOCK))


def test_modadd256_cases_and_limbs():
    from modadd256 import LIMBS, cases, from_limbs, to_limbs

    triples = cases(500, seed=11)
    assert all(0 <= a < p and 0 <= b < p for a, b, p in triples)
    assert any(a + b >= 1 << 256 for a, b, _ in triples)      # the 257-bit carry case
    assert any(a + b == p for a, b, p in triples)             # reduces to exactly 0
    assert any(a + b == p - 1 for a, b, p in triples)         # the largest result kept
    limbs = to_limbs([a for a, _, _ in triples])
    assert limbs.shape == (500, LIMBS) and limbs.dtype == np.uint32
    assert from_limbs(limbs) == [a for a, _, _ in triples]
    assert to_limbs([(1 << 32) + 2])[0, :2].tolist() == [2, 1]   # least significant limb first


# --- the benchmark's CUDA C++ SGEMM is ptxforge's algorithm ----------------------------------

def _nvrtc_reason():
    try:
        from cuda.bindings import nvrtc

        err, *_ = nvrtc.nvrtcVersion()
        return None if err == nvrtc.nvrtcResult.NVRTC_SUCCESS else f"NVRTC: {err.name}"
    except Exception as exc:  # pragma: no cover - depends on the machine
        return f"NVRTC not usable: {exc}"


_MIX = {
    "fma.rn.f32": r"\bfma\.rn\.f32\b", "ld.shared.f32": r"\bld\.shared\.f32\b",
    "st.shared.f32": r"\bst\.shared\.f32\b", "ld.global.f32": r"\bld\.global\.f32\b",
    "ld.global.nc": r"\bld\.global\.nc\b", "st.global.f32": r"\bst\.global\.f32\b",
    "bar.sync": r"\bbar\.sync\b", "nounroll": r'\.pragma\s+"nounroll"',
}


def _mix(ptx: str) -> dict:
    return {name: len(re.findall(pattern, ptx)) for name, pattern in _MIX.items()}


@pytest.mark.skipif(_nvrtc_reason() is not None, reason=str(_nvrtc_reason()))
@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_bench_cuda_sgemm_is_the_same_algorithm(target):
    """Same memory and arithmetic instructions per K tile, the K loop rolled in both, the tile's
    FMAs unrolled in both, no .nc loads in either; and ptxas accepts both."""
    from bench_gpu import SGEMM_CUDA_PARAMS, sgemm_cuda_ptx, with_ptx_version

    from ptxforge import emit, parse
    from ptxforge.dsl import kernels
    from ptxforge.toolchain.compile import compile_ptx

    ours = emit(kernels.sgemm_tiled(tile=16, target=target))
    theirs = sgemm_cuda_ptx(target, 16)
    assert _mix(theirs) == _mix(ours)
    assert _mix(ours) == {"fma.rn.f32": 16, "ld.shared.f32": 32, "st.shared.f32": 2,
                          "ld.global.f32": 2, "ld.global.nc": 0, "st.global.f32": 1,
                          "bar.sync": 2, "nounroll": 1}
    assert ".maxntid 256, 1, 1" in theirs and ".reqntid 16, 16, 1" in ours
    # the signature the benchmark declares is the one NVRTC emitted
    parsed = parse(theirs).entries[0]
    assert [(p.type, p.dims) for p in parsed.params] == [(p.type, p.dims) for p in SGEMM_CUDA_PARAMS]
    # NVRTC's PTX at ptxforge's .version: what the benchmark loads on an older driver
    old = with_ptx_version(theirs, ours)
    assert re.search(r"\.version (\d+\.\d+)", old).group(1) == re.search(r"\.version (\d+\.\d+)", ours).group(1)
    for text in (theirs, old, ours):
        stats = compile_ptx(text, target, backend="nvjitlink")
        assert stats.kernels[0].registers > 0 and not stats.kernels[0].spills


# --- the case-study examples: they run without a GPU, and what they print is what ptxas says ---

def _run_example(script: str) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), "--quick"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "unverified on hardware" in proc.stdout and "lesson:" in proc.stdout
    return proc.stdout


def emit(module) -> str:
    from ptxforge import emit as emit_ptx

    return emit_ptx(module)


def _ptxas(kb, target):
    from ptxas_exe import ptxas_stats

    module = kb.build()
    return ptxas_stats(emit(module), target)[module.kernels[0].name]


def test_tensor_core_gemm_prints_ptxas_figures():
    import tensor_core_gemm as ex

    from ptxforge import occupancy

    out = _run_example("tensor_core_gemm.py")
    for mt, nt in ex.QUICK_TILES:
        stats = _ptxas(ex.build(mt, nt), ex.TARGET)
        occ = occupancy(stats.registers, ex.THREADS, ex.TARGET, shared=ex.shared_bytes(mt, nt))
        row = re.search(rf"^\s*{mt}x{nt}\s+\S+\s+(\d+)\s+\d+\s+(\d+)\s+(\d+)/(\d+)\s+\d+\s+(\d+)",
                        out, re.M)
        assert row, out
        assert int(row.group(1)) == 4 * mt * nt                    # accumulator registers
        assert (int(row.group(2)), int(row.group(3)), int(row.group(5))) == \
            (stats.registers, stats.spill_stores, occ.active_blocks)
    assert "mma.sync.aligned.m16n8k16" in emit(ex.build(1, 2).build())
    assert "pressure report, warp tile 2x4" in out


def test_weno_prints_ptxas_figures_and_fission_crosses_128():
    import weno as ex

    out = _run_example("weno.py")
    for variant in ("cascade", "table"):
        stats = _ptxas(ex.build_single(variant), "sm_80")
        assert re.search(rf"^\s*{variant}\s+{stats.registers}\s", out, re.M), out
    mono = _ptxas(ex.build_fission(tuple(range(ex.FIELDS)), "G_mono"), "sm_70")
    half = _ptxas(ex.build_fission(tuple(range(ex.FIELDS // 2)), "G_first"), "sm_70")
    assert f"G_mono    ptxas {mono.registers} registers" in out
    assert f"G_first   ptxas  {half.registers} registers" in out
    assert mono.registers > 128 >= half.registers          # what the example is about
    # the cascade variant really is a selp cascade of literal pairs; the table has none
    assert "selp.f64" in emit(ex.build_single("cascade").build())
    assert "selp" not in emit(ex.build_single("table").build())


def test_weno_coefficients_reconstruct_polynomials_exactly():
    import weno as ex

    # order r reproduces polynomials of degree r - 1: cell averages of x**(r-1) on the cells
    # [-3, -2] .. [1, 2] give the value at the interface x = 0 (cell 2 is [-1, 0])
    for order in ex.ORDERS:
        deg = order - 1
        averages = [((j + 1) ** (deg + 1) - j ** (deg + 1)) / (deg + 1) for j in range(-3, 2)]
        q, beta, d = ex.coefficients(order)
        assert abs(sum(d) - 1) < 1e-12
        for s in range(order):
            value = sum(c * v for c, v in zip(q[s], averages))
            assert abs(value - (1.0 if deg == 0 else 0.0)) < 1e-12, (order, s, value)
            assert abs(sum(beta[s])) < 1e-12 or order > 1      # smoothness of a constant is 0


def test_ecdlp_prints_ptxas_figures_and_the_calculator_corrects_the_seed():
    import ecdlp as ex

    from ptxforge import occupancy

    out = _run_example("ecdlp.py")
    for layout in ex.LAYOUTS:
        stats = _ptxas(ex.build(layout), ex.TARGET)
        occ = occupancy(stats.registers, ex.BLOCK, ex.TARGET)
        assert re.search(rf"^{layout}\s+{stats.registers}\s+\d+\s+{stats.spill_stores}\s+"
                         rf"{occ.active_blocks}\s", out, re.M), out
    assert occupancy(51, 256, "sm_86").active_blocks == 4     # the seed claimed 5
    assert "the seed says 5 blocks, 83%" in out


def test_ray_traversal_prints_ptxas_figures():
    import ray_traversal as ex

    out = _run_example("ray_traversal.py")
    for depth in ex.QUICK_DEPTHS:
        for kind in ("local", "registers"):
            stats = _ptxas(ex.build(kind, depth), ex.TARGET)
            assert re.search(rf"^{kind}\s+{depth}\s+{4 * depth}\s+{stats.registers}\s+\d+\s+"
                             rf"{stats.stack_frame}\s+{stats.spill_stores}/", out, re.M), out
    local = _ptxas(ex.build("local", 32), ex.TARGET)
    assert local.stack_frame >= 4 * 32                    # the stack lives in the frame
    # the memory table (profiled on the interpreter at the quick depth)
    depth = ex.QUICK_MEMORY_DEPTH
    rows = {}
    for m in re.finditer(r"^(\w+(?:\+cache)?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\S+)\s+"
                         r"(\d+)\s+(\S+)\s+(\d+)\s+(\d+)$", out.split("memory on the PTX")[1],
                         re.MULTILINE):
        name, regs, _, lreq, lspr, greq, _, sreq, _, conf, _ = m.groups()
        rows[name] = {"regs": int(regs), "local": int(lreq), "global": int(greq),
                      "shared": int(sreq), "conflicts": int(conf), "lspr": lspr}
    assert sorted(rows) == sorted(k + c for k in ex.KINDS for c in ("", "+cache"))
    for kind in ex.KINDS:
        for cache in (False, True):
            r = rows[kind + ("+cache" if cache else "")]
            assert r["regs"] == _ptxas(ex.build(kind, depth, cache=cache), ex.TARGET).registers
            assert (r["local"] > 0) == (kind == "local")
            assert (r["shared"] > 0) == (kind == "shared" or cache)
        # the cache serves some node reads from shared memory: fewer global requests
        assert rows[kind + "+cache"]["global"] < rows[kind]["global"]
        assert rows[kind + "+cache"]["global"] == rows["local+cache"]["global"]
    # the same pushes and pops: local requests of the local stack = shared ones of the shared
    assert rows["local"]["local"] == rows["shared"]["shared"]
    assert rows["shared+cache"]["shared"] == rows["shared"]["shared"] + rows["local+cache"]["shared"]
    assert rows["shared"]["conflicts"] == 0              # entry s of thread t: bank t mod 32
    assert float(rows["local"]["lspr"]) >= 1.0


# --- the case studies' kernels on the PTX interpreter, bit for bit against Python ------------

def _emulated(kb, name):
    from ptxforge.launch.loader import load

    return load(kb.build(), device="emulator")[name]


def test_ecdlp_kernels_compute_the_point_addition_mod_p():
    import random

    import ecdlp as ex

    p, mask = ex.P, (1 << 64) - 1
    limbs = lambda v: [(v >> (64 * i)) & mask for i in range(4)]            # noqa: E731
    value = lambda row: sum(int(x) << (64 * i) for i, x in enumerate(row))   # noqa: E731
    rnd = random.Random(3)
    cases = [[rnd.randrange(p) for _ in range(5)] for _ in range(64)]
    cases[0][1], cases[0][3] = 0, p - 1                   # y0 - jy borrows
    cases[1][:] = [p - 1] * 5                             # the largest values
    pts = np.array([limbs(x0) + limbs(y0) for x0, y0, *_ in cases], np.uint64)
    jumps = np.array([limbs(jx) + limbs(jy) + limbs(d) for _, _, jx, jy, d in cases], np.uint64)

    def add(x0, y0, jx, jy, dxs):
        s = (y0 - jy) * dxs % p
        x3 = (s * s - jx - x0) % p
        return x3, (s * (x0 - x3) - y0) % p

    for layout in ex.LAYOUTS:
        out = np.zeros((64, 9), np.uint64)
        _emulated(ex.build(layout), f"kangaroo_{layout}")(pts, jumps, out, grid=1, block=64)
        for row, (x0, y0, jx, jy, dxs) in zip(out, cases):
            x3, y3 = value(row[:4]), value(row[4:8])
            assert x3 < 1 << 256 and y3 < 1 << 256
            if layout == "sota":
                assert (x3 % p, y3 % p) == add(x0, y0, jx, jy, dxs)
                continue
            plus, minus = add(x0, y0, jx, jy, dxs), add(x0, y0, jx, (-jy) % p, dxs)
            assert (x3 % p, y3 % p) == (plus if int(row[8]) == 0 else minus), layout


def test_weno_kernels_match_numpy():
    import weno as ex

    n = 256
    rng = np.random.default_rng(5)
    u = rng.standard_normal(n + 4)
    u[100:110] += 5.0                                          # a jump: the weights matter
    order = rng.integers(1, 4, n + 4).astype(np.uint32)
    expected = np.zeros(n + 4)
    for i in range(2, n + 2):
        v = u[i - 2:i + 3]
        q, beta, d = (np.array(x) for x in ex.coefficients(int(order[i])))
        products = np.array([v[j] * v[m] for j, m in ex.PAIRS])
        alpha = d / (beta @ products + ex.EPS) ** 2
        expected[i] = alpha @ (q @ v) / alpha.sum()
    for variant in ("cascade", "table"):
        out = np.zeros(n + 4)
        _emulated(ex.build_single(variant), f"weno5_{variant}")(u, order, out, grid=2, block=128)
        np.testing.assert_allclose(out[2:n + 2], expected[2:n + 2], rtol=1e-12, atol=1e-14)


def test_ray_traversal_stacks_agree_with_a_python_walk():
    import ray_traversal as ex

    rng = np.random.default_rng(9)
    count = 400
    nodes = np.zeros((count, 2), np.uint32)
    for i in range(count):
        if 4 * i + 4 < count:
            nodes[i] = (4 * i + 1, rng.integers(0, 16))
    rays = np.zeros((64, 4), np.float32)
    rays[:, 0] = rng.uniform(-50, 50, 64)
    rays[:, 1] = rng.uniform(0.5, 2.0, 64)
    rays[:, 2], rays[:, 3] = 0.0, rng.uniform(50, 400, 64)

    def walk(ray, depth):
        ox, inv, tmin, tmax = (np.float32(x) for x in ray)
        stack, found, steps = [0], 0, 0
        while stack and steps < ex.MAX_STEPS:
            steps += 1
            first, mask = (int(x) for x in nodes[stack.pop()])
            found += mask == 0
            for c in range(ex.CHILDREN):
                t = np.float32(np.float32(np.float32(first + c) - ox) * inv)
                if tmin <= t <= tmax and mask >> c & 1 and len(stack) < depth:
                    stack.append(first + c)
        return found, steps

    for depth in (4, 8):
        want = np.array([walk(r, depth) for r in rays], np.uint32)
        for kind in ex.KINDS:
            for cache in (False, True):
                hits = np.zeros((64, 2), np.uint32)
                _emulated(ex.build(kind, depth, cache=cache), ex.name_of(kind, depth, cache))(
                    nodes, rays, hits, grid=1, block=64)
                np.testing.assert_array_equal(hits, want, err_msg=f"{kind} {depth} {cache}")
                if depth == 8 and kind != "registers":   # the shared stack and the cache fill
                    from ptxforge.launch.profile import find_races

                    k = _emulated(ex.build(kind, depth, cache=cache),
                                  ex.name_of(kind, depth, cache))
                    assert find_races(k, nodes, rays, hits, grid=1, block=64) == []
        assert want[:, 1].max() > 3                              # the walks go somewhere


def test_weno_fission_kernels_split_the_sum_of_reconstructions():
    """G_mono over fields 0..3 equals G_first (0, 1) followed by G_second (2, 3, accumulating),
    and both equal the sum of NumPy's reconstructions of each field."""
    import weno as ex

    n, fields = 256, 4
    stride = n + 4
    rng = np.random.default_rng(11)
    u = rng.standard_normal((fields, stride))
    u[:, 60:70] += 3.0
    order = rng.integers(1, 4, stride).astype(np.uint32)

    def recon(v, o):
        q, beta, d = (np.array(x) for x in ex.coefficients(int(o)))
        alpha = d / (beta @ np.array([v[j] * v[m] for j, m in ex.PAIRS]) + ex.EPS) ** 2
        return alpha @ (q @ v) / alpha.sum()

    want = np.array([sum(recon(u[f, i - 2:i + 3], order[i]) for f in range(fields))
                     for i in range(2, n + 2)])
    mono = np.zeros(stride)
    _emulated(ex.build_fission(tuple(range(fields)), "G_mono"), "G_mono")(
        u.ravel(), order, mono, stride, grid=1, block=ex.FISSION_BLOCK)
    split = np.zeros(stride)
    _emulated(ex.build_fission((0, 1), "G_first"), "G_first")(
        u.ravel(), order, split, stride, grid=1, block=ex.FISSION_BLOCK)
    _emulated(ex.build_fission((2, 3), "G_second", accumulate=True), "G_second")(
        u.ravel(), order, split, stride, grid=1, block=ex.FISSION_BLOCK)
    np.testing.assert_allclose(mono[2:n + 2], want, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(split[2:n + 2], want, rtol=1e-12, atol=1e-13)
