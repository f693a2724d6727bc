"""Every measured ptxas register constant, once, next to the measurement it came from.

ptxas's register count (REGCOUNT, what a kernel launches with) is not the most values live at
once; these numbers are the systematic parts of the difference, measured by compiling the test
corpus and reading the SASS back (``docs/sass.md``, ``docs/prediction.md``).  The estimate notes
(``reports.estimate``), the gap split (``reports.gap``), the SASS report (``reports.sass``), the
prediction (``analysis.prediction``) and the register caps (``toolchain.regcap``) all read them
here.  It lives in ``arch/`` because every one of those wings may import ``arch`` (``analysis``
may not import ``toolchain`` or ``reports``), and because these are facts about what ptxas does
on the targets of the registry, not about any one analysis.

Example::

    >>> FIXED_OVERHEAD == STACK_POINTER + REGCOUNT_RESERVED
    True
    >>> regcount_from_spans(own=30, subroutines=0, callees=24)
    32
"""

from __future__ import annotations

__all__ = [
    "REGCOUNT_RESERVED",
    "STACK_POINTER",
    "FIXED_OVERHEAD",
    "HOLES",
    "SMALL_PEAK",
    "SMALL_HOLES",
    "CALL_FLOOR",
    "DIVISION_SLOW_PATH",
    "DIVISOR_TEMPORARIES",
    "DIVISION_TEMPORARIES",
    "UNROLL",
    "UNROLL_BODY",
    "WARP_SYNC_FLOOR",
    "WARP_SYNC_FLOOR_TARGETS",
    "PREDICATE_FILE",
    "REGISTER_LIMIT",
    "regcount_from_spans",
]

#: Registers REGCOUNT carries above the highest GPR index + 1 of a kernel's own code.
#: Measured with ptxas 13 (nvJitLink 13.5) and nvdisasm 13.5 on sm_75 … sm_120, every corpus
#: kernel, whole-program and relocatable: REGCOUNT = highest GPR used + 1 + 2; the code of a
#: subroutine ptxas compiled into the kernel gets no +2 (docs/sass.md).
REGCOUNT_RESERVED = 2

#: R1, the stack pointer: live throughout every kernel's SASS, with no PTX value behind it.
STACK_POINTER = 1

#: What ptxas's count carries beyond the values live at once, whatever the kernel: R1 plus the
#: +2 above the highest register used (so a kernel with 5 values live gets at least 8).
FIXED_OVERHEAD = STACK_POINTER + REGCOUNT_RESERVED

#: Alignment and allocation holes below the highest register: 64-bit values take even-aligned
#: pairs (128-bit ones quads).  The median on the prediction's training split; a gap within
#: FIXED_OVERHEAD + HOLES is overhead, not pressure (the estimate notes).
HOLES = 4

#: Small kernels pack tightly: where the predicted SASS peak (R1 not counted) is at most
#: SMALL_PEAK units, the holes are SMALL_HOLES, not HOLES.  nvdisasm 13.5 on ptxas 13.5's sm_80
#: code of ``fam::copy_n<float>`` (tests/corpus/families/small_kernels.cu): SASS peak 5 with R1,
#: span 6 (R0..R5, one hole), REGCOUNT 8; the training split of the family corpus (issue 29):
#: 2 below a peak of 8 raised within +-10% from 54.0% to 56.3% (1 or 3 there, or 3 up to 11:
#: 54.9% to 56.3%).
SMALL_PEAK = 7
SMALL_HOLES = 2

#: The least count of a kernel that calls a function ptxas does not inline (the call ABI:
#: callee-saved registers, arguments from R4).  Whole-program ptxas 13.5 on sm_80, every corpus
#: kernel with a call: call_indirect 24, sobel_fnptr 26, call_chain 30.
CALL_FLOOR = 24

#: IEEE-rounded division (``div.rn.f32``, ``div.rn.ftz.f32``, ``div.rn.f64``): ptxas computes the
#: common case inline and calls a slow-path subroutine it compiles into the kernel
#: (``CALL.REL.NOINC $__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath``,
#: ``..._sm20_div_rn_f64_full``).  The subroutine's registers are its own, and the values live
#: across the division sit above them.  Per opcode: the count of a kernel that loads two
#: values, divides them and stores the quotient (nothing else live across the division),
#: whole-program ptxas 13.5, sm_80; the prediction's floor is this plus the units live across
#: the division (issue 29, docs/prediction.md).
DIVISION_SLOW_PATH = {"div.rn.f32": 13, "div.rn.ftz.f32": 12, "div.rn.f64": 23}

#: 32-bit integer division and remainder (``div.s32``, ``rem.u32``, ...) by a value that is not
#: a literal: SASS computes it inline (``I2F.RP``, ``MUFU.RCP``, ``F2I.FTZ.U32.TRUNC.NTZ``,
#: ``IMAD.HI.U32``, and ``IABS`` of both operands for the signed types), with temporaries live
#: beside the operands.  The divisor's part (its reciprocal; for the signed types also its
#: absolute value) is computed once per divisor and kept to its last division; each division
#: adds its own.  Per type, whole-program ptxas 13.5 and nvdisasm 13.5, sm_80: the counts
#: that make the prediction's scheduled peak the SASS peak (R1 not counted) of a kernel that
#: loads one value, divides it by a parameter and stores the result (8 for s32, 6 for u32,
#: against 4 without them); the split between the two parts from the same kernel with 2, 4
#: and 8 divisions by the one parameter (SASS peaks 9, 17, 24 for s32 and 8, 14, 19 for u32;
#: predicted 12, 17, 22 and 9, 12, 16).
DIVISOR_TEMPORARIES = {"s32": 2, "u32": 1}
DIVISION_TEMPORARIES = {"s32": 3, "u32": 2}

#: ptxas unrolls a one-block loop that steps its exit test's counter by a literal (not one
#: marked ``.pragma "nounroll"``) by :data:`UNROLL`, with tails of 2 and 1 iterations, when
#: the loop has at most :data:`UNROLL_BODY` PTX instructions (its branch included).  Measured
#: with whole-program ptxas 13.5 and nvdisasm 13.5, sm_80, on a hand-written loop of one or
#: four ``ld.global`` and a chain of ``fma`` stepped by 128: the SASS has 7 copies of the
#: loads (4 + 2 + 1) up to 49 instructions with one load and 46 with four, one copy from 47
#: (four loads) and 50 (one); the same loop stepped by a parameter is never unrolled.
UNROLL = 4
UNROLL_BODY = 46

#: The least count of a kernel with any warp-synchronous instruction (shfl.sync, vote.sync,
#: bar.warp.sync, redux.sync, match.sync) on :data:`WARP_SYNC_FLOOR_TARGETS`: ptxas 13
#: (nvJitLink 13.5) puts its ``__cuda_sm70_*`` helpers, which need 24 (the call ABI), in the
#: kernel's call graph even where it inlines the instruction; a one-shfl kernel gets 24
#: instead of 8.  Not on sm_90+, not with the CUDA 12.9 ptxas.
WARP_SYNC_FLOOR = CALL_FLOOR
#: The targets where :data:`WARP_SYNC_FLOOR` applies (measured: sm_75 to sm_89).
WARP_SYNC_FLOOR_TARGETS = ("sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89")

#: Predicate registers per thread (P0..P6; PT is the constant true).  They are not in REGCOUNT,
#: unless more are live at once: ptxas keeps the excess in general registers.
PREDICATE_FILE = 7

#: The most registers ptxas gives a thread (sm_50 onwards), and the EIATTR_MAXREG_COUNT of a
#: kernel compiled without a cap.
REGISTER_LIMIT = 255


def regcount_from_spans(own: int, subroutines: int = 0, callees: int = 0) -> int:
    """REGCOUNT from the SASS, by the measured rule: the highest GPR + 1 of the kernel's own
    code plus :data:`REGCOUNT_RESERVED`, or the span of a subroutine compiled into it, or the
    largest count in its call graph, whichever is highest.

    Example::

        >>> regcount_from_spans(own=8), regcount_from_spans(own=8, subroutines=24)
        (10, 24)
    """
    return max(own + REGCOUNT_RESERVED, subroutines, callees)
