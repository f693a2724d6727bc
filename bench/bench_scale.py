"""Benchmark: ptxforge's default path against ptxas and nvdisasm on a corpus like real builds.

The corpus (``bench/scale/``, CUDA C++ written for this benchmark, compiled once and cached in
``~/.cache/ptxforge-bench-scale``) has six classes:

* ``cub``: cub block/warp primitives (BlockReduce, BlockScan, BlockRadixSort, BlockLoad/Store
  with five algorithms, WarpReduce, BlockHistogram) over several types and block sizes, and
  cub's device-wide reduce kernels, instantiated explicitly (NVRTC, cccl headers of the venv);
* ``thrust``: thrust sort / sort_by_key / reduce / scan (host code, so nvcc; skipped without);
* ``many``: one file of 256 template instantiations (4 kinds x 8 types x 8 sizes);
* ``big``: two files of 2-4 MB of PTX (unrolled filters and sorting networks; cub sorts);
* ``gemm``: tensor-core GEMMs (wmma f16/bf16/tf32/int8/f64; inline ``mma.sync``), register-blocked;
* ``small``: a build folder of 120 small translation units and 4 globals-only files.

Every figure is a ratio of times measured in the same run, one process per command, as a user
runs them (wall time of the child, sequentially):

* per class and in total: ``ptxforge analyze FILE`` (and ``--json``, and ``--no-compile``)
  against ``ptxas -arch=sm_80 -v -O3 -lineinfo FILE -o X.cubin`` (the ptxas and the flags
  ptxforge's default backend uses: the newest ptxas executable that accepts sm_80, whole-program)
  and against ptxas + nvdisasm on that cubin (the run ptxforge's SASS read makes:
  ``-c --life-range-mode narrow``; it reads the line tables itself), the floor of the default
  path;
* the worst file's ratio; a ~10 KB file against ``python -c pass``;
* ``ptxforge check DIR`` over the small-file folder against ptxas's total over those files,
  with ``--jobs 1`` and ``--jobs 2``, interleaved: ``--rounds`` times the ptxas loop over the
  folder, each check, the loop again (the ratio is over the two loops around it; the median
  of the rounds is the figure, and each round's load average is printed); ``ptxforge analyze --no-compile DIR`` (folder mode);
* ``ptxforge analyze --no-compile DIR`` over every file the table timed, linked into one folder
  (a whole build in one process; default ``--jobs`` and ``--jobs 1``) against their ptxas total;
* ``--jobs`` scaling of ``analyze`` on the many-kernel file;
* peak memory on the largest file: the child's max RSS (``wait4``) and the sampled sum over its
  process tree, with and without ``--jobs 2``.

Rows the installed ptxforge cannot run (no ``--jobs``, no folder input) print "not supported by
this ptxforge".  A command that passes ``--timeout`` seconds is killed; its figure is then a lower
bound (printed with ``>``).

Usage::

    PYTHONPATH=. python bench/bench_scale.py [--classes cub,many,...] [--quick] [--json OUT.json]
                                             [--timeout 300] [--no-json-row] [--sample-small N]
                                             [--rounds 2]
                                             [--replay IN.json]

The baseline figures (before issue 24's changes) are in docs/cli.md, "At scale".

Targets (issue 24): analyze total <= 1.5x (ptxas + nvdisasm) with --jobs 1, no file over 2.5x;
a 10 KB file <= 0.4 s or <= 8x ``python -c pass``; check DIR <= 1.2x ptxas total (--jobs 1) and
faster with 2 jobs; --no-compile total <= 0.5x ptxas; peak memory < 1 GB, also with --jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

# cold figures: ptxas and nvdisasm run in every timed call, whatever ptxforge's result cache
# (ptxforge/toolchain/result_cache.py) holds from earlier runs
os.environ.setdefault("PTXFORGE_CACHE", "off")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale import CLASSES
from scale.corpus import build_corpus
from scale.measure import Run, tools

_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s", re.MULTILINE)


def _fmt_t(run: Run) -> str:
    return ("> " if run.timed_out else "") + f"{run.seconds:.2f}"


def _ratio(num: float, den: float, lower: bool = False) -> str:
    if den <= 0:
        return "-"
    return ("> " if lower else "") + f"{num / den:.2f}x"


def _measure_file(path: Path, env, args, log, analyze: bool = True) -> dict:
    """ptxas, nvdisasm, analyze (text, json, no-compile) on one file (else ptxas, nvdisasm only)."""
    rec = {"file": path.name, "bytes": path.stat().st_size,
           "kernels": len(_ENTRY.findall(path.read_text()))}
    ptxas = env.ptxas(path)
    rec["ptxas"] = ptxas.seconds
    rec["ptxas_rc"] = ptxas.rc
    rec["nvdisasm"] = env.nvdisasm(path).seconds if ptxas.rc == 0 else 0.0
    rec["analyzed"] = analyze
    if not analyze:
        return rec
    jobs = ["--jobs", "1"] if env.analyze_jobs else []
    an = env.ptxforge(["analyze", *jobs, str(path)], args.timeout)
    rec.update(analyze=an.seconds, analyze_rc=an.rc, analyze_timed_out=an.timed_out,
               analyze_err=an.error_line)
    if args.json_row and an.seconds <= args.timeout / 2:   # else it would likely time out too
        js = env.ptxforge(["analyze", *jobs, "--json", str(path)], args.timeout)
        rec.update(json=js.seconds, json_rc=js.rc, json_timed_out=js.timed_out)
    nc = env.ptxforge(["analyze", "--no-compile", str(path)], args.timeout)
    rec.update(no_compile=nc.seconds, no_compile_timed_out=nc.timed_out, no_compile_rc=nc.rc)
    floor = rec["ptxas"] + rec["nvdisasm"]
    log(f"    {path.name:32s} {rec['bytes'] / 1e3:8.0f} KB {rec['kernels']:4d} k  ptxas "
        f"{rec['ptxas']:6.2f}  +nvd {floor:6.2f}  analyze {_fmt_t(an):>8s} "
        f"({_ratio(an.seconds, floor, an.timed_out)})"
        + (f"  rc={an.rc}: {an.error_line}" if an.rc not in (0,) and not an.timed_out else ""))
    return rec


def _class_summary(cls: str, recs: list) -> dict:
    s = {"class": cls, "files": len(recs), "bytes": sum(r["bytes"] for r in recs),
         "kernels": sum(r["kernels"] for r in recs)}
    for k in ("ptxas", "nvdisasm", "analyze", "no_compile"):
        s[k] = sum(r[k] for r in recs)
    s["json"] = sum(r.get("json", 0.0) for r in recs)
    s["json_files"] = sum(1 for r in recs if "json" in r)
    s["json_floor"] = sum(r["ptxas"] + r["nvdisasm"] for r in recs if "json" in r)
    s["json_timed_out"] = sum(1 for r in recs if r.get("json_timed_out"))
    s["timed_out"] = sum(1 for r in recs if r["analyze_timed_out"])
    s["failed"] = sum(1 for r in recs if r["analyze_rc"] != 0 and not r["analyze_timed_out"])
    worst = max(recs, key=lambda r: r["analyze"] / max(r["ptxas"] + r["nvdisasm"], 1e-9))
    s["worst_file"] = worst["file"]
    s["worst_ratio"] = worst["analyze"] / max(worst["ptxas"] + worst["nvdisasm"], 1e-9)
    s["worst_timed_out"] = worst["analyze_timed_out"]
    return s


def _print_table(summaries: list, log) -> None:
    head = (f"{'class':7s} {'files':>5s} {'MB':>6s} {'kern':>5s} {'ptxas':>7s} {'+nvd':>7s} "
            f"{'analyze':>8s} {'/ptxas':>7s} {'/floor':>8s} {'json/fl':>8s} {'worst/fl':>9s} "
            f"{'nocomp/px':>9s}")
    log(head)
    log("-" * len(head))
    for s in summaries:
        floor = s["ptxas"] + s["nvdisasm"]
        lower = s["timed_out"] > 0
        json_ratio = "-" if not s["json_files"] else _ratio(s["json"], s["json_floor"],
                                                             s["json_timed_out"] > 0)
        if s["json_files"] and s["json_files"] < s["files"]:
            json_ratio += "*"
        log(f"{s['class']:7s} {s['files']:5d} {s['bytes'] / 1e6:6.2f} {s['kernels']:5d} "
            f"{s['ptxas']:7.1f} {floor:7.1f} "
            f"{('>' if lower else '') + format(s['analyze'], '.1f'):>8s} "
            f"{_ratio(s['analyze'], s['ptxas'], lower):>7s} "
            f"{_ratio(s['analyze'], floor, lower):>8s} "
            f"{json_ratio:>8s} {_ratio(s['worst_ratio'], 1, s['worst_timed_out']):>9s} "
            f"{_ratio(s['no_compile'], s['ptxas']):>9s}"
            + (f"  ({s['timed_out']} timed out)" if lower else "")
            + (f"  ({s['failed']} failed)" if s["failed"] else ""))


def _total(summaries: list) -> dict:
    t = {"class": "TOTAL"}
    for k in ("files", "bytes", "kernels", "ptxas", "nvdisasm", "analyze", "no_compile", "json",
              "json_files", "json_floor", "json_timed_out", "timed_out", "failed"):
        t[k] = sum(s[k] for s in summaries)
    worst = max(summaries, key=lambda s: s["worst_ratio"])
    t.update(worst_file=worst["worst_file"], worst_ratio=worst["worst_ratio"],
             worst_timed_out=worst["worst_timed_out"])
    return t


def _replay(path: Path) -> int:
    """Print the table and targets of a saved run with this version's code."""
    from scale.rows import targets

    saved = json.loads(path.read_text())
    summaries = [_class_summary(cls, [r for r in recs if r.get("analyzed", True)])
                 for cls, recs in sorted(saved["files"].items(),
                                         key=lambda kv: CLASSES.index(kv[0]))]
    total = _total(summaries)
    _print_table(summaries + [total], print)
    targets(total, saved["env"]["analyze_jobs"], print,
            (saved.get("rows", {}).get("corpus_folder") or {}).get("default --jobs"))
    return 0


def main(argv=None) -> int:
    """Build or load the corpus, measure, print; ``--json`` saves every figure."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--classes", default=",".join(CLASSES),
                   help=f"comma-separated classes (default: all of {','.join(CLASSES)})")
    p.add_argument("--quick", action="store_true",
                   help="a subset: 20 small files, the smallest file of each other class, "
                        "no --json row")
    p.add_argument("--json", metavar="OUT.json", help="save every figure as JSON")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds before a ptxforge command is killed (its figure is then a "
                        "lower bound)")
    p.add_argument("--no-json-row", dest="json_row", action="store_false",
                   help="skip timing `analyze --json` per file (it is skipped anyway on a file whose "
                        "text run took over half the timeout)")
    p.add_argument("--sample-small", type=int, metavar="N",
                   help="time ptxforge per file on N evenly spaced small files only (ptxas on all, "
                        "for the folder rows)")
    p.add_argument("--rounds", type=int, default=2,
                   help="rounds of `check DIR` interleaved with the ptxas loop (default 2): "
                        "each check's ratio is over the loops run just before and after it")
    p.add_argument("--cache", type=Path,
                   help="corpus cache folder (default ~/.cache/ptxforge-bench-scale)")
    p.add_argument("--replay", metavar="IN.json",
                   help="reprint the per-class table and its targets from a saved --json run")
    args = p.parse_args(argv)
    if args.replay:
        return _replay(Path(args.replay))
    classes = [c.strip() for c in args.classes.split(",") if c.strip()]
    bad = [c for c in classes if c not in CLASSES]
    if bad:
        p.error(f"--classes: unknown class {', '.join(bad)}; expected some of {', '.join(CLASSES)}")
    if args.quick:
        args.json_row = False

    def log(line: str) -> None:
        print(line, flush=True)

    corpus = build_corpus(classes, root=args.cache, log=log)
    env = tools(ROOT)
    log(env.describe())
    first = min((f for fs in corpus.files.values() for f in fs), key=lambda f: f.stat().st_size, default=None)
    if first is not None:
        env.warm(first)
    results: dict = {"env": env.as_dict(), "corpus": str(corpus.folder), "skipped": corpus.skipped,
                     "timeout_s": args.timeout, "files": {}, "classes": [], "rows": {}}
    with tempfile.TemporaryDirectory(prefix="ptxforge-bench-scale-") as tmp:
        env.tmp = Path(tmp)
        summaries = []
        for cls in classes:
            if cls not in corpus.files:
                continue
            files = sorted(corpus.files[cls])
            if args.quick:
                by_size = sorted(files, key=lambda f: f.stat().st_size)
                files = files[:20] if cls == "small" else by_size[:1]
            sample = set(files)
            if cls == "small" and args.sample_small and args.sample_small < len(files):
                step = len(files) / args.sample_small
                sample = {files[int(i * step)] for i in range(args.sample_small)}
            log(f"\n[{cls}] {len(files)} files" + (f" (ptxforge timed on {len(sample)} of them, "
                                                     "evenly spaced)" if len(sample) < len(files) else ""))
            recs = [_measure_file(f, env, args, log, f in sample) for f in files]
            results["files"][cls] = recs
            summaries.append(_class_summary(cls, [r for r in recs if r["analyzed"]]))
        if not summaries:
            log("nothing measured")
            return 1
        total = _total(summaries)
        log("\nper class (seconds; one process per file; floor = ptxas + nvdisasm; "
            "ratios: analyze time over the column named; json/fl* over the files the --json run "
            "was timed on)")
        _print_table(summaries + [total], log)
        results["classes"] = summaries + [total]
        from scale.rows import extra_rows
        results["rows"] = extra_rows(env, corpus, classes, results["files"], total, args, log)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True))
        log(f"\nsaved {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
