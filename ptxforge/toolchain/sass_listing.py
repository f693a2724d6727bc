"""Parsers for nvdisasm's text output: the register life-range table and line annotations.

``nvdisasm -c --life-range-mode narrow`` prints, after each SASS instruction, one table row
per register file (``GPR``, ``PRED``, ``UGPR``, ``UPRED`` …): the number of live registers
and one character per physical register (``^`` assigned, ``v`` used, ``x`` used and
reassigned, ``:`` live through, space not live).  The header names the files and numbers
the register columns vertically (hundreds, tens and units rows; the units row starts with
``#``).  ``nvdisasm -c -gi`` / ``-gp`` print ``//## File "F", line N`` before the
instructions a source (or PTX) line produced.  Anything else in a table is refused with
the offending line quoted, so a changed output format fails loudly instead of silently.

Example::

    >>> fns = parse_life_ranges(text)            # doctest: +SKIP
    >>> fns[0].name, fns[0].rows[0].counts       # doctest: +SKIP
    ('saxpy', (1, 0, 0))
"""

from __future__ import annotations

import re
from typing import Optional

import attrs

from ptxforge.errors import PtxforgeError

__all__ = ["SourceLine", "TableRow", "ParsedFunction", "parse_life_ranges",
           "parse_line_annotations", "MARKS", "PTX_FILE_PREFIX"]

#: The characters nvdisasm puts in a register column, and what each means.
MARKS = {" ": "not live", ":": "live", "^": "assigned", "v": "used",
         "x": "used and reassigned"}

_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_OTHER = re.compile(r"^\s*\.other\s+([^,\s]+),\s*@\"([^\"]*)\"")
_SHI = re.compile(r"^\s*\.sectioninfo\s+@\"SHI_REGISTERS=(\d+)\"")
_MARKED = re.compile(r"[^ ]")
_MARK_RUN = re.compile(r"[^ ]+")
_MARK_CHARS = "".join(m for m in MARKS if m != " ")
_TABLE = re.compile(r"//\s*([+|].*[+|])\s*$")
_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s*(.*?)\s*(?://.*)?$")
_FILE = re.compile(r'^\s*//## File "(.*?)", line (\d+)(.*)$')
_INLINED = re.compile(r'\s*inlined at "(.*?)", line (\d+)')
_LABEL = re.compile(r"^((?!\.text\.)[.$\w][\w$.]*):")


class _Error(PtxforgeError, ValueError):
    """nvdisasm printed something this parser does not understand."""


def _fail(what: str, lineno: int, line: str, source: str) -> _Error:
    return _Error(f"{source}:{lineno}: {what}\n    {line.strip()[:200]}")


@attrs.frozen(slots=True, kw_only=True)
class SourceLine:
    """A line annotation: ``file:line``, with the call sites it was inlined at (innermost
    first)."""

    file: str
    line: int
    inlined_at: tuple = ()   # ((file, line), …)

    def __str__(self) -> str:
        s = f"{self.file}:{self.line}"
        for f, n in self.inlined_at:
            s += f" (inlined at {f}:{n})"
        return s

    def to_dict(self) -> dict:
        return {"file": self.file, "line": self.line,
                "inlined_at": [{"file": f, "line": n} for f, n in self.inlined_at]}


@attrs.frozen(slots=True, kw_only=True)
class TableRow:
    """One instruction's row: offset, text, and per register file the live count and the
    ``(register, mark)`` pairs of the registers marked (every non-space column)."""

    offset: int
    text: str
    counts: tuple      # one int per register file, in table order
    marks: tuple       # one tuple of (index, mark) per register file


@attrs.frozen(slots=True, kw_only=True)
class ParsedFunction:
    """A function's section: name, whether it is an ``.entry``, the ``SHI_REGISTERS`` the
    section header records (None: not printed, as on sm_90+), the register files (table
    order) and the rows."""

    name: str
    entry: bool
    shi_registers: Optional[int]
    groups: tuple
    rows: tuple
    labels: tuple = ()   # ((label, offset of the instruction it names), …), e.g. (".L_x_3", 0x170)


@attrs.frozen(slots=True, kw_only=True)
class _Group:
    name: str
    width: int
    count_end: int      # columns before the first register column hold the count
    columns: tuple      # (position in the cell, register index)
    positions: frozenset = frozenset()
    index_at: dict = attrs.field(factory=dict, eq=False)   # position -> register index
    # the columns are the positions count_end, count_end + 1, … holding registers first,
    # first + 1, … (None: not so; each mark is then looked up in index_at)
    first: Optional[int] = None


def _header(rows: list, source: str) -> list:
    """Register files and their columns from the header rows (title row, digit rows)."""
    title_line, title = rows[0]
    cells = title.split("|")[1:-1]
    digit_rows = [(n, r.split("|")[1:-1]) for n, r in rows[1:]]
    if not cells or not digit_rows:
        raise _fail("expected a life-range table header (register file names, then the "
                    "register numbers), got this", title_line, title, source)
    groups = []
    for k, cell in enumerate(cells):
        name = cell.strip()
        if not re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
            raise _fail(f"expected a register file name (GPR, PRED, UGPR …) in column {k + 1} "
                        f"of the table header, got {name!r}", title_line, title, source)
        parts = []
        for n, r in digit_rows:
            if len(r) != len(cells) or len(r[k]) != len(cell):
                raise _fail(f"table header row does not line up with the {name} column "
                            f"({len(cell)} characters wide)", n, "|".join(r), source)
            parts.append(r[k])
        units_line, units = digit_rows[-1][0], parts[-1]
        if "#" not in units:
            raise _fail(f"expected '#' (the live-count column) in the {name} header row",
                        units_line, "|" + "|".join(digit_rows[-1][1]) + "|", source)
        columns = []
        for pos, ch in enumerate(units):
            if ch.isdigit():
                digits = "".join(p[pos] for p in parts if p[pos].isdigit())
                columns.append((pos, int(digits)))
            elif ch not in " #":
                raise _fail(f"unexpected {ch!r} in the {name} register-number row",
                            units_line, "|" + "|".join(digit_rows[-1][1]) + "|", source)
        indices = [i for _, i in columns]
        if any(b <= a for a, b in zip(indices, indices[1:])):
            raise _fail(f"the {name} register numbers are not increasing ({indices[:12]}…): "
                        "expected the one-character columns of --life-range-mode narrow "
                        "(or count)", units_line, "|" + "|".join(digit_rows[-1][1]) + "|",
                        source)
        count_end = columns[0][0] if columns else len(cell)
        if units.index("#") >= count_end:
            raise _fail(f"the {name} live-count column '#' is not before the register "
                        "columns", units_line, "|" + "|".join(digit_rows[-1][1]) + "|", source)
        first: Optional[int] = columns[0][1] if columns else None
        if first is not None and any(p != count_end + k or i != first + k
                                     for k, (p, i) in enumerate(columns)):
            first = None
        groups.append(_Group(name=name, width=len(cell), count_end=count_end,
                             columns=tuple(columns), positions=frozenset(p for p, _ in columns),
                             index_at=dict(columns), first=first))
    return groups


def _row(groups: list, cells: list, lineno: int, line: str, source: str) -> tuple:
    """(counts, marks) of one table row."""
    if len(cells) != len(groups):
        raise _fail(f"expected {len(groups)} register-file columns "
                    f"({', '.join(g.name for g in groups)}), got {len(cells)}",
                    lineno, line, source)
    counts, marks = [], []
    for g, cell in zip(groups, cells):
        if len(cell) != g.width:
            raise _fail(f"the {g.name} column is {len(cell)} characters wide, the header's "
                        f"is {g.width}", lineno, line, source)
        head = cell[:g.count_end].strip()
        if head and not head.isdigit():
            raise _fail(f"expected a live-register count in the {g.name} column, got "
                        f"{head!r}", lineno, line, source)
        counts.append(int(head) if head else 0)
        quick = _runs(g, cell)
        marks.append(quick if quick is not None else _one_by_one(g, cell, lineno, line, source))
    return tuple(counts), tuple(marks)


def _one_by_one(g: _Group, cell: str, lineno: int, line: str, source: str) -> tuple:
    """The marks of one cell, ``((register, mark), …)``, read mark by mark (every layout;
    the error names a mark that is not one or lies between the columns)."""
    got = []
    for m in _MARKED.finditer(cell, g.count_end):   # only the marked columns: most are blank
        pos, ch = m.start(), m.group()
        index = g.index_at.get(pos)
        if index is None:
            raise _fail(f"unexpected {ch!r} between the {g.name} register columns",
                        lineno, line, source)
        if ch not in MARKS:
            raise _fail(f"unexpected mark {ch!r} for {g.name} register {index}; expected "
                        "one of ' :^vx'", lineno, line, source)
        got.append((index, ch))
    return tuple(got)


def _runs(g: _Group, cell: str) -> Optional[tuple]:
    """The marks of one cell of a group whose columns are contiguous, read a run of adjacent
    marked registers at a time (live ranges of neighbouring registers overlap: a wide kernel
    has tens of marks in a few runs); None where a run is not all marks or lies beyond the
    columns (the caller's mark-by-mark reading names the fault)."""
    if g.first is None:
        return None
    got: list = []
    base, last = g.first - g.count_end, g.count_end + len(g.columns)
    for m in _MARK_RUN.finditer(cell, g.count_end):
        start, end = m.span()
        run = m.group()
        if end > last or run.strip(_MARK_CHARS):
            return None
        got.extend(zip(range(base + start, base + end), run))
    return tuple(got)


def parse_life_ranges(text: str, source: str = "<nvdisasm>") -> tuple:
    """The functions of ``nvdisasm -c --life-range-mode narrow`` (or ``count``) output.

    Raises a :class:`~ptxforge.errors.PtxforgeError` (also ``ValueError``) naming the line
    for a table it cannot read."""
    functions = []
    cur: Optional[dict] = None
    header: list = []
    groups: Optional[list] = None
    pending: list = []   # labels waiting for the instruction they name
    state = "none"   # none | header | body | done

    def close() -> None:
        if cur is not None:
            functions.append(ParsedFunction(name=cur["name"], entry=cur["entry"],
                                            shi_registers=cur["shi"],
                                            groups=tuple(g.name for g in cur["groups"] or ()),
                                            rows=tuple(cur["rows"]), labels=tuple(cur["labels"])))

    for lineno, line in enumerate(text.splitlines(), 1):
        directive = not line.lstrip().startswith("/*")   # instruction rows: no directive
        m = _SECTION.match(line) if directive else None
        if m:
            close()
            cur = {"name": m.group(1), "entry": False, "shi": None, "groups": None, "rows": [],
                   "labels": []}
            state, header, groups, pending = "none", [], None, []
            continue
        if cur is None:
            continue
        if directive:
            lm = _LABEL.match(line)
            if lm:
                pending.append(lm.group(1))
            m = _SHI.match(line)
            if m:
                cur["shi"] = int(m.group(1))
            m = _OTHER.match(line)
            if m and m.group(1) == cur["name"]:
                cur["entry"] = "STO_CUDA_ENTRY" in m.group(2)
        t = _TABLE.search(line)
        table = t.group(1) if t else None
        if table is not None and table.startswith("+"):
            if state == "none":
                state = "header"
            elif state == "header":
                groups = _header(header, source)
                cur["groups"] = groups
                state = "body"
            elif state == "body" and "-" in table:
                state = "done"
            continue
        if state == "header":
            if table is None:
                raise _fail("expected a table header row", lineno, line, source)
            header.append((lineno, table))
            continue
        im = _INSTR.match(line)
        if im is None:
            continue
        if state != "body" or table is None:
            raise _fail(f"instruction of {cur['name']} without life-range columns (run "
                        "nvdisasm with --life-range-mode narrow)", lineno, line, source)
        assert groups is not None       # the header rows, read before the body began
        counts, marks = _row(groups, table.split("|")[1:-1], lineno, line, source)
        offset = int(im.group(1), 16)
        cur["labels"] += [(name, offset) for name in pending]
        pending = []
        cur["rows"].append(TableRow(offset=offset, text=" ".join(im.group(2).split()),
                                    counts=counts, marks=marks))
    close()
    return tuple(functions)


#: nvdisasm names the PTX of ``-gp`` annotations after the cubin section holding it.
PTX_FILE_PREFIX = ".nv_debug_ptx_txt"


def parse_line_annotations(text: str, source: str = "<nvdisasm>",
                           ptx: Optional[bool] = None) -> dict:
    """``{function: {offset: SourceLine}}`` from ``nvdisasm -c -g``, ``-gi``, ``-gp`` or
    ``-gi -gp`` output; an instruction before any annotation in its function has none.
    ``ptx=True`` keeps only the PTX annotations (file ``.nv_debug_ptx_txt.N``), ``False``
    only the others, None every one (the last before an instruction wins)."""
    out: dict = {}
    cur: Optional[dict] = None
    here: Optional[SourceLine] = None
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _SECTION.match(line)
        if m:
            cur = out.setdefault(m.group(1), {})
            here = None
            continue
        if cur is None:
            continue
        m = _FILE.match(line)
        if m:
            rest, chain = m.group(3), []
            for am in _INLINED.finditer(rest):
                chain.append((am.group(1), int(am.group(2))))
            if _INLINED.sub("", rest).strip():
                raise _fail("expected '//## File \"F\", line N' optionally followed by "
                            "'inlined at \"F\", line N'", lineno, line, source)
            if ptx is None or ptx == m.group(1).startswith(PTX_FILE_PREFIX):
                here = SourceLine(file=m.group(1), line=int(m.group(2)), inlined_at=tuple(chain))
            continue
        im = _INSTR.match(line)
        if im and here is not None:
            cur[int(im.group(1), 16)] = here
    return out
