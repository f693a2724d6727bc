"""Local-memory traffic by source line: the ``STL``/``LDL`` instructions of a SASS function
grouped by the source line nvdisasm gives them, with their bytes and loop depth.

ptxas reports spill bytes as totals; the SASS says where they are.  Every ``STL`` (store to
local memory) and ``LDL`` (load) counts, so a kernel's own local arrays appear beside its
spills; nvdisasm marks the ones ptxas made for spilling with ``(*"SpillRefill"*)``, counted
apart as ``spill_accesses`` (measured with nvdisasm 13.5: on sgemm_8x8 of tests/corpus/gemm.cu
capped at 96 registers their bytes are ptxas's spill stores and loads exactly).  The width comes from the opcode
(``STL.64``: 8 bytes, ``.128``: 16, ``.U8``/``.S8``: 1, ``.U16``/``.S16``: 2, else 4); the
loop depth of an instruction is the number of SASS loops (back edges,
:func:`~ptxforge.toolchain.sass_flow.back_edges`) whose body holds it.

Example::

    >>> from ptxforge.toolchain.sass import sass_liveness        # doctest: +SKIP
    >>> fn = sass_liveness(compiled).function("k")               # doctest: +SKIP
    >>> [str(s) for s in spills_by_line(fn)]                     # doctest: +SKIP
    ['gemm.cu:30: 6 stores (24 bytes), 9 loads (36 bytes), loop depth 2']
"""

from __future__ import annotations

import re
from typing import Optional

import attrs

from .sass_flow import back_edges

__all__ = ["SpillLine", "local_access", "spills_by_line"]

_LOCAL = re.compile(r"^(?:@!?U?P[T\d]+\s+)?(STL|LDL)((?:\.[\w]+)*)\b")
_WIDTH = {"64": 8, "128": 16, "U8": 1, "S8": 1, "U16": 2, "S16": 2}


def local_access(text: str) -> Optional[tuple]:
    """``("store" | "load", bytes)`` for an ``STL``/``LDL`` instruction text, else None.

    Example::

        >>> local_access("STL.64 [R1+0x8], R4"), local_access("@P0 LDL R2, [R1]")
        (('store', 8), ('load', 4))
    """
    m = _LOCAL.match(text.strip())
    if m is None:
        return None
    width = 4
    for mod in m.group(2).split(".")[1:]:
        width = _WIDTH.get(mod, width)
    return ("store" if m.group(1) == "STL" else "load"), width


@attrs.frozen(slots=True, kw_only=True)
class SpillLine:
    """The local-memory instructions of one source line (``file`` None: no line info):
    counts and bytes of stores and loads, the deepest loop depth among them, and their SASS
    offsets."""

    file: Optional[str]
    line: Optional[int]
    stores: int
    loads: int
    store_bytes: int
    load_bytes: int
    loop_depth: int
    offsets: tuple
    spill_accesses: int = 0       # of stores + loads, those nvdisasm marks "SpillRefill"

    def __str__(self) -> str:
        where = "(no line info)" if self.file is None else f"{self.file}:{self.line}"
        return (f"{where}: {self.stores} stores ({self.store_bytes} bytes), {self.loads} loads "
                f"({self.load_bytes} bytes), loop depth {self.loop_depth}")

    def to_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "stores": self.stores,
                "loads": self.loads, "store_bytes": self.store_bytes,
                "load_bytes": self.load_bytes, "loop_depth": self.loop_depth,
                "spill_accesses": self.spill_accesses, "offsets": list(self.offsets)}


def spills_by_line(fn) -> tuple:
    """:class:`SpillLine` s of a :class:`~ptxforge.toolchain.sass.SassFunction`, deepest loop
    first, then most bytes, then by file and line."""
    loops = back_edges(fn)
    groups: dict = {}
    for k, ins in enumerate(fn.instructions):
        acc = local_access(ins.text)
        if acc is None:
            continue
        kind, width = acc
        key = (None, None) if ins.source is None else (ins.source.file, ins.source.line)
        g = groups.setdefault(key, [0, 0, 0, 0, 0, [], 0])
        i = 0 if kind == "store" else 1
        g[i] += 1
        g[2 + i] += width
        g[4] = max(g[4], sum(1 for branch, target in loops if target <= k <= branch))
        g[5].append(ins.offset)
        g[6] += "SpillRefill" in ins.text
    out = [SpillLine(file=f, line=n, stores=g[0], loads=g[1], store_bytes=g[2],
                     load_bytes=g[3], loop_depth=g[4], offsets=tuple(g[5]),
                     spill_accesses=g[6])
           for (f, n), g in groups.items()]
    out.sort(key=lambda s: (-s.loop_depth, -(s.store_bytes + s.load_bytes), s.file or "",
                            s.line or 0))
    return tuple(out)
