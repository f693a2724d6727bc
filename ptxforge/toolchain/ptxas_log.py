"""Parse ptxas's ``-v`` info log (CUDA 11.8 … 13.x) and nvJitLink's own summary lines.

The log is line oriented.  Per compiled function ptxas prints::

    ptxas info    : Compiling entry function 'k' for 'sm_80'
    ptxas info    : Function properties for k
    ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
    ptxas info    : Used 32 registers, used 1 barriers, 8 bytes cumulative stack size, 360 bytes cmem[0]
    ptxas info    : Compile time = 1.234 ms

and the field list on the ``Used`` line changed over the releases: CUDA 11.8 prints
``Used N registers, S bytes smem, C bytes cmem[0]``; CUDA 12 adds ``used B barriers`` and
``cumulative stack size``; sm_90 and newer drop ``cmem``.  The stack-frame line is prefixed
``ptxas         .`` since CUDA 12 and is a bare indented line in 11.8.  nvJitLink appends its
own ``info    : used N registers, used B barriers, S stack, … bytes lmem`` summary per
function.  The parser reads every comma separated field by its unit, so a field that a
version adds or drops never shifts the others.

Example::

    >>> log = parse_ptxas_log("ptxas info    : Compiling entry function 'k' for 'sm_80'\\n"
    ...                       "ptxas info    : Used 10 registers, 376 bytes cmem[0]\\n")
    >>> log.functions[0].name, log.functions[0].registers
    ('k', 10)
"""

from __future__ import annotations

import re
from typing import Optional

import attrs

__all__ = ["FunctionInfo", "LinkerSummary", "Diagnostic", "PtxasLog", "extern_note",
           "parse_ptxas_log"]

_COMPILING = re.compile(r"Compiling (entry function|function) '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for '?([^':\s]+)'?:?\s*$")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"ptxas info\s*:\s*Used (\d+) registers(.*)$")
_NVJ_USED = re.compile(r"^info\s*:\s*used (\d+) registers(.*)$")
_CTIME = re.compile(r"Compile time = ([\d.]+) ms")
_GMEM = re.compile(r"^(?:ptxas )?info\s*:\s*(\d+) bytes gmem")
_OVERRIDE = re.compile(r"Overriding maximum register limit (\d+) for '([^']+)' with\s+(\d+)")
_DIAG = re.compile(r"^ptxas\s+(.*?), line (\d+); (error|warning|fatal|info)\s*:\s*(.*)$")
_OTHER = re.compile(r"^(?:ptxas\s+)?(error|warning|fatal)\s*:\s*(.*)$")
_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")


@attrs.frozen(slots=True, kw_only=True)
class FunctionInfo:
    """What ptxas reported for one function (``None``: the log did not say)."""

    name: str
    kind: str = "entry"                     # "entry" or "function"
    target: Optional[str] = None
    registers: Optional[int] = None
    barriers: Optional[int] = None
    stack_frame: Optional[int] = None
    spill_stores: Optional[int] = None
    spill_loads: Optional[int] = None
    cumulative_stack: Optional[int] = None
    shared: Optional[int] = None            # static shared memory, bytes
    local: Optional[int] = None             # 'bytes lmem' where printed (old toolkits)
    cmem: tuple = ()                        # ((bank, bytes), ...)
    compile_time_ms: Optional[float] = None
    register_cap: Optional[int] = None      # from the 'Overriding maximum register limit' line

    @property
    def constant_bank0(self) -> Optional[int]:
        """Bytes of constant bank 0 (kernel parameters and driver constants), if printed."""
        for bank, size in self.cmem:
            if bank == 0:
                return size
        return None


@attrs.frozen(slots=True, kw_only=True)
class LinkerSummary:
    """nvJitLink's own per-function summary line ('info    : used N registers, …')."""

    name: str
    registers: int
    barriers: Optional[int] = None
    stack: Optional[int] = None
    shared: Optional[int] = None
    local: Optional[int] = None
    cmem: tuple = ()


@attrs.frozen(slots=True, kw_only=True)
class Diagnostic:
    """An error or warning line; ``line`` is the PTX line number when ptxas gave one."""

    severity: str
    message: str
    line: Optional[int] = None
    file: Optional[str] = None


@attrs.frozen(slots=True, kw_only=True)
class PtxasLog:
    """A parsed log: functions in log order, linker summaries, gmem, diagnostics."""

    functions: tuple = ()
    linker: tuple = ()
    gmem: Optional[int] = None
    diagnostics: tuple = ()
    text: str = attrs.field(default="", repr=False)

    def function(self, name: str) -> FunctionInfo:
        """The record of function ``name`` (KeyError naming the ones present)."""
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(f"no function {name!r} in the ptxas log; present: "
                       f"{[f.name for f in self.functions]}")

    def summary(self, name: str) -> Optional[LinkerSummary]:
        """nvJitLink's summary line for ``name``, or None."""
        for s in self.linker:
            if s.name == name:
                return s
        return None

    @property
    def errors(self) -> tuple:
        return tuple(d for d in self.diagnostics if d.severity in ("error", "fatal"))

    @property
    def warnings(self) -> tuple:
        return tuple(d for d in self.diagnostics if d.severity == "warning")


def _fields(rest: str) -> dict:
    """Read the comma-separated fields after 'Used N registers' by their unit."""
    out: dict = {"cmem": []}
    for item in rest.split(","):
        item = item.strip()
        if not item:
            continue
        m = _CMEM.fullmatch(item)
        if m:
            out["cmem"].append((int(m.group(2)), int(m.group(1))))
            continue
        m = re.fullmatch(r"used (\d+) barriers?", item)
        if m:
            out["barriers"] = int(m.group(1))
            continue
        m = re.fullmatch(r"(\d+) bytes cumulative stack size", item)
        if m:
            out["cumulative_stack"] = int(m.group(1))
            continue
        m = re.fullmatch(r"(\d+) (?:bytes )?(smem|lmem|stack)", item)
        if m:
            key = {"smem": "shared", "lmem": "local", "stack": "stack"}[m.group(2)]
            out[key] = int(m.group(1))
    out["cmem"] = tuple(sorted(out["cmem"]))
    return out


def parse_ptxas_log(text: str) -> PtxasLog:
    """Parse a ptxas / nvJitLink info (or error) log into a :class:`PtxasLog`."""
    text = text.replace("\x00", "")
    order: list[str] = []
    recs: dict[str, dict] = {}
    linker: list[LinkerSummary] = []
    diags: list[Diagnostic] = []
    gmem = None
    current: Optional[str] = None       # function the next Used/frame line belongs to
    nvj_current: Optional[str] = None   # function of the next nvJitLink summary line

    def rec(name: str) -> dict:
        if name not in recs:
            recs[name] = {"name": name}
            order.append(name)
        return recs[name]

    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        m = _DIAG.match(line)
        if m:
            diags.append(Diagnostic(severity=m.group(3), message=m.group(4).strip(),
                                    line=int(m.group(2)), file=m.group(1)))
            continue
        m = _COMPILING.search(line)
        if m:
            current = m.group(2)
            r = rec(current)
            r["kind"] = "entry" if m.group(1).startswith("entry") else "function"
            r["target"] = m.group(3)
            continue
        is_nvj = line.startswith("info")
        m = _PROPS.search(line)
        if m:
            if is_nvj:
                nvj_current = m.group(1)
            else:
                current = m.group(1)
                # a device function has no 'Compiling entry function' line before it
                rec(current).setdefault("kind", "function")
            continue
        m = _FRAME.search(line)
        if m and current is not None and not is_nvj:
            r = rec(current)
            r["stack_frame"], r["spill_stores"], r["spill_loads"] = map(int, m.groups())
            continue
        m = _USED.search(line)
        if m and current is not None:
            r = rec(current)
            r["registers"] = int(m.group(1))
            f = _fields(m.group(2))
            for key in ("barriers", "cumulative_stack", "shared", "local"):
                if key in f:
                    r[key] = f[key]
            r["cmem"] = f["cmem"]
            continue
        m = _NVJ_USED.match(line)
        if m and nvj_current is not None:
            f = _fields(m.group(2))
            linker.append(LinkerSummary(name=nvj_current, registers=int(m.group(1)),
                                        barriers=f.get("barriers"), stack=f.get("stack"),
                                        shared=f.get("shared"), local=f.get("local"),
                                        cmem=f["cmem"]))
            nvj_current = None
            continue
        m = _CTIME.search(line)
        if m and current is not None:
            rec(current)["compile_time_ms"] = float(m.group(1))
            continue
        m = _OVERRIDE.search(line)
        if m:
            rec(m.group(2))["register_cap"] = int(m.group(3))
            continue
        m = _GMEM.match(line)
        if m:
            if gmem is None:
                gmem = int(m.group(1))
            continue
        m = _OTHER.match(line.strip())
        if m:
            diags.append(Diagnostic(severity=m.group(1), message=m.group(2).strip()))
    functions = tuple(FunctionInfo(**recs[n]) for n in order)
    return PtxasLog(functions=functions, linker=tuple(linker), gmem=gmem, diagnostics=tuple(diags),
                    text=text)


_UNRESOLVED = re.compile(r"Unresolved extern (function|variable) '([^']+)'")


def extern_note(log: str) -> Optional[str]:
    """Why a relocatable compile stands in for a whole-program one that failed only because the
    PTX uses a function or variable of another translation unit (``.extern``: PTX of an
    ``-rdc=true`` build, or dynamic parallelism's device runtime), which ``ptxas -c`` compiles;
    None when ptxas's ``log`` says anything else.

    Example::

        >>> extern_note("ptxas fatal   : Unresolved extern function '_Z3fooi'")[:48]
        'the PTX uses the extern function foo(int) (_Z3fo'
    """
    m = _UNRESOLVED.search(log)
    if m is None:
        return None
    from ptxforge.ptx.demangle import full_name
    name = full_name(m.group(2))
    if name != m.group(2):
        name = f"{name} ({m.group(2)})"
    return (f"the PTX uses the extern {m.group(1)} {name} (defined in another translation unit: "
            "PTX of an -rdc=true build), which whole-program ptxas cannot resolve; figures of "
            "the relocatable build (ptxas -c), as nvcc -rdc=true compiles it")
