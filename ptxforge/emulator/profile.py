"""A profile on the interpreter: per-instruction counts, memory requests, sectors, wavefronts.

:class:`Profiler` is an :class:`~.observe.Observer`: it sees every warp-instruction the
interpreter runs (warps are 32 consecutive threads of a block, x fastest) and every memory
access, and computes what Nsight Compute measures on a GPU, where a metric exists:

* **executed** (``smsp__inst_executed.sum``): warp-level executions, a warp counted once
  each time it runs the instruction (its threads predicated off included);
  **threads** (``smsp__thread_inst_executed.sum``): the active threads of those executions,
  **threads_pred_on** (``smsp__thread_inst_executed_pred_on.sum``) those whose guard held.
* **global / local requests and sectors** (``l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum``,
  ``l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum``, ``_op_st``, ``_op_atom``, ``_op_red``,
  ``mem_local``): one request per warp-instruction that touches the space; its sectors are
  the distinct 32-byte blocks its active threads touch.  Local memory is interleaved per warp
  as on the GPU (the same 4-byte word of the 32 lanes' stacks is 128 consecutive bytes), so a
  stack indexed alike by every lane is 4 sectors per 4-byte request.
* **shared wavefronts and bank conflicts**
  (``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum``,
  ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum``): 32 banks of 4 bytes; the
  warp's threads are split into phases of 128 bytes (32 threads for accesses of 1 to 4 bytes,
  16 for 8 bytes, 8 for 16 bytes); a phase takes as many wavefronts as the most distinct
  4-byte words it touches in one bank (the same word is a broadcast); **ways** is that
  number, **wavefronts** its sum over phases, **bank_conflicts** the wavefronts beyond one
  per phase.
* **branch efficiency** (``smsp__sass_average_branch_targets_threads_uniform.pct``): the
  ``bra`` executions whose active threads all went the same way, over all ``bra``
  executions; **active-thread efficiency** (``smsp__thread_inst_executed_per_inst_executed
  .ratio`` / 32): active threads per warp-instruction over 32.

Example::

    >>> from ptxforge.emulator.profile import shared_wavefronts
    >>> import numpy as np
    >>> lanes = np.arange(32)
    >>> shared_wavefronts(np.zeros(32, np.int64), lanes, lanes * 128, 4)   # a 32-way column
    (32, 1, 32)
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from .observe import KIND_BRANCH, Observer, sites
from .values import spread

__all__ = [
    "NSIGHT",
    "InstructionProfile",
    "Profile",
    "Profiler",
    "profile_text",
    "sectors",
    "shared_wavefronts",
]

#: Our figure -> the Nsight Compute metric it corresponds to (``{op}``: ld, st, atom, red).
NSIGHT = {
    "executed": "smsp__inst_executed.sum",
    "threads": "smsp__thread_inst_executed.sum",
    "threads_pred_on": "smsp__thread_inst_executed_pred_on.sum",
    "global.requests": "l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum",
    "global.sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum",
    "local.requests": "l1tex__t_requests_pipe_lsu_mem_local_op_{op}.sum",
    "local.sectors": "l1tex__t_sectors_pipe_lsu_mem_local_op_{op}.sum",
    "shared.requests": "smsp__inst_executed_op_shared_{op}.sum",
    "shared.wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum",
    "shared.bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum",
    "branches": "smsp__sass_inst_executed_op_branch.sum",
    "divergent_branches": "smsp__sass_branch_targets_threads_divergent.sum",
    "branch_efficiency": "smsp__sass_average_branch_targets_threads_uniform.pct",
    "active_thread_efficiency": "smsp__thread_inst_executed_per_inst_executed.ratio / 32",
}


def _runs(*keys: np.ndarray) -> int:
    """How many distinct tuples the parallel arrays ``keys`` hold."""
    if not len(keys[0]):
        return 0
    order = np.lexsort(keys[::-1])
    new = np.zeros(len(order) - 1, bool)
    for k in keys:
        s = k[order]
        new |= s[1:] != s[:-1]
    return 1 + int(np.count_nonzero(new))


def sectors(warps: np.ndarray, addr: np.ndarray, nbytes: int) -> tuple[int, int]:
    """(requests, sectors): the warps and the distinct (warp, 32-byte sector) pairs of an
    access of ``nbytes`` at ``addr`` by threads of ``warps``.

    Example::

        >>> sectors(np.zeros(32, np.int64), np.arange(32) * 4, 4)
        (1, 4)
    """
    a = addr.astype(np.int64)
    first, last = a // 32, (a + nbytes - 1) // 32
    w, s = np.concatenate([warps, warps]), np.concatenate([first, last])
    return _runs(warps), _runs(w, s)


def shared_wavefronts(warps: np.ndarray, lanes: np.ndarray, addr: np.ndarray,
                      nbytes: int) -> tuple[int, int, int]:
    """(wavefronts, phases, ways) of a shared-memory access of ``nbytes`` per thread at
    ``addr`` (bytes) by the threads of ``warps`` at ``lanes`` (the module docstring's rule)."""
    if not len(addr):
        return 0, 0, 0
    per_phase = 32 if nbytes <= 4 else max(1, 128 // nbytes)
    group = warps.astype(np.int64) * 64 + lanes.astype(np.int64) // per_phase
    a = addr.astype(np.int64)
    first, last = a // 4, (a + nbytes - 1) // 4
    span = int((last - first).max()) + 1
    words = first[:, None] + np.arange(span, dtype=np.int64)
    keep = words <= last[:, None]
    g = spread(group[:, None], words.shape)[keep]
    words = words[keep]
    distinct = np.unique(g * (1 << 32) + words)                  # one entry per (phase, word)
    g, words = distinct >> 32, distinct & ((1 << 32) - 1)
    keys, counts = np.unique(g * 32 + words % 32, return_counts=True)   # words per (phase, bank)
    phase_of = keys // 32
    starts = np.flatnonzero(np.r_[True, phase_of[1:] != phase_of[:-1]])
    ways = np.maximum.reduceat(counts, starts)
    return int(ways.sum()), len(starts), int(ways.max())


@attrs.frozen(slots=True, kw_only=True)
class InstructionProfile:
    """One instruction's figures over a launch (see the module docstring for each)."""

    index: int | None
    opcode: str
    family: str
    file: str | None
    line: int | None
    ptx_line: int | None
    space: str | None    # the space(s) it touched ("shared+global"), else the one it names
    direction: str | None    # "ld", "st", "atom", "red" (joined by "+" when several)
    width: int               # bytes per thread of its widest access (0: no access)
    executed: int
    threads: int
    threads_pred_on: int
    requests: int
    sectors: int
    wavefronts: int
    bank_conflicts: int
    ways: int
    branches: int
    divergent_branches: int

    @property
    def sectors_per_request(self) -> float | None:
        """Sectors per global or local request (None: no such request)."""
        return self.sectors / self.requests if self.requests and self.sectors else None

    @property
    def wavefronts_per_request(self) -> float | None:
        """Shared wavefronts per request (None: no shared request)."""
        return self.wavefronts / self.requests if self.requests and self.wavefronts else None

    def to_dict(self) -> dict:
        """The row as JSON-ready data (with the two ratios)."""
        out = attrs.asdict(self)
        out["sectors_per_request"] = self.sectors_per_request
        out["wavefronts_per_request"] = self.wavefronts_per_request
        return out


@attrs.frozen(slots=True, kw_only=True)
class Profile:
    """A launch's profile: ``instructions`` (one :class:`InstructionProfile` per instruction of
    the decoded kernel, in program order), ``memory`` (per (space, op): requests, sectors,
    wavefronts, bank conflicts), and the kernel totals as properties."""

    kernel: str
    grid: tuple
    block: tuple
    instructions: tuple
    memory: tuple          # ((space, op, requests, sectors, wavefronts, bank_conflicts), ...)

    @property
    def executed(self) -> int:
        """Warp-level instructions executed (``smsp__inst_executed.sum``)."""
        return sum(r.executed for r in self.instructions)

    @property
    def threads(self) -> int:
        """Thread-level instructions executed (``smsp__thread_inst_executed.sum``)."""
        return sum(r.threads for r in self.instructions)

    @property
    def branches(self) -> int:
        return sum(r.branches for r in self.instructions)

    @property
    def divergent_branches(self) -> int:
        return sum(r.divergent_branches for r in self.instructions)

    @property
    def branch_efficiency(self) -> float | None:
        """Uniform ``bra`` executions over all (1.0 = none divergent; None: no branch)."""
        b = self.branches
        return (b - self.divergent_branches) / b if b else None

    @property
    def active_thread_efficiency(self) -> float | None:
        """Active threads per executed warp-instruction, over 32."""
        return self.threads / (32 * self.executed) if self.executed else None

    @property
    def mix(self) -> dict:
        """Warp-level executions by opcode family (memory families with their space:
        ``ld.global``), most executed first."""
        out: dict = {}
        for r in self.instructions:
            if r.executed:
                key = f"{r.family}.{r.space}" if r.space else r.family
                out[key] = out.get(key, 0) + r.executed
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))

    def metrics(self) -> dict:
        """Kernel totals by Nsight Compute metric name (where one exists)."""
        out = {NSIGHT["executed"]: self.executed, NSIGHT["threads"]: self.threads,
               NSIGHT["threads_pred_on"]: sum(r.threads_pred_on for r in self.instructions),
               NSIGHT["branches"]: self.branches,
               NSIGHT["divergent_branches"]: self.divergent_branches}
        for space, op, req, sec, wave, conf in self.memory:
            out[NSIGHT[f"{space}.requests"].format(op=op)] = req
            if space == "shared":
                out[NSIGHT["shared.wavefronts"].format(op=op)] = wave
                out[NSIGHT["shared.bank_conflicts"].format(op=op)] = conf
            else:
                out[NSIGHT[f"{space}.sectors"].format(op=op)] = sec
        eff = self.branch_efficiency
        out[NSIGHT["branch_efficiency"]] = None if eff is None else round(100 * eff, 2)
        return out

    def to_dict(self) -> dict:
        """The profile as JSON-ready data."""
        return {"kernel": self.kernel, "grid": list(self.grid), "block": list(self.block),
                "executed": self.executed, "threads": self.threads,
                "branch_efficiency": self.branch_efficiency,
                "active_thread_efficiency": self.active_thread_efficiency,
                "mix": self.mix, "nsight": self.metrics(), "nsight_names": dict(NSIGHT),
                "instructions": [r.to_dict() for r in self.instructions if r.executed]}


_FIELDS = ("executed", "threads", "threads_pred_on", "requests", "sectors", "wavefronts",
           "bank_conflicts", "ways", "branches", "divergent_branches")


class Profiler(Observer):
    """Collects a :class:`Profile` over one or more launches of one kernel (:meth:`result`)."""

    def __init__(self) -> None:
        self._prog = None
        self._sites: tuple = ()
        self._counts: dict = {}
        self._spaces: dict = {}
        self._ops: dict = {}
        self._width: dict = {}
        self._memory: dict = {}
        self._m: Any = None   # the Machine of the current wave
        self._warps: Any = None   # (machine, thread indices, their warps, warps spanned)
        self._pc = 0

    def _start(self, prog) -> None:
        self._prog = prog
        self._sites = sites(prog)
        # plain lists: one scalar update per instruction step costs less than on an array
        self._counts = {f: [0] * len(prog.insts) for f in _FIELDS}
        self._spaces, self._ops, self._width = {}, {}, {}

    def step(self, m, pc, idx, take, kind) -> None:
        if m.prog is not self._prog:
            self._start(m.prog)
        self._m, self._pc = m, pc
        c = self._counts
        seen = self._warps
        if seen is not None and seen[0] is m and seen[1] is idx:   # the same threads as the
            w, n = seen[2], seen[3]                                  # step before: straight code
        else:
            w = m.warp_id[idx]
            n = 1 + int(np.count_nonzero(w[1:] != w[:-1]))
            self._warps = (m, idx, w, n)
        c["executed"][pc] += n
        c["threads"][pc] += len(idx)
        c["threads_pred_on"][pc] += len(take)
        if kind == KIND_BRANCH and len(idx):
            uw, inv = np.unique(w, return_inverse=True)
            active = np.bincount(inv, minlength=len(uw))
            taken = np.bincount(np.searchsorted(uw, m.warp_id[take]), minlength=len(uw))
            c["branches"][pc] += len(uw)
            c["divergent_branches"][pc] += int(np.count_nonzero((taken > 0) & (taken < active)))

    def access(self, space, threads, addr, flat, nbytes, data) -> None:
        if space not in ("global", "shared", "local") or not len(threads):
            return
        m, pc = self._m, self._pc
        fam = self._sites[pc].family
        op = fam if fam in ("atom", "red") else ("ld" if data is None else "st")
        warps = m.warp_id[threads]
        c = self._counts
        wave = conf = sec = 0
        if space == "shared":
            wave, phases, ways = shared_wavefronts(warps, m.lane[threads], addr, nbytes)
            req = _runs(warps)
            conf = wave - phases
            c["wavefronts"][pc] += wave
            c["bank_conflicts"][pc] += conf
            c["ways"][pc] = max(int(c["ways"][pc]), ways)
        else:
            if space == "local":  # the GPU interleaves local memory per warp, 4-byte words
                a = addr.astype(np.int64)
                addr = (a // 4) * 128 + m.lane[threads] * 4 + a % 4
            req, sec = sectors(warps, addr, nbytes)
            c["sectors"][pc] += sec
        c["requests"][pc] += req
        self._spaces.setdefault(pc, set()).add(space)
        self._ops.setdefault(pc, set()).add(op)
        self._width[pc] = max(self._width.get(pc, 0), nbytes)
        tot = self._memory.setdefault((space, op), [0, 0, 0, 0])
        for k, v in enumerate((req, sec, wave, conf)):
            tot[k] += v

    def result(self, kernel: str, grid: tuple, block: tuple) -> Profile:
        """The :class:`Profile` of what was observed."""
        rows = []
        for pc, site in enumerate(self._sites):
            figures = {f: int(self._counts[f][pc]) for f in _FIELDS}
            seen = self._spaces.get(pc)
            space = "+".join(sorted(seen)) if seen else site.space
            ops = self._ops.get(pc)
            rows.append(InstructionProfile(index=site.index, opcode=site.opcode,
                                           family=site.family, file=site.file, line=site.line,
                                           ptx_line=site.ptx_line, space=space,
                                           direction="+".join(sorted(ops)) if ops else None,
                                           width=self._width.get(pc, 0), **figures))
        memory = tuple((s, o, *v) for (s, o), v in sorted(self._memory.items()))
        return Profile(kernel=kernel, grid=tuple(grid), block=tuple(block),
                       instructions=tuple(rows), memory=memory)



def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}".rstrip("0").rstrip(".")


def profile_text(prof: Profile, top_mix: int = 12) -> str:
    """The profile as text: totals, memory instructions in program order, Nsight names, mix."""
    eff, act = prof.branch_efficiency, prof.active_thread_efficiency
    active = "-" if act is None else f"{100 * act:.1f}%"
    branch = "-" if eff is None else f"{100 * eff:.1f}%"
    summary = (f"  {prof.executed:,} warp-instructions, {prof.threads:,} thread-instructions; "
               f"active threads per warp-instruction {_ratio(act and 32 * act)}/32 ({active}); "
               f"branch efficiency {branch} ({prof.divergent_branches} of {prof.branches} "
               "branches divergent)")
    lines = [f"kernel {prof.kernel}: grid {prof.grid}, block {prof.block} (on the interpreter)",
             summary, ""]
    mem = [r for r in prof.instructions if r.executed and r.requests]
    if mem:
        lines.append(f"{'line':>6} {'#':>4}  {'opcode':<24} {'space':<7} {'executed':>8} "
                     f"{'requests':>8} {'sectors':>8} {'sec/req':>7} {'wavefr':>7} "
                     f"{'wf/req':>6} {'ways':>4} {'conflicts':>9}")
        for r in mem:
            shared = r.wavefronts > 0
            lines.append(
                f"{r.line if r.line is not None else '-':>6} "
                f"{r.index if r.index is not None else '-':>4}  {r.opcode[:24]:<24} "
                f"{r.space or '-':<7} {r.executed:>8} {r.requests:>8} "
                f"{r.sectors if not shared else '-':>8} {_ratio(r.sectors_per_request):>7} "
                f"{r.wavefronts if shared else '-':>7} {_ratio(r.wavefronts_per_request):>6} "
                f"{r.ways if shared else '-':>4} {r.bank_conflicts if shared else '-':>9}")
        lines.append("")
    lines.append("Nsight Compute metrics (the same definitions, measured on the interpreter):")
    for name, value in prof.metrics().items():
        lines.append(f"  {name:<62} {'-' if value is None else value}")
    mix = list(prof.mix.items())[:top_mix]
    if mix:
        lines += ["", "instruction mix (warp-level): " + ", ".join(f"{k} {v}" for k, v in mix)]
    return "\n".join(lines) + "\n"
