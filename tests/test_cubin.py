"""The cubin reader agrees with ptxas's log on registers, stack and spills."""

from pathlib import Path

import pytest

from ptxforge.compile import compile_ptx
from ptxforge.cubin import parse_nv_info, read_cubin
from ptxforge.errors import CompileError, PtxforgeError

from corpus_util import corpus_ptx, corpus_sources

PTX = Path(__file__).parent / "data" / "ptx"
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
            assert ck.frame_size == f.stack_frame == k.stack_frame
            assert ck.min_stack_size == f.stack_frame
            # spill traffic is in the frame: spills > 0 implies frame beyond local arrays
            assert (f.spill_stores > 0) == (ck.frame_size > k.local_array_bytes)
            if target in ("sm_75", "sm_80"):
                assert ck.text_info_registers == f.registers
            else:
                assert ck.text_info_registers == 0
            reserved = 1024 if int(target[3:]) >= 90 and f.shared else 0
            assert ck.shared == (f.shared or 0) + reserved
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
        assert ck.frame_size == f.stack_frame == k.stack_frame, k.name
        if f.spill_stores:  # spill slots live in the frame, beyond the declared local arrays
            assert ck.frame_size > k.local_array_bytes, k.name
        if target in ("sm_75", "sm_80"):
            assert ck.text_info_registers == f.registers, k.name
        else:
            assert ck.text_info_registers == 0, k.name
        # sm_90+: .nv.shared.<k> includes the 1 KB reserved block (also for a kernel that
        # declares none but uses a barrier)
        reserved = 1024 if int(target[3:]) >= 90 and ck.shared else 0
        assert ck.shared - reserved == (f.shared or 0), k.name


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source", corpus_sources())
def test_cubin_agrees_with_log_on_every_corpus_kernel(source, target):
    # Each module is compiled once per target.  The corpus PTX is NVRTC's for sm_80; for
    # sm_75 its .target is lowered, which ptxas refuses where a kernel uses sm_80 features
    # (mma.sync bf16/f16 shapes, cp.async ...): those pairs are skipped with ptxas's reason.
    ptx = corpus_ptx(source, "sm_80")
    if target == "sm_75":
        ptx = ptx.replace(".target sm_80", ".target sm_75")
    try:
        c = compile_ptx(ptx, target, backend="nvjitlink")
    except CompileError as exc:
        if target != "sm_75":
            raise
        first = next((d for d in exc.diagnostics if d.severity in ("error", "fatal")), None)
        pytest.skip(f"ptxas refuses {source}.cu for sm_75: "
                    f"{first.message if first else str(exc).splitlines()[0]}")
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
