"""Predict the register count ptxas (whole-program) will report, from the PTX alone.

The prediction models what ptxas does to the PTX as a few named rules, each a component of
the count (docs/prediction.md):

* :mod:`.view`: the values that need no register in SASS (parameters, immediates,
  ``cvta.to.global``, copies, constant address offsets);
* :mod:`.schedule`: loads issued early to hide their latency (under the occupancy budget);
* :mod:`.abi`: the calling convention and the predicate file;
* :mod:`.model`: the occupancy budget, the fixed overhead, the allocation holes, the
  register limit, the sum and its band.

Example::

    >>> from ptxforge.dsl import kernels
    >>> from ptxforge.analysis.prediction import predict_registers
    >>> p = predict_registers(kernels.saxpy().kernels[0])
    >>> [c.name for c in p.components][:3]
    ['ptx live', 'no-register values', 'load scheduling']
"""

from __future__ import annotations

from .abi import CALL_FLOOR, call_targets, has_call
from .model import (
    BAND,
    FIXED_OVERHEAD,
    HOLES,
    MODEL,
    REGISTER_LIMIT,
    Component,
    Prediction,
    occupancy_budget,
    predict_registers,
)
from .schedule import hoist_loads
from .view import SassView, sass_view

__all__ = ["BAND", "CALL_FLOOR", "FIXED_OVERHEAD", "HOLES", "MODEL", "REGISTER_LIMIT",
           "Component", "Prediction", "SassView", "call_targets", "has_call", "hoist_loads",
           "occupancy_budget", "predict_registers", "sass_view"]
