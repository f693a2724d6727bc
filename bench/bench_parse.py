"""Benchmark: ``ptxforge analyze --no-compile`` on a large PTX file, against ptxas itself.

Generates a PTX of at least 1 MB from ``bench/big_unroll.cu`` (a fully unrolled WENO-style
kernel, compiled with NVRTC and -lineinfo through the test corpus helper), then measures in
one process:

* the analysis the CLI runs for ``ptxforge analyze FILE --no-compile`` (parse, instruction
  mix, liveness/pressure, occupancy, and the text report), in-process, ``time.perf_counter``;
* ptxas's compile time of the same file through :func:`ptxforge.toolchain.compile.compile_ptx`
  (nvJitLink when available), runs interleaved with the analysis runs and the best of each
  taken, so that a change in the machine's load affects both sides alike;
* the peak memory of the analysis: ``tracemalloc`` (Python allocations, in a separate run
  because tracing slows Python down) and the process's ``ru_maxrss`` after the analysis
  (before ptxas runs in-process).

Goal (issue 5): analysis time / ptxas time <= 0.1 and memory < 1 GB.

Usage::

    PYTHONPATH=. python bench/bench_parse.py [--nk 2048] [--repeat 3] [--arch sm_80]
                                             [--profile] [--keep FILE.ptx]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import resource
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from corpus_util import compile_cu  # noqa: E402

from ptxforge.reports.analyze import analyze_ptx  # noqa: E402
from ptxforge.toolchain.compile import compile_ptx  # noqa: E402

GOAL_RATIO = 0.1
GOAL_MEMORY = 1 << 30
SOURCE = Path(__file__).with_name("big_unroll.cu")


def generate(nk: int, arch: str) -> str:
    """PTX of big_unroll.cu with ``NK`` unrolled steps (NVRTC, -lineinfo; disk-cached)."""
    src = f"#define NK {nk}\n" + SOURCE.read_text()
    return compile_cu(src, "big_unroll", arch, True)


def analyze_once(ptx: str, arch: str) -> str:
    """What ``ptxforge analyze FILE --no-compile`` computes and prints."""
    return analyze_ptx(ptx, "big_unroll.ptx", arch, 256, compile=False).to_text(10)


def _maxrss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nk", type=int, default=2048, help="unrolled steps (default 2048)")
    ap.add_argument("--arch", default="sm_80")
    ap.add_argument("--repeat", type=int, default=3,
                    help="ptxas and analysis runs, interleaved; the best of each is taken")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one analysis")
    ap.add_argument("--keep", metavar="FILE", help="write the generated PTX here")
    args = ap.parse_args(argv)

    t = time.perf_counter()
    ptx = generate(args.nk, args.arch)
    gen_s = time.perf_counter() - t
    size = len(ptx.encode())
    if args.keep:
        Path(args.keep).write_text(ptx)
    print(f"PTX: big_unroll.cu, NK={args.nk}, {args.arch}, -lineinfo: {size:,} bytes, "
          f"{ptx.count(chr(10)):,} lines (NVRTC/cache {gen_s:.2f} s)")
    if size < 1_000_000:
        print("warning: the PTX is smaller than 1 MB; raise --nk")

    # 1. the analysis once, then ru_maxrss before ptxas ever runs in this process
    gc.collect()
    t = time.perf_counter()
    text = analyze_once(ptx, args.arch)
    times = [time.perf_counter() - t]
    rss_after_analysis = _maxrss_bytes()
    print(text.split("\n\n")[1])  # the per-kernel summary table

    # 2. Python peak memory of one analysis
    gc.collect()
    tracemalloc.start()
    analyze_once(ptx, args.arch)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    # 3. ptxas and the analysis interleaved (the machine's load varies): best of each
    ptxas_times = []
    for r in range(max(args.repeat, 1)):
        t = time.perf_counter()
        compiled = compile_ptx(ptx, args.arch)
        ptxas_times.append(time.perf_counter() - t)
        if r + 1 < max(args.repeat, 1) or len(times) < 2:
            gc.collect()
            t = time.perf_counter()
            analyze_once(ptx, args.arch)
            times.append(time.perf_counter() - t)
    analysis_s, ptxas_s = min(times), min(ptxas_times)
    k = compiled.kernels[0]

    ratio = analysis_s / ptxas_s
    print(f"ptxas ({compiled.backend}): {ptxas_s:.3f} s (runs: "
          + ", ".join(f"{x:.3f}" for x in ptxas_times) + f")  {k.name}: {k.registers} "
          f"registers, {k.spill_stores}/{k.spill_loads} B spilled, stack {k.stack_frame} B")
    print(f"analyze --no-compile: {analysis_s:.3f} s (runs: "
          + ", ".join(f"{x:.3f}" for x in times) + ")")
    print(f"ratio analysis/ptxas: {ratio:.4f}  (goal <= {GOAL_RATIO}: "
          f"{'met' if ratio <= GOAL_RATIO else 'MISSED'})")
    print(f"peak memory: tracemalloc {traced_peak / 2**20:.1f} MiB, ru_maxrss after analysis "
          f"{rss_after_analysis / 2**20:.1f} MiB, after ptxas {_maxrss_bytes() / 2**20:.1f} MiB "
          f"(goal < 1 GiB: {'met' if max(traced_peak, rss_after_analysis) < GOAL_MEMORY else 'MISSED'})")

    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        analyze_once(ptx, args.arch)
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(30)
        print(out.getvalue())
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(20)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
