"""How does the PTX liveness estimate compare with the SASS ground truth?  (A measurement.)

For every ``.entry`` of the CUDA C++ test corpus (NVRTC) and of ``ptxforge.dsl.kernels``, compiled
with line info through nvJitLink and read back with nvdisasm (``ptxforge.reports.sass``), it
prints:

* ``estimate``: ptxforge's PTX liveness peak (32-bit units);
* ``SASS``: the most GPRs nvdisasm shows live at one SASS instruction (``-clob``: without the
  registers a CALL may clobber);
* ``span``: highest GPR index used + 1; ``REGCOUNT``: what the kernel launches with;
* ``R1@peak``: whether R1 (the stack pointer) is among the registers live at the peak.

Then the distribution of REGCOUNT − span and of REGCOUNT − SASS peak, and the median
|estimate − x| / x against the SASS peak and against REGCOUNT (spilling kernels left out).

    PYTHONPATH=. python bench/bench_sass_liveness.py [--arch sm_80] [--json OUT]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
from pathlib import Path

# cold figures: ptxas and nvdisasm run in every timed call, whatever ptxforge's result cache
# (ptxforge/toolchain/result_cache.py) holds from earlier runs
os.environ.setdefault("PTXFORGE_CACHE", "off")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from corpus_util import corpus_ptx, corpus_sources  # noqa: E402

from ptxforge.dsl import kernels  # noqa: E402
from ptxforge.reports.sass import sass_report  # noqa: E402


def rows_for(arch: str) -> list:
    sources = [(f"{s}.cu", corpus_ptx(s, arch, True)) for s in corpus_sources()]
    sources += [(f"kernels.{n}", getattr(kernels, n)(target=arch))
                for n in ("saxpy", "block_reduce_sum", "sgemm_tiled", "modadd256")]
    rows = []
    for label, src in sources:
        for k in sass_report(src, arch, file=label).kernels:
            rows.append({"source": label, "kernel": k.name, "estimate": k.estimate.registers,
                         "sass": k.sass_peak, "sass_no_clobbers": k.sass_peak_across_calls,
                         "span": k.span, "regcount": k.regcount, "callees": len(k.callees),
                         "spills": bool(k.stats.spills),
                         "r1_at_peak": "R1" in k.function.peak().registers})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_80")
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    args = ap.parse_args(argv)
    rows = rows_for(args.arch)
    print(f"{'kernel':<40} {'estimate':>8} {'SASS':>5} {'-clob':>5} {'span':>5} "
          f"{'REGCOUNT':>8}  R1@peak  notes")
    for r in rows:
        notes = ", ".join(n for n, on in (("spills", r["spills"]),
                                          (f"{r['callees']} callees", r["callees"])) if on)
        print(f"{r['kernel'][:40]:<40} {r['estimate']:>8} {r['sass']:>5} "
              f"{r['sass_no_clobbers']:>5} {r['span']:>5} {r['regcount']:>8}  "
              f"{'yes' if r['r1_at_peak'] else 'no':>7}  {notes}")
    gap = collections.Counter(r["regcount"] - r["span"] for r in rows)
    over = collections.Counter(r["regcount"] - r["sass"] for r in rows)
    print(f"\n{len(rows)} kernels on {args.arch}")
    print("REGCOUNT - span     :", dict(sorted(gap.items())))
    print("REGCOUNT - SASS peak:", dict(sorted(over.items())))
    print("R1 live at the SASS peak:", sum(r["r1_at_peak"] for r in rows), "of", len(rows))
    clean = [r for r in rows if not r["spills"]]

    def med(key):
        return statistics.median(abs(r["estimate"] - r[key]) / r[key] for r in clean)
    print(f"median |estimate - SASS peak| / SASS peak: {med('sass') * 100:.0f}% "
          f"({len(clean)} kernels without spills)")
    print(f"median |estimate - REGCOUNT| / REGCOUNT  : {med('regcount') * 100:.0f}%")
    print(f"median |SASS peak - REGCOUNT| / REGCOUNT : "
          f"{statistics.median(abs(r['sass'] - r['regcount']) / r['regcount'] for r in clean) * 100:.0f}%")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
