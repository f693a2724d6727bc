"""Put a liveness estimate beside what ptxas assigned, with occupancy at both counts.

The estimate is what the code needs (maximum simultaneously live general registers in 32-bit
units, and predicates); ptxas's count is what the kernel gets.  The gap has known systematic
parts; a report notes the ones that apply to the kernel:

* ptxas's count is not the most registers live at once: it is the highest register index
  the SASS uses + 1, plus 2 (measured with ptxas 13 on sm_75 … sm_120 for every corpus
  kernel; :mod:`ptxforge.toolchain.sass` reads both from the SASS), and allocation is in pairs/quads
  for 64/128-bit values, which leaves holes below the highest register;
* predicates live in their own 7-entry file (P0..P6) and never count as registers — unless
  more than 7 are live, when ptxas keeps the excess in general registers;
* constants and kernel parameters are folded into instructions as immediates and constant
  bank operands (c[0x0][…]), so values the PTX holds in registers may need none;
* ptxas rematerialises, schedules for latency and may trade registers for spills under a cap;
* some instructions set a floor: measured with ptxas 13 (nvJitLink 13.5), a kernel with any
  warp-synchronous instruction (shfl.sync, vote.sync, bar.warp.sync, redux.sync, match.sync)
  gets at least 24 registers on sm_75 to sm_89 (a one-shfl kernel: 24 instead of 8; not on
  sm_90+, not with the CUDA 12.9 ptxas), and a kernel that calls a function gets at least 24
  on every target (the call ABI) — its count is the maximum over its call graph, while the
  estimate covers the kernel's own body.  Pass the kernel to :func:`compare_with_ptxas` to have this noted.

Example::

    >>> c = compare_with_ptxas(Estimate(registers=40, predicates=2), stats)   # doctest: +SKIP
    >>> print(c.to_text())                                                           # doctest: +SKIP
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Optional, Union

import attrs

from ptxforge.arch.occupancy import KernelLimits, Occupancy, occupancy, unknown_arch_reason

# every measured constant (the +2, R1, the holes, the floors, the predicate file)
from ptxforge.arch.ptxas_model import (
    CALL_FLOOR,
    FIXED_OVERHEAD,
    HOLES,
    PREDICATE_FILE,
    REGCOUNT_RESERVED,
    WARP_SYNC_FLOOR,
    WARP_SYNC_FLOOR_TARGETS,
)
from ptxforge.arch.spec import LaunchSpec, launch_spec
from ptxforge.arch.targets import target as as_target
from ptxforge.errors import PtxforgeError

if TYPE_CHECKING:  # imported by compare_with_ptxas: analyze --no-compile never loads them
    from ptxforge.toolchain.compile import KernelStats

    from .gap import Gap

__all__ = ["Estimate", "Comparison", "compare_with_ptxas", "EXPLANATIONS", "FIXED_OVERHEAD",
           "register_floor_features"]

#: Opcode prefixes of the warp-synchronous instructions that lift ptxas 13's count to 24 on
#: sm_75..sm_89 (measured; see the module docstring and tests/reports/test_compare.py).
WARP_SYNC_PREFIXES = ("shfl.sync", "vote.sync", "bar.warp.sync", "redux.sync", "match.sync")

EXPLANATIONS = (
    "ptxas's count is the highest physical register index the SASS uses + 1, plus "
    f"{REGCOUNT_RESERVED} (measured with ptxas 13 on sm_75 to sm_120), not the most registers "
    "live at once: 64-bit values take aligned register pairs, leaving holes (`ptxforge sass` "
    "shows the registers live in the SASS).",
    f"Predicates live in their own file ({PREDICATE_FILE} per thread) and are not in ptxas's "
    "register count.",
    "Constants and kernel parameters are folded into instructions (immediates, c[0x0][...] "
    "operands), so values the PTX keeps in registers may cost none.",
    "Under a register cap ptxas trades registers for spills (local memory traffic) and "
    "rematerialisation; spill bytes show the cost.",
)


@attrs.frozen(slots=True, kw_only=True)
class Estimate:
    """A liveness estimate: general registers (32-bit units) and predicates."""

    registers: int = attrs.field(validator=attrs.validators.ge(0))
    predicates: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    source: str = "liveness"

    @classmethod
    def of(cls, value) -> "Estimate":
        """From an Estimate, an int, a (registers, predicates) pair or a liveness/pressure result
        exposing ``registers``/``max_registers``/``max_live`` and ``predicates``/``max_predicates``."""
        if isinstance(value, Estimate):
            return value
        if isinstance(value, int):
            return cls(registers=value)
        if isinstance(value, tuple) and len(value) == 2:
            return cls(registers=int(value[0]), predicates=int(value[1]))
        for reg_key in ("registers", "max_registers", "max_live", "general", "max_general"):
            regs = getattr(value, reg_key, None)
            if isinstance(regs, int):
                preds = 0
                for p_key in ("predicates", "max_predicates", "max_live_predicates"):
                    p = getattr(value, p_key, None)
                    if isinstance(p, int):
                        preds = p
                        break
                return cls(registers=regs, predicates=preds, source=type(value).__name__)
        raise PtxforgeError(f"compare_with_ptxas: cannot read a register estimate from "
                            f"{type(value).__name__}; expected an int, (registers, predicates) "
                            "or an object with .registers and .predicates")


@attrs.frozen(slots=True, kw_only=True)
class Comparison:
    """Estimate vs ptxas for one kernel."""

    kernel: str
    target: str
    block_size: int
    estimate: Estimate
    stats: KernelStats
    occupancy_estimate: Optional[Occupancy]   # None: the occupancy table lacks the target
    occupancy_ptxas: Optional[Occupancy]
    features: tuple = ()  # "warp-sync" and/or "call", from the kernel when it was given
    gap: Optional[Gap] = None  # the gap's reasons from the SASS

    @property
    def difference(self) -> int:
        return self.stats.registers - self.estimate.registers

    @property
    def ratio(self) -> Optional[float]:
        return None if self.estimate.registers == 0 else self.stats.registers / self.estimate.registers

    def _floor_note(self) -> str:
        """The note for a register floor that explains the gap, or ""."""
        if "call" in self.features and self.stats.registers > self.estimate.registers:
            return ("The kernel calls functions: its register count is the maximum over its "
                    f"call graph (at least {CALL_FLOOR} on every target, for the call ABI), "
                    "while the estimate covers this kernel's own body; analyse the callees too.")
        if not self.estimate.registers < WARP_SYNC_FLOOR <= self.stats.registers:
            return ""
        if "warp-sync" in self.features and as_target(self.target).base in WARP_SYNC_FLOOR_TARGETS:
            return (f"The kernel uses warp-synchronous instructions: ptxas 13 gives such "
                    f"kernels at least {WARP_SYNC_FLOOR} registers on {self.target} (sm_75 "
                    f"to sm_89; a one-shfl kernel gets {WARP_SYNC_FLOOR} instead of 8), so the "
                    "gap is that floor: ptxas puts its __cuda_sm70_* helper functions "
                    f"({WARP_SYNC_FLOOR} registers, the call ABI) in the kernel's call graph "
                    "even where the instruction is inlined.")
        return ""

    def _spill_note(self) -> str:
        """Spill bytes, split into the kernel's own and its callees' where they differ."""
        s = self.stats
        text = (f"ptxas spilled: {s.spill_stores} bytes stored, {s.spill_loads} bytes loaded "
                "per thread")
        st, ld = s.body_spill_stores, s.body_spill_loads
        if st is not None and ld is not None and (st, ld) != (s.spill_stores, s.spill_loads):
            text += (f" in the kernel and the functions it calls ({st}/{ld} in its own "
                     f"body, {s.spill_stores - st}/{s.spill_loads - ld} in its callees)")
        return text + "; the estimate assumes no spilling."

    def _local_note(self) -> str:
        """Local arrays as a part of the kernel's own frame (the stack adds callees')."""
        s = self.stats
        own = s.stack_frame if s.body_stack_frame is None else s.body_stack_frame
        if own < s.local_array_bytes:
            text = (f"The PTX declares {s.local_array_bytes} bytes of local arrays, but the "
                    f"kernel's own frame is {own} bytes: ptxas kept the rest out of it (in "
                    "registers, or optimised away).")
        elif own == s.stack_frame:
            return (f"{s.local_array_bytes} bytes of the {own}-byte stack frame are local "
                    "arrays declared in the PTX, not spills.")
        else:
            text = (f"{s.local_array_bytes} bytes of the kernel's own {own}-byte frame are "
                    "local arrays declared in the PTX, not spills.")
        if own != s.stack_frame:
            text += (f" The stack it needs is {'' if s.stack_known else 'at least '}"
                     f"{s.stack_frame} bytes with the frames of the functions it calls.")
        return text

    def general_notes(self) -> tuple:
        """The general reasons (:data:`EXPLANATIONS`) that apply to this kernel: the count's
        definition always; predicates when the kernel has any; constant folding; the cap
        when ptxas compiled under one."""
        s = self.stats
        out = [EXPLANATIONS[0]]
        if self.estimate.predicates:
            out.append(EXPLANATIONS[1])
        out.append(EXPLANATIONS[2])
        if s.register_cap is not None:
            out.append(EXPLANATIONS[3])
        return tuple(out)

    def notes(self, general: bool = True) -> tuple:
        """Why ptxas's count differs: the general reasons that apply (``general=True``) and
        this kernel's own (cap, spills, local arrays, scheduling or the fixed overhead,
        floors, predicates, occupancy)."""
        out = list(self.general_notes()) if general else []
        s = self.stats
        if s.register_cap is not None and s.registers >= s.register_cap:
            out.append(f"The register cap ({s.register_cap}) binds: ptxas used all of it.")
        if s.spills:
            out.append(self._spill_note())
        if s.local_array_bytes:
            out.append(self._local_note())
        if not s.stack_known:
            out.append(f"The stack ({s.stack_frame} bytes) is a lower bound: the call graph "
                       "recurses, so ptxas cannot determine it statically (each recursive "
                       "function counted once); size the stack for the deepest recursion.")
        if self.gap is not None and self.gap.total == self.difference:
            # measured from the SASS (reports.gap): these replace the guesses below
            # net effects in plain words first, then the signed components they net
            out.append(f"In effect: {self.gap.headline()}.")
            out += [f"In effect: {e.text}." for e in self.gap.effects()]
            out += [f"From the SASS: {n}" for n in self.gap.notes()]
            floor = "sass"
        else:
            floor = self._floor_note()
            if floor:
                out.append(floor)
        beyond = self.difference - FIXED_OVERHEAD
        if (not s.spills and not floor and self.ratio is not None and self.ratio >= 1.5
                and beyond >= HOLES and beyond >= self.estimate.registers / 2):
            out.append(f"ptxas uses {self.ratio:.1f}x the estimate. The estimate follows the PTX "
                       "instruction order; ptxas schedules loads early (and unrolls loops) to "
                       "hide latency, which keeps more values live at once. Put loads next to "
                       "their uses, or cap registers (see the sweep) to trade that back.")
        elif not floor and 0 < self.difference and beyond < HOLES and not s.spills:
            out.append(f"The gap ({self.difference:+d}) is ptxas's fixed overhead, not "
                       f"pressure: its count is the highest register the SASS uses + 1, plus "
                       f"{REGCOUNT_RESERVED}, and R1 (the stack pointer) is live throughout, "
                       f"which the PTX has no value for ({FIXED_OVERHEAD} in all); 64-bit "
                       "values in aligned pairs leave the rest as holes (docs/sass.md).")
        if self.estimate.predicates > PREDICATE_FILE:
            out.append(f"{self.estimate.predicates} live predicates exceed the "
                       f"{PREDICATE_FILE} predicate registers: the excess costs general "
                       "registers.")
        oe, op = self.occupancy_estimate, self.occupancy_ptxas
        if oe is not None and op is not None and oe.active_blocks != op.active_blocks:
            out.append(f"The gap changes occupancy: {oe.active_blocks} blocks/SM "
                       f"at the estimate, {op.active_blocks} at ptxas's count.")
        return tuple(out)

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel, "target": self.target, "block_size": self.block_size,
            "estimate": {"registers": self.estimate.registers,
                         "predicates": self.estimate.predicates, "source": self.estimate.source},
            "ptxas": {"registers": self.stats.registers, "spill_stores": self.stats.spill_stores,
                      "spill_loads": self.stats.spill_loads, "stack_frame": self.stats.stack_frame,
                      "body_stack_frame": self.stats.body_stack_frame,
                      "stack_known": self.stats.stack_known,
                      "local_array_bytes": self.stats.local_array_bytes,
                      "register_cap": self.stats.register_cap, "backend": self.stats.backend},
            "difference": self.difference,
            "ratio": None if self.ratio is None else round(self.ratio, 6),
            "occupancy": {"estimate": _occ_dict(self.occupancy_estimate),
                          "ptxas": _occ_dict(self.occupancy_ptxas)},
            "notes": list(self.notes()),
        }

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)

    def to_text(self) -> str:
        oe, op = self.occupancy_estimate, self.occupancy_ptxas
        ratio = "n/a" if self.ratio is None else f"{self.ratio:.2f}x"
        s = self.stats

        def occ(o, limiter: bool = False) -> str:
            if o is None:
                return "occupancy n/a"
            return (f"{o.active_blocks} blocks/SM, {o.occupancy * 100:.1f}% occupancy"
                    + (f" (limited by {', '.join(o.limiting)})" if limiter else ""))
        lines = [
            f"{self.kernel} on {self.target} ({s.backend}), {self.block_size} threads/block",
            f"  estimate : {self.estimate.registers:4d} registers, {self.estimate.predicates} predicates"
            f"  -> {occ(oe)}",
            f"  ptxas    : {s.registers:4d} registers"
            + (f" (cap {s.register_cap})" if s.register_cap else "")
            + f"  -> {occ(op, True)}",
            f"  gap      : {self.difference:+d} registers ({ratio})",
            f"  spills   : {s.spill_stores} B stored, {s.spill_loads} B loaded; stack "
            f"{'' if s.stack_known else '>='}{s.stack_frame} B"
            + (f" (own frame {s.body_stack_frame} B, {s.local_array_bytes} B local arrays)"
               if s.body_stack_frame is not None and s.body_stack_frame != s.stack_frame
               else f" ({s.local_array_bytes} B local arrays)"),
            "  notes:",
        ]
        lines += [f"    - {n}" for n in self.notes()]
        return "\n".join(lines)


def _occ_dict(o: Optional[Occupancy]) -> Optional[dict]:
    """An occupancy as a dict with the library's keys and the CLI's (``blocks_per_sm``,
    ``limiter``) side by side; None when unknown."""
    if o is None:
        return None
    d = o.to_dict()
    d["blocks_per_sm"] = d["active_blocks"]
    d["limiter"] = d["limiting"][0] if d["limiting"] else None
    return d


def register_floor_features(kernel) -> tuple:
    """Which of the instructions that set a ptxas register floor ``kernel`` (an
    :class:`~ptxforge.ptx.ir.Kernel`) uses: ``("call",)``, ``("warp-sync",)``, both, or ()."""
    found = set()
    for inst in kernel.instructions:
        if inst.family == "call":
            found.add("call")
        elif inst.opcode.startswith(WARP_SYNC_PREFIXES):
            found.add("warp-sync")
    return tuple(sorted(found))


def compare_with_ptxas(estimate, stats: KernelStats,
                       spec: Union[LaunchSpec, str, int, None] = None, *, kernel=None,
                       gap=None) -> Comparison:
    """Compare a liveness estimate with ptxas's stats for the same kernel.

    ``spec`` is the launch (a :class:`~ptxforge.arch.spec.LaunchSpec`, or a target name):
    its target defaults to the one ``stats`` was compiled for, its block to 256 threads.
    ``kernel`` (the :class:`~ptxforge.ptx.ir.Kernel`) is optional; given, the notes also explain
    the register floors some instructions set (calls, warp-synchronous instructions).
    ``gap`` (a :class:`~ptxforge.reports.gap.Gap` from ``sass_report``) makes the notes the
    gap's reasons measured on the SASS instead of those guessed from the PTX.
    """
    from ptxforge.toolchain.compile import Compiled, KernelStats

    if isinstance(stats, Compiled):
        raise PtxforgeError(f"compare_with_ptxas: expected one kernel's KernelStats, got a Compiled with "
                            f"kernels {[k.name for k in stats.kernels]}; pick one with "
                            f"compiled[name], e.g. compiled[{stats.kernels[0].name!r}]"
                            if stats.kernels else
                            "compare_with_ptxas: expected one kernel's KernelStats, got a Compiled with "
                            "no kernels")
    if not isinstance(stats, KernelStats):
        raise PtxforgeError(f"compare_with_ptxas: expected a KernelStats (compiled[name]), got "
                            f"{type(stats).__name__}")
    est = Estimate.of(estimate)
    spec = launch_spec(spec)
    tgt = stats.target if spec.target is None else spec.target
    block_size = 256 if spec.block is None else spec.block

    def occupancy_at(registers: int) -> Occupancy:
        return occupancy(registers, block_size, tgt, shared=stats.shared,
                         dynamic_shared=spec.dynamic_shared,
                         barriers=max(stats.barriers or 1, 1),
                         kernel_limits=KernelLimits(max_threads=stats.max_threads_per_block))

    known = unknown_arch_reason(tgt) is None
    return Comparison(
        kernel=stats.name, target=tgt, block_size=block_size, estimate=est, stats=stats,
        occupancy_estimate=occupancy_at(min(est.registers, 255)) if known else None,
        occupancy_ptxas=occupancy_at(stats.registers) if known else None,
        features=register_floor_features(kernel) if kernel is not None else (), gap=gap)
