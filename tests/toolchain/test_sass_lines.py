"""The cubin's DWARF line tables read by ptxforge give, for every SASS instruction, the source
and PTX line that ``nvdisasm -gi -gp`` prints (the real ptxas and nvdisasm, on the NVRTC
corpus, nested inlining across three levels, cub and wmma headers, and Triton and numba
output), so ``sass_liveness`` runs nvdisasm once instead of twice."""

from __future__ import annotations

import functools
import re
import struct
from pathlib import Path

import pytest
from family_corpus import FAMILY_ROOT, family_corpus

from ptxforge.toolchain import sass as sass_mod
from ptxforge.toolchain.compile import compile_ptx
from ptxforge.toolchain.cubin import read_cubin
from ptxforge.toolchain.sass import find_nvdisasm, sass_liveness
from ptxforge.toolchain.sass_lines import LineTableUnsupported, function_lines, read_line_tables
from ptxforge.toolchain.sass_listing import parse_line_annotations

from corpus_util import compile_cu, corpus_ptx, corpus_sources, cuda_include_dirs

_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/")
NESTED = Path(__file__).parents[1] / "data" / "cu" / "nested_inline.cu"


@functools.lru_cache(maxsize=None)
def _module(which: str) -> str:
    """PTX with line info: a corpus source, the nested-inlining file, a family built with its
    headers, or the Triton / numba family modules."""
    kind, _, name = which.partition(":")
    if kind == "corpus":
        return corpus_ptx(name, "sm_80", True)
    if kind == "nested":
        return compile_cu(NESTED.read_text(), "nested_inline", "sm_80", True)
    if kind == "family":
        flags = ("-std=c++17", *(f"-I{d}" for d in cuda_include_dirs()))
        return compile_cu((FAMILY_ROOT / f"{name}.cu").read_text(), name, "sm_80", True, flags)
    return family_corpus("sm_80", (name,))[0].kernel.ptx


MODULES = ([f"corpus:{n}" for n in corpus_sources()] + ["nested:nested_inline"]
           + ["family:cub_block", "family:wmma_gemm", "python:triton_fused",
              "python:numba_kernels"])


def _expected(cubin: bytes) -> tuple:
    """What nvdisasm prints: (source lines, PTX lines, instruction offsets per function)."""
    text = sass_mod._run(find_nvdisasm(), cubin, ("-c", "-gi", "-gp"))
    offsets: dict = {}
    cur = None
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:
            cur = offsets.setdefault(m.group(1), [])
            continue
        m = _INSTR.match(line)
        if m and cur is not None:
            cur.append(int(m.group(1), 16))
    return (parse_line_annotations(text, ptx=False), parse_line_annotations(text, ptx=True),
            offsets)


@pytest.mark.parametrize("which", MODULES)
def test_line_tables_match_nvdisasm(which):
    cubin = compile_ptx(_module(which), "sm_80", line_info=True).cubin
    src, ptx = read_line_tables(cubin, read_cubin(cubin))
    want_src, want_ptx, offsets = _expected(cubin)
    assert offsets and src and ptx
    lined = 0
    for fn, offs in offsets.items():
        assert function_lines(src.get(fn), offs) == want_src.get(fn, {}), fn
        assert function_lines(ptx.get(fn), offs) == want_ptx.get(fn, {}), fn
        lined += len(want_src.get(fn, {}))
    assert lined > 0


def _inlined_call_opcodes(cubin: bytes) -> int:
    info = read_cubin(cubin)
    (sec,) = [s for s in info.sections if s.name == ".debug_line"]
    return cubin[sec.offset:sec.offset + sec.size].count(b"\x00\x03\x90")


def test_the_nested_file_exercises_inlined_calls():
    """nvdisasm prints an inlined row as its chain of call sites, ending with the outermost
    one alone: the line an instruction keeps is the kernel's call site, for every level."""
    cubin = compile_ptx(_module("nested:nested_inline"), "sm_80", line_info=True).cubin
    assert _inlined_call_opcodes(cubin) >= 3
    src, _ = read_line_tables(cubin, read_cubin(cubin))
    lines = NESTED.read_text().splitlines()
    calls = {n for n, t in enumerate(lines, 1) if "CALL_A" in t or "CALL_B" in t}
    leaf = next(n for n, t in enumerate(lines, 1) if "// LEAF" in t)
    nest = set(src["nest"][1])
    assert {s.line for s in nest} & calls and leaf not in {s.line for s in nest}


def test_sass_liveness_runs_nvdisasm_once(monkeypatch):
    ptx = corpus_ptx(corpus_sources()[0], "sm_80", True)
    cubin = compile_ptx(ptx, "sm_80", line_info=True).cubin
    runs = []
    real = sass_mod._run
    monkeypatch.setattr(sass_mod, "_run", lambda tool, data, flags: runs.append(flags) or
                        real(tool, data, flags))
    fast = sass_liveness(cubin)
    assert runs == [("-c", "--life-range-mode", "narrow")]

    def refuse(data, info):
        raise LineTableUnsupported("test")

    monkeypatch.setattr(sass_mod, "read_line_tables", refuse)
    slow = sass_liveness(cubin)
    assert len(runs) == 3 and ("-c", "-gi", "-gp") in runs
    assert slow == fast and fast.line_info and fast.ptx_lines


def _patched(cubin: bytes, edit) -> bytes:
    info = read_cubin(cubin)
    (sec,) = [s for s in info.sections if s.name == ".debug_line"]
    data = bytearray(cubin)
    edit(data, sec.offset)
    return bytes(data)


@pytest.mark.parametrize("what, edit", [
    ("a DWARF 5 table", lambda d, at: struct.pack_into("<H", d, at + 4, 5)),
    ("64-bit DWARF", lambda d, at: struct.pack_into("<I", d, at, 0xFFFFFFFF)),
    ("a table cut short", lambda d, at: struct.pack_into("<I", d, at, 0x7FFFFFF0)),
])
def test_tables_it_does_not_read_are_refused(what, edit):
    cubin = compile_ptx(_module("nested:nested_inline"), "sm_80", line_info=True).cubin
    with pytest.raises(LineTableUnsupported):
        read_line_tables(_patched(cubin, edit), read_cubin(cubin))


def test_a_cubin_without_line_info_has_no_tables():
    cubin = compile_ptx(corpus_ptx(corpus_sources()[0], "sm_80", False), "sm_80").cubin
    assert read_line_tables(cubin, read_cubin(cubin)) == ({}, {})
    assert function_lines(None, (0, 16)) == {}


def test_a_file_table_without_its_end_is_refused():
    """A directory name that runs to the end of the section (no NUL) is refused as a table
    this reader does not handle, not raised as a ValueError."""
    cubin = compile_ptx(_module("nested:nested_inline"), "sm_80", line_info=True).cubin
    info = read_cubin(cubin)
    (sec,) = [s for s in info.sections if s.name == ".debug_line"]
    assert struct.unpack_from("<H", cubin, sec.offset + 4)[0] == 3 and cubin[sec.offset + 14] == 13
    data = bytearray(cubin)
    start = sec.offset + 27          # DWARF 3: the directory table follows 12 opcode lengths
    data[start:sec.offset + sec.size] = b"A" * (sec.offset + sec.size - start)
    with pytest.raises(LineTableUnsupported, match="debug_line"):
        read_line_tables(bytes(data), info)
