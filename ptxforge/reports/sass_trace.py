"""Physical registers traced to the PTX values they hold, per SASS instruction.

For a GPR live at a SASS instruction, :class:`~ptxforge.toolchain.sass_flow.ReachingDefs`
finds the SASS instructions that wrote it; each of those has a PTX line (``nvdisasm -gp``),
the PTX line is one instruction of the kernel (:func:`ptx_line_map`), and that instruction's
destination is the PTX value.  From the value, its ``.loc`` gives the source line with the
call sites it was inlined at, or, for a KernelBuilder kernel, the Python line.

What a register holds (:class:`RegisterValue`.kind):

* ``"ptx"``: one PTX value (all writes reaching here come from its definitions);
* ``"merged"``: writes from several PTX values reach here (ptxas gave them one register);
* ``"temporary"``: made by ptxas inside one PTX line and read only there (an address, a step
  of a multi-instruction operation), or written at a PTX line that defines no register;
* ``"stack pointer"``: R1, set from ``c[0x0][0x28]`` before the first PTX line;
* ``"call clobber"``: a register a CALL marks as assigned (the callee may overwrite it);
* ``"entry"``: live from the function's entry with no write reaching it;
* ``"unknown"``: written by an instruction without a PTX line.

Example::

    >>> t = trace_kernel(fn, kernel, ptx_text)       # doctest: +SKIP
    >>> [(v.register, v.ptx, v.source) for v in t.peak_values][:2]   # doctest: +SKIP
    [('R0', '%r1', 'k.cu:7'), ('R1', None, None)]
"""

from __future__ import annotations

import os
import re
from collections import Counter

import attrs

from ptxforge.analysis.cfg import build_cfg
from ptxforge.ptx import ir
from ptxforge.toolchain.sass_flow import ReachingDefs, back_edges, dest_register

__all__ = [
    "TRACED_KINDS",
    "KernelTrace",
    "LineMax",
    "LoopTrace",
    "RegisterValue",
    "loc_text",
    "PtxLines",
    "ptx_line_map",
    "trace_kernel",
]

#: Kinds that say what a register holds (the rest are not traced).
TRACED_KINDS = ("ptx", "merged", "temporary", "stack pointer", "call clobber")
_GUARD = re.compile(r"^@!?%?\w+\s+")
_LABEL = re.compile(r"^[\w$.]+:\s*")
_CALLPROTO = re.compile(r"^[\w$]+\s*:\s*\.callprototype")
_SP_ADJUST = re.compile(r"^(?:IADD3|VIADD) R1, R1, -?0x[0-9a-f]+\b")
_SP = re.compile(r"^(?:MOV|IMAD\.MOV\.U32) R1, (?:RZ, RZ, )?c\[0x0\]\[0x28\]")


def loc_text(loc: ir.SourceLoc | None) -> str | None:
    """``k.cu:12 (inlined at k.cu:40)``: a location with its call sites (file names short)."""
    if loc is None or not loc.known:
        return None
    parts = [f"{os.path.basename(c.file)}:{c.line}" for c in loc.chain()]
    return parts[0] + "".join(f" (inlined at {p})" for p in parts[1:])


_DEFINITION = re.compile(r"\.(?:entry|func)\b[^;{]*?[\s)]([\w$][\w$.]*)\s*(?=\(|$)", re.MULTILINE)


class PtxLines:
    """The PTX text a module was parsed from, indexed once: its lines and where each
    function's definition starts, so that :meth:`line_map` costs one function's lines (not
    the whole text) and the maps of a module's kernels cost the text once in all.

    Example::

        >>> from ptxforge.ptx.parse import parse
        >>> text = ".version 8.0\\n.target sm_80\\n.address_size 64\\n.entry k()\\n{\\nret;\\n}\\n"
        >>> PtxLines(text).line_map(parse(text).kernels[0])
        {6: 0}
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self._starts: dict[str, int] = {}      # name -> 1-based line of its parameter list
        self._maps: dict[str, dict[int, int]] = {}
        self._taken: tuple | None = None
        line, pos = 1, 0
        for m in _DEFINITION.finditer(text):
            name = m.group(1)
            semi, brace = text.find(";", m.end()), text.find("{", m.end())
            if name in self._starts or brace < 0 or (0 <= semi < brace):
                continue   # a declaration, or a second definition (the first one counts)
            line += text.count("\n", pos, m.end())
            pos = m.end()
            self._starts[name] = line

    def address_taken(self, module: ir.Module) -> tuple:
        """Names of ``module``'s functions named in a global's initializer (tables of
        function pointers), found once per module."""
        key = id(module)
        if self._taken is None or self._taken[0] != key:
            inits = " ".join(v.init for v in module.globals if getattr(v, "init", None))
            words = set(re.findall(r"[\w$.]+", inits)) if inits else set()
            self._taken = (key, tuple(f.name for f in module.kernels if f.name in words))
        return self._taken[1]

    def line_map(self, kernel: ir.Kernel) -> dict:
        """``{PTX line number (1-based): instruction index}`` for ``kernel`` (computed once
        per name); see :func:`ptx_line_map`."""
        out = self._maps.get(kernel.name)
        if out is None:
            start = self._starts.get(kernel.name)
            out = {} if start is None else _walk(self.lines, start, kernel)
            self._maps[kernel.name] = out
        return out


def ptx_line_map(text: str, kernel: ir.Kernel) -> dict:
    """``{PTX line number (1-based): instruction index}`` for ``kernel`` in the PTX ``text``
    it was parsed from (an instruction spanning lines is at its first).  Empty when the text's
    instructions do not line up with the kernel's (same count and opcodes).  For several
    kernels of one text, :class:`PtxLines` indexes the text once."""
    return PtxLines(text).line_map(kernel)


def _walk(lines: list, line: int, kernel: ir.Kernel) -> dict:
    """The line map of ``kernel``, whose definition's parameter list is on ``line``: its
    body's lines, from there to the closing brace."""
    out: dict[int, int] = {}
    depth, opened, in_stmt, directive = 0, False, False, False
    for n in range(line, len(lines) + 1):
        raw = lines[n - 1].split("//", 1)[0].strip()
        if in_stmt or directive:
            if ";" in raw:
                in_stmt = directive = False
            continue
        while raw[:1] in ("{", "}"):
            depth += 1 if raw[0] == "{" else -1
            opened = opened or raw[0] == "{"
            raw = raw[1:].strip()
        if opened and depth == 0:
            break
        if not raw or not opened:
            continue
        if raw.startswith(".") or _CALLPROTO.match(raw):
            directive = ";" not in raw and not raw.startswith((".loc", ".file"))
            continue
        if _LABEL.match(raw):
            raw = _LABEL.sub("", raw)
            if not raw:
                continue
        out[n] = len(out)
        in_stmt = ";" not in raw
        if raw.endswith("}"):
            depth -= 1
    ins = kernel.instructions
    if len(out) != len(ins):
        return {}
    for n, k in out.items():
        word = _GUARD.sub("", lines[n - 1].split("//", 1)[0].strip().lstrip("{").strip())
        word = _LABEL.sub("", word).split(None, 1)[0].rstrip(";")
        if word != ins[k].opcode:
            return {}
    return out


@attrs.frozen(slots=True, kw_only=True)
class RegisterValue:
    """What one physical register holds at one SASS instruction (see the module doc)."""

    register: str
    kind: str
    ptx: str | None = None          # "%f5", "%r3|%r9" when merged
    ptx_line: int | None = None     # the PTX line of its (first) defining instruction
    source: str | None = None       # "k.cu:12 (inlined at k.cu:40)"
    python: str | None = None       # "kernel.py:17" for KernelBuilder kernels
    unit: int = 0                      # which 32-bit half/quarter of a wide PTX value
    note: str = ""

    @property
    def traced(self) -> bool:
        return self.kind in TRACED_KINDS

    def to_dict(self) -> dict:
        return {"register": self.register, "ptx": self.ptx, "source": self.source,
                "python": self.python, "kind": self.kind, "ptx_line": self.ptx_line,
                "note": self.note or None}


@attrs.frozen(slots=True, kw_only=True)
class LineMax:
    """The most GPRs live at an instruction of one source line (with its call sites)."""

    source: str
    max_live: int
    instructions: int

    def to_dict(self) -> dict:
        return {"source": self.source, "max_live": self.max_live,
                "instructions": self.instructions}


@attrs.frozen(slots=True, kw_only=True)
class LoopTrace:
    """One PTX loop: its PTX lines (first, last), the SASS peak over its instructions, and
    how many copies of its lines the SASS loop body holds (``unroll``; 1: not unrolled;
    None: no SASS loop holds its lines)."""

    ptx_lines: tuple
    peak: int
    unroll: int | None
    depth: int = 1

    def to_dict(self) -> dict:
        return {"ptx_lines": list(self.ptx_lines), "peak": self.peak, "unroll": self.unroll,
                "depth": self.depth}


@attrs.frozen(slots=True, kw_only=True)
class KernelTrace:
    """A kernel's SASS registers traced to PTX values: at the SASS peak (``peak_values``,
    register order), per source line, per PTX loop; ``folded`` are the PTX values (with
    units, ``(name, unit)``) no SASS register ever holds."""

    name: str
    peak_offset: int | None
    peak_values: tuple
    by_line: tuple
    loops: tuple
    folded: frozenset = attrs.field(repr=False, factory=frozenset)
    peak_ptx_index: int | None = None
    line_map_ok: bool = False
    all_ptx_lines: bool = False        # every SASS instruction has a PTX line

    @property
    def traced_fraction(self) -> float:
        """Share of the peak registers whose value is known (1.0 with none)."""
        if not self.peak_values:
            return 1.0
        return sum(v.traced for v in self.peak_values) / len(self.peak_values)

    def by_kind(self) -> dict:
        return dict(Counter(v.kind for v in self.peak_values))

    def peak_groups(self, by: str = "line") -> tuple:
        """``((label, count), …)`` of the peak's registers by the source line of their value
        (``by="line"``) or by the outermost call site in the kernel (``by="callsite"``);
        the kinds without a source line are their own groups."""
        c: Counter = Counter()
        for v in self.peak_values:
            where = v.source or v.python
            if where is None:
                label = f"({v.kind}, no source line)" if v.kind in ("ptx", "merged") \
                    else f"({v.kind})"
            elif by == "callsite":
                label = where.rsplit("(inlined at ", 1)[-1].rstrip(")")
            else:
                label = where
            c[label] += 1
        return tuple(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


def _unit_of(sass_text: str, reg: int, sizes: list) -> tuple:
    """(def position, unit) of physical ``reg`` among PTX defs of ``sizes`` units, from the
    SASS destination base register; (0, 0) when it cannot tell."""
    base = dest_register(sass_text)
    if base is None or not 0 <= reg - base < sum(sizes):
        return 0, 0
    k = reg - base
    for pos, s in enumerate(sizes):
        if k < s:
            return pos, k
        k -= s
    return 0, 0


def _reachable(kernel: ir.Kernel, others: tuple, roots: tuple = ()) -> list:
    """The functions of ``others`` that ``kernel`` names (calls or takes the address of),
    or whose names are in ``roots`` (e.g. a global table of function pointers), directly or
    through each other: the ``.func`` bodies ptxas may have compiled into it."""
    by_name = {f.name: f for f in others if f.body is not None and f.name != kernel.name}
    out, todo, seen = [], [kernel], {kernel.name}
    for name in roots:
        if name in by_name and name not in seen:
            seen.add(name)
            out.append(by_name[name])
            todo.append(by_name[name])
    while todo and by_name:
        for inst in todo.pop().instructions:
            for op in inst.operands:
                f = by_name.get(op.name) if isinstance(op, ir.Symbol) else None
                if f is not None and f.name not in seen:
                    seen.add(f.name)
                    out.append(f)
                    todo.append(f)
    return out


class _Tracer:
    def __init__(self, fn, kernel: ir.Kernel | None, lines: PtxLines | None,
                 others: tuple = (), roots: tuple = ()) -> None:
        self.fn, self.kernel = fn, kernel
        self.lines: dict[int, int] = {}
        self.where: dict[int, tuple[ir.Kernel, int]] = {}
        if kernel is not None and lines is not None:
            self.lines = lines.line_map(kernel)
            self.where = {n: (kernel, k) for n, k in self.lines.items()}
            for f in _reachable(kernel, others, roots) if self.lines else ():
                self.where.update({n: (f, k) for n, k in lines.line_map(f).items()})
        self.rd = ReachingDefs(fn)
        self._defv: dict = {}

    def ptx_index(self, k: int) -> int | None:
        pl = self.fn.instructions[k].ptx_line
        return None if pl is None else self.lines.get(pl)

    def def_value(self, d: int, r: int) -> tuple:
        """(kind, PTX register or None, unit, ptx line, loc) of register ``r`` written at ``d``."""
        key = (d, r)
        if key not in self._defv:
            self._defv[key] = self._def_value(d, r)
        return self._defv[key]

    def _def_value(self, d: int, r: int) -> tuple:
        ins = self.fn.instructions[d]
        if ins.is_call and dict(dict(ins.marks).get("GPR", ())).get(r) == "^":
            return ("call clobber", None, 0, ins.ptx_line, None)
        if r == 1 and (_SP.match(ins.text) or _SP_ADJUST.match(ins.text)):
            return ("stack pointer", None, 0, None, None)
        if ins.ptx_line is None:
            return ("unknown", None, 0, None, None)
        got = self.where.get(ins.ptx_line)
        if got is None:
            kind = "temporary" if self.where else "unknown"   # a line with no instruction
            return (kind, None, 0, ins.ptx_line, None)
        p = got[0].instructions[got[1]]
        defs = [x for x in p.defs if x.type.units and x.type.name != "pred"]
        if not defs:
            return ("temporary", None, 0, ins.ptx_line, p.loc)
        uses = self.rd.uses_of_register(d, r)
        if uses and all(self.fn.instructions[u].ptx_line == ins.ptx_line for u in uses) \
                and not any(x in p.uses for x in defs):
            return ("temporary", None, 0, ins.ptx_line, p.loc)
        pos, unit = _unit_of(ins.text, r, [x.type.units for x in defs])
        return ("ptx", defs[pos].name, unit, ins.ptx_line, p.loc)

    def value(self, k: int, r: int, defs: tuple) -> RegisterValue:
        name = f"R{r}"
        if not defs:
            later = self.guarded_write(k, r)
            if later is None:
                return RegisterValue(register=name, kind="entry", note="no write reaches it")
            v = self.value(later, r, (later,))
            at = self.fn.instructions[later].offset
            return attrs.evolve(v, note=f"kept for the predicated write at {at:#06x}")
        vals = [self.def_value(d, r) for d in defs]
        ptx = [v for v in vals if v[0] == "ptx"]
        if not ptx:
            kind, _, _, line, loc = vals[0]
            note = ("made by ptxas inside this PTX line" if kind == "temporary" else "")
            return _with_loc(RegisterValue(register=name, kind=kind, ptx=None, ptx_line=line,
                                           note=note), loc)
        names = sorted({v[1] for v in ptx})
        first = ptx[0]
        if len(names) == 1:
            note = "" if len(ptx) == len(vals) else "also written by ptxas-made values"
            return _with_loc(RegisterValue(register=name, kind="ptx", ptx=names[0],
                                           ptx_line=first[3], unit=first[2], note=note), first[4])
        return _with_loc(RegisterValue(register=name, kind="merged", ptx="|".join(names),
                                       ptx_line=first[3], unit=first[2],
                                       note=f"{len(names)} PTX values share this register"),
                         first[4])

    def guarded_write(self, k: int, r: int) -> int | None:
        """The next predicated instruction after ``k`` that writes ``r``, if that is the next
        write of ``r`` at all (a register live with no write reaching it waits for it)."""
        for j in range(k + 1, len(self.fn.instructions)):
            ins = self.fn.instructions[j]
            m = dict(dict(ins.marks).get("GPR", ())).get(r)
            if m is None:
                return None
            if m in "^x":
                return j if ins.text.startswith("@") else None
        return None

    def at(self, k: int) -> tuple:
        defs = self.rd.at(k)
        return tuple(self.value(k, r, defs[r]) for r in sorted(defs))


def _with_loc(v: RegisterValue, loc: ir.SourceLoc | None) -> RegisterValue:
    text = loc_text(loc)
    if loc is None or text is None:
        return v
    if loc.file.endswith(".py"):
        return attrs.evolve(v, python=text)
    return attrs.evolve(v, source=text)


def _by_line(fn) -> tuple:
    best: dict = {}
    for i in fn.instructions:
        if i.source is None:
            continue
        key = str(attrs.evolve(i.source, file=os.path.basename(i.source.file),
                               inlined_at=tuple((os.path.basename(f), n)
                                                for f, n in i.source.inlined_at)))
        n, c = best.get(key, (0, 0))
        best[key] = (max(n, i.count("GPR")), c + 1)
    rows = [LineMax(source=k, max_live=n, instructions=c) for k, (n, c) in best.items()]
    return tuple(sorted(rows, key=lambda x: (-x.max_live, x.source)))


def _loops(fn, kernel: ir.Kernel, lines: dict) -> tuple:
    if not lines:
        return ()
    cfg = build_cfg(kernel)
    line_of = {k: n for n, k in lines.items()}
    sass_loops = back_edges(fn)
    out = []
    for lp in cfg.loops:
        idx = [k for b in lp.blocks for k in range(cfg.blocks[b].start, cfg.blocks[b].end)]
        plines = {line_of[k] for k in idx if k in line_of}
        if not plines:
            continue
        at = [k for k, i in enumerate(fn.instructions) if i.ptx_line in plines]
        peak = max((fn.instructions[k].count("GPR") for k in at), default=0)
        unroll = None
        for br, tgt in sass_loops:
            body = [k for k in range(tgt, br + 1) if fn.instructions[k].ptx_line in plines]
            if not body:
                continue
            c = Counter(fn.instructions[k].ptx_line for k in body)
            counts = Counter(c.values())
            k_best = max(counts, key=lambda v: (counts[v], v))
            unroll = max(unroll or 0, k_best)
        out.append(LoopTrace(ptx_lines=(min(plines), max(plines)), peak=peak, unroll=unroll,
                             depth=lp.depth))
    return tuple(sorted(out, key=lambda x: x.ptx_lines))


def trace_kernel(fn, kernel: ir.Kernel | None = None, ptx_text: str | None = None,
                 module: ir.Module | None = None, *, lines: PtxLines | None = None
                 ) -> KernelTrace:
    """Trace the registers of SASS function ``fn`` (a
    :class:`~ptxforge.toolchain.sass.SassFunction`) to the PTX values of ``kernel`` (the IR
    parsed from ``ptx_text``, the PTX ptxas compiled): at the GPR peak, per source line and
    per PTX loop.  Without the kernel or its text only the kinds ptxas makes are known;
    ``module`` (the whole IR) lets code ptxas compiled from ``.func`` bodies be traced too;
    ``lines``, the text's :class:`PtxLines`, saves indexing the text again for each kernel of
    a module (give ``ptx_text`` or ``lines``)."""
    if lines is None and ptx_text:
        lines = PtxLines(ptx_text)
    roots = lines.address_taken(module) if lines is not None and module is not None else ()
    tr = _Tracer(fn, kernel, lines, module.kernels if module is not None else (), roots)
    peak = fn.peak("GPR")
    k_peak = None
    if peak.instructions:
        first = peak.instructions[0].offset
        k_peak = next(k for k, i in enumerate(fn.instructions) if i.offset == first)
    values = tr.at(k_peak) if k_peak is not None else ()
    held = set()
    for d, ins in enumerate(fn.instructions):
        for r, m in dict(ins.marks).get("GPR", ()):
            if m in "^x":
                v = tr.def_value(d, r)
                if v[0] == "ptx":
                    held.add((v[1], v[2]))
    folded = set()
    if kernel is not None and tr.lines:
        for x in {x for i in kernel.instructions for x in i.defs}:
            if x.type.name != "pred":
                folded |= {(x.name, u) for u in range(x.type.units) if (x.name, u) not in held}
    return KernelTrace(name=fn.name,
                       peak_offset=None if k_peak is None else fn.instructions[k_peak].offset,
                       peak_values=values, by_line=_by_line(fn),
                       loops=_loops(fn, kernel, tr.lines) if kernel is not None else (),
                       folded=frozenset(folded),
                       peak_ptx_index=None if k_peak is None else tr.ptx_index(k_peak),
                       line_map_ok=bool(tr.lines),
                       all_ptx_lines=all(i.ptx_line is not None for i in fn.instructions))
