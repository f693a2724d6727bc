"""Liveness of virtual registers and register pressure per instruction.

Definitions (used everywhere in ptxforge, and in ``docs/liveness.md``):

* A register ``r`` is *backward-live* at a point when some path from the point reaches a use
  of ``r`` before an unconditional definition of it.  A guarded definition (``@%p mov ...``)
  does not kill: the old value survives when the guard is false.  An in-place op
  (``add %f1, %f1, %f2``) uses and then defines ``%f1``.
* ``r`` is *maybe-defined* at a point when some path from the kernel entry to the point
  passes a definition of ``r`` (guarded or not).
* ``r`` is **live** at a point when it is both.  Values that compiler PTX defines under a
  predicate and uses later are therefore not live from the kernel entry, and a register that is
  read but never written is never live.
* Points: ``before(i)`` is just before instruction ``i``, ``after(i)`` just after it.
* **Live at instruction i** (``at(i)``) is ``after(i) ∪ defs(i)``: values that survive ``i``
  plus what ``i`` writes (a result that is never read still occupies a register while it is
  written; a source that dies at ``i`` may share its register with the result).  This is the
  quantity the pressure, the peak and the interference graph are built from.
* Pressure is counted per register class (``pred``, ``b16``, ``b32``, ``b64``, ``b128``,
  ``f32``, ``f64``) as a number of values, and in hardware units: general registers are 32-bit
  units (8/16/32-bit values 1, 64-bit 2, ``.b128`` 4); predicates are a separate file.

Storage: a register with one unguarded definition and every read after it in the same block
("simple", most of them) is live from its definition to its last read and is never live at a
block boundary.  Only the others ("complex") enter the block-level work: the fixpoints run on
Python ints used as bitsets over a *complex index* (complex registers numbered in register
order): a block costs a few bitset operations, each over as many machine words as the complex
registers need, and no Python-level step for a register that merely passes through it.  The
per-instruction result is only the number of live values per class before, after and at each
instruction (flat ``array('i')``).  Live sets at a given instruction are materialised on demand
(:meth:`Liveness.live_at`); the per-block bitsets over all registers
(:attr:`Liveness.live_in_bits` and its siblings) are computed on first use.

This module is the public face; the work is split by concept (data flows down the list):

* :mod:`.storage`: int bitsets (:func:`mask_of`, :func:`bits_of`) and the class order;
* :mod:`.operands`: instructions to register indices and per-register facts;
* :mod:`.result`: the :class:`Liveness` result and its queries;
* :mod:`.solver`: :func:`analyze_liveness` (block summaries, fixpoints, sweep);
* :mod:`.blocks`: the block-level dataflow over every register, straight from the
  definitions (the ``*_bits`` attributes, and the reference for the solver).
* :mod:`.dataflow`: the one gen/kill union fixpoint both of those solve with.

Example::

    >>> from ptxforge.ptx import ir, types
    >>> from ptxforge.analysis.liveness import analyze_liveness
    >>> a, b = ir.Register("%rd1", types.u64), ir.Register("%rd2", types.u64)
    >>> body = (ir.Instruction("mov.u64", (a, ir.Immediate(1)), 1),
    ...         ir.Instruction("add.u64", (b, a, a), 1),
    ...         ir.Instruction("st.global.u64", (ir.Address(b), a)),
    ...         ir.Instruction("ret"))
    >>> lv = analyze_liveness(ir.Kernel("k", body=body))
    >>> [lv.general_at(i) for i in range(4)]
    [2, 4, 0, 0]
"""

from __future__ import annotations

from .result import Liveness
from .solver import analyze_liveness
from .storage import CLASS_NAMES, bits_of, mask_of

__all__ = [
    "CLASS_NAMES",
    "Liveness",
    "analyze_liveness",
    "bits_of",
    "mask_of",
]
