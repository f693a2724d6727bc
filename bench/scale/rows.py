"""The benchmark's rows after the per-class table: small file, folders, --jobs, memory, targets.

Each row is measured in the same run as the table it is compared with; a row the installed
ptxforge cannot run prints "not supported by this ptxforge".

Example::

    >>> _verdict(1.2, 1.5)
    'ok'
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from .measure import Run, run_timed

__all__ = ["extra_rows", "targets"]

_NOT = "not supported by this ptxforge"
#: A CI budget for ``check DIR`` (check refuses to run without one).
_BUDGET = ["--max-registers", "128", "--no-spills"]


def _verdict(value: float, limit: float, lower: bool = False) -> str:
    if value <= limit and not lower:
        return "ok"
    return "MISSED"


def _best(runs: list) -> Run:
    return min(runs, key=lambda r: r.seconds)


def _small_file_row(env, files: dict, log) -> dict:
    """The file nearest 10 KB: analyze (best of 3) against ``python -c pass`` (best of 5)."""
    cands = [(abs(r["bytes"] - 10_000), cls, r["file"]) for cls, recs in files.items()
             for r in recs if r["kernels"] > 0 and r["analyzed"]]
    if not cands:
        return {}
    _, cls, name = min(cands)
    path = env.corpus_folder / cls / name
    py = _best([run_timed([sys.executable, "-c", "pass"]) for _ in range(5)])
    an = _best([env.ptxforge(["analyze", str(path)], 120) for _ in range(3)])
    ptxas = _best([env.ptxas(path) for _ in range(3)])
    nvd = _best([env.nvdisasm(path) for _ in range(3)])
    with tempfile.TemporaryDirectory(prefix="bench-result-cache-") as cache:
        env.ptxforge(["analyze", str(path)], 120, cache=cache)     # fills the cache
        warm = _best([env.ptxforge(["analyze", str(path)], 120, cache=cache) for _ in range(3)])
    ratio = an.seconds / py.seconds
    ok = an.seconds <= 0.4 or ratio <= 8
    log(f"\n~10 KB file {cls}/{name} ({path.stat().st_size / 1e3:.1f} KB): analyze {an.seconds:.3f} s, "
        f"python -c pass {py.seconds:.3f} s -> {ratio:.1f}x (ptxas {ptxas.seconds:.3f} s, "
        f"nvdisasm {nvd.seconds:.3f} s, analyze/ptxas {an.seconds / ptxas.seconds:.1f}x)  "
        f"target <= 0.4 s or <= 8x: {'ok' if ok else 'MISSED'}\n"
        f"   the same with ptxas's and nvdisasm's results in the result cache (a second run): "
        f"{warm.seconds:.3f} s, {warm.seconds / py.seconds:.1f}x python -c pass")
    return {"file": f"{cls}/{name}", "analyze": an.seconds, "python_pass": py.seconds,
            "ptxas": ptxas.seconds, "nvdisasm": nvd.seconds, "ratio_python": ratio, "ok": ok,
            "analyze_cached": warm.seconds}


def _folder(corpus, files: dict, tmp: Path, quick: bool) -> Path:
    """The small-file folder measured (the corpus folder, or a copy of the quick subset)."""
    if not quick:
        return corpus.folder / "small"
    sub = tmp / "small-subset"
    sub.mkdir(exist_ok=True)
    for r in files["small"]:
        shutil.copy(corpus.folder / "small" / r["file"], sub / r["file"])
    return sub


def _ptxas_loop(env, folder: Path, recs: list) -> tuple:
    """``(wall, cpu)`` seconds of ptxas on every file of the folder, one process each, as the
    per-file table runs it."""
    runs = [env.ptxas(folder / r["file"]) for r in recs]
    return sum(r.seconds for r in runs), sum(r.cpu for r in runs)


def _interleaved(env, folder: Path, recs: list, variants: list, timeout: float, rounds: int,
                 log) -> dict:
    """``{label: [round, ...]}``: each round runs the ptxas loop, every variant, and the loop
    again; a variant's ratio is over the mean of the two loops around it (one run, so the
    load of the other processes on the machine weighs on both sides alike).  The CPU seconds
    (the command's and its children's, ptxas included) are beside the wall time: on a loaded
    machine they vary less."""
    per: dict = {label: [] for label, _, _ in variants}
    for i in range(rounds):
        load = os.getloadavg()[0]
        before = _ptxas_loop(env, folder, recs)
        runs = [(label, env.ptxforge(args, timeout)) for label, args, _ in variants]
        after = _ptxas_loop(env, folder, recs)
        px, px_cpu = (before[0] + after[0]) / 2, (before[1] + after[1]) / 2
        log(f"  round {i + 1}: load average {load:.2f}; ptxas loop {before[0]:.2f} s before, "
            f"{after[0]:.2f} s after (CPU {px_cpu:.2f} s)")
        for (label, run), (_, _, jobs) in zip(runs, variants):
            ok_rc = run.rc in (0, 1) and not run.timed_out
            note = "" if ok_rc else (f" (rc={run.rc}{', timed out' if run.timed_out else ''}: "
                                     f"{run.error_line})")
            target = " target <= 1.2x" if jobs in (None, 1) else ""
            log(f"    {label:28s} {('> ' if run.timed_out else '') + format(run.seconds, '.2f'):>9s}"
                f" s  {run.seconds / px:.2f}x ptxas loop{target}; CPU {run.cpu:.2f} s, "
                f"{run.cpu / px_cpu:.2f}x the loop's{note}")
            per[label].append({"seconds": run.seconds, "rc": run.rc, "timed_out": run.timed_out,
                               "ptxas_loop": px, "ratio_ptxas": run.seconds / px, "load": load,
                               "cpu": run.cpu, "ptxas_loop_cpu": px_cpu,
                               "cpu_ratio_ptxas": run.cpu / px_cpu})
    return per


def _check_rows(env, folder: Path, recs: list, timeout: float, tmp: Path, log,
                rounds: int = 2) -> dict:
    """``check DIR`` (--jobs 1, 2; interleaved with the ptxas loop, ``rounds`` times) and
    ``analyze --no-compile DIR`` against ptxas's total."""
    ptxas_total = sum(r["ptxas"] for r in recs)
    timed = [r for r in recs if r["analyzed"]]
    per_file_nc = sum(r["no_compile"] for r in timed) * len(recs) / max(1, len(timed))
    out: dict = {"folder": str(folder), "files": len(recs), "ptxas_total": ptxas_total}
    log(f"\nfolder of {len(recs)} small files: ptxas total {ptxas_total:.2f} s (per-file table); "
        f"check budget {' '.join(_BUDGET)}; {rounds} rounds of the ptxas loop, check, the loop")
    variants = [("check DIR", ["check", *_BUDGET, str(folder)], None)]
    if env.supports_jobs("check"):
        variants = [("check --jobs 1 DIR", ["check", "--jobs", "1", *_BUDGET, str(folder)], 1),
                    ("check --jobs 2 DIR", ["check", "--jobs", "2", *_BUDGET, str(folder)], 2)]
    per = _interleaved(env, folder, recs, variants, timeout, max(1, rounds), log)
    for label, _, jobs in variants:
        rs = per[label]
        ratio = statistics.median(r["ratio_ptxas"] for r in rs)
        out[label] = {"seconds": statistics.median(r["seconds"] for r in rs),
                      "rc": max(r["rc"] for r in rs), "timed_out": any(r["timed_out"] for r in rs),
                      "ratio_ptxas": ratio, "rounds": rs}
        out[label]["cpu_ratio_ptxas"] = cpu = statistics.median(r["cpu_ratio_ptxas"] for r in rs)
        target = f"  target <= 1.2x  {_verdict(ratio, 1.2)}" if jobs in (None, 1) else ""
        log(f"  {label:28s} median {ratio:.2f}x the ptxas loop over {len(rs)} rounds (CPU "
            f"{cpu:.2f}x){target}")
    first = out[variants[0][0]]
    if first["rc"] not in (0, 1) and not first["timed_out"]:
        # real build folders hold globals-only PTX files; time the rest too, so the row has a figure
        units = tmp / "small-kernels-only"
        units.mkdir(exist_ok=True)
        kept = [r for r in recs if r["kernels"] > 0]
        for r in kept:
            shutil.copy(folder / r["file"], units / r["file"])
        ptxas_kept = sum(r["ptxas"] for r in kept)
        run = env.ptxforge([*variants[0][1][:-1], str(units)], timeout)
        log(f"  {variants[0][0]} without the {len(recs) - len(kept)} globals-only files: "
            f"{('> ' if run.timed_out else '') + format(run.seconds, '.2f')} s  "
            f"{run.seconds / ptxas_kept:.2f}x their ptxas total ({ptxas_kept:.2f} s)  target <= 1.2x"
            + ("" if run.rc in (0, 1) else f" (rc={run.rc}: {run.error_line})"))
        out["check_kernels_only"] = {"seconds": run.seconds, "rc": run.rc, "files": len(kept),
                                     "ptxas_total": ptxas_kept, "ratio_ptxas": run.seconds / ptxas_kept}
    if not env.supports_jobs("check"):
        log(f"  check --jobs 1 / --jobs 2 DIR: {_NOT}")
    else:
        rs = zip(out["check --jobs 1 DIR"]["rounds"], out["check --jobs 2 DIR"]["rounds"])
        j2_j1 = statistics.median(b["seconds"] / a["seconds"] for a, b in rs)
        out["jobs2_over_jobs1"] = j2_j1
        log(f"  check --jobs 2 / --jobs 1 (median of the rounds): {j2_j1:.2f}  target < 1  "
            f"{_verdict(j2_j1, 0.999)}")
    scaled = "" if len(timed) == len(recs) else f" (sampled {len(timed)} files, scaled to {len(recs)})"
    log(f"  analyze --no-compile, one process per file{scaled}: {per_file_nc:.2f} s = "
        f"{per_file_nc / ptxas_total:.2f}x ptxas total  target <= 0.5x")
    out["no_compile_per_file"] = per_file_nc
    run = env.ptxforge(["analyze", "--no-compile", str(folder)], timeout)
    if run.rc == 0 and not run.timed_out:
        log(f"  analyze --no-compile DIR (folder mode): {run.seconds:.2f} s = "
            f"{run.seconds / ptxas_total:.2f}x ptxas total  target <= 0.5x")
        out["no_compile_dir"] = run.seconds
    else:
        log(f"  analyze --no-compile DIR (folder mode): {_NOT}, or it failed "
            f"(rc={run.rc}{', timed out' if run.timed_out else ''}: {run.error_line})")
        out["no_compile_dir"] = None
    return out


def _jobs_rows(env, path: Path, timeout: float, log) -> dict:
    """``analyze --jobs 1`` and ``--jobs 2`` on the many-kernel file."""
    if not env.analyze_jobs:
        log(f"\n--jobs scaling of analyze on {path.name}: {_NOT}")
        return {"supported": False}
    runs = {j: env.ptxforge(["analyze", "--jobs", str(j), str(path)], timeout) for j in (1, 2)}
    lower = runs[1].timed_out or runs[2].timed_out
    log(f"\n--jobs scaling of analyze on {path.name}: jobs 1 {runs[1].seconds:.2f} s, jobs 2 "
        f"{runs[2].seconds:.2f} s -> jobs2/jobs1 {runs[2].seconds / runs[1].seconds:.2f}"
        + (" (a run timed out)" if lower else ""))
    return {"supported": True, "jobs1": runs[1].seconds, "jobs2": runs[2].seconds,
            "timed_out": lower}


def _memory_rows(env, path: Path, timeout: float, log) -> dict:
    """Peak memory of ``analyze`` on the largest file, with and without ``--jobs 2``."""
    out = {"file": path.name, "bytes": path.stat().st_size}
    log(f"\npeak memory, analyze {path.name} ({path.stat().st_size / 1e6:.2f} MB)  target < 1 GB")
    variants = [("default", [])]
    variants.append(("--jobs 2", ["--jobs", "2"]) if env.analyze_jobs else ("--jobs 2", None))
    for label, extra in variants:
        if extra is None:
            log(f"  {label:9s}: {_NOT}")
            continue
        run = env.ptxforge(["analyze", *extra, str(path)], timeout, sample_tree=True)
        peak = max(run.max_rss, run.tree_rss)
        log(f"  {label:9s}: max RSS of one process {run.max_rss / 2**20:.0f} MiB, process tree "
            f"(sampled) {run.tree_rss / 2**20:.0f} MiB in {run.seconds:.1f} s"
            + (" (killed at the timeout: the peak so far)" if run.timed_out else "")
            + f"  {_verdict(peak / 2**30, 1.0)}{' so far' if run.timed_out else ''}")
        out[label] = {"max_rss": run.max_rss, "tree_rss": run.tree_rss, "seconds": run.seconds,
                      "timed_out": run.timed_out}
    return out


def _corpus_folder_row(env, corpus, files: dict, tmp: Path, timeout: float, log) -> dict:
    """``analyze --no-compile DIR`` over every file the table timed, gathered in one folder
    (links to the corpus files): one process for the whole build, default ``--jobs`` and
    ``--jobs 1``, against the same files' ptxas total from the table."""
    folder = tmp / "every-class"
    folder.mkdir(exist_ok=True)
    timed = [(cls, r) for cls, recs in files.items() for r in recs if r["analyzed"]]
    for cls, r in timed:
        (folder / f"{cls}-{r['file']}").symlink_to(corpus.folder / cls / r["file"])
    ptxas_total, n = sum(r["ptxas"] for _, r in timed), len(timed)
    out: dict = {"files": n, "ptxas_total": ptxas_total}
    log(f"\nanalyze --no-compile over the {n} timed files in one folder (one process; "
        f"their ptxas total {ptxas_total:.2f} s)")
    for label, extra in (("default --jobs", []), ("--jobs 1", ["--jobs", "1"])):
        run = env.ptxforge(["analyze", "--no-compile", *extra, str(folder)], timeout)
        if run.rc != 0 or run.timed_out:
            log(f"  {label:15s}: {_NOT}, or it failed (rc={run.rc}"
                f"{', timed out' if run.timed_out else ''}: {run.error_line})")
            out[label] = None
            continue
        target = "  target <= 0.5x" if not extra else ""
        log(f"  {label:15s}: {run.seconds:.2f} s = {run.seconds / ptxas_total:.2f}x ptxas total "
            f"(CPU {run.cpu:.2f} s){target}")
        out[label] = {"seconds": run.seconds, "cpu": run.cpu,
                      "ratio_ptxas": run.seconds / ptxas_total}
    return out


def extra_rows(env, corpus, classes, files: dict, total: dict, args, log) -> dict:
    """Every row after the per-class table, and the targets block."""
    env.corpus_folder = corpus.folder
    rows: dict = {"small_file": _small_file_row(env, files, log)}
    if "small" in files:
        with tempfile.TemporaryDirectory(prefix="ptxforge-bench-dir-") as tmp:
            folder = _folder(corpus, files, Path(tmp), args.quick)
            rows["folder"] = _check_rows(env, folder, files["small"], 3 * args.timeout, Path(tmp),
                                         log, getattr(args, "rounds", 2))
    if any(r["analyzed"] for recs in files.values() for r in recs):
        with tempfile.TemporaryDirectory(prefix="ptxforge-bench-corpus-") as tmp:
            rows["corpus_folder"] = _corpus_folder_row(env, corpus, files, Path(tmp),
                                                       3 * args.timeout, log)
    many = [corpus.folder / "many" / r["file"] for r in files.get("many", [])]
    if many:
        rows["jobs"] = _jobs_rows(env, many[0], args.timeout, log)
    every = [corpus.folder / cls / r["file"] for cls, recs in files.items() for r in recs
             if r["kernels"] > 0]
    if every:
        rows["memory"] = _memory_rows(env, max(every, key=lambda p: p.stat().st_size),
                                      args.timeout, log)
    targets(total, env.analyze_jobs, log, (rows.get("corpus_folder") or {}).get("default --jobs"))
    return rows


def targets(total: dict, analyze_jobs: bool, log, folder_nc: dict | None = None) -> None:
    """The targets that follow from the per-class table's total (``folder_nc``: the
    ``--no-compile`` run over every timed file in one folder, when there was one)."""
    floor = total["ptxas"] + total["nvdisasm"]
    lower = total["timed_out"] > 0
    log("\ntargets (issue 24), measured in this run:")
    log(f"  analyze total / (ptxas + nvdisasm) {'>' if lower else ''}{total['analyze'] / floor:.2f}x"
        f"  target <= 1.5x{' with --jobs 1' if analyze_jobs else ' (this ptxforge has no --jobs)'}"
        f"  {_verdict(total['analyze'] / floor, 1.5, lower)}")
    log(f"  worst file {total['worst_file']}: {'>' if total['worst_timed_out'] else ''}"
        f"{total['worst_ratio']:.2f}x  target <= 2.5x  "
        f"{_verdict(total['worst_ratio'], 2.5, total['worst_timed_out'])}")
    log(f"  analyze --no-compile total / ptxas, one process per file "
        f"{total['no_compile'] / total['ptxas']:.2f}x  target <= 0.5x  "
        f"{_verdict(total['no_compile'] / total['ptxas'], 0.5)}")
    if folder_nc:
        log(f"  analyze --no-compile DIR over every timed file, one process: "
            f"{folder_nc['ratio_ptxas']:.2f}x  target <= 0.5x  "
            f"{_verdict(folder_nc['ratio_ptxas'], 0.5)}")
