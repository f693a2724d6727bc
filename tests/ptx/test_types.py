"""PTX types and register classes: interning, prefixes, declarations, widths."""

from __future__ import annotations

import pytest

from ptxforge.errors import PtxTypeError
from ptxforge.ptx import types as T


def test_every_fundamental_type_exists_and_is_interned():
    names = {t.name for t in T.ALL_TYPES}
    assert names == {"pred", "b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8",
                     "s16", "s32", "s64", "f16", "f16x2", "bf16", "bf16x2", "f32", "f64"}
    for t in T.ALL_TYPES:
        assert T.PtxType.get(t.name) is t and T.PtxType.get("." + t.name) is t
        assert T.as_type(t) is t and T.as_type(t.ptx) is t


def test_each_class_has_its_own_prefix():
    prefixes = [c.prefix for c in T.REG_CLASSES]
    assert len(set(prefixes)) == len(prefixes)


def test_a_kernel_using_every_type_declares_each_prefix_once(ptxas_accepts):
    # trueno-gpu's bug: .u64 and .b64 both produced %rd0 with two declarations.
    import re

    from ptxforge import KernelBuilder

    kb = KernelBuilder("every_type", target="sm_90")
    for t in T.ALL_TYPES:
        if t is T.pred:
            kb.setp("eq", kb.mov(0, type="u32"), 0)
        elif t.is_float:
            kb.mov(1.0, type=t)
        else:
            kb.mov(1, type=t) if t is not T.b128 else kb.pack([kb.mov(1, type="b32")] * 4, "b128")
    ptx = kb.ptx()
    decls = re.findall(r"\.reg \.(\w+) (%[a-z]+)<\d+>;", ptx)
    prefixes = [prefix for _, prefix in decls]
    assert len(prefixes) == len(set(prefixes)) == len(T.REG_CLASSES)
    assert {prefix: decl for decl, prefix in decls} == {c.prefix: c.decl for c in T.REG_CLASSES}
    ptxas_accepts(ptx, "sm_90")


@pytest.mark.parametrize("ty,prefix,decl,units", [
    (T.u64, "%rd", "b64", 2), (T.b64, "%rd", "b64", 2), (T.s64, "%rd", "b64", 2),
    (T.u32, "%r", "b32", 1), (T.f16x2, "%r", "b32", 1), (T.f16, "%rs", "b16", 1),
    (T.u8, "%rs", "b16", 1), (T.f32, "%f", "f32", 1), (T.f64, "%fd", "f64", 2),
    (T.pred, "%p", "pred", 1), (T.b128, "%rq", "b128", 4)])
def test_class_of_type(ty, prefix, decl, units):
    assert (ty.reg_class.prefix, ty.reg_class.decl, ty.units) == (prefix, decl, units)


def test_kinds_and_flags():
    assert T.f32.is_float and not T.f32.is_int and T.s32.is_signed and T.u32.is_int
    assert T.b32.is_bits and T.pred.is_pred and T.bf16x2.is_packed and not T.bf16.is_packed
    assert (T.f16x2.bits, T.f16x2.lanes) == (32, 2)


def test_unknown_type_and_decl():
    with pytest.raises(PtxTypeError, match="unknown PTX type 'f8'"):
        T.PtxType.get("f8")
    with pytest.raises(PtxTypeError):
        T.as_type(3)
    assert T.class_for_decl(".u64") is T.u64.reg_class
    with pytest.raises(PtxTypeError):
        T.class_for_decl("f8")
