"""Run one command as a child, timed, with its peak memory; the tools the benchmark compares.

``run_timed`` starts the command in its own process group, waits with ``os.wait4`` (so the
child's own ``ru_maxrss`` comes back, which covers its reaped children as the largest one), kills
the group after ``timeout`` seconds, and can sample the resident memory summed over the child's
whole process tree (a ``--jobs`` pool's workers are alive together, so their sum is the peak
the machine sees).

Example::

    >>> run_timed([sys.executable, "-c", "pass"]).rc
    0
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Env", "Run", "run_timed", "tools"]

_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class Run:
    """One child's outcome: exit status, wall seconds, killed or not, peak memory (bytes)."""

    rc: int
    seconds: float
    timed_out: bool = False
    max_rss: int = 0          # wait4's ru_maxrss of the child (its largest process)
    tree_rss: int = 0         # sampled peak of the RSS summed over the child's process tree
    cpu: float = 0.0          # user + system seconds of the child and its reaped children
    stdout: str = ""
    error_line: str = ""


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and its descendants (from /proc; 0 where unreadable)."""
    parents: dict = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2:].split()[1])
        parents.setdefault(ppid, []).append(int(name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(parents.get(pid, ()))
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                total += int(fh.read().split()[1]) * _PAGE
        except (OSError, IndexError, ValueError):
            pass
    return total


def run_timed(cmd: list, timeout: float | None = None, env: dict | None = None,
              sample_tree: bool = False, keep_stdout: bool = False) -> Run:
    """Run ``cmd``; wall time, exit status, peak memory; killed (group) after ``timeout`` s."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True)
        killed = threading.Event()
        peak = [0]
        done = threading.Event()

        def kill() -> None:
            if not done.wait(timeout):
                killed.set()
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass

        def sample() -> None:
            while not done.wait(0.05):
                peak[0] = max(peak[0], _tree_rss(proc.pid))

        threads = []
        if timeout is not None:
            threads.append(threading.Thread(target=kill, daemon=True))
        if sample_tree:
            threads.append(threading.Thread(target=sample, daemon=True))
        for th in threads:
            th.start()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        done.set()
        proc.returncode = os.waitstatus_to_exitcode(status)
        for th in threads:
            th.join()
        out.seek(0)
        err.seek(0)
        stderr = err.read().decode(errors="replace").strip()
        stdout = out.read().decode(errors="replace") if keep_stdout else ""
    line = stderr.splitlines()[-1][:200] if stderr else ""
    return Run(rc=proc.returncode, seconds=seconds, timed_out=killed.is_set(),
               max_rss=usage.ru_maxrss * 1024, tree_rss=peak[0], stdout=stdout, error_line=line,
               cpu=usage.ru_utime + usage.ru_stime)


class Env:
    """The executables compared (ptxas, nvdisasm, ptxforge) and what this ptxforge supports."""

    def __init__(self, root: Path, ptxas: str, nvdisasm: str) -> None:
        self.root = root
        self.ptxas_exe = ptxas
        self.nvdisasm_exe = nvdisasm
        self.tmp = Path(tempfile.gettempdir())
        self.env = dict(os.environ)
        # byte-code caches as an installed package has them: a machine that sets
        # PYTHONDONTWRITEBYTECODE (this one does) would otherwise time the compiling of every
        # changed module in every process; a cache of the bench's own keeps the tree clean
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "ptxforge-bench-pycache")
        # cold figures: ptxas and nvdisasm run in every timed command (the package's result
        # cache would answer a file timed before; rows.py times it warm on its own)
        self.env["PTXFORGE_CACHE"] = "off"
        self.env["PYTHONPATH"] = os.pathsep.join(
            [str(root)] + ([self.env["PYTHONPATH"]] if self.env.get("PYTHONPATH") else []))
        script = Path(sys.executable).parent / "ptxforge"
        self.cli = [str(script)] if script.exists() else [sys.executable, "-m", "ptxforge"]
        self.help = {cmd: self._help(cmd) for cmd in ("analyze", "check", "diff", "report", "sass")}
        self.analyze_jobs = "--jobs" in self.help["analyze"]

    def _help(self, cmd: str) -> str:
        return run_timed(self.cli + [cmd, "--help"], 120, self.env, keep_stdout=True).stdout

    def warm(self, ptx: Path) -> None:
        """Run each timed command once on ``ptx`` untimed, so the byte-code cache holds every
        module they import (the first process after a change compiles them)."""
        for args in (["analyze", str(ptx)], ["analyze", "--json", str(ptx)],
                     ["analyze", "--no-compile", str(ptx)], ["check", "--max-registers", "255", str(ptx)]):
            run_timed(self.cli + args, 300, self.env)

    def supports_jobs(self, cmd: str) -> bool:
        """Whether ``ptxforge CMD --help`` lists ``--jobs``."""
        return "--jobs" in self.help.get(cmd, "")

    def cubin(self, ptx: Path) -> Path:
        """Where ptxas writes the cubin of ``ptx``."""
        return self.tmp / (ptx.stem + ".cubin")

    def ptxas(self, ptx: Path) -> Run:
        """``ptxas -arch=sm_80 -v -O3 -lineinfo PTX -o CUBIN`` (ptxforge's default flags)."""
        return run_timed([self.ptxas_exe, "-arch=sm_80", "-v", "-O3", "-lineinfo", str(ptx),
                          "-o", str(self.cubin(ptx))])

    def nvdisasm(self, ptx: Path) -> Run:
        """The nvdisasm run ptxforge's SASS read makes on the cubin of ``ptx`` (``-c
        --life-range-mode narrow``; the line tables come from the cubin itself)."""
        return run_timed([self.nvdisasm_exe, "-c", "--life-range-mode", "narrow",
                          str(self.cubin(ptx))])

    def ptxforge(self, args: list, timeout: float | None = None, sample_tree: bool = False,
                 cache: str | None = None) -> Run:
        """``ptxforge ARGS`` as a user runs it (this checkout's ptxforge first on PYTHONPATH);
        ``cache``: a folder for the result cache (default: the cache off, a cold run)."""
        env = self.env if cache is None else dict(self.env, PTXFORGE_CACHE="on",
                                                  PTXFORGE_CACHE_DIR=cache)
        return run_timed(self.cli + args, timeout, env, sample_tree=sample_tree)

    def describe(self) -> str:
        """Which executables are compared."""
        return (f"ptxas:    {self.ptxas_exe}\nnvdisasm: {self.nvdisasm_exe}\n"
                f"ptxforge: {' '.join(self.cli)} (PYTHONPATH={self.root}); analyze --jobs: "
                f"{'yes' if self.analyze_jobs else 'no'}")

    def as_dict(self) -> dict:
        """The executables, for the JSON record."""
        return {"ptxas": self.ptxas_exe, "nvdisasm": self.nvdisasm_exe, "ptxforge": self.cli,
                "analyze_jobs": self.analyze_jobs, "cpus": os.cpu_count()}


def tools(root: Path) -> Env:
    """The ptxas and nvdisasm ptxforge itself picks (asked in a child, from this checkout)."""
    code = ("from ptxforge.toolchain.backends import PtxasBackend, find_ptxas\n"
            "from ptxforge.toolchain.sass import find_nvdisasm\n"
            "b = PtxasBackend().for_target('sm_80')\n"
            "print(b.path if b is not None and b.path else find_ptxas()[0])\n"
            "print(find_nvdisasm())\n")
    env = dict(os.environ, PYTHONPATH=str(root))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=False)
    if res.returncode != 0:
        raise SystemExit(f"bench_scale: could not ask ptxforge for ptxas and nvdisasm:\n{res.stderr}")
    ptxas, nvdisasm = res.stdout.split()[:2]
    return Env(root, ptxas, nvdisasm)
