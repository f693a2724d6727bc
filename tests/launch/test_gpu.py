"""ptxforge kernels on a real GPU: every example's numbers, each parameter's bytes as the GPU sees
them, the driver's register counts against nvJitLink's for the device's own architecture, the
occupancy calculator against the driver's occupancy query, device-array and stream paths, and
cuda.core as an independent launcher.

All tests are marked ``gpu``; tests/conftest.py skips them with the reason when no GPU or
driver is present.  NOTE: written against cuda-bindings 13.5 / cuda-core 1.2.2 and checked
against a simulated driver (tests/launch/test_launch_simulated.py), but not yet run on a GPU at the
time of writing (none was available).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from kernel_checks import block_reduction_case, modadd256_case, saxpy_case, sgemm_case

from ptxforge import DeviceError, LaunchError, emit
from ptxforge.ptx import ir, types

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BLOCK = 256
NAMES = ["saxpy", "block_reduce_sum", "sgemm_tiled", "modadd256"]

if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))


@pytest.fixture(scope="module")
def info():
    from ptxforge.launch.device import device_info

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
    from ptxforge.dsl import kernels

    return {
        "saxpy": _build(kernels.saxpy, info),
        "block_reduce_sum": _build(kernels.block_reduce_sum, info, block=BLOCK),
        "sgemm_tiled": _build(kernels.sgemm_tiled, info, tile=16),
        "modadd256": _build(kernels.modadd256, info),
    }


@pytest.fixture(scope="module")
def loaded(modules):
    from ptxforge.launch.loader import load

    out = {name: load(module)[name] for name, module in modules.items()}
    yield out
    for kernel in out.values():
        kernel.module.unload()


@pytest.fixture(scope="module")
def nvjitlink_stats(modules, info):
    """nvJitLink (ptxas) for the device's own sm_XY: {name: KernelStats}, and the cubins."""
    from ptxforge.toolchain.compile import compile_ptx

    compiled = {name: compile_ptx(module, info.target, backend="nvjitlink")
                for name, module in modules.items()}
    return {name: c[name] for name, c in compiled.items()}, {name: c.cubin for name, c in compiled.items()}


# --- the examples' numbers --------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 255, 256, 257, 100_003])
def test_saxpy_matches_numpy(loaded, n):
    from saxpy import check_saxpy

    from ptxforge.launch.device import DeviceArray

    saxpy_case(loaded["saxpy"], n, BLOCK)           # the check the emulator tests run too
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n, dtype=np.float32)
    y0 = rng.standard_normal(n, dtype=np.float32)
    grid = (n + BLOCK - 1) // BLOCK
    # threads past n (the last block's tail, and a whole extra block) leave memory alone
    sentinel = np.full(2 * BLOCK, 7.0, np.float32)
    with DeviceArray.from_host(x) as xd, DeviceArray.from_host(np.concatenate([y0, sentinel])) as yd:
        loaded["saxpy"](n, 1.0, xd, yd, grid=grid + 1, block=BLOCK, sync=True)
        out = yd.to_host()
    np.testing.assert_array_equal(out[n:], sentinel)
    assert check_saxpy(1.0, x, y0, out[:n]) <= 1.0


@pytest.mark.parametrize("grid, n", [(1, 1000), (3, BLOCK * 3), (80, 1_000_003), (1024, 77)])
def test_block_reduction_partials(loaded, grid, n):
    block_reduction_case(loaded["block_reduce_sum"], grid, n, BLOCK)


@pytest.mark.parametrize("m, n, k", [(16, 16, 16), (64, 32, 48), (128, 256, 512), (32, 16, 4096)])
def test_sgemm_matches_numpy(loaded, m, n, k):
    sgemm_case(loaded["sgemm_tiled"], m, n, k)


def test_modadd256_matches_python_integers(loaded):
    modadd256_case(loaded["modadd256"], 5000, BLOCK)


@pytest.mark.parametrize("script", ["saxpy.py", "block_reduction.py", "sgemm.py", "modadd256.py"])
def test_example_script_passes(script):
    proc = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True,
                          text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout and "needs a GPU" not in proc.stdout


# --- arguments as the GPU sees them ----------------------------------------------------------

def test_every_parameter_reaches_the_kernel_byte_for_byte(info):
    """echo() stores each parameter's bytes at its own offset: the GPU's view of the parameter
    space must equal ptxforge's packed buffer (layout, sizes, conversion, endianness)."""
    from test_launch_args import ECHO_ARGS, ECHO_PARAMS, echo_kernel_ptx

    from ptxforge.launch.args import pack_param_buffer, param_layout
    from ptxforge.launch.loader import load

    cc = info.compute_capability
    target = "sm_80" if cc >= (8, 0) else f"sm_{cc[0]}{cc[1]}"
    size = param_layout(ECHO_PARAMS)[-1].offset + param_layout(ECHO_PARAMS)[-1].size
    out = np.zeros(size, np.uint8)
    with load(echo_kernel_ptx(target)) as mod:
        kernel = mod["echo"]
        assert kernel.params == ECHO_PARAMS
        kernel(out, **ECHO_ARGS, grid=1, block=1)
        expected = pack_param_buffer(kernel.bind(0, **ECHO_ARGS))
    first = param_layout(ECHO_PARAMS)[1].offset
    assert out.tobytes()[first:] == expected[first:]


def test_driver_param_layout_matches_ours(loaded, modules):
    """cuFuncGetParamInfo (through cuda.core's Kernel.arguments_info) vs param_layout."""
    core = pytest.importorskip("cuda.core")
    from ptxforge.launch.args import param_layout

    core.Device(0).set_current()
    for name, module in modules.items():
        kernel = core.ObjectCode.from_ptx(emit(module).encode()).get_kernel(name)
        # cuKernelGetParamInfo needs a CUDA >= 12.4 driver: skip only for an older driver;
        # on any other driver a failure to report the layout is a failure of this test
        from ptxforge.launch.device import check, driver

        version = int(check(driver().cuDriverGetVersion(), "cuDriverGetVersion"))
        if version < 12040:
            pytest.skip(f"cuKernelGetParamInfo needs a CUDA 12.4 driver; this one is {version}")
        info = kernel.arguments_info
        theirs = [(int(p.offset), int(p.size)) for p in info]
        ours = [(s.offset, s.size) for s in param_layout(loaded[name].params)]
        assert theirs == ours, name


def test_device_array_roundtrip_and_no_copy_launch(loaded):
    from ptxforge.launch.device import DeviceArray

    n = 4096
    x = np.arange(n, dtype=np.float32)
    with DeviceArray.from_host(x) as xd, DeviceArray.zeros(n, np.float32) as yd:
        np.testing.assert_array_equal(xd.to_host(), x)
        loaded["saxpy"](n, 3.0, xd, yd, grid=n // BLOCK, block=BLOCK, sync=True)
        np.testing.assert_array_equal(yd.to_host(), 3.0 * x)


def test_launch_on_a_cuda_core_stream(loaded):
    core = pytest.importorskip("cuda.core")
    from ptxforge.launch.device import DeviceArray

    dev = core.Device(0)
    dev.set_current()
    stream = dev.create_stream()
    n = 1024
    with DeviceArray.from_host(np.ones(n, np.float32)) as xd, DeviceArray.zeros(n, np.float32) as yd:
        loaded["saxpy"](n, 2.0, xd, yd, grid=n // BLOCK, block=BLOCK, stream=stream)
        stream.sync()
        np.testing.assert_array_equal(yd.to_host(), np.full(n, 2.0, np.float32))


def test_cuda_core_buffers_through_dlpack(loaded):
    """A real DLPack producer: cuda.core Buffers passed without copies."""
    core = pytest.importorskip("cuda.core")
    from ptxforge.launch.device import check, driver

    dev = core.Device(0)
    dev.set_current()
    stream = dev.create_stream()
    n = 2048
    x = np.arange(n, dtype=np.float32)
    bx = dev.allocate(4 * n, stream=stream)
    by = dev.allocate(4 * n, stream=stream)
    drv = driver()
    stream.sync()
    check(drv.cuMemcpyHtoD(int(bx.handle), x.ctypes.data, 4 * n), "cuMemcpyHtoD")
    check(drv.cuMemsetD8(int(by.handle), 0, 4 * n), "cuMemsetD8")
    loaded["saxpy"](n, 0.5, bx, by, grid=n // BLOCK, block=BLOCK, stream=stream)
    stream.sync()
    y = np.empty(n, np.float32)
    check(drv.cuMemcpyDtoH(y.ctypes.data, int(by.handle), 4 * n), "cuMemcpyDtoH")
    np.testing.assert_array_equal(y, 0.5 * x)
    bx.close(stream)
    by.close(stream)


def test_cuda_core_launch_of_the_same_ptx_agrees(loaded, modules):
    """cuda.core as an independent launcher of ptxforge's PTX: the same bits come out."""
    core = pytest.importorskip("cuda.core")
    from ptxforge.launch.device import DeviceArray

    dev = core.Device(0)
    dev.set_current()
    stream = dev.create_stream()
    kernel = core.ObjectCode.from_ptx(emit(modules["saxpy"]).encode()).get_kernel("saxpy")
    n = 5000
    rng = np.random.default_rng(5)
    x, y0 = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    grid = (n + BLOCK - 1) // BLOCK
    with DeviceArray.from_host(x) as xd, DeviceArray.from_host(y0) as yd:
        core.launch(stream, core.LaunchConfig(grid=grid, block=BLOCK), kernel,
                    np.uint32(n), np.float32(1.25), np.uint64(xd.ptr), np.uint64(yd.ptr))
        stream.sync()
        theirs = yd.to_host()
    ours = y0.copy()
    loaded["saxpy"](n, 1.25, x, ours, grid=grid, block=BLOCK)
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("library", ["cupy", "torch"])
def test_third_party_device_arrays(loaded, library):
    lib = pytest.importorskip(library)
    n = 1024
    if library == "cupy":
        x, y = lib.arange(n, dtype=lib.float32), lib.zeros(n, dtype=lib.float32)
        stream = lib.cuda.get_current_stream()
    else:
        if not lib.cuda.is_available():
            pytest.skip("PyTorch without CUDA")
        x = lib.arange(n, dtype=lib.float32, device="cuda")
        y = lib.zeros(n, dtype=lib.float32, device="cuda")
        stream = lib.cuda.current_stream()
    loaded["saxpy"](n, 2.0, x, y, grid=n // BLOCK, block=BLOCK, stream=stream, sync=True)
    result = y.get() if library == "cupy" else y.cpu().numpy()
    np.testing.assert_array_equal(result, 2.0 * np.arange(n, dtype=np.float32))


def test_bad_launches_fail_before_the_gpu(loaded):
    x = np.ones(4, np.float32)
    with pytest.raises(LaunchError, match="parameter 'n'"):
        loaded["saxpy"](-4, 1.0, x, x, grid=1, block=4)
    with pytest.raises(LaunchError, match="threads"):
        loaded["saxpy"](4, 1.0, x, x, grid=1, block=(1024, 2))
    with pytest.raises(LaunchError, match="exceed the .* bytes a block may have"):
        loaded["saxpy"](4, 1.0, x, x, grid=1, block=4, shared_mem=1 << 20)


def test_dynamic_shared_memory_above_the_default_limit(loaded, info):
    """More than 48 KiB - static of dynamic shared memory needs the opt-in attribute."""
    kernel = loaded["sgemm_tiled"]
    smem = min(64 * 1024, kernel.max_shared_optin - kernel.static_shared)
    if smem <= 48 * 1024 - kernel.static_shared:
        pytest.skip(f"{info.target} allows only {kernel.max_shared_optin} bytes per block")
    a = np.ones((16, 16), np.float32)
    c = np.zeros((16, 16), np.float32)
    kernel(a, a, c, 16, 16, 16, grid=1, block=(16, 16), shared_mem=smem)
    np.testing.assert_array_equal(c, np.full((16, 16), 16.0, np.float32))


def test_target_newer_than_device_is_refused(info):
    from ptxforge.launch.loader import load

    major = info.compute_capability[0] + 1
    text = f".version 8.0\n.target sm_{major}0\n.address_size 64\n"
    with pytest.raises(DeviceError, match="build the module for target"):
        load(text)


def test_timing_is_plausible(loaded, info):
    from ptxforge.launch.device import DeviceArray
    from ptxforge.launch.args import LaunchConfig
    from ptxforge.launch.timing import time_launch

    n = 1 << 24
    with DeviceArray.zeros(n, np.float32) as xd, DeviceArray.zeros(n, np.float32) as yd:
        t = time_launch(loaded["saxpy"], n, 1.0, xd, yd,
                        config=LaunchConfig(grid=n // BLOCK, block=BLOCK), warmup=2, repeat=5,
                        bytes=12 * n)
    assert t.runs == 5 and all(ms > 0 for ms in t.times_ms)
    assert 1.0 < t.gbps < 20_000.0        # between a slow PCIe card and well above any HBM


# --- registers: driver vs nvJitLink for the device's own architecture ------------------------

def _nvjitlink_version() -> tuple:
    from cuda.bindings import nvjitlink

    return tuple(nvjitlink.version())


@pytest.mark.parametrize("name", NAMES)
def test_driver_reports_nvjitlink_registers_for_its_cubin(modules, nvjitlink_stats, name, info):
    """The nvJitLink cubin for sm_XY of this device, loaded by the driver:
    CU_FUNC_ATTRIBUTE_NUM_REGS == nvJitLink's count (EIATTR_REGCOUNT)."""
    from ptxforge.launch.loader import load

    nvj = _nvjitlink_version()
    if info.driver_cuda_version[0] < nvj[0]:
        pytest.skip(f"driver supports CUDA {info.driver_cuda_version}, older than nvJitLink {nvj}: "
                    "its cubins need a newer driver")
    stats, cubins = nvjitlink_stats
    sigs = {k.name: k.params for k in modules[name].entries}
    with load(cubins[name], signatures=sigs) as mod:
        assert mod[name].num_regs == stats[name].registers


@pytest.mark.parametrize("name", NAMES)
def test_driver_jit_registers_match_whole_program_ptxas(loaded, modules, name, info):
    """PTX JIT-compiled by the driver vs the whole-program ptxas executable for the same sm_XY.

    The driver's JIT compiles whole-program, as ptxforge's default does; nvJitLink compiles
    relocatable code, which can take more registers (first run on hardware, an H200 with a
    CUDA 13.0 driver: block_reduce_sum 14 vs nvJitLink's 16, sgemm_tiled 32 vs 44).  Exact
    equality is only expected from the same ptxas release, so the test skips (saying both
    versions and both counts) when the driver's CUDA version differs from the ptxas found.
    """
    from ptxforge.errors import BackendUnavailableError
    from ptxforge.toolchain.compile import compile_ptx

    driver_regs = loaded[name].num_regs
    try:
        compiled = compile_ptx(modules[name], info.target, backend="ptxas")
    except BackendUnavailableError as exc:
        pytest.skip(f"no ptxas executable for {info.target}: {exc}")
    assert compiled.mode == "whole-program"
    ptxas_regs = compiled[name].registers
    if tuple(info.driver_cuda_version[:2]) != tuple(compiled.tool_version[:2]):
        pytest.skip(f"driver JIT is CUDA {info.driver_cuda_version}, {compiled.tool}: different "
                    f"ptxas releases (driver {driver_regs} vs ptxas {ptxas_regs} registers)")
    assert driver_regs == ptxas_regs


@pytest.mark.parametrize("name", NAMES)
def test_driver_static_shared_is_ptxas_bytes(loaded, nvjitlink_stats, name, info):
    """CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES against ptxas's own count (the cubin section also
    holds the 1 KiB the driver reserves on sm_90+; which of the two the driver reports is what
    this test finds out)."""
    stats, _ = nvjitlink_stats
    ptxas = stats[name].shared
    reserved = 1024 if info.compute_capability >= (9, 0) and ptxas else 0
    assert loaded[name].static_shared in (ptxas, ptxas + reserved)


# --- occupancy: calculator vs driver -------------------------------------------------------------

def _block_sizes(kernel_ir: ir.Kernel, max_threads: int) -> list:
    for directive, values in kernel_ir.directives:
        if directive == ".reqntid":
            size = 1
            for v in values:
                size *= v
            return [size]
    return [b for b in (32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024) if b <= max_threads]


@pytest.mark.parametrize("name", NAMES)
def test_occupancy_calculator_matches_driver(modules, loaded, nvjitlink_stats, name, info):
    """ptxforge.arch.occupancy with the driver's register count and ptxas's static shared memory
    vs cuOccupancyMaxActiveBlocksPerMultiprocessor, for the same block size and dynamic
    shared memory (sizes that make shared memory the limit included)."""
    from ptxforge.arch.occupancy import occupancy

    kernel = loaded[name]
    attrs_ = kernel.attributes
    stats, _ = nvjitlink_stats
    entry = modules[name].kernel(name)
    checked = 0
    for block in _block_sizes(entry, attrs_.max_threads_per_block):
        for dynamic in (0, 4096, 20_000, 40_000):
            if stats[name].shared + dynamic > 48 * 1024 - 1024:
                continue
            calc = occupancy(attrs_.num_regs, block, info.target, shared=stats[name].shared,
                             dynamic_shared=dynamic, barriers=stats[name].barriers or 0)
            driver = kernel.max_active_blocks_per_sm(block, dynamic)
            assert calc.active_blocks == driver, (
                f"{name} block={block} dynamic_shared={dynamic}: calculator {calc.active_blocks} "
                f"(limited by {calc.limiting}), driver {driver}; registers {attrs_.num_regs}, "
                f"static shared {stats[name].shared} (driver says {attrs_.shared_size_bytes})")
            checked += 1
    assert checked >= 4


# --- the benchmark runs ---------------------------------------------------------------------

def test_benchmark_quick_mode_runs():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_gpu.py"), "--quick"],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sgemm results agree: True" in proc.stdout
    assert "ratios" in proc.stdout


def test_signature_from_parsed_ptx(info):
    """PTX text from elsewhere: load() reads the signature with ptxforge.ptx.parse."""
    from ptxforge.launch.loader import load

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
