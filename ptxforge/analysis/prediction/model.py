"""The prediction: ptxas's register count from the PTX, as named components that add up.

``registers`` is the sum of the components, in this order:

1. ``ptx live``: the PTX live count (the most 32-bit units live at once, the estimate);
2. ``no-register values``: minus what SASS keeps out of registers (parameters read from the
   constant bank, immediates, ``cvta.to.global``, copies, constant address offsets, special
   registers read again; :mod:`.view`);
3. ``load scheduling``: plus what issuing loads early adds (:mod:`.schedule`);
4. ``predicate overflow``: plus the predicates beyond the 7-entry predicate file (:mod:`.abi`);
5. ``fixed overhead``: plus 3: ptxas's count is the highest register used + 1 + 2, and R1
   (the stack pointer) is live throughout;
6. ``allocation holes``: plus :data:`HOLES`: 64-bit values take even-aligned pairs and
   128-bit values aligned quads, and the allocator does not pack the lowest registers
   (measured: highest register + 1 minus the SASS peak, median over the training split);
7. ``call ABI``: a kernel that calls a function gets at least :data:`~.abi.CALL_FLOOR`.

``low`` and ``high`` bound the count with the 10th and 90th percentiles of ptxas / prediction
on the training split (:data:`BAND`).  The constants were chosen on the training split only;
``bench/bench_estimate_accuracy.py`` reports the validation split (docs/prediction.md).

Example::

    >>> from ptxforge.dsl import kernels
    >>> p = predict_registers(kernels.saxpy().kernels[0])
    >>> p.registers == sum(c.registers for c in p.components), p.low <= p.registers <= p.high
    (True, True)
"""

from __future__ import annotations

import math
from typing import Optional

import attrs

from ptxforge.ptx import ir

from ..liveness import analyze_liveness
from .abi import CALL_FLOOR, call_targets
from .schedule import WINDOW, hoist_loads
from .view import sass_view

__all__ = ["MODEL", "FIXED_OVERHEAD", "HOLES", "BAND", "Component", "Prediction",
           "predict_registers"]

#: The model's version: bump it whenever a rule or a constant changes.
MODEL = "ptxforge-predict/1 (whole-program ptxas 13.5, sm_80)"
#: R1 (the stack pointer) + the 2 ptxas's count adds above the highest register used.
FIXED_OVERHEAD = 3
#: Alignment and allocation holes below the highest register (median on the training split).
HOLES = 4
#: (low, high) ratios of ptxas / prediction: 10th and 90th percentiles on the training split.
BAND = (0.77, 1.15)
_KIND_WORDS = {"parameter": "parameters read from the constant bank",
               "immediate": "immediates and variable addresses",
               "special": "special registers read again",
               "alias": "cvta.to.global and copies",
               "offset": "constant address offsets"}


@attrs.frozen(slots=True)
class Component:
    """One named part of a prediction: registers it adds (negative: takes away) and why."""

    name: str
    registers: int
    detail: str

    def to_dict(self) -> dict:
        return {"name": self.name, "registers": self.registers, "detail": self.detail}


@attrs.frozen(slots=True)
class Prediction:
    """The register count ptxas is predicted to report, its band, and what it is made of."""

    registers: int
    low: int
    high: int
    components: tuple
    model: str = MODEL

    def component(self, name: str) -> Component:
        """The component called ``name`` (KeyError when the prediction has none)."""
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> dict:
        return {"registers": self.registers, "low": self.low, "high": self.high,
                "components": [c.to_dict() for c in self.components], "model": self.model}

    def summary(self) -> str:
        """``"31 (25-39) = 32 live - 12 no-register values + ..."`` on one line."""
        parts = []
        for k, c in enumerate(self.components):
            if k == 0:
                parts.append(f"{c.registers} {c.name}")
            elif c.registers:
                parts.append(f"{'+' if c.registers > 0 else '-'} {abs(c.registers)} {c.name}")
        return f"{self.registers} ({self.low}-{self.high}) = " + " ".join(parts)


def _peak(kernel: ir.Kernel) -> tuple[int, int]:
    """(general units, predicates): the most live at once."""
    lv = analyze_liveness(kernel)
    g = lv.series("at")
    p = lv.series("at", "pred")
    return (max(g) if g else 0), (max(p) if p else 0)


def predict_registers(kernel: ir.Kernel, *, live_units: Optional[int] = None,
                      window: int = WINDOW, holes: int = HOLES) -> Prediction:
    """Predict ptxas's (whole-program) register count for ``kernel`` from its PTX alone.

    ``live_units`` is the PTX live count when the caller has it (the pressure report's
    ``peak.units``); it is computed otherwise.
    """
    if live_units is None:
        live_units = _peak(kernel)[0]
    view = sass_view(kernel)
    folded, _ = _peak(view.kernel)
    scheduled_kernel, moved = hoist_loads(view.kernel, window)
    scheduled, preds = _peak(scheduled_kernel)
    kinds = ", ".join(f"{n} {_KIND_WORDS[k]}" for k, n in sorted(view.folded.items()))
    comps = [
        Component("ptx live", live_units, "most 32-bit units live at once in the PTX order"),
        Component("no-register values", folded - live_units,
                  f"values SASS keeps out of registers ({kinds or 'none'})"),
        Component("load scheduling", scheduled - folded,
                  f"{moved} load{'s' if moved != 1 else ''} issued early, "
                  "each live from its issue to its last use"),
    ]
    comps += [
        Component("fixed overhead", FIXED_OVERHEAD,
                  "R1 (the stack pointer) and the 2 the count adds above the highest register"),
        Component("allocation holes", holes,
                  "64-bit values in even-aligned pairs, 128-bit in aligned quads, unpacked "
                  "low registers (training-split median)"),
    ]
    total = sum(c.registers for c in comps)
    callees = call_targets(kernel)
    if callees:
        lift = max(0, CALL_FLOOR - total)
        more = ", ..." if len(callees) > 3 else ""
        comps.append(Component("call ABI", lift,
                               f"calls {', '.join(callees[:3])}{more}: the calling "
                               f"convention gives at least {CALL_FLOOR}"))
        total += lift
    low = max(1, math.floor(total * BAND[0]))
    high = max(total, math.ceil(total * BAND[1]))
    return Prediction(total, min(low, total), high, tuple(comps))
