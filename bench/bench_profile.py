"""Benchmark: what the interpreter's profile and race check cost, and what the hook costs off.

In one run, for the four kernels of bench/bench_emulator.py and the DSL's 64x64x64
``sgemm_tiled``, the best of ``--repeat`` launches, interleaved (plain, profiled, race-checked,
plain, ...), so the machine's load hits all three alike:

* ``profile / plain`` and ``races / plain``: the time ratios with an observer on;
* ``hook off``: what the observer hook costs a plain launch, as an upper bound: the launch's
  steps and memory accesses (counted by an observer) times the measured cost of the
  ``is not None`` test the interpreter makes at each, over the plain launch's time.  (A
  tree-against-tree timing, ``bench_emulator.py --tree OLD``, gives the same answer within
  its noise, which on a shared machine is larger than the hook.)

Usage::

    python bench/bench_profile.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _cases():
    import bench_emulator as be
    import numpy as np

    from ptxforge.dsl import kernels
    from ptxforge.launch.loader import load

    rng = np.random.default_rng(0)
    grid = be.THREADS // be.BLOCK
    out: dict = {}
    for ty, dt in (("f32", np.float32), ("f64", np.float64)):
        a, b, c = (rng.standard_normal(be.THREADS).astype(dt) for _ in range(3))
        out[f"fma{ty[1:]}"] = (load(be.fma_ptx(ty), device="emulator")["k"],
                               (a, b, c, np.zeros(be.THREADS, dt)), grid, be.BLOCK)
    src = rng.standard_normal(be.THREADS * be.COPIES).astype(np.float32)
    out["copy"] = (load(be.copy_ptx(), device="emulator")["k"], (src, np.zeros_like(src)),
                   grid, be.BLOCK)
    out["hist"] = (load(be.hist_ptx(), device="emulator")["k"],
                   (np.zeros(be.THREADS, np.uint32),), grid, be.BLOCK)
    n = 64
    a, b = rng.random((n, n), np.float32), rng.random((n, n), np.float32)
    out["sgemm64"] = (load(kernels.sgemm_tiled(), device="emulator")["sgemm_tiled"],
                      (a, b, np.zeros((n, n), np.float32), n, n, n), (n // 16, n // 16),
                      (16, 16))
    return out


def _runs(k, kargs, grid, block, profile_kernel, find_races) -> dict:
    """The three ways to run one case."""
    return {"plain": lambda: k(*kargs, grid=grid, block=block),
            "profile": lambda: profile_kernel(k, *kargs, grid=grid, block=block),
            "races": lambda: find_races(k, *kargs, grid=grid, block=block)}


class _Count:
    """Counts the calls the interpreter makes to an observer."""

    def __init__(self) -> None:
        self.calls = 0
        self.observer = None

    def step(self, *a) -> None:
        self.calls += 1

    access = release = step


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    from ptxforge.launch.profile import find_races, profile_kernel

    holder = _Count()           # .observer is None: the interpreter tests an attribute: the dearer of its two forms
    check = min(timeit.repeat("m.observer is not None", globals={"m": holder}, number=200000,
                              repeat=5)) / 200000
    print(f"{'kernel':10} {'plain ms':>9} {'profile/plain':>14} {'races/plain':>12} "
          f"{'hook off (bound)':>17}")
    for name, (k, kargs, grid, block) in _cases().items():
        runs = _runs(k, kargs, grid, block, profile_kernel, find_races)
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(args.repeat):
            for key, fn in runs.items():
                t = time.perf_counter()
                fn()
                best[key] = min(best[key], time.perf_counter() - t)
        counter = _Count()
        k.run(kargs, {}, grid=grid, block=block, observer=counter)
        hook = counter.calls * check / best["plain"]
        print(f"{name:10} {1e3 * best['plain']:>9.2f} {best['profile'] / best['plain']:>13.2f}x "
              f"{best['races'] / best['plain']:>11.2f}x {100 * hook:>16.4f}%")


if __name__ == "__main__":
    main()
