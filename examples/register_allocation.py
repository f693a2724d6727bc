"""Register allocation with ptxforge: what a kernel needs, what ptxas gives it, what that costs.

For each demo kernel this prints the liveness estimate (peak general registers in 32-bit units,
and predicates), the predicted ptxas count (docs/prediction.md), ptxas's register count
(whole-program ptxas, as nvcc builds: no GPU needed), and the occupancy both give for a 256-thread block on
sm_80.  Where a GPU is present it also JIT-loads each kernel through the CUDA driver and prints
the driver's register count.

    python examples/register_allocation.py [--arch sm_80] [--block 256]
"""

from __future__ import annotations

import argparse
import sys

import ptxforge
from ptxforge import (
    KernelBuilder,
    LaunchSpec,
    analyze_pressure,
    compare_with_ptxas,
    compile_ptx,
    emit,
    occupancy,
)
from ptxforge.analysis.prediction import predict_registers
from ptxforge.ptx import types as T


def vector_add(target: str):
    """c[i] = a[i] + b[i]: a handful of values live at once."""
    kb = KernelBuilder("vector_add", target=target)
    a, b, c = (kb.load_param(kb.param_ptr(name, T.f32)) for name in "abc")
    n = kb.load_param(kb.param("n", T.u32))
    i = kb.global_id()
    with kb.if_(kb.setp("lt", i, n)):
        total = kb.add(kb.ld(kb.elem_ptr(a, i)), kb.ld(kb.elem_ptr(b, i)))
        kb.st(kb.elem_ptr(c, i), total)
    return kb.build()


def dot(unroll: int, target: str):
    """Thread t computes out[t] = X[t, :] . y, ``unroll`` columns per trip, loading every
    operand of a trip before its FMAs (as an unrolling compiler does)."""
    kb = KernelBuilder(f"dot_x{unroll}", target=target)
    x, y, out = (kb.load_param(kb.param_ptr(name, T.f32)) for name in ("X", "y", "out"))
    n = kb.load_param(kb.param("n", T.u32))          # columns, a multiple of unroll
    row = kb.global_id()
    x_row = kb.elem_ptr(x, kb.mul(row, n))
    acc = kb.mov(0.0, type=T.f32)
    with kb.loop(0, n, unroll, unroll=False) as j:   # we unroll; ptxas must not unroll again
        xs = [kb.ld(kb.elem_ptr(x_row, j), offset=4 * k) for k in range(unroll)]
        ys = [kb.ld(kb.elem_ptr(y, j), offset=4 * k) for k in range(unroll)]
        for xv, yv in zip(xs, ys):
            kb.ifma(acc, xv, yv)
    kb.st(kb.elem_ptr(out, row), acc)
    return kb.build()


def accumulate(style: str, target: str):
    """Sum x[0:n] with a loop.  ``inplace`` updates one accumulator register; ``ssa`` writes
    ``acc = kb.add(acc, v)`` inside the loop body, which Python traces only once."""
    kb = KernelBuilder(f"accumulate_{style}", target=target)
    x, out = (kb.load_param(kb.param_ptr(name, T.f32)) for name in ("x", "out"))
    n = kb.load_param(kb.param("n", T.u32))
    acc = kb.mov(0.0, type=T.f32)
    with kb.loop(0, n, 1) as i:
        v = kb.ld(kb.elem_ptr(x, i))
        if style == "inplace":
            kb.iadd(acc, v)          # add.f32 %f1, %f1, %f2: the loop carries %f1
        else:
            acc = kb.add(acc, v)     # a fresh register each trip... of the *trace*, not the loop
    kb.st(out, acc)
    return kb.build()


def _rel(loc) -> str:
    """A source location relative to the working directory, for readable output."""
    import os

    return os.path.relpath(loc) if loc and os.path.isabs(str(loc)) else str(loc)


def driver_registers(module, name: str):
    """The CUDA driver's register count for ``name``, or None without a GPU."""
    from ptxforge.launch.device import gpu_unavailable_reason

    if gpu_unavailable_reason() is not None:
        return None
    return ptxforge.load(module)[name].attributes().num_regs


def show(module, target: str, block: int, gpu: bool) -> dict:
    """Print estimate vs ptxas (and the driver) for the module's one kernel; return figures."""
    kernel = module.kernels[-1]
    report = analyze_pressure(kernel)
    stats = compile_ptx(emit(module), target)[kernel.name]
    cmp = compare_with_ptxas(report, stats, LaunchSpec(target=target, block=block), kernel=kernel)
    pred = predict_registers(kernel, live_units=report.peak.units)
    occ_e, occ_p = cmp.occupancy_estimate, cmp.occupancy_ptxas
    line = (f"  {kernel.name:<20} estimate {report.peak.units:>3} regs + {report.pred_peak.units} pred"
            f" | predicted {pred.registers:>3} ({pred.low}-{pred.high})"
            f" | ptxas {stats.registers:>3} regs, {stats.spill_stores} B spilled"
            f" | blocks/SM {occ_e.active_blocks} (estimate) vs {occ_p.active_blocks} (ptxas),"
            f" occupancy {occ_p.occupancy:.0%}")
    if gpu:
        line += f" | driver {driver_registers(module, kernel.name)} regs"
    print(line)
    return {"estimate": report.peak.units, "ptxas": stats.registers, "report": report,
            "prediction": pred,
            "ptx": emit(module),
            "vregs": sum(n for _, n in report.registers_by_type)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_80")
    ap.add_argument("--block", type=int, default=256)
    args = ap.parse_args(argv)
    target, block = args.arch, args.block

    from ptxforge.launch.device import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    gpu = reason is None
    print(f"ptxforge register allocation demo: target {target}, {block}-thread blocks")
    print("  ptxas compiles whole-program, as nvcc does (no GPU needed); "
          + ("a GPU is present: the driver's count is shown too." if gpu
             else "no GPU here, so no driver column."))

    print("\n1. A simple vector add: low pressure")
    show(vector_add(target), target, block, gpu)

    print("\n2. Unrolled dot products: every loaded operand is live until its FMA")
    d4 = show(dot(4, target), target, block, gpu)
    d8 = show(dot(8, target), target, block, gpu)
    print(f"  8-way needs {d8['estimate'] - d4['estimate']} more registers than 4-way by the estimate"
          f" ({d8['estimate'] / d4['estimate']:.2f}x), {d8['ptxas'] - d4['ptxas']} more by ptxas.")

    print("\n3. A loop accumulator: in place versus SSA style")
    inplace = show(accumulate("inplace", target), target, block, gpu)
    ssa = show(accumulate("ssa", target), target, block, gpu)
    def loop_add(result):
        return next(line.strip() for line in result["ptx"].splitlines()
                    if line.strip().startswith("add.f32"))

    print(f"  in place: {loop_add(inplace)}   <- reads and writes the accumulator: carried by the loop")
    print(f"  SSA:      {loop_add(ssa)}   <- reads the *initial* accumulator every trip")
    print("  Python traces the loop body once, so the SSA kernel is wrong: it stores 0 + x[n-1].")
    print("  The only correct SSA form is full unrolling, one new register per element.")
    print(f"  Virtual registers are not pressure: {inplace['vregs']} vs {ssa['vregs']} virtual"
          f" registers, a peak of {inplace['estimate']} vs {ssa['estimate']} live.")

    print("\n4. Where the pressure is: the 8-way dot product's peak")
    report = d8["report"]
    peak = report.peak
    print(f"  peak {peak.units} registers at instruction {peak.index}: {peak.instruction}")
    print(f"  timeline {report.sparkline(60)}")
    for value in peak.values[:6]:
        print(f"    {value.name:<6} {value.type:<5} live for {value.live_length:>3} instructions,"
              f" defined at {_rel(value.loc)}")
    for group in peak.by_source[:3]:
        print(f"  {group.count} live values ({group.units} registers) were defined on {_rel(group.loc)}")

    pred = d8["prediction"]
    print(f"  predicted ptxas count {pred.registers} (ptxas: {d8['ptxas']}), made of:")
    for c in pred.components:
        print(f"    {c.registers:+4d}  {c.name:<20} {c.detail}")

    print("\n5. What the registers cost: occupancy cliffs for the 8-way dot product")
    from ptxforge import register_cliffs

    occ = occupancy(d8["ptxas"], block, target)
    print(f"  {d8['ptxas']} registers x {block} threads: {occ.active_blocks} blocks/SM,"
          f" {occ.occupancy:.1%} occupancy, limited by {', '.join(occ.limiting)}")
    for regs in (32, 64, 128, 255):
        o = occupancy(regs, block, target)
        blocks = f"{o.active_blocks} block{'s' if o.active_blocks != 1 else ''}"
        print(f"  at {regs:>3} registers: {blocks}/SM, {o.occupancy:.1%}")
    cliffs = register_cliffs(d8["ptxas"], block, target)
    steps = ", ".join(f"<= {regs}: {blocks}" for regs, blocks in cliffs.steps)
    print(f"  blocks/SM by register count: {steps}")
    if cliffs.headroom is not None:
        print(f"  headroom: {cliffs.headroom} more register(s) before losing a block per SM")
    if cliffs.to_gain is not None:
        print(f"  shave {cliffs.to_gain} register(s) to reach {cliffs.next_blocks} blocks per SM")
    return 0


if __name__ == "__main__":
    sys.exit(main())
