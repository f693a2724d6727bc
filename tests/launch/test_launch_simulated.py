"""The launch path end to end against a simulated CUDA driver (no GPU needed).

This is not a GPU result: no kernel runs on a GPU here.  The simulated driver is built to
catch the mistakes a first GPU run would otherwise find:

* every call is checked against the installed cuda.bindings signature (the argument count
  parsed from the real function's docstring), and the types the real bindings need
  (``CUstream``, ``CUdeviceptr``, ``CUjit_option``, a ``void**`` address for kernelParams);
* "loading" PTX compiles it with nvJitLink (the real ptxas) for the simulated device, so the
  parameter layout (``cuFuncGetParamInfo``), register count and static shared memory the
  simulated driver reports are what ptxas produced for that PTX;
* a launch copies each parameter from the ``kernelParams`` pointers into a parameter buffer at
  ptxas's offsets and sizes, exactly as the driver does, and runs a Python saxpy on it;
* dynamic shared memory above ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` (48 KiB minus
  the static shared memory until raised) fails the launch, as on a GPU.

What only a GPU can check is in tests/launch/test_gpu.py.
"""

from __future__ import annotations

import ctypes
import functools
import struct

import numpy as np
import pytest
from cuda.bindings import driver as REAL_DRIVER  # kept: the fixture replaces the module attribute

import ptxforge.launch.device as device_mod
from ptxforge import DeviceError, LaunchError, emit, parse
from ptxforge.dsl import kernels
from ptxforge.launch.args import pack_param_buffer, param_layout
from ptxforge.launch.loader import cubin_param_layout, load
from ptxforge.launch.args import LaunchConfig
from ptxforge.launch.timing import benchmark, time_launch
from ptxforge.ptx import ir, types

SAXPY = kernels.saxpy(target="sm_80")
SAXPY_PARAMS = SAXPY.kernel("saxpy").params
OPTIN = {(8, 0): 166912, (9, 0): 232448, (7, 5): 65536}   # MAX_SHARED_MEMORY_PER_BLOCK_OPTIN

MIXED_PTX = """.version 8.3
.target sm_80
.address_size 64
.visible .entry mixed(.param .u8 a, .param .u64 .ptr .global .align 16 p, .param .u16 b,
    .param .f64 c, .param .align 16 .b8 s[20], .param .u8 d, .param .b8 e[3], .param .f32 f,
    .param .s64 g, .param .f16 h, .param .b128 q, .param .s8 z)
{
    ret;
}
"""


# --- the installed bindings' signatures -----------------------------------------------------

@functools.lru_cache(maxsize=None)
def _arity(name: str) -> int:
    """How many arguments cuda.bindings.driver.<name> takes (from its docstring signature)."""
    head = getattr(REAL_DRIVER, name).__doc__.split("\n", 1)[0]
    inner = head[head.index("(") + 1: head.rindex(")")]
    depth, count = 0, 1 if inner.strip() else 0
    for ch in inner:
        depth += ch in "[("
        depth -= ch in "])"
        count += ch == "," and depth == 0
    return count


@functools.lru_cache(maxsize=None)
def _cubin(ptx: bytes, sm: str) -> bytes:
    from ptxforge.toolchain.compile import compile_ptx

    return compile_ptx(ptx.rstrip(b"\0").decode(), sm, backend="nvjitlink").cubin


def _nvjitlink_log_registers(ptx: str, arch: str) -> int:
    """"Used N registers" from nvJitLink's -verbose info log, through cuda.bindings directly."""
    import re

    from cuda.bindings import nvjitlink as nvj

    handle = nvj.create(2, [f"-arch={arch}", "-verbose"])
    try:
        data = ptx.encode()
        nvj.add_data(handle, nvj.InputType.PTX, data, len(data), "k.ptx")
        nvj.complete(handle)
        log = bytearray(nvj.get_info_log_size(handle))
        nvj.get_info_log(handle, log)
    finally:
        nvj.destroy(handle)
    counts = re.findall(r"Used (\d+) registers", log.decode(errors="replace"))
    assert len(counts) == 1, log
    return int(counts[0])


class FakeFunction:
    def __init__(self, name: str, cubin: bytes):
        from ptxforge.toolchain.cubin import read_cubin

        self.name = name
        self.layout = cubin_param_layout(cubin, name)
        info = read_cubin(cubin).kernel(name)
        self.regs = info.registers
        self.shared = info.shared
        self.dyn_max = 48 * 1024 - self.shared


class FakeDriver:
    """Just enough of cuda.bindings.driver, with the real enum and handle types."""

    def __init__(self, cc=(8, 0), load_error=None):
        real = REAL_DRIVER
        for name in ("CUresult", "CUstream", "CUdeviceptr", "CUjit_option", "CUfunction_attribute",
                     "CUdevice_attribute", "CUevent_flags"):
            setattr(self, name, getattr(real, name))
        self.ok = real.CUresult.CUDA_SUCCESS
        self.cc = cc
        self.load_error = load_error
        self.memory: dict[int, ctypes.Array] = {}
        self.freed: list[int] = []
        self.launches: list[dict] = []
        self.loaded: list[bytes] = []
        self.calls: list[tuple] = []
        self.elapsed = iter([])
        self.events_live = 0
        self.set_attributes: list[tuple] = []
        self.run_kernels = True                      # False: record launches only
        self.variables: dict[str, int] = {}          # module variables: name -> size
        self.globals: dict[bytes, object] = {}
        self.cooperative: list[str] = []

    def __getattribute__(self, name):
        attr = object.__getattribute__(self, name)
        if name.startswith("cu") and callable(attr):
            expected = _arity(name)

            def call(*args):
                assert len(args) == expected, (f"{name} takes {expected} arguments in the "
                                               f"installed cuda.bindings, called with {len(args)}")
                object.__getattribute__(self, "calls").append((name, args))
                return attr(*args)
            return call
        return attr

    # context
    def cuInit(self, flags):
        assert flags == 0
        return (self.ok,)

    def cuDeviceGetCount(self):
        return (self.ok, 1)

    def cuDeviceGet(self, ordinal):
        return (self.ok, ordinal)

    def cuDevicePrimaryCtxRetain(self, dev):
        return (self.ok, "ctx")

    def cuCtxSetCurrent(self, ctx):
        return (self.ok,)

    def cuCtxSynchronize(self):
        return (self.ok,)

    def cuDeviceGetAttribute(self, attr, dev):
        a = self.CUdevice_attribute
        assert isinstance(attr, a)
        return (self.ok, {a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: self.cc[0],
                          a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: self.cc[1],
                          a.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: OPTIN[self.cc],
                          }[attr])

    def cuGetErrorName(self, err):
        return (self.ok, err.name.encode())

    def cuGetErrorString(self, err):
        return (self.ok, b"simulated")

    # modules: PTX is compiled by nvJitLink for the simulated device
    def cuModuleLoadDataEx(self, image, n, options, values):
        assert isinstance(image, bytes) and n == len(options) == len(values)
        opt = self.CUjit_option
        assert all(isinstance(o, opt) for o in options)
        logs = dict(zip(options, values))
        for buf, size in ((opt.CU_JIT_INFO_LOG_BUFFER, opt.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES),
                          (opt.CU_JIT_ERROR_LOG_BUFFER, opt.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)):
            assert isinstance(logs[buf], bytearray) and logs[size] == len(logs[buf])
        self.loaded.append(image)
        if self.load_error is not None:
            message = b"ptxas fatal   : Unresolved extern function 'nope'\0"
            logs[opt.CU_JIT_ERROR_LOG_BUFFER][: len(message)] = message
            return (self.load_error, None)
        if image.startswith(b"\x7fELF"):
            cubin = image
        else:
            assert image.endswith(b"\0"), "PTX handed to the driver must be NUL-terminated"
            cubin = _cubin(image, f"sm_{self.cc[0]}{self.cc[1]}")
        message = b"ptxas info    : Used 10 registers\0"
        logs[opt.CU_JIT_INFO_LOG_BUFFER][: len(message)] = message
        return (self.ok, cubin)

    def cuModuleGetFunction(self, module, name):
        assert isinstance(name, bytes)
        try:
            return (self.ok, FakeFunction(name.decode(), module))
        except LaunchError:
            return (self.CUresult.CUDA_ERROR_NOT_FOUND, None)

    def cuModuleUnload(self, module):
        return (self.ok,)

    def cuFuncGetAttribute(self, attr, fn):
        a = self.CUfunction_attribute
        assert isinstance(attr, a)
        return (self.ok, {a.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024,
                          a.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: fn.dyn_max,
                          a.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: fn.shared,
                          a.CU_FUNC_ATTRIBUTE_NUM_REGS: fn.regs}.get(attr, 0))

    def cuFuncSetAttribute(self, fn, attr, value):
        assert attr == self.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        self.set_attributes.append((attr, value))
        if fn.shared + value > OPTIN[self.cc]:
            return (self.CUresult.CUDA_ERROR_INVALID_VALUE,)
        fn.dyn_max = value
        return (self.ok,)

    def cuFuncGetParamCount(self, fn):
        return (self.ok, len(fn.layout))

    def cuFuncGetParamInfo(self, fn, index):
        return (self.ok, *fn.layout[index])

    # memory
    def cuMemAlloc(self, size):
        buf = (ctypes.c_char * size)()
        addr = ctypes.addressof(buf)
        self.memory[addr] = buf
        return (self.ok, self.CUdeviceptr(addr))

    def cuMemFree(self, ptr):
        self.freed.append(int(ptr))
        return (self.ok,)

    def cuMemsetD8(self, ptr, value, count):
        ctypes.memset(int(ptr), value, count)
        return (self.ok,)

    def cuMemcpyHtoD(self, dst, src, size):
        assert isinstance(dst, self.CUdeviceptr) and isinstance(src, int)
        ctypes.memmove(int(dst), src, size)
        return (self.ok,)

    def cuMemcpyDtoH(self, dst, src, size):
        assert isinstance(src, self.CUdeviceptr) and isinstance(dst, int)
        ctypes.memmove(dst, int(src), size)
        return (self.ok,)

    def cuMemcpyHtoDAsync(self, dst, src, size, stream):
        assert isinstance(dst, self.CUdeviceptr) and isinstance(stream, self.CUstream)
        assert isinstance(src, int)
        ctypes.memmove(int(dst), src, size)
        return (self.ok,)

    def cuMemcpyDtoHAsync(self, dst, src, size, stream):
        assert isinstance(src, self.CUdeviceptr) and isinstance(stream, self.CUstream)
        ctypes.memmove(dst, int(src), size)
        return (self.ok,)

    def cuStreamSynchronize(self, stream):
        assert isinstance(stream, self.CUstream)
        return (self.ok,)

    def cuStreamWaitEvent(self, stream, event, flags):
        assert isinstance(stream, self.CUstream) and flags == 0
        return (self.ok,)

    def cuModuleGetGlobal(self, module, name):
        """A module variable: ``self.variables`` names their sizes; each is zeroed memory."""
        assert isinstance(name, bytes)
        size = self.variables.get(name.decode())
        if size is None:
            return (self.CUresult.CUDA_ERROR_NOT_FOUND, None, 0)
        if name not in self.globals:
            self.globals[name] = self.cuMemAlloc(size)[1]
        return (self.ok, self.globals[name], size)

    def cuLaunchCooperativeKernel(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params):
        self.cooperative.append(fn.name)
        return object.__getattribute__(self, "_launch")(fn, gx, gy, gz, bx, by, bz, smem,
                                                         stream, params)

    # launch: copy each parameter into the buffer at ptxas's offset, then run the kernel
    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        assert extra == 0
        return object.__getattribute__(self, "_launch")(fn, gx, gy, gz, bx, by, bz, smem,
                                                         stream, params)

    def _launch(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params):
        assert isinstance(stream, self.CUstream)
        assert params is None or isinstance(params, int), "kernelParams: the address of a void*[]"
        if smem > fn.dyn_max:
            return (self.CUresult.CUDA_ERROR_INVALID_VALUE,)
        size = max((o + s for o, s in fn.layout), default=0)
        buffer = bytearray(size)
        if fn.layout:
            slots = (ctypes.c_void_p * len(fn.layout)).from_address(params)
            for i, (offset, nbytes) in enumerate(fn.layout):
                buffer[offset:offset + nbytes] = ctypes.string_at(slots[i], nbytes)
        record = {"kernel": fn.name, "grid": (gx, gy, gz), "block": (bx, by, bz), "smem": smem,
                  "stream": int(stream), "params": bytes(buffer)}
        self.launches.append(record)
        if fn.name == "saxpy" and self.run_kernels:
            n, a = struct.unpack_from("<If", buffer, 0)
            x_ptr, y_ptr = struct.unpack_from("<QQ", buffer, 8)
            x = (ctypes.c_float * n).from_address(x_ptr)
            y = (ctypes.c_float * n).from_address(y_ptr)
            for i in range(min(n, gx * gy * gz * bx * by * bz)):
                y[i] = ctypes.c_float(a * x[i] + y[i]).value
        return (self.ok,)

    # events
    def cuEventCreate(self, flags):
        assert isinstance(flags, int)
        self.events_live += 1
        return (self.ok, object())

    def cuEventDestroy(self, event):
        self.events_live -= 1
        return (self.ok,)

    def cuEventRecord(self, event, stream):
        assert isinstance(stream, self.CUstream)
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


def _called(fake, name):
    return [args for call, args in fake.calls if call == name]


# --- the simulated driver itself ------------------------------------------------------------

def test_arity_is_read_from_the_installed_bindings():
    assert _arity("cuLaunchKernel") == 11
    assert _arity("cuModuleLoadDataEx") == 4
    assert _arity("cuCtxCreate") == 3        # CUDA 13: (ctxCreateParams, flags, dev)
    assert _arity("cuDeviceGetCount") == 0
    assert _arity("cuEventElapsedTime") == 2


def test_the_fake_refuses_a_wrong_argument_count(fake):
    with pytest.raises(AssertionError, match="cuLaunchKernel takes 11 arguments"):
        fake.cuLaunchKernel(1, 2, 3)


# --- loading ----------------------------------------------------------------------------------

def test_load_keeps_jit_log_and_signatures(fake):
    mod = load(SAXPY)
    assert "Used 10 registers" in mod.jit_log
    assert fake.loaded[0].endswith(b"\0") and b".entry saxpy" in fake.loaded[0]
    assert mod.names == ("saxpy",) and "saxpy" in mod
    assert mod["saxpy"].params == SAXPY_PARAMS
    assert mod["saxpy"] is mod["saxpy"]
    # the fake driver reads the count from the cubin with ptxforge's reader; check it against
    # nvJitLink's own verbose log, read here without ptxforge
    assert mod["saxpy"].num_regs == _nvjitlink_log_registers(emit(SAXPY), "sm_80")
    # the signature was checked against the driver's layout, parameter by parameter
    assert len(_called(fake, "cuFuncGetParamInfo")) == 4


def test_jit_failure_carries_the_log_and_a_hint(fake):
    fake.load_error = fake.CUresult.CUDA_ERROR_INVALID_PTX
    with pytest.raises(DeviceError) as info:
        load(SAXPY)
    text = str(info.value)
    assert "CUDA_ERROR_INVALID_PTX" in text and "Unresolved extern function 'nope'" in text
    assert "driver's ptxas rejected the PTX" in text
    assert info.value.cuda_error == "CUDA_ERROR_INVALID_PTX"      # kept for callers to branch on


def test_target_newer_than_device_is_refused_before_jit(fake):
    fake.cc = (7, 5)
    with pytest.raises(DeviceError, match="targets sm_80 but the device is sm_75"):
        load(SAXPY)
    assert fake.loaded == []


def test_max_registers_is_checked_and_passed_as_a_jit_option(fake):
    with pytest.raises(LaunchError, match="max_registers must be an int in 16..255"):
        load(SAXPY, max_registers=8)
    load(SAXPY, max_registers=32)
    (_, _, options, values), = _called(fake, "cuModuleLoadDataEx")
    assert dict(zip(options, values))[fake.CUjit_option.CU_JIT_MAX_REGISTERS] == 32


def test_unknown_kernel_and_signature(fake):
    mod = load(SAXPY)
    with pytest.raises(LaunchError, match="no signature for kernel 'other'"):
        mod["other"]
    with pytest.raises(LaunchError, match="has no kernel 'other'"):
        mod.kernel("other", params=SAXPY_PARAMS)


def test_signature_checked_against_driver_param_layout(fake):
    wrong = SAXPY_PARAMS[:3]
    with pytest.raises(LaunchError, match="lists 3 parameters but the loaded code takes 4"):
        load(SAXPY).kernel("saxpy", params=wrong)
    resized = (ir.Param("n", types.u64),) + SAXPY_PARAMS[1:]
    with pytest.raises(LaunchError, match="'n' is 8 bytes in the signature but 4"):
        load(SAXPY).kernel("saxpy", params=resized)
    # same sizes, different order of the 4-byte and 8-byte parameters: offsets differ
    moved = (SAXPY_PARAMS[0], ir.Param("x", types.u64, pointer=True), ir.Param("a", types.f32),
             ir.Param("y", types.u64, pointer=True))
    with pytest.raises(LaunchError):
        load(SAXPY).kernel("saxpy", params=moved)


def test_cubin_needs_explicit_params_which_are_checked_offline(fake):
    cubin = _cubin(emit(SAXPY).encode(), "sm_80")
    mod = load(cubin)
    with pytest.raises(LaunchError, match="no signature"):
        mod["saxpy"]
    with pytest.raises(LaunchError, match=r"signatures\['saxpy'\]: parameter 'n' is 8 bytes"):
        mod.kernel("saxpy", params=(ir.Param("n", types.u64),) + SAXPY_PARAMS[1:])
    kernel = mod.kernel("saxpy", params=SAXPY_PARAMS)
    y = np.zeros(2, np.float32)
    kernel(2, 1.0, np.ones(2, np.float32), y, grid=1, block=2)
    np.testing.assert_array_equal(y, [1.0, 1.0])


def test_cubin_for_another_architecture_is_refused(fake):
    cubin = _cubin(emit(kernels.saxpy(target="sm_90")).encode(), "sm_90")
    with pytest.raises(DeviceError, match="SASS for sm_90.*device is sm_80"):
        load(cubin, signatures={"saxpy": SAXPY_PARAMS})
    assert fake.loaded == []


# --- launching ----------------------------------------------------------------------------------

def test_saxpy_through_the_parameter_block(fake):
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 0.5, np.float32)
    expected = np.float32(2.5) * x + y
    mod = load(SAXPY)
    mod["saxpy"](n, 2.5, x, y, grid=(n + 255) // 256, block=256)
    np.testing.assert_array_equal(y, expected)
    (launch,) = fake.launches
    assert (launch["grid"], launch["block"], launch["smem"], launch["stream"]) == \
        ((4, 1, 1), (256, 1, 1), 0, 0)
    assert launch["params"][:8] == struct.pack("<If", n, 2.5)
    assert len(fake.freed) == 2                      # both device copies released
    np.testing.assert_array_equal(x, np.arange(n, dtype=np.float32))


def test_mixed_parameter_types_reach_the_driver_at_ptxas_offsets(fake):
    mod = load(MIXED_PTX)
    kernel = mod["mixed"]
    args = dict(a=200, p=0x7F00_0000_1000, b=0xBEEF, c=-2.5, s=bytes(range(20)), d=7,
                e=[1, 2, 3], f=0.375, g=-(2**40), h=1.5, q=(1 << 127) + 5, z=-3)
    kernel(**args, grid=1, block=1)
    bound = kernel.bind(**args)
    expected = pack_param_buffer(bound)
    (launch,) = fake.launches
    assert launch["params"] == expected
    layout = {s.name: s for s in param_layout(kernel.params)}
    raw = launch["params"]

    def at(name, fmt):
        return struct.unpack_from(fmt, raw, layout[name].offset)[0]

    assert at("a", "<B") == 200 and at("p", "<Q") == 0x7F00_0000_1000
    assert at("b", "<H") == 0xBEEF and at("c", "<d") == -2.5
    assert raw[layout["s"].offset:layout["s"].offset + 20] == bytes(range(20))
    assert layout["s"].offset % 16 == 0 and layout["q"].offset % 16 == 0
    assert at("d", "<B") == 7 and raw[layout["e"].offset:layout["e"].offset + 3] == b"\1\2\3"
    assert at("f", "<f") == 0.375 and at("g", "<q") == -(2**40) and at("h", "<e") == 1.5
    assert int.from_bytes(raw[layout["q"].offset:layout["q"].offset + 16], "little") == (1 << 127) + 5
    assert at("z", "<b") == -3


def test_keywords_stream_and_strided_output(fake):
    x = np.ones(8, np.float32)
    backing = np.zeros(16, np.float32)
    y = backing[::2]                                 # not contiguous: written back through a copy
    mod = load(SAXPY)
    mod["saxpy"](8, a=3.0, x=x, y=y, grid=1, block=32, stream=0x77)
    np.testing.assert_array_equal(backing[::2], np.full(8, 3.0, np.float32))
    np.testing.assert_array_equal(backing[1::2], np.zeros(8, np.float32))
    assert fake.launches[0]["stream"] == 0x77
    assert all(int(args[3]) == 0x77 for args in _called(fake, "cuMemcpyHtoDAsync"))


def test_stream_objects_give_their_handle(fake):
    class CoreStream:                                # the __cuda_stream__ protocol (cuda.core)
        def __cuda_stream__(self):
            return (0, 0x5000)

    class TorchStream:
        cuda_stream = 0x6000

    x = np.ones(4, np.float32)
    kernel = load(SAXPY)["saxpy"]
    kernel(4, 1.0, x, x.copy(), grid=1, block=4, stream=CoreStream())
    kernel(4, 1.0, x, x.copy(), grid=1, block=4, stream=TorchStream())
    assert [launch["stream"] for launch in fake.launches] == [0x5000, 0x6000]


def test_readonly_input_is_not_written_back(fake):
    x = np.ones(4, np.float32)
    y = np.ones(4, np.float32)
    y.flags.writeable = False
    load(SAXPY)["saxpy"](4, 1.0, x, y, grid=1, block=4)
    np.testing.assert_array_equal(y, np.ones(4, np.float32))   # kernel wrote 2.0 on the device
    (copy_back,) = _called(fake, "cuMemcpyDtoHAsync")          # x only
    assert copy_back[0] == x.ctypes.data


class Dev:
    """A device array (memory is a host buffer of the simulated driver)."""

    def __init__(self, buf, n, stream=None):
        self.__cuda_array_interface__ = {"version": 3, "shape": (n,), "typestr": "<f4",
                                         "data": (ctypes.addressof(buf), False),
                                         "strides": None, "stream": stream}


def test_device_array_interface_passes_the_address(fake):
    n = 16
    x_dev = (ctypes.c_float * n)(*range(n))
    y_dev = (ctypes.c_float * n)()
    load(SAXPY)["saxpy"](n, 2.0, Dev(x_dev, n), Dev(y_dev, n), grid=1, block=n)
    assert list(y_dev) == [2.0 * i for i in range(n)]
    assert fake.freed == [] and _called(fake, "cuMemAlloc") == []   # no copies


def test_cuda_array_interface_stream_is_waited_on(fake):
    n = 4
    x_dev, y_dev = (ctypes.c_float * n)(1, 1, 1, 1), (ctypes.c_float * n)()
    kernel = load(SAXPY)["saxpy"]
    kernel(n, 1.0, Dev(x_dev, n, stream=0x55), Dev(y_dev, n), grid=1, block=n)
    (record,) = _called(fake, "cuEventRecord")
    assert int(record[1]) == 0x55                                # recorded on the producer's
    (wait,) = _called(fake, "cuStreamWaitEvent")
    assert int(wait[0]) == 0                                     # the launch stream waits
    assert fake.events_live == 0
    fake.calls.clear()
    kernel(n, 1.0, Dev(x_dev, n, stream=1), Dev(y_dev, n), grid=1, block=n)   # legacy == 0
    assert _called(fake, "cuStreamWaitEvent") == []


def test_dlpack_tensor_on_the_simulated_device(fake):
    n = 8
    x_dev = (ctypes.c_float * n)(*range(n))
    y_dev = (ctypes.c_float * n)()
    from test_launch_args import FakeDLPack

    x = FakeDLPack(data=ctypes.addressof(x_dev), shape=(n,), offset=0, versioned=True)
    y = FakeDLPack(data=ctypes.addressof(y_dev), shape=(n,), offset=0)
    load(SAXPY)["saxpy"](n, 0.5, x, y, grid=1, block=n, stream=0x99)
    assert list(y_dev) == [0.5 * i for i in range(n)]
    assert x.calls == [(0x99, (1, 0))] and y.calls == [(0x99, (1, 0))]


def test_dlpack_tensor_on_another_device_is_refused(fake):
    from test_launch_args import FakeDLPack

    x = FakeDLPack(shape=(4,), device=(2, 1))
    with pytest.raises(LaunchError, match="expected a tensor on CUDA device 0.*device 1"):
        load(SAXPY)["saxpy"](4, 1.0, x, x, grid=1, block=4)
    assert fake.launches == [] and x.calls == []


def test_errors_before_anything_is_launched(fake):
    mod = load(SAXPY)
    x = np.ones(4, np.float32)
    fake.calls.clear()
    with pytest.raises(LaunchError, match="parameter 'n'.*-1 is out of range for .u32"):
        mod["saxpy"](-1, 1.0, x, x, grid=1, block=4)
    with pytest.raises(LaunchError, match="missing 'y'"):
        mod["saxpy"](4, 1.0, x, grid=1, block=4)
    with pytest.raises(LaunchError, match="grid= and block= are required"):
        mod["saxpy"](4, 1.0, x, x)
    with pytest.raises(LaunchError, match="block extents must be >= 1"):
        mod["saxpy"](4, 1.0, x, x, grid=1, block=0)
    with pytest.raises(LaunchError, match=r"parameter 'a'.*expected a real number"):
        mod["saxpy"](4, "2", x, x, grid=1, block=4)
    assert fake.launches == [] and fake.memory == {}
    assert _called(fake, "cuMemAlloc") == [] and _called(fake, "cuLaunchKernel") == []


def test_dynamic_shared_memory_beyond_the_default_opts_in(fake):
    sgemm = load(kernels.sgemm_tiled(target="sm_80"))["sgemm_tiled"]
    assert sgemm.static_shared == 2048
    a = np.zeros((16, 16), np.float32)
    # 47 KiB is below 48 KiB but above 48 KiB - 2 KiB static: the kernel must opt in first
    sgemm(a, a, a.copy(), 16, 16, 16, grid=1, block=(16, 16), shared_mem=47 * 1024)
    attr = fake.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    assert fake.set_attributes == [(attr, 47 * 1024)] and fake.launches[0]["smem"] == 47 * 1024
    sgemm(a, a, a.copy(), 16, 16, 16, grid=1, block=(16, 16), shared_mem=1024)
    assert len(fake.set_attributes) == 1                          # no need the second time
    with pytest.raises(LaunchError, match=r"plus 2048 static exceed the 166912 bytes.*at most 164864"):
        sgemm(a, a, a.copy(), 16, 16, 16, grid=1, block=(16, 16), shared_mem=164865)
    assert len(fake.launches) == 2


def test_packed_param_bytes_reach_the_driver(fake):
    fake.run_kernels = False                         # the addresses below are not memory
    load(SAXPY)["saxpy"](2**32 - 1, -0.0, 0xDEADBEEF000, 0, grid=1, block=1)
    raw = fake.launches[0]["params"]
    assert raw == b"\xff\xff\xff\xff" + struct.pack("<f", -0.0) + \
        (0xDEADBEEF000).to_bytes(8, "little") + bytes(8)


# --- DeviceArray --------------------------------------------------------------------------------

def test_device_array_round_trip_and_interface(fake):
    from ptxforge.launch.device import DeviceArray

    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    with DeviceArray.from_host(host) as d:
        cai = d.__cuda_array_interface__
        assert cai == {"version": 3, "shape": (2, 3), "typestr": "<f4", "data": (d.ptr, False),
                       "strides": None, "stream": None}
        np.testing.assert_array_equal(d.to_host(), host)
        with pytest.raises(DeviceError, match="expected 24 bytes, got 8"):
            d.copy_from_host(np.zeros(2, np.float32))
    assert fake.freed == [d.ptr]
    with pytest.raises(DeviceError, match="freed"):
        d.to_host()
    z = DeviceArray.zeros(5, np.int32)
    np.testing.assert_array_equal(z.to_host(), np.zeros(5, np.int32))
    z.free()


# --- timing -------------------------------------------------------------------------------------

def test_benchmark_collects_event_times(fake):
    fake.elapsed = iter([0.4, 0.2, 0.3])
    calls = []
    t = benchmark(lambda s: calls.append(s), warmup=2, repeat=3, stream=0x9, bytes=3 * 10**6,
                  label="copy")
    assert calls == [0x9] * 5
    assert t.times_ms == (0.4, 0.2, 0.3) and t.median_ms == 0.3
    assert t.gbps == pytest.approx(10.0) and fake.events_live == 0
    # the events bracket each run on the benchmark's stream
    assert all(int(args[1]) == 0x9 for args in _called(fake, "cuEventRecord"))
    assert len(_called(fake, "cuEventRecord")) == 6


def test_time_launch_copies_once_and_launches_warmup_plus_repeat(fake):
    fake.elapsed = iter([1.0, 2.0, 3.0, 4.0])
    x = np.ones(4, np.float32)
    y = np.zeros(4, np.float32)
    kernel = load(SAXPY)["saxpy"]
    t = time_launch(kernel, 4, 1.0, x, y, config=LaunchConfig(grid=1, block=4), warmup=2,
                    repeat=4, bytes=48)
    assert len(fake.launches) == 6 and t.runs == 4 and t.warmup == 2
    assert t.median_ms == 2.5 and t.label == "saxpy"
    np.testing.assert_array_equal(y, np.full(4, 6.0, np.float32))   # 6 launches of y += x
    assert len(fake.freed) == 2 and len(_called(fake, "cuMemcpyHtoDAsync")) == 2


def test_parse_gives_the_signature_of_foreign_ptx(fake):
    ptx = MIXED_PTX.replace("mixed", "other")
    assert [p.name for p in parse(ptx).entries[0].params][:3] == ["a", "p", "b"]
    mod = load(ptx)
    assert mod.names == ("other",)
    assert [(s.offset, s.size) for s in param_layout(mod["other"].params)] == \
        list(cubin_param_layout(_cubin(ptx.encode(), "sm_80"), "other"))


# --- issue 25: shared host memory, module variables, cooperative launches -------------------

def test_one_array_passed_twice_is_one_device_allocation(fake):
    x = np.arange(300, dtype=np.float32)
    load(SAXPY)["saxpy"](300, 2.0, x, x, grid=2, block=256)
    assert len(_called(fake, "cuMemAlloc")) == 1 and len(fake.freed) == 1
    np.testing.assert_array_equal(x, 3 * np.arange(300, dtype=np.float32))


def test_overlapping_views_are_one_device_allocation(fake):
    buf = np.arange(1, 66, dtype=np.float32)
    x, y = buf[:64], buf[1:]   # y[i] = 2 x[i] + y[i] reads what y[i - 1] wrote (the fake runs in order)
    want = buf.copy()
    for i in range(64):
        want[i + 1] = np.float32(2) * want[i] + want[i + 1]
    load(SAXPY)["saxpy"](64, 2.0, x, y, grid=1, block=64)
    (alloc,) = _called(fake, "cuMemAlloc")
    assert int(alloc[0]) == 65 * 4
    np.testing.assert_array_equal(buf, want)


def test_module_set_and_get_through_cuModuleGetGlobal(fake):
    fake.variables = {"coef": 16}
    mod = load(SAXPY)
    mod.set("coef", np.array([1.5, 2.5], np.float32))
    assert mod.get("coef", np.float32).tolist() == [1.5, 2.5, 0.0, 0.0]
    with pytest.raises(LaunchError, match="holds 16 bytes, got 20"):
        mod.set("coef", np.zeros(5, np.float32))
    with pytest.raises(LaunchError, match="no __constant__ or __device__ variable named 'nope'"):
        mod.get("nope")


def test_cooperative_launch_uses_cuLaunchCooperativeKernel(fake):
    x, y = np.ones(32, np.float32), np.ones(32, np.float32)
    load(SAXPY)["saxpy"](32, 2.0, x, y, grid=1, block=32, cooperative=True)
    assert fake.cooperative == ["saxpy"] and not _called(fake, "cuLaunchKernel")
    np.testing.assert_array_equal(y, np.full(32, 3, np.float32))
