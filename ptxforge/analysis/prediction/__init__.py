"""Predict the register count ptxas (whole-program) will report, from the PTX alone.

The prediction models what ptxas does to the PTX as a few named rules, each a component of
the count (docs/prediction.md):

* :mod:`.view`: the values that need no register in SASS (parameters, immediates,
  ``cvta.to.global``, copies, constant address offsets);
* :mod:`.ifconvert`: short guarded branches predicated, as ptxas does;
* :mod:`.listsched`: each basic block list scheduled, for latency under the occupancy budget
  and for pressure above it;
* :mod:`.bottomup`: each basic block scheduled bottom-up for pressure (does an order near
  the budget exist?);
* :mod:`.abi`: the calling convention and the predicate file;
* :mod:`.model`: the occupancy budget, the fixed overhead, the allocation holes, the
  register limit, the sum and its band.

Example::

    >>> from ptxforge.dsl import kernels
    >>> from ptxforge.analysis.prediction import predict_registers
    >>> p = predict_registers(kernels.saxpy().kernels[0])
    >>> [c.name for c in p.components][:3]
    ['ptx live', 'no-register values', 'scheduling']
"""

from __future__ import annotations

from .abi import CALL_FLOOR, call_targets, has_call
from .bottomup import bottom_up_peak
from .ifconvert import MAX_BODY, if_convert
from .listsched import list_schedule
from .model import (
    BAND,
    DEEP_BAND,
    FIXED_OVERHEAD,
    HOLES,
    LONG_BLOCK,
    MODEL,
    REGISTER_LIMIT,
    SQUEEZE_SLACK,
    Component,
    Prediction,
    kernel_budget,
    occupancy_budget,
    out_of_depth,
    predict_registers,
)
from .view import SassView, sass_view

__all__ = ["BAND", "CALL_FLOOR", "DEEP_BAND", "FIXED_OVERHEAD", "HOLES", "LONG_BLOCK",
           "MAX_BODY", "MODEL", "REGISTER_LIMIT", "SQUEEZE_SLACK", "Component", "Prediction",
           "SassView", "bottom_up_peak", "call_targets", "has_call", "if_convert",
           "kernel_budget", "list_schedule", "occupancy_budget", "out_of_depth",
           "predict_registers", "sass_view"]
