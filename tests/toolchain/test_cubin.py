"""The cubin reader agrees with ptxas's log on registers, stack and spills."""

from pathlib import Path

import pytest

from ptxforge.arch.occupancy import occupancy
from ptxforge.errors import CompileError, PtxforgeError
from ptxforge.ptx.directives import with_version
from ptxforge.toolchain.backends import PtxasBackend, find_ptxas, ptxas_version
from ptxforge.toolchain.compile import compile_ptx
from ptxforge.toolchain.cubin import parse_nv_info, read_cubin, sm_from_e_flags

from compile_sources import CALLS, SHARED, nvrtc
from corpus_util import corpus_ptx, corpus_sources

PTX = Path(__file__).parents[1] / "data" / "ptx"
KERNELS = ["axpy.ptx", "pressure.ptx", "local_array.ptx", "barrier.ptx", "two_kernels.ptx"]


@pytest.mark.parametrize("target", ["sm_75", "sm_80", "sm_90", "sm_120"])
@pytest.mark.parametrize("fname", KERNELS)
def test_cubin_agrees_with_log(fname, target):
    ptx = (PTX / fname).read_text()
    for cap in (None, 32):
        c = compile_ptx(ptx, target, backend="nvjitlink", max_registers=cap)
        info = read_cubin(c.cubin)
        assert info.sm == int(target[3:])
        log = c.ptxas_log
        for k in c:
            ck = info.kernel(k.name)
            f = log.function(k.name)
            assert ck.registers == f.registers == k.registers
            assert ck.frame_size == f.stack_frame == k.stack_frame == k.body_stack_frame
            assert ck.min_stack_size == f.stack_frame
            # spill traffic is in the frame: spills > 0 implies frame beyond local arrays
            assert (f.spill_stores > 0) == (ck.frame_size > k.local_array_bytes)
            if target in ("sm_75", "sm_80"):
                assert ck.text_info_registers == f.registers
            else:
                assert ck.text_info_registers == 0
            # sm_90+: .nv.shared.<k> holds the 1 KB reserved too; the reader keeps it apart
            assert ck.shared == (f.shared or 0) == k.shared
            assert ck.reserved_shared == (1024 if int(target[3:]) >= 90 and f.shared else 0)
            assert ck.constant0 > 0


TARGETS = ["sm_75", "sm_80", "sm_90", "sm_120"]


def _check_against_log(c, target):
    """Registers, stack, spills and shared memory: cubin == ptxas log == KernelStats."""
    info = read_cubin(c.cubin)
    assert info.sm == int(target[3:])
    log = c.ptxas_log
    assert len(c) > 0
    for k in c:
        ck = info.kernel(k.name)
        f = log.function(k.name)
        # A kernel that calls functions: ptxas's 'Used N registers' is the kernel's own body,
        # while EIATTR_REGCOUNT (and nvJitLink's summary) is the maximum over the call graph
        # (calls.cu call_chain on sm_80: 24 vs 60).  Elsewhere all three agree.
        summary = log.summary(k.name)
        assert ck.registers == (summary.registers if summary else f.registers), k.name
        # KernelStats carries what the kernel runs with (the cubin's count) and the body's
        assert ck.registers == k.registers >= f.registers == k.body_registers, k.name
        if {fn.name for fn in log.functions} <= {e.name for e in c}:  # no device functions
            assert ck.registers == f.registers, k.name
            assert k.stack_frame == k.body_stack_frame, k.name   # callees: builtins at most
            assert (k.spill_stores, k.spill_loads) == (f.spill_stores, f.spill_loads), k.name
        assert ck.frame_size == f.stack_frame == k.body_stack_frame, k.name
        # the call graph's stack: EIATTR_MIN_STACK_SIZE (= nvJitLink's "N stack") when ptxas
        # could bound it, else a lower bound (recursion: calls.cu call_chain)
        if k.stack_known:
            nvj = summary.stack if summary else ck.min_stack_size
            assert k.stack_frame == ck.min_stack_size == nvj, k.name
        else:
            assert ck.min_stack_size == 0xFFFFFFFF and k.stack_frame >= k.body_stack_frame
        if f.spill_stores:  # spill slots live in the frame, beyond the declared local arrays
            assert ck.frame_size > k.local_array_bytes, k.name
        if target in ("sm_75", "sm_80"):
            assert ck.text_info_registers == f.registers, k.name
        else:
            assert ck.text_info_registers == 0, k.name
        # sm_90+: .nv.shared.<k> includes the 1 KB reserved block; the reader keeps it apart
        assert ck.shared == (f.shared or 0) == k.shared, k.name
        assert ck.reserved_shared in ((0, 1024) if int(target[3:]) >= 90 else (0,)), k.name


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source", corpus_sources())
def test_cubin_agrees_with_log_on_every_corpus_kernel(source, target):
    # Each module is compiled once per target.  The corpus PTX is NVRTC's for sm_80; for
    # sm_75 its .target is lowered, which ptxas refuses where a kernel uses sm_80 features
    # (mma.sync bf16/f16 shapes, cp.async ...): for those pairs the refusal's reason is checked.
    ptx = corpus_ptx(source, "sm_80")
    if target == "sm_75":
        ptx = ptx.replace(".target sm_80", ".target sm_75")
    try:
        c = compile_ptx(ptx, target, backend="nvjitlink")
    except CompileError as exc:
        if target != "sm_75":
            raise
        # a refusal is only right for an sm_80 feature: assert that is the reason, no skip
        first = next((d for d in exc.diagnostics if d.severity in ("error", "fatal")), None)
        message = first.message if first else str(exc)
        assert "requires .target sm_80 or higher" in message, (source, message)
        return
    _check_against_log(c, target)


def test_cubin_caps_barriers_and_ntid():
    c = compile_ptx((PTX / "barrier.ptx").read_text(), "sm_80")
    k = c.cubin_info().kernel("reverse_tile")
    assert k.barriers == 2 and k.max_threads == (256, 1, 1) and k.max_registers == 255
    c = compile_ptx((PTX / "two_kernels.ptx").read_text(), "sm_90")
    assert c.cubin_info().kernel("second").max_registers == 32
    c = compile_ptx((PTX / "pressure.ptx").read_text(), "sm_80", max_registers=40)
    assert c.cubin_info().kernel("pressure").max_registers == 40


def test_cuda12_ptxas_sm70_barriers_in_section_flags():
    c = compile_ptx((PTX / "barrier.ptx").read_text(), "sm_70", backend="ptxas")
    assert c.cubin_info().kernel("reverse_tile").barriers == 2 == c["reverse_tile"].barriers


def test_nv_info_record_formats():
    blob = bytes([0x03, 0x1b, 0x20, 0x00,       # HVAL MAXREG_COUNT 32
                  0x01, 0x35, 0x00, 0x00,       # NVAL
                  0x02, 0x6d, 0x05, 0x00,       # BVAL 5
                  0x04, 0x2f, 0x08, 0x00, 1, 0, 0, 0, 40, 0, 0, 0])  # SVAL REGCOUNT sym1=40
    recs = parse_nv_info(blob)
    assert [(r.name, r.format) for r in recs] == [("MAXREG_COUNT", 3), ("0x35", 1), ("0x6d", 2),
                                                  ("REGCOUNT", 4)]
    assert recs[0].value == 32 and recs[1].value is None and recs[2].value == 5
    assert recs[3].words() == (1, 40)
    with pytest.raises(PtxforgeError, match="format byte 0x07"):
        parse_nv_info(bytes([0x07, 0x01, 0, 0]))
    with pytest.raises(PtxforgeError, match="truncated"):
        parse_nv_info(bytes([0x04, 0x2f, 0x08, 0x00, 1, 0]))


def test_not_an_elf():
    with pytest.raises(PtxforgeError, match="ELF64"):
        read_cubin(b"hello world" * 10)


# --- e_flags: the SM under both ELF ABI layouts ------------------------------------------------

def test_sm_from_e_flags_recorded_values():
    # recorded from real cubins: CUDA 12.9 ptxas (ABI 7) and CUDA 13.0 ptxas / nvJitLink 13.5
    # (ABI 8); 0x460546 is the one that read as sm 5 when bits 8..15 were taken for any ABI
    assert sm_from_e_flags(0x00460546, 7) == 70
    assert sm_from_e_flags(0x005a0d5a, 7) == 90        # sm_90a: 0x800 is the 'a' flag
    assert sm_from_e_flags(0x06005004, 8) == 80
    assert sm_from_e_flags(0x0600640a, 8) == 100       # sm_100a from ptxas 12.9
    assert sm_from_e_flags(0x06007902, 8) == 121


def _ptxas(major):
    found = [p for p in find_ptxas() if ptxas_version(p)[0] == major]
    return found[0] if found else None


# (tool, target, ELF ABI version): the CUDA 12.9 ptxas writes the old layout up to sm_90a and
# the new one from sm_100 on; CUDA 13 (ptxas, nvJitLink) always the new one
E_FLAGS_CASES = ([("ptxas12", t, 7) for t in ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89",
                                                "sm_90", "sm_90a")]
                 + [("ptxas12", t, 8) for t in ("sm_100", "sm_100a", "sm_120")]
                 + [("ptxas13", t, 8) for t in ("sm_75", "sm_80", "sm_90", "sm_100", "sm_110",
                                                "sm_120")]
                 + [("nvjitlink", t, 8) for t in ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90",
                                                  "sm_100", "sm_103", "sm_120", "sm_121")])


@pytest.mark.parametrize("tool,target,abi", E_FLAGS_CASES)
def test_cubin_sm_for_every_toolchain(tool, target, abi):
    from ptxforge.dsl import kernels
    from ptxforge.ptx.emit import emit

    if tool == "nvjitlink":
        backend, version = "nvjitlink", (8, 8)
    else:
        exe = _ptxas(12 if tool == "ptxas12" else 13)
        if exe is None:
            pytest.skip(f"no CUDA {tool[-2:]} ptxas executable here")
        backend, version = PtxasBackend(exe), ((8, 8) if tool == "ptxas12" else (9, 0))
    import re

    ptx = re.sub(r"(?m)^\.target \S+", f".target {target}",
                 with_version(emit(kernels.saxpy()), version))
    c = compile_ptx(ptx, target, backend=backend)
    info = read_cubin(c.cubin)
    assert (info.sm, info.abi_version) == (int(target[3:].rstrip("af")), abi), hex(info.e_flags)


# --- shared memory: the kernel's own bytes, the 1 KB reserved on sm_90+ apart ------------------

OWN_SHARED = {"none": 0, "bar": 0, "dyn": 0, "stat": 400, "both": 256}


@pytest.mark.parametrize("target", ["sm_80", "sm_90", "sm_120"])
@pytest.mark.parametrize("backend", ["nvjitlink", "ptxas13"])
def test_static_shared_is_the_kernels_own(target, backend):
    ptx = nvrtc(SHARED, "shared", "sm_80")
    if backend == "ptxas13":
        exe = _ptxas(13)
        if exe is None:
            pytest.skip("no CUDA 13 ptxas executable here")
        backend, ptx = PtxasBackend(exe), with_version(ptx, (9, 0))
    c = compile_ptx(ptx.replace(".target sm_80", f".target {target}"), target, backend=backend)
    info = c.cubin_info()
    for k in c:
        ck = info.kernel(k.name)
        assert ck.shared == k.shared == OWN_SHARED[k.name], k.name
        section = next((s.size for s in info.sections if s.name == ".nv.shared." + k.name), 0)
        assert section == ck.shared + ck.reserved_shared, k.name
        if target == "sm_80":
            assert ck.reserved_shared == 0
        else:   # the section, where there is one, starts with the 1 KB the driver reserves
            assert ck.reserved_shared == (1024 if section else 0), k.name
    if target == "sm_90":
        # a kernel with only extern __shared__: 0 static bytes; the occupancy model adds the
        # 1 KB reserved once (it used to be counted as the kernel's static shared, then again)
        dyn = c["dyn"]
        assert dyn.shared == 0
        assert occupancy(dyn.registers, 256, "sm_90", shared=dyn.shared,
                         dynamic_shared=1024).allocated_shared_per_block == 2048


# --- the call graph -----------------------------------------------------------------------------

def test_call_graph_records():
    # a relocatable, linked cubin keeps every function and the call graph (whole-program ptxas
    # folds the callees into the kernels and records only extern calls such as vprintf)
    c = compile_ptx(corpus_ptx("calls", "sm_80"), "sm_80", backend="nvjitlink")
    info = c.cubin_info()
    assert info.reachable("call_chain") == ("_Z13fib_recursivei", "_Z5poly3ffff",
                                            "_Z6rotate7double2d",
                                            "__internal_trig_reduction_slowpathd")
    # indirect calls through a table: the possible targets count, so does printf's vprintf
    assert info.reachable("call_indirect") == ("_Z6op_addff", "_Z6op_mulff", "vprintf")
    assert ("_Z13fib_recursivei", "_Z13fib_recursivei") in info.calls     # recursion
    chain = info.kernel("call_chain")
    assert chain.callees == ("_Z13fib_recursivei", "_Z6rotate7double2d", "_Z5poly3ffff")
    assert not chain.call_stack_known and info.kernel("call_indirect").call_stack_known
    k = compile_ptx(nvrtc(CALLS, "calls"), "sm_80", backend="nvjitlink").cubin_info().kernel("calls")
    assert (k.frame_size, k.min_stack_size) == (0, 160)
    # whole-program, the callees' frames are part of the kernel's own frame
    whole = compile_ptx(nvrtc(CALLS, "calls"), "sm_80")
    k = whole.cubin_info().kernel("calls")
    assert k.frame_size == k.min_stack_size == whole["calls"].stack_frame > 0
