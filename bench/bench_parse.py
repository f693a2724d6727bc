"""Benchmark: ``ptxforge analyze --no-compile`` in a fresh process, against whole-program ptxas.

Every figure is a separate child process timed by its wall clock (``time.perf_counter`` around
the child) with its peak memory read from the child's own resource usage (``os.wait4``'s
``ru_maxrss``), in one run of this script:

1. **cold start** on a tiny PTX file (a 1 KB saxpy from NVRTC): ``python -c pass``,
   ``ptxforge analyze tiny.ptx --no-compile`` and one ptxas run of the same file, interleaved,
   best of ``--repeat`` each (goal: at most 0.12 s or at most 4x ``python -c pass``);
2. **large files**: ``bench/big_unroll.cu`` at ``NK`` 2048 (1.4 MB) and 4096 (2.9 MB; NVRTC
   stops unrolling above that), and ``bench/many_kernels.cu`` with its 60-kernel set repeated
   14 times (840 small template kernels, 4.5 MB): analyze time / ptxas time (goal: at most 0.1 where ptxas takes 1 s
   or more) and peak memory (goal: under 1 GB on a 4 MB file);
3. **the corpus**: the PTX modules of the kernel corpus (``tests/support/kernel_corpus.py``) for
   sm_80, one file per module as its compiler wrote it: NVRTC (``tests/corpus/*.cu`` and
   ``tests/corpus/nvrtc/*.cu``, ``-lineinfo``, every kernel of a source in one module),
   ``triton.compile`` and numba-cuda ``compile_ptx`` (one kernel per module): the totals of
   analyze and ptxas over all of them (goal: at most 0.5x).  ``--quick`` takes every fourth.

ptxas is the whole-program executable of CUDA 13 (``nvidia/cu13/bin/ptxas``), or CUDA 12's
for the targets CUDA 13 dropped (sm_5x to sm_72).  The tree under test is the repository this script
lives in, or ``--tree DIR`` (a copy of ``ptxforge/`` to compare against, e.g. before a change).
A child that fails (non-zero exit) is reported, not hidden.  ``--profile`` adds, in this
process, the time each phase of ``analyze`` takes on ``big_unroll`` NK=2048 and
``many_kernels`` x14 (parse, pressure report, prediction, instruction mix, and the whole
analysis after the parse with its summary text) and a cProfile of the latter.

Usage::

    python bench/bench_parse.py [--repeat 5] [--tree DIR] [--quick] [--profile]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# cold figures: ptxas and nvdisasm run in every timed call, whatever ptxforge's result cache
# (ptxforge/toolchain/result_cache.py) holds from earlier runs
os.environ.setdefault("PTXFORGE_CACHE", "off")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from corpus_util import compile_cu

_PY = f"python{sys.version_info[0]}.{sys.version_info[1]}"
SITE = Path(sys.prefix) / "lib" / _PY / "site-packages" / "nvidia"
PTXAS_13 = SITE / "cu13" / "bin" / "ptxas"
PTXAS_12 = SITE / "cuda_nvcc" / "bin" / "ptxas"
TINY_CU = r"""
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
CORPUS_ARCHS = ("sm_75", "sm_80", "sm_90a")  # NVRTC 13 no longer targets sm_70


def ptxas_for(arch: str) -> Path:
    """The whole-program ptxas that compiles ``arch`` (CUDA 13, else CUDA 12 for sm_5x..sm_72)."""
    return PTXAS_12 if int(arch[3:5]) < 75 else PTXAS_13


def run_child(cmd: list, env=None) -> tuple:
    """(wall seconds, peak RSS bytes, exit status, stderr) of one child process."""
    with tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        # cwd: not the repository, whose ptxforge/ would shadow --tree on sys.path
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env,
                             cwd=tempfile.gettempdir())
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return wall, usage.ru_maxrss * 1024, p.returncode, err.read().decode(errors="replace")


class Runner:
    """Runs analyze and ptxas children on files, remembering failures."""

    def __init__(self, tree: Path, lenient: bool, pycache: Path) -> None:
        # byte-code caches as an installed package has them (this machine sets
        # PYTHONDONTWRITEBYTECODE, which would time the compiling of every module instead)
        self.env = dict(os.environ, PYTHONPATH=str(tree), PYTHONPYCACHEPREFIX=str(pycache))
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.lenient = lenient
        self.failures: list[str] = []

    def analyze(self, path: Path) -> tuple:
        cmd = [sys.executable, "-m", "ptxforge", "analyze", str(path), "--no-compile"]
        if self.lenient:
            cmd.append("--lenient")
        wall, rss, rc, err = run_child(cmd, self.env)
        if rc:
            self.failures.append(f"analyze {path.name}: exit {rc}: {err.strip()[-300:]}")
        return wall, rss

    def ptxas_ok(self, path: Path, arch: str) -> tuple:
        """(wall seconds, peak RSS, accepted) of one ptxas run; a refusal is no failure."""
        cmd = [str(ptxas_for(arch)), f"-arch={arch}", str(path), "-o", os.devnull]
        wall, rss, rc, _ = run_child(cmd)
        return wall, rss, rc == 0

    def ptxas(self, path: Path, arch: str) -> tuple:
        cmd = [str(ptxas_for(arch)), f"-arch={arch}", str(path), "-o", os.devnull]
        wall, rss, rc, err = run_child(cmd)
        if rc:
            self.failures.append(f"ptxas {path.name}: exit {rc}: {err.strip()[-300:]}")
        return wall, rss


def write(dirpath: Path, name: str, ptx: str) -> Path:
    path = dirpath / name
    path.write_text(ptx)
    return path


def big_unroll(nk: int, arch: str) -> str:
    src = f"#define NK {nk}\n" + (ROOT / "bench" / "big_unroll.cu").read_text()
    return compile_cu(src, "big_unroll", arch, True)


def many_kernels(reps: int, arch: str) -> str:
    src = (ROOT / "bench" / "many_kernels.cu").read_text()
    src += "\n" + "\n".join(f"TYPES({r})" for r in range(reps)) + "\n"
    return compile_cu(src, "many_kernels", arch, True)


def cold_start(run: Runner, tmp: Path, repeat: int) -> None:
    tiny = write(tmp, "tiny.ptx", compile_cu(TINY_CU, "tiny", "sm_80", False))
    best = {"python -c pass": [], "ptxforge analyze --no-compile": [], "ptxas": []}
    run.analyze(tiny)  # writes the byte-code caches
    for _ in range(repeat):
        best["python -c pass"].append(run_child([sys.executable, "-c", "pass"], run.env)[0])
        best["ptxforge analyze --no-compile"].append(run.analyze(tiny)[0])
        best["ptxas"].append(run.ptxas(tiny, "sm_80")[0])
    py = min(best["python -c pass"])
    pf = min(best["ptxforge analyze --no-compile"])
    print(f"1. cold start, tiny.ptx ({tiny.stat().st_size:,} bytes), best of {repeat}:")
    for what, times in best.items():
        print(f"   {what:32s} {min(times):7.3f} s")
    ok = pf <= 0.12 or pf <= 4 * py
    print(f"   analyze / python -c pass: {pf / py:.2f}x; analyze / ptxas: {pf / min(best['ptxas']):.1f}x"
          f"  (goal <= 0.12 s or <= 4x python: {'met' if ok else 'MISSED'})")


def large_files(run: Runner, tmp: Path, quick: bool) -> list:
    arch = "sm_80"
    files = [("big_unroll NK=2048", "big_unroll_2048.ptx", lambda: big_unroll(2048, arch))]
    if not quick:
        files.append(("big_unroll NK=4096", "big_unroll_4096.ptx", lambda: big_unroll(4096, arch)))
    files.append(("many_kernels x4" if quick else "many_kernels x14",
                  "many_kernels.ptx", lambda: many_kernels(4 if quick else 14, arch)))
    print(f"2. large files ({arch}; ptxas 13.5 whole-program):")
    print(f"   {'file':22s} {'size':>10s} {'kernels':>7s} {'analyze':>8s} {'ptxas':>8s} "
          f"{'ratio':>7s} {'peak RSS':>9s}")
    worst_rss = []
    for label, name, gen in files:
        path = write(tmp, name, gen())
        text = path.read_text()
        a, rss = run.analyze(path)
        p, _ = run.ptxas(path, arch)
        worst_rss.append((path.stat().st_size, rss))
        mark = "" if p < 1 else ("  met" if a / p <= 0.1 else "  MISSED (goal <= 0.1)")
        print(f"   {label:22s} {path.stat().st_size:10,d} {text.count('.entry'):7d} {a:7.2f}s "
              f"{p:7.2f}s {a / p:7.3f} {rss / 2**20:7.0f}MiB{mark}")
    return worst_rss


def corpus_modules(arch: str = "sm_80") -> list:
    """``[(file name, PTX, source)]``: the kernel corpus's modules, one per distinct PTX text
    (a module with several kernels once), in the corpus's order."""
    from kernel_corpus import corpus as kernel_corpus

    seen: dict = {}
    for k in kernel_corpus(arch):
        if k.ptx not in seen:
            stem = k.id.split(":", 1)[0].replace("/", "-").rsplit(".", 1)[0]
            if k.source != "nvrtc":  # Triton and numba: one module per kernel of a file
                stem += "-" + k.id.split(":", 1)[1]
            seen[k.ptx] = ("".join(c if c.isalnum() or c in "-_" else "_" for c in stem)
                           + ".ptx", k.source)
    return [(name, ptx, source) for ptx, (name, source) in seen.items()]


def corpus(run: Runner, tmp: Path, quick: bool) -> int:
    arch = "sm_80"
    modules = corpus_modules(arch)
    if quick:
        modules = modules[::4]
    total_a = total_p = 0.0
    peak = 0
    count = size = 0
    per_source: dict = {}
    skipped: list = []
    for name, ptx, source in modules:
        path = write(tmp, name, ptx)
        p, _, ok = run.ptxas_ok(path, arch)
        if not ok:
            skipped.append(path.name)
            continue
        a, rss = run.analyze(path)
        total_a += a
        total_p += p
        peak = max(peak, rss)
        count += 1
        size += len(ptx)
        n, sa, sp = per_source.get(source, (0, 0.0, 0.0))
        per_source[source] = (n + 1, sa + a, sp + p)
    ratio = total_a / total_p
    print(f"3. corpus: {count} modules ({size / 2**20:.1f} MiB; kernel_corpus, {arch}, one file "
          f"per module): analyze {total_a:.2f} s, ptxas {total_p:.2f} s, ratio {ratio:.3f} "
          f"(goal <= 0.5: {'met' if ratio <= 0.5 else 'MISSED'}); peak RSS {peak / 2**20:.0f} MiB")
    for source, (n, sa, sp) in sorted(per_source.items()):
        print(f"   {source:7s} {n:4d} modules: analyze {sa:6.2f} s, ptxas {sp:6.2f} s, "
              f"ratio {sa / sp:.3f}")
    if skipped:
        print(f"   left out, refused by ptxas for their target: {', '.join(skipped)}")
    return peak


def phases(files: list) -> None:
    """Where one in-process analysis of each file spends its time (this repository's ptxforge,
    the collector paused as ``analyze`` pauses it): parse, the pressure report, the
    prediction, the instruction mix, and the whole of ``analyze_module`` (those three and
    the rest) with the summary text."""
    import gc

    from ptxforge import parse
    from ptxforge.analysis.mix import instruction_mix
    from ptxforge.analysis.prediction import predict_registers
    from ptxforge.analysis.pressure import analyze_pressure
    from ptxforge.reports.analyze import analyze_module

    print("5. phases in one process (seconds):")
    print(f"   {'file':22s} {'parse':>7s} {'pressure':>9s} {'predict':>8s} {'mix':>6s} "
          f"{'analyze':>8s}")
    was = gc.isenabled()
    gc.disable()
    try:
        for label, ptx in files:
            t0 = time.perf_counter()
            module = parse(ptx, "bench.ptx")
            t1 = time.perf_counter()
            units = [analyze_pressure(k).peak.units for k in module.kernels]
            t2 = time.perf_counter()
            for k, u in zip(module.kernels, units):
                predict_registers(k, live_units=u)
            t3 = time.perf_counter()
            for k in module.kernels:
                instruction_mix(k)
            t4 = time.perf_counter()
            analyze_module(module, compile=False, ptx=ptx).to_text(10, "line", None)
            t5 = time.perf_counter()
            print(f"   {label:22s} {t1 - t0:7.2f} {t2 - t1:9.2f} {t3 - t2:8.2f} {t4 - t3:6.2f} "
                  f"{t5 - t4:8.2f}")
    finally:
        if was:
            gc.enable()


def profile(tmp: Path) -> None:
    import cProfile
    import pstats

    from ptxforge.reports.analyze import analyze_ptx

    ptx = many_kernels(14, "sm_80")
    prof = cProfile.Profile()
    prof.enable()
    # summary=None: the one-line-per-kernel text ``analyze`` prints above 20 kernels
    analyze_ptx(ptx, "many.ptx", compile=False).to_text(10, "line", None)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="cold-start runs, best taken (5)")
    ap.add_argument("--tree", type=Path, default=ROOT,
                    help="directory holding the ptxforge package to run (default: this repo)")
    ap.add_argument("--quick", action="store_true", help="smaller files and one corpus arch")
    ap.add_argument("--lenient", action="store_true", help="pass --lenient to analyze")
    ap.add_argument("--profile", action="store_true",
                    help="also print the phases of one in-process analysis of two large "
                         "files and a cProfile of one (many_kernels x14)")
    args = ap.parse_args(argv)
    print(f"tree: {args.tree.resolve()}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        run = Runner(args.tree.resolve(), args.lenient, tmp / "pycache")
        cold_start(run, tmp, max(args.repeat, 1))
        sizes = large_files(run, tmp, args.quick)
        corpus_peak = corpus(run, tmp, args.quick)
        size, rss = max(sizes)
        print(f"4. peak memory: {rss / 2**20:.0f} MiB on the largest file ({size:,} bytes), "
              f"{corpus_peak / 2**20:.0f} MiB over the corpus (goal < 1 GiB: "
              f"{'met' if max(rss, corpus_peak) < 2**30 else 'MISSED'})")
        if args.profile:
            phases([("big_unroll NK=2048", big_unroll(2048, "sm_80")),
                    ("many_kernels x14", many_kernels(14, "sm_80"))])
            profile(tmp)
        for f in run.failures:
            print("FAILED:", f)
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
