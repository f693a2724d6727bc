"""The one layout (ptxforge.ptx.layout) against what the real ptxas executable lays out, and the
issue-23 case (``.param .align 4 .b64`` after a ``.u32``) run on the emulator."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ptxforge.ptx import ir, layout, types

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas executable on PATH")

# The issue-23 kernel: ``x`` lands at byte 8 (its natural alignment), not 4 (its .align).
ALIGN_PTX = """\
.version 8.3
.target sm_80
.address_size 64

.visible .entry k(.param .u32 a, .param .align 4 .b64 x[2], .param .u64 out)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<5>;
    ld.param.u32 %r1, [a];
    ld.param.b64 %rd1, [x];
    ld.param.b64 %rd2, [x+8];
    ld.param.u64 %rd3, [out];
    cvta.to.global.u64 %rd4, %rd3;
    st.global.b64 [%rd4], %rd1;
    st.global.b64 [%rd4+8], %rd2;
    st.global.u32 [%rd4+16], %r1;
    ret;
}
"""
ALIGN_ARGS = dict(a=0xCAFE, x=[0x1122334455667788, 0x99AABBCCDDEEFF00])


def _p(name, ty, **kw):
    return ir.Param(name, getattr(types, ty), **kw)


SIGNATURES = {
    "issue23": (_p("a", "u32"), _p("x", "b64", align=4, dims=(2,))),
    "smaller_aligns": (_p("a", "u8"), _p("d", "b32", align=2), _p("e", "b16", align=1, dims=(3,)),
                       _p("f", "u8", align=16), _p("g", "u8", dims=(3,)), _p("h", "b64", align=8)),
    "bigger_aligns": (_p("a", "u16"), _p("s", "b8", align=16, dims=(12,)), _p("t", "b8", align=8,
                                                                               dims=(5,)),
                      _p("u", "f32")),
    "pointers": (_p("n", "u32"), _p("p", "u64", pointer=True, state_space="global", ptr_align=16),
                 _p("c", "u8"), _p("q", "u64"), _p("w", "b128")),
    "packed": (_p("a", "f16"), _p("b", "f64", align=4), _p("c", "s8"), _p("d", "u64", align=16,
                                                                          dims=(2,))),
}


@pytest.fixture(scope="module")
def ptxas_cubin():
    """The signatures above compiled by the ptxas executable; the cubin read back."""
    from ptxforge.ptx.emit import emit
    from ptxforge.toolchain.compile import compile_ptx
    from ptxforge.toolchain.cubin import read_cubin

    module = ir.Module("8.3", "sm_80", kernels=tuple(
        ir.Kernel(name, params=params, body=(ir.Instruction("ret"),))
        for name, params in SIGNATURES.items()))
    return read_cubin(compile_ptx(emit(module), "sm_80", backend="ptxas").cubin)


@needs_ptxas
@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_param_layout_is_what_ptxas_writes_in_the_cubin(ptxas_cubin, name):
    from ptxforge.launch.image import cubin_param_layout

    ours = [(s.offset, s.size) for s in layout.param_layout(SIGNATURES[name])]
    assert ours == list(cubin_param_layout(ptxas_cubin, name))


def test_the_issue23_layout():
    slots = layout.param_layout(SIGNATURES["issue23"])
    assert [(s.offset, s.size, s.align) for s in slots] == [(0, 4, 4), (8, 16, 8)]
    assert layout.params_size(slots) == 24


def test_the_launcher_and_the_emulator_ask_the_one_layout():
    from ptxforge.emulator.machine import Program
    from ptxforge.launch import args
    from ptxforge.ptx.parse import parse

    kernel = parse(ALIGN_PTX).kernel("k")
    prog = Program(kernel)
    assert prog.param_offsets == {s.name: s.offset for s in args.param_layout(kernel.params)}
    assert prog.param_offsets == {"a": 0, "x": 8, "out": 24} and prog.param_size == 32
    assert args.ParamSlot is layout.ParamSlot and args.param_align is layout.param_align


@pytest.mark.parametrize("decls, ptxas_bytes", [
    # ptxas's shared-memory size (its -v 'smem') for the variables in order: natural alignment
    # wins over a smaller .align, a .vN is aligned to its whole size.
    ((("u8", None, None, ()), ("b64", 4, None, (2,))), 24),
    ((("u8", None, None, ()), ("f32", None, 4, ())), 32),
    ((("u8", None, None, ()), ("b32", 1, None, ())), 8),
    ((("u8", None, None, ()), ("f32", 2, 2, ())), 16),
    ((("u8", None, None, ()), ("b8", 16, None, (3,)), ("u16", None, None, ())), 22),
])
@needs_ptxas
def test_shared_variable_layout_is_what_ptxas_allocates(decls, ptxas_bytes):
    from ptxforge.toolchain.compile import compile_ptx

    vars_ = [ir.VarDecl("shared", getattr(types, ty), f"v{i}", align=al, vector=vec, dims=dims)
             for i, (ty, al, vec, dims) in enumerate(decls)]
    _, end = layout.var_layout(vars_)
    assert end == ptxas_bytes
    # every variable is used, so ptxas keeps it; its shared size is the layout's end
    decl = "\n".join(emit_var(v) for v in vars_)
    use = "\n".join(f"mov.u32 %r{i}, {v.name}; st.global.u32 [%rd1+{4 * i}], %r{i};"
                     for i, v in enumerate(vars_))
    ptx = (".version 8.3\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 out)\n"
           f"{{\n.reg .b32 %r<{len(vars_)}>;\n.reg .b64 %rd<2>;\n{decl}\n"
           f"ld.param.u64 %rd1, [out];\n{use}\nret;\n}}\n")
    assert compile_ptx(ptx, "sm_80", backend="ptxas")["k"].shared == ptxas_bytes


def test_variable_sizes():
    v = ir.VarDecl("shared", types.f32, "v", vector=4, dims=(8,))
    assert (layout.var_size(v), layout.var_align(v)) == (128, 16)
    assert layout.var_size(ir.VarDecl("shared", types.f32, "d", dims=(None,))) == 0
    offsets, end = layout.shared_layout([ir.VarDecl("shared", types.u8, "a"),
                                        ir.VarDecl("shared", types.b8, "d", dims=(None,), align=8)])
    assert offsets == {"a": 0, "d": 8} and end == 8


def emit_var(v: ir.VarDecl) -> str:
    """``.shared [.align A] [.vN] .type name[dims];``"""
    return (f".shared {f'.align {v.align} ' if v.align else ''}{f'.v{v.vector} ' if v.vector else ''}"
            f"{v.type.ptx} {v.name}{''.join(f'[{d}]' for d in v.dims)};")


def _check(out):
    assert int(out[:8].view(np.uint64)[0]) == 0x1122334455667788
    assert int(out[8:16].view(np.uint64)[0]) == 0x99AABBCCDDEEFF00
    assert int(out[16:20].view(np.uint32)[0]) == 0xCAFE


def test_issue23_kernel_on_the_emulator():
    from ptxforge import load

    out = np.zeros(24, np.uint8)
    load(ALIGN_PTX, device="emulator")["k"](out=out, grid=1, block=1, **ALIGN_ARGS)
    _check(out)


@pytest.mark.gpu
def test_issue23_kernel_on_the_gpu():
    from ptxforge import load

    out = np.zeros(24, np.uint8)
    with load(ALIGN_PTX) as mod:
        mod["k"](out=out, grid=1, block=1, **ALIGN_ARGS)
    _check(out)
