"""Compile through nvJitLink and the ptxas executable (real ptxas, no GPU)."""

from pathlib import Path

import pytest

from ptxforge.arch.targets import target as as_target
from ptxforge.errors import BackendUnavailableError, CompileError, PtxforgeError
from ptxforge.toolchain.backends import PtxasBackend, find_ptxas, ptxas_version
from ptxforge.toolchain.compile import (
    CompileOptions,
    available_backends,
    backend_status,
    compile_many,
    compile_ptx,
    ptx_entries,
)

PTX = Path(__file__).parents[1] / "data" / "ptx"


def read(name):
    return (PTX / name).read_text()


def test_options_turn_into_flags_in_one_place():
    o = CompileOptions(max_registers=64, opt_level=2, line_info=True, extra="--warn-on-spills")
    assert o.ptxas_args("sm_80") == ["-arch=sm_80", "-v", "-O2", "--maxrregcount=64", "-lineinfo",
                                     "--warn-on-spills"]
    assert o.nvjitlink_args("sm_90a") == ["-arch=sm_90a", "-verbose", "-Xptxas=-O2",
                                          "-maxrregcount=64",
                                          "-lineinfo", "-Xptxas=--warn-on-spills"]
    with pytest.raises(PtxforgeError, match="driver backend takes no ptxas flags"):
        o.driver_jit_options()
    assert CompileOptions(max_registers=40).driver_jit_options() == (
        ["CU_JIT_OPTIMIZATION_LEVEL", "CU_JIT_MAX_REGISTERS"], [3, 40])


@pytest.mark.parametrize("bad", [{"max_registers": 8}, {"max_registers": 300}, {"opt_level": 4},
                                 {"extra": ("maxrregcount",)}])
def test_options_validated(bad):
    with pytest.raises(PtxforgeError):
        CompileOptions(**bad)


def test_targets():
    assert as_target("8.6").name == "sm_86" and as_target(90).name == "sm_90"
    assert as_target("sm_120a").name == "sm_120a"
    with pytest.raises(PtxforgeError, match="unknown target 'sm_61x'"):
        as_target("sm_61x")


def test_ptx_entries_directives_and_local_arrays():
    two = ptx_entries(read("two_kernels.ptx"))
    assert [(e.name, e.maxnreg) for e in two] == [("first", None), ("second", 32)]
    (bar,) = ptx_entries(read("barrier.ptx"))
    assert bar.maxntid == (256, 1, 1)
    (loc,) = ptx_entries(read("local_array.ptx"))
    assert loc.local_array_bytes == 256


def test_backend_status_without_gpu_is_clear():
    status = backend_status()
    assert set(status) == {"nvjitlink", "ptxas", "driver"}
    assert status["nvjitlink"][0] and "nvJitLink" in status["nvjitlink"][1]
    assert "nvjitlink" in available_backends()
    if not status["driver"][0]:
        assert "driver backend" in status["driver"][1]


def test_default_is_the_whole_program_ptxas_executable():
    c = compile_ptx(read("axpy.ptx"), "sm_80")
    assert (c.backend, c.mode, c.tool_version[0]) == ("ptxas", "whole-program", 13)
    assert c.tool.startswith("ptxas 13.") and c.tool_path.endswith("ptxas")
    assert c.tool_version_text == ".".join(map(str, c.tool_version))


def test_relocatable_is_ptxas_dash_c():
    c = compile_ptx(read("axpy.ptx"), "sm_80", relocatable=True)
    assert (c.backend, c.mode) == ("ptxas", "relocatable")
    assert "-c" in c.options.ptxas_args("sm_80")


def test_nvjitlink_stats_axpy():
    c = compile_ptx(read("axpy.ptx"), "sm_80", backend="nvjitlink")
    assert c.backend == "nvjitlink" and c.tool.startswith("nvJitLink")
    assert c.mode == "relocatable"     # nvJitLink compiles relocatable code only
    k = c["axpy"]
    assert (k.registers, k.spill_stores, k.stack_frame, k.shared, k.barriers) == (10, 0, 0, 0, 0)
    assert k.constant_bank0 == 376 and k.compile_time_ms > 0 and k.register_cap is None
    assert c.cubin[:4] == b"\x7fELF"


def test_spills_under_a_cap_and_local_arrays_apart():
    k = compile_ptx(read("pressure.ptx"), "sm_80", max_registers=32)["pressure"]
    assert k.registers == 32 and k.register_cap == 32
    assert k.spill_stores == 468 and k.spill_loads == 756 and k.stack_frame == 464
    assert k.local_array_bytes == 0 and k.spill_frame_bytes == 464
    free = compile_ptx(read("pressure.ptx"), "sm_80")["pressure"]
    assert free.registers == 72 and not free.spills
    loc = compile_ptx(read("local_array.ptx"), "sm_80")["local_array"]
    assert loc.stack_frame == 256 and loc.local_array_bytes == 256 and not loc.spills
    assert loc.spill_frame_bytes == 0


def test_barriers_shared_and_maxnreg():
    k = compile_ptx(read("barrier.ptx"), "sm_90")["reverse_tile"]
    assert k.barriers == 2 and k.shared == 1024 and k.max_threads_per_block == 256
    c = compile_ptx(read("two_kernels.ptx"), "sm_80")
    assert [k.name for k in c] == ["first", "second"]
    assert c["second"].register_cap == 32 and c["first"].register_cap is None


def test_auto_falls_back_to_ptxas_for_sm70():
    if not PtxasBackend().status()[0]:
        pytest.skip("no ptxas executable; pip install nvidia-cuda-nvcc-cu12")
    c = compile_ptx(read("pressure.ptx"), "sm_70", max_registers=32)
    assert c.backend == "ptxas" and "ptxas 12." in c.tool
    k = c["pressure"]
    assert k.registers == 32 and k.spill_stores > 0 and k.stack_frame > 0
    with pytest.raises(BackendUnavailableError, match="refuses target sm_70"):
        compile_ptx(read("axpy.ptx"), "sm_70", backend="nvjitlink")


def test_ptxas_backend_agrees_with_nvjitlink_on_registers():
    if not PtxasBackend().status()[0]:
        pytest.skip("no ptxas executable")
    for name in ("axpy.ptx", "pressure.ptx", "local_array.ptx"):
        a = compile_ptx(read(name), "sm_80", backend="nvjitlink")
        b = compile_ptx(read(name), "sm_80", backend="ptxas")
        assert [k.registers for k in a] == [k.registers for k in b]
        assert [k.stack_frame for k in a] == [k.stack_frame for k in b]


def test_pinned_ptxas_that_refuses_the_target_says_so():
    cuda13 = [p for p in find_ptxas() if ptxas_version(p) >= (13, 0)]
    if not cuda13:
        pytest.skip("no CUDA 13 ptxas on this machine")
    with pytest.raises(BackendUnavailableError, match="nvidia-cuda-nvcc-cu12"):
        compile_ptx(read("axpy.ptx"), "sm_70", backend=PtxasBackend(cuda13[0]))


@pytest.mark.parametrize("backend", ["nvjitlink", "ptxas"])
def test_compile_error_quotes_the_ptx_line(backend):
    if backend == "ptxas" and not PtxasBackend().status()[0]:
        pytest.skip("no ptxas executable")
    with pytest.raises(CompileError) as info:
        compile_ptx(read("bad.ptx"), "sm_80", backend=backend)
    err = info.value
    assert err.backend == backend
    assert "line 11: add.u32 %r2, %r1, %r9;" in str(err)
    assert "Unknown symbol '%r9'" in err.log
    assert [d.line for d in err.diagnostics if d.line] == [11, 11]


def test_rejects_what_is_neither_ptx_nor_module():
    with pytest.raises(PtxforgeError, match="expected PTX text or an ir.Module, got int"):
        compile_ptx(12345, "sm_80")


def test_compile_many_in_parallel_keeps_order():
    ptx = read("pressure.ptx")
    jobs = [(ptx, "sm_80", "nvjitlink", CompileOptions(max_registers=c)) for c in (32, 64, 128)]
    res = compile_many(jobs, max_workers=2)
    assert [r["pressure"].register_cap for r in res] == [32, 64, 128]
    assert res[0]["pressure"].spills and not res[2]["pressure"].spills


def test_unknown_backend():
    with pytest.raises(PtxforgeError, match="unknown backend 'nvcc'"):
        compile_ptx(read("axpy.ptx"), "sm_80", backend="nvcc")


def test_a_ptx_version_newer_than_ptxas_gets_a_hint():
    from ptxforge import CompileError
    from ptxforge.toolchain.compile import backend_status

    if "CUDA 12" not in backend_status()["ptxas"][1]:
        pytest.skip("needs the CUDA 12 ptxas (pip install nvidia-cuda-nvcc-cu12)")
    ptx = (".version 9.5\n.target sm_70\n.address_size 64\n"
           ".visible .entry k()\n{\n\tret;\n}\n")
    with pytest.raises(CompileError) as info:
        compile_ptx(ptx, "sm_70", backend="ptxas")
    text = str(info.value)
    assert "hint: this ptxas reads PTX ISA up to 8.8, the file says 9.5" in text
    assert "Only a CUDA 12 ptxas still targets sm_70" in text   # registry: toolkits (12,)
    assert "lower its .version line to 8.8" in text


def test_the_version_hint_names_only_what_applies_to_the_target():
    cuda13 = [p for p in find_ptxas() if ptxas_version(p) >= (13, 0)]
    if not cuda13 or ptxas_version(cuda13[0]) >= (13, 5):
        pytest.skip("needs a CUDA 13 ptxas older than the NVRTC 13.5 PTX (.version 9.5)")
    ptx = ".version 9.5\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n"
    with pytest.raises(CompileError) as info:
        compile_ptx(ptx, "sm_90", backend=PtxasBackend(cuda13[0]))
    hint = [line for line in str(info.value).splitlines() if line.startswith("hint:")]
    assert len(hint) == 1 and "the file says 9.5" in hint[0]
    assert "sm_70" not in hint[0] and "CUDA 12" not in hint[0]
    assert "backend='nvjitlink'" in hint[0]     # nvJitLink 13.5 reads it, and says so


def test_a_target_newer_than_the_arch_gets_a_hint():
    ptx = (Path(__file__).parents[1] / "data" / "styles" / "triton_style.ptx").read_text()
    with pytest.raises(CompileError) as info:
        compile_ptx(ptx, "sm_80")
    text = str(info.value)
    assert "SM version specified by .target is higher" in info.value.log
    assert ("hint: the PTX says '.target sm_90a' (line 6), newer than sm_80, the "
            "architecture it was compiled for: pass target='sm_90a' "
            "(ptxforge ... --arch sm_90a)") in text
    assert compile_ptx(ptx, "sm_90a")["add_kernel"].registers > 0


def test_line_info_for_a_module_maps_the_cubin_back_to_the_python_lines():
    from ptxforge.dsl import kernels

    module = kernels.saxpy()
    plain = compile_ptx(module, "sm_80").cubin
    lined = compile_ptx(module, "sm_80", line_info=True).cubin
    assert b".debug_line" not in plain and b"kernels.py" not in plain
    assert b".debug_line" in lined and b"kernels.py" in lined  # the .file of the builder calls


def _ptx_for_ptxas(name):
    """Corpus PTX at a .version every installed ptxas reads (the kernels use nothing newer)."""
    import re
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
    from corpus_util import corpus_ptx

    return re.sub(r"\.version \d+\.\d+", ".version 8.0", corpus_ptx(name, "sm_80"))


@pytest.mark.parametrize("backend", ["nvjitlink", "ptxas"])
def test_every_optimisation_level_reaches_ptxas(backend):
    # nvJitLink's own -O takes only 0 and 3; levels 1 and 2 used to fail with
    # ERROR_UNRECOGNIZED_OPTION.  Measured (ptxas 13.0 executable and nvJitLink 13.5 agree):
    # stencil3d_7pt needs 58, 40, 42, 42 registers at -O0..-O3 on sm_80.
    if backend == "ptxas" and not PtxasBackend().status()[0]:
        pytest.skip("no ptxas executable")
    ptx = _ptx_for_ptxas("stencil")
    regs = {o: compile_ptx(ptx, "sm_80", backend=backend, opt_level=o)["stencil3d_7pt"].registers
            for o in range(4)}
    assert regs[0] > regs[3] and regs[1] != regs[3], regs   # the level really reaches ptxas
    assert regs[2] == regs[3], regs
    pressure = {o: compile_ptx(read("pressure.ptx"), "sm_80", backend=backend,
                               opt_level=o)["pressure"].registers for o in range(4)}
    assert pressure == {0: 76, 1: 72, 2: 72, 3: 72}


def test_nvjitlink_and_ptxas_agree_level_by_level():
    if not PtxasBackend().status()[0]:
        pytest.skip("no ptxas executable")
    ptx = _ptx_for_ptxas("stencil")
    for o in range(4):
        a = compile_ptx(ptx, "sm_80", backend="nvjitlink", opt_level=o)
        b = compile_ptx(ptx, "sm_80", backend="ptxas", opt_level=o)
        assert a["stencil3d_7pt"].registers == b["stencil3d_7pt"].registers, o


FATAL_AT_A_LINE = """.version 8.0
.target sm_80
.address_size 64
.const .f32 cf[2] = {0fZZ, 0f00000000};
.visible .entry k()
{
\tret;
}
"""


@pytest.mark.parametrize("backend", ["nvjitlink", "ptxas"])
def test_a_fatal_diagnostic_quotes_its_line_too(backend):
    if backend == "ptxas" and not PtxasBackend().status()[0]:
        pytest.skip("no ptxas executable")
    with pytest.raises(CompileError) as info:
        compile_ptx(FATAL_AT_A_LINE, "sm_80", backend=backend)
    text = str(info.value)
    assert "offending PTX:\n  line 4: .const .f32 cf[2] = {0fZZ, 0f00000000};" in text
    assert "fatal: Parsing error near 'fZZ'" in text
    assert [(d.line, d.severity) for d in info.value.diagnostics if d.line] == [(4, "fatal")]


def test_a_kernel_that_calls_runs_with_its_call_graphs_registers():
    # ptxas's 'Used N registers' covers the kernel's own body; the cubin's EIATTR_REGCOUNT
    # (what the driver launches with) is the maximum over the call graph.
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
    from corpus_util import corpus_ptx

    # relocatable: each function keeps its own count until the device link, which gives the
    # kernel the maximum over its call graph (what nvJitLink's linked cubin records)
    stats = compile_ptx(corpus_ptx("calls", "sm_80"), "sm_80", relocatable=True)["call_chain"]
    assert stats.registers > stats.body_registers
    from ptxforge.toolchain.cubin import read_cubin
    linked = compile_ptx(corpus_ptx("calls", "sm_80"), "sm_80", backend="nvjitlink").cubin
    assert stats.registers == read_cubin(linked).kernel("call_chain").registers


# --- debug PTX (nvcc/NVRTC -G) -----------------------------------------------------------------

@pytest.mark.parametrize("backend", ["nvjitlink", "ptxas12", "ptxas13"])
def test_debug_ptx_compiles_at_O0(backend):
    from ptxforge.ptx.directives import ptx_target, with_version

    from compile_sources import OCTREE_WALK, nvrtc

    debug = nvrtc(OCTREE_WALK, "walk", "sm_80", "-G")
    plain = nvrtc(OCTREE_WALK, "walk", "sm_80")
    assert ptx_target(debug).debug and not ptx_target(plain).debug
    if backend != "nvjitlink":
        major = int(backend[-2:])
        exe = next((p for p in find_ptxas() if ptxas_version(p)[0] == major), None)
        if exe is None:
            pytest.skip(f"no CUDA {major} ptxas executable here")
        backend = PtxasBackend(exe)
        v = (8, 8) if major == 12 else (9, 0)
        debug, plain = with_version(debug, v), with_version(plain, v)
    c = compile_ptx(debug, "sm_80", backend=backend)
    assert c.options.opt_level == 0 and "compiled at -O0" in c.note
    optimised = compile_ptx(plain, "sm_80", backend=backend)["walk"]
    assert c["walk"].registers > optimised.registers            # measured: 48 vs 32
    assert c["walk"].stack_frame > optimised.stack_frame        # measured: 184 vs 128
    with pytest.raises(PtxforgeError, match=r"debug PTX \('\.target sm_80, debug' \(line 10\).*"
                                            r"only at -O0.*got opt_level=3"):
        compile_ptx(debug, "sm_80", backend=backend, opt_level=3)


# --- which tool compiled it ---------------------------------------------------------------------

def test_the_result_names_the_tool(monkeypatch):
    from cuda.bindings import nvjitlink

    c = compile_ptx(read("axpy.ptx"), "sm_80", backend="nvjitlink")
    assert c.tool_version == tuple(nvjitlink.version()) and c.tool_path is None
    assert c.tool == "nvJitLink " + ".".join(map(str, nvjitlink.version()))
    exes = find_ptxas()
    if not exes:
        pytest.skip("no ptxas executable")
    monkeypatch.setenv("PTXFORGE_PTXAS", exes[-1])
    c = compile_ptx(read("axpy.ptx"), "sm_80", backend="ptxas")
    assert c.tool_path == exes[-1] and c.tool_version == ptxas_version(exes[-1])
    assert c.tool == f"ptxas {ptxas_version(exes[-1])[0]}.{ptxas_version(exes[-1])[1]} ({exes[-1]})"


def test_ptxforge_ptxas_naming_no_executable_is_an_error(monkeypatch, tmp_path):
    missing = tmp_path / "nope" / "ptxas"
    monkeypatch.setenv("PTXFORGE_PTXAS", str(missing))
    with pytest.raises(BackendUnavailableError,
                       match=rf"PTXFORGE_PTXAS='{missing}': the path does not exist"):
        compile_ptx(read("axpy.ptx"), "sm_80", backend="ptxas")
    ok, why = backend_status()["ptxas"]
    assert not ok and "PTXFORGE_PTXAS" in why and str(missing) in why
    with pytest.raises(BackendUnavailableError, match="PTXFORGE_PTXAS"):
        find_ptxas()
    plain = tmp_path / "ptxas"
    plain.write_text("not a program")
    monkeypatch.setenv("PTXFORGE_PTXAS", str(plain))
    with pytest.raises(BackendUnavailableError, match="the file is not executable"):
        compile_ptx(read("axpy.ptx"), "sm_80", backend="ptxas")
    # the default compiles with ptxas too: a broken PTXFORGE_PTXAS is an error there as well,
    # never a silent switch to another compiler
    with pytest.raises(BackendUnavailableError, match="the file is not executable"):
        compile_ptx(read("axpy.ptx"), "sm_80")
    assert compile_ptx(read("axpy.ptx"), "sm_80", backend="nvjitlink").backend == "nvjitlink"


# --- the register cap in force ------------------------------------------------------------------

# (bounds on live64, --maxrregcount) -> (registers, cap in force, its source, note or None).
# Measured with the whole-program ptxas 13.5 on sm_80 (nvJitLink gives 72 for the third row).
CAPS = [
    ("", None, 72, None, None, None),
    ("", 48, 48, 48, "--maxrregcount", None),
    ("__launch_bounds__(256)", 48, 74, None, None, "ptxas ignores --maxrregcount for a kernel "
                                                   "with .maxntid"),
    ("__launch_bounds__(256, 4)", None, 64, 64, "launch bounds", None),
    ("__launch_bounds__(256, 4)", 48, 64, 64, "launch bounds", "ptxas ignores"),
    ("__launch_bounds__(384, 2)", None, 72, 80, "launch bounds", None),
    ("__launch_bounds__(1024)", None, 64, 64, "launch bounds", None),
    ("__maxnreg__(40)", 48, 40, 40, ".maxnreg", "the kernel's own .maxnreg 40 overrides it"),
]


@pytest.mark.parametrize("bounds,cap,regs,in_force,source,note", CAPS)
def test_register_cap_in_force_and_its_source(bounds, cap, regs, in_force, source, note):
    from compile_sources import LIVE64, nvrtc

    ptx = nvrtc(LIVE64.replace("BOUNDS", bounds), "live64", "sm_80")
    c = compile_ptx(ptx, "sm_80", max_registers=cap)
    k = c["live64"]
    assert (k.registers, k.register_cap, k.register_cap_source) == (regs, in_force, source)
    assert k.register_cap == (None if c.cubin_info().kernel("live64").max_registers == 255
                              else c.cubin_info().kernel("live64").max_registers)
    if note is None:
        assert k.register_cap_note is None
    else:
        assert note in k.register_cap_note and f"--maxrregcount={cap} not applied" in \
            k.register_cap_note


@pytest.mark.parametrize("threads,blocks", [(256, 4), (256, 2), (384, 2), (128, 5), (96, 7),
                                            (1024, 1), (256, 1), (512, 3)])
def test_implied_cap_is_what_ptxas_records(threads, blocks):
    # the cap ptxas derives from .maxntid/.minnctapersm, against EIATTR_MAXREG_COUNT
    from ptxforge.toolchain.regcap import implied_register_cap

    from compile_sources import LIVE64, nvrtc

    ptx = nvrtc(LIVE64.replace("BOUNDS", f"__launch_bounds__({threads}, {blocks})"), "live64")
    recorded = compile_ptx(ptx, "sm_80").cubin_info().kernel("live64").max_registers
    assert implied_register_cap(threads, blocks, "sm_80") == recorded


def test_maxnreg_is_honoured_next_to_launch_bounds():
    from ptxforge.ptx.directives import ptx_entries, with_maxnreg

    from compile_sources import LIVE64, nvrtc

    ptx = nvrtc(LIVE64.replace("BOUNDS", "__launch_bounds__(256, 4)"), "live64")
    for n, regs, source in ((40, 40, ".maxnreg"), (128, 64, "launch bounds")):
        capped = with_maxnreg(ptx, "live64", n)
        (e,) = ptx_entries(capped)
        assert (e.maxntid, e.minnctapersm, e.maxnreg) == ((256, 1, 1), 4, n)
        k = compile_ptx(capped, "sm_80")["live64"]
        assert (k.registers, k.register_cap, k.register_cap_source) == (regs, regs, source)
    twice = with_maxnreg(with_maxnreg(ptx, "live64", 40), "live64", 56)
    assert twice.count(".maxnreg") == 1 and ptx_entries(twice)[0].maxnreg == 56
    with pytest.raises(PtxforgeError, match="no .entry 'nope' in the PTX; its kernels are: live64"):
        with_maxnreg(ptx, "nope", 40)


# --- a kernel that calls functions: the call graph's stack and spills ---------------------------

def test_callee_stack_and_spills_count_for_the_kernel():
    from compile_sources import CALLS, nvrtc

    c = compile_ptx(nvrtc(CALLS, "calls"), "sm_80", backend="nvjitlink")
    k = c["calls"]
    log = c.ptxas_log
    gather = log.function("_Z6gatherPKdll")
    assert (gather.stack_frame, gather.spill_stores, gather.spill_loads) == (136, 56, 56)
    assert log.function("_Z4failll").stack_frame == 24
    # the body alone (what was reported before) and the call graph
    assert (k.body_registers, k.body_spill_stores, k.body_spill_loads, k.body_stack_frame) == \
        (24, 0, 0, 0)
    assert (k.registers, k.spill_stores, k.spill_loads, k.stack_frame) == (67, 56, 56, 160)
    assert k.stack_frame == log.summary("calls").stack == 0 + 136 + 24
    assert {"_Z6gatherPKdll", "_Z4failll", "vprintf"} <= set(k.callees) and k.stack_known
    leaf = c["leaf"]
    assert (leaf.spill_stores, leaf.stack_frame, leaf.callees) == (0, 0, ())
    d = k.to_dict()
    assert (d["stack_frame"], d["body_stack_frame"], d["spill_stores"]) == (160, 0, 56)


def test_recursion_leaves_the_stack_a_lower_bound():
    import sys
    sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
    from corpus_util import corpus_ptx

    # the device link (nvJitLink) sizes the call graph's stack; whole-program ptxas folds it
    c = compile_ptx(corpus_ptx("calls", "sm_80"), "sm_80", backend="nvjitlink")
    chain = c["call_chain"]
    assert "cannot be statically determined" in c.log
    # own 0 + rotate 8 + the trig slow path 40 (fib's 16 per level is counted once)
    assert not chain.stack_known and chain.stack_frame == 48
    # fib 16/16 and rotate 8/8 bytes of spills run on call_chain's behalf
    assert (chain.spill_stores, chain.spill_loads) == (24, 24)
    assert c["call_indirect"].stack_known and c["call_indirect"].stack_frame == 16


def test_a_cap_below_ptxas_floor_is_raised_and_said():
    from compile_sources import LIVE64, nvrtc

    c = compile_ptx(nvrtc(LIVE64.replace("BOUNDS", ""), "live64"), "sm_80", max_registers=16)
    k = c["live64"]
    assert "adjusting per thread register count of 16 to lower bound of 24" in c.log
    assert (k.registers, k.register_cap, k.register_cap_source) == (24, 24, "--maxrregcount")
    assert k.register_cap_note == "--maxrregcount=16 raised to 24: ptxas's lower bound for sm_80"


def test_toolkit_hints_come_from_the_registry():
    from ptxforge.toolchain.backends import _toolkit_hint

    assert _toolkit_hint("sm_61").startswith("Only a CUDA 12 ptxas targets sm_61 (CUDA 13 dropped")
    assert _toolkit_hint("sm_101a").startswith("Only a CUDA 12 ptxas targets sm_101a")
    assert _toolkit_hint("sm_110").startswith("Only a CUDA 13 ptxas targets sm_110")
    assert _toolkit_hint("sm_90a") == "CUDA 12 and 13 ptxas target sm_90a"
    assert _toolkit_hint("sm_99") == "sm_99 is not a target ptxforge knows"


def test_a_byte_order_mark_is_not_part_of_the_ptx(tmp_path, capsys):
    """Editors on Windows save UTF-8 with a byte order mark, which ptxas refuses ('Unexpected
    non-ASCII character encountered on line 1'); it marks the encoding, not the PTX: the
    figures are those of the PTX without it, as text, bytes and a file for the command."""
    from cli_util import run

    ptx = read("axpy.ptx")
    plain = compile_ptx(ptx, "sm_80")
    for marked in ("\ufeff" + ptx, b"\xef\xbb\xbf" + ptx.encode()):
        c = compile_ptx(marked, "sm_80")
        assert [(k.name, k.registers) for k in c.kernels] == \
            [(k.name, k.registers) for k in plain.kernels]
    path = tmp_path / "bom.ptx"
    path.write_bytes(b"\xef\xbb\xbf" + ptx.encode())
    for argv in (("analyze", path), ("sass", path, "--arch", "sm_80"),
                 ("check", path, "--max-registers", "255")):
        code, _, err = run(capsys, *argv)
        assert code == 0, (argv, err)
