"""The four ready-made kernels: ptxas accepts them for sm_80 and sm_90, they have the
documented parameters and shape, and modadd256 computes the right numbers (checked by
interpreting its instructions in Python, so no GPU is needed)."""

from __future__ import annotations

import random

import pytest

from ptxforge.dsl import kernels
from ptxforge.errors import BuildError
from ptxforge.ptx import ir
from ptxforge.ptx.emit import emit

ARCHS = ("sm_80", "sm_90")


def params(module, name):
    return [(p.name, p.type.name, p.pointer) for p in module.kernel(name).params]


def opcodes(module, name):
    return [i.opcode for i in module.kernel(name).instructions]


@pytest.mark.parametrize("arch", ARCHS)
def test_saxpy(ptxas_accepts, arch):
    m = kernels.saxpy(target=arch)
    assert m.target == arch and m.version == {"sm_80": "7.0", "sm_90": "7.8"}[arch]
    assert params(m, "saxpy") == [("n", "u32", False), ("a", "f32", False), ("x", "u64", True),
                                  ("y", "u64", True)]
    ops = opcodes(m, "saxpy")
    assert ops.count("fma.rn.f32") == 1 and ops.count("st.global.f32") == 1
    assert ops.count("ld.global.f32") == 2
    log = ptxas_accepts(emit(m), arch)
    assert "Used" in log or "used" in log


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("block", (256, 96))
def test_block_reduce_sum(ptxas_accepts, arch, block):
    m = kernels.block_reduce_sum(block=block, target=arch)
    k = m.kernel("block_reduce_sum")
    assert params(m, "block_reduce_sum") == [("x", "u64", True), ("out", "u64", True),
                                             ("n", "u32", False)]
    assert dict(k.directives)[".maxntid"] == (block, 1, 1)
    shared = [s for s in k.body if isinstance(s, ir.VarDecl) and s.space == "shared"]
    assert [(s.name, s.dims) for s in shared] == [("warp_sums", (block // 32,))]
    ops = opcodes(m, "block_reduce_sum")
    assert ops.count("shfl.sync.bfly.b32") == 5
    assert ops.count("shfl.sync.down.b32") == (block // 32 - 1).bit_length()
    assert ops.count("bar.sync") == 1 and "st.shared.f32" in ops and "ld.shared.f32" in ops
    # the grid-stride accumulator is updated in place: add.f32 %fA, %fA, ...
    inplace = [i for i in k.instructions if i.opcode == "add.f32" and i.operands[0] == i.operands[1]]
    assert len(inplace) >= 6
    ptxas_accepts(emit(m), arch)


def test_block_reduce_rejects_bad_block():
    with pytest.raises(BuildError, match="multiple of 32"):
        kernels.block_reduce_sum(block=100)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("tile", (16, 8))
def test_sgemm_tiled(ptxas_accepts, arch, tile):
    m = kernels.sgemm_tiled(tile=tile, target=arch)
    k = m.kernel("sgemm_tiled")
    assert [p.name for p in k.params] == ["A", "B", "C", "M", "N", "K"]
    assert [p.pointer for p in k.params] == [True, True, True, False, False, False]
    assert dict(k.directives)[".reqntid"] == (tile, tile, 1)
    shared = {s.name: s.dims for s in k.body if isinstance(s, ir.VarDecl) and s.space == "shared"}
    assert shared == {"a_tile": (tile * tile,), "b_tile": (tile * tile,)}
    ops = opcodes(m, "sgemm_tiled")
    assert ops.count("fma.rn.f32") == tile  # fully unrolled inner loop
    fmas = [i for i in k.instructions if i.opcode == "fma.rn.f32"]
    assert len({i.operands[0] for i in fmas}) == 1 and all(i.operands[0] == i.operands[3] for i in fmas)
    assert ops.count("bar.sync") == 2 and ops.count("ld.shared.f32") == 2 * tile
    ptxas_accepts(emit(m), arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_modadd256_shape(ptxas_accepts, arch):
    m = kernels.modadd256(target=arch)
    assert params(m, "modadd256") == [("a", "u64", True), ("b", "u64", True), ("p", "u64", True),
                                      ("out", "u64", True), ("n", "u32", False)]
    ops = opcodes(m, "modadd256")
    assert ops.count("add.cc.u32") == 1 and ops.count("addc.cc.u32") == 7
    assert ops.count("sub.cc.u32") == 1 and ops.count("subc.cc.u32") == 7
    assert ops.count("selp.u32") == 8 and ops.count("ld.global.v4.u32") == 6
    ptxas_accepts(emit(m), arch)


# -- a tiny interpreter for the straight-line integer subset modadd256 uses -----------------

M32 = 0xFFFFFFFF


def _interpret(kernel, args, memory, tid):
    """Run ``kernel`` for one thread (block 0, ntid 1); ``memory`` maps byte address -> u32."""
    regs, cc = {}, 0
    sregs = {"%tid.x": tid, "%ntid.x": 1, "%ctaid.x": 0}

    def val(op):
        if isinstance(op, ir.Register):
            return regs[op.name]
        if isinstance(op, ir.Immediate):
            return op.value & ((1 << 64) - 1)
        if isinstance(op, ir.SpecialReg):
            return sregs[op.name]
        raise AssertionError(op)

    def addr(op):
        base = args[op.base.name] if isinstance(op.base, ir.Symbol) else regs[op.base.name]
        return base + op.offset

    for inst in kernel.instructions:
        if inst.guard is not None and regs[inst.guard.register.name] == inst.guard.negated:
            continue
        code, ops = inst.opcode, inst.operands
        d = ops[0].name if ops and isinstance(ops[0], ir.Register) else None
        if code == "ret":
            return
        if code.startswith("mov."):
            regs[d] = val(ops[1])
        elif code == "mad.lo.u32":
            regs[d] = (val(ops[1]) * val(ops[2]) + val(ops[3])) & M32
        elif code.startswith("ld.param."):
            regs[d] = addr(ops[1])
        elif code == "cvta.to.global.u64":
            regs[d] = val(ops[1])
        elif code == "setp.ge.u32":
            regs[d] = val(ops[1]) >= val(ops[2])
        elif code == "setp.ne.u32":
            regs[d] = val(ops[1]) != val(ops[2])
        elif code == "shl.b32":
            regs[d] = (val(ops[1]) << val(ops[2])) & M32
        elif code == "mul.wide.u32":
            regs[d] = val(ops[1]) * val(ops[2])
        elif code == "add.s64":
            regs[d] = (val(ops[1]) + val(ops[2])) & ((1 << 64) - 1)
        elif code == "ld.global.v4.u32":
            a = addr(ops[1])
            for k, r in enumerate(ops[0].elements):
                regs[r.name] = memory[a + 4 * k]
        elif code == "st.global.v4.u32":
            a = addr(ops[0])
            for k, r in enumerate(ops[1].elements):
                memory[a + 4 * k] = regs[r.name]
        elif code in ("add.cc.u32", "addc.cc.u32", "addc.u32"):
            total = val(ops[1]) + val(ops[2]) + (cc if code.startswith("addc") else 0)
            regs[d] = total & M32
            if ".cc." in code:
                cc = total >> 32
        elif code in ("sub.cc.u32", "subc.cc.u32", "subc.u32"):
            total = val(ops[1]) - val(ops[2]) - (cc if code.startswith("subc") else 0)
            regs[d] = total & M32
            if ".cc." in code:
                cc = 1 if total < 0 else 0
        elif code == "selp.u32":
            regs[d] = val(ops[1]) if regs[ops[3].name] else val(ops[2])
        else:
            raise AssertionError(f"interpreter does not know {code}")


def _limbs(x):
    return [(x >> (32 * k)) & M32 for k in range(8)]


def test_modadd256_computes_modular_sums():
    kernel = kernels.modadd256().kernel("modadd256")
    rng = random.Random(7)
    primes = [2**256 - 2**32 - 977, 2**255 - 19, 2**256 - 189]
    cases = []
    for p in primes:
        cases += [(p - 1, p - 1, p), (0, 0, p), (p - 1, 1, p), (1, 2, p)]
        cases += [(rng.randrange(p), rng.randrange(p), p) for _ in range(6)]
    bases = {"a": 0x10000, "b": 0x20000, "p": 0x30000, "out": 0x40000}
    memory = {}
    for i, (a, b, p) in enumerate(cases):
        for name, value in (("a", a), ("b", b), ("p", p)):
            for k, limb in enumerate(_limbs(value)):
                memory[bases[name] + 32 * i + 4 * k] = limb
    args = dict(bases, n=len(cases))
    for tid in range(len(cases) + 2):  # two extra threads must return without writing
        _interpret(kernel, args, memory, tid)
    for i, (a, b, p) in enumerate(cases):
        got = sum(memory[bases["out"] + 32 * i + 4 * k] << (32 * k) for k in range(8))
        assert got == (a + b) % p, (i, hex(a), hex(b), hex(p))
    assert bases["out"] + 32 * len(cases) not in memory
