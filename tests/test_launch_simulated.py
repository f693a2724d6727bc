"""The launch path end to end against a simulated CUDA driver (no GPU needed).

The fake driver keeps "device memory" in host buffers and runs a Python saxpy when the kernel
is launched, reading n, a, x and y through the ``void**`` parameter block exactly as the real
driver would.  So these tests check the packing of the parameter block, copy-in/copy-out of
NumPy arrays, write-back into non-contiguous arrays, the JIT-log and target checks, freeing,
and the event-timing loop.  Only the real driver's own behaviour is left to tests/test_gpu.py.
"""

from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest

import ptxforge.device as device_mod
from ptxforge import DeviceError, LaunchError, ir, types
from ptxforge.launch import load
from ptxforge.timing import benchmark, time_launch

SAXPY_PARAMS = (
    ir.Param("n", types.u32),
    ir.Param("a", types.f32),
    ir.Param("x", types.u64, pointer=True, state_space="global"),
    ir.Param("y", types.u64, pointer=True, state_space="global"),
)
MODULE = ir.Module("8.0", "sm_80", kernels=(
    ir.Kernel("saxpy", params=SAXPY_PARAMS, body=(ir.Instruction("ret"),)),))


class FakeDriver:
    """Just enough of cuda.bindings.driver, with the real enum and handle types."""

    def __init__(self, cc=(8, 0), load_error=None):
        from cuda.bindings import driver as real

        self.real = real
        for name in ("CUresult", "CUstream", "CUdeviceptr", "CUjit_option", "CUfunction_attribute",
                     "CUdevice_attribute", "CUevent_flags"):
            setattr(self, name, getattr(real, name))
        self.ok = real.CUresult.CUDA_SUCCESS
        self.cc = cc
        self.load_error = load_error
        self.memory: dict[int, ctypes.Array] = {}
        self.freed: list[int] = []
        self.launches: list[tuple] = []
        self.loaded: list[bytes] = []
        self.elapsed = iter([])
        self.events_live = 0

    # context
    def cuInit(self, flags):
        return (self.ok,)

    def cuDeviceGetCount(self):
        return (self.ok, 1)

    def cuDeviceGet(self, ordinal):
        return (self.ok, ordinal)

    def cuDevicePrimaryCtxRetain(self, dev):
        return (self.ok, "ctx")

    def cuCtxSetCurrent(self, ctx):
        return (self.ok,)

    def cuDeviceGetAttribute(self, attr, dev):
        a = self.CUdevice_attribute
        return (self.ok, {a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: self.cc[0],
                          a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: self.cc[1]}[attr])

    def cuGetErrorName(self, err):
        return (self.ok, err.name.encode())

    def cuGetErrorString(self, err):
        return (self.ok, b"simulated")

    # modules
    def cuModuleLoadDataEx(self, image, n, options, values):
        assert n == len(options) == len(values)
        opt = self.CUjit_option
        logs = dict(zip(options, values))
        assert isinstance(logs[opt.CU_JIT_INFO_LOG_BUFFER], bytearray)
        assert logs[opt.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES] == len(logs[opt.CU_JIT_INFO_LOG_BUFFER])
        self.loaded.append(bytes(image))
        if self.load_error is not None:
            message = b"ptxas fatal   : Unresolved extern function 'nope'\0"
            logs[opt.CU_JIT_ERROR_LOG_BUFFER][: len(message)] = message
            return (self.load_error, None)
        message = b"ptxas info    : Used 10 registers, 380 bytes cmem[0]\0"
        logs[opt.CU_JIT_INFO_LOG_BUFFER][: len(message)] = message
        return (self.ok, "module")

    def cuModuleGetFunction(self, module, name):
        if name != b"saxpy":
            return (self.CUresult.CUDA_ERROR_NOT_FOUND, None)
        return (self.ok, "saxpy-fn")

    def cuModuleUnload(self, module):
        return (self.ok,)

    def cuFuncGetAttribute(self, attr, fn):
        a = self.CUfunction_attribute
        return (self.ok, {a.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024,
                          a.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: 48 * 1024,
                          a.CU_FUNC_ATTRIBUTE_NUM_REGS: 10}.get(attr, 0))

    def cuFuncGetParamCount(self, fn):
        return (self.ok, 4)

    def cuFuncGetParamInfo(self, fn, index):
        return (self.ok, (0, 4, 8, 16)[index], (4, 4, 8, 8)[index])

    # memory
    def cuMemAlloc(self, size):
        buf = (ctypes.c_char * size)()
        addr = ctypes.addressof(buf)
        self.memory[addr] = buf
        return (self.ok, self.CUdeviceptr(addr))

    def cuMemFree(self, ptr):
        self.freed.append(int(ptr))
        return (self.ok,)

    def cuMemcpyHtoDAsync(self, dst, src, size, stream):
        assert isinstance(dst, self.CUdeviceptr) and isinstance(stream, self.CUstream)
        ctypes.memmove(int(dst), src, size)
        return (self.ok,)

    def cuMemcpyDtoHAsync(self, dst, src, size, stream):
        ctypes.memmove(dst, int(src), size)
        return (self.ok,)

    def cuStreamSynchronize(self, stream):
        return (self.ok,)

    # launch: a Python saxpy reading the real parameter block
    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        assert isinstance(stream, self.CUstream) and extra == 0
        slots = (ctypes.c_void_p * 4).from_address(params)
        n = ctypes.c_uint32.from_address(slots[0]).value
        a = ctypes.c_float.from_address(slots[1]).value
        x_ptr = ctypes.c_uint64.from_address(slots[2]).value
        y_ptr = ctypes.c_uint64.from_address(slots[3]).value
        threads = gx * gy * gz * bx * by * bz
        x = (ctypes.c_float * n).from_address(x_ptr)
        y = (ctypes.c_float * n).from_address(y_ptr)
        for i in range(min(n, threads)):
            y[i] = ctypes.c_float(a * x[i] + y[i]).value
        self.launches.append(((gx, gy, gz), (bx, by, bz), smem, int(stream), n, a))
        return (self.ok,)

    # events
    def cuEventCreate(self, flags):
        self.events_live += 1
        return (self.ok, object())

    def cuEventDestroy(self, event):
        self.events_live -= 1
        return (self.ok,)

    def cuEventRecord(self, event, stream):
        return (self.ok,)

    def cuEventSynchronize(self, event):
        return (self.ok,)

    def cuEventElapsedTime(self, start, end):
        return (self.ok, next(self.elapsed))


@pytest.fixture
def fake(monkeypatch):
    """Install a FakeDriver as cuda.bindings.driver and reset ptxforge's device state."""
    import cuda.bindings

    drv = FakeDriver()
    monkeypatch.setattr(cuda.bindings, "driver", drv)
    monkeypatch.setattr(device_mod, "_INITIALIZED", False)
    monkeypatch.setattr(device_mod, "_INIT_ERROR", None)
    monkeypatch.setattr(device_mod, "_CONTEXTS", {})
    return drv


def test_load_keeps_jit_log_and_signatures(fake):
    mod = load(MODULE)
    assert "Used 10 registers" in mod.jit_log
    assert fake.loaded[0].endswith(b"\0") and b".entry saxpy" in fake.loaded[0]
    assert mod.names == ("saxpy",) and "saxpy" in mod
    assert mod["saxpy"].params == SAXPY_PARAMS
    assert mod["saxpy"] is mod["saxpy"]
    assert mod["saxpy"].num_regs == 10


def test_saxpy_through_the_parameter_block(fake):
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 0.5, np.float32)
    expected = np.float32(2.5) * x + y
    mod = load(MODULE)
    mod["saxpy"](n, 2.5, x, y, grid=(n + 255) // 256, block=256)
    np.testing.assert_array_equal(y, expected)
    assert fake.launches == [((4, 1, 1), (256, 1, 1), 0, 0, n, 2.5)]
    assert len(fake.freed) == 2                      # both device copies released
    np.testing.assert_array_equal(x, np.arange(n, dtype=np.float32))


def test_keywords_stream_and_strided_output(fake):
    x = np.ones(8, np.float32)
    backing = np.zeros(16, np.float32)
    y = backing[::2]                                 # not contiguous: written back through a copy
    mod = load(MODULE)
    mod["saxpy"](8, a=3.0, x=x, y=y, grid=1, block=32, stream=0x77)
    np.testing.assert_array_equal(backing[::2], np.full(8, 3.0, np.float32))
    np.testing.assert_array_equal(backing[1::2], np.zeros(8, np.float32))
    assert fake.launches[0][3] == 0x77


def test_readonly_input_is_not_written_back(fake):
    x = np.ones(4, np.float32)
    y = np.ones(4, np.float32)
    y.flags.writeable = False
    load(MODULE)["saxpy"](4, 1.0, x, y, grid=1, block=4)
    np.testing.assert_array_equal(y, np.ones(4, np.float32))   # kernel wrote 2.0 on the device


def test_device_array_interface_passes_the_address(fake):
    n = 16
    x_dev = (ctypes.c_float * n)(*range(n))
    y_dev = (ctypes.c_float * n)()

    class Dev:
        def __init__(self, buf):
            self.__cuda_array_interface__ = {"version": 3, "shape": (n,), "typestr": "<f4",
                                             "data": (ctypes.addressof(buf), False),
                                             "strides": None, "stream": None}

    load(MODULE)["saxpy"](n, 2.0, Dev(x_dev), Dev(y_dev), grid=1, block=n)
    assert list(y_dev) == [2.0 * i for i in range(n)]
    assert fake.freed == []                            # nothing allocated, nothing copied


def test_errors_before_anything_is_launched(fake):
    mod = load(MODULE)
    x = np.ones(4, np.float32)
    with pytest.raises(LaunchError, match="parameter 'n'.*-1 is out of range for .u32"):
        mod["saxpy"](-1, 1.0, x, x, grid=1, block=4)
    with pytest.raises(LaunchError, match="missing 'y'"):
        mod["saxpy"](4, 1.0, x, grid=1, block=4)
    with pytest.raises(LaunchError, match="grid= and block= are required"):
        mod["saxpy"](4, 1.0, x, x)
    with pytest.raises(LaunchError, match="block extents must be >= 1"):
        mod["saxpy"](4, 1.0, x, x, grid=1, block=0)
    assert fake.launches == [] and fake.memory == {}


def test_unknown_kernel_and_signature(fake):
    mod = load(MODULE)
    with pytest.raises(LaunchError, match="no signature for kernel 'other'"):
        mod["other"]
    with pytest.raises(LaunchError, match="has no kernel 'other'"):
        mod.kernel("other", params=SAXPY_PARAMS)


def test_signature_checked_against_driver_param_layout(fake):
    wrong = SAXPY_PARAMS[:3]
    with pytest.raises(LaunchError, match="lists 3 parameters but the loaded code takes 4"):
        load(MODULE).kernel("saxpy", params=wrong)
    resized = (ir.Param("n", types.u64),) + SAXPY_PARAMS[1:]
    with pytest.raises(LaunchError, match="'n' is 8 bytes in the signature but 4"):
        load(MODULE).kernel("saxpy", params=resized)


def test_cubin_needs_explicit_params(fake):
    mod = load(b"\x7fELF" + b"\0" * 64)
    with pytest.raises(LaunchError, match="no signature"):
        mod["saxpy"]
    kernel = mod.kernel("saxpy", params=SAXPY_PARAMS)
    y = np.zeros(2, np.float32)
    kernel(2, 1.0, np.ones(2, np.float32), y, grid=1, block=2)
    np.testing.assert_array_equal(y, [1.0, 1.0])


def test_jit_failure_carries_the_log_and_a_hint(fake):
    fake.load_error = fake.CUresult.CUDA_ERROR_INVALID_PTX
    with pytest.raises(DeviceError) as info:
        load(MODULE)
    text = str(info.value)
    assert "CUDA_ERROR_INVALID_PTX" in text and "Unresolved extern function 'nope'" in text
    assert "driver's ptxas rejected the PTX" in text


def test_target_newer_than_device_is_refused_before_jit(fake):
    fake.cc = (7, 5)
    with pytest.raises(DeviceError, match="targets sm_80 but the device is sm_75"):
        load(MODULE)
    assert fake.loaded == []


def test_benchmark_collects_event_times(fake):
    fake.elapsed = iter([0.4, 0.2, 0.3])
    calls = []
    t = benchmark(lambda s: calls.append(s), warmup=2, repeat=3, stream=0x9, bytes=3 * 10**6,
                  label="copy")
    assert calls == [0x9] * 5
    assert t.times_ms == (0.4, 0.2, 0.3) and t.median_ms == 0.3
    assert t.gbps == pytest.approx(10.0) and fake.events_live == 0


def test_time_launch_copies_once_and_launches_warmup_plus_repeat(fake):
    fake.elapsed = iter([1.0, 2.0, 3.0, 4.0])
    x = np.ones(4, np.float32)
    y = np.zeros(4, np.float32)
    kernel = load(MODULE)["saxpy"]
    t = time_launch(kernel, 4, 1.0, x, y, grid=1, block=4, warmup=2, repeat=4, bytes=48)
    assert len(fake.launches) == 6 and t.runs == 4 and t.warmup == 2
    assert t.median_ms == 2.5 and t.label == "saxpy"
    np.testing.assert_array_equal(y, np.full(4, 6.0, np.float32))   # 6 launches of y += x
    assert len(fake.freed) == 2


def test_dynamic_shared_memory_above_48k_sets_the_attribute(fake):
    seen = []
    fake.cuFuncSetAttribute = lambda fn, attr, value: (seen.append((attr, value)), (fake.ok,))[1]
    x = np.ones(1, np.float32)
    load(MODULE)["saxpy"](1, 1.0, x, x, grid=1, block=1, shared_mem=64 * 1024)
    attr = fake.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    assert seen == [(attr, 64 * 1024)] and fake.launches[0][2] == 64 * 1024


def test_packed_param_bytes_reach_the_driver(fake):
    captured = {}

    def capture(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        slots = (ctypes.c_void_p * 4).from_address(params)
        captured["n"] = ctypes.string_at(slots[0], 4)
        captured["a"] = ctypes.string_at(slots[1], 4)
        captured["x"] = ctypes.string_at(slots[2], 8)
        return (fake.ok,)

    fake.cuLaunchKernel = capture
    load(MODULE)["saxpy"](2**32 - 1, -0.0, 0xDEADBEEF000, 0, grid=1, block=1)
    assert captured == {"n": b"\xff\xff\xff\xff", "a": struct.pack("<f", -0.0),
                        "x": (0xDEADBEEF000).to_bytes(8, "little")}
