"""The memory report of a PTX module: each kernel's accesses per instruction and per line.

What ``ptxforge memory`` prints (text or JSON) and the HTML report's Memory section read:
:func:`memory_report` parses the PTX and runs
:func:`~ptxforge.analysis.memory_access.analyze_memory` on each ``.entry``.

Example::

    >>> from ptxforge import emit
    >>> from ptxforge.dsl import kernels
    >>> rep = memory_report(emit(kernels.saxpy()), "saxpy.ptx", block=128)
    >>> rep.kernels[0].accesses[0].sectors_per_request
    4.0
"""

from __future__ import annotations

import attrs

from ptxforge._text import short_loc, table, wrap
from ptxforge.analysis.memory_access import AccessFigure, MemoryReport, analyze_memory
from ptxforge.errors import PtxforgeError
from ptxforge.ptx.parse import parse

__all__ = ["ModuleMemory", "figure_text", "memory_report"]


def figure_text(a: AccessFigure) -> str:
    """The access's figure in words: ``32 sectors/req``, ``32-way (32 wavefronts)``,
    ``data-dependent``, ``param-dependent`` (a thread stride that ``--param`` can give)."""
    if a.space == "shared" and a.ways is not None:
        n = a.wavefronts_per_request
        return f"{a.ways}-way ({_num(n)} wavefront{'' if n == 1 else 's'})"
    if a.sectors_per_request is not None:
        return f"{_num(a.sectors_per_request)} sectors/req"
    return "data-dependent" if (a.reason or "").startswith("data-dependent") \
        else "param-dependent"


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def _where(a: AccessFigure) -> str:
    return short_loc(f"{a.file}:{a.line}", 28) if a.line is not None else "-"


@attrs.frozen(slots=True, kw_only=True)
class ModuleMemory:
    """The memory reports of a module's kernels, in source order."""

    file: str
    kernels: tuple

    def to_dict(self) -> dict:
        """The JSON object: the file and one object per kernel."""
        return {"file": self.file, "kernels": [k.to_dict() for k in self.kernels]}

    def to_text(self) -> str:
        """The text report: per kernel, the accesses worst first, then the source lines."""
        out = []
        for k in self.kernels:
            out.extend(_kernel_text(k))
        return "\n".join(out) + "\n"


def _kernel_text(k: MemoryReport) -> list:
    bx, by, bz = k.block
    head = (f"{k.kernel}: {len(k.accesses)} global/shared/local accesses, block "
            f"{bx}x{by}x{bz} (figures per warp request)")
    out = [head]
    if not k.accesses:
        return out + ["  no global, shared or local memory access", ""]
    rows = []
    for a in k.worst_first():
        rows.append((a.index, _where(a), a.space, a.direction, a.width, figure_text(a),
                     a.address or (a.reason or "")))
    out.append("")
    out += table(("#", "line", "space", "dir", "bytes", "figure", "address / reason"), rows,
                 right={0, 4}, width=100, wrap_last=True)
    out += ["", "  by source line, worst first:"]
    lrows = [(_where(r.worst), len(r.accesses), r.worst.space, r.worst.direction,
              r.worst.width, figure_text(r.worst)) for r in k.by_line()]
    out += table(("line", "accesses", "space", "dir", "bytes", "worst"), lrows,
                 right={1, 4})
    if k.fixes:
        out += ["", "  checked fixes (re-analysed):"]
        for f in k.fixes:
            unit = "ways" if f.kind in ("padding", "swizzle") else "sectors/req"
            out += wrap(f"#{f.index} {f.kind}: {_num(f.before)} -> {_num(f.after)} {unit}: "
                        f"{f.text}", indent="  ", subsequent="      ")
    notes = sorted({a.reason for a in k.accesses if a.reason and a.space == "local"})
    for n in notes:
        out += wrap(f"note: {n}", indent="  ", subsequent="    ")
    return out + [""]


def memory_report(text: str | bytes, file: str = "<ptx>", *,
                  kernel: str | None = None, block=None, params: dict | None = None,
                  strict: bool = True) -> ModuleMemory:
    """Parse PTX ``text`` and analyse the memory accesses of its entries (or of ``kernel``)
    for ``block`` (an int or (x, y, z); None: each kernel's launch bounds, else 256), with
    ``params`` ({name: int}) given to each kernel that has a parameter of that name.

    Example: ``memory_report(ptx, "k.ptx", kernel="transpose", block=(32, 8))``.
    """
    if isinstance(text, (bytes, bytearray)):
        if bytes(text[:4]) == b"\x7fELF":
            raise PtxforgeError(f"{file} is a cubin (ELF), not PTX: the memory analysis reads "
                                "PTX (give the .ptx or the .cu)")
        text = bytes(text).decode("utf-8", errors="replace")
    module = parse(text, file, strict=strict)
    kernels = [module.kernel(kernel)] if kernel is not None else list(module.entries)
    if not kernels:
        raise PtxforgeError(f"{file}: no .entry kernel to analyse")
    params = dict(params or {})
    known = {p.name for k in kernels for p in k.params}
    unknown = sorted(set(params) - known)
    if unknown:
        raise PtxforgeError(f"--param {', '.join(unknown)}: no kernel analysed has such a "
                            f"parameter; they have: {', '.join(sorted(known)) or 'none'}")
    reports = []
    for k in kernels:
        own = {p.name for p in k.params}
        reports.append(analyze_memory(k, block=block,
                                      params={n: v for n, v in params.items() if n in own}))
    return ModuleMemory(file=file, kernels=tuple(reports))

