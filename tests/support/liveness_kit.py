"""Compact construction of IR kernels for the liveness/pressure tests.

``kernel(lines)`` turns one-instruction-per-line PTX-like text into an ``ir.Kernel`` made of
ir classes directly (no parser, no builder).  The register type follows the name prefix:
``%p`` pred, ``%rs`` u16, ``%r`` u32, ``%rd`` u64, ``%rq`` b128, ``%f`` f32, ``%fd`` f64.
Every register gets its own ``.reg`` declaration, and the kernel has one ``.u64`` parameter
``p``, so the emitted PTX can be given to ptxas.
"""

from __future__ import annotations

import re

from ptxforge.ptx import ir, types

__all__ = ["reg", "inst", "kernel", "module", "ptx", "SAMPLES"]

_PREFIX = (("%rs", types.u16), ("%rd", types.u64), ("%rq", types.b128), ("%fd", types.f64),
           ("%f", types.f32), ("%p", types.pred), ("%r", types.u32))
_NO_DEFS = {"st", "bra", "ret", "exit", "bar", "red", "trap", "brx"}
_ADDR = re.compile(r"^\[\s*([%\w.$]+)\s*(?:\+\s*(-?\d+))?\s*\]$")


def reg(name: str) -> ir.Register:
    """A register whose type follows its name prefix."""
    for prefix, ty in _PREFIX:
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return ir.Register(name, ty)
    raise ValueError(f"no type for register name {name!r}")


def _split(text: str) -> list[str]:
    """Split operands at top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _operand(text: str, family: str):
    """One operand from its text."""
    if text.startswith("{"):
        return ir.Vector(tuple(_operand(t, family) for t in _split(text[1:-1])))
    if "|" in text:
        return ir.Vector(tuple(_operand(t, family) for t in text.split("|")), style="pipe")
    m = _ADDR.match(text)
    if m:
        base = m.group(1)
        return ir.Address(reg(base) if base.startswith("%") else ir.Symbol(base), int(m.group(2) or 0))
    if text.startswith("!"):
        return ir.Negated(reg(text[1:]))
    if text.startswith("%") and "." in text:
        return ir.SpecialReg(text)
    if text.startswith("%"):
        return reg(text)
    if re.match(r"^-?\d+$", text):
        return ir.Immediate(int(text))
    if re.match(r"^0[fFdD][0-9a-fA-F]+$", text):
        return ir.Immediate(0.0, text=text)
    return ir.LabelRef(text) if family in ("bra", "brx") else ir.Symbol(text)


def inst(text: str, loc: ir.SourceLoc | None = None) -> ir.Instruction:
    """``"@%p1 add.f32 %f3, %f1, %f2"`` → Instruction (destinations: 1 unless a store/branch)."""
    text = text.strip().rstrip(";").strip()
    guard = None
    if text.startswith("@"):
        g, text = text.split(None, 1)
        neg = g.startswith("@!")
        guard = ir.Guard(reg(g[2:] if neg else g[1:]), neg)
    parts = text.split(None, 1)
    opcode = parts[0]
    family = opcode.split(".", 1)[0]
    ops = tuple(_operand(t, family) for t in _split(parts[1])) if len(parts) > 1 else ()
    ndefs = 0 if family in _NO_DEFS or not ops else 1
    return ir.Instruction(opcode, ops, ndefs, guard, loc)


def kernel(lines: str, name: str = "k") -> ir.Kernel:
    """A kernel from lines of instructions and ``LABEL:`` lines (``//`` comments allowed)."""
    body = []
    regs: dict[str, ir.Register] = {}
    for raw in lines.strip().splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if line.endswith(":"):
            body.append(ir.Label(line[:-1]))
            continue
        ins = inst(line)
        for r in ins.defs + ins.uses:
            regs.setdefault(r.name, r)
        body.append(ins)
    decls = tuple(ir.RegDecl(r.reg_class.decl, r.name) for r in sorted(regs.values(), key=lambda r: r.name))
    return ir.Kernel(name, params=(ir.Param("p", types.u64),), body=tuple(body), reg_decls=decls)


def module(k: ir.Kernel, version: str = "8.0", target: str = "sm_80") -> ir.Module:
    """A module holding one kernel."""
    return ir.Module(version, target, kernels=(k,))


def ptx(k: ir.Kernel, version: str = "8.0", target: str = "sm_80") -> str:
    """Emitted PTX text of a one-kernel module."""
    from ptxforge import emit

    return emit(module(k, version, target))


#: Hand-checked sample kernels shared by the liveness, graph and report tests.
SAMPLES = {
    "straight": """
        ld.param.u64 %rd1, [p];
        ld.global.f32 %f1, [%rd1];
        ld.global.f32 %f2, [%rd1+4];
        add.f32 %f3, %f1, %f2;
        mul.f32 %f4, %f3, %f3;
        add.f32 %f5, %f4, %f3;
        st.global.f32 [%rd1], %f5;
        ret;
    """,
    "f64": """
        ld.param.u64 %rd1, [p];
        ld.global.f64 %fd1, [%rd1];
        ld.global.f64 %fd2, [%rd1+8];
        add.f64 %fd3, %fd1, %fd2;
        st.global.f64 [%rd1], %fd3;
        ret;
    """,
    "diamond": """
        ld.param.u64 %rd1, [p];
        ld.global.u32 %r1, [%rd1];
        setp.eq.u32 %p1, %r1, 0;
        @%p1 bra ELSE;
        add.u32 %r2, %r1, 1;
        add.u32 %r4, %r1, 2;
        mul.lo.u32 %r3, %r2, %r4;
        bra.uni JOIN;
    ELSE:
        mov.u32 %r3, 7;
    JOIN:
        st.global.u32 [%rd1], %r3;
        ret;
    """,
    "loop": """
        ld.param.u64 %rd1, [p];
        mov.f32 %f1, 0f00000000;
        mov.u32 %r1, 0;
    LOOP:
        ld.global.f32 %f2, [%rd1];
        add.f32 %f1, %f1, %f2;
        add.u32 %r1, %r1, 1;
        setp.lt.u32 %p1, %r1, 16;
        @%p1 bra LOOP;
        st.global.f32 [%rd1], %f1;
        ret;
    """,
    "guarded": """
        ld.param.u64 %rd1, [p];
        ld.global.u32 %r1, [%rd1];
        ld.global.u32 %r2, [%rd1+4];
        setp.gt.u32 %p1, %r2, 5;
        @%p1 mov.u32 %r1, 5;
        st.global.u32 [%rd1], %r1;
        ret;
    """,
    "guarded_only": """
        ld.param.u64 %rd1, [p];
        ld.global.u32 %r1, [%rd1];
        setp.gt.u32 %p1, %r1, 5;
        @%p1 ld.global.u32 %r2, [%rd1+4];
        @%p1 st.global.u32 [%rd1], %r2;
        ret;
    """,
    "vector": """
        ld.param.u64 %rd1, [p];
        ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
        add.f32 %f5, %f1, %f2;
        add.f32 %f6, %f3, %f4;
        add.f32 %f7, %f5, %f6;
        st.global.f32 [%rd1], %f7;
        ret;
    """,
    "setp2": """
        ld.param.u64 %rd1, [p];
        ld.global.f32 %f1, [%rd1];
        setp.lt.f32 %p1|%p2, %f1, 0f00000000;
        @%p1 st.global.f32 [%rd1], %f1;
        @%p2 st.global.f32 [%rd1+4], %f1;
        ret;
    """,
}
