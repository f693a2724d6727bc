"""Data races on the interpreter: conflicting shared and global accesses no barrier orders.

:class:`RaceDetector` is an :class:`~.observe.Observer`.  It keeps, for every byte of shared
memory (per block) and of global memory, the last write and two reads (thread, instruction,
block and the block's *barrier interval*: how many ``bar.sync`` / ``barrier.sync`` have
released the block).  Two accesses to one byte by different threads, at least one a write,
race when nothing orders them (an atomic, ``atom`` or ``red``, counts as a read and a write,
and a strong load or store, ``.volatile``, ``.relaxed``, ``.acquire``, ``.release``, as a read
or a write, that race only with plain accesses: they never race with each other):

* **shared memory**: both in the same barrier interval of their block;
* **global memory**: threads of different blocks (nothing orders blocks within a launch), or
  of one block in the same barrier interval.  In a cooperative launch (every block at once),
  an access is ordered after another block's once every block has passed a barrier since
  (what ``this_grid().sync()`` does: a block barrier around a grid-wide arrival).

An ``mbarrier`` phase that completes (``cuda::barrier``, ``cuda::pipeline``) starts a new
interval for its block, as a ``bar.sync`` does.

A read of a byte another thread wrote earlier in the interval is ``RAW`` (read after write),
a write of a byte another thread read is ``WAR``, a write of a byte another thread wrote is
``WAW`` (``same_value`` says whether every such write wrote the bytes already there: still a
race in the memory model, but a benign one in practice).  ``mbarrier`` operations
synchronise and are not accesses here.  The order is the interpreter's (one
legal schedule): a pair that races is reported whichever order the GPU would pick, under
the kind this run saw.  Each pair of instructions is reported once, with the first address
and threads seen.

A ``bar.warp.sync`` (``__syncwarp``) orders the accesses of the threads of one warp that
meet at it: each thread keeps a clock per lane of its warp (a vector clock), which ticks for
its own lane at the sync and joins the clocks of the warp's other threads that run the same
sync; an earlier access by a thread of the same warp is ordered before the current one when
the current thread has seen a later tick of that thread's lane.  The threads that meet are
the ones the interpreter runs together at the sync (the mask operand is not read).  A warp
sync orders nothing between two warps: a reduction across two warps with ``__syncwarp`` only
still races.  Not modelled: memory fences (``membar``, ``fence``, ``__threadfence``) without
a barrier order nothing, and the implicit synchronisation of ``shfl.sync``/``vote.sync``
orders no memory access.

Example::

    >>> RaceDetector().races
    []
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from .observe import Observer, Site, sites

__all__ = ["MAX_RACES", "Race", "RaceDetector"]

#: Qualifiers that make a load or store *strong* in the PTX memory model: strong accesses do
#: not race with each other (only with plain ones), like atomics.
_STRONG = frozenset({"volatile", "relaxed", "acquire", "release"})

#: At most this many distinct instruction pairs are reported per launch.
MAX_RACES = 100

_FIELDS = ("w_tid", "w_pc", "w_blk", "w_ep", "w_wc", "w_at", "r1_tid", "r1_pc", "r1_blk",
           "r1_ep", "r1_wc", "r2_tid", "r2_pc", "r2_blk", "r2_ep", "r2_wc")

#: Threads per warp (lanes of a ``bar.warp.sync`` clock).
_WARP = 32


@attrs.frozen(slots=True, kw_only=True)
class Race:
    """Two accesses that race: ``kind`` "RAW", "WAR" or "WAW"; ``space`` "shared" or
    "global"; ``address`` the first byte seen (a shared-memory offset, or the emulated global
    address); ``first`` / ``second`` the earlier and the later access's instruction
    (:class:`~.observe.Site`), ``first_thread`` / ``second_thread`` their
    ``((block x, y, z), (thread x, y, z))``; ``same_value`` for WAW (None otherwise);
    ``count`` the conflicting byte accesses seen for this pair."""

    kind: str
    space: str
    address: int
    first: Site
    second: Site
    first_thread: tuple
    second_thread: tuple
    same_value: bool | None = None
    count: int = 1

    @property
    def first_index(self) -> int | None:
        return self.first.index

    @property
    def second_index(self) -> int | None:
        return self.second.index

    @property
    def line(self) -> int | None:
        """The later access's source line (where a fix usually goes: a barrier before it)."""
        return self.second.line

    def message(self) -> str:
        """One line: what races with what, where."""
        what = {"RAW": "read after write", "WAR": "write after read",
                "WAW": "write after write"}[self.kind]
        same = " (same value)" if self.same_value else ""
        return (f"{self.kind} ({what}{same}) on {self.space} memory at {self.address:#x}: "
                f"{self.second.where()} {self.second.opcode} [#{self.second.index}] by thread "
                f"{_thread(self.second_thread)} against {self.first.where()} "
                f"{self.first.opcode} [#{self.first.index}] by thread "
                f"{_thread(self.first_thread)}, with no barrier between them")

    def to_dict(self) -> dict:
        """JSON-ready data."""
        out = {"kind": self.kind, "space": self.space, "address": self.address,
               "same_value": self.same_value, "count": self.count,
               "first_thread": [list(v) for v in self.first_thread],
               "second_thread": [list(v) for v in self.second_thread]}
        for name, site in (("first", self.first), ("second", self.second)):
            out[name] = {"index": site.index, "opcode": site.opcode, "file": site.file,
                         "line": site.line, "ptx_line": site.ptx_line}
        return out


def _thread(t: tuple) -> str:
    (bx, by, bz), (tx, ty, tz) = t
    return f"({tx},{ty},{tz}) of block ({bx},{by},{bz})"


class _Shadow:
    """Per-byte access history of one space."""

    def __init__(self) -> None:
        self.size = 0
        self.a: dict = {f: np.zeros(0, np.int32) for f in _FIELDS}
        self.w_val = np.zeros(0, np.uint8)

    def ensure(self, size: int) -> None:
        if size <= self.size:
            return
        size = max(size, 2 * self.size)
        for f, old in self.a.items():
            new = np.full(size, -1 if f.endswith("tid") else 0, np.int32)
            new[: self.size] = old
            self.a[f] = new
        val = np.zeros(size, np.uint8)
        val[: self.size] = self.w_val
        self.w_val, self.size = val, size

    def reset(self) -> None:
        for f, arr in self.a.items():
            arr[:] = -1 if f.endswith("tid") else 0


class RaceDetector(Observer):
    """Finds data races in the launch it observes; :attr:`races` lists them."""

    def __init__(self) -> None:
        self._order: list = []
        self._found: dict = {}
        self._shadows = {"shared": _Shadow(), "global": _Shadow()}
        self._m: Any = None   # the Machine of the current wave
        self._sites: tuple = ()
        self._prog = None
        self._pc = 0

    def _start(self, m) -> None:
        """A new wave: per-thread ids, fresh shared history."""
        self._m = m
        if m.prog is not self._prog:
            self._prog, self._sites = m.prog, sites(m.prog)
        gx, gy, _ = m.grid_dim
        blocks = np.array(m._blocks, np.int64).reshape(-1, 3)
        self._blk_lin = blocks[:, 0] + gx * (blocks[:, 1] + gy * blocks[:, 2])
        per = m.n // len(blocks)
        self._per = per
        self._tid = (self._blk_lin[m.slot] * per + m._lin).astype(np.int32)
        self._epoch = np.zeros(len(blocks), np.int32)
        self._cooperative = m._env is not None
        self._grid_epoch = 0
        # bar.warp.sync clocks: thread i's view of each lane of its warp (vector clocks)
        self._lane = (m._lin % _WARP).astype(np.int64)
        self._warp = (m.slot.astype(np.int64) * 64 + m._lin // _WARP)
        self._wc = np.zeros((m.n, _WARP), np.int32)
        self._shadows["shared"].reset()

    def step(self, m, pc, idx, take, kind) -> None:
        if m is not self._m:
            self._start(m)
        self._pc = pc
        site = self._sites[pc]
        if site.family == "bar" and "warp" in site.opcode.split(".") and len(take):
            self._warp_sync(np.asarray(take))

    def _warp_sync(self, take) -> None:
        """``bar.warp.sync`` run by ``take`` (wave thread numbers): the threads of each warp
        that meet here see each other's earlier accesses (each clock ticks, then they join)."""
        order = np.argsort(self._warp[take], kind="stable")
        group, warp = take[order], self._warp[take][order]
        self._wc[group, self._lane[group]] += 1
        starts = np.flatnonzero(np.r_[True, warp[1:] != warp[:-1]])
        joined = np.maximum.reduceat(self._wc[group], starts, axis=0)
        self._wc[group] = np.repeat(joined, np.diff(np.r_[starts, len(group)]), axis=0)

    def release(self, m, slots) -> None:
        self._epoch[slots] += 1
        self._grid_epoch = int(self._epoch.min())

    def _phase(self, space, threads, flat, data) -> None:
        """An ``mbarrier`` word written with its phase bit flipped: the phase completed, which
        orders the block's accesses before it with those after (a new interval)."""
        if data is None or space != "shared":
            return
        m = self._m
        old = m.mem.shared[flat.astype(np.int64) + 7] >> 7
        flipped = (np.asarray(data)[:, 7] >> 7) != old
        if flipped.any():
            self._epoch[np.unique(m.slot[threads[flipped]])] += 1
            self._grid_epoch = int(self._epoch.min())

    def access(self, space, threads, addr, flat, nbytes, data) -> None:
        if space not in self._shadows or not len(threads) or len(self._found) >= MAX_RACES:
            return
        site = self._sites[self._pc]
        if "mbarrier" in site.opcode:
            if nbytes == 8:
                self._phase(space, threads, flat, data)
            return
        atomic = site.family in ("atom", "red")
        strong = atomic or not _STRONG.isdisjoint(site.opcode.split("."))
        m = self._m
        sh = self._shadows[space]
        k = np.arange(nbytes, dtype=np.int64)
        b = (flat.astype(np.int64)[:, None] + k).ravel()
        sh.ensure(int(b.max()) + 1)
        slot = m.slot[threads]
        t, ep = np.repeat(self._tid[threads], nbytes), np.repeat(self._epoch[slot], nbytes)
        thr = np.repeat(threads.astype(np.int64), nbytes)  # wave thread numbers, per byte
        blk = np.repeat(slot if space == "shared" else self._blk_lin[slot],
                        nbytes).astype(np.int32)
        where = (addr.astype(np.int64)[:, None] + k).ravel()
        a = sh.a
        if strong and not atomic and data is None:   # ld.volatile, ld.acquire, ...
            self._check(space, sh, "w", "RAW", b, t, blk, ep, thr, where, None, plain=True)
            return
        if strong:  # a read and a write that races only with plain accesses
            self._check(space, sh, "w", "WAW", b, t, blk, ep, thr, where, None, plain=True)
            self._check(space, sh, "r1", "WAR", b, t, blk, ep, thr, where, None)
            self._check(space, sh, "r2", "WAR", b, t, blk, ep, thr, where, None)
            self._put(sh, "w", b, t, blk, ep, thr)
            a["w_at"][b] = 1
            return
        if data is None:
            self._check(space, sh, "w", "RAW", b, t, blk, ep, thr, where, None)
            fresh = (a["r1_tid"][b] < 0) | ((a["r1_blk"][b] == blk) & (a["r1_ep"][b] < ep))
            self._put(sh, "r1", b[fresh], t[fresh], blk[fresh], ep[fresh], thr[fresh])
            other = a["r1_tid"][b] != t
            self._put(sh, "r2", b[other], t[other], blk[other], ep[other], thr[other])
            return
        val = np.asarray(data, np.uint8).reshape(-1)
        self._check(space, sh, "w", "WAW", b, t, blk, ep, thr, where, val)
        self._check(space, sh, "r1", "WAR", b, t, blk, ep, thr, where, None)
        self._check(space, sh, "r2", "WAR", b, t, blk, ep, thr, where, None)
        self._within(space, b, t, where, val)
        self._put(sh, "w", b, t, blk, ep, thr)
        a["w_at"][b] = 0
        sh.w_val[b] = val

    def _put(self, sh: _Shadow, who: str, b, t, blk, ep, thr) -> None:
        a = sh.a
        a[f"{who}_tid"][b] = t
        a[f"{who}_pc"][b] = self._pc
        a[f"{who}_blk"][b] = blk
        a[f"{who}_ep"][b] = ep
        a[f"{who}_wc"][b] = self._wc[thr, self._lane[thr]]

    def _check(self, space, sh, who, kind, b, t, blk, ep, thr, where, val,
               plain=False) -> None:
        """Report the bytes whose ``who`` record races with this access (``plain``: only
        records of plain accesses, for an atomic)."""
        a = sh.a
        ot, oblk, oep = a[f"{who}_tid"][b], a[f"{who}_blk"][b], a[f"{who}_ep"][b]
        if plain:
            ot = np.where(a["w_at"][b] == 1, -1, ot)
        apart = oblk != blk
        if self._cooperative:  # every block has passed a barrier since: a grid sync
            apart &= oep >= self._grid_epoch
        clash = (ot >= 0) & (ot != t) & (apart | (oep == ep))
        if clash.any():  # a bar.warp.sync both threads met at since the other access
            per = self._per
            same_warp = (ot // per == t // per) & ((ot % per) // _WARP == (t % per) // _WARP)
            lane = np.where(ot >= 0, ot % per % _WARP, 0)
            synced = same_warp & (self._wc[thr, lane] > a[f"{who}_wc"][b])
            clash &= ~synced
        if not clash.any():
            return
        pos = np.flatnonzero(clash)
        first_pc = a[f"{who}_pc"][b[pos]]
        same = None if val is None else sh.w_val[b[pos]] == val[pos]
        self._note(kind, space, pos, first_pc, ot[pos], t, where, same)

    def _within(self, space, b, t, where, val) -> None:
        """Two threads of one store writing one byte (the same instruction, both sides)."""
        order = np.argsort(b, kind="stable")
        sb, st = b[order], t[order]
        dup = np.flatnonzero((sb[1:] == sb[:-1]) & (st[1:] != st[:-1]))
        if not len(dup):
            return
        later = order[dup + 1]
        same = val[order[dup]] == val[later]
        self._note("WAW", space, later, np.full(len(dup), self._pc), t[order[dup]], t, where,
                   same)

    def _note(self, kind, space, pos, first_pc, first_tid, t, where, same) -> None:
        for fpc in np.unique(first_pc).tolist():
            sel = first_pc == fpc
            key = (kind, space, int(fpc), self._pc)
            got = self._found.get(key)
            all_same = None if same is None else bool(np.all(same[sel]))
            if got is not None:
                got["count"] += int(np.count_nonzero(sel))
                if all_same is not None:
                    got["same"] = got["same"] and all_same
                continue
            if len(self._found) >= MAX_RACES:
                return
            j = int(np.flatnonzero(sel)[0])
            p = int(pos[j])
            self._found[key] = {"count": int(np.count_nonzero(sel)), "same": all_same,
                                "address": int(where[p]),
                                "first_thread": self._coords(int(first_tid[j])),
                                "second_thread": self._coords(int(t[p]))}
            self._order.append(key)

    def _coords(self, tid: int) -> tuple:
        m = self._m
        gx, gy, _ = m.grid_dim
        bx, by = m._dims
        blk, lin = divmod(tid, self._per)
        return ((blk % gx, (blk // gx) % gy, blk // (gx * gy)),
                (lin % bx, (lin // bx) % by, lin // (bx * by)))

    @property
    def races(self) -> list:
        """The races found, as :class:`Race` values, in the order they were first seen."""
        out = []
        for key in self._order:
            kind, space, fpc, spc = key
            got = self._found[key]
            out.append(Race(kind=kind, space=space, address=got["address"],
                            first=self._sites[fpc], second=self._sites[spc],
                            first_thread=got["first_thread"], second_thread=got["second_thread"],
                            same_value=got["same"] if kind == "WAW" else None,
                            count=got["count"]))
        return out
