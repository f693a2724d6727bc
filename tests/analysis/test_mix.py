"""Instruction mix and selp breakdown, against hand counts and an independent text count."""

from __future__ import annotations

import json
import re

from ptxforge.analysis.mix import format_mix, instruction_mix, mix_to_json, module_mix
from ptxforge.ptx.parse import parse

from corpus_util import corpus_ptx

SNIPPET = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .pred %p<4>;
    .reg .b32 %r<6>;
    .reg .f64 %fd<10>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    cvta.to.global.u64 %rd2, %rd1;
    ld.global.f64 %fd1, [%rd2];
    ld.global.nc.f64 %fd2, [%rd2+8];
    mov.u32 %r1, %tid.x;
    setp.eq.s32 %p1, %r1, 3;
    setp.lt.s32 %p2, %r1, 5;
    selp.f64 %fd3, 0d3FC5555555555555, 0dBFC5555555555555, %p1;
    selp.f64 %fd4, 0d3FE0000000000000, %fd3, %p2;
    selp.f64 %fd5, 0d0000000000000000, %fd1, %p1;
    selp.f64 %fd6, %fd2, 0d0000000000000000, %p2;
    selp.f64 %fd7, %fd5, %fd6, %p1;
    selp.b32 %r2, 7, 9, %p2;
    selp.s32 %r3, %r1, 0, %p1;
    fma.rn.f64 %fd8, %fd7, %fd4, %fd3;
    fma.rn.f64 %fd9, %fd8, %fd8, 0d3FF0000000000000;
    st.local.f64 [%rd2], %fd9;
    ld.local.f64 %fd9, [%rd2];
    st.global.f64 [%rd2], %fd9;
    atom.global.add.u32 %r4, [%rd2], 1;
    @%p1 bra $L__BB0_2;
    add.s32 %r5, %r2, %r3;
$L__BB0_2:
    ret;
}
"""


def test_snippet_counts_by_hand():
    mix = instruction_mix(parse(SNIPPET).kernel("k"))
    assert mix.instructions == 23
    assert mix.by_opcode["selp.f64"] == 5
    assert mix.by_opcode["fma.rn.f64"] == 2
    assert mix.by_family["selp"] == 7
    assert mix.by_family["setp"] == 2
    assert mix.by_family["ld"] == 4 and mix.by_family["st"] == 2
    assert mix.groups == {"ld.global": 2, "atom.global": 1, "ld.local": 1, "ld.param": 1,
                          "st.global": 1, "st.local": 1}
    assert mix.count("ld.global") == 2 and mix.count("setp") == 2
    assert mix.count("fma.rn.f64") == 2 and mix.count("bra") == 1


def test_snippet_selp_breakdown_by_hand():
    s = instruction_mix(parse(SNIPPET).kernel("k")).selp
    # literal pairs: %fd3, %r2;  literal+register: %fd4, %fd5, %fd6, %r3 (zero-clip: %fd5, %fd6,
    # %r3);  register pairs: %fd7
    assert (s.total, s.literal_pair, s.literal_register, s.zero_clip, s.register_pair) == (7, 2, 4, 3, 1)
    assert s.by_type == {
        "f64": {"total": 5, "literal_pair": 1, "literal_register": 3, "zero_clip": 2, "register_pair": 1},
        "b32": {"total": 1, "literal_pair": 1, "literal_register": 0, "zero_clip": 0, "register_pair": 0},
        "s32": {"total": 1, "literal_pair": 0, "literal_register": 1, "zero_clip": 1, "register_pair": 0},
    }


def test_snippet_virtual_registers():
    mix = instruction_mix(parse(SNIPPET).kernel("k"))
    # %fd1..%fd9, %r1..%r5, %rd1..%rd2, %p1..%p2 are mentioned; %rd3 and %p3 are not
    assert mix.vregs == {"f64": 9, "b32": 5, "b64": 2, "pred": 2}
    assert mix.declared == {"f64": 10, "b32": 6, "b64": 4, "pred": 4}


def test_json_keys_are_stable():
    mixes = module_mix(parse(SNIPPET))
    data = json.loads(mix_to_json(mixes))
    assert list(data) == ["k"]
    assert list(data["k"]) == ["kernel", "instructions", "vregs", "declared", "by_family",
                               "by_opcode", "groups", "selp"]
    assert list(data["k"]["selp"]) == ["total", "literal_pair", "literal_register", "zero_clip",
                                       "register_pair", "by_type"]
    assert mix_to_json(mixes) == mix_to_json(module_mix(parse(SNIPPET)))


def test_text_table():
    text = format_mix(instruction_mix(parse(SNIPPET).kernel("k")))
    assert text.startswith("kernel k: 23 instructions\n")
    assert "virtual registers: .f64 9, .b32 5, .b64 2, .pred 2" in text
    assert re.search(r"^  selp\.f64\s+5$", text, re.M)
    assert "selp: 7 total: 2 literal pair, 4 literal/register (of which 3 zero-clip), 1 register pair" in text


_SELP = re.compile(r"^\s*(?:@!?%\w+\s+)?selp\.(\w+)\s+[^,]+,\s*([^,]+),\s*([^,]+),", re.M)
_LIT = re.compile(r"^-?(0[dDfF][0-9A-Fa-f]+|0x[0-9A-Fa-f]+|\d+)$")


def _zero(lit: str) -> bool:
    return int(re.sub(r"^-?0[dDfFx]", "", lit) or "0", 16 if not lit.lstrip("-").isdigit() else 10) == 0


def test_corpus_weno_selp_matches_an_independent_text_count():
    ptx = corpus_ptx("weno", "sm_80", False)
    pair = lit_reg = zero = reg = 0
    for ty, a, b in _SELP.findall(ptx):
        la, lb = bool(_LIT.match(a.strip())), bool(_LIT.match(b.strip()))
        if la and lb:
            pair += 1
        elif la or lb:
            lit_reg += 1
            zero += _zero((a if la else b).strip())
        else:
            reg += 1
    s = instruction_mix(parse(ptx).kernel("weno5_reconstruct")).selp
    assert s.total == len(_SELP.findall(ptx)) >= 10  # the run-time order gives a selp cascade
    assert (s.literal_pair, s.literal_register, s.zero_clip, s.register_pair) == (pair, lit_reg, zero, reg)
    assert s.literal_pair > 0 and s.zero_clip > 0  # coefficient pairs and the i < clip masks
    mix = instruction_mix(parse(ptx).kernel("weno5_reconstruct"))
    assert mix.by_opcode["fma.rn.f64"] == len(re.findall(r"^\s*fma\.rn\.f64\s", ptx, re.M))
    assert mix.vregs["f64"] == len(set(re.findall(r"%fd\d+", ptx)))


def test_analyze_selp_table_means_what_the_json_means():
    # By hand (see test_snippet_selp_breakdown_by_hand): 7 selp, 2 two-literal, 4 literal and
    # register of which 3 zero-clip, 1 two-register; f64: 1, 3 (2), 1; b32: 1, 0, 0; s32: 0, 1 (1).
    from ptxforge.reports.analyze import analyze_ptx

    k = analyze_ptx(SNIPPET, compile=False).kernels[0]
    text = k.to_text()
    assert re.search(r"^  literal and register \(incl\. zero-clip\)\s+4\s+57\.1%\s+3\s+0\s+1$",
                     text, re.M), text
    assert re.search(r"^    of which zero-clip \(literal 0\)\s+3\s+42\.9%\s+2\s+0\s+1$", text, re.M)
    assert re.search(r"^  two literals\s+2\s+28\.6%\s+1\s+1\s+0$", text, re.M)
    assert re.search(r"^  two registers\s+1\s+14\.3%\s+1\s+0\s+0$", text, re.M)
    sel = k.to_dict()["mix"]["selp"]
    assert (sel["literal_pair"], sel["literal_register"], sel["zero_clip"],
            sel["register_pair"]) == (2, 4, 3, 1)
