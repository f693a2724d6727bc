"""``advise``'s ``#pragma unroll N``: when the line at the register peak is a replicated loop
body, the loop around it gets a smaller unroll.  Given the ``.cu`` the change is compiled
(NVRTC, then ptxas) and the test makes the same edit by hand and gets the same figures; given
only the PTX the item is marked as not proven."""

from __future__ import annotations

import re

from tests.support.cli_util import run_json
from tests.support.corpus_util import CORPUS_DIR, compile_cu, stable_source

from ptxforge.reports.advise import advise
from ptxforge.reports.levers import compile_outcome
from ptxforge.reports.unroll import source_loops, with_unroll

GEMM = (CORPUS_DIR / "gemm.cu").read_text()


def _unroll(items):
    return [it for it in items if it["kind"] == "unroll"]


def test_cu_input_gets_a_proven_pragma_unroll(capsys):
    # the same path in every run: the compiles of the variants are the tool memo's to answer
    path = stable_source(GEMM, "gemm.cu")
    d = run_json(capsys, "advise", path, "--kernel", "sgemm_8x8")
    (k,) = d["kernels"]
    (item,) = _unroll(k["items"])
    assert item["proven"] is True and item["rank"] == 1
    m = re.match(r"#pragma unroll (\d+) on the loop at gemm\.cu:(\d+) ", item["change"])
    assert m, item["change"]
    n, loop = int(m.group(1)), int(m.group(2))
    lines = GEMM.splitlines()
    fma = next(i for i, t in enumerate(lines, 1) if "fmaf(" in t)
    assert f"it holds gemm.cu:{fma} " in item["change"]      # the FMA line: the SASS peak
    assert lines[loop - 1].lstrip().startswith("for (")
    # the user's edit, by hand: the #pragma unroll above that loop gets the count
    assert lines[loop - 2].strip() == "#pragma unroll"
    edited = "\n".join(lines[:loop - 2] + [f"#pragma unroll {n}"] + lines[loop - 1:])
    got = compile_outcome(compile_cu(edited, "gemm", "sm_80", lineinfo=True), "sgemm_8x8",
                          "sm_80", 64)
    after = item["after"]
    assert (after["registers"], after["blocks_per_sm"], after["spill_stores"],
            after["spill_loads"], after["instructions"]) == \
        (got.registers, got.blocks_per_sm, got.spill_stores, got.spill_loads,
         got.instructions)
    assert got.blocks_per_sm > k["before"]["blocks_per_sm"] and got.spill == 0
    # every variant tried is listed with its compile; the advice is the best of those that
    # add no spills and no stack (unrolling the accumulator loops once puts acc[][] in local
    # memory: a stack frame, however many blocks fit)
    assert {(t["loop_line"], t["unroll"]) for t in item["tries"]} >= {(loop, n)}
    clean = [t["compiled"] for t in item["tries"] if t["compiled"]["spill_stores"] == 0
             and t["compiled"]["stack_frame"] <= k["before"]["stack_frame"]]
    assert max(c["occupancy"] for c in clean) == after["occupancy"]
    assert any(t["compiled"]["stack_frame"] > 0 for t in item["tries"])


def _ptx_naming(path) -> str:
    """sgemm's PTX with its .file naming ``path`` (where its .loc lines say the source is)."""
    ptx = compile_cu(GEMM, "gemm", "sm_80", lineinfo=True)
    return re.sub(r'(\.file\s+1\s+)"[^"]*"', lambda m: f'{m.group(1)}"{path}"', ptx, count=1)


def test_ptx_input_says_the_unroll_is_not_proven():
    fma = next(i for i, t in enumerate(GEMM.splitlines(), 1) if "fmaf(" in t)
    # paths that are the same in every run (the tool memo answers the compiles)
    here = stable_source(GEMM, "gemm.cu")
    gone = here.parent / "gone" / "gemm.cu"
    assert not gone.exists()
    # the source is not where the .loc lines say: the loop is not known either
    r = advise(_ptx_naming(gone), "gemm.ptx", "sm_80", kernel="sgemm_8x8")
    (k,) = r.kernels
    (item,) = [it for it in k.items if it.kind == "unroll"]
    assert item.proven is False and item is k.items[-1]       # ranked after proven items
    d = item.to_dict(len(k.items))
    assert d["after"] is None and d["buys"] is None and d["proven"] is False
    assert "pass the .cu" in d["after_from"] and "not on this machine" in d["after_from"]
    assert f"the loop around gemm.cu:{fma} " in item.change
    assert "not proven: advise was given the PTX" in r.to_text()
    # the source is there: the loops around the line are named, still not proven
    r = advise(_ptx_naming(here), "gemm.ptx", "sm_80", kernel="sgemm_8x8")
    (item,) = [it for it in r.kernels[0].items if it.kind == "unroll"]
    around = sorted((lp.line for lp in source_loops(GEMM) if lp.holds(fma)), reverse=True)
    assert item.proven is False and around[-1] < fma
    assert "one of the loops at " + ", ".join(f"gemm.cu:{n}" for n in around) in item.change


FLAT = """__global__ void flat(const float* __restrict__ a, float* out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float s = a[t] * a[t + 64] + a[t + 128] * a[t + 192] + a[t + 256] * a[t + 320];
    out[t] = s;
}
"""


def test_a_repeated_line_in_no_loop_gets_no_unroll_advice(tmp_path):
    """Six loads on one line are six copies of ld.global, but no loop holds the line: no
    #pragma unroll is suggested (from the .cu, and from the PTX whose source is on disk)."""
    from ptxforge.frontends.cuda_source import compile_cuda
    from ptxforge.reports.analyze import analyze_ptx
    from ptxforge.reports.unroll import line_copies, peak_line

    path = str(tmp_path / "flat.cu")
    (tmp_path / "flat.cu").write_text(FLAT)
    ptx = compile_cuda(FLAT, path, "sm_80")
    (k,) = analyze_ptx(ptx, "flat.ptx", "sm_80").kernels
    where = peak_line(k)
    assert where[1] == 4 and line_copies(k.kernel)[where[:2]] >= 2     # replicated, no loop
    for source in (None, (FLAT, path, lambda t: compile_cuda(t, path, "sm_80"))):
        r = advise(ptx, path, "sm_80", source=source)
        assert not [it for it in r.kernels[0].items if it.kind == "unroll"]
        assert not any("unroll" in n for n in r.kernels[0].notes)


def test_a_variant_nvrtc_refuses_is_a_try_not_a_crash():
    """The source's compile is the judge: a variant that does not compile is recorded with
    NVRTC's error and never advised."""
    from ptxforge.errors import PtxforgeError

    ptx = compile_cu(GEMM, "gemm", "sm_80", lineinfo=True)

    def refuse(text):
        raise PtxforgeError("gemm.cu:19: error: refused for the test")

    r = advise(ptx, "gemm.cu", "sm_80", kernel="sgemm_8x8", source=(GEMM, "gemm.cu", refuse))
    (k,) = r.kernels
    assert not [it for it in k.items if it.kind == "unroll"]
    assert any("unrolling less gains no block" in n for n in k.notes)


def test_source_loops_and_the_edit():
    src = ("__global__ void k(float* x) {\n"
           "    // for (int z = 0; z < 2; ++z) is a comment\n"
           "#pragma unroll\n"
           "    for (int i = 0; i < 8; ++i) {\n"
           "        for (int j = 0; j < 8; ++j)\n"
           "            x[i * 8 + j] += 1.0f;\n"
           "    }\n"
           "    int n = 0; do { ++n; } while (n < 3);\n"
           "}\n")
    loops = source_loops(src)
    assert [(lp.line, lp.body, lp.pragma, lp.pragma_line) for lp in loops] == \
        [(4, (4, 7), "", 3), (5, (6, 6), None, None)]
    assert with_unroll(src, loops[0], 2).splitlines()[2] == "#pragma unroll 2"
    out = with_unroll(src, loops[1], 1).splitlines()
    assert out[4] == "        #pragma unroll 1" and out[5].lstrip().startswith("for (int j")
