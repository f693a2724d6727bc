"""kb.raw (the escape hatch: liveness-correct, ptxas-checked), kb.while_, setp's comparison
symbols, error messages that name the right op, and the block table's "pred regs" column."""

from __future__ import annotations

import pytest
from ptxas_exe import ptxas_stats

from ptxforge.analysis.liveness import analyze_liveness
from ptxforge.analysis.pressure import analyze_pressure
from ptxforge.dsl.arith import SETP_SYMBOLS
from ptxforge.dsl.builder import KernelBuilder
from ptxforge.errors import BuildError, PtxTypeError, UnsupportedError
from ptxforge.ptx import ir


def _live_names(kernel, i, where):
    live = analyze_liveness(kernel)
    return {live.register(x).name for x in live.live_at(i, where)}


def test_raw_reads_and_writes_what_the_caller_names():
    kb = KernelBuilder("k", target="sm_80")
    out = kb.load_param(kb.param_ptr("out", "u32"))
    a, b = kb.mov(7, type="u32"), kb.mov(9, type="u32")
    hi = kb.raw("mul.hi.u32", dests=["u32"], srcs=[a, b])
    lo = kb.mov(0, type="u32")
    kb.raw("mad.lo.u32", dests=[lo], srcs=[a, b, hi])          # writes an existing register
    pair = kb.raw("mov.b64", dests=[ir.Vector((kb.mov(0, type="u32"), kb.mov(0, type="u32")))],
                  srcs=[kb.mov(1 << 40, type="b64")])
    kb.raw("st.global.u32", srcs=[ir.Address(out, 4), lo])
    kb.st(out, kb.add(pair[0], pair[1]))
    kernel = kb.build().kernels[0]
    insts = kernel.instructions
    k = next(n for n, i in enumerate(insts) if i.opcode == "mul.hi.u32")
    assert [r.name for r in insts[k].uses] == [a.name, b.name]
    assert [r.name for r in insts[k].defs] == [hi.name]
    # hi is live from the raw mul.hi to the raw mad that reads it, and dead after it
    m = next(n for n, i in enumerate(insts) if i.opcode == "mad.lo.u32")
    assert hi.name in _live_names(kernel, k, "after")
    assert hi.name in _live_names(kernel, m, "before")
    assert hi.name not in _live_names(kernel, m, "after")
    # the store's address register is read
    s = next(n for n, i in enumerate(insts) if i.opcode == "st.global.u32")
    assert out.name in {r.name for r in insts[s].uses} and not insts[s].defs
    ptx = kb.ptx()
    assert f"mul.hi.u32 {hi.name}, {a.name}, {b.name};" in ptx
    assert f"st.global.u32 [{out.name}+4], {lo.name};" in ptx
    assert ptxas_stats(ptx, "sm_80")["k"].registers > 0


def test_raw_checks_the_target_and_its_input():
    kb = KernelBuilder("k", target="sm_75")
    with pytest.raises(UnsupportedError, match="minimum target sm_80"):
        kb.raw("cp.async.commit_group")
    with pytest.raises(BuildError, match="expected an opcode such as 'brev.b32'"):
        kb.raw("add.u32 %r1, %r2, 1;")
    with pytest.raises(PtxTypeError, match="give floats as a register"):
        kb.raw("add.f32", dests=["f32"], srcs=[kb.mov(1.0, type="f32"), 2.5])


def test_while_loop_structure_liveness_and_ptxas():
    kb = KernelBuilder("k", target="sm_80")
    out = kb.load_param(kb.param_ptr("out", "u32"))
    n = kb.load_param(kb.param("n", "u32"))
    i, acc = kb.mov(0, type="u32"), kb.mov(0, type="u32")
    with kb.while_(lambda: kb.setp("<", i, n)):
        kb.iadd(acc, i)
        kb.iadd(i, 3)
    kb.st(out, acc)
    kernel = kb.build().kernels[0]
    ptx = kb.ptx()
    insts = kernel.instructions
    # the condition is re-evaluated each trip: the setp sits after the loop label, and the
    # body jumps back to it
    assert "setp.lt.u32" in ptx
    bra_back = [x for x in insts if x.opcode == "bra.uni"]
    assert len(bra_back) == 1
    setp = next(n for n, x in enumerate(insts) if x.family == "setp")
    assert {i.name, n.name, acc.name} <= _live_names(kernel, setp, "before")
    ptxas_stats(ptx, "sm_80")
    with pytest.raises(BuildError, match="expected a function returning a predicate"):
        with kb.while_(kb.setp("<", i, n)):
            pass


def test_while_loop_negated_condition():
    kb = KernelBuilder("k", target="sm_80")
    i = kb.mov(10, type="u32")
    with kb.while_(lambda: ir.Negated(kb.setp("==", i, 0))):
        kb.isub(i, 1)
    ptx = kb.ptx()
    assert "@%p1 bra" in ptx          # leave when i == 0
    ptxas_stats(ptx, "sm_80")


@pytest.mark.parametrize("symbol, name", sorted(SETP_SYMBOLS.items()))
def test_setp_symbols(symbol, name):
    for ty in ("u32", "s32", "f32"):
        kb = KernelBuilder("k")
        x = kb.mov(3, type=ty)
        kb.setp(symbol, x, 4)
        assert f"setp.{name}.{ty} " in kb.ptx()


@pytest.mark.parametrize("call, hint", [
    (lambda kb, x: kb.add(x, -1), "to subtract, use kb.sub(x, 1)"),
    (lambda kb, x: kb.iadd(x, -4), "to subtract, use kb.isub(x, 4)"),
    (lambda kb, x: kb.sub(x, -2), "to add, use kb.add(x, 2)"),
    (lambda kb, x: kb.shr(x, -1), "shift amounts are unsigned: shift the other way with kb.shl"),
    (lambda kb, x: kb.min(x, -1), "for a signed value use type='s32'"),
    (lambda kb, x: kb.setp("lt", kb.mov(1, type="b32"), 2), "pass type='s32' (signed) or"),
    (lambda kb, x: kb.setp("hi", kb.mov(1, type="s32"), 2), "lo/ls/hi/hs are the unsigned"),
])
def test_error_messages_suggest_the_right_op(call, hint):
    kb = KernelBuilder("k")
    x = kb.mov(5, type="u32")
    with pytest.raises(BuildError) as info:
        call(kb, x)
    assert hint in str(info.value)
    assert "test_flow_and_hints.py" in str(info.value)      # the user's line


def test_block_table_column_reads_pred_regs():
    kb = KernelBuilder("k")
    i = kb.mov(0, type="u32")
    with kb.if_(kb.setp("<", i, 4)):
        kb.iadd(i, 1)
    text = analyze_pressure(kb.build().kernels[0]).to_text()
    header = next(line for line in text.splitlines() if line.lstrip().startswith("block "))
    assert "pred regs" in header and " preds" not in header
