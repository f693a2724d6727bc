"""Model 13's loops that ptxas unrolls: a one-block loop whose exit test's counter steps by a
literal, with no ``.pragma "nounroll"``, no atomic, barrier, fence or warp shuffle and at most
``UNROLL_BODY`` instructions, is unrolled x4 by ptxas, and below the occupancy budget the
copies' loads issue together (docs/prediction.md, rule 2, "Loops ptxas unrolls").  Checked
against whole-program ptxas and nvdisasm on hand-made PTX and on CUDA C++ compiled with NVRTC
here."""

from __future__ import annotations

from prediction_sass import compiled, scheduled

from ptxforge import parse
from ptxforge.analysis.prediction import predict_registers
from ptxforge.analysis.prediction.unroll import unroll_loops
from ptxforge.arch.ptxas_model import UNROLL, UNROLL_BODY


def _loop(extra: str = "", step: str = "128", loads: int = 1, fmas: int = 0,
          pragma: str = "") -> str:
    """A loop that loads ``loads`` values per iteration and sums them (then ``fmas`` more
    instructions, ``extra``), its counter stepped by ``step``."""
    body = [pragma] if pragma else []
    for j in range(loads):
        body += [f"ld.global.f32 %f{10 + j}, [%rd2+{4 * j}];", f"add.f32 %f1, %f1, %f{10 + j};"]
    body += ["fma.rn.f32 %f1, %f1, 0f3F000001, 0f3F800000;"] * fmas
    body += [extra] if extra else []
    lines = "\n    ".join(body)
    return f""".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 o, .param .u32 n, .param .u32 s)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .f32 %f<40>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd3, [o];
    ld.param.u32 %r1, [n];
    ld.param.u32 %r5, [s];
    mov.u32 %r2, %tid.x;
    mov.f32 %f1, 0f00000000;
    mul.wide.u32 %rd4, %r2, 4;
    add.s64 %rd2, %rd1, %rd4;
    setp.ge.s32 %p1, %r2, %r1;
    @%p1 bra DONE;
LOOP:
    {lines}
    add.s64 %rd2, %rd2, 512;
    add.s32 %r2, %r2, {step};
    setp.lt.s32 %p2, %r2, %r1;
    @%p2 bra LOOP;
DONE:
    st.global.f32 [%rd3], %f1;
    ret;
}}
"""


def _copies_in_sass(ptx: str, loads: int) -> int:
    """How many copies of the loop's loads ptxas's SASS has (7 when unrolled x4: the loop's 4
    and tails of 2 and 1)."""
    sass = compiled(ptx)[1].function("k")
    return sum(1 for i in sass.instructions if i.text.lstrip("@!P0123456 ").startswith("LDG")) \
        // loads


def test_the_loops_the_rule_unrolls_are_the_ones_ptxas_unrolls():
    # measured (ptxas 13.5, nvdisasm 13.5, sm_80): a literal step is unrolled x4 with tails of
    # 2 and 1 (7 copies of the load); a step read from a parameter, NVVM's nounroll pragma, an
    # atomic, a shared atomic, a barrier, a fence or a warp shuffle in the body keep one copy;
    # a store does not.  Four loads and fmas up to UNROLL_BODY instructions (the branch
    # included) unroll, one more does not.
    four = 4 * 2 + 4   # the loads and adds, the two steps, the test and the branch
    cases = [
        (_loop(), 1, True),
        (_loop(step="%r5"), 1, False),
        (_loop(pragma='.pragma "nounroll";'), 1, False),
        (_loop("atom.global.add.u32 %r6, [%rd3], 1;"), 1, False),
        (_loop("atom.shared.add.u32 %r6, [%r2], 1;"), 1, False),
        (_loop("bar.sync 0;"), 1, False),
        (_loop("membar.gl;"), 1, False),
        (_loop("shfl.sync.bfly.b32 %f12, %f1, 1, 31, -1;"), 1, False),
        (_loop("st.global.f32 [%rd2+4], %f1;"), 1, True),
        (_loop(loads=4, fmas=UNROLL_BODY - four), 4, True),
        (_loop(loads=4, fmas=UNROLL_BODY - four + 1), 4, False),
    ]
    for ptx, loads, unrolled in cases:
        copies = _copies_in_sass(ptx, loads)
        assert copies == (7 if unrolled else 1), (ptx, copies)
        k, n = unroll_loops(parse(ptx).kernel("k"))
        assert n == (1 if unrolled else 0), ptx
        if n:
            assert sum(i.opcode.startswith("ld.global") for i in k.instructions) == UNROLL * loads


def test_the_copies_are_independent_and_the_last_writes_the_ptx_registers():
    ptx = _loop(loads=2)
    k, n = unroll_loops(parse(ptx).kernel("k"))
    assert n == 1
    loads = [i for i in k.instructions if i.opcode.startswith("ld.global")]
    # each copy but the last loads into registers of its own; the last into the PTX's
    assert len({i.operands[0].name for i in loads}) == 2 * UNROLL
    assert [i.operands[0].name for i in loads[-2:]] == ["%f10", "%f11"]
    # the sum is carried from copy to copy, and the branch closes the loop once
    adds = [i for i in k.instructions if i.opcode == "add.f32"]
    assert adds[-1].operands[0].name == "%f1" and adds[0].operands[1].name == "%f1"
    assert adds[1].operands[1] == adds[0].operands[0]
    assert sum(i.opcode == "bra" for i in k.instructions) == 2


#: Loops over a row with a literal stride (NVVM unrolls them x4 first, and ptxas x4 again)
#: beside a grid-stride loop (its stride is read from %ntid and %nctaid: not unrolled):
#: compiled here with NVRTC, not in any split.
_LOOPS = r"""
__global__ void row_max(const float* x, float* out, int n)
{
    int row = blockIdx.x, lane = threadIdx.x;
    float m = -__int_as_float(0x7f800000);
    for (int c = lane; c < n; c += 32) m = fmaxf(m, x[row * n + c]);
    out[row * 32 + lane] = m;
}
__global__ void row_dot(const float* a, const float* b, float* out, int n)
{
    int row = blockIdx.x, lane = threadIdx.x;
    float s = 0.f;
    for (int c = lane; c < n; c += 32) s += a[row * n + c] * b[c];
    out[row * 32 + lane] = s;
}
__global__ void grid_sum(const float* x, float* out, int n)
{
    float s = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        s += x[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""


def test_row_loops_against_ptxas_and_the_sass():
    # measured (ptxas 13.5, nvdisasm 13.5, sm_80), scheduled peak against the SASS peak
    # without R1, model 12 in brackets: row_max 22 (10) against 23, ptxas 31, predicted 29
    # (17); row_dot 25 (16) against 25, ptxas 28, predicted 32 (23: its count has no hole
    # where the model adds 4); grid_sum keeps its one copy (5 against 6, 10 against 12).
    from ptxforge.frontends.cuda_source import compile_cuda

    ptx = compile_cuda(_LOOPS, "loops.cu", "sm_80", ["-std=c++17"])
    truth, sass = compiled(ptx)
    got = {}
    for k in parse(ptx).kernels:
        p = predict_registers(k)
        got[k.name] = (p, sass.function(k.name).peak().count - 1, truth[k.name])
    for name in ("_Z7row_maxPKfPfi", "_Z7row_dotPKfS0_Pfi"):
        p, peak, t = got[name]
        assert "unrolled x4" in p.component("scheduling").detail, p.summary()
        assert abs(scheduled(p) - peak) <= 1, (name, p.summary(), peak)
    p, peak, t = got["_Z7row_maxPKfPfi"]
    assert abs(p.registers - t) <= 0.1 * t, (p.summary(), t)
    p, peak, t = got["_Z8grid_sumPKfPfi"]
    assert "unrolled" not in p.component("scheduling").detail
    assert abs(scheduled(p) - peak) <= 1, (p.summary(), peak)
