"""Strict parsing: each check is a ParseError at the offending token, a warning when lenient,
ptxas agrees that every bad fixture is bad, and no real PTX (NVRTC, Triton, numba, the DSL)
trips a check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from ptxforge.errors import ParseError
from ptxforge.ptx import isa
from ptxforge.ptx.emit import emit
from ptxforge.ptx.parse import parse
from ptxforge.ptx.parse.opcodes import TYPE_NAMES, opcode_problem
from ptxforge.reports.analyze import analyze_ptx

from cli_util import run
from hypothesis_profiles import examples

HEAD = """.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u64 p)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<4>;
\t.reg .f32 %f<4>;
\t.reg .b64 %rd<3>;
\tld.param.u64 %rd1, [p];
\tld.global.f32 %f1, [%rd1];
\tsetp.gt.f32 %p1, %f1, 0f00000000;
"""
TAIL = """\tst.global.f32 [%rd1], %f1;
\tret;
}
"""
BAD_LINE = 14  # the line each case inserts

# (id, the bad line, the token the error points at, words of the message)
CASES = [
    ("unknown-opcode", "\tad.f32 %f2, %f1, %f1;", "ad.f32", "unknown opcode 'ad'"),
    ("unknown-modifier", "\tadd.rnd.f32 %f2, %f1, %f1;", "add.rnd.f32",
     "unknown modifier '.rnd' for add"),
    ("unknown-space", "\tld.globl.f32 %f2, [%rd1];", "ld.globl.f32",
     "unknown modifier '.globl' for ld"),
    ("undeclared-register", "\tadd.f32 %f2, %f1, %f9;", "%f9", "undeclared register %f9"),
    ("wrong-class-width", "\tadd.s32 %r1, %rd1, %r2;", "%rd1",
     "register %rd1 (.b64) used with the wrong class"),
    ("wrong-class-guard", "\t@%r1 add.f32 %f2, %f1, %f1;", "%r1",
     "guard %r1 is a .b32 register; expected a .pred register"),
    ("wrong-class-setp", "\tsetp.lt.s32 %r1, %r2, %r3;", "%r1",
     "register %r1 (.b32) used with the wrong class: operand 1 of setp.lt.s32 needs .pred"),
    ("missing-label", "\t@%p1 bra $L_missing;", "$L_missing",
     "branch target $L_missing is not a label of function k"),
]
PTXAS = (Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
         / "site-packages" / "nvidia" / "cu13" / "bin" / "ptxas")


def bad_ptx(line: str) -> str:
    return HEAD + line + "\n" + TAIL


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_strict_error_names_file_line_column_and_token(case):
    _, line, token, words = case
    with pytest.raises(ParseError) as info:
        parse(bad_ptx(line), "bad.ptx")
    err = info.value
    assert (err.file, err.line) == ("bad.ptx", BAD_LINE)
    assert err.column == line.expandtabs(1).index(token) + 1 - line.count("\t") * 0
    assert err.text.strip() == line.strip()
    assert words in err.message
    assert str(err).startswith(f"bad.ptx:{BAD_LINE}:{err.column}: ")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_lenient_turns_each_error_into_one_warning(case):
    _, line, _token, words = case
    strict_error = None
    try:
        parse(bad_ptx(line), "bad.ptx")
    except ParseError as exc:
        strict_error = exc
    module = parse(bad_ptx(line), "bad.ptx", strict=False)
    where = f"bad.ptx:{BAD_LINE}:{strict_error.column}: "
    assert next(w for w in module.warnings if w.startswith(where)) == where + strict_error.message
    assert all(words in w or "wrong class" in w for w in module.warnings)
    # the instruction is kept and the kernel still analyses; the report lists the warning
    report = analyze_ptx(bad_ptx(line), "bad.ptx", compile=False, strict=False)
    notes = report.to_dict()["notes"]
    assert f"lenient parse: {where}{strict_error.message}" in notes
    assert f"lenient parse: {where}" in report.to_text()
    assert report.kernels[0].estimate.registers > 0


def test_valid_input_has_no_warnings_and_parses_the_same_either_way():
    good = bad_ptx("\tadd.f32 %f2, %f1, %f1;")
    strict, lenient = parse(good), parse(good, strict=False)
    assert lenient.warnings == () and strict == lenient
    assert "notes" in analyze_ptx(good, compile=False).to_dict()


def test_a_missing_label_leaves_the_function_when_lenient():
    module = parse(bad_ptx("\t@%p1 bra $L_missing;"), strict=False)
    assert module.kernels[0].body[-1].name == "$L_missing"


@pytest.mark.skipif(not PTXAS.is_file(), reason="the nvidia-cuda-nvcc 13 wheel's ptxas is missing")
@pytest.mark.parametrize("case", [("valid", "\tadd.f32 %f2, %f1, %f1;", "", "")] + CASES,
                         ids=["valid"] + [c[0] for c in CASES])
def test_ptxas_agrees_each_fixture_is_bad(case, tmp_path):
    path = tmp_path / "k.ptx"
    path.write_text(bad_ptx(case[1]))
    run = subprocess.run([str(PTXAS), "-arch=sm_80", str(path), "-o", os.devnull],
                         capture_output=True, text=True, check=False)
    assert (run.returncode == 0) == (case[0] == "valid"), run.stderr


def test_cli_strict_fails_and_lenient_lists_the_warnings(tmp_path, capsys):
    # the command in-process (tests/cli/test_cli.py runs `python -m ptxforge` itself)
    path = tmp_path / "bad.ptx"
    path.write_text(bad_ptx(CASES[0][1]))
    code, _, err = run(capsys, "analyze", path, "--no-compile")
    assert code == 1
    assert f"bad.ptx:{BAD_LINE}:2: unknown opcode 'ad'" in err
    code, out, err = run(capsys, "analyze", path, "--no-compile", "--lenient", "--json")
    assert code == 0, err
    notes = json.loads(out)["notes"]
    assert any(f"bad.ptx:{BAD_LINE}:2: unknown opcode 'ad'" in n for n in notes)


# -- no false errors ------------------------------------------------------------------------------

def test_every_builder_form_is_known():
    for family, spec in isa.OPS.items():
        assert opcode_problem(family) is None, family
        for mod in spec.modifiers:
            assert opcode_problem(f"{family}.{mod}") is None, (family, mod)
        for ty in spec.types:
            assert ty.name in TYPE_NAMES and opcode_problem(f"{family}.{ty.name}") is None


def test_the_isa_beyond_the_builder():
    valid = [
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "cp.async.bulk.wait_group.read", "cp.reduce.async.bulk.tensor.3d.global.shared::cta.add",
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "wgmma.fence.sync.aligned",
        "tcgen05.ld.sync.aligned.16x32bx2.x4.b32", "tcgen05.mma.cta_group::1.kind::f16",
        "mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.xor.popc",
        "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64", "elect.sync",
        "ld.global.nc.L1::no_allocate.L2::256B.v4.f32", "st.async.mbarrier::complete_tx::bytes.u32",
        "cvt.rn.satfinite.e4m3x2.f32", "cvt.rs.satfinite.relu.e5m2x4.f32", "red.async.add.u32",
        "multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.f16x2", "setmaxnreg.inc.sync.aligned.u32",
        "fence.proxy.tensormap::generic.acquire.gpu", "suld.b.2d.v4.b32.trap", "tex.2d.v4.f32.f32",
        "vset.u32.u32.lt", "barrier.cluster.arrive.release.aligned", "ex2.approx.ftz.bf16x2",
        "atom.global.v4.f32.add", "prefetch.global.L2::evict_last", "griddepcontrol.wait",
    ]
    assert [o for o in valid if opcode_problem(o) is not None] == []


def _nvrtc_corpus():
    from corpus_util import CORPUS_DIR, compile_cu, corpus_sources

    for name in corpus_sources():
        source = (CORPUS_DIR / f"{name}.cu").read_text()
        for arch in ("sm_75", "sm_80", "sm_90a"):
            for lineinfo in (False, True):
                yield f"{name}-{arch}-{int(lineinfo)}", compile_cu(source, name, arch, lineinfo)


def test_no_nvrtc_corpus_file_trips_a_check():
    # tests/corpus/*.cu at sm_75 (NVRTC 13 no longer targets sm_70), sm_80 and sm_90a
    bad = []
    n = 0
    for ident, ptx in _nvrtc_corpus():
        n += 1
        try:
            parse(ptx, ident)
        except ParseError as exc:
            bad.append(str(exc).splitlines()[0])
    assert n >= 100 and bad == []


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_no_kernel_corpus_module_trips_a_check(arch):
    # tests/corpus/nvrtc (NVRTC), tests/corpus/triton (triton.compile for GPUTarget("cuda",
    # 80/90, 32)) and tests/corpus/numba (numba.cuda.compile_ptx)
    from kernel_corpus import corpus

    modules = {k.ptx: k.id for k in corpus(arch)}
    sources = {i.split("/")[0] for i in modules.values()}
    bad = []
    for ptx, ident in modules.items():
        try:
            parse(ptx, ident)
        except ParseError as exc:
            bad.append(str(exc).splitlines()[0])
    assert sources == {"nvrtc", "triton", "numba"} and len(modules) > 100 and bad == []


def test_the_dsl_kernels_parse_strictly():
    from ptxforge.dsl import kernels

    for target in ("sm_80", "sm_90"):
        for make in (kernels.saxpy, kernels.block_reduce_sum, kernels.sgemm_tiled,
                     kernels.modadd256):
            module = make(target=target)
            assert parse(emit(module)).warnings == ()


@settings(max_examples=examples(0.2), deadline=None, suppress_health_check=list(HealthCheck))
@given(gen=__import__("ptxforge.testing.strategies", fromlist=["modules"]).modules("sm_90"))
def test_generated_modules_parse_strictly(gen):
    parse(emit(gen.module))
