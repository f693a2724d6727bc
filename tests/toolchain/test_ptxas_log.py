"""The ptxas log parser on real logs recorded from CUDA 11.8, 12.9, 13.5 and nvJitLink 13.5."""

from pathlib import Path

import pytest

from ptxforge.toolchain.ptxas_log import parse_ptxas_log

LOGS = Path(__file__).parents[1] / "data" / "ptxas_logs"


def log(name):
    return parse_ptxas_log((LOGS / name).read_text())


# (file, function, registers, stack frame, spill stores, spill loads, smem, cmem0, barriers)
HAND_READ = [
    ("cuda11.8_sm_70_axpy.log", "axpy", 10, 0, 0, 0, None, 376, None),
    ("cuda11.8_sm_80_spill32.log", "pressure", 32, 464, 468, 756, None, 368, None),
    ("cuda11.8_sm_80_local.log", "local_array", 32, 256, 0, 0, None, 368, None),
    ("cuda11.8_sm_90_barrier.log", "reverse_tile", 14, 0, 0, 0, 1024, None, None),
    ("cuda12.9_sm_70_barrier.log", "reverse_tile", 10, 0, 0, 0, 1024, 360, 2),
    ("cuda12.9_sm_90_spill32.log", "pressure", 32, 464, 468, 760, None, None, 0),
    ("cuda13.5_sm_120_spill32.log", "pressure", 32, 464, 468, 760, None, None, 0),
    ("cuda13.5_sm_75_local.log", "local_array", 27, 256, 0, 0, None, 368, 0),
    ("nvjitlink13.5_sm_90_two.log", "second", 8, 0, 0, 0, None, None, 0),
]


@pytest.mark.parametrize("fname,func,regs,frame,st,ld,smem,cmem0,bars", HAND_READ)
def test_hand_read_values(fname, func, regs, frame, st, ld, smem, cmem0, bars):
    f = log(fname).function(func)
    assert (f.registers, f.stack_frame, f.spill_stores, f.spill_loads) == (regs, frame, st, ld)
    assert f.shared == smem
    assert f.constant_bank0 == cmem0
    assert f.barriers == bars


def test_every_recorded_log_parses_to_complete_records():
    files = sorted(p for p in LOGS.glob("*.log") if "_bad" not in p.name)
    assert len(files) >= 50
    for p in files:
        parsed = parse_ptxas_log(p.read_text())
        assert parsed.functions, p.name
        assert parsed.gmem == 0, p.name
        for f in parsed.functions:
            assert f.registers is not None and f.registers > 0, p.name
            assert f.stack_frame is not None and f.spill_stores is not None, p.name
            assert f.target is not None and f.target in p.name, p.name
            assert not parsed.errors


def test_cmem_dropped_on_sm90_and_newer():
    for ver in ("cuda12.9", "cuda13.5"):
        assert log(f"{ver}_sm_80_axpy.log").function("axpy").cmem == ((0, 376),)
        assert log(f"{ver}_sm_90_axpy.log").function("axpy").cmem == ()


def test_fields_gained_over_versions():
    old = log("cuda11.8_sm_80_spill32.log").function("pressure")
    new = log("cuda12.9_sm_90_spill32.log").function("pressure")
    assert old.barriers is None and old.compile_time_ms is None and old.cumulative_stack is None
    assert new.barriers == 0 and new.compile_time_ms > 0 and new.cumulative_stack == 464
    assert old.register_cap is None and new.register_cap == 32  # 11.8 prints no override line


def test_two_kernels_in_log_order_with_targets():
    parsed = log("cuda12.9_sm_80_two.log")
    assert [f.name for f in parsed.functions] == ["second", "first"]
    assert all(f.kind == "entry" and f.target == "sm_80" for f in parsed.functions)


def test_nvjitlink_summary_lines():
    parsed = log("nvjitlink13.5_sm_80_spill32.log")
    assert parsed.function("pressure").registers == 32
    s = parsed.summary("pressure")
    assert s is not None and s.registers == 32
    assert s.stack == 464 and s.local == 0 and s.shared == 0 and s.cmem == ((0, 368),)
    # nvJitLink's own summary only: not a ptxas function record
    assert [f.name for f in parsed.functions] == ["pressure"]


def test_error_log_lines_and_fatal():
    for ver in ("cuda11.8", "cuda12.9", "cuda13.5"):
        parsed = log(f"{ver}_sm_80_bad.log")
        assert [(d.line, d.severity) for d in parsed.errors[:2]] == [(11, "error"), (11, "error")]
        assert "Unknown symbol '%r9'" in parsed.errors[1].message
        assert parsed.errors[-1].severity == "fatal"


def test_unknown_function_is_a_keyerror_naming_the_present_ones():
    with pytest.raises(KeyError, match="axpy"):
        log("cuda11.8_sm_70_axpy.log").function("nope")


def test_device_functions_of_a_real_log_are_functions_with_their_frames():
    # nvJitLink 13.5 prints 'Function properties for F' (frame and spills) for a device
    # function, with no 'Compiling' line and no 'Used N registers' of its own
    from ptxforge.toolchain.compile import compile_ptx

    from compile_sources import CALLS, nvrtc

    parsed = compile_ptx(nvrtc(CALLS, "calls"), "sm_80", backend="nvjitlink").ptxas_log
    kinds = {f.name: f.kind for f in parsed.functions}
    assert kinds == {"_Z4failll": "function", "_Z6gatherPKdll": "function", "leaf": "entry",
                     "calls": "entry"}
    gather = parsed.function("_Z6gatherPKdll")
    assert (gather.stack_frame, gather.spill_stores, gather.spill_loads, gather.registers) == \
        (136, 56, 56, None)
    assert parsed.summary("calls").stack == 160 and parsed.summary("calls").registers == 67


def test_an_unbounded_stack_is_a_warning():
    from ptxforge.toolchain.compile import compile_ptx

    from corpus_util import corpus_ptx

    parsed = compile_ptx(corpus_ptx("calls", "sm_80"), "sm_80").ptxas_log
    assert [d.message for d in parsed.warnings] == [
        "Stack size for entry function 'call_chain' cannot be statically determined"]
