"""How close are the live count and the prediction to ptxas's register count?  (A measurement.)

For every kernel of the prediction corpus (``tests/support/kernel_corpus.py``: NVRTC, Triton
and numba-cuda kernels, whole-program ptxas 13.x as the ground truth) it sets beside ptxas's
count:

* the live count: the most general registers (32-bit units) live at once in the PTX order
  (:func:`ptxforge.analyze_pressure`);
* the prediction (:func:`ptxforge.analysis.prediction.predict_registers`).

It prints, per compiler source and overall, on the validation split and the training split
beside it, non-spilling kernels only: the share within +-10% of ptxas, the median |error| %
and Spearman's rank correlation.  ``--kernels`` lists every kernel.

    python bench/bench_estimate_accuracy.py [--arch sm_80] [--kernels]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))

from kernel_corpus import corpus, ground_truths
from prediction_table import accuracy

from ptxforge import analyze_pressure, parse
from ptxforge.analysis.prediction import MODEL, predict_registers

SOURCES = ("nvrtc", "triton", "numba")


def measure(arch: str = "sm_80", modules: dict | None = None) -> list:
    """Per non-spilling corpus kernel: (CorpusKernel, ptxas registers, live count, Prediction).
    ``modules``: ``{ptx: parsed Module}`` already parsed (the tests' session-wide
    ``kernel_corpus.corpus_modules``); the rest are parsed here."""
    kernels = corpus(arch)
    truth = ground_truths(kernels)
    modules = dict(modules or {})
    rows = []
    for k in kernels:
        g = truth[k.id]
        if g.spill_stores or g.spill_loads or g.registers <= 0:
            continue
        module = modules.get(k.ptx)
        if module is None:
            module = modules[k.ptx] = parse(k.ptx, k.file)
        kernel = module.kernel(k.kernel)
        live = analyze_pressure(kernel).peak.units
        rows.append((k, g.registers, live, predict_registers(kernel, live_units=live)))
    return rows


def table(rows: list) -> list:
    """(split, source, n, live accuracy, prediction accuracy) per split and source."""
    out = []
    for split in ("validation", "train"):
        for source in (*SOURCES, "all"):
            sel = [r for r in rows if r[0].split == split and source in ("all", r[0].source)]
            truth = [r[1] for r in sel]
            out.append((split, source, len(sel), accuracy([r[2] for r in sel], truth),
                        accuracy([r[3].registers for r in sel], truth)))
    return out


def _fmt(a: dict) -> str:
    return f"{a['within10']:>7.0%} {a['median_error']:>8.1%} {a['spearman']:>6.3f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_80")
    ap.add_argument("--kernels", action="store_true", help="list every kernel")
    args = ap.parse_args(argv)
    rows = measure(args.arch)
    if args.kernels:
        print(f"{'kernel':<60} {'split':<10} {'live':>5} {'pred':>5} {'ptxas':>5}")
        for k, regs, live, p in rows:
            print(f"{k.id[:60]:<60} {k.split:<10} {live:>5} {p.registers:>5} {regs:>5}")
        print()
    print(f"{len(rows)} non-spilling kernels on {args.arch}; {MODEL}")
    print(f"{'split':<11}{'source':<8}{'n':>4}   {'live: within10  median    rho':<32}"
          f"{'prediction: within10  median    rho'}")
    for split, source, n, live, pred in table(rows):
        print(f"{split:<11}{source:<8}{n:>4}   {_fmt(live):<32}{'':>6}{_fmt(pred)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
