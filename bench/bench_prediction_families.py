"""The register prediction on code it has never seen: the full table (a measurement).

For the family corpus (``tests/support/family_corpus.py``: cub/thrust through NVRTC,
CUTLASS-like and wmma tensor-core GEMMs, llm.c-style kernels, stencils, wavelets, small
kernels, Triton and numba) and the fixed corpus (``tests/support/kernel_corpus.py``), with
whole-program ptxas 13.x on sm_80 as the truth, non-spilling kernels only, it prints for each
set (training; fixed validation; family-held-out), per source family, per compiler and per
size class: the share within +-10%, the median |error|, Spearman, the number off by more than
2x where the live count was within 25%, and the band's coverage.  ``--kernels`` lists every
kernel.

    python bench/bench_prediction_families.py [--kernels] [--only FAMILY ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))

from prediction_table import measure, table

from ptxforge.analysis.prediction import MODEL

SETS = (("training", ("train",)), ("fixed validation", ("validation",)),
        ("family-held-out", ("held-out",)))


def _line(name: str, f: dict) -> str:
    if not f.get("n"):
        return f"  {name:<28}{0:>4}"
    return (f"  {name:<28}{f['n']:>4} {f['live_within10']:>6.0%} {f['within10']:>7.0%} "
            f"{f['median_error']:>7.1%} {f['spearman']:>6.3f} {f['twox']:>4} {f['coverage']:>6.0%} "
            f"{f['coverage_calm']:>6.0%} {f['flagged']:>4}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", action="store_true", help="list every kernel")
    ap.add_argument("--only", nargs="*", default=(), help="only these families (no fixed corpus)")
    args = ap.parse_args(argv)
    rows = measure(only=tuple(args.only), fixed=not args.only)
    if args.kernels:
        print(f"{'kernel':<70} {'role':<10} {'live':>5} {'pred':>5} {'band':>9} {'ptxas':>5}")
        for r in rows:
            flag = " *" if r.out_of_depth else ""
            print(f"{r.id[:70]:<70} {r.role:<10} {r.live:>5} {r.predicted:>5} "
                  f"{f'{r.low}-{r.high}':>9} {r.truth:>5}{flag}")
        print()
    print(f"{len(rows)} non-spilling kernels, sm_80; {MODEL}")
    head = (f"  {'group':<28}{'n':>4} {'live10':>6} {'pred10':>7} {'median':>7} {'rho':>6} "
            f"{'2x':>4} {'band':>6} {'calm':>6} {'deep':>4}")
    for name, roles in SETS:
        print(f"\n{name}")
        print(head)
        for by in ("all", "compiler", "size", "family"):
            for group, f in table(rows, roles, by):
                print(_line(f"{by}: {group}" if by != "all" else "all", f))
    return 0


if __name__ == "__main__":
    sys.exit(main())
