"""Tensor-core and asynchronous-copy ops: every form built at its minimum target and compiled
by the whole-program ptxas executable there; refused by the builder one target below (naming
the minimum), and by ptxas too; fragments as one register per value for liveness."""

from __future__ import annotations

import pytest
from ptxas_exe import below, ptxas_refuses, ptxas_stats

from ptxforge.analysis.liveness import analyze_liveness
from ptxforge.dsl.builder import KernelBuilder
from ptxforge.dsl.tensor import MMA_FORMS, wgmma_accumulators
from ptxforge.errors import BuildError, PtxTypeError, UnsupportedError
from ptxforge.ptx import ir, isa
from ptxforge.ptx import types as T


def _mma_opcode(shape, atype, dtype):
    return f"mma.sync.aligned.{shape}.row.col.{dtype}.{atype}.{atype}.{dtype}"


def _mma_kernel(target, shape, atype, dtype, inplace):
    kb = KernelBuilder("k", target=target)
    out = kb.load_param(kb.param_ptr("out", "b32"))
    src = kb.load_param(kb.param_ptr("src", "b64" if atype == "f64" else "b32"))
    a_frag = kb.mma_fragment("a", shape, atype)
    b_frag = kb.mma_fragment("b", shape, atype)
    for i, r in enumerate(tuple(a_frag) + tuple(b_frag)):   # real values, not undefined ones
        kb.assign(r, kb.ld(src, offset=8 * i, type=r.type))
    acc = kb.mma_fragment("c", shape, atype, dtype, fill=1 if dtype == "s32" else 1.0)
    d = kb.imma(acc, a_frag, b_frag, shape=shape, atype=atype) if inplace else \
        kb.mma(a_frag, b_frag, acc, shape=shape, atype=atype, dtype=dtype)
    for i, r in enumerate(d):
        kb.st(out, r, offset=8 * i, type=r.type)
    return kb, a_frag, b_frag, acc, d


FORMS = [(s, a, d) for (s, a), form in MMA_FORMS.items() for d in form[3]]


@pytest.mark.parametrize("shape, atype, dtype", FORMS, ids=lambda v: str(v))
def test_mma_at_its_minimum_target_and_refused_below(shape, atype, dtype):
    opcode = _mma_opcode(shape, atype, dtype)
    need = isa.requirement(opcode)
    low = below(need.minimum_target)
    kb, a_frag, b_frag, acc, d = _mma_kernel(need.minimum_target, shape, atype, dtype, False)
    ptx = kb.ptx()
    assert opcode in ptx
    stats = ptxas_stats(ptx, need.minimum_target)["k"]
    assert stats.registers > 0 and stats.spill_stores == 0
    na, nb, nc, _ = MMA_FORMS[(shape, atype)]
    acc_regs = nc // 2 if dtype == "f16" else nc
    assert (len(a_frag), len(b_frag), len(acc), len(d)) == (na, nb, acc_regs, acc_regs)
    # one register per value: the mma reads every A, B and C register and writes every D one
    inst = next(i for i in kb.build().kernels[0].instructions if i.opcode == opcode)
    assert len(inst.defs) == acc_regs and len(set(inst.uses)) == na + nb + acc_regs
    # one target below: the builder names the minimum target, and ptxas agrees
    with pytest.raises(UnsupportedError, match=f"minimum target {need.minimum_target}"):
        _mma_kernel(low, shape, atype, dtype, False)
    assert "requires .target" in ptxas_refuses(ptx, low)


def test_imma_accumulates_in_place_and_stays_live_across_the_k_loop():
    kb = KernelBuilder("k", target="sm_80")
    out = kb.load_param(kb.param_ptr("out", "f32"))
    a = kb.mma_fragment("a", "m16n8k16", "f16", fill=0)
    b = kb.mma_fragment("b", "m16n8k16", "f16", fill=0)
    acc = kb.mma_fragment("c", "m16n8k16", "f16", fill=0.0)
    with kb.loop(0, 8):
        d = kb.imma(acc, a, b, shape="m16n8k16", atype="f16")
    assert tuple(d) == tuple(acc)
    for i, r in enumerate(acc):
        kb.st(kb.elem_ptr(out, i), r)
    kernel = kb.build().kernels[0]
    live = analyze_liveness(kernel)
    insts = kernel.instructions
    k = next(n for n, i in enumerate(insts) if i.family == "mma")
    head = next(n for n, i in enumerate(insts) if i.family == "setp")   # the loop test
    for where in (k, head):
        names = {live.register(x).name for x in live.live_at(where, "before")}
        assert {r.name for r in acc} | {r.name for r in a} | {r.name for r in b} <= names
    # after the last store the accumulator is dead
    last = max(n for n, i in enumerate(insts) if i.family == "st")
    assert not {r.name for r in acc} & {live.register(x).name for x in live.live_at(last, "after")}
    ptxas_stats(kb.ptx(), "sm_80")


def test_mma_fragment_mistakes_are_clear():
    kb = KernelBuilder("k", target="sm_80")
    a = kb.mma_fragment("a", "m16n8k16", "f16")
    b = kb.mma_fragment("b", "m16n8k16", "f16")
    c = kb.mma_fragment("c", "m16n8k16", "f16")
    with pytest.raises(BuildError, match="A fragment needs 4 .b32 registers, got 2"):
        kb.mma(b, b, c, shape="m16n8k16", atype="f16")
    with pytest.raises(BuildError, match="no mma form m16n8k16 with .f64.f64"):
        kb.mma(a, b, c, shape="m16n8k16", atype="f64")
    with pytest.raises(BuildError, match="accumulates in .f32, not .f16"):
        kb.mma(a, b, c, shape="m16n8k16", atype="bf16", dtype="f16")
    f = tuple(kb.mov(0.0, type="f32") for _ in range(4))
    with pytest.raises(PtxTypeError, match="A registers of class b32"):
        kb.mma(f, b, c, shape="m16n8k16", atype="f16")


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_and_stmatrix(num, trans):
    def build(target, store):
        kb = KernelBuilder("k", target=target)
        out = kb.load_param(kb.param_ptr("out", "b32"))
        tile = kb.shared_array("tile", "b16", 64 * 8, align=16)
        row = kb.elem_ptr(tile, kb.mul(kb.tid(), 8))
        frag = kb.ldmatrix(row, num, trans=trans)
        if store:
            kb.stmatrix(row, frag, trans=trans)
        for i, r in enumerate(frag):
            kb.st(out, r, offset=4 * i)
        return kb, frag
    kb, frag = build("sm_75", False)
    opcode = f"ldmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16"
    assert opcode in kb.ptx() and len(frag) == num
    ptxas_stats(kb.ptx(), "sm_75")
    with pytest.raises(UnsupportedError, match="minimum target sm_75"):
        build("sm_72", False)
    assert "requires .target" in ptxas_refuses(kb.ptx(), "sm_72")
    kb, _ = build("sm_90", True)
    ptxas_stats(kb.ptx(), "sm_90")
    with pytest.raises(UnsupportedError, match="stmatrix.*minimum target sm_90"):
        build("sm_89", True)
    assert "requires .target" in ptxas_refuses(kb.ptx(), "sm_89")


def test_ldmatrix_needs_shared_memory():
    kb = KernelBuilder("k", target="sm_80")
    x = kb.load_param(kb.param_ptr("x", "b16"))
    with pytest.raises(BuildError, match="needs a shared-memory address.*global"):
        kb.ldmatrix(x, 4)
    with pytest.raises(BuildError, match="num must be 1, 2 or 4"):
        kb.ldmatrix(kb.address_of(kb.shared_array("t", "b16", 64)), 3)


def _copy_kernel(target, forms):
    kb = KernelBuilder("k", target=target)
    x = kb.load_param(kb.param_ptr("x", "f32"))
    tile = kb.shared_array("tile", "f32", 1024, align=16)
    for k, (size, cache) in enumerate(forms):
        kb.cp_async(kb.elem_ptr(tile, kb.add(kb.tid(), 256 * k)),
                    kb.elem_ptr(x, kb.global_id()), size, cache=cache)
    kb.cp_async_commit()
    kb.cp_async_wait(1)
    kb.cp_async_wait_all()
    kb.bar_sync()
    kb.st(kb.elem_ptr(x, kb.global_id()), kb.ld(kb.elem_ptr(tile, kb.tid())))
    return kb


def test_cp_async_forms_and_groups():
    forms = [(4, "ca"), (8, "ca"), (16, "ca"), (16, "cg")]
    ptx = _copy_kernel("sm_80", forms).ptx()
    for size, cache in forms:
        assert f"cp.async.{cache}.shared.global" in ptx and f"], {size};" in ptx
    assert "cp.async.commit_group;" in ptx and "cp.async.wait_group 1;" in ptx
    ptxas_stats(ptx, "sm_80")
    with pytest.raises(UnsupportedError, match="minimum target sm_80"):
        _copy_kernel("sm_75", forms)
    assert "requires .target sm_80" in ptxas_refuses(ptx, "sm_75")
    with pytest.raises(BuildError, match="cp.async.cg copies 16 bytes, got 8"):
        _copy_kernel("sm_80", [(8, "cg")])
    with pytest.raises(BuildError, match=r"n \(groups left pending\) must be an int in \[0, 7\]"):
        KernelBuilder("k").cp_async_wait(9)


def _bulk_kernel(target):
    kb = KernelBuilder("k", target=target)
    x = kb.load_param(kb.param_ptr("x", "f32"))
    tile = kb.shared_array("tile", "f32", 1024, align=128)
    bar = kb.shared_array("bar", "b64", 1, align=8)
    kb.cp_async_bulk(kb.address_of(tile), x, 4096, mbar=kb.address_of(bar))
    kb.cp_async_bulk(x, kb.address_of(tile), kb.mov(256, type="u32"))
    kb.cp_async_bulk_commit()
    kb.cp_async_bulk_wait(0)
    return kb


def test_cp_async_bulk_both_directions():
    kb = _bulk_kernel("sm_90")
    ptx = kb.ptx()
    assert "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
    assert "cp.async.bulk.global.shared::cta.bulk_group" in ptx
    assert ".version 8.0" in ptx
    ptxas_stats(ptx, "sm_90")
    with pytest.raises(UnsupportedError, match="minimum target sm_90"):
        _bulk_kernel("sm_89")
    assert "requires .target sm_90" in ptxas_refuses(ptx, "sm_89")
    kb = KernelBuilder("k", target="sm_90")
    tile = kb.shared_array("tile", "f32", 64, align=16)
    x = kb.load_param(kb.param_ptr("x", "f32"))
    with pytest.raises(BuildError, match="pass mbar="):
        kb.cp_async_bulk(kb.address_of(tile), x, 256)
    with pytest.raises(BuildError, match="multiple of 16 bytes, got 100"):
        kb.cp_async_bulk(x, kb.address_of(tile), 100)


def _wgmma_kernel(target, n=64, scale_d=1):
    kb = KernelBuilder("k", target=target)
    out = kb.load_param(kb.param_ptr("out", "f32"))
    a_tile = kb.shared_array("a_tile", "f16", 64 * 16, align=128)
    b_tile = kb.shared_array("b_tile", "f16", n * 16, align=128)
    da = kb.wgmma_desc(kb.address_of(a_tile), lbo=128, sbo=256)
    db = kb.wgmma_desc(kb.address_of(b_tile), lbo=128, sbo=256)
    acc = kb.wgmma_fragment(n, fill=0.0)
    kb.wgmma_fence()
    kb.iwgmma(acc, da, db, n=n, scale_d=scale_d)
    kb.wgmma_commit()
    kb.wgmma_wait(0)
    for i, r in enumerate(acc):
        kb.st(kb.elem_ptr(out, i), r)
    return kb, acc


@pytest.mark.parametrize("n", [8, 64, 256])
def test_wgmma_on_sm90a_only(n):
    kb, acc = _wgmma_kernel("sm_90a", n)
    assert len(acc) == wgmma_accumulators(n) == n // 2
    ptx = kb.ptx()
    assert f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16" in ptx
    stats = ptxas_stats(ptx, "sm_90a")["k"]
    assert stats.registers >= n // 2          # the accumulator alone
    with pytest.raises(UnsupportedError, match="minimum target sm_90a"):
        _wgmma_kernel("sm_90", n)
    assert "not supported on .target 'sm_90'" in ptxas_refuses(ptx, "sm_90")


def test_wgmma_scale_d_zero_does_not_read_the_accumulator():
    for scale_d, read in ((1, True), (0, False)):
        kb, acc = _wgmma_kernel("sm_90a", 8, scale_d)
        inst = next(i for i in kb.build().kernels[0].instructions if i.family == "wgmma"
                    and "mma_async" in i.opcode)
        assert (set(acc) <= set(inst.uses)) is read
        assert set(inst.defs) == set(acc)
        ptxas_stats(kb.ptx(), "sm_90a")


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a", "sm_120f"])
def test_setmaxnreg_on_arch_specific_targets(target):
    kb = KernelBuilder("k", target=target)
    kb.setmaxnreg(240)
    kb.setmaxnreg(40, inc=False)
    ptx = kb.ptx()
    assert "setmaxnreg.inc.sync.aligned.u32 240;" in ptx
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in ptx
    ptxas_stats(ptx, target)
    plain = target[:-1]
    with pytest.raises(UnsupportedError, match="minimum target sm_90a"):
        KernelBuilder("k", target=plain).setmaxnreg(240)
    assert "not supported on .target" in ptxas_refuses(ptx, plain)


@pytest.mark.parametrize("count", [16, 20, 100, 264, 25.0, True])
def test_setmaxnreg_count_is_checked(count):
    kb = KernelBuilder("k", target="sm_90a")
    with pytest.raises(BuildError, match=r"multiple of 8 in \[24, 256\]"):
        kb.setmaxnreg(count)


_DEC = [  # (directives, a lone setmaxnreg.dec count, the ceiling ptxas holds it to or None)
    ({"maxnreg": (64,)}, 72, 64), ({"maxnreg": (64,)}, 64, None),
    ({"maxnreg": (100,)}, 104, 100), ({"maxnreg": (100,)}, 96, None),
    ({"maxntid": (1024,)}, 72, 64), ({"reqntid": (32, 32)}, 72, 64),
    ({"maxntid": (768,)}, 88, 80), ({"maxntid": (768,)}, 80, None),
    ({"maxntid": (640,)}, 104, 96), ({"maxntid": (1000,)}, 72, 64),
    ({"maxntid": (256,), "minnctapersm": (2,)}, 136, 128),
    ({"maxntid": (256,), "minnctapersm": (2,)}, 128, None),
    ({"maxntid": (512,), "minnctapersm": (3,)}, 48, 40),
    ({"maxntid": (96,), "minnctapersm": (8,)}, 88, 80),
    ({"maxnreg": (100,), "maxntid": (384,), "minnctapersm": (2,)}, 88, 80), ({}, 248, None)]
_WITH_INC = [  # (directives, (count, inc) calls in order, the ceiling or None)
    ({}, ((24, True), (32, False)), 24), ({}, ((32, False), (24, True)), 24),
    ({}, ((48, True), (32, False)), None), ({}, ((24, True), (40, True), (32, False)), None),
    ({"maxnreg": (64,)}, ((128, True), (96, False)), None),
    ({"maxnreg": (64,)}, ((96, False), (128, True)), None),
    ({"maxnreg": (64,)}, ((32, True), (48, False)), 32),
    ({"maxnreg": (128,)}, ((32, True), (48, True), (56, False)), 48),
    ({"maxntid": (1024,)}, ((40, True), (56, False)), 40)]
_CASES = [(d, ((c, False),), cap) for d, c, cap in _DEC] + _WITH_INC


@pytest.mark.parametrize(("directives", "calls", "ceiling"), _CASES)
def test_setmaxnreg_dec_above_the_largest_count_is_refused_like_ptxas(directives, calls, ceiling):
    """A ``setmaxnreg.dec`` to more registers than the kernel's largest ``setmaxnreg.inc``
    count (without one: than its directives give it at entry): the builder refuses it, naming
    the ceiling, exactly where ptxas refuses it (C7406), and builds what ptxas accepts."""
    kb = KernelBuilder("k", target="sm_90a")
    for name, values in directives.items():
        getattr(kb, name)(*values)
    for count, inc in calls:
        kb.setmaxnreg(count, inc=inc)
    text = "\n".join(f".{name} {', '.join(map(str, values))}" for name, values in directives.items())
    body = "".join(f"\tsetmaxnreg.{'inc' if inc else 'dec'}.sync.aligned.u32 {count};\n"
                   for count, inc in calls)
    ptx = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n"
           f"{text}\n{{\n{body}\tret;\n}}\n")
    if ceiling is None:
        ptxas_stats(kb.ptx(), "sm_90a")
        ptxas_stats(ptx, "sm_90a")
        return
    what = "its largest setmaxnreg.inc count" if any(inc for _, inc in calls) else \
        r"what k has at entry \(from \..*\)"
    with pytest.raises(BuildError, match=rf"more than {what}, {ceiling}; .*at most {ceiling}"
                                         rf".*test_tensor_ops.py"):
        kb.ptx()
    assert "C7406" in ptxas_refuses(ptx, "sm_90a")


def test_every_new_family_is_in_the_isa_table():
    for family in ("mma", "ldmatrix", "stmatrix", "cp", "wgmma", "setmaxnreg"):
        assert family in isa.OPS
    assert isa.requirement("cp.async.bulk.commit_group").sm == 90
    assert isa.requirement("cp.async.commit_group").sm == 80
    assert isa.requirement("wgmma.fence.sync.aligned").arch == ("sm_90a",)
    st = ir.Instruction("stmatrix.sync.aligned.m8n8.x1.shared.b16")
    assert isa.min_ptx_version("sm_80", [st]) == "7.8"


def test_fragment_register_types():
    kb = KernelBuilder("k", target="sm_80")
    assert {r.type for r in kb.mma_fragment("c", "m16n8k16", "f16", "f16")} == {T.f16x2}
    assert {r.type for r in kb.mma_fragment("c", "m16n8k32", "s8")} == {T.s32}
    assert {r.type for r in kb.mma_fragment("a", "m8n8k4", "f64")} == {T.f64}
    assert len(kb.mma_fragment("c", "m16n8k16", "f16", "f16")) == 2
