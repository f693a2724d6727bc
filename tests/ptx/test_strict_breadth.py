"""Strict parsing never refuses valid real-world PTX: the strict corpus (tests/corpus/strict/,
CUDA C++ that makes NVRTC emit as many opcodes and modifiers as it can) compiled for sm_75 to
sm_120 with and without -lineinfo and -G; every module the whole-program ptxas 13.x executable
accepts must parse strictly with no error and no warning, and analyse with ``--no-compile``."""

from __future__ import annotations

import functools
import re

import pytest
import strict_corpus as sc

from ptxforge.ptx import ir
from ptxforge.ptx.emit import emit
from ptxforge.ptx.parse import parse

from cli_util import run_json

pytestmark = pytest.mark.skipif(
    sc.ptxas_path() is None or sc.include_dir() is None,
    reason="needs the nvidia-cuda-nvcc wheel (ptxas 13.x) and its CUDA headers")


@functools.cache
def modules():
    return sc.accepted_modules()


# The opcodes of each module a per-module test parsed (strictly, the same parse): the
# families test reads them instead of parsing all 147 modules again (holding the modules
# themselves would take about 600 MB).
_OPCODES: dict = {}


def module_ids():
    if sc.ptxas_path() is None or sc.include_dir() is None:
        return []
    return sorted(modules()[0])


def test_every_source_gives_modules_ptxas_accepts_on_every_target():
    ok, refused = modules()
    # NVRTC and ptxas must accept every (source, target, options): the sources guard each
    # feature by __CUDA_ARCH__ / __CUDA_ARCH_FEAT_*, so a refusal is a broken source
    assert refused == {}
    assert len(ok) == len(sc.sources()) * len(sc.ARCHS) * len(sc.OPTION_SETS)


@pytest.mark.parametrize("key", module_ids(), ids=lambda k: f"{k[0]}-{k[1]}-{''.join(k[2])}")
def test_strict_parse_and_analysis_accept_the_module(key, tmp_path, capsys):
    ptx = modules()[0][key]
    module = parse(ptx, f"{key[0]}-{key[1]}.ptx")  # strict: a false error raises here
    assert module.warnings == ()
    _OPCODES[key] = opcodes_of(module)
    names = sorted(k.name for k in module.kernels if k.body)
    if not names:  # every kernel of the source is guarded off for this target
        return
    path = tmp_path / "m.ptx"
    path.write_text(ptx)
    report = run_json(capsys, "analyze", path, "--no-compile")
    assert report["notes"] == []
    analysed = sorted(k["name"] for k in report["kernels"])
    assert set(analysed) <= set(names) and analysed
    assert all(k["instructions"] > 0 for k in report["kernels"])


def opcodes_of(module: ir.Module) -> set:
    return {s.opcode for f in module.kernels for s in f.body or () if type(s) is ir.Instruction}


def test_the_corpus_covers_the_families_it_was_written_for():
    ok, _ = modules()
    seen = set()
    for key, ptx in ok.items():
        seen |= _OPCODES[key] if key in _OPCODES else opcodes_of(parse(ptx))
    families = {op.split(".")[0] for op in seen}
    for family in ("shfl", "vote", "match", "redux", "activemask", "nanosleep", "brev", "prmt",
                   "lop3", "shf", "bfe", "bfi", "bmsk", "szext", "mul24", "sad", "dp4a",
                   "dp2a", "fns", "clz", "bfind", "popc", "testp", "copysign", "tanh", "ex2",
                   "atom", "red", "ld", "ldu", "st", "prefetch", "prefetchu", "applypriority",
                   "discard", "createpolicy", "membar", "fence", "cp", "mbarrier", "wmma",
                   "mma", "ldmatrix", "stmatrix", "tex", "tld4", "suld", "sust", "txq", "suq",
                   "elect", "griddepcontrol", "setmaxnreg", "multimem", "wgmma", "tcgen05",
                   "tensormap", "mapa", "getctarank", "isspacep", "barrier", "bar", "vadd",
                   "vabsdiff4", "vset4", "cvt", "cvta", "call", "clusterlaunchcontrol"):
        assert family in families, family
    assert len(seen) >= 600, len(seen)
    for op in ("cvt.rn.satfinite.e4m3x2.f32", "cvt.rna.tf32.f32", "ex2.approx.ftz.bf16x2",
               "elect.sync", "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32",
               "ld.global.L1::no_allocate.L2::256B.f32"):
        assert op in seen, op


def test_sibling_block_labels_from_inlined_asm_get_unique_names_ptxas_accepts():
    # tma_bulk's inline-asm wait loop "W:" is inlined once per call: sibling { } blocks that
    # define the same label, legal PTX that the parser renames W, W$2, ...
    ok, _ = modules()
    ptx = ok[("hopper", "sm_90a", ())]
    module = parse(ptx)
    body = next(k for k in module.kernels if k.name == "tma_bulk").body
    labels = [s.name for s in body if type(s) is ir.Label and re.fullmatch(r"W(\$\d+)?", s.name)]
    assert labels[0] == "W" and len(labels) >= 2 and len(set(labels)) == len(labels)
    assert sc.ptxas_verdict(emit(module), "sm_90a") == ""


def test_glued_register_declaration_from_cuda_fp16_parses():
    # cuda_fp16.hpp's inline asm writes ".reg.b16 hl, hu;" (no space before the type)
    ok, _ = modules()
    ptx = ok[("intrinsics", "sm_80", ())]
    assert ".reg.b16" in ptx
    half = next(k for k in parse(ptx).kernels if k.name == "half_ops")
    assert {"hl", "hu"} <= {s.name for s in half.body if type(s) is ir.VarDecl}
