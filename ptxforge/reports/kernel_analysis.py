"""One kernel's analysis, what ``ptxforge analyze`` reports per kernel: :class:`KernelAnalysis`.

Made by :mod:`ptxforge.reports.analyze` (which re-exports it); its PTX part (mix, pressure,
prediction) is a :class:`~ptxforge.reports.kernel_pool.KernelPart` whose pieces are computed
when first read unless the analysis computed them up front, and the cubin's constant bank and
the SASS gap are read when first asked for.  :func:`occupancy_fields` gives the JSON occupancy
keys every command shares.

Example::

    >>> from ptxforge.reports.analyze import analyze_ptx
    >>> k = analyze_ptx(".version 8.0\\n.target sm_80\\n.address_size 64\\n"
    ...                 ".visible .entry k() { ret; }", compile=False).kernels[0]
    >>> k.name, k.estimate.registers, k.occupancy_basis
    ('k', 0, 'estimate')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Optional

import attrs

from ptxforge.arch.occupancy import Occupancy, RegisterCliffs
from ptxforge.arch.spec import LaunchSpec
from ptxforge.ptx import ir
from ptxforge.ptx.demangle import full_name

from .analyze_text import render_kernel
from .estimate import Comparison, Estimate, compare_with_ptxas
from .kernel_pool import KernelPart
from .peak import peak_groups
from .resources import ptxas_fields, register_limit

if TYPE_CHECKING:  # the analyses are imported when a kernel's part is computed
    from ptxforge.analysis.mix import InstructionMix
    from ptxforge.analysis.prediction import Prediction
    from ptxforge.analysis.pressure import PressureReport
    from ptxforge.toolchain.compile import KernelStats

    from .analyze_compile import SassGaps
    from .gap import Gap

__all__ = ["KernelAnalysis", "occupancy_fields"]


def occupancy_fields(occ: Occupancy) -> dict:
    """The JSON occupancy keys shared by every command (``blocks_per_sm``, ``occupancy``, …)."""
    return {"registers": occ.registers, "block_size": occ.block_size,
            "shared": occ.shared_per_block, "blocks_per_sm": occ.active_blocks,
            "occupancy": round(occ.occupancy, 6),
            "limiter": occ.limiting[0] if occ.limiting else None,
            "limiters": list(occ.limiting), "active_warps": occ.active_warps,
            "max_warps": occ.max_warps, "launchable": occ.launchable, "reason": occ.reason}


@attrs.frozen(slots=True, kw_only=True)
class KernelAnalysis:
    """Everything ``ptxforge analyze`` reports for one kernel (or ``.func``).

    ``occupancy`` is at ptxas's register count when the module was compiled and at the
    estimate otherwise (at most the register limit: above it ptxas spills); ``occupancy_
    estimate`` is always at the estimate; ``cliffs`` are the register cliffs around the count
    ``occupancy`` uses.  All three are None when the occupancy table lacks the architecture
    or the function is a ``.func`` (``occupancy_note`` says why); a block size the kernel's
    ``.reqntid``/``.maxntid`` (or ptxas) forbids gives 0 blocks with a ``reason``.
    ``block_source`` says where ``block_size`` came from (``"given"``, ``".reqntid"``,
    ``".maxntid"``, ``"default"``); ``stats_note`` why a compiled ``.func`` has no stats.
    ``part`` (:class:`~ptxforge.reports.kernel_pool.KernelPart`) holds ``mix``, ``pressure``
    and ``prediction``, each computed when first read unless the analysis computed it up
    front (:class:`~ptxforge.reports.run_options.RunOptions` ``parts``); ``occupancy_at``
    gives the occupancy of this launch at any register count.
    """

    name: str
    is_entry: bool
    arch: str
    block_size: int
    part: KernelPart = attrs.field(eq=False, repr=False)   # mix, pressure, prediction
    stats: Optional[KernelStats]
    occupancy: Optional[Occupancy]
    cliffs: Optional[RegisterCliffs]
    kernel: Optional[ir.Kernel] = attrs.field(default=None, eq=False, repr=False)
    occupancy_note: Optional[str] = None   # why occupancy is unknown (None: it is known)
    block_source: str = "given"
    dynamic_shared: int = 0
    local_bytes: int = 0                   # .local arrays declared in the PTX
    #: ``(cmem[0], parameter bytes)`` of the kernel from the cubin, read when first asked
    cubin_bank: Optional[Callable] = attrs.field(default=None, eq=False, repr=False)
    stats_note: Optional[str] = None
    callers: tuple = ()                    # for a .func: the functions that call it
    mode_note: Optional[str] = None        # relocatable vs whole-program (toolchain.modes)
    #: occupancy at a register count (None: unknown, as ``occupancy``)
    occupancy_at: Optional[Callable] = attrs.field(default=None, eq=False, repr=False)
    #: the SASS explanations, computed when :attr:`gap` is first read (entries compiled)
    sass: Optional[SassGaps] = attrs.field(default=None, eq=False, repr=False)

    @property
    def mix(self) -> InstructionMix:
        """The instruction mix (computed when first read, unless computed up front)."""
        return self.part.mix

    @property
    def pressure(self) -> PressureReport:
        """Liveness and register pressure (computed when first read, unless up front)."""
        return self.part.pressure

    @property
    def prediction(self) -> Optional[Prediction]:
        """ptxas's count predicted from the PTX (computed when first read, unless up front)."""
        return self.part.prediction

    @property
    def constant_bank0(self) -> Optional[int]:
        """ptxas's cmem[0] in bytes (its log, else the cubin); None when not compiled."""
        cb0 = getattr(self.stats, "constant_bank0", None) if self.stats is not None else None
        if cb0 is None and self.cubin_bank is not None:
            cb0 = self.cubin_bank()[0] or None
        return cb0

    @property
    def param_bytes(self) -> Optional[int]:
        """Of :attr:`constant_bank0`, the kernel's parameters (the cubin); None unknown."""
        return None if self.cubin_bank is None else self.cubin_bank()[1]

    @property
    def occupancy_estimate(self) -> Optional[Occupancy]:
        """Occupancy at the estimate (at most the register limit); None as ``occupancy``."""
        if self.occupancy_at is None:
            return None
        if self.stats is None:
            return self.occupancy
        return self.occupancy_at(min(self.pressure.peak.units, self.register_limit))

    @property
    def gap(self) -> Optional[Gap]:
        """REGCOUNT − estimate explained from the SASS (None: not compiled, not an entry,
        or the SASS could not be read); computed on first use."""
        return None if self.sass is None else self.sass.gap(self.name)

    @property
    def gap_note(self) -> Optional[str]:
        """Why the notes are the PTX's guesses (the SASS could not be read), or None."""
        return None if self.sass is None else self.sass.note(self.name)

    @property
    def estimate(self) -> Estimate:
        """Peak general registers (32-bit units) and peak predicates from liveness."""
        return Estimate(registers=self.pressure.peak.units,
                        predicates=self.pressure.pred_peak.units)

    @property
    def demangled(self) -> str:
        """The kernel's C++ name (the name itself when it is not mangled)."""
        return full_name(self.name)

    @property
    def register_limit(self) -> int:
        """The most registers a thread can have on the target (255)."""
        return register_limit(self.arch)

    @property
    def over_limit(self) -> int:
        """How many registers the estimate needs beyond :attr:`register_limit` (0: none)."""
        return max(self.estimate.registers - self.register_limit, 0)

    @property
    def comparison(self) -> Optional[Comparison]:
        """Estimate vs ptxas (with its explanatory notes); None when ptxas was not run."""
        if self.stats is None:
            return None
        spec = LaunchSpec(target=self.arch, block=self.block_size,
                          dynamic_shared=self.dynamic_shared)
        c = compare_with_ptxas(self.estimate, self.stats, spec, kernel=self.kernel, gap=self.gap)
        if not self.is_entry:  # a .func is not launched: no occupancy to compare
            c = attrs.evolve(c, occupancy_estimate=None, occupancy_ptxas=None)
        return c

    @property
    def occupancy_basis(self) -> str:
        """``"ptxas"`` or ``"estimate"``: which register count ``occupancy`` uses."""
        return "estimate" if self.stats is None else "ptxas"

    def notes(self) -> tuple:
        """This kernel's own notes: an estimate above the register limit, and (compiled) why
        ptxas's count differs from the estimate."""
        out = []
        if self.over_limit:
            est, lim, s = self.estimate.registers, self.register_limit, self.stats
            text = (f"The estimate needs {est} registers, {self.over_limit} more than the {lim} "
                    f"a thread can have on {self.arch}: as written, the PTX keeps more values "
                    "live than a thread can hold, so ptxas must reorder the code (shortening "
                    f"live ranges) or spill at least {self.over_limit} registers' worth of "
                    f"values; occupancy at the estimate is taken at {lim}.")
            if s is not None:
                text += (f" ptxas spilled {s.spill_stores} bytes (stores) with {s.registers} "
                         "registers." if s.spills else
                         f" ptxas reordered: {s.registers} registers, no spills.")
            out.append(text)
        if self.comparison is not None:
            out += self.comparison.notes(general=False)
        if self.gap_note:
            out.append(self.gap_note)
        if self.mode_note:
            out.append(self.mode_note)
        return tuple(out)

    def to_dict(self, top: int = 10) -> dict:
        """JSON-ready dict (keys in the module docstring); ``top`` caps the listed values,
        source lines, functions and call sites (0: all)."""
        cut = (lambda xs: list(xs)) if top <= 0 else (lambda xs: list(xs)[:top])
        p, s, lim = self.pressure.peak, self.stats, self.register_limit
        mix = self.mix.to_dict()
        ptxas = ptxas_fields(s, lim, self.constant_bank0, self.param_bytes)
        oe, c = self.occupancy_estimate, self.cliffs
        common = {"basis": self.occupancy_basis, "register_limit": lim,
                  "block_source": self.block_source, "dynamic_shared": self.dynamic_shared}
        if self.occupancy is None:
            est = min(p.units, lim)
            occ = {**common, "registers": s.registers if s else est,
                   "block_size": self.block_size, "shared": None, "blocks_per_sm": None,
                   "occupancy": None, "limiter": None, "limiters": [], "active_warps": None,
                   "max_warps": None, "launchable": None, "reason": self.occupancy_note,
                   "to_gain": None, "next_blocks": None, "headroom": None,
                   "estimate": {"registers": est, "blocks_per_sm": None, "occupancy": None,
                                "limiter": None}}
        else:
            assert oe is not None and c is not None   # known with the occupancy
            occ = {**common, **occupancy_fields(self.occupancy),
                   "to_gain": c.to_gain, "next_blocks": c.next_blocks, "headroom": c.headroom,
                   "estimate": {"registers": oe.registers, "blocks_per_sm": oe.active_blocks,
                                "occupancy": round(oe.occupancy, 6),
                                "limiter": oe.limiting[0] if oe.limiting else None}}
        return {
            "name": self.name,
            "demangled": self.demangled,
            "entry": self.is_entry,
            "instructions": self.mix.instructions,
            "vregs": mix["vregs"],
            "declared": mix["declared"],
            "mix": {k: mix[k] for k in ("by_family", "by_opcode", "groups", "selp")},
            "estimate": {"registers": p.units, "predicates": self.pressure.pred_peak.units,
                         "utilization": round(p.units / lim, 6), "over_limit": self.over_limit,
                         "local_array_bytes": self.local_bytes,
                         "peak_index": p.index, "peak_instruction": p.instruction,
                         "peak_count": len(p.indices), "by_class": dict(p.by_class),
                         "values_total": len(p.values),
                         "values": [v.to_dict() for v in cut(p.values)],
                         "by_source": [g.to_dict() for g in cut(p.by_source)],
                         "by_function": [g.to_dict() for g in cut(self.groups("function"))],
                         "by_callsite": [g.to_dict() for g in cut(self.groups("callsite"))]},
            "prediction": None if self.prediction is None else self.prediction.to_dict(),
            "ptxas": ptxas,
            "occupancy": occ,
            "gap": None if self.gap is None else [
                {"reason": r.reason, "registers": r.registers} for r in self.gap.reasons],
            "gap_effects": None if self.gap is None else [e.to_dict() for e in self.gap.effects()],
            "notes": list(self.notes()),
        }

    def groups(self, by: str = "line") -> tuple:
        """The values live at the peak grouped by ``"line"``, ``"function"`` or
        ``"callsite"`` (:mod:`ptxforge.reports.peak`)."""
        return peak_groups(self.kernel, self.pressure.peak, by)

    def to_text(self, top: int = 10, by: str = "line") -> str:
        """The kernel's section of the ``analyze`` text report."""
        return render_kernel(self, top, by)
