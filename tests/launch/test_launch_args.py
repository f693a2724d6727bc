"""Launching without a GPU: argument conversion, range checks, array protocols, launch shapes,
module images, timing statistics, the no-driver error, and the whole launch path against a
simulated driver (which runs a Python saxpy on the packed parameter block)."""

from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest

from ptxforge import DeviceError, LaunchError
from ptxforge.launch.args import (
    DeviceArg,
    HostArg,
    ScalarArg,
    accepts_array,
    bind_args,
    check_launch_dims,
    convert_arg,
    dlpack_info,
    normalize_dim3,
    pack_param_buffer,
    pack_scalar,
    param_align,
    param_layout,
    param_size,
    stream_handle,
)
from ptxforge.launch.image import cubin_target_problem
from ptxforge.launch.loader import (
    check_cubin_signatures,
    check_target,
    cubin_param_layout,
    module_image,
    ptx_target,
)
from ptxforge.launch.timing import Timing
from ptxforge.ptx import ir, types

SAXPY_PARAMS = (
    ir.Param("n", types.u32),
    ir.Param("a", types.f32),
    ir.Param("x", types.u64, pointer=True, state_space="global"),
    ir.Param("y", types.u64, pointer=True, state_space="global"),
)
SAXPY = ir.Kernel("saxpy", params=SAXPY_PARAMS, body=(ir.Instruction("ret"),))
MODULE = ir.Module("8.0", "sm_80", kernels=(SAXPY,))


# --- scalars --------------------------------------------------------------------------------

@pytest.mark.parametrize("ty, value, expected", [
    (types.u32, 7, "07000000"),
    (types.u32, 2**32 - 1, "ffffffff"),
    (types.s32, -1, "ffffffff"),
    (types.s32, -(2**31), "00000080"),
    (types.b32, -1, "ffffffff"),
    (types.b32, 2**32 - 1, "ffffffff"),
    (types.u8, 255, "ff"),
    (types.s16, -2, "feff"),
    (types.u64, 2**64 - 1, "ff" * 8),
    (types.s64, -(2**63), "00" * 7 + "80"),
    (types.b128, 1, "01" + "00" * 15),
    (types.u32, np.uint32(5), "05000000"),
    (types.u32, True, "01000000"),
])
def test_integer_packing(ty, value, expected):
    assert pack_scalar(ty, value, "p").hex() == expected


@pytest.mark.parametrize("ty, value", [
    (types.u32, -1), (types.u32, 2**32), (types.s32, 2**31), (types.s32, -(2**31) - 1),
    (types.u8, 256), (types.s8, -129), (types.b16, 2**16), (types.b16, -(2**15) - 1),
    (types.u64, 2**64), (types.s64, 2**63),
])
def test_integer_range_errors_name_the_parameter(ty, value):
    with pytest.raises(LaunchError) as info:
        pack_scalar(ty, value, "parameter 'n'")
    message = str(info.value)
    assert "parameter 'n'" in message and "out of range" in message and str(ty) in message


@pytest.mark.parametrize("value", [3.0, 2.5, np.float32(1.0), "3", None, [1]])
def test_integer_rejects_non_integers(value):
    with pytest.raises(LaunchError, match="expected an integer for .u32"):
        pack_scalar(types.u32, value, "n")


@pytest.mark.parametrize("ty, value, expected", [
    (types.f32, 2.0, struct.pack("<f", 2.0)),
    (types.f32, 3, struct.pack("<f", 3.0)),
    (types.f32, np.float64(0.1), struct.pack("<f", 0.1)),
    (types.f32, float("inf"), struct.pack("<f", float("inf"))),
    (types.f64, 0.1, struct.pack("<d", 0.1)),
    (types.f16, 1.5, bytes.fromhex("003e")),
    (types.bf16, 1.0, bytes.fromhex("803f")),
    (types.bf16, 1.0 + 2**-8, bytes.fromhex("803f")),          # tie rounds to even (down)
    (types.bf16, 1.0 + 3 * 2**-8, bytes.fromhex("823f")),      # tie rounds to even (up)
    (types.bf16, -2.0, bytes.fromhex("00c0")),
    (types.f16x2, (1.0, -2.0), bytes.fromhex("003c00c0")),     # low lane first
])
def test_float_packing(ty, value, expected):
    assert pack_scalar(ty, value, "a") == expected


@pytest.mark.parametrize("value, expected", [
    (1.0 + 2**-8 + 2**-40, "813f"),     # just above the tie: up (binary32 first would say 1.0)
    (1.0 + 2**-8 - 2**-40, "803f"),     # just below the tie: down
    (-(1.0 + 3 * 2**-8 + 2**-30), "82bf"),
    (2**-140, "0000"),                  # below half the smallest bf16 subnormal (2**-133)
    (3 * 2**-135, "0100"),              # above the half-way point 2**-134: the smallest subnormal
    (3.3895313892515355e38, "7f7f"),    # the largest finite bf16
])
def test_bf16_rounds_the_double_once(value, expected):
    assert pack_scalar(types.bf16, value, "a").hex() == expected


def _bf16_value(bits: int):
    from fractions import Fraction

    sign = -1 if bits & 0x8000 else 1
    exp, man = (bits >> 7) & 0xFF, bits & 0x7F
    if exp == 0:
        return sign * Fraction(man, 128) * Fraction(2) ** -126
    return sign * (1 + Fraction(man, 128)) * Fraction(2) ** (exp - 127)


def _bf16_reference(x: float) -> int:
    """Nearest-even bf16 of a finite double, by exact rational arithmetic among the bf16
    values around it (no binary32 step)."""
    from fractions import Fraction

    top = struct.unpack("<I", struct.pack("<f", x))[0] >> 16
    candidates = [b for b in (top - 1, top, top + 1) if 0 <= b <= 0xFFFF and b & 0x7F80 != 0x7F80]
    return min(candidates, key=lambda b: (abs(_bf16_value(b) - Fraction(x)), b & 1))


def test_bf16_matches_exact_rounding_on_hard_cases():
    import random

    rnd = random.Random(7)
    cases = []
    for _ in range(12):
        # a bf16 value, then nudged to within a few binary32 ulps of a tie
        base = struct.unpack("<f", struct.pack("<I", rnd.randrange(0x0080, 0x7F00) << 16))[0]
        tie = base * (1 + 2**-8)
        cases += [tie, tie * (1 + 2**-45), tie * (1 - 2**-45)]
    for x in cases:
        got = int.from_bytes(pack_scalar(types.bf16, x, "a"), "little")
        want = _bf16_reference(x)
        assert got == want, (x, hex(got), hex(want))


def test_bf16_nan_stays_nan():
    bits = int.from_bytes(pack_scalar(types.bf16, float("nan"), "a"), "little")
    assert bits & 0x7F80 == 0x7F80 and bits & 0x7F


@pytest.mark.parametrize("ty, value", [(types.f32, 1e39), (types.f16, 70000.0),
                                       (types.bf16, 3.4e38)])
def test_float_overflow_is_an_error(ty, value):
    with pytest.raises(LaunchError, match="out of range|overflows"):
        pack_scalar(ty, value, "a")


@pytest.mark.parametrize("value", ["2.0", 1j, np.zeros(2, np.float32), None])
def test_float_rejects_non_reals(value):
    with pytest.raises(LaunchError, match="expected a real number for .f32"):
        pack_scalar(types.f32, value, "a")


def test_packed_half_needs_a_pair():
    with pytest.raises(LaunchError, match=r"pair \(low, high\)"):
        pack_scalar(types.f16x2, 1.0, "h")


def test_pred_parameter_rejected():
    with pytest.raises(LaunchError, match=".pred cannot be a kernel parameter"):
        convert_arg(ir.Param("p", types.pred), 1)


def test_param_array_bytes_and_sequence():
    p = ir.Param("coeffs", types.u32, align=4, dims=(3,))
    assert param_size(p) == 12 and param_align(p) == 4
    assert convert_arg(p, [1, 2, 3]).data == struct.pack("<3I", 1, 2, 3)
    assert convert_arg(p, struct.pack("<3I", 4, 5, 6)).data == struct.pack("<3I", 4, 5, 6)
    assert convert_arg(p, np.array([7, 8, 9], np.uint32)).data == struct.pack("<3I", 7, 8, 9)
    with pytest.raises(LaunchError, match="expected 12 bytes"):
        convert_arg(p, b"\0" * 8)
    with pytest.raises(LaunchError, match=r"coeffs.*\[1\].*out of range"):
        convert_arg(p, [1, -1, 3], kernel_name="k")


# --- the parameter buffer: layout against ptxas ------------------------------------------------

_LAYOUT_TYPES = [types.u8, types.s8, types.b8, types.u16, types.s16, types.f16, types.b16,
                 types.u32, types.s32, types.f32, types.b32, types.u64, types.s64, types.f64,
                 types.b64, types.b128]


def _random_params(rnd, count):
    params = []
    for i in range(count):
        ty = rnd.choice(_LAYOUT_TYPES)
        shape = rnd.random()
        if shape < 0.15 and ty.bits >= 32:
            params.append(ir.Param(f"p{i}", types.u64, pointer=True, state_space="global",
                                   ptr_align=rnd.choice([None, 4, 16])))
        elif shape < 0.35:
            params.append(ir.Param(f"p{i}", ty, dims=(rnd.randint(1, 7),),
                                   align=rnd.choice([None, None, 4, 8, 16])))
        elif shape < 0.45:
            params.append(ir.Param(f"p{i}", ty, align=rnd.choice([8, 16])))
        else:
            params.append(ir.Param(f"p{i}", ty))
    return tuple(params)


@pytest.fixture(scope="module")
def ptxas_layouts():
    """60 kernels with random parameter lists, compiled once by ptxas (nvJitLink, no GPU)."""
    import random

    from ptxforge.ptx.emit import emit
    from ptxforge.toolchain.compile import compile_ptx
    from ptxforge.toolchain.cubin import read_cubin

    rnd = random.Random(20240601)
    sigs = {f"k{j}": _random_params(rnd, rnd.randint(1, 12)) for j in range(60)}
    sigs["saxpy"] = SAXPY_PARAMS
    module = ir.Module("8.3", "sm_80", kernels=tuple(
        ir.Kernel(name, params=params, body=(ir.Instruction("ret"),)) for name, params in sigs.items()))
    cubin = compile_ptx(emit(module), "sm_80", backend="nvjitlink").cubin
    return sigs, cubin, read_cubin(cubin)


def test_param_layout_is_what_ptxas_records(ptxas_layouts):
    sigs, _, info = ptxas_layouts
    aligned = 0
    for name, params in sigs.items():
        ours = [(s.offset, s.size) for s in param_layout(params)]
        assert ours == list(cubin_param_layout(info, name)), (name, params)
        aligned += any(p.align for p in params)
    assert aligned > 10                                   # .align cases are covered
    assert [(s.offset, s.size) for s in param_layout(SAXPY_PARAMS)] == [(0, 4), (4, 4), (8, 8), (16, 8)]


def test_cubin_signature_check_names_the_parameter(ptxas_layouts):
    sigs, cubin, _ = ptxas_layouts
    check_cubin_signatures(cubin, sigs)                   # all agree
    p = SAXPY_PARAMS
    with pytest.raises(LaunchError, match=r"signatures\['saxpy'\] lists 3 parameters but .* takes 4"):
        check_cubin_signatures(cubin, {"saxpy": p[:3]})
    with pytest.raises(LaunchError, match=r"parameter 'a' is 8 bytes \(\.f64\) but the cubin's is 4"):
        check_cubin_signatures(cubin, {"saxpy": (p[0], ir.Param("a", types.f64), p[2], p[3])})
    # same sizes, but an .align 8 that would move 'a' from byte 4 to byte 8
    with pytest.raises(LaunchError, match=r"parameter 'a' would be at byte 8 but the cubin has it at 4"):
        check_cubin_signatures(cubin, {"saxpy": (p[0], ir.Param("a", types.f32, align=8), p[2], p[3])})
    with pytest.raises(LaunchError, match="the cubin has no kernel 'nope'"):
        check_cubin_signatures(cubin, {"nope": p})
    with pytest.raises(LaunchError, match="parameter 'a' is 8 bytes"):
        module_image(cubin, {"saxpy": (p[0], ir.Param("a", types.f64), p[2], p[3])})


def test_cubin_target_rule():
    from ptxforge.ptx.emit import emit
    from ptxforge.toolchain.compile import compile_ptx

    cubin = compile_ptx(emit(MODULE), "sm_80", backend="nvjitlink").cubin
    assert cubin_target_problem(cubin, (8, 0)) is None
    assert cubin_target_problem(cubin, (8, 6)) is None            # same major, newer minor
    assert "SASS for sm_80" in cubin_target_problem(cubin, (9, 0))
    assert "SASS for sm_80" in cubin_target_problem(cubin, (7, 5))
    assert cubin_target_problem(b"\x7fELF junk", (8, 0)) is None  # left to the driver


def test_packed_param_buffer():
    mixed = ir.Kernel("m", params=(ir.Param("a", types.u8), ir.Param("d", types.f64),
                                   ir.Param("h", types.f16), ir.Param("s", types.b8, align=16, dims=(3,)),
                                   ir.Param("x", types.u64, pointer=True)))
    x = np.zeros(2, np.float32)
    bound = bind_args(mixed, (0xAB, -1.0, 2.0, b"xyz", x))
    with pytest.raises(LaunchError, match=r"argument 4 \('x'\) is a host array"):
        pack_param_buffer(bound)
    raw = pack_param_buffer(bound, {4: 0x1122334455667788})
    assert [(s.offset, s.size) for s in param_layout(mixed.params)] == \
        [(0, 1), (8, 8), (16, 2), (32, 3), (40, 8)]
    assert raw == (b"\xab" + bytes(7) + struct.pack("<d", -1.0) + struct.pack("<e", 2.0) +
                   bytes(14) + b"xyz" + bytes(5) + (0x1122334455667788).to_bytes(8, "little"))
    assert pack_param_buffer(()) == b""


def test_layout_helpers():
    assert param_size(SAXPY_PARAMS[2]) == 8 and param_align(SAXPY_PARAMS[0]) == 4
    assert param_align(ir.Param("w", types.b64, align=4, dims=(2,))) == 8   # never below natural
    assert param_align(ir.Param("h", types.f16, align=8)) == 8
    assert accepts_array(SAXPY_PARAMS[2]) and not accepts_array(SAXPY_PARAMS[0])
    assert accepts_array(ir.Param("raw", types.u64))          # nvcc-style pointer
    assert not accepts_array(ir.Param("d", types.f64))


# --- binding a whole call -------------------------------------------------------------------

def test_bind_positional_and_keyword():
    x = np.ones(4, np.float32)
    y = np.zeros(4, np.float32)
    bound = bind_args(SAXPY, (4,), {"a": 2.0, "x": x, "y": y})
    assert [type(b) for b in bound] == [ScalarArg, ScalarArg, HostArg, HostArg]
    assert bound[0].data == (4).to_bytes(4, "little")
    assert bound[1].data == struct.pack("<f", 2.0)
    assert bound[2].array is x and bound[2].nbytes == 16 and bound[2].writeback


def test_wrong_count_and_names():
    with pytest.raises(LaunchError, match=r"takes 4 arguments .*missing 'x', 'y'"):
        bind_args(SAXPY, (4, 2.0))
    with pytest.raises(LaunchError, match="takes 4 arguments.*got 5 positional"):
        bind_args(SAXPY, (4, 2.0, 0, 0, 0))
    with pytest.raises(LaunchError, match="has no parameter 'z'"):
        bind_args(SAXPY, (4, 2.0, 0, 0), {"z": 1})
    with pytest.raises(LaunchError, match="'n' given both by position and by keyword"):
        bind_args(SAXPY, (4, 2.0, 0, 0), {"n": 4})


def test_negative_for_u32_names_parameter_and_kernel():
    with pytest.raises(LaunchError) as info:
        bind_args(SAXPY, (-1, 2.0, 16, 32))
    assert "parameter 'n' (.u32, argument 0 of kernel 'saxpy')" in str(info.value)
    assert "-1 is out of range for .u32" in str(info.value)


def test_array_for_scalar_and_scalar_for_pointer():
    with pytest.raises(LaunchError, match=r"parameter 'a'.*expected a \.f32 scalar, got a NumPy array"):
        bind_args(SAXPY, (4, np.ones(4, np.float32), 0, 0))
    with pytest.raises(LaunchError, match=r"parameter 'x'.*expected an array or a device address, got float"):
        bind_args(SAXPY, (4, 2.0, 1.5, 0))
    with pytest.raises(LaunchError, match=r"parameter 'y'.*expected an array .*got str"):
        bind_args(SAXPY, (4, 2.0, 0, "y"))


def test_cudeviceptr_for_pointer_and_nvcc_style_u64():
    from cuda.bindings import driver

    raw = ir.Kernel("k", params=(ir.Param("p", types.u64), ir.Param("q", types.u64, pointer=True)))
    bound = bind_args(raw, (driver.CUdeviceptr(0x1000), driver.CUdeviceptr(0x2000)))
    assert [type(b) for b in bound] == [DeviceArg, DeviceArg]
    assert [b.ptr for b in bound] == [0x1000, 0x2000]
    with pytest.raises(LaunchError, match="expected an integer for .u32"):
        convert_arg(ir.Param("n", types.u32), driver.CUdeviceptr(5))


def test_integer_address_for_pointer():
    bound = bind_args(SAXPY, (4, 2.0, 0x7F0000001000, 0))
    assert isinstance(bound[2], DeviceArg) and bound[2].source == "address"
    assert bound[2].data == (0x7F0000001000).to_bytes(8, "little")
    with pytest.raises(LaunchError, match="does not fit"):
        bind_args(SAXPY, (4, 2.0, -5, 0))


def test_non_contiguous_and_readonly_host_arrays():
    base = np.arange(8, dtype=np.float32)
    strided = base[::2]
    arg = convert_arg(SAXPY_PARAMS[2], strided)
    assert arg.array is not strided and arg.target is strided
    assert arg.array.flags.c_contiguous and list(arg.array) == [0, 2, 4, 6]
    frozen = np.ones(4, np.float32)
    frozen.flags.writeable = False
    assert convert_arg(SAXPY_PARAMS[2], frozen).writeback is False
    with pytest.raises(LaunchError, match="numeric array"):
        convert_arg(SAXPY_PARAMS[2], np.array([object()]))


# --- __cuda_array_interface__ ---------------------------------------------------------------

class FakeCudaArray:
    """Exposes __cuda_array_interface__ only (like a CuPy or Numba array)."""

    def __init__(self, **cai):
        self.__cuda_array_interface__ = {"version": 3, "shape": (256,), "typestr": "<f4",
                                         "data": (0x7F00DEAD0000, False), "strides": None,
                                         "stream": None, **cai}


def test_cuda_array_interface_passed_by_address():
    arg = convert_arg(SAXPY_PARAMS[3], FakeCudaArray())
    assert isinstance(arg, DeviceArg) and arg.source == "cuda_array_interface"
    assert arg.ptr == 0x7F00DEAD0000 and arg.nbytes == 1024 and not arg.readonly
    assert arg.data == (0x7F00DEAD0000).to_bytes(8, "little")
    assert arg.stream is None


def test_cuda_array_interface_stream_readonly_and_c_strides():
    arg = convert_arg(SAXPY_PARAMS[3], FakeCudaArray(stream=0x1234, data=(0x10000, True),
                                                     shape=(4, 8), strides=(32, 4)))
    assert arg.stream == 0x1234 and arg.readonly and arg.nbytes == 128


@pytest.mark.parametrize("cai, pattern", [
    ({"shape": (4, 8), "strides": (4, 16)}, "C-contiguous"),
    ({"stream": 0}, "'stream' 0 is not allowed"),
    ({"data": (0, False)}, "null data pointer"),
    ({"data": 5}, r"must be \(pointer, readonly\)"),
    ({"mask": object()}, "masked"),
])
def test_cuda_array_interface_errors(cai, pattern):
    with pytest.raises(LaunchError, match=pattern):
        convert_arg(SAXPY_PARAMS[3], FakeCudaArray(**cai), kernel_name="saxpy", index=3)


def test_cuda_array_interface_v2_and_list_data():
    cai = {"version": 2, "shape": (3, 2), "typestr": "<i8", "data": [0x20000, False], "stream": 0}
    arg = convert_arg(SAXPY_PARAMS[3], type("V2", (), {"__cuda_array_interface__": cai})())
    assert arg.ptr == 0x20000 and arg.nbytes == 48 and arg.stream is None   # v2 has no stream


def test_cuda_array_interface_bad_typestr_and_raising_producer():
    with pytest.raises(LaunchError, match="item size from typestr '<M8\\[ns\\]'"):
        convert_arg(SAXPY_PARAMS[3], FakeCudaArray(typestr="<M8[ns]"))

    class OnOtherDevice:
        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("array lives on device 1")

    with pytest.raises(LaunchError, match=r"parameter 'y'.*reading __cuda_array_interface__ failed: array lives"):
        convert_arg(SAXPY_PARAMS[3], OnOtherDevice(), kernel_name="saxpy", index=3)


def test_cuda_array_for_scalar_param_names_it():
    with pytest.raises(LaunchError, match=r"parameter 'n'.*got a device array FakeCudaArray"):
        bind_args(SAXPY, (FakeCudaArray(), 2.0, 0, 0))


# --- DLPack ---------------------------------------------------------------------------------

from ptxforge.launch.arrays import _DLManagedTensor, _DLManagedTensorVersioned  # noqa: E402

_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_NAMES = {False: ctypes.c_char_p(b"dltensor"), True: ctypes.c_char_p(b"dltensor_versioned")}


class FakeDLPack:
    """A producer on a (pretend) CUDA device: its capsule is a hand-built DLManagedTensor."""

    def __init__(self, data=0x7F0012340000, shape=(2, 3), strides=None, offset=16,
                 device=(2, 0), capsule_device=None, versioned=False, flags=0):
        self.device = device
        self.calls = []
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        cls = _DLManagedTensorVersioned if versioned else _DLManagedTensor
        self._managed = cls()
        if versioned:
            self._managed.version.major, self._managed.version.minor = 1, 0
            self._managed.flags = flags
        t = self._managed.dl_tensor
        t.data = data
        t.device.device_type, t.device.device_id = capsule_device or device
        t.ndim = len(shape)
        t.dtype.code, t.dtype.bits, t.dtype.lanes = 2, 32, 1
        t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        if self._strides is not None:
            t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = offset
        self._versioned = versioned

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None):
        self.calls.append((stream, max_version))
        versioned = self._versioned and max_version is not None
        return _PyCapsule_New(ctypes.addressof(self._managed), _NAMES[versioned], None)


def test_dlpack_cuda_tensor_by_address_with_byte_offset():
    producer = FakeDLPack()
    arg = convert_arg(SAXPY_PARAMS[2], producer, stream=0)
    assert isinstance(arg, DeviceArg) and arg.source == "dlpack"
    assert arg.ptr == 0x7F0012340000 + 16 and arg.nbytes == 24 and arg.device_id == 0
    assert producer.calls == [(1, (1, 0))]          # legacy default stream is spelled 1


def test_dlpack_stream_handle_is_forwarded():
    producer = FakeDLPack()
    convert_arg(SAXPY_PARAMS[2], producer, stream=0xABC)
    assert producer.calls[0][0] == 0xABC


def test_dlpack_versioned_readonly():
    producer = FakeDLPack(versioned=True, flags=1)
    arg = convert_arg(SAXPY_PARAMS[2], producer)
    assert arg.readonly and arg.ptr == 0x7F0012340000 + 16


@pytest.mark.parametrize("kwargs, pattern", [
    ({"strides": (1, 2)}, "C-contiguous"),
    ({"device": (10, 0)}, "ROCm"),
    ({"device": (2, 0), "capsule_device": (1, 0)}, "capsule holds a tensor on CPU"),
])
def test_dlpack_errors(kwargs, pattern):
    with pytest.raises(LaunchError, match=pattern):
        convert_arg(SAXPY_PARAMS[2], FakeDLPack(**kwargs), kernel_name="k")


def test_dlpack_device_must_be_the_kernels():
    with pytest.raises(LaunchError, match=r"parameter 'x'.*expected a tensor on CUDA device 0 "
                                          r"\(the kernel's\), got one on CUDA device 1"):
        convert_arg(SAXPY_PARAMS[2], FakeDLPack(device=(2, 1)), kernel_name="k", device=0)
    arg = convert_arg(SAXPY_PARAMS[2], FakeDLPack(device=(2, 1)), device=1)
    assert arg.device_id == 1
    # managed memory is reachable from every device
    assert convert_arg(SAXPY_PARAMS[2], FakeDLPack(device=(13, 1)), device=0).source == "dlpack"


def test_dlpack_old_producer_without_max_version():
    class Old(FakeDLPack):
        def __dlpack__(self, stream=None):
            self.calls.append((stream, None))
            return _PyCapsule_New(ctypes.addressof(self._managed), _NAMES[False], None)

    producer = Old()
    arg = convert_arg(SAXPY_PARAMS[2], producer, stream=0x40)
    assert producer.calls == [(0x40, None)] and arg.ptr == 0x7F0012340000 + 16


def test_dlpack_newer_major_version_is_refused():
    producer = FakeDLPack(versioned=True)
    producer._managed.version.major = 2
    with pytest.raises(LaunchError, match="DLPack version 2.0 is newer"):
        convert_arg(SAXPY_PARAMS[2], producer)


def test_dlpack_compact_strides_accepted():
    arg = convert_arg(SAXPY_PARAMS[2], FakeDLPack(strides=(3, 1)))
    assert arg.nbytes == 24


def test_dlpack_reader_on_a_real_numpy_capsule():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)[1:]
    info = dlpack_info(a.__dlpack__())
    assert info.ptr == a.ctypes.data
    assert (info.device_type, info.shape, info.bits, info.lanes) == (1, (2, 4), 64, 1)
    assert info.c_contiguous and info.nbytes == 64
    info_t = dlpack_info(a.T.__dlpack__())
    assert not info_t.c_contiguous and info_t.strides == (1, 4)


def test_cpu_dlpack_object_is_copied_like_numpy():
    class CpuTensor:
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, stream=None, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return (1, 0)

    data = np.arange(4, dtype=np.float32)
    arg = convert_arg(SAXPY_PARAMS[2], CpuTensor(data))
    assert isinstance(arg, HostArg) and arg.nbytes == 16
    assert arg.array.ctypes.data == data.ctypes.data   # a view, so results land in `data`


def test_dlpack_reader_rejects_non_capsules():
    with pytest.raises(LaunchError, match="unconsumed DLPack capsule"):
        dlpack_info(object())


# --- launch shape and streams ---------------------------------------------------------------

def test_normalize_dim3():
    assert normalize_dim3(7, "grid") == (7, 1, 1)
    assert normalize_dim3((4, 2), "grid") == (4, 2, 1)
    assert normalize_dim3([4, 2, 3], "grid") == (4, 2, 3)
    assert normalize_dim3(np.int64(3), "grid") == (3, 1, 1)


@pytest.mark.parametrize("grid, block, smem, pattern", [
    (0, 1, 0, r"grid extents must be >= 1, got \(0, 1, 1\)"),
    ((1, 2, 3, 4), 1, 0, "tuple of 1-3 ints"),
    (1.5, 1, 0, "grid must be an int"),
    ((1, 2.0), 1, 0, "only ints"),
    (1, (32, 32, 2), 0, "2048 threads"),
    (1, (1, 1, 65), 0, "block extent z=65"),
    ((1, 65536), 1, 0, "grid extent y=65536"),
    (2**31, 1, 0, "grid extent x"),
    (1, 1, -1, "shared_mem must be >= 0"),
    (1, 1, 1.5, "shared_mem must be a byte count"),
    (True, 1, 0, "grid must be an int"),
])
def test_launch_dim_errors(grid, block, smem, pattern):
    with pytest.raises(LaunchError, match=pattern):
        check_launch_dims(grid, block, smem)


def test_kernel_thread_limit():
    assert check_launch_dims(2, 256, 0, max_threads=256) == ((2, 1, 1), (256, 1, 1), 0)
    with pytest.raises(LaunchError, match="at most 128"):
        check_launch_dims(2, 256, 0, max_threads=128)


def test_stream_handles():
    from cuda.bindings import driver

    class CoreStream:
        def __cuda_stream__(self):
            return (0, 0x5000)

    class TorchStream:
        cuda_stream = 0x6000

    class CupyStream:
        ptr = 0x7000

    assert stream_handle(None) == 0
    assert stream_handle(0x1234) == 0x1234
    assert stream_handle(CoreStream()) == 0x5000
    assert stream_handle(TorchStream()) == 0x6000
    assert stream_handle(CupyStream()) == 0x7000
    assert stream_handle(driver.CUstream(0x8000)) == 0x8000

    class EarlyCoreStream:                       # cuda.core 0.1: a property, not a method
        __cuda_stream__ = (0, 0x9000)

    assert stream_handle(EarlyCoreStream()) == 0x9000

    class BadProtocol:
        def __cuda_stream__(self):
            return 0x1

    with pytest.raises(LaunchError, match=r"__cuda_stream__\(\) must return \(version, handle\)"):
        stream_handle(BadProtocol())
    with pytest.raises(LaunchError, match=">= 0"):
        stream_handle(-3)
    with pytest.raises(LaunchError, match="stream must be"):
        stream_handle("default")


# --- module images and targets --------------------------------------------------------------

def test_module_image_from_ir_module():
    image = module_image(MODULE)
    assert image.kind == "ptx" and image.target == "sm_80"
    assert image.data.endswith(b"\0") and b".entry saxpy" in image.data
    assert image.signatures == {"saxpy": SAXPY_PARAMS}


def test_module_image_from_bytes_and_text():
    assert module_image(b"\x7fELF" + b"\0" * 60).kind == "cubin"
    assert module_image(b"\x50\xed\x55\xba" + b"\0" * 12).kind == "fatbin"
    text = ".version 8.0\n.target sm_86\n.address_size 64\n"
    assert module_image(text.encode()).target == "sm_86"
    sig = {"k": (ir.Param("n", types.u32),)}
    assert module_image(b"\x7fELF", sig).signatures == sig
    with pytest.raises(LaunchError, match="expects an ir.Module, PTX text"):
        module_image(3.5)
    with pytest.raises(LaunchError, match="neither a cubin"):
        module_image(b"\xff\xfe\x00junk")
    with pytest.raises(LaunchError, match="sequence of ir.Param"):
        module_image(MODULE, {"saxpy": ("n",)})


def test_module_image_reads_signatures_of_ptx_text():
    from ptxforge.ptx.emit import emit

    image = module_image(emit(MODULE))
    assert image.signatures == {"saxpy": SAXPY_PARAMS} and image.signature_error is None
    bad = module_image(".version 8.0\n.target sm_80\n.address_size 64\n"
                       ".visible .entry k(.param .u33 n)\n{ ret; }\n")
    assert bad.signatures == {} and bad.signature_error.startswith(
        "ptxforge.ptx.parse could not read the PTX: <ptx>:4:26: unknown type .u33")


def test_ptx_target_and_device_checks():
    assert ptx_target("//x\n.version 8.0\n .target sm_90a\n") == "sm_90a"
    assert ptx_target("no header") is None
    assert check_target("sm_80", (8, 0)) is None
    assert check_target("sm_80", (9, 0)) is None
    assert check_target("sm_86", (8, 9)) is None
    assert "older" in check_target("sm_90", (8, 6))
    assert "only on compute capability 9.0" in check_target("sm_90a", (10, 0))
    assert check_target("sm_100f", (10, 3)) is None
    assert "family target" in check_target("sm_100f", (11, 0))
    assert "unrecognized" in check_target("compute_80", (8, 0))


# --- timing statistics ----------------------------------------------------------------------

def test_timing_statistics_and_rates():
    t = Timing(times_ms=(1.0, 3.0, 2.0, 10.0), warmup=2, bytes=4 * 10**9, flops=2 * 10**9,
               label="k")
    assert t.median_ms == 2.5 and t.min_ms == 1.0 and t.max_ms == 10.0 and t.mean_ms == 4.0
    assert t.gbps == pytest.approx(1600.0) and t.gflops == pytest.approx(800.0)
    assert t.best_gbps == pytest.approx(4000.0)
    assert str(t) == ("k: median 2.5000 ms (min 1.0000, mean 4.0000 over 4 runs), "
                      "1600.0 GB/s, 800.0 GFLOP/s")
    assert Timing(times_ms=(1.0,)).gbps is None and Timing(times_ms=(1.0,)).stdev_ms == 0.0


def test_timing_validation():
    with pytest.raises(LaunchError, match="at least one"):
        Timing(times_ms=())
    with pytest.raises(LaunchError, match=">= 0 ms"):
        Timing(times_ms=(1.0, -1.0))


# --- without a driver -----------------------------------------------------------------------

def _driver_missing() -> bool:
    from ptxforge.launch.device import gpu_unavailable_reason

    return gpu_unavailable_reason() is not None


@pytest.mark.skipif(not _driver_missing(), reason="a GPU and driver are present here")
def test_load_without_driver_says_what_is_missing():
    import ptxforge
    from ptxforge.launch.loader import load

    for attempt in (load, ptxforge.load, load):            # the same answer every time
        with pytest.raises(DeviceError) as info:
            attempt(MODULE)
        message = str(info.value)
        assert ("libcuda" in message or "cuInit failed" in message or "no devices" in message)
        assert "GPU" in message
        # a ptxforge error, not a chained traceback out of cuda.bindings / cuda.pathfinder
        assert info.value.__cause__ is None
        assert info.value.__context__ is None or info.value.__suppress_context__


def test_import_ptxforge_needs_no_driver():
    import subprocess
    import sys

    code = ("import sys, ptxforge, ptxforge.launch.loader, ptxforge.launch.timing, ptxforge.launch.device; "
            "print('cuda.bindings.driver' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"              # the driver bindings load lazily


def test_missing_cuda_bindings_is_a_device_error(monkeypatch):
    import builtins

    import ptxforge.launch.device as device_mod

    real_import = builtins.__import__

    def no_cuda(name, *args, **kwargs):
        if name.startswith("cuda"):
            raise ImportError("No module named 'cuda'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cuda)
    with pytest.raises(DeviceError, match=r"needs the cuda-bindings package \(pip install cuda-bindings\)") as info:
        device_mod.driver()
    assert info.value.__cause__ is None


@pytest.mark.skipif(not _driver_missing(), reason="a GPU and driver are present here")
def test_device_array_and_timing_without_driver_raise_device_error():
    from ptxforge.launch.device import DeviceArray, device_info
    from ptxforge.launch.timing import benchmark

    with pytest.raises(DeviceError):
        DeviceArray.empty(4, np.float32)
    with pytest.raises(DeviceError):
        device_info()
    with pytest.raises(DeviceError):
        benchmark(lambda s: None)


def test_bad_timing_counts_fail_before_touching_the_driver():
    from ptxforge.launch.timing import benchmark

    with pytest.raises(LaunchError, match="repeat must be an int >= 1"):
        benchmark(lambda s: None, repeat=0)
    with pytest.raises(LaunchError, match="warmup must be an int >= 0"):
        benchmark(lambda s: None, warmup=-1)


# --- the echo kernel: a GPU check of every parameter's bytes (tests/launch/test_gpu.py runs it)

ECHO_PARAMS = (
    ir.Param("out", types.u64, pointer=True, state_space="global"),
    ir.Param("a", types.u8), ir.Param("b", types.u16), ir.Param("c", types.f64),
    ir.Param("s", types.b8, align=16, dims=(20,)), ir.Param("d", types.s8),
    ir.Param("f", types.f32), ir.Param("g", types.s64), ir.Param("h", types.f16),
    ir.Param("w", types.b32, align=8, dims=(3,)), ir.Param("z", types.u8),
)
ECHO_ARGS = dict(a=0xA5, b=0xBEEF, c=-2.5, s=bytes(range(100, 120)), d=-3, f=0.375,
                 g=-(2**40) - 7, h=1.5, w=[1, 0xFFFFFFFF, 0x12345678], z=0x5A)


def echo_kernel_ptx(target: str = "sm_80", version: str = "7.0") -> str:
    """PTX of ``echo(out, a, b, ...)``: writes the bytes of every parameter after ``out`` into
    ``out`` at that parameter's own offset in the parameter space, so ``out`` should come back
    equal to :func:`pack_param_buffer` of the arguments (apart from the pointer itself)."""
    slots = {s.name: s for s in param_layout(ECHO_PARAMS)}
    decls = ",\n".join(f"\t.param {'.align %d ' % p.align if p.align else ''}.{p.type.name} "
                       f"{'.ptr.global ' if p.pointer else ''}"
                       f"{p.name}{''.join(f'[{n}]' for n in p.dims)}" for p in ECHO_PARAMS)
    body = ["\tld.param.u64 %rd1, [out];", "\tcvta.to.global.u64 %rd1, %rd1;"]
    width = {1: ("u8", "%rs1"), 2: ("b16", "%rs1"), 4: ("b32", "%r1"), 8: ("b64", "%rd2")}
    for p in ECHO_PARAMS[1:]:
        slot = slots[p.name]
        step = max(p.type.bits // 8, 1)
        kind, reg = width[step]
        for i in range(0, slot.size, step):
            body.append(f"\tld.param.{kind} {reg}, [{p.name}+{i}];")
            body.append(f"\tst.global.{kind} [%rd1+{slot.offset + i}], {reg};")
    return (f".version {version}\n.target {target}\n.address_size 64\n\n"
            f".visible .entry echo(\n{decls}\n)\n{{\n\t.reg .b16 %rs<2>;\n\t.reg .b32 %r<2>;\n"
            f"\t.reg .b64 %rd<3>;\n" + "\n".join(body) + "\n\tret;\n}\n")


def test_echo_kernel_is_accepted_by_ptxas_with_our_layout():
    from ptxforge.ptx.parse import parse
    from ptxforge.toolchain.compile import compile_ptx

    ptx = echo_kernel_ptx()
    assert parse(ptx).entries[0].params == ECHO_PARAMS
    cubin = compile_ptx(ptx, "sm_80", backend="nvjitlink").cubin
    assert list(cubin_param_layout(cubin, "echo")) == [(s.offset, s.size) for s in param_layout(ECHO_PARAMS)]
    bound = bind_args(ir.Kernel("echo", params=ECHO_PARAMS), (0x1000,), ECHO_ARGS)
    raw = pack_param_buffer(bound)
    assert len(raw) == param_layout(ECHO_PARAMS)[-1].offset + 1
    assert raw[param_layout(ECHO_PARAMS)[4].offset:][:20] == bytes(range(100, 120))


def test_docs_quote_the_real_error_message():
    from pathlib import Path

    with pytest.raises(LaunchError) as info:
        bind_args(SAXPY, (-1, 2.0, 16, 32))
    docs = (Path(__file__).resolve().parents[2] / "docs" / "launch.md").read_text()
    assert str(info.value) in " ".join(docs.split())
    assert "has not yet run on a GPU" in docs
