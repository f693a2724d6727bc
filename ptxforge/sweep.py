"""Register-cap sweep: compile one kernel at several ``--maxrregcount`` caps and tabulate
registers, spills, stack and occupancy per cap.

The default caps are the occupancy cliffs for the chosen block size (the largest register
count of each blocks-per-SM plateau) down to 24: the caps where a user gains a block.  For a
target the occupancy table lacks, the defaults are :data:`GENERIC_CAPS` and the occupancy
columns are None ("n/a").

Example::

    >>> s = sweep(ptx, "pressure", "sm_80", block_size=256)      # doctest: +SKIP
    >>> print(s.to_text())                                        # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
from typing import Optional

import attrs

from .compile import CompileOptions, compile_many, normalize_target, ptx_entries, _source
from .errors import PtxforgeError
from .occupancy import occupancy, register_cliffs, unknown_arch_reason

__all__ = ["SweepRow", "Sweep", "GENERIC_CAPS", "default_caps", "sweep"]

#: Default caps for a target without an occupancy table (no cliffs to compute).
GENERIC_CAPS = (255, 128, 96, 64, 48, 40, 32, 24)


@attrs.frozen(slots=True)
class SweepRow:
    """One compile: ``cap`` None is the uncapped baseline."""

    cap: Optional[int]
    registers: int
    spill_stores: int
    spill_loads: int
    stack_frame: int
    blocks_per_sm: Optional[int]        # None: no occupancy table for the target
    occupancy: Optional[float]
    limiting: tuple
    reason: Optional[str] = None        # why no block launches (or why occupancy is unknown)

    def to_dict(self) -> dict:
        return {"cap": self.cap, "registers": self.registers, "spill_stores": self.spill_stores,
                "spill_loads": self.spill_loads, "stack_frame": self.stack_frame,
                "blocks_per_sm": self.blocks_per_sm,
                "occupancy": None if self.occupancy is None else round(self.occupancy, 6),
                "limiting": list(self.limiting), "reason": self.reason}


@attrs.frozen(slots=True)
class Sweep:
    """The table of a sweep, baseline first then caps from high to low."""

    kernel: str
    target: str
    block_size: int
    backend: str
    rows: tuple

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "target": self.target, "block_size": self.block_size,
                "backend": self.backend, "rows": [r.to_dict() for r in self.rows]}

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)

    def to_text(self) -> str:
        head = (f"register-cap sweep: {self.kernel} on {self.target}, {self.block_size} threads/block"
                f" ({self.backend})")
        cols = ("cap", "regs", "spill st", "spill ld", "stack", "blocks/SM", "occupancy", "limited by")
        lines = [head, "  ".join(f"{c:>9}" for c in cols)]
        reasons = []
        for r in self.rows:
            na = r.blocks_per_sm is None
            cells = ("none" if r.cap is None else str(r.cap), str(r.registers), str(r.spill_stores),
                     str(r.spill_loads), str(r.stack_frame), "n/a" if na else str(r.blocks_per_sm),
                     "n/a" if na else f"{r.occupancy * 100:.1f}%", ",".join(r.limiting) or "-")
            lines.append("  ".join(f"{c:>9}" for c in cells))
            if r.reason and r.reason not in reasons:
                reasons.append(r.reason)
        lines += [("occupancy n/a: " if self.rows[0].blocks_per_sm is None
                   else "cannot launch: ") + why for why in reasons]
        return "\n".join(lines)


def default_caps(target: str, block_size: int, *, floor: int = 24, **occ_kwargs) -> tuple:
    """The register counts at the occupancy cliffs for ``block_size``, down to ``floor``
    (:data:`GENERIC_CAPS` for a target without an occupancy table)."""
    if unknown_arch_reason(target) is not None:
        return tuple(c for c in GENERIC_CAPS if c >= floor)
    cliffs = register_cliffs(255, block_size, target, **occ_kwargs)
    caps = {c for c in cliffs.caps if floor <= c <= 255}
    caps.add(floor)
    return tuple(sorted(caps, reverse=True))


def sweep(ptx_or_module, kernel: Optional[str] = None, target: str = "sm_80", *,
          block_size: int = 256, caps=None, extra_caps=(), backend="auto",
          options: Optional[CompileOptions] = None, dynamic_shared: int = 0,
          max_workers: Optional[int] = None) -> Sweep:
    """Compile ``kernel`` uncapped and at each cap (in parallel) and tabulate the results.

    ``caps`` None means :func:`default_caps`; ``extra_caps`` are added to either.
    """
    ptx = _source(ptx_or_module)
    tgt = normalize_target(target)
    entries = {e.name: e for e in ptx_entries(ptx)}
    names = list(entries)
    if kernel is None and len(names) != 1:
        raise PtxforgeError(f"sweep: the PTX has kernels {', '.join(names) or 'none'}; "
                            "name the one to sweep")
    if kernel is None:
        kernel = names[0]
    if kernel not in entries:
        funcs = _functions(ptx)
        what = ("is a .func, not an .entry kernel" if kernel in funcs
                else "is not a kernel of the PTX")
        if not names:
            raise PtxforgeError(f"sweep: {kernel!r} {what}: the PTX has no .entry kernels, "
                                f"only functions ({', '.join(funcs) or 'none'}); ptxas reports "
                                "registers per kernel, so only .entry kernels can be swept")
        raise PtxforgeError(f"sweep: {kernel!r} {what}; the kernels are: {', '.join(names)}")
    chosen = set(default_caps(tgt, block_size) if caps is None else caps) | set(extra_caps)
    for c in chosen:
        if not isinstance(c, int) or not 16 <= c <= 255:
            raise PtxforgeError(f"sweep: caps must be ints in 16..255, got {c!r}")
    cap_list = [None] + sorted(chosen, reverse=True)
    base = options or CompileOptions()
    jobs = [(ptx, tgt, backend, attrs.evolve(base, max_registers=c)) for c in cap_list]
    results = compile_many(jobs, max_workers=max_workers)
    rows = []
    unknown = unknown_arch_reason(tgt)
    req = entries[kernel].reqntid
    required = None
    if req:
        required = 1
        for d in req:
            required *= d
    for cap, res in zip(cap_list, results):
        k = res[kernel]
        if unknown is not None:
            rows.append(SweepRow(cap, k.registers, k.spill_stores, k.spill_loads, k.stack_frame,
                                 None, None, (), unknown))
            continue
        occ = occupancy(k.registers, block_size, tgt, shared=k.shared,
                        dynamic_shared=dynamic_shared, barriers=max(k.barriers or 1, 1),
                        max_threads=k.max_threads_per_block, required_threads=required)
        rows.append(SweepRow(cap, k.registers, k.spill_stores, k.spill_loads, k.stack_frame,
                             occ.active_blocks, occ.occupancy, occ.limiting, occ.reason))
    return Sweep(kernel, tgt, block_size, results[0].backend, tuple(rows))


_FUNC = re.compile(r"\.func\s+(?:\([^)]*\)\s*)?([A-Za-z_$%][\w$%]*)")


def _functions(ptx: str) -> list:
    """Names of the ``.func`` functions declared in PTX text, in order, once each."""
    return list(dict.fromkeys(_FUNC.findall(re.sub(r"//[^\n]*", "", ptx))))
