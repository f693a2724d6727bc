"""Nested inlining: ``.loc … inlined_at`` chains resolved to the kernel's own call sites.

Each ``inlined_at F L C`` names only a position; the parser chains it to the ``.loc`` that last
introduced that position (NVVM emits the caller's ``.loc`` chain just before an inlined body),
so ``SourceLoc.inlined_at`` is the whole chain.  Checked on NVRTC ``-lineinfo`` output of
``tests/data/cu/nested_inline.cu`` (three levels), against the chains ptxas itself recorded in
the cubin (``nvdisasm -gi``), and on hand-written PTX for the heuristic's edge cases.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from ptxforge.analysis.attribution import attribute_registers, callsite, describe_loc
from ptxforge.analysis.liveness import analyze_liveness
from ptxforge.ptx import ir
from ptxforge.ptx.emit import emit
from ptxforge.ptx.parse import parse

from corpus_util import compile_cu

SOURCE = Path(__file__).parents[1] / "data" / "cu" / "nested_inline.cu"


def line_of(marker: str) -> int:
    lines = SOURCE.read_text().splitlines()
    (found,) = [n for n, text in enumerate(lines, 1) if text.rstrip().endswith("// " + marker)]
    return found


def ptx(arch: str = "sm_80") -> str:
    return compile_cu(SOURCE.read_text(), "nested_inline", arch, True)


def chain_lines(loc: ir.SourceLoc) -> tuple:
    return tuple(frame.line for frame in loc.chain())


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_leaf_code_carries_the_whole_chain_to_the_kernel(arch):
    k = parse(ptx(arch)).kernel("nest")
    leaf = [i for i in k.instructions if i.loc is not None and i.loc.line == line_of("LEAF")]
    assert leaf, "the x * x + k of leaf() is in the kernel"
    expected = {(line_of("LEAF"), line_of("MID_CALL"), line_of("TOP_CALL"), line_of(call))
                for call in ("CALL_A", "CALL_B")}
    assert {chain_lines(i.loc) for i in leaf} == expected
    frames = leaf[0].loc.chain()
    assert [f.function for f in frames] == ["_Z4leaffi", "_Z3midPKfi", "_Z3topPKfi", None]
    assert Path(frames[-1].file).name == "nested_inline.cu"
    # the kernel's own lines have no chain at all
    own = [i for i in k.instructions if i.loc is not None and i.loc.function is None]
    assert own and all(i.loc.inlined_at is None for i in own)


def test_describe_loc_names_every_frame_demangled():
    k = parse(ptx()).kernel("nest")
    inst = next(i for i in k.instructions if i.loc is not None and i.loc.line == line_of("LEAF"))
    file = inst.loc.file
    call = chain_lines(inst.loc)[-1]
    assert call in (line_of("CALL_A"), line_of("CALL_B"))
    assert describe_loc(inst.loc, "nest") == (
        f"{file}:{line_of('LEAF')} in leaf ← :{line_of('MID_CALL')} in mid"
        f" ← :{line_of('TOP_CALL')} in top ← :{call} in nest")


@pytest.mark.parametrize("kernel,begin,end,calls", [
    ("nest", "NEST_BEGIN", "NEST_END", ("CALL_A", "CALL_B")),
    ("gu", "GU_BEGIN", "GU_END", ("GU_CALL0", "GU_CALL1", "GU_CALL2")),
])
def test_callsite_attribution_names_lines_of_the_kernel(kernel, begin, end, calls):
    k = parse(ptx()).kernel(kernel)
    everything = [r for i in k.instructions for r in i.defs]
    a = attribute_registers(k, everything, by="callsite")
    lines = {s.loc.line for s in a.lines}
    assert lines <= set(range(line_of(begin), line_of(end) + 1)), lines  # never in a helper
    assert {line_of(c) for c in calls} <= lines
    for share in a.lines:
        assert share.loc.inlined_at is None and share.loc.function is None
    # the values live at the pressure peak, too
    lv = analyze_liveness(k)
    series = lv.series()
    peak = [lv.register(r) for r in lv.live_at(series.index(max(series)))]
    at_peak = attribute_registers(k, peak, by="callsite")
    assert {s.loc.line for s in at_peak.lines} <= set(range(line_of(begin), line_of(end) + 1))
    assert sum(s.values for s in at_peak.lines) + len(at_peak.unattributed) == len(peak)


def test_callsite_of_a_three_level_chain_is_the_kernel_line():
    k = parse(ptx()).kernel("nest")
    inst = next(i for i in k.instructions if i.loc is not None and i.loc.line == line_of("LEAF"))
    outer = callsite(inst.loc)
    assert outer.line in (line_of("CALL_A"), line_of("CALL_B"))
    assert outer is inst.loc.chain()[-1]


def test_chains_agree_with_what_ptxas_recorded():
    """Every inlining chain in the cubin's line table (ptxas resolved the same .loc directives;
    nvdisasm -gi prints a SASS instruction's frames innermost first, one per line) is a chain
    the parser built."""
    from ptxforge.toolchain.compile import CompileOptions, compile_ptx
    from ptxforge.toolchain.sass import find_nvdisasm

    nvdisasm = find_nvdisasm()
    if nvdisasm is None:
        pytest.skip("no nvdisasm (pip install nvidia-cuda-nvdisasm)")
    text = ptx()
    cubin = compile_ptx(text, "sm_80", options=CompileOptions(line_info=True),
                        backend="nvjitlink").cubin
    assert cubin
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "k.cubin"
        f.write_bytes(cubin)
        out = subprocess.run([nvdisasm, "-c", "-gi", str(f)], capture_output=True, text=True,
                             check=True).stdout
    sass: set = set()
    run: list = []
    for line in out.splitlines():
        m = re.match(r'\s*//## File ".*?", line (\d+)', line)
        if m:
            run.append(int(m.group(1)))
        elif run:
            sass.add(tuple(run))
            run = []
    mine = {chain_lines(i.loc) for k in parse(text).kernels for i in k.instructions
            if i.loc is not None}
    deep = {c for c in sass if len(c) == 4}
    assert deep, "ptxas recorded the three-level chains"
    assert sass <= mine, sorted(sass - mine)


# -- the heuristic on hand-written PTX --------------------------------------------------------
def kernel_with(locs: str) -> ir.Kernel:
    text = (".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n"
            "\t.reg .b32 %r<4>;\n" + locs + "\n\tret;\n}\n.file 1 \"a.cu\"\n"
            ".section .debug_str\n{\n$L__info_string0:\n.b8 116,111,112,0\n"
            "$L__info_string1:\n.b8 109,105,100,0\n}\n")
    return parse(text).kernel("k")


def test_the_most_recent_loc_at_the_position_is_the_caller():
    # two instances of top (called at lines 20 and 21) both emit 15 5; mid's code after the
    # second one belongs to the call at line 21
    k = kernel_with("""\t.loc 1 20 5
\t.loc 1 15 5, function_name $L__info_string0, inlined_at 1 20 5
\t.loc 1 10 9, function_name $L__info_string1, inlined_at 1 15 5
\tmov.b32 %r1, 1;
\t.loc 1 21 5
\t.loc 1 15 5, function_name $L__info_string0, inlined_at 1 21 5
\t.loc 1 10 9, function_name $L__info_string1, inlined_at 1 15 5
\tmov.b32 %r2, 2;""")
    first, second, _ = k.instructions
    assert chain_lines(first.loc) == (10, 15, 20) and chain_lines(second.loc) == (10, 15, 21)
    assert [f.function for f in second.loc.chain()] == ["mid", "top", None]


def test_a_call_site_without_an_earlier_loc_is_a_bare_location():
    k = kernel_with("\t.loc 1 10 9, function_name $L__info_string1, inlined_at 1 15 5\n"
                    "\tmov.b32 %r1, 1;")
    loc = k.instructions[0].loc
    assert loc.inlined_at == ir.SourceLoc("a.cu", 15, 5, None, None)


def test_call_sites_do_not_cross_functions():
    text = (".version 8.0\n.target sm_80\n.address_size 64\n"
            ".visible .entry a()\n{\n\t.reg .b32 %r<2>;\n\t.loc 1 15 5, function_name f, "
            "inlined_at 1 30 1\n\tmov.b32 %r1, 1;\n\tret;\n}\n"
            ".visible .entry b()\n{\n\t.reg .b32 %r<2>;\n\t.loc 1 3 1, function_name g, "
            "inlined_at 1 15 5\n\tmov.b32 %r1, 1;\n\tret;\n}\n.file 1 \"a.cu\"\n")
    m = parse(text)
    assert chain_lines(m.kernel("a").instructions[0].loc) == (15, 30)
    assert chain_lines(m.kernel("b").instructions[0].loc) == (3, 15)  # not (3, 15, 30)


def test_a_position_that_names_itself_does_not_grow_a_chain():
    locs = "\n".join("\t.loc 1 5 1, function_name $L__info_string0, inlined_at 1 5 1\n"
                     "\tmov.b32 %r1, 1;" for _ in range(50))
    k = kernel_with("\t.loc 1 5 1\n" + locs)
    assert {len(i.loc.chain()) for i in k.instructions[:-1]} == {2}


def test_chains_deeper_than_the_guard_are_cut():
    locs = "\n".join(f"\t.loc 1 {n} 1, function_name $L__info_string0, inlined_at 1 {n - 1} 1"
                     for n in range(2, 200))
    k = kernel_with("\t.loc 1 1 1\n" + locs + "\n\tmov.b32 %r1, 1;")
    depth = len(k.instructions[0].loc.chain())
    assert 2 <= depth <= 64


def test_fast_and_full_loc_paths_give_the_same_chain():
    # the second identical .loc comes from the token cache; its caller must still be the
    # latest .loc at 1 15 5 (line 21), not the one cached with the first (line 20)
    k = kernel_with("""\t.loc 1 20 5
\t.loc 1 15 5, function_name $L__info_string0, inlined_at 1 20 5
\tmov.b32 %r1, 1;
\t.loc 1 21 5
\t.loc 1 15 5, function_name $L__info_string0, inlined_at 1 21 5
\tmov.b32 %r2, 1;""")
    assert [chain_lines(i.loc) for i in k.instructions[:2]] == [(15, 20), (15, 21)]


def test_emission_keeps_the_instruction_lines():
    text = ptx()
    once = emit(parse(text), line_info=True)
    assert emit(parse(once), line_info=True) == once
    k = parse(once).kernel("nest")
    # emitted .loc keep file/line/column only (documented): the chains are not re-emitted
    assert all(i.loc.inlined_at is None for i in k.instructions if i.loc is not None)
    lines = {i.loc.line for i in k.instructions if i.loc is not None}
    assert line_of("LEAF") in lines


@pytest.mark.parametrize("section", [
    # plain decimal lists (read by slices), one label's bytes split over two lists
    "$L__info_string0:\n.b8 116,111,\n112,0\n.b8 0\n$L__info_string1:\n.b8 109,105,100,0\n",
    # lists that end at a label, hex and suffixed items, .ascii/.asciz (the token loop)
    "$L__info_string0:\n.b8 0x74,111,112U\n.b8 0\n$L__info_string1:\n.asciz \"mid\"\n",
    "$L__info_string0:\n.ascii \"to\"\n.b8 112,0\n$L__info_string1:\n.b8 109,105\n.b8 100,0\n",
])
def test_debug_strings_in_every_form_name_the_same_functions(section):
    text = (".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n"
            "\t.reg .b32 %r<4>;\n\t.loc 1 20 5\n"
            "\t.loc 1 15 5, function_name $L__info_string0, inlined_at 1 20 5\n"
            "\t.loc 1 10 9, function_name $L__info_string1, inlined_at 1 15 5\n"
            "\tmov.b32 %r1, 1;\n\tret;\n}\n.file 1 \"a.cu\"\n"
            ".section .debug_str\n{\n" + section + "}\n")
    loc = parse(text).kernel("k").instructions[0].loc
    assert [f.function for f in loc.chain()] == ["mid", "top", None]
