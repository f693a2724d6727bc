"""The values live at a pressure peak grouped three ways, for ``ptxforge analyze --by``.

* ``line``: by the source line that defined each value (:attr:`Peak.by_source`, kept as is);
* ``function``: by the function whose code defined it (the innermost inlined function of the
  defining ``.loc``; the kernel's own code is one group);
* ``callsite``: by the line of the kernel's own source the (possibly nested) inlined code was
  called from (:func:`ptxforge.analysis.attribution.attribute_registers` with ``by="callsite"``): which
  of several inlined calls of one helper owns the live values.

Names print demangled (:func:`ptxforge.ptx.demangle.display_name`); JSON keeps the mangled
name beside it.
"""

from __future__ import annotations

from typing import Optional

import attrs

from ptxforge.analysis.attribution import attribute_registers
from ptxforge.ptx import ir
from ptxforge.ptx.demangle import display_name, full_name

__all__ = ["BY", "PeakGroup", "peak_groups"]

#: The groupings ``--by`` accepts.
BY = ("line", "function", "callsite")


@attrs.frozen(slots=True, kw_only=True)
class PeakGroup:
    """Values live at the peak that share a function or a call site.

    ``key`` is the function's (mangled) name or the call site ``file:line``; ``label`` its
    text form (demangled; for a call site with the inlined functions called there);
    ``function``: the function (None: the kernel's own code); ``via``: for a call site, the
    functions inlined there (demangled).
    """

    by: str
    key: Optional[str]
    label: str
    count: int
    units: int
    names: tuple
    file: Optional[str] = None
    line: Optional[int] = None
    function: Optional[str] = None
    via: tuple = ()
    contexts: int = 1

    def to_dict(self) -> dict:
        if self.by == "function":
            return {"function": self.function, "demangled": full_name(self.function),
                    "count": self.count, "units": self.units, "names": list(self.names)}
        return {"loc": self.key, "file": self.file, "line": self.line, "via": list(self.via),
                "contexts": self.contexts, "count": self.count, "units": self.units,
                "names": list(self.names)}


def _chain(loc: ir.SourceLoc) -> list:
    out = [loc]
    while out[-1].inlined_at is not None:
        out.append(out[-1].inlined_at)
    return out


def _by_function(values, kernel_name: str) -> tuple:
    groups: dict = {}
    for v in values:
        groups.setdefault(v.function, []).append(v)
    out = []
    for fn, vs in groups.items():
        label = display_name(fn) if fn else f"{display_name(kernel_name)} (own code)"
        out.append(PeakGroup(by="function", key=fn, label=label, count=len(vs),
                             units=sum(v.units for v in vs),
                             names=tuple(sorted(v.name for v in vs)), function=fn))
    out.sort(key=lambda g: (-g.units, -g.count, g.function or ""))
    return tuple(out)


def _registers(kernel: ir.Kernel, values) -> dict:
    """``{register: (def index, instruction)}`` for the peak values that have a definition."""
    insts = kernel.instructions
    out = {}
    for v in values:
        if v.def_index is None:
            continue
        inst = insts[v.def_index]
        for r in inst.defs:
            if r.name == v.name:
                out[r] = (v.def_index, inst)
                break
    return out


def _by_callsite(kernel: ir.Kernel, values) -> tuple:
    defs = _registers(kernel, values)
    att = attribute_registers(kernel, list(defs), by="callsite", definitions=defs)
    chains = {src.register.name: _chain(src.loc) for src in att.values if src.loc is not None}
    out = []
    for s in att.lines:
        via = []
        for name in s.registers:
            chain = chains.get(name, ())
            fn = chain[-2].function if len(chain) >= 2 else None
            if fn and display_name(fn) not in via:
                via.append(display_name(fn))
        known = s.loc.line > 0
        key = f"{s.loc.file}:{s.loc.line}" if known else "(compiler-generated)"
        label = key + (f" ({', '.join(via)} inlined)" if via else "")
        out.append(PeakGroup(by="callsite", key=key, label=label, count=s.values, units=s.units,
                             names=tuple(sorted(s.registers)), file=s.loc.file if known else None,
                             line=s.loc.line if known else None, function=None, via=tuple(via),
                             contexts=getattr(s, "contexts", 1)))
    missing = [src.register for src in att.unattributed]
    undefined = [v for v in values if v.def_index is None]
    if missing or undefined:
        names = sorted({r.name for r in missing} | {v.name for v in undefined})
        units = (sum(r.units for r in missing if not r.type.is_pred)
                 + sum(v.units for v in undefined))
        out.append(PeakGroup(by="callsite", key=None, label="? (no source line)", count=len(names),
                             units=units, names=tuple(names)))
    return tuple(out)


def peak_groups(kernel: Optional[ir.Kernel], peak, by: str) -> tuple:
    """The peak's values grouped ``by`` ``"function"`` or ``"callsite"`` (largest first);
    ``"line"`` is the peak's own ``by_source``."""
    if by == "line":
        return tuple(peak.by_source)
    if by not in BY:
        raise ValueError(f"by must be one of {', '.join(BY)}, got {by!r}")
    if kernel is None or not peak.values:
        return ()
    if by == "function":
        return _by_function(peak.values, kernel.name)
    return _by_callsite(kernel, peak.values)
