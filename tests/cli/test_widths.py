"""Every command's text output fits in 100 columns on a multi-kernel file, and the small
output fixes that go with it: register ranges in ``sass``, generic loads and stores in the
key-instruction table, ``diff`` counting only known-to-known changes, singular grammar.

The multi-kernel file is nine corpus sources compiled as one NVRTC program with -lineinfo
(21 kernels: templates, calls, recursion, spills, stack); its cubin comes from the
whole-program ptxas executable.
"""

from __future__ import annotations

import json
import re
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptxforge._text import reg_ranges, table, wrap
from ptxforge.toolchain.compile import compile_ptx

from cli_util import run
from corpus_util import CORPUS_DIR, compile_cu
from hypothesis_profiles import examples

WIDTH = 100
SOURCES = ("templates", "stencil", "reduce", "pressure", "calls", "weno", "warp", "atomics",
           "tree")


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """(many.ptx, many.cubin, capped.ptx): the same program, its cubin, and a copy with
    ``.maxnreg 32`` on ``live_window`` only."""
    d = tmp_path_factory.mktemp("widths")
    source = "\n".join((CORPUS_DIR / f"{n}.cu").read_text() for n in SOURCES)
    ptx = compile_cu(source, "widths", "sm_80", True)
    assert len(re.findall(r"^(?:\.\w+\s+)*\.entry\s", ptx, re.M)) == 21
    many = d / "many.ptx"
    many.write_text(ptx)
    cubin = d / "many.cubin"
    cubin.write_bytes(compile_ptx(ptx, "sm_80", backend="ptxas").cubin)
    capped = d / "capped.ptx"
    head, rest = ptx.split(".entry live_window(", 1)
    params, body = rest.split(")\n", 1)
    capped.write_text(f"{head}.entry live_window({params})\n.maxnreg 32\n{body}")
    return many, cubin, capped


def _widest(text: str) -> tuple:
    lines = text.splitlines()
    widest = max(lines, key=len, default="")
    return len(widest), widest


def _commands(many, cubin, capped):
    return {
        "analyze (summary)": ("analyze", many),
        "analyze --full": ("analyze", many, "--full"),
        "analyze --by callsite": ("analyze", many, "--full", "--by", "callsite"),
        "analyze --relocatable": ("analyze", many, "--full", "--relocatable"),
        "analyze cubin": ("analyze", cubin),
        "sass": ("sass", many),
        "sass cubin": ("sass", cubin),
        "check": ("check", many, "--max-registers", 24, "--no-spills", "--max-stack", 0,
                  "--min-occupancy", "90%", "--block", 256),
        "diff": ("diff", many, capped),
        "diff --all": ("diff", many, capped, "--all"),
        "diff --markdown": ("diff", many, capped, "--markdown"),
        "diff ptx/cubin --all": ("diff", many, cubin, "--all"),
        "sweep": ("sweep", many, "--kernel", "live_window", "--spill-budget", 4096),
        "compare": ("compare", many, capped),
        "occupancy": ("occupancy", "--arch", "sm_86", "--regs", 51, "--block", 256),
        "occupancy (cannot launch)": ("occupancy", "--arch", "sm_86", "--regs", 255,
                                      "--block", 1024, "--smem", 90000),
    }


def test_no_line_of_any_command_is_over_100_columns(capsys, build):
    too_wide = {}
    for what, argv in _commands(*build).items():
        code, out, err = run(capsys, *argv)
        assert code in (0, 1) and out, f"{what}: exit {code}: {err}"
        assert len(out.splitlines()) >= 2, what
        n, line = _widest(out)
        if n > WIDTH:
            too_wide[what] = f"{n}: {line}"
    assert too_wide == {}


def test_the_summary_names_every_kernel_apart(capsys, build):
    many, _, _ = build
    code, out, _ = run(capsys, "analyze", many)
    rows = [line.split("  ")[1] for line in out.splitlines()
            if re.match(r"^  \S", line) and not line.startswith("  kernel ")][:21]
    names = [r.strip() for r in rows]
    assert len(set(names)) == 21 and "map2<float, Saxpy<float> >" in names
    assert "21 kernels, so one line each" in out


def test_sass_writes_live_registers_as_ranges(capsys, build):
    many, _, _ = build
    code, out, _ = run(capsys, "sass", many, "--kernel", "live_window")
    doc = json.loads(run(capsys, "sass", many, "--kernel", "live_window", "--json")[1])
    live = doc["kernels"][0]["sass"]["live_at_peak"]
    line = next(x for x in out.splitlines() if x.startswith("  live at 0x"))
    text = line.split(": ", 1)[1]
    assert re.search(r"\bR\d+-R\d+\b", text)
    # the ranges expand back to exactly the registers listed one by one
    expanded = []
    for part in text.split():
        m = re.fullmatch(r"R(\d+)-R(\d+)", part)
        expanded += [f"R{i}" for i in range(int(m[1]), int(m[2]) + 1)] if m else [part]
    assert expanded == live and len(live) >= 20


def test_reg_ranges_and_table_fitting():
    assert reg_ranges(["R0", "R1", "R2", "R4", "R6", "R7", "P0", "P1", "RZ"]) == \
        "R0-R2 R4 R6-R7 P0-P1 RZ"
    assert reg_ranges([]) == ""
    rows = [("kernel_" + "x" * 80, 1, "why " * 40)]
    out = table(("name", "n", "why"), rows, width=WIDTH, shrink=(0,), wrap_last=True)
    assert max(map(len, out)) <= WIDTH and len(out) > 2
    assert " ".join(out[1:]).split()[2:] == ["why"] * 40
    assert all(len(x) <= 40 for x in wrap("word " * 50, 40))


def test_numba_generic_loads_and_stores_show_in_the_key_table(capsys, tmp_path):
    pytest.importorskip("numba", reason="numba-cuda is an optional extra")
    from numba import float32

    from ptxforge.frontends.numba import compile_to_ptx

    from numba_kernels import stencil9

    ptx = compile_to_ptx(stencil9, (float32[:], float32[:], float32[:]), target="sm_80")
    path = tmp_path / "stencil9.ptx"
    path.write_text(ptx)
    ops = re.findall(r"^\s*(?:@%p\d+\s+)?((?:ld|st)\.[\w.:]+)", ptx, re.M)
    spaces = ("global", "shared", "local", "param", "const")
    generic = {op: sum(1 for o in ops if o.split(".")[0] == op
                       and not any(p.split("::")[0] in spaces for p in o.split(".")[1:]))
               for op in ("ld", "st")}
    assert generic["ld"] >= 9 and generic["st"] >= 1   # numba writes ld.f32 / st.f32
    code, out, _ = run(capsys, "analyze", path, "--no-compile")
    counts = dict(re.findall(r"^  (ld \(generic\)|st \(generic\))\s+(\d+)$", out, re.M))
    assert counts == {"ld (generic)": str(generic["ld"]), "st (generic)": str(generic["st"])}


def test_diff_counts_only_known_to_known_changes(capsys, build):
    many, cubin, capped = build
    code, out, _ = run(capsys, "diff", many, cubin, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["changed"] == 0 and doc["kernels"] == 21
    code, out, _ = run(capsys, "diff", many, cubin, "--all")
    row = next(x for x in out.splitlines() if x.startswith("  live_window "))
    assert "n/a" in row and "→" not in row
    code, out, _ = run(capsys, "diff", many, capped, "--json")
    doc = json.loads(out)
    assert doc["changed"] == 1 and doc["rows"][0]["kernel"] == "live_window"
    assert doc["rows"][0]["new"]["registers"] <= 32 < doc["rows"][0]["old"]["registers"]


def test_singular_grammar(capsys, build):
    code, out, _ = run(capsys, "occupancy", "--arch", "sm_86", "--regs", 255, "--block", 1024)
    assert "give 1 block/SM" in out and "1 blocks/SM" not in out
    many, _, _ = build
    for kernel, n in (("weno5_reconstruct", 1), ("call_indirect", 3)):
        code, out, _ = run(capsys, "analyze", many, "--kernel", kernel, "--relocatable")
        calls = " ".join(x.strip() for x in out.split("\n  calls ", 1)[1].splitlines()[:3])
        assert calls.startswith(f"{n} function{'s' if n > 1 else ''}: ")
        assert calls.split("; ")[1].startswith(
            "registers, spills and stack cover " + ("it" if n == 1 else "them"))


_PIECES = [" ", "  ", "a", "bb", "-", "\t", "\n", "\r", "\xa0", "\u2003", "x" * 30, "é"]


@settings(max_examples=examples(2), deadline=None)
@given(text=st.lists(st.sampled_from(_PIECES), max_size=20).map("".join),
       width=st.integers(5, 60), indent=st.sampled_from(["", "  ", "- "]))
def test_wrap_gives_what_textwrap_gives(text, width, indent):
    # a line that fits skips textwrap: it must give the same lines
    want = textwrap.wrap(text, width, initial_indent=indent, subsequent_indent="  ",
                         break_long_words=False, break_on_hyphens=False) or [indent]
    assert wrap(text, width, indent) == want


LONG_NAMES = """
extern "C" __device__ __noinline__ float %(f)s(float x) { return x * x + 1.0f; }
extern "C" __global__ void %(k)s(float* out, const float* in)
{
    out[threadIdx.x] = %(f)s(in[threadIdx.x]);
}
template <int BM, int BN, int BK, int TM, int TN>
__global__ void tile(const float* A, const float* B, float* C, int K)
{
    __shared__ float As[BM * BK], Bs[BK * BN];
    const int r = threadIdx.x / (BN / TN), c = threadIdx.x %% (BN / TN);
    float acc[TM * TN] = {0}, a[TM], b[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int o = threadIdx.x; o < BM * BK; o += blockDim.x) As[o] = A[k0 * BM + o];
        for (int o = threadIdx.x; o < BK * BN; o += blockDim.x) Bs[o] = B[k0 * BN + o];
        __syncthreads();
        #pragma unroll
        for (int d = 0; d < BK; ++d) {
            #pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[d * BM + r * TM + i];
            #pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[d * BN + c * TN + j];
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                #pragma unroll
                for (int j = 0; j < TN; ++j) acc[i * TN + j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM * TN; ++i) C[threadIdx.x * TM * TN + i] = acc[i];
}
template __global__ void tile<128, 128, 8, 8, 8>(const float*, const float*, float*, int);
"""


def test_names_without_spaces_and_long_peaks_fit_too(capsys, tmp_path):
    """A 1,200-character extern "C" kernel (one word: it cannot wrap) and callee, and a peak
    reached at over a thousand instructions: every line but the full name's own fits."""
    k, f = "k" * 1200, "helper_" + "f" * 300
    ptx = compile_cu(LONG_NAMES % {"k": k, "f": f}, "long_names", "sm_80", options=("-rdc=true",))
    path = tmp_path / "long.ptx"
    path.write_text(ptx)
    for argv in (("analyze", path, "--full"), ("sass", path)):
        code, out, err = run(capsys, *argv)
        assert code == 0, err
        lines = out.splitlines()
        wide = [line[:120] for line in lines if len(line) > WIDTH
                and not line.startswith(("mangled name: ", "full name: "))]
        assert wide == [], argv
        assert f"full name: {k}" in lines            # the whole name is still there, once
