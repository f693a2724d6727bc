"""How close is the liveness estimate to what ptxas assigns?  (A measurement, not a test.)

For every kernel of the CUDA C++ test corpus (compiled with NVRTC, parsed by ptxforge), it
sets three numbers beside ptxas's register count (through nvJitLink, same target):

* ptxforge's estimate: the peak of live general registers in 32-bit units (dataflow liveness);
* the "counter" trueno-gpu reports as max_live: virtual registers allocated, in 32-bit units
  (what a builder that only counts allocations can say);
* ptxas's count.

It prints a per-kernel table and the median relative error of each against ptxas.  Kernels
that spill are listed but left out of the medians: their count is the cap, not the need.

    python bench/bench_estimate_accuracy.py [--arch sm_80]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from corpus_util import corpus_ptx, corpus_sources  # noqa: E402

from ptxforge import analyze_pressure, compile_ptx, parse  # noqa: E402


def counter_units(kernel) -> int:
    """trueno-gpu's max_live: every allocated virtual register, in 32-bit units."""
    seen = {}
    for inst in kernel.instructions:
        for reg in inst.defs:
            if not reg.type.is_pred:
                seen[reg.name] = reg.units
    return sum(seen.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_80")
    args = ap.parse_args(argv)
    rows = []
    for source in corpus_sources():
        ptx = corpus_ptx(source, args.arch)
        module = parse(ptx, f"{source}.ptx")
        stats = compile_ptx(ptx, args.arch)
        for kernel in module.entries:
            est = analyze_pressure(kernel).peak.units
            s = stats[kernel.name]
            rows.append((kernel.name, est, counter_units(kernel), s.registers, s.spills))
    print(f"{'kernel':<34} {'estimate':>8} {'counter':>8} {'ptxas':>6}  spills")
    for name, est, cnt, regs, spills in rows:
        print(f"{name:<34} {est:>8} {cnt:>8} {regs:>6}  {'yes' if spills else ''}")
    clean = [r for r in rows if not r[4] and r[3] > 0]

    def rel(values):
        return statistics.median(abs(v - r[3]) / r[3] for v, r in zip(values, clean))

    est_err = rel([r[1] for r in clean])
    cnt_err = rel([r[2] for r in clean])
    within = sum(1 for r in clean if abs(r[1] - r[3]) <= max(4, 0.25 * r[3]))
    print(f"\n{len(rows)} kernels on {args.arch}, {len(clean)} without spills:")
    print(f"  median |estimate - ptxas| / ptxas = {est_err:.1%}")
    print(f"  median |counter  - ptxas| / ptxas = {cnt_err:.1%}  (trueno-gpu's 'max_live')")
    print(f"  estimate within max(4, 25%) of ptxas: {within}/{len(clean)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
