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
