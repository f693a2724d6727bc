"""Run one PTX instruction (or a few) on the interpreter, element-wise over NumPy inputs, and the
exact references the semantics tests compare it with (rounding done with Fractions, independent
of ptxforge.emulator.floats).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["run_op", "round_exact", "PTX_TYPE"]

PTX_TYPE = {np.float32: "f32", np.float64: "f64", np.uint32: "u32", np.int32: "s32",
            np.uint64: "u64", np.int64: "s64", np.uint16: "u16", np.int16: "s16",
            np.float16: "f16", np.uint8: "u8", np.int8: "s8"}
_REG = {"f32": "f32", "f64": "f64", "u32": "b32", "s32": "b32", "u64": "b64", "s64": "b64",
        "u16": "b16", "s16": "b16", "f16": "b16", "u8": "b16", "s8": "b16"}
_LD = {"f16": "b16"}


def run_op(body: str, ins, out_dtype, *, extra_regs: str = "", block: int = 32) -> np.ndarray:
    """Run ``body`` with inputs in %a, %b, %c (typed from the arrays' dtypes) for each element;
    it leaves its result in %d (of ``out_dtype``).  One thread per element."""
    from ptxforge.launch.loader import load

    ins = [np.ascontiguousarray(x) for x in ins]
    n = len(ins[0])
    names = "abc"[: len(ins)]
    out_t = PTX_TYPE[np.dtype(out_dtype).type]
    decls = [f".reg .{_REG[PTX_TYPE[x.dtype.type]]} %{v};" for v, x in zip(names, ins)]
    decls.append(f".reg .{_REG[out_t]} %d;")
    params = ", ".join(f".param .u64 p{v}" for v in names + "o")
    loads = []
    for v, x in zip(names, ins):
        t = PTX_TYPE[x.dtype.type]
        loads += [f"ld.param.u64 %q, [p{v}];", f"mad.wide.u32 %q, %i, {x.dtype.itemsize}, %q;",
                  f"ld.global.{_LD.get(t, t)} %{v}, [%q];"]
    size = np.dtype(out_dtype).itemsize
    text = f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry op({params})
{{
    .reg .pred %p<8>;
    .reg .b32 %i, %n;
    .reg .b64 %q;
    {' '.join(decls)}
    {extra_regs}
    mov.u32 %i, %ctaid.x;
    mov.u32 %n, %ntid.x;
    mad.lo.u32 %i, %i, %n, %tid.x;
    setp.ge.u32 %p7, %i, {n};
    @%p7 bra DONE;
    {' '.join(loads)}
    {body}
    ld.param.u64 %q, [po];
    mad.wide.u32 %q, %i, {size}, %q;
    st.global.{_LD.get(out_t, out_t)} [%q], %d;
DONE:
    ret;
}}
"""
    out = np.zeros(n, out_dtype)
    load(text, device="emulator")["op"](*ins, out, grid=-(-n // block), block=block)
    return out


def round_exact(q: Fraction, dtype, mode: str):
    """The ``dtype`` value ``q`` rounds to in ``mode`` (rn ties to even), found by comparing
    the neighbours of a nearby candidate exactly."""
    dtype = np.dtype(dtype).type
    c = dtype(float(q))
    cands = {float(c), float(np.nextafter(c, dtype(np.inf))),
             float(np.nextafter(c, dtype(-np.inf)))}
    cands = sorted(v for v in cands if np.isfinite(v))
    below = max((v for v in cands if Fraction(v) <= q), default=None)
    above = min((v for v in cands if Fraction(v) >= q), default=None)
    if mode == "rm":
        return dtype(below)
    if mode == "rp":
        return dtype(above)
    if mode == "rz":
        return dtype(below if q >= 0 else above)
    if below == above:
        return dtype(below)
    db, da = q - Fraction(below), Fraction(above) - q
    if db != da:
        return dtype(below if db < da else above)
    bits = np.array([below], dtype).view(np.uint32 if dtype is np.float32 else np.uint64)[0]
    return dtype(below if bits % 2 == 0 else above)
