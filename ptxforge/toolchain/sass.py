"""Ground-truth register liveness from the SASS ptxas produced, read with ``nvdisasm``.

ptxas's REGCOUNT says how many registers a kernel launches with; ``nvdisasm
--life-range-mode narrow`` says, for every SASS instruction, which physical registers are
live there.  :func:`sass_liveness` runs it on a cubin and returns per function every
instruction (offset, text, live count per register file — ``GPR``, ``PRED``, ``UGPR``,
``UPRED`` as nvdisasm prints them — and the registers marked), the peak and all offsets
where it occurs, the registers live there, and, when the cubin has line info
(``compile_ptx(..., line_info=True)``), the source line (``nvdisasm -gi``) and the PTX line
(``nvdisasm -gp``, its text read from the PTX ptxas embeds in the cubin) of each instruction.

Measured with ptxas 13 (nvJitLink 13.5) and nvdisasm 13.5 on sm_75 … sm_120: a kernel's
REGCOUNT is its highest GPR index used + 1 + 2, or, when its call graph (``.nv.callgraph``)
reaches functions that need more, their count (the ``__cuda_sm70_*`` warp-sync helpers ptxas
adds on sm_75 … sm_89 need 24).  See ``docs/sass.md``.

nvdisasm comes from ``pip install nvidia-cuda-nvdisasm`` (the ``sass`` extra); it is found
through ``$PTXFORGE_NVDISASM`` (the executable, or a folder to search alone), the NVIDIA
wheels (``nvidia/*/bin``), ``cuda.pathfinder``, ``PATH`` and ``$CUDA_HOME``/``$CUDA_PATH``.

Example::

    >>> from ptxforge import compile_ptx

    >>> from ptxforge.dsl import kernels
    >>> s = sass_liveness(compile_ptx(kernels.saxpy(), "sm_80", line_info=True))  # doctest: +SKIP
    >>> f = s.function("saxpy"); f.peak().count, f.span(), s.regcount("saxpy")   # doctest: +SKIP
    (5, 8, 10)
"""

from __future__ import annotations

import concurrent.futures
import operator
import os
import re
import struct
from pathlib import Path
from typing import Optional, Sequence, Union

import attrs

from ptxforge.errors import PtxforgeError

from .compile import Compiled
from .cubin import CubinInfo, read_cubin
from .nvdisasm import LIFE_RANGES, NVDISASM_ENV, Kept, Started, find_nvdisasm, nvdisasm_version
from .nvdisasm import run as _run
from .sass_lines import LineTableUnsupported, function_lines, read_line_tables
from .sass_listing import SourceLine, parse_life_ranges, parse_line_annotations

__all__ = ["NVDISASM_ENV", "find_nvdisasm", "nvdisasm_version", "register_name",
           "SassInstruction", "SassPeak", "SassFunction", "SassLiveness", "sass_liveness",
           "parse_sass", "SourceLine"]

_PREFIX = {"GPR": "R", "PRED": "P", "UGPR": "UR", "UPRED": "UP"}
_INDEX = operator.itemgetter(0)
_CALL = re.compile(r"^(?:@!?U?P\w+\s+)?CALL\b")


def register_name(group: str, index: int) -> str:
    """``R5``, ``P0``, ``UR4``, ``UP1`` (another file: ``GROUP[3]``)."""
    p = _PREFIX.get(group)
    return f"{p}{index}" if p else f"{group}[{index}]"


# --- results ---------------------------------------------------------------------------------

@attrs.frozen(slots=True, kw_only=True)
class SassInstruction:
    """One SASS instruction: its byte offset in the function, its text, the live-register
    count per register file (``counts``: ``((group, n), …)``), the registers marked
    (``marks``: ``((group, ((index, mark), …)), …)``, mark one of ``^ v x :``), and, with line
    info, its source line and its PTX line (number and text)."""

    offset: int
    text: str
    counts: tuple
    marks: tuple = attrs.field(repr=False)
    source: Optional[SourceLine] = None
    ptx_line: Optional[int] = None
    ptx: Optional[str] = None

    @property
    def is_call(self) -> bool:
        """A ``CALL`` (guarded or not): nvdisasm marks every register the callee may
        overwrite as assigned (``^``) on it."""
        return _CALL.match(self.text) is not None

    def count(self, group: str = "GPR", call_clobbers: bool = True) -> int:
        """Live registers of ``group`` here (0 when nvdisasm prints no such column);
        ``call_clobbers=False`` leaves out the registers a CALL assigns."""
        n = dict(self.counts).get(group, 0)
        if call_clobbers or not self.is_call:
            return n
        return n - sum(1 for _, m in dict(self.marks).get(group, ()) if m == "^")

    def registers(self, group: str = "GPR", call_clobbers: bool = True) -> tuple:
        """Indices of the ``group`` registers live (or assigned/used) here."""
        marks = dict(self.marks).get(group, ())
        if not call_clobbers and self.is_call:
            return tuple(i for i, m in marks if m != "^")
        return tuple(map(_INDEX, marks))

    def to_dict(self) -> dict:
        return {"offset": self.offset, "text": self.text, "counts": dict(self.counts),
                "source": None if self.source is None else str(self.source),
                "ptx_line": self.ptx_line, "ptx": self.ptx}


@attrs.frozen(slots=True, kw_only=True)
class SassPeak:
    """The largest live count of one register file in a function, every instruction where it
    is reached (offset order), and the registers live at the first of them."""

    group: str
    count: int
    instructions: tuple
    registers: tuple    # names, e.g. ("R0", "R1", …)

    @property
    def offsets(self) -> tuple:
        return tuple(i.offset for i in self.instructions)

    def to_dict(self, top: int = 10) -> dict:
        ins = self.instructions if top <= 0 else self.instructions[:top]
        return {"group": self.group, "count": self.count, "offsets": list(self.offsets),
                "instructions": [i.to_dict() for i in ins], "registers": list(self.registers)}


@attrs.frozen(slots=True, kw_only=True)
class SassFunction:
    """One function of the cubin as nvdisasm sees it.

    ``regcount`` is the cubin's EIATTR_REGCOUNT for it (None if absent), ``shi_registers``
    the ``SHI_REGISTERS`` nvdisasm prints from the section header (None on sm_90+, where
    it is 0), ``callees`` the functions ``.nv.callgraph`` says it calls."""

    name: str
    entry: bool
    groups: tuple
    instructions: tuple = attrs.field(repr=False)
    regcount: Optional[int] = None
    shi_registers: Optional[int] = None
    callees: tuple = ()
    labels: tuple = ()     # ((".L_x_3", offset), …): the branch targets nvdisasm names

    def peak(self, group: str = "GPR", call_clobbers: bool = True) -> SassPeak:
        """The peak of ``group`` (count 0, no instructions when it never has a live one).

        nvdisasm counts, at a CALL, the registers the callee may overwrite; with
        ``call_clobbers=False`` those are left out (what is live across the call)."""
        counts = [i.count(group, call_clobbers) for i in self.instructions]
        best = max(counts, default=0)
        at = tuple(i for i, n in zip(self.instructions, counts) if n == best) if best else ()
        regs = (tuple(register_name(group, r) for r in at[0].registers(group, call_clobbers))
                if at else ())
        return SassPeak(group=group, count=best, instructions=at, registers=regs)

    def used(self, group: str = "GPR") -> tuple:
        """Indices of every ``group`` register the function touches, ascending."""
        return tuple(sorted({r for i in self.instructions for r in i.registers(group)}))

    def span(self, group: str = "GPR") -> int:
        """Highest ``group`` register index touched + 1 (0: none)."""
        used = self.used(group)
        return used[-1] + 1 if used else 0

    def instruction_at(self, offset: int) -> SassInstruction:
        for i in self.instructions:
            if i.offset == offset:
                return i
        raise KeyError(f"{self.name} has no SASS instruction at offset {offset:#x}")

    def to_dict(self, top: int = 10) -> dict:
        return {"name": self.name, "entry": self.entry, "groups": list(self.groups),
                "instructions": len(self.instructions), "regcount": self.regcount,
                "shi_registers": self.shi_registers, "callees": list(self.callees),
                "span": self.span(), "used": len(self.used()),
                "peaks": {g: self.peak(g).to_dict(top) for g in self.groups}}


@attrs.frozen(slots=True, kw_only=True)
class SassLiveness:
    """Every function nvdisasm found in a cubin (section order), with the tool that read it."""

    arch: str
    tool: str
    version: str
    functions: tuple
    line_info: bool = False   # source lines were found (nvdisasm -gi)
    ptx_lines: bool = False   # PTX lines were found (nvdisasm -gp)
    _by_name: dict = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:   # the functions by name, for lookups per kernel
        by: dict = {}
        for f in self.functions:
            by.setdefault(f.name, f)
        object.__setattr__(self, "_by_name", by)

    def has(self, name: str) -> bool:
        """Whether the cubin has a function ``name``."""
        return name in self._by_name

    def function(self, name: str) -> SassFunction:
        f = self._by_name.get(name)
        if f is not None:
            return f
        raise PtxforgeError(f"sass: no function {name!r} in the cubin; it has: "
                            f"{', '.join(f.name for f in self.functions) or 'none'}")

    @property
    def entries(self) -> tuple:
        return tuple(f for f in self.functions if f.entry)

    def call_graph(self, name: str) -> tuple:
        """``name`` and every function it reaches through ``.nv.callgraph`` (sorted after it)."""
        by = self._by_name
        seen, todo = {name}, [name]
        while todo:
            f = by.get(todo.pop())
            for c in (f.callees if f else ()):
                if c not in seen:
                    seen.add(c)
                    todo.append(c)
        return (name,) + tuple(sorted(seen - {name}))

    def regcount(self, name: str) -> Optional[int]:
        """The cubin's EIATTR_REGCOUNT of function ``name``."""
        return self.function(name).regcount

    def to_dict(self, top: int = 10) -> dict:
        return {"arch": self.arch, "nvdisasm": self.version, "line_info": self.line_info,
                "ptx_lines": self.ptx_lines,
                "functions": [f.to_dict(top) for f in self.functions]}


def _line_tables(data: bytes, info: CubinInfo) -> Optional[tuple]:
    """The cubin's line tables (:func:`~ptxforge.toolchain.sass_lines.read_line_tables`), which
    spare the ``nvdisasm -gi -gp`` run; None for one that reader does not handle."""
    try:
        return read_line_tables(data, info)
    except LineTableUnsupported:
        return None


def _offsets(f) -> tuple:
    return tuple(r.offset for r in f.rows)


# --- the cubin's own tables ------------------------------------------------------------------

def _callgraph(data: bytes, info: CubinInfo) -> dict:
    """``{caller: (callee, …)}`` from ``.nv.callgraph`` (u32 caller/callee symbol pairs;
    the special pairs with symbol 0 or indices past the symbol table are skipped)."""
    by = {s.name: s for s in info.sections}
    if ".nv.callgraph" not in by or ".symtab" not in by:
        return {}
    symtab = by[".symtab"]
    strtab = info.sections[symtab.link]
    names = []
    for k in range(symtab.size // 24):
        off = struct.unpack_from("<I", data, symtab.offset + 24 * k)[0]
        end = data.index(b"\0", strtab.offset + off)
        names.append(data[strtab.offset + off:end].decode(errors="replace"))
    cg = by[".nv.callgraph"]
    out: dict = {}
    for k in range(cg.size // 8):
        a, b = struct.unpack_from("<II", data, cg.offset + 8 * k)
        if 0 < a < len(names) and 0 < b < len(names):
            out.setdefault(names[a], [])
            if names[b] not in out[names[a]]:
                out[names[a]].append(names[b])
    return {k: tuple(sorted(v)) for k, v in out.items()}


def _ptx_texts(data: bytes, info: CubinInfo) -> dict:
    """``{".nv_debug_ptx_txt.N": (line 1, line 2, …)}``: the PTX ptxas keeps with line info."""
    out = {}
    for s in info.sections:
        if s.name.startswith(".nv_debug_ptx_txt"):
            out[s.name] = tuple(data[s.offset:s.offset + s.size].decode(errors="replace")
                                .split("\0"))
    return out


def _cubin_bytes(cubin) -> bytes:
    if isinstance(cubin, Compiled):
        if cubin.cubin is None:
            raise PtxforgeError(f"sass: the {cubin.backend} backend produced no cubin; compile "
                                "with backend='nvjitlink' or 'ptxas'")
        return cubin.cubin
    if isinstance(cubin, (bytes, bytearray, memoryview)):
        return bytes(cubin)
    if isinstance(cubin, os.PathLike):
        try:
            return Path(cubin).read_bytes()
        except OSError as exc:
            raise PtxforgeError(f"sass: cannot read {os.fspath(cubin)!r}: "
                                f"{exc.strerror or exc}") from None
    raise PtxforgeError(f"sass: expected cubin bytes, a Compiled or a path, got "
                        f"{type(cubin).__name__}")


def _read(data: bytes) -> CubinInfo:
    try:
        return read_cubin(data)
    except PtxforgeError:
        raise
    except (struct.error, IndexError, ValueError) as exc:
        raise PtxforgeError(f"cubin: expected a CUDA ELF object, got {len(data)} bytes that "
                            f"do not read as one ({type(exc).__name__}: {exc})") from None


def parse_sass(life_ranges: str, lines: str = "", ptx_lines: Optional[str] = None, *,
               ptx_texts: Optional[dict] = None, regcounts: Optional[dict] = None,
               callees: Optional[dict] = None) -> tuple:
    """:class:`SassFunction` s from nvdisasm's text: ``life_ranges`` from ``-c
    --life-range-mode narrow``, ``lines`` from ``-c -gi -gp`` (or ``-gi``/``-g``: source
    lines only), ``ptx_lines`` from ``-c -gp`` (default: the PTX annotations of ``lines``);
    ``ptx_texts`` maps ``.nv_debug_ptx_txt.N`` to its lines, ``regcounts`` and ``callees``
    map function names to the cubin's REGCOUNT and call-graph edges.  What
    :func:`sass_liveness` runs on a cubin; use it on saved output."""
    parsed = parse_life_ranges(life_ranges, "nvdisasm --life-range-mode narrow")
    src = parse_line_annotations(lines, "nvdisasm -gi", ptx=False) if lines else {}
    ptx_lines = lines if ptx_lines is None else ptx_lines
    ptx = parse_line_annotations(ptx_lines, "nvdisasm -gp", ptx=True) if ptx_lines else {}
    return _functions(parsed, lambda f: src.get(f.name, {}), lambda f: ptx.get(f.name, {}),
                      ptx_texts or {}, regcounts or {}, callees or {})


def _functions(parsed: Sequence, source_of, ptx_of, texts: dict, regs: dict, calls: dict
               ) -> tuple:
    """:class:`SassFunction` s from the parsed life ranges, with each function's
    ``{offset: SourceLine}`` of source (``source_of(f)``) and PTX (``ptx_of(f)``) lines."""
    functions = []
    for f in parsed:
        fs, fp = source_of(f), ptx_of(f)
        ins = []
        for r in f.rows:
            pl = fp.get(r.offset)
            line_text = None
            if pl is not None:
                got = texts.get(pl.file, ())
                line_text = (" ".join(got[pl.line - 1].split()) if 0 < pl.line <= len(got)
                             else None)
            ins.append(SassInstruction(offset=r.offset, text=r.text,
                                       counts=tuple(zip(f.groups, r.counts)),
                                       marks=tuple(zip(f.groups, r.marks)), source=fs.get(r.offset),
                                       ptx_line=None if pl is None else pl.line, ptx=line_text))
        functions.append(SassFunction(name=f.name, entry=f.entry, groups=f.groups,
                                      instructions=tuple(ins), regcount=regs.get(f.name),
                                      shi_registers=f.shi_registers,
                                      callees=tuple(calls.get(f.name, ())), labels=f.labels))
    return tuple(functions)


def sass_liveness(cubin, *, nvdisasm: Optional[str] = None, line_info: bool = True,
                  started: Union[Started, Kept, None] = None) -> SassLiveness:
    """Per-instruction physical register liveness of every function in ``cubin`` (bytes,
    a :class:`~ptxforge.toolchain.compile.Compiled` or a path), read with nvdisasm.

    ``nvdisasm`` pins the executable (default :func:`find_nvdisasm`); ``line_info=False``
    skips the source/PTX line runs; ``started``: the life-range listing already running on
    this cubin (:func:`ptxforge.toolchain.nvdisasm.start` with ``LIFE_RANGES``, e.g. started
    the moment ptxas wrote it), whose output is read instead of running nvdisasm again.
    Raises :class:`~ptxforge.errors.PtxforgeError` for bytes that are not a cubin or output
    it cannot read, and :class:`~ptxforge.errors.BackendUnavailableError` when nvdisasm is
    missing.
    """
    data = _cubin_bytes(cubin)
    info = _read(data)
    if started is not None and started.flags != LIFE_RANGES:
        raise ValueError(f"sass_liveness: started must run {LIFE_RANGES}, got {started.flags}")
    tool = started.tool if started is not None else nvdisasm or find_nvdisasm()
    names = {s.name for s in info.sections}
    has_lines = line_info and bool(names & {".debug_line", ".nv_debug_line_sass"})
    tables = _line_tables(data, info) if has_lines else None
    if has_lines and tables is None:     # one more run prints both kinds of line
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            runs = [pool.submit(_run, tool, data, ("-c", "-gi", "-gp"))]
            if started is None:
                runs.append(pool.submit(_run, tool, data, LIFE_RANGES))
            text = started.output() if started is not None else runs[1].result()
            lines = runs[0].result()
    else:
        text = started.output() if started is not None else _run(tool, data, LIFE_RANGES)
        lines = ""
    texts = _ptx_texts(data, info)
    regcounts = {k.name: k.registers for k in info.kernels}
    if tables is not None:
        parsed = parse_life_ranges(text, "nvdisasm --life-range-mode narrow")
        src, ptx = tables
        functions = _functions(parsed, lambda f: function_lines(src.get(f.name), _offsets(f)),
                               lambda f: function_lines(ptx.get(f.name), _offsets(f)),
                               texts, regcounts, _callgraph(data, info))
    else:
        functions = parse_sass(text, lines, ptx_texts=texts,
                               regcounts=regcounts, callees=_callgraph(data, info))
    target = re.search(r"^\s*\.target\s+(\w+)", text, re.M)
    return SassLiveness(arch=target.group(1) if target else f"sm_{info.sm}", tool=tool,
                        version=nvdisasm_version(tool), functions=functions,
                        line_info=any(i.source is not None
                                      for f in functions for i in f.instructions),
                        ptx_lines=any(i.ptx_line is not None
                                      for f in functions for i in f.instructions))
