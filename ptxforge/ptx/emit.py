"""IR → PTX text.  Pure and deterministic: the same module gives the same bytes in every process.

Example::

    >>> from ptxforge import KernelBuilder, emit
    >>> kb = KernelBuilder("noop")
    >>> kb.ret()
    >>> text = emit(kb.build())
    >>> ".entry noop" in text
    True
"""

from __future__ import annotations

import math
import struct
from typing import Optional

from ptxforge.errors import BuildError

from . import ir

__all__ = ["emit", "emit_kernel", "format_operand", "format_immediate", "format_instruction"]

INDENT = "\t"


def format_immediate(imm: ir.Immediate) -> str:
    """Exact PTX spelling of an immediate: decimal integers, hex floats (``0f``/``0d``)."""
    if imm.text is not None:
        return imm.text
    value, ty = imm.value, imm.type
    if ty is not None and ty.is_float:
        if ty.bits == 64:
            return "0d%016X" % struct.unpack("<Q", struct.pack("<d", float(value)))[0]
        if ty.bits == 32 and not ty.is_packed:
            return "0f%08X" % struct.unpack("<I", struct.pack("<f", float(value)))[0]
        raise BuildError(f"PTX has no literal syntax for {ty}; move the bits through .b{ty.bits}")
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value) or value != int(value):
            raise BuildError(f"cannot emit non-integral float {value!r} as an integer immediate")
        value = int(value)
    return str(int(value))


def format_operand(op: ir.Operand) -> str:
    """PTX text of one operand."""
    if isinstance(op, ir.Register):
        return op.name
    if isinstance(op, ir.Immediate):
        return format_immediate(op)
    if isinstance(op, (ir.SpecialReg, ir.Symbol, ir.LabelRef)):
        return op.name
    if isinstance(op, ir.Raw):
        return op.text
    if isinstance(op, ir.Negated):
        return "!" + format_operand(op.operand)
    if isinstance(op, ir.Address):
        if op.base is None:
            return f"[{op.offset}]"
        base = format_operand(op.base)
        if op.offset > 0:
            return f"[{base}+{op.offset}]"
        if op.offset < 0:
            return f"[{base}+{op.offset}]"  # PTX spells negative offsets as +-N
        return f"[{base}]"
    if isinstance(op, ir.Vector):
        inner = [format_operand(e) for e in op.elements]
        if op.style == "pipe":
            return "|".join(inner)
        if op.style == "paren":
            return "(" + ", ".join(inner) + ")"
        if op.style == "bracket":
            return "[" + ", ".join(inner) + "]"
        return "{" + ", ".join(inner) + "}"
    raise BuildError(f"cannot emit operand of type {type(op).__name__}: {op!r}")


def format_instruction(inst: ir.Instruction) -> str:
    """One instruction line without indentation or newline."""
    guard = ""
    if inst.guard is not None:
        guard = ("@!" if inst.guard.negated else "@") + inst.guard.register.name + " "
    if not inst.operands:
        return f"{guard}{inst.opcode};"
    operands = ", ".join(format_operand(o) for o in inst.operands)
    return f"{guard}{inst.opcode} {operands};"


def _format_dims(dims: tuple) -> str:
    return "".join("[]" if d is None else f"[{d}]" for d in dims)


def _format_var(decl: ir.VarDecl) -> str:
    parts = [decl.linkage] if decl.linkage else []
    parts.append("." + decl.space)
    if decl.align is not None:
        parts.append(f".align {decl.align}")
    if decl.vector is not None:
        parts.append(f".v{decl.vector}")
    parts.append(decl.type.ptx)
    text = " ".join(parts) + " " + decl.name + _format_dims(decl.dims)
    if decl.init is not None:
        text += " = " + decl.init
    return text + ";"


def _format_param(p: ir.Param) -> str:
    parts = [".param", p.type.ptx]
    if p.pointer and p.state_space:
        ptr = ".ptr." + p.state_space
        if p.ptr_align is not None:
            ptr += f".align {p.ptr_align}"
        parts.append(ptr)
    if p.align is not None:
        parts.insert(1, f".align {p.align}")
    return " ".join(parts) + " " + p.name + _format_dims(p.dims)


def _format_reg_decl(d: ir.RegDecl) -> str:
    name = d.name if d.count is None else f"{d.name}<{d.count}>"
    return f".reg .{d.type} {name};"


def _file_table(module: ir.Module) -> dict[str, int]:
    if module.files:
        return {path: index for index, path in module.files}
    table: dict[str, int] = {}
    for k in module.kernels:
        for inst in k.instructions:
            if inst.loc is not None and inst.loc.file not in table:
                table[inst.loc.file] = len(table) + 1
    return table


def emit_kernel(kernel: ir.Kernel, *, files: Optional[dict[str, int]] = None) -> str:
    """PTX text of one function (``files`` maps source paths to ``.file`` indices for .loc)."""
    out: list[str] = []
    head = []
    if kernel.linkage:
        head.append(kernel.linkage)
    head.append(".entry" if kernel.is_entry else ".func")
    if kernel.returns:
        head.append("(" + ", ".join(_format_param(p) for p in kernel.returns) + ")")
    head.append(kernel.name)
    line = " ".join(head)
    if kernel.params:
        out.append(line + "(")
        params = [INDENT + _format_param(p) for p in kernel.params]
        out.append(",\n".join(params))
        out.append(")")
    else:
        out.append(line + "()")
    for attr in kernel.attributes:
        out[-1] += " " + attr
    for name, values in kernel.directives:
        out.append(f"{name} " + ", ".join(str(v) for v in values))
    if kernel.body is None:
        out[-1] += ";"
        return "\n".join(out) + "\n"
    out.append("{")
    for d in kernel.reg_decls:
        out.append(INDENT + _format_reg_decl(d))
    if kernel.reg_decls:
        out.append("")
    last_loc = None
    depth = 1
    for stmt in kernel.body:
        if isinstance(stmt, ir.Instruction):
            if files is not None and stmt.loc is not None:
                key = (stmt.loc.file, stmt.loc.line, stmt.loc.column)
                if key != last_loc and stmt.loc.file in files:
                    out.append(f"{INDENT * depth}.loc {files[stmt.loc.file]} {stmt.loc.line} {stmt.loc.column}")
                    last_loc = key
            out.append(INDENT * depth + format_instruction(stmt))
        elif isinstance(stmt, ir.Label):
            out.append(f"{stmt.name}:")
        elif isinstance(stmt, ir.VarDecl):
            out.append(INDENT * depth + _format_var(stmt))
        elif isinstance(stmt, ir.Scope):
            if stmt.opening:
                out.append(INDENT * depth + "{")
                depth += 1
            else:
                depth = max(depth - 1, 1)
                out.append(INDENT * depth + "}")
        elif isinstance(stmt, ir.Directive):
            out.append(INDENT * depth + stmt.text)
        else:
            raise BuildError(f"cannot emit statement of type {type(stmt).__name__}")
    out.append("}")
    return "\n".join(out) + "\n"


def emit(module: ir.Module, *, line_info: bool = False) -> str:
    """PTX text of a whole module.

    With ``line_info=True``, ``.file``/``.loc`` directives point at the source lines recorded
    on each instruction (the Python lines that built them, or the parsed ``.loc`` lines), so
    that ``ptxas -lineinfo`` maps machine code back to them.
    """
    if not isinstance(module, ir.Module):
        hint = "; build() a KernelBuilder first" if hasattr(module, "build") else ""
        raise BuildError(f"emit: expected an ir.Module, got {type(module).__name__}{hint}")
    out = [
        "//",
        "// Generated by ptxforge",
        "//",
        "",
        f".version {module.version}",
        f".target {module.target}",
        f".address_size {module.address_size}",
        "",
    ]
    files = _file_table(module) if line_info else None
    after_kernel = True  # a blank line separates a run of declarations from a function
    for item in module.items():
        if isinstance(item, ir.Kernel):
            if not after_kernel:
                out.append("")
            out.append(emit_kernel(item, files=files))
            after_kernel = True
            continue
        if isinstance(item, ir.VarDecl):
            out.append(_format_var(item))
        elif isinstance(item, ir.Directive):
            out.append(item.text)
        else:
            raise BuildError(f"cannot emit module-level item of type {type(item).__name__}")
        after_kernel = False
    if not after_kernel:
        out.append("")
    if files:
        for path, index in sorted(files.items(), key=lambda kv: kv[1]):
            escaped = path.replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'.file {index} "{escaped}"')
        out.append("")
    return "\n".join(out)
