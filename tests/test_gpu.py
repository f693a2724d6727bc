"""ptxforge kernels on a real GPU: every example's numbers, the driver's register counts against
nvJitLink's, the occupancy calculator against the driver, device-array and stream paths.

All tests are marked ``gpu``; tests/conftest.py skips them with the reason when no GPU or
driver is present.  NOTE: written against the cuda.bindings documentation; not yet run on a
GPU at the time of writing (none was available).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ptxforge import DeviceError, LaunchError, emit, ir, types

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
BLOCK = 256


@pytest.fixture(scope="module")
def info():
    from ptxforge.device import device_info

    return device_info(0)


def _build(factory, info, **kwargs):
    """Build for the device's own target, or sm_80 if the builder does not know it."""
    from ptxforge.errors import PtxforgeError

    try:
        return factory(target=info.target, **kwargs)
    except PtxforgeError:
        return factory(target="sm_80", **kwargs)


@pytest.fixture(scope="module")
def modules(info):
    from ptxforge import kernels

    return {
        "saxpy": _build(kernels.saxpy, info),
        "block_reduce_sum": _build(kernels.block_reduce_sum, info, block=BLOCK),
        "sgemm_tiled": _build(kernels.sgemm_tiled, info, tile=16),
        "modadd256": _build(kernels.modadd256, info),
    }


@pytest.fixture(scope="module")
def loaded(modules):
    from ptxforge.launch import load

    out = {name: load(module)[name] for name, module in modules.items()}
    yield out
    for kernel in out.values():
        kernel.module.unload()


def _examples():
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))


# --- the examples' numbers --------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 255, 256, 257, 100_003])
def test_saxpy_matches_numpy(loaded, n):
    _examples()
    from saxpy import check_saxpy

    rng = np.random.default_rng(n)
    x = rng.standard_normal(n, dtype=np.float32)
    y0 = rng.standard_normal(n, dtype=np.float32)
    y = y0.copy()
    loaded["saxpy"](n, -0.625, x, y, grid=(n + BLOCK - 1) // BLOCK, block=BLOCK)
    assert check_saxpy(-0.625, x, y0, y) <= 1.0
    # elements beyond n are untouched: launch on a prefix of a longer array
    y_long = np.full(n + 64, 7.0, np.float32)
    loaded["saxpy"](n, 1.0, x, y_long[:n], grid=(n + BLOCK - 1) // BLOCK, block=BLOCK)
    assert np.all(y_long[:n] == np.float32(7.0) + x)


@pytest.mark.parametrize("grid, n", [(1, 1000), (3, BLOCK * 3), (80, 1_000_003), (1024, 77)])
def test_block_reduction_partials(loaded, grid, n):
    _examples()
    from block_reduction import reference_partials

    x = np.random.default_rng(grid).random(n, dtype=np.float32)
    out = np.full(grid, np.nan, np.float32)
    loaded["block_reduce_sum"](x, out, n, grid=grid, block=BLOCK)
    ref = reference_partials(x, grid, BLOCK)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-3)
    assert out.astype(np.float64).sum() == pytest.approx(x.sum(dtype=np.float64), rel=1e-5)


@pytest.mark.parametrize("m, n, k", [(16, 16, 16), (64, 32, 48), (128, 256, 512)])
def test_sgemm_matches_numpy(loaded, m, n, k):
    _examples()
    from sgemm import run

    assert run(loaded["sgemm_tiled"], m, n, k, np.random.default_rng(m + n + k)) <= 1.0


def test_modadd256_matches_python_integers(loaded):
    _examples()
    from modadd256 import cases, from_limbs, to_limbs

    triples = cases(5000, seed=11)
    a, b, p = (to_limbs(col) for col in zip(*triples))
    out = np.zeros_like(a)
    n = len(triples)
    loaded["modadd256"](a, b, p, out, n, grid=(n + BLOCK - 1) // BLOCK, block=BLOCK)
    got = from_limbs(out)
    assert got == [(x + y) % m for x, y, m in triples]
    assert any(x + y >= 1 << 256 for x, y, _ in triples)        # the overflow case is covered


@pytest.mark.parametrize("script", ["saxpy.py", "block_reduction.py", "sgemm.py", "modadd256.py"])
def test_example_script_passes(script):
    proc = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True,
                          text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout and "needs a GPU" not in proc.stdout


# --- device arrays, streams, errors -------------------------------------------------------------

def test_device_array_roundtrip_and_no_copy_launch(loaded):
    from ptxforge.device import DeviceArray

    n = 4096
    x = np.arange(n, dtype=np.float32)
    with DeviceArray.from_host(x) as xd, DeviceArray.zeros(n, np.float32) as yd:
        np.testing.assert_array_equal(xd.to_host(), x)
        loaded["saxpy"](n, 3.0, xd, yd, grid=n // BLOCK, block=BLOCK, sync=True)
        np.testing.assert_array_equal(yd.to_host(), 3.0 * x)


def test_launch_on_a_cuda_core_stream(loaded):
    core = pytest.importorskip("cuda.core")
    from ptxforge.device import DeviceArray

    dev = core.Device(0)
    dev.set_current()
    stream = dev.create_stream()
    n = 1024
    with DeviceArray.from_host(np.ones(n, np.float32)) as xd, DeviceArray.zeros(n, np.float32) as yd:
        loaded["saxpy"](n, 2.0, xd, yd, grid=n // BLOCK, block=BLOCK, stream=stream)
        stream.sync()
        np.testing.assert_array_equal(yd.to_host(), np.full(n, 2.0, np.float32))


def test_bad_launches_fail_before_the_gpu(loaded):
    x = np.ones(4, np.float32)
    with pytest.raises(LaunchError, match="parameter 'n'"):
        loaded["saxpy"](-4, 1.0, x, x, grid=1, block=4)
    with pytest.raises(LaunchError, match="threads"):
        loaded["saxpy"](4, 1.0, x, x, grid=1, block=(1024, 2))


def test_target_newer_than_device_is_refused(info):
    from ptxforge.launch import load

    major = info.compute_capability[0] + 1
    text = f".version 8.0\n.target sm_{major}0\n.address_size 64\n"
    with pytest.raises(DeviceError, match="build the module for target"):
        load(text)


def test_timing_is_plausible(loaded, info):
    from ptxforge.device import DeviceArray
    from ptxforge.timing import time_launch

    n = 1 << 24
    with DeviceArray.zeros(n, np.float32) as xd, DeviceArray.zeros(n, np.float32) as yd:
        t = time_launch(loaded["saxpy"], n, 1.0, xd, yd, grid=n // BLOCK, block=BLOCK,
                        warmup=2, repeat=5, bytes=12 * n)
    assert t.runs == 5 and all(ms > 0 for ms in t.times_ms)
    assert 1.0 < t.gbps < 20_000.0        # between a slow PCIe card and well above any HBM


# --- registers: driver vs nvJitLink -------------------------------------------------------------

def _nvjitlink_version() -> tuple:
    from cuda.bindings import nvjitlink

    return tuple(nvjitlink.version())


@pytest.mark.parametrize("name", ["saxpy", "block_reduce_sum", "sgemm_tiled", "modadd256"])
def test_driver_reports_nvjitlink_registers_for_its_cubin(modules, name, info):
    """The nvJitLink cubin loaded by the driver: CU_FUNC_ATTRIBUTE_NUM_REGS == nvJitLink's count."""
    from ptxforge.compile import compile_ptx
    from ptxforge.launch import load

    nvj = _nvjitlink_version()
    if info.driver_cuda_version[0] < nvj[0]:
        pytest.skip(f"driver supports CUDA {info.driver_cuda_version}, older than nvJitLink {nvj}: "
                    "its cubins need a newer driver")
    module = modules[name]
    compiled = compile_ptx(module, info.target, backend="nvjitlink")
    assert compiled.cubin, "nvJitLink produced no cubin"
    sigs = {k.name: k.params for k in module.entries}
    with load(compiled.cubin, signatures=sigs) as mod:
        assert mod[name].num_regs == compiled[name].registers


@pytest.mark.parametrize("name", ["saxpy", "block_reduce_sum", "sgemm_tiled", "modadd256"])
def test_driver_jit_registers_match_nvjitlink_same_target(modules, loaded, name, info):
    """PTX JIT-compiled by the driver vs nvJitLink for the same sm_XX.

    Exact equality is only expected when both embed the same ptxas release, so the test skips
    (saying both versions) when the driver's CUDA version differs from nvJitLink's.
    """
    from ptxforge.compile import compile_ptx

    driver_regs = loaded[name].num_regs
    compiled = compile_ptx(emit(modules[name]), info.target, backend="nvjitlink")
    nvj = _nvjitlink_version()
    if info.driver_cuda_version != nvj:
        pytest.skip(f"driver JIT is CUDA {info.driver_cuda_version}, nvJitLink is {nvj}: "
                    f"different ptxas releases (driver {driver_regs} vs nvJitLink "
                    f"{compiled[name].registers} registers)")
    assert driver_regs == compiled[name].registers


# --- occupancy: calculator vs driver -------------------------------------------------------------

def _block_sizes(kernel_ir: ir.Kernel, max_threads: int) -> list:
    for directive, values in kernel_ir.directives:
        if directive == ".reqntid":
            size = 1
            for v in values:
                size *= v
            return [size]
    return [b for b in (32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024) if b <= max_threads]


@pytest.mark.parametrize("name", ["saxpy", "block_reduce_sum", "sgemm_tiled", "modadd256"])
def test_occupancy_calculator_matches_driver(modules, loaded, name, info):
    from ptxforge.compile import compile_ptx
    from ptxforge.occupancy import occupancy

    kernel = loaded[name]
    attrs_ = kernel.attributes
    stats = compile_ptx(modules[name], info.target, backend="nvjitlink")[name]
    entry = modules[name].kernel(name)
    checked = 0
    for block in _block_sizes(entry, attrs_.max_threads_per_block):
        for dynamic in (0, 4096):
            calc = occupancy(attrs_.num_regs, block, info.target, shared=attrs_.shared_size_bytes,
                             dynamic_shared=dynamic, barriers=stats.barriers or 0)
            driver = kernel.max_active_blocks_per_sm(block, dynamic)
            assert calc.active_blocks == driver, (
                f"{name} block={block} dynamic_shared={dynamic}: calculator {calc.active_blocks} "
                f"(limited by {calc.limiting}), driver {driver}")
            checked += 1
    assert checked >= 2


# --- the benchmark runs ---------------------------------------------------------------------

def test_benchmark_quick_mode_runs():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_gpu.py"), "--quick"],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sgemm results agree: True" in proc.stdout
    assert "ratios" in proc.stdout


def test_signature_from_parsed_ptx(info):
    """PTX text from elsewhere: load() reads the signature with ptxforge.parse."""
    from ptxforge.launch import load

    cc = info.compute_capability
    target = "sm_80" if cc >= (8, 0) else f"sm_{cc[0]}{cc[1]}"
    ptx = f""".version 7.0
.target {target}
.address_size 64
.visible .entry fill(.param .u64 out, .param .u32 value)
{{
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [value];
    mov.u32 %r2, %tid.x;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd2, %rd2, %rd3;
    st.global.u32 [%rd2], %r1;
    ret;
}}
"""
    out = np.zeros(32, np.uint32)
    with load(ptx) as mod:
        assert mod["fill"].params[1].type is types.u32
        mod["fill"](out, 0xC0FFEE, grid=1, block=32)
    assert np.all(out == 0xC0FFEE)
