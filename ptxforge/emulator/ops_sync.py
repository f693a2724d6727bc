"""``mbarrier`` objects for the interpreter (what cuda::barrier and cuda::pipeline compile to).

Emulated: init, arrive (with a count, ``arrive_drop``, ``expect_tx``, ``noComplete``),
``expect_tx``, ``complete_tx``, ``test_wait`` / ``try_wait`` (by token or by phase parity),
``inval``, and ``cp.async.mbarrier.arrive``.

The 64-bit barrier object in shared (or global) memory holds, in the interpreter's own layout
(the PTX ISA leaves it opaque): the pending arrivals (bits 0-20), the expected arrivals of the
next phase (21-41), the pending transaction bytes as a signed 21-bit count (42-62) and the
phase parity (63).  A phase completes when both its arrivals and its transaction bytes reach
zero; the parity flips and the pending count is reloaded.  An arrival's token is the parity
of the phase it arrived on, so a wait on that token succeeds once the parity has moved on.
Arrivals of one step on one barrier apply in thread order.

Example::

    >>> from ptxforge.emulator.ops_sync import pack, unpack
    >>> unpack(pack(pending=3, expected=4, tx=-8, phase=1))
    (3, 4, -8, 1)
"""

from __future__ import annotations

import numpy as np

from ptxforge.ptx import ir
from ptxforge.ptx import types as T

from .memory import EmulationError
from .operands import Unsupported, address, reader, writer
from .values import spread

__all__ = ["FAMILIES", "cp_async_arrive", "pack", "unpack"]

_FIELD = (1 << 21) - 1


def pack(pending: int, expected: int, tx: int, phase: int) -> int:
    """The 64-bit barrier word of these fields."""
    return ((pending & _FIELD) | ((expected & _FIELD) << 21) | ((tx & _FIELD) << 42)
            | ((phase & 1) << 63))


def unpack(word: int) -> tuple[int, int, int, int]:
    """(pending, expected, tx, phase) of a barrier word."""
    tx = (word >> 42) & _FIELD
    if tx >> 20:
        tx -= 1 << 21
    return word & _FIELD, (word >> 21) & _FIELD, tx, (word >> 63) & 1


def _space(inst) -> str:
    parts = inst.opcode.replace("::", ".").split(".")
    return "shared" if "shared" in parts else "global" if "global" in parts else "generic"


def _complete_phase(pending: int, expected: int, tx: int, phase: int) -> tuple:
    if pending == 0 and tx == 0:
        return expected, expected, 0, phase ^ 1
    return pending, expected, tx, phase


class _Barriers:
    """Read, update in thread order, and write back the barrier words threads ``idx`` name."""

    def __init__(self, m, idx, addr, space, where):
        self.m, self.idx, self.space, self.where = m, idx, space, where
        self.addr = addr
        words = m.mem.load(space, addr, idx, 8, where).view(np.uint64)[:, 0]
        block = m.slot[idx].astype(np.uint64) << np.uint64(50)
        keys = addr.astype(np.uint64) ^ (block if space != "global" else np.uint64(0))
        self.groups: dict = {}   # barrier key -> [first thread position, current word]
        for k, (key, word) in enumerate(zip(keys.tolist(), words.tolist())):
            if key not in self.groups:
                self.groups[key] = [k, word]
        self.order = keys.tolist()

    def word(self, k: int) -> int:
        return self.groups[self.order[k]][1]

    def set(self, k: int, word: int) -> None:
        self.groups[self.order[k]][1] = word

    def flush(self) -> None:
        firsts = np.array([g[0] for g in self.groups.values()], np.int64)
        data = np.array([g[1] for g in self.groups.values()], np.uint64)
        self.m.mem.store(self.space, self.addr[firsts], self.idx[firsts],
                         data.view(np.uint8).reshape(-1, 8), self.where)


def _arrive(word: int, count: int, drop: bool, tx: int, complete: bool) -> tuple[int, int]:
    """The new word after an arrival and the token (the parity arrived on)."""
    pending, expected, pend_tx, phase = unpack(word)
    token = phase
    pend_tx += tx
    if drop:
        expected -= count
    pending -= count
    if pending < 0:
        raise ValueError("more arrivals than the phase expects")
    if complete:
        pending, expected, pend_tx, phase = _complete_phase(pending, expected, pend_tx, phase)
    return pack(pending, expected, pend_tx, phase), token


def _build_mbarrier(d, inst, symbols):
    ops = inst.operands
    space = _space(inst)
    at = inst.opcode
    if d.has("init", "inval"):
        addr = address(ops[0], symbols)
        count = reader(ops[1], T.u32, symbols) if d.has("init") else None

        def init(m, idx):
            n = spread(np.asarray(count(m, idx) if count else 0), idx.shape)
            words = np.array([pack(int(c), int(c), 0, 0) for c in n], np.uint64)
            m.mem.store(space, addr(m, idx), idx, words.view(np.uint8).reshape(-1, 8),
                        m.where(at))
        return init
    if d.has("test_wait", "try_wait"):
        return _build_wait(d, inst, symbols, space)
    if d.has("arrive", "arrive_drop", "expect_tx", "complete_tx"):
        return _build_arrive(d, inst, symbols, space)
    raise Unsupported("mbarrier form (init, inval, arrive, arrive_drop, expect_tx, "
                      "complete_tx, test_wait, try_wait are emulated)")


def _build_arrive(d, inst, symbols, space):
    ops = list(inst.operands)
    arrives = d.has("arrive", "arrive_drop")
    put = None
    if arrives and not isinstance(ops[0], ir.Address):
        put = writer(ops[0], T.b64)
        ops = ops[1:]
    addr = address(ops[0], symbols)
    arg = reader(ops[1], T.u32, symbols) if len(ops) > 1 else None
    tx_only = not arrives
    expect = d.has("expect_tx")
    at = inst.opcode

    def run(m, idx):
        where = m.where(at)
        n = spread(np.asarray(arg(m, idx) if arg else 1), idx.shape).astype(np.int64)
        bars = _Barriers(m, idx, addr(m, idx), space, where)
        tokens = np.zeros(len(idx), np.uint64)
        try:
            for k in range(len(idx)):
                word = bars.word(k)
                if tx_only:
                    p, e, tx, ph = unpack(word)
                    tx += int(n[k]) if expect else -int(n[k])
                    word = pack(*_complete_phase(p, e, tx, ph)) if not expect \
                        else pack(p, e, tx, ph)
                    token = 0
                else:
                    count = 1 if expect or arg is None else int(n[k])
                    word, token = _arrive(word, count, d.has("arrive_drop"),
                                          int(n[k]) if expect else 0,
                                          not d.has("noComplete"))
                bars.set(k, word)
                tokens[k] = np.uint64(token << 63)
        except ValueError as exc:
            raise EmulationError(f"{where}: {exc}") from None
        bars.flush()
        if put is not None:
            put(m, idx, tokens)
    return run


def _build_wait(d, inst, symbols, space):
    ops = inst.operands
    put = writer(ops[0], T.pred)
    addr = address(ops[1], symbols)
    parity = d.has("parity")
    state = reader(ops[2], T.u32 if parity else T.b64, symbols)
    at = inst.opcode

    def run(m, idx):
        words = m.mem.load(space, addr(m, idx), idx, 8, m.where(at)).view(np.uint64)[:, 0]
        phase = (words >> np.uint64(63)).astype(np.int64)
        s = spread(np.asarray(state(m, idx)), idx.shape).astype(np.uint64)
        waited = (s & np.uint64(1)) if parity else (s >> np.uint64(63))
        put(m, idx, phase != waited.astype(np.int64))
    return run


def cp_async_arrive(d, inst, symbols, complete_all):
    """``cp.async.mbarrier.arrive{.noinc}``: the thread's earlier copies land, then (with
    ``.noinc``) an arrival on the barrier; without it the pending count is raised first, so
    the two cancel."""
    addr = address(inst.operands[0], symbols)
    space = _space(inst)
    noinc = d.has("noinc")
    at = inst.opcode

    def run(m, idx):
        complete_all(m, idx)
        if not noinc:
            return
        where = m.where(at)
        bars = _Barriers(m, idx, addr(m, idx), space, where)
        try:
            for k in range(len(idx)):
                bars.set(k, _arrive(bars.word(k), 1, False, 0, True)[0])
        except ValueError as exc:
            raise EmulationError(f"{where}: {exc}") from None
        bars.flush()
    return run


FAMILIES = {"mbarrier": _build_mbarrier}
