"""The source and PTX line of each SASS instruction, read from the cubin's DWARF line tables.

With line info (``ptxas -lineinfo``) a cubin carries two DWARF line programs: ``.debug_line``
maps SASS offsets to source lines (the PTX's ``.loc``) and ``.nv_debug_line_sass`` maps them
to lines of the PTX that ptxas keeps in ``.nv_debug_ptx_txt``.  ``nvdisasm -gi -gp`` prints
the same mapping as ``//## File`` comments, at the cost of a second nvdisasm process (it
ignores the line flags when it prints life ranges); reading the tables here gives the same
``{function: {offset: SourceLine}}`` as :func:`~ptxforge.toolchain.sass_listing.
parse_line_annotations` does on that text, without the process.

What nvdisasm prints, and so what this returns (checked against nvdisasm 13.5 on every
corpus kernel by ``tests/toolchain/test_sass_lines.py``):

- each function's sequence starts at ``DW_LNE_set_address``, whose operand ptxas leaves to a
  relocation against the function's symbol (``.rel.debug_line``);
- an instruction takes the last row printed at or before its offset (one before any row has
  none); nvdisasm prints the last row at an offset, and only when that row's own file and line
  differ from the last one it printed;
- NVIDIA's extended opcode ``0x90`` (two ULEB128 operands: the row of the call site, counted
  from 1 within the function's sequence, and the inlined function's name in ``.debug_str``) puts the
  next rows inside an inlined call; nvdisasm prints each such row as the chain of call sites,
  innermost first, ending with the outermost site alone, so the line an instruction keeps is
  the outermost call site's.

Anything else (DWARF 5, 64-bit DWARF, an opcode this reader does not know, a relocation it
cannot resolve) raises :class:`LineTableUnsupported`, and the caller runs nvdisasm instead.

Example::

    >>> src, ptx = read_line_tables(cubin_bytes, read_cubin(cubin_bytes))  # doctest: +SKIP
    >>> src["saxpy"][0x10]                                                   # doctest: +SKIP
    SourceLine(file='/src/saxpy.cu', line=4, inlined_at=())
"""

from __future__ import annotations

import bisect
import struct
from typing import Optional

from .cubin import CubinInfo, Section
from .sass_listing import SourceLine

__all__ = ["LineTableUnsupported", "read_line_tables", "function_lines"]

_SOURCE, _PTX = ".debug_line", ".nv_debug_line_sass"
_PTX_TEXT = ".nv_debug_ptx_txt"
_NV_INLINED = 0x90      # NVIDIA's extended opcode: the next rows are inside an inlined call


class LineTableUnsupported(Exception):
    """A line table this reader does not handle exactly as nvdisasm does (the caller falls back
    to nvdisasm's own output)."""


def read_line_tables(data: bytes, info: CubinInfo) -> tuple:
    """``(source, ptx)``: per function, its rows as ``(offsets, lines)`` (ascending offsets,
    the :class:`SourceLine` in effect from each); empty dicts for a cubin without the section.
    Raises :class:`LineTableUnsupported` for a table it cannot read exactly."""
    by = {s.name: s for s in info.sections}
    symbols = _symbols(data, info.sections, by.get(".symtab"))
    return tuple(_table(data, info.sections, by, name, symbols) for name in (_SOURCE, _PTX))


def function_lines(rows: Optional[tuple], offsets) -> dict:
    """``{offset: SourceLine}`` for the instruction ``offsets`` of one function from its
    ``rows`` (:func:`read_line_tables`); an offset before the first row has none."""
    if not rows:
        return {}
    starts, lines = rows
    out = {}
    for off in offsets:
        k = bisect.bisect_right(starts, off) - 1
        if k >= 0:
            out[off] = lines[k]
    return out


# --- ELF: symbols and relocations ------------------------------------------------------------

def _symbols(data: bytes, sections: tuple, symtab: Optional[Section]) -> list:
    """``[(section index, value), …]`` per symbol index."""
    if symtab is None:
        return []
    out = []
    for k in range(symtab.size // 24):
        _, _, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", data, symtab.offset + 24 * k)
        out.append((shndx, value))
    return out


def _relocations(data: bytes, sections: tuple, target: Section, symbols: list) -> dict:
    """``{offset in target: (function name, address)}`` from the REL/RELA sections that
    apply to ``target``."""
    out = {}
    for s in sections:
        if s.type not in (4, 9) or s.info != target.index:     # SHT_RELA, SHT_REL
            continue
        size = 24 if s.type == 4 else 16
        for k in range(s.size // size):
            off, rinfo = struct.unpack_from("<QQ", data, s.offset + size * k)
            addend = struct.unpack_from("<q", data, s.offset + size * k + 16)[0] \
                if s.type == 4 else struct.unpack_from("<Q", data, target.offset + off)[0]
            sym = rinfo >> 32
            if sym >= len(symbols):
                raise LineTableUnsupported(f"relocation against symbol {sym}")
            shndx, value = symbols[sym]
            if not 0 < shndx < len(sections) or \
                    not sections[shndx].name.startswith(".text."):
                raise LineTableUnsupported(f"relocation against section {shndx}")
            out[off] = (sections[shndx].name[len(".text."):], value + addend)
    return out


# --- DWARF line programs ---------------------------------------------------------------------

def _table(data: bytes, sections: tuple, by: dict, name: str, symbols: list) -> dict:
    sec = by.get(name)
    if sec is None:
        return {}
    blob = data[sec.offset:sec.offset + sec.size]
    # the PTX program names no file: its file 0 is the one PTX text ptxas kept
    texts = [s.name for s in sections if s.name.startswith(_PTX_TEXT)]
    zero = texts[0] if name == _PTX and texts == [_PTX_TEXT] else None
    rows: dict = {}
    pos = 0
    try:       # a damaged table: cut short, a string without its end, a bad relocation
        relocs = _relocations(data, sections, sec, symbols)
        while pos < len(blob):
            pos = _program(blob, pos, relocs, zero, rows)
    except (struct.error, IndexError, ValueError) as exc:    # UnicodeDecodeError included
        raise LineTableUnsupported(f"{name}: {exc}") from None
    return {fn: _printed(r) for fn, r in rows.items()}


def _printed(rows: list) -> tuple:
    """``(offsets, lines)`` of the rows nvdisasm prints: one whose own file and line (the
    innermost, inside an inlined call) differ from the last printed row's."""
    offsets, lines, last = [], [], None
    for addr, key, line in rows:
        if key != last:
            offsets.append(addr)
            lines.append(line)
            last = key
    return tuple(offsets), tuple(lines)


def _leb(b: bytes, pos: int, signed: bool = False) -> tuple:
    """``(value, next position)`` of the LEB128 number at ``pos`` (ULEB128, or SLEB128)."""
    out = shift = 0
    while True:
        byte = b[pos]
        pos += 1
        out |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return (out - (1 << shift) if signed and byte & 0x40 else out), pos


def _cstr(b: bytes, pos: int) -> tuple:
    end = b.index(b"\0", pos)
    return b[pos:end].decode(), end + 1


def _header(b: bytes, pos: int, zero: Optional[str] = None) -> tuple:
    """``(end of unit, start of program, min instruction length, line base, line range,
    opcode base, standard opcode lengths, file names)``."""
    length, version = struct.unpack_from("<IH", b, pos)
    if length >= 0xFFFFFFF0 or version not in (2, 3, 4):
        raise LineTableUnsupported(f"DWARF line table version {version}, length {length:#x}")
    end = pos + 4 + length
    hlen = struct.unpack_from("<I", b, pos + 6)[0]
    program = pos + 10 + hlen
    p = pos + 10
    min_len = b[p]
    p += 2 if version >= 4 else 1     # v4: maximum_operations_per_instruction
    p += 1                            # default_is_stmt
    line_base = struct.unpack_from("<b", b, p)[0]
    line_range, opcode_base = b[p + 1], b[p + 2]
    lengths = tuple(b[p + 3:p + 2 + opcode_base])
    p += 2 + opcode_base
    dirs = [""]
    while b[p]:
        d, p = _cstr(b, p)
        dirs.append(d)
    p += 1
    files = [zero]
    while b[p]:
        f, p = _cstr(b, p)
        d, p = _leb(b, p)
        _, p = _leb(b, p)
        _, p = _leb(b, p)
        files.append(f if f.startswith("/") or not dirs[d] else f"{dirs[d]}/{f}")
    if line_range == 0:
        raise LineTableUnsupported("line_range 0")
    return end, program, min_len, line_base, line_range, opcode_base, lengths, files


def _program(b: bytes, pos: int, relocs: dict, zero: Optional[str], rows: dict) -> int:
    """Run one unit's line program from ``pos``, adding rows to ``rows``; return its end.
    ``zero`` names file 0 (None: a row there is not read)."""
    end, p, min_len, line_base, line_range, opcode_base, lengths, files = _header(b, pos, zero)
    # every row of the program, numbered from 1: (file, line, call-site row or 0)
    logical: list = [None]
    fn: Optional[str] = None
    addr, file, line, context = 0, 1, 1, 0

    def emit() -> None:
        if fn is None:
            raise LineTableUnsupported("a row before DW_LNE_set_address")
        logical.append((file, line, context))
        root = len(logical) - 1
        while logical[root][2]:
            if logical[root][2] >= root:
                raise LineTableUnsupported("an inlined call site after its call")
            root = logical[root][2]
        rf, rl, _ = logical[root]
        if not 0 <= rf < len(files) or files[rf] is None:
            raise LineTableUnsupported(f"file index {rf}")
        got = rows.setdefault(fn, [])
        here = ((file, line), SourceLine(file=files[rf], line=rl))
        if got and got[-1][0] == addr:
            got[-1] = (addr, *here)       # the last row at an address is the one printed
        elif got and got[-1][0] > addr:
            raise LineTableUnsupported("rows out of address order")
        else:
            got.append((addr, *here))

    while p < end:
        op = b[p]
        p += 1
        if op >= opcode_base:
            adj = op - opcode_base
            addr += (adj // line_range) * min_len
            line += line_base + adj % line_range
            emit()
        elif op == 0:
            n, p = _leb(b, p)
            sub, nxt = b[p], p + n
            if sub == 1:                               # end_sequence
                fn, addr, file, line, context = None, 0, 1, 1, 0
                del logical[1:]
            elif sub == 2:                             # set_address (relocated)
                if p + 1 not in relocs:
                    raise LineTableUnsupported(f"set_address at {p + 1:#x} without relocation")
                fn, addr = relocs[p + 1]
            elif sub == _NV_INLINED:
                context, q = _leb(b, p + 1)
                _, q = _leb(b, q)
                if q != nxt:
                    raise LineTableUnsupported("an inlined-call opcode of another shape")
            elif sub != 4:                             # 4: set_discriminator
                raise LineTableUnsupported(f"extended opcode {sub:#x}")
            p = nxt
        elif op == 1:
            emit()
        elif op == 2:
            n, p = _leb(b, p)
            addr += n * min_len
        elif op == 3:
            n, p = _leb(b, p, signed=True)
            line += n
        elif op == 4:
            file, p = _leb(b, p)
        elif op == 8:
            addr += ((255 - opcode_base) // line_range) * min_len
        elif op == 9:
            addr += struct.unpack_from("<H", b, p)[0]
            p += 2
        else:                                          # 5, 6, 7, 10, 11, 12 and unknown ones
            for _ in range(lengths[op - 1]):
                _, p = _leb(b, p)
    return end
