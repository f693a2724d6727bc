"""SASS register liveness read with the real nvdisasm from cubins the real ptxas built.

Golden tests parse nvdisasm output captured under tests/data/sass/ (saxpy_sm80.*: the
builder's saxpy compiled for sm_80 with line info; call_sm80.*: tests/data/sass/call.ptx, a
kernel calling a .func).  The rest compile ptxforge's kernels and the NVRTC corpus with the
whole-program ptxas (the default; relocatable where a test says so) and run nvdisasm on them.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ptxforge.dsl import kernels
from ptxforge.errors import BackendUnavailableError, PtxforgeError
from ptxforge.ptx.emit import emit
from ptxforge.reports.sass import RESERVED, sass_report
from ptxforge.toolchain.compile import CompileRequest, compile_ptx
from ptxforge.toolchain.sass import (
    NVDISASM_ENV,
    find_nvdisasm,
    nvdisasm_version,
    parse_sass,
    sass_liveness,
)
from ptxforge.toolchain.sass_listing import parse_life_ranges, parse_line_annotations

from cli_util import run
from corpus_util import corpus_ptx, corpus_sources

DATA = Path(__file__).parents[1] / "data" / "sass"
ROOT = Path(__file__).resolve().parents[2]
ARCHS = ("sm_80", "sm_90")
BUILDER = ("saxpy", "block_reduce_sum", "sgemm_tiled", "modadd256")


def _text(name: str) -> str:
    return (DATA / name).read_text()


@functools.lru_cache(maxsize=None)
def corpus_report(name: str, arch: str):
    return sass_report(corpus_ptx(name, arch, True), arch, file=f"{name}.ptx")


@functools.lru_cache(maxsize=None)
def builder_report(name: str, arch: str):
    return sass_report(getattr(kernels, name)(target=arch), arch, file=name)


# --- golden: captured nvdisasm output ----------------------------------------------------------

def test_golden_saxpy_life_ranges():
    (f,) = parse_life_ranges(_text("saxpy_sm80.narrow.txt"))
    assert (f.name, f.entry, f.shi_registers, f.groups) == ("saxpy", True, 10,
                                                             ("GPR", "PRED", "UGPR"))
    assert [r.offset for r in f.rows] == list(range(0, 0x100, 0x10))
    assert [r.counts[0] for r in f.rows] == [1, 2, 3, 3, 2, 2, 3, 3, 5, 5, 5, 5, 5, 4, 1, 1]
    assert [r.counts[1] for r in f.rows] == [0, 0, 0, 0, 1, 1] + [0] * 10
    assert [r.counts[2] for r in f.rows] == [0] * 7 + [2] * 7 + [0, 0]
    row = f.rows[8]
    assert row.text == "IMAD.WIDE.U32 R2, R4, R5, c[0x0][0x168] ;"
    assert row.marks == (((1, ":"), (2, "^"), (3, "^"), (4, "v"), (5, "v")), (),
                         ((4, ":"), (5, ":")))
    assert f.rows[4].marks[1] == ((0, "^"),) and f.rows[5].marks[1] == ((0, "v"),)
    assert f.rows[5].text == "@P0 EXIT ;"
    assert f.rows[12].marks[0] == ((1, ":"), (2, "v"), (4, ":"), (5, ":"), (7, "x"))


def test_golden_saxpy_source_lines():
    lines = parse_line_annotations(_text("saxpy_sm80.gi.txt"))["saxpy"]
    assert sorted(lines) == list(range(0, 0x180, 0x10))      # the NOP padding included
    got = {o: (Path(s.file).name, s.line, s.inlined_at) for o, s in lines.items()}
    expect = {0x00: 30, 0x30: 30, 0x40: 31, 0x50: 31, 0x60: 32, 0x80: 32, 0x90: 33, 0xa0: 34,
              0xd0: 34, 0xe0: 35, 0x170: 35}
    assert {o: got[o] for o in expect} == {o: ("kernels.py", n, ()) for o, n in expect.items()}


def test_golden_call_clobbers_and_ptx_lines():
    fns = parse_sass(_text("call_sm80.narrow.txt"), ptx_lines=_text("call_sm80.gp.txt"),
                     ptx_texts={".nv_debug_ptx_txt.2018611964":
                                tuple(_text("call.ptx").split("\n"))})
    twice, caller = fns
    assert (twice.name, twice.entry, caller.name, caller.entry) == ("twice", False, "caller", True)
    call = caller.instruction_at(0x80)
    assert call.is_call and call.text == "CALL.ABS.NOINC `(twice) ;"
    assert call.count("GPR") == 18 and call.count("UGPR") == 34
    assert call.registers("GPR") == (0, 1, *range(3, 18), 19)
    # R3..R15 are marked assigned (the callee may overwrite them); without them 5 are left
    assert call.count("GPR", call_clobbers=False) == 5
    assert call.registers("GPR", call_clobbers=False) == (0, 1, 16, 17, 19)
    assert caller.peak().count == 18 and caller.peak().offsets == (0x80,)
    assert caller.peak(call_clobbers=False).count == 6
    assert caller.peak(call_clobbers=False).offsets == (0x50, 0x60, 0x70)
    assert twice.span() == 24 and caller.span() == 22   # R23 in twice; R21 in caller
    # every instruction's PTX line holds the PTX instruction it came from
    kinds = {"CALL": "call.uni", "IADD3": "add.s32", "STG": "st.global", "LDG": "ld.global",
             "RET": "ret"}
    checked = 0
    for f in fns:
        for i in f.instructions:
            op = i.text.split()[0].split(".")[0]
            if op in kinds:
                assert i.ptx.startswith(kinds[op]), (i.text, i.ptx_line, i.ptx)
                checked += 1
    assert checked == 6


def _mangle(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize("old,new,message", [
    ("| 3  : vx     |", "| 3  : vQ     |", r"unexpected mark 'Q' for GPR register 4"),
    ("| 3  : vx     |", "| 3  : vx    |", r"GPR column is 12 characters wide, the header's is 13"),
    ("| 2  :  v     |  1 ^   |", "| 2  :  v     |  1 ^   |  |",
     r"expected 3 register-file columns \(GPR, PRED, UGPR\), got 4"),
    ("| 5  :^^vv    |", "| x  :^^vv    |", r"expected a live-register count in the GPR column"),
    ("|    GPR      |", "|    gpr      |", r"expected a register file name"),
    ("| # 01234567  |", "| # 01234576  |", r"GPR register numbers are not increasing"),
])
def test_parse_errors_name_the_line(old, new, message):
    text = _mangle(_text("saxpy_sm80.narrow.txt"), old, new)
    bad = next(n for n, line in enumerate(text.splitlines(), 1) if new in line)
    with pytest.raises(PtxforgeError, match=message) as exc:
        parse_life_ranges(text, "out.txt")
    assert isinstance(exc.value, ValueError)
    assert str(exc.value).startswith(f"out.txt:{bad}: ")


def test_instruction_without_table_is_an_error():
    text = re.sub(r"(IMAD R4, R4, c\[0x0\]\[0x0\], R3 ;)\s*//.*", r"\1",
                  _text("saxpy_sm80.narrow.txt"))
    with pytest.raises(PtxforgeError, match="instruction of saxpy without life-range columns"):
        parse_life_ranges(text)


def test_bad_line_annotation_is_an_error():
    text = _mangle(_text("saxpy_sm80.gi.txt"), 'line 31', 'line 31 column 4')
    with pytest.raises(PtxforgeError, match=r"expected '//## File"):
        parse_line_annotations(text)


# --- finding nvdisasm -------------------------------------------------------------------------

def test_finds_the_installed_nvdisasm():
    path = find_nvdisasm()
    assert os.access(path, os.X_OK) and Path(path).name == "nvdisasm"
    assert re.fullmatch(r"\d+\.\d+", nvdisasm_version(path))


def test_missing_nvdisasm_says_what_to_install(tmp_path):
    with pytest.raises(BackendUnavailableError, match="pip install nvidia-cuda-nvdisasm") as e:
        find_nvdisasm([tmp_path])
    assert str(tmp_path) in str(e.value)


def test_env_pointing_at_an_empty_folder(tmp_path, monkeypatch):
    real = find_nvdisasm()
    cubin = compile_ptx(kernels.saxpy(), "sm_80").cubin
    monkeypatch.setenv(NVDISASM_ENV, str(tmp_path))
    with pytest.raises(BackendUnavailableError, match=r"nvdisasm not found in \$PTXFORGE_NVDISASM"):
        sass_liveness(cubin)
    fake = tmp_path / "nvdisasm"
    fake.write_text("not a program")
    monkeypatch.setenv(NVDISASM_ENV, str(fake))
    with pytest.raises(BackendUnavailableError, match="is not an executable file"):
        sass_liveness(cubin)
    monkeypatch.setenv(NVDISASM_ENV, real)
    assert sass_liveness(cubin).function("saxpy").peak().count > 0
    monkeypatch.setenv(NVDISASM_ENV, str(Path(real).parent))
    assert find_nvdisasm() == real


def test_a_binary_that_fails_gives_its_message(tmp_path):
    tool = tmp_path / "nvdisasm"
    tool.write_text("#!/bin/sh\necho 'nvdisasm fatal   : broken' >&2\nexit 3\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(PtxforgeError, match=r"failed on the cubin \(exit 3\): nvdisasm fatal"):
        sass_liveness(compile_ptx(kernels.saxpy(), "sm_80").cubin, nvdisasm=str(tool))


# --- bad input -------------------------------------------------------------------------------

def test_garbage_is_a_ptxforge_error():
    good = compile_ptx(kernels.saxpy(), "sm_80").cubin
    for bad in (b"", b"not a cubin", b"\x7fELF" + bytes(300), good[:64], good[:len(good) // 2],
                good[:-100]):
        with pytest.raises(PtxforgeError, match=r"cubin|nvdisasm"):
            sass_liveness(bad)
    with pytest.raises(PtxforgeError, match="expected cubin bytes, a Compiled or a path"):
        sass_liveness("saxpy.cubin")


def test_a_target_this_nvdisasm_does_not_read():
    ptx = _text("call.ptx").replace(".version 8.0", ".version 7.0").replace("sm_80", "sm_70")
    try:
        c = compile_ptx(ptx, "sm_70")      # the CUDA 12 ptxas of the test extra
    except PtxforgeError as exc:
        pytest.skip(f"no ptxas for sm_70 here: {exc}")
    if nvdisasm_version(find_nvdisasm()).split(".")[0] != "13":
        pytest.skip("a CUDA 12 nvdisasm still reads sm_70")
    with pytest.raises(PtxforgeError,
                       match=r"(?s)SM70.*hint: this nvdisasm .* does not read sm_70"):
        sass_liveness(c)


# --- what real cubins show ---------------------------------------------------------------------

def _check_function(f):
    """Invariants of one parsed function against nvdisasm's own numbers."""
    offsets = [i.offset for i in f.instructions]
    assert offsets == sorted(set(offsets)) and all(o % 16 == 0 for o in offsets)
    for i in f.instructions:
        for g in f.groups:
            assert i.count(g) == len(i.registers(g)), (f.name, hex(i.offset), g)
    peak = f.peak()
    assert peak.count == max(i.count() for i in f.instructions)
    assert peak.offsets == tuple(o for o, i in zip(offsets, f.instructions)
                                 if i.count() == peak.count)
    assert peak.count <= len(f.used()) <= f.span()


def _check_kernel(k, report):
    """REGCOUNT from the span and the call graph; the peak within it."""
    f = k.function
    _check_function(f)
    for c in k.callees:
        _check_function(c)
    assert k.regcount == k.stats.registers == report.sass.regcount(k.name)
    # measured (ptxas 13.5): the kernel's own code + 2, a subroutine's span (no +2), a callee's
    need = max([k.own_span + RESERVED, k.subroutine_span] + [c.regcount for c in k.callees])
    assert k.regcount == need, k.regcount_reason()
    # the span counts the registers a CALL marks as clobbered; own/subroutine spans do not
    assert k.span >= max(k.own_span, k.subroutine_span)
    if not any(i.is_call for i in f.instructions):
        assert k.span == max(k.own_span, k.subroutine_span)
    assert k.sass_peak <= k.span <= k.regcount
    assert k.own_span <= k.regcount - RESERVED
    assert k.sass_peak_across_calls <= k.sass_peak
    if not any(i.is_call for i in f.instructions):
        assert k.sass_peak_across_calls == k.sass_peak
    assert "R1" in f.peak().registers          # the stack pointer is live throughout


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", BUILDER)
def test_builder_kernels(name, arch):
    r = builder_report(name, arch)
    (k,) = r.kernels
    _check_kernel(k, r)
    module = getattr(kernels, name)(target=arch)
    ptx = emit(module, line_info=True).splitlines()
    body, first = inspect.getsourcelines(getattr(kernels, name))
    for i in k.function.instructions:
        if i.ptx:   # the PTX line ptxas kept is the line of the PTX it compiled
            assert " ".join(ptx[i.ptx_line - 1].split()) == i.ptx
    for i in k.function.peak().instructions:
        assert i.ptx_line is not None and i.source is not None
        assert Path(i.source.file).name == "kernels.py"
        assert first <= i.source.line < first + len(body), (i.text, i.source)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", corpus_sources())
def test_corpus(name, arch):
    r = corpus_report(name, arch)
    assert r.sass.line_info and r.sass.ptx_lines and r.arch == arch == r.sass.arch
    ptx = corpus_ptx(name, arch, True).splitlines()
    for k in r.kernels:
        _check_kernel(k, r)
        for i in k.function.instructions:
            if i.ptx:
                assert " ".join(ptx[i.ptx_line - 1].split()) == i.ptx
            if i.source is not None:
                assert i.source.file.endswith(f"{name}.cu") or "cuda" in i.source.file
        assert any(i.source is not None for i in k.function.peak().instructions)


SUBROUTINES = ("calls", "softmax", "sobel_fnptr", "weno")


@pytest.mark.parametrize("arch", ARCHS)
def test_subroutine_code_gets_no_plus_two(arch):
    """Whole-program ptxas compiles .func callees and slow paths (div, rcp, sqrt) into the
    kernel as subroutines (CALL.REL); their code counts with its span alone, so REGCOUNT is
    max(own span + 2, subroutine span): the span itself for 5 of these 6 kernels."""
    seen = {}
    for name in SUBROUTINES:
        for k in corpus_report(name, arch).kernels:
            if not k.subroutine_span:
                assert k.regcount == k.span + RESERVED and k.above_span == RESERVED
                continue
            assert any(i.text.startswith("CALL.REL") for i in k.function.instructions)
            assert k.callees == ()                # nothing left outside the kernel
            assert k.regcount == max(k.own_span + RESERVED, k.subroutine_span)
            seen[k.name] = (k.own_span, k.subroutine_span, k.regcount)
            if k.regcount == k.subroutine_span > k.own_span + RESERVED:
                assert "subroutine code gets no +2" in k.regcount_reason()
    assert set(seen) == {"call_chain", "call_indirect", "softmax_rows", "sobel_fnptr",
                         "weno5_reconstruct"}
    assert sum(r == sub for _, sub, r in seen.values()) == 5, seen
    assert seen["weno5_reconstruct"] == (36, 39, 39)       # an odd REGCOUNT: no +2 at all


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", SUBROUTINES + ("reduce", "warp", "scan_by_key"))
def test_corpus_relocatable(name, arch):
    """Relocatable and linked (nvJitLink), every callee stays a function of its own: no
    subroutines in the kernel, REGCOUNT = max(own span + 2, the callees' REGCOUNT) (the span
    without the registers a CALL marks as clobbered: sobel_fnptr 36 with them, 37 without,
    REGCOUNT 37 = sobel_mag's).  (ptxas -c
    alone leaves the kernel's cubin REGCOUNT at its own span + 2; the linker raises it.)"""
    r = sass_report(corpus_ptx(name, arch, True), arch, file=f"{name}.ptx",
                    request=CompileRequest(backend="nvjitlink"))
    for k in r.kernels:
        _check_kernel(k, r)
        assert k.subroutine_span == 0
        assert k.regcount == max([k.own_span + RESERVED] + [c.regcount for c in k.callees])


def live_n(n: int, target: str) -> str:
    """n values loaded volatile (in order), then stored in reverse: all n live at once."""
    loads = "\n".join(f"\tld.volatile.global.f32 %f{i}, [%rd1+{4 * i}];" for i in range(n))
    stores = "\n".join(f"\tst.volatile.global.f32 [%rd2+{4 * i}], %f{n - 1 - i};"
                       for i in range(n))
    return (f".version 8.0\n.target {target}\n.address_size 64\n"
            ".visible .entry live_n(.param .u64 src, .param .u64 dst)\n{\n"
            f"\t.reg .b64 %rd<3>;\n\t.reg .f32 %f<{n}>;\n"
            "\tld.param.u64 %rd1, [src];\n\tld.param.u64 %rd2, [dst];\n"
            f"{loads}\n{stores}\n\tret;\n}}\n")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("n", [8, 32, 64])
def test_known_structure_peak(n, arch):
    """The n loaded values, the 64-bit destination pointer and R1: n + 3, in SASS and in PTX."""
    (k,) = sass_report(live_n(n, arch), arch).kernels
    assert k.sass_peak == n + 3
    assert k.estimate.registers == n + 3
    assert k.regcount == k.span + RESERVED
    peak = k.function.peak()
    assert all(i.ptx.startswith(("ld.volatile", "st.volatile")) for i in peak.instructions)


@pytest.mark.parametrize("cap", [24, 32, 40])
def test_a_cap_bounds_span_and_peak(cap):
    from ptxforge.toolchain.compile import CompileOptions

    r = sass_report(corpus_ptx("pressure", "sm_80", True), "sm_80",
                    request=CompileRequest(options=CompileOptions(max_registers=cap)),
                    kernel="live_window")
    (k,) = r.kernels
    assert k.regcount <= cap and k.span + RESERVED == k.regcount
    assert k.sass_peak <= cap - RESERVED


def test_call_clobbers_on_a_real_call():
    """Relocatable (ptxas -c), the .func stays a function the kernel calls by the ABI;
    whole-program, it is a subroutine of the kernel and REGCOUNT is the kernel's span + 2."""
    from ptxforge.toolchain.compile import CompileOptions

    (whole,) = sass_report(_text("call.ptx"), "sm_80").kernels
    assert whole.callees == () and whole.subroutine_span > 0
    assert [i.text for i in whole.function.instructions if i.is_call] == [
        "CALL.REL.NOINC `($caller$twice) ;"]
    assert (whole.span, whole.regcount) == (8, 10)
    r = sass_report(_text("call.ptx"), "sm_80",
                    request=CompileRequest(options=CompileOptions(relocatable=True)))
    (k,) = r.kernels
    call = next(i for i in k.function.instructions if i.is_call)
    clobbered = sum(1 for _, m in dict(call.marks)["GPR"] if m == "^")
    assert clobbered > 0
    assert call.count() - call.count(call_clobbers=False) == clobbered
    assert [c.name for c in k.callees] == ["twice"]
    assert k.regcount == max(k.span + RESERVED, k.callees[0].regcount) == 24
    assert k.callees[0].regcount == k.callees[0].span() == 24   # a .func: no +2 either


def test_wide_and_count_modes_against_narrow():
    """--life-range-mode count gives the same counts; the default wide layout parses while
    register numbers are one digit, and is refused (naming the header line) from R10 on."""
    tool = find_nvdisasm()
    small = compile_ptx(kernels.saxpy(), "sm_80").cubin
    big = compile_ptx(corpus_ptx("pressure", "sm_80"), "sm_80").cubin
    for cubin in (small, big):
        path = Path(os.environ.get("TMPDIR", "/tmp")) / f"ptxforge-test-{os.getpid()}.cubin"
        path.write_bytes(cubin)
        try:
            out = {m: subprocess.run([tool, "-c", "--life-range-mode", m, str(path)],
                                     capture_output=True, text=True, check=True).stdout
                   for m in ("narrow", "count", "wide")}
        finally:
            path.unlink()
        narrow = parse_life_ranges(out["narrow"])
        count = parse_life_ranges(out["count"])
        assert [[r.counts for r in f.rows] for f in narrow] == \
               [[r.counts for r in f.rows] for f in count]
        if cubin is small:
            assert parse_life_ranges(out["wide"]) == narrow
        else:
            with pytest.raises(PtxforgeError, match=r"^wide:\d+: the GPR register numbers are "
                                                    r"not increasing"):
                parse_life_ranges(out["wide"], "wide")


def test_cubin_alone_and_determinism():
    c = compile_ptx(corpus_ptx("reduce", "sm_80", True), "sm_80", line_info=True)
    alone = sass_report(c.cubin, file="reduce.cubin")
    assert alone.arch == "sm_80" and alone.backend is None
    assert {k.name for k in alone.kernels} == {k.name for k in c}
    for k in alone.kernels:
        assert k.estimate is None and k.regcount == c[k.name].registers
    again = sass_report(c.cubin, file="reduce.cubin")
    assert alone.to_json() == again.to_json()
    with pytest.raises(PtxforgeError, match="no kernel named 'nope'"):
        sass_report(corpus_ptx("reduce", "sm_80"), "sm_80", kernel="nope", file="reduce.ptx")


# --- the command ------------------------------------------------------------------------------

KERNEL_KEYS = {"name", "estimate", "sass", "ptxas", "regcount_minus_span", "holes",
               "estimate_minus_sass", "regcount_reason", "call_graph", "peak_values", "by_line",
               "loops", "gap", "peak_by_line", "peak_by_callsite", "traced",
               "spills_by_line"}
SASS_KEYS = {"registers", "registers_without_call_clobbers", "predicates", "uniform", "span",
             "used", "instructions", "peak_count", "peak_offsets", "live_at_peak",
             "peak_instructions"}
INSTR_KEYS = {"offset", "text", "counts", "source", "ptx_line", "ptx"}



def test_cli_json(tmp_path, capsys):
    ptx = tmp_path / "reduce.ptx"
    ptx.write_text(corpus_ptx("reduce", "sm_80", True))
    code, out, err = run(capsys, "sass", ptx, "--json", "--top", "2")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "ptxforge.sass/1" and doc["arch"] == "sm_80"
    assert {"file", "backend", "nvdisasm", "line_info", "ptx_lines"} <= set(doc)
    ref = corpus_report("reduce", "sm_80")
    assert [k["name"] for k in doc["kernels"]] == [k.name for k in ref.kernels]
    for k, kr in zip(doc["kernels"], ref.kernels):
        assert set(k) == KERNEL_KEYS and set(k["sass"]) == SASS_KEYS
        assert set(k["estimate"]) == {"registers", "predicates", "peak_index", "peak_instruction"}
        assert {"registers", "spill_stores", "spill_loads"} <= set(k["ptxas"])
        assert k["sass"]["registers"] == kr.sass_peak and k["ptxas"]["registers"] == kr.regcount
        assert k["estimate"]["registers"] == kr.estimate.registers
        assert k["regcount_minus_span"] == k["ptxas"]["registers"] - k["sass"]["span"]
        assert k["holes"] == k["sass"]["span"] - k["sass"]["registers"]
        assert len(k["sass"]["peak_instructions"]) == min(2, k["sass"]["peak_count"])
        for i in k["sass"]["peak_instructions"]:
            assert set(i) == INSTR_KEYS and i["offset"] in k["sass"]["peak_offsets"]


def test_cli_text_and_cubin(tmp_path, capsys):
    ptx = tmp_path / "weno.ptx"
    ptx.write_text(corpus_ptx("weno", "sm_80", True))
    code, out, _ = run(capsys, "sass", ptx, "--top", "3")
    k = corpus_report("weno", "sm_80").kernels[0]
    assert code == 0
    assert re.search(rf"^  weno5_reconstruct\s+{k.estimate.registers}\s+{k.sass_peak}\s+"
                     rf"{k.span}\s+{k.regcount}\s+{k.above_span}$", out, re.M)
    assert (f"REGCOUNT {k.regcount} = highest GPR used (R{k.span - 1}) + 1, in a subroutine"
            in " ".join(out.split()))       # the line may wrap at 100 columns
    assert "weno.cu:" in out
    cubin = tmp_path / "weno.cubin"
    cubin.write_bytes(compile_ptx(corpus_ptx("weno", "sm_90"), "sm_90").cubin)
    code, out, _ = run(capsys, "sass", cubin)
    head = out.splitlines()[0]       # the path is shortened from the left to fit
    assert code == 0
    assert re.match(r"^\S*weno\.cubin: sm_90; nvdisasm \d+\.\d+$", head)
    assert "compile with line_info=True" in out


def test_cli_errors(tmp_path, capsys, monkeypatch):
    ptx = tmp_path / "saxpy.ptx"
    ptx.write_text(emit(kernels.saxpy()))
    code, _, err = run(capsys, "sass", ptx, "--kernel", "nope")
    assert code == 1 and "no kernel named 'nope'" in err
    junk = tmp_path / "junk.cubin"
    junk.write_bytes(b"\x7fELF" + bytes(100))
    code, _, err = run(capsys, "sass", junk)
    assert code == 1 and err.startswith("ptxforge: error: cubin: expected a little-endian ELF64")
    monkeypatch.setenv(NVDISASM_ENV, str(tmp_path))
    code, _, err = run(capsys, "sass", ptx)
    assert code == 1 and "pip install nvidia-cuda-nvdisasm" in err
    assert "Traceback" not in err


def test_cli_output_is_the_same_in_another_process(tmp_path, capsys):
    ptx = tmp_path / "saxpy.ptx"
    ptx.write_text(emit(kernels.saxpy()))
    _, here, _ = run(capsys, "sass", ptx, "--json")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    there = subprocess.run([sys.executable, "-m", "ptxforge", "sass", str(ptx), "--json"],
                           capture_output=True, text=True, env=env, check=True).stdout
    assert here == there


WARP_SYNC = ["redux.sync.add.u32 %r2, %r1, 0xffffffff;",
             "match.any.sync.b32 %r2, %r1, 0xffffffff;",
             "vote.sync.ballot.b32 %r2, 1, 0xffffffff;",
             "bar.warp.sync 0xffffffff; mov.u32 %r2, %r1;",
             "shfl.sync.idx.b32 %r2, %r1, 0, 31, 0xffffffff;"]


def one_op(op: str, target: str) -> str:
    return (f".version 8.0\n.target {target}\n.address_size 64\n.visible .entry k(.param .u64 p)\n"
            "{\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<3>;\n\tld.param.u64 %rd1, [p];\n"
            "\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.u32 %r1, [%rd2];\n"
            f"\t{op}\n\tst.global.u32 [%rd2], %r2;\n\tret;\n}}\n")


@pytest.mark.parametrize("op", WARP_SYNC)
def test_warp_sync_floor_is_the_call_graph(op):
    """Relocatable on sm_80, ptxas 13 puts a __cuda_* helper per warp-synchronous instruction
    in the kernel's call graph (the SASS instruction stays inline) and REGCOUNT is the
    helper's; on sm_90, and whole-program on sm_80, there is no helper and REGCOUNT is the
    kernel's own span + 2."""
    from ptxforge.toolchain.compile import CompileOptions

    rel = CompileRequest(options=CompileOptions(relocatable=True))
    plain = sass_report(one_op("mov.u32 %r2, %r1;", "sm_80"), "sm_80", request=rel).kernels[0]
    (k80,) = sass_report(one_op(op, "sm_80"), "sm_80", request=rel).kernels
    (k90,) = sass_report(one_op(op, "sm_90"), "sm_90", request=rel).kernels
    (whole,) = sass_report(one_op(op, "sm_80"), "sm_80").kernels
    assert whole.callees == () and whole.regcount == whole.span + RESERVED < 24
    assert plain.callees == () and plain.regcount == plain.span + RESERVED
    assert len(k80.callees) == 1 and k80.callees[0].name.startswith("__cuda_")
    assert not any(i.is_call for i in k80.function.instructions)
    assert k80.regcount == k80.callees[0].regcount > k80.span + RESERVED
    assert "is the call graph's maximum" in k80.regcount_reason()
    assert k90.callees == () and k90.regcount == k90.span + RESERVED


def test_docs_examples_are_what_the_command_prints(tmp_path, capsys, monkeypatch):
    """docs/sass.md: the python block runs, and each `$ ptxforge sass` example is this
    command's output (source paths and column padding aside: they follow the checkout)."""
    doc = (ROOT / "docs" / "sass.md").read_text()
    for block in re.findall(r"```python\n(.*?)```", doc, re.S):
        exec(compile(block, "docs/sass.md", "exec"), {})
    capsys.readouterr()
    examples = re.findall(r"```\n\$ (ptxforge sass .*?)\n(.*?)```", doc, re.S)
    assert len(examples) == 2
    version = re.search(r"nvdisasm (\d+\.\d+)", examples[0][1]).group(1)
    if nvdisasm_version(find_nvdisasm()) != version:
        pytest.skip(f"the examples were made with nvdisasm {version}")

    def norm(text: str) -> str:   # where a long line wraps follows the checkout's path too
        return re.sub(r"\s+", " ", re.sub(r"\S*/(\w+\.cu:)", r"\1", text)).strip()

    monkeypatch.chdir(tmp_path)
    for command, expected in examples:
        argv = command.split()[1:]
        Path(argv[1]).write_text(corpus_ptx(argv[1].removesuffix(".ptx"), "sm_80", True))
        code, out, _ = run(capsys, *argv)
        assert code == 0 and norm(out) == norm(expected)


def test_arch_defaults_to_the_ptx_target():
    """Without an arch, sass compiles for the PTX's own .target (as analyze does), so PTX
    written for sm_90a is not refused by ptxas for a default sm_80."""
    src = (Path(__file__).parents[1] / "data" / "styles" / "triton_style.ptx").read_text()
    assert ".target sm_90a" in src
    res = sass_report(src, file="triton_style.ptx")
    assert res.arch == "sm_90a"
    assert sass_report(src, "sm_90a", file="t.ptx").to_dict()["kernels"] == res.to_dict()["kernels"]
