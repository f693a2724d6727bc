"""Unroll advice: when the code at a kernel's register peak is a loop body the compiler
replicated, ``#pragma unroll N`` on the loop, with the source line of the loop, proven by
compiling the changed ``.cu``.

The peak's line is the SASS view's (the line whose values are live at the machine-code peak,
:attr:`~ptxforge.reports.gap.Gap.peak_lines`) when the kernel was compiled with nvdisasm at
hand, else the line of the PTX peak instruction.  The line is replicated when one opcode
appears at it more than once in the kernel's PTX (``copies``: a line of an unrolled loop body
is there once per copy).  The loops around it come from the CUDA source (:func:`source_loops`,
a scanner of ``for``/``while`` statements and the ``#pragma unroll`` above them); each is
given ``#pragma unroll N`` for N of 1, 2, 4 below the copies, the changed source is compiled
by NVRTC with the user's flags and then by ptxas, and the best change that gains blocks per
SM (or removes spill bytes) without adding spills or stack is the advice; a line no loop
holds gets no advice.  Given only the PTX, nothing can be compiled: the item names the
replicated line (and its loops, when the file its ``.loc`` names is readable) and says it is
not proven.

Measured with NVRTC 13.5 and ptxas 13.5 on tests/corpus/gemm.cu: ``#pragma unroll 4`` on
the ``kk`` loop (line 19, fully unrolled by its ``#pragma unroll``) takes sgemm_8x8 from 124
registers and 8 blocks/SM to 96 and 10 with no spills, where the register cap that gives 10
blocks costs 92 spill bytes.

Example::

    >>> [(lp.line, lp.body, lp.pragma) for lp in source_loops(
    ...     "#pragma unroll\\nfor (int i = 0; i < 4; ++i)\\n    x += i;\\n")]
    [(2, (3, 3), '')]
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from collections import Counter

import attrs

from ptxforge.errors import PtxforgeError

from .levers import Outcome, compile_outcome

__all__ = ["SourceLoop", "UnrollAdvice", "UnrollTry", "line_copies", "peak_line",
           "source_loops", "unroll_advice", "with_unroll"]

_LOOP = re.compile(r"\b(for|while)\s*\(")
_PRAGMA = re.compile(r"^\s*#\s*pragma\s+unroll\b\s*\(?\s*(\d*)\s*\)?\s*$")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'", re.DOTALL)


@attrs.frozen(slots=True, kw_only=True)
class SourceLoop:
    """A ``for``/``while`` loop of a source: the line of its keyword, its body's first and
    last line, and the ``#pragma unroll`` on the line above (``""``: without a count; None:
    no pragma) with that line."""

    line: int
    body: tuple
    pragma: str | None = None
    pragma_line: int | None = None

    def holds(self, line: int) -> bool:
        return self.line <= line <= self.body[1]


def _blank(text: str) -> str:
    """``text`` with comments and literals blanked (newlines kept, so lines stay)."""
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _close(code: str, i: int, open_: str, close: str) -> int:
    """The index of the bracket that closes the one at ``i`` (len(code): none)."""
    depth = 0
    for j in range(i, len(code)):
        if code[j] == open_:
            depth += 1
        elif code[j] == close:
            depth -= 1
            if depth == 0:
                return j
    return len(code)


def _statement_end(code: str, i: int) -> int:
    """Where the statement starting at or after ``i`` ends (its ``;`` or closing brace)."""
    depth = 0
    for j in range(i, len(code)):
        c = code[j]
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
            if depth == 0 and c == "}":
                return j
        elif c == ";" and depth == 0:
            return j
    return len(code)


def source_loops(text: str) -> tuple:
    """The :class:`SourceLoop` s of a C/C++ ``text``, in source order (``do`` loops, whose
    condition comes last, are not listed)."""
    code = _blank(text)
    raw = text.split("\n")
    breaks = [m.start() for m in re.finditer("\n", code)]

    def line_of(offset: int) -> int:   # 1-based line of ``offset`` (no scan per loop)
        return bisect_left(breaks, offset) + 1
    out = []
    for m in _LOOP.finditer(code):
        head_end = _close(code, m.end() - 1, "(", ")")
        if code[m.start() - 1: m.start()].isalnum() or head_end >= len(code):
            continue
        rest = head_end + 1
        while rest < len(code) and code[rest].isspace():
            rest += 1
        if m.group(1) == "while" and code[rest: rest + 1] == ";":
            continue    # the end of a do ... while
        end = (_close(code, rest, "{", "}") if code[rest: rest + 1] == "{"
               else _statement_end(code, rest))
        line = line_of(m.start())
        body = (line_of(rest), line_of(end))
        above = line - 1
        while above >= 1 and not raw[above - 1].strip():
            above -= 1
        pm = _PRAGMA.match(raw[above - 1]) if above >= 1 else None
        out.append(SourceLoop(line=line, body=body, pragma=pm.group(1) if pm else None,
                              pragma_line=above if pm else None))
    return tuple(out)


def with_unroll(text: str, loop: SourceLoop, n: int) -> str:
    """``text`` with ``#pragma unroll n`` on ``loop`` (its pragma replaced, else one line
    inserted above it, indented as the loop's line)."""
    lines = text.split("\n")
    at = loop.pragma_line if loop.pragma_line is not None else loop.line
    line = lines[at - 1]
    indent = line[:len(line) - len(line.lstrip())]
    if loop.pragma_line is not None:
        lines[at - 1] = f"{indent}#pragma unroll {n}"
    else:
        lines.insert(at - 1, f"{indent}#pragma unroll {n}")
    return "\n".join(lines)


def line_copies(kernel) -> Counter:
    """``{(file base name, line): copies}`` over a kernel's (IR) instructions: per line the
    count of its most frequent opcode (a line of a loop body unrolled 8 times: 8 or more)."""
    per: Counter = Counter()
    for ins in kernel.instructions:
        loc = ins.loc
        if loc is None or not loc.known:
            continue
        per[(os.path.basename(loc.file), loc.line, ins.opcode)] += 1
    out: Counter = Counter()
    for (f, n, _), c in per.items():
        out[(f, n)] = max(out[(f, n)], c)
    return out


_LABEL = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+)\b")


def peak_line(k) -> tuple | None:
    """``(file base name, line, "SASS" | "PTX")`` of the line that holds the register peak of
    a :class:`~ptxforge.reports.analyze.KernelAnalysis`: the SASS view's top line, else the
    PTX peak instruction's ``.loc``; None without line info."""
    gap = k.gap if k.stats is not None else None
    for label, _ in (gap.peak_lines if gap is not None else ()):
        m = _LABEL.match(label)
        if m:
            return os.path.basename(m.group("file")), int(m.group("line")), "SASS"
    kernel, index = k.kernel, k.pressure.peak.index
    if kernel is None or index is None or index >= len(kernel.instructions):
        return None
    loc = kernel.instructions[index].loc
    if loc is None or not loc.known:
        return None
    return os.path.basename(loc.file), loc.line, "PTX"


@attrs.frozen(slots=True, kw_only=True)
class UnrollTry:
    """One compiled variant: the loop, the N written, and the compile's
    :class:`~ptxforge.reports.levers.Outcome`."""

    loop: SourceLoop
    n: int
    outcome: Outcome


@attrs.frozen(slots=True, kw_only=True)
class UnrollAdvice:
    """What the unroll search found for one kernel: the peak's ``line`` (file base name,
    line, view), its ``copies`` in the PTX, the loops around it (innermost first), every
    compiled try, and ``best`` (the try to advise; None: none gains) or, given no source,
    ``proven`` False."""

    line: tuple
    copies: int
    loops: tuple = ()
    tries: tuple = ()
    best: UnrollTry | None = None
    proven: bool = True
    why_unproven: str = ""


def _gains(before, after) -> bool:
    """More blocks per SM without more spills or stack, or fewer spills without fewer
    blocks."""
    if after.error or after.registers is None:
        return False
    b0, b1 = before.blocks_per_sm or 0, after.blocks_per_sm or 0
    stack_ok = (after.stack_frame or 0) <= (before.stack_frame or 0)
    return stack_ok and ((b1 > b0 and after.spill <= before.spill)
                         or (after.spill < before.spill and b1 >= b0))


def unroll_advice(k, before, target: str, block: int, *, source=None, request=None,
                  counts: tuple = (1, 2, 4), most_loops: int = 4) -> UnrollAdvice | None:
    """The unroll advice for kernel ``k`` (a
    :class:`~ptxforge.reports.analyze.KernelAnalysis`) whose compile gave ``before``: None
    when its peak line is not replicated.  ``source`` is ``(text, path, compile)`` of the
    CUDA source the PTX came from, ``compile(text)`` giving the PTX of a changed text (NVRTC
    with the user's flags); without it the advice is not proven."""
    where = peak_line(k)
    if where is None or k.kernel is None:
        return None
    copies = line_copies(k.kernel).get(where[:2], 0)
    if copies < 2:
        return None
    if source is None:
        found = _source_on_disk(k.kernel, where[0])
        loops = () if found is None else _around(found, where[1], most_loops)
        if found is not None and not loops:
            return None          # the line is in no loop: its copies are not an unroll's
        why = ("advise was given the PTX, not the .cu: pass the .cu to have each #pragma "
               "unroll compiled")
        if found is None:
            why += (f" ({where[0]} is not on this machine: whether a loop holds the line is "
                    "not known either)")
        return UnrollAdvice(line=where, copies=copies, loops=loops, proven=False,
                            why_unproven=why)
    text, path, compile_source = source
    if os.path.basename(path) != where[0]:
        return UnrollAdvice(line=where, copies=copies, proven=False,
                            why_unproven=f"the loop is in {where[0]}, not in {path}: only the "
                                         "given source is changed and compiled")
    loops = _around(text, where[1], most_loops)
    if not loops:
        return None
    tries, best = [], None
    for lp in loops:
        for n in counts:
            if n >= copies or lp.pragma == str(n):
                continue
            try:
                ptx = compile_source(with_unroll(text, lp, n))
            except PtxforgeError as exc:   # NVRTC refusing a variant is a result
                got = Outcome(error=str(exc).splitlines()[0])
            else:
                got = compile_outcome(ptx, k.name, target, block, request=request,
                                      dynamic_shared=k.dynamic_shared)
            t = UnrollTry(loop=lp, n=n, outcome=got)
            tries.append(t)
            if _gains(before, got) and (best is None or _better(t, best)):
                best = t
    return UnrollAdvice(line=where, copies=copies, loops=tuple(loops), tries=tuple(tries),
                        best=best)


def _around(text: str, line: int, most: int) -> tuple:
    """The loops of ``text`` whose body holds ``line``, innermost first (at most ``most``)."""
    return tuple(sorted((lp for lp in source_loops(text) if lp.holds(line)),
                        key=lambda lp: -lp.line)[:most])


def _source_on_disk(kernel, base: str) -> str | None:
    """The text of the file its ``.loc`` lines name with base name ``base``, if readable."""
    for ins in kernel.instructions:
        loc = ins.loc
        if loc is not None and loc.known and os.path.basename(loc.file) == base:
            try:
                with open(loc.file, encoding="utf-8", errors="replace") as fh:
                    return fh.read()
            except OSError:
                return None
    return None


def _better(a: UnrollTry, b: UnrollTry) -> bool:
    """More occupancy, then fewer spill bytes, then the larger N (less code changed), then
    fewer instructions."""
    def key(t: UnrollTry) -> tuple:
        o = t.outcome
        return (-(o.occupancy or 0.0), o.spill, -t.n, o.instructions or 0)
    return key(a) < key(b)
