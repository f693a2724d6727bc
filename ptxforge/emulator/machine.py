"""The interpreter's core: a decoded kernel (:class:`Program`) run over the threads of its blocks.

Every thread has its own program counter.  Each step picks the lowest program counter among
the threads that can run and executes that instruction, vectorised with NumPy, for all the
threads standing there (the active mask; a guard predicate narrows it).  Threads that branch
elsewhere wait until the lower code is done, so divergent paths reconverge where they meet
(the immediate post-dominator of structured code).  ``bar.sync`` parks a thread until every
thread of its block that has not exited is parked, then releases the block; a barrier no
thread can reach is a deadlock, reported as an :class:`EmulationError`.  Several blocks run
together in a *wave* (their shared memory kept apart), and waves run one after another.

Example::

    >>> from ptxforge.emulator.machine import Program
    >>> from ptxforge.dsl import kernels
    >>> prog = Program(kernels.saxpy().kernel("saxpy"))
    >>> prog.name, len(prog.code) > 5
    ('saxpy', True)
"""

from __future__ import annotations

import numpy as np

from ptxforge.ptx import ir
from ptxforge.ptx.opcodes import Barrier, MemoryAccess, Return, families_with
from ptxforge.ptx.layout import (element_size, param_layout, params_size, shared_layout,
                                 var_layout, var_size)

from . import ops_float, ops_int, ops_mem, ops_sync, ops_tensor, ops_warp, ops_wmma
from .calls import inline_calls
from .memory import EmulationError, Memory
from .operands import Decoded, Unsupported, reg_bits, where
from .values import UINT, immediate

__all__ = ["Program", "Machine", "SUPPORTED", "MAX_STEPS", "RESERVED_SMEM"]

SUPPORTED = tuple(sorted(set(ops_int.FAMILIES) | set(ops_float.FAMILIES)
                         | set(ops_float.ANY_TYPE) | set(ops_mem.FAMILIES)
                         | set(ops_warp.FAMILIES) | set(ops_tensor.FAMILIES)
                         | set(ops_sync.FAMILIES) | set(ops_wmma.FAMILIES)
                         | {"bra"} | set(families_with(Return))
                         | set(families_with(Barrier))))
MAX_STEPS = 2_000_000
#: Bytes of shared memory each block reserves past its own (``%reserved_smem_offset_*``; what
#: cooperative-groups tiles wider than a warp keep their barrier in).
RESERVED_SMEM = 1024


def _init_bytes(var: ir.VarDecl, address_of=None) -> bytes:
    """The initializer of a variable (``= {1, 2}``) as bytes; zeros when it has none.

    ``address_of(name)`` gives the address of a variable named in the initializer
    (``generic($str)`` or ``$str``).
    """
    size = var_size(var)
    if not var.init:
        return bytes(size)
    elem = element_size(var.type)
    text = var.init.strip().lstrip("=").strip()
    vals = []
    for tok in (t.strip() for t in text.replace("{", "").replace("}", "").split(",") if t.strip()):
        if tok[:2] in ("0f", "0F", "0d", "0D"):
            vals.append(int(tok[2:], 16).to_bytes(elem, "little"))
            continue
        name = tok[8:-1].strip() if tok.startswith("generic(") and tok.endswith(")") else tok
        if name and (name[0].isalpha() or name[0] in "_$%"):
            if address_of is None:
                raise Unsupported(f"initializer {tok!r} of {var.name}")
            vals.append((address_of(name) % (1 << (8 * elem))).to_bytes(elem, "little"))
            continue
        num = float(tok) if any(ch in tok.lower() for ch in ".e") and not tok.lower().startswith(
            "0x") else int(tok, 0)
        vals.append(immediate(num, var.type).tobytes())
    data = b"".join(vals)
    return data + bytes(max(size - len(data), 0))


class Program:
    """A kernel decoded for the interpreter: executors, branch targets, variable layouts.

    ``symbols`` maps module-level variable names to ``(space, address)``; ``shared_globals``
    are the module's ``.shared`` variables (laid out first in every block's shared memory);
    ``lines`` maps ``id(instruction)`` to its line in the PTX text, for messages.
    """

    def __init__(self, kernel: ir.Kernel, symbols: "dict | None" = None,
                 shared_globals: tuple = (), lines: "dict | None" = None,
                 functions: "dict | None" = None) -> None:
        self.name = kernel.name
        self.kernel = kernel
        insts: list[ir.Instruction] = []
        labels: dict[str, int] = {}  # label -> index of the instruction after it
        shared: list[ir.VarDecl] = []
        local: list[ir.VarDecl] = []
        body, origin = inline_calls(kernel, functions or {})
        for st in body:
            if isinstance(st, ir.Label):
                labels[st.name] = len(insts)
            elif isinstance(st, ir.Instruction):
                insts.append(st)
            elif isinstance(st, ir.VarDecl) and st.space in ("shared", "local"):
                (shared if st.space == "shared" else local).append(st)
        self.insts = insts
        self.labels = labels
        lines = lines or {}
        self.lines = [lines.get(id(origin.get(id(i), i))) for i in insts]
        syms = dict(symbols or {})
        offsets, self.static_shared = shared_layout(tuple(shared_globals) + tuple(shared))
        syms.update({n: ("shared", o) for n, o in offsets.items()})
        loc_off, self.local_size = var_layout(local)
        syms.update({n: ("local", o) for n, o in loc_off.items()})
        slots = param_layout(kernel.params)
        self.param_offsets = {s.name: s.offset for s in slots}
        self.param_size = params_size(slots)
        syms.update({n: ("param", o) for n, o in self.param_offsets.items()})
        self.symbols = syms
        self.registers: dict = {}
        for inst in insts:
            for reg in list(inst.defs) + list(inst.uses):
                self.registers[reg.name] = reg_bits(reg)
        self.code = [self._decode(inst, pc) for pc, inst in enumerate(insts)]

    def where(self, pc: int) -> str:
        """``file:line: opcode`` of instruction ``pc``."""
        return where(self.insts[pc], self.lines[pc])

    def _decode(self, inst: ir.Instruction, pc: int) -> tuple:
        guard = (inst.guard.register.name, inst.guard.negated) if inst.guard else None
        d = Decoded.of(inst.opcode)
        fam = d.family
        try:
            if fam == "bra":
                label = inst.operands[0]
                if not isinstance(label, ir.LabelRef) or label.name not in self.labels:
                    raise Unsupported(f"branch target {label!r}")
                return 1, guard, self.labels[label.name]
            if d.has_trait(Return):
                return 2, guard, None
            if d.has_trait(Barrier):
                if d.has("warp"):
                    return 0, guard, lambda m, idx: None
                if d.has("arrive", "red") or len(inst.operands) > 1:
                    raise Unsupported("only bar.sync / barrier.sync of a whole block")
                return 3, guard, None
            return 0, guard, _builder(d)(d, inst, self.symbols)
        except (Unsupported, KeyError, ValueError, IndexError, StopIteration) as exc:
            why = str(exc) or type(exc).__name__
            return 4, guard, (f"{self.where(pc)}: the emulator does not support this "
                              f"instruction ({why}); it supports the families "
                              f"{', '.join(SUPPORTED)}")


def _builder(d: Decoded):
    fam = d.family
    if fam == "call":
        raise Unsupported("a call that is recursive, indirect or to a function without a body")
    access = d.op.info.get(MemoryAccess) if d.op.info is not None else None
    if access is not None and access.texture:
        raise Unsupported("textures and surfaces are not emulated; pass the data as a global "
                          "array")
    if fam in ops_float.ANY_TYPE:
        return ops_float.ANY_TYPE[fam]
    is_float = bool(d.types) and d.types[-1].is_float
    if fam in ("add", "sub") and d.has("cc") and not is_float:
        return ops_int.CARRY_FORMS[fam]
    if is_float and fam in ops_float.FAMILIES:
        return ops_float.FAMILIES[fam]
    for table in (ops_int.FAMILIES, ops_mem.FAMILIES, ops_warp.FAMILIES, ops_tensor.FAMILIES,
                  ops_sync.FAMILIES, ops_wmma.FAMILIES):
        if fam in table:
            return table[fam]
    if fam in ops_float.FAMILIES:
        return ops_float.FAMILIES[fam]
    raise Unsupported(f"unknown instruction family {fam!r}")


class _Registers(dict):
    """Registers by name, each allocated (zeroed, one value per thread) when first touched."""

    def __init__(self, n: int, widths: dict) -> None:
        super().__init__()
        self._n, self._widths = n, widths

    def __missing__(self, name: str) -> np.ndarray:
        bits = self._widths[name]
        array = self[name] = np.zeros(self._n, bool if bits == 1 else UINT[bits])
        return array


class Machine:
    """One wave of blocks in flight: registers, program counters, carry flags, special registers."""

    def __init__(self, prog: Program, mem: Memory, blocks: list, block_dim: tuple,
                 grid_dim: tuple, dyn_smem: int, env: dict | None = None,
                 observer=None) -> None:
        self.prog = prog
        #: an :class:`~ptxforge.emulator.observe.Observer` (the profile, the race check), or
        #: None: the loop then pays one comparison per step
        self.observer = observer
        self.grid_dim = grid_dim
        self.mem = mem
        nb = len(blocks)
        bx, by, bz = block_dim
        per = bx * by * bz
        n = nb * per
        self.n = n
        lin = np.tile(np.arange(per, dtype=np.int64), nb)
        slot = np.repeat(np.arange(nb, dtype=np.int64), per)
        self.slot = slot
        self._lin, self._blocks, self._dims = lin, blocks, (bx, by)
        self._special: dict = {
            "%ntid.x": bx, "%ntid.y": by, "%ntid.z": bz,
            "%nctaid.x": grid_dim[0], "%nctaid.y": grid_dim[1], "%nctaid.z": grid_dim[2],
            "%nwarpid": -(-per // 32), "%smid": 0, "%nsmid": 1, "%gridid": 0,
            "%dynamic_smem_size": dyn_smem, "%total_smem_size": prog.static_shared + dyn_smem,
        }
        begin = -(-(prog.static_shared + dyn_smem) // 16) * 16
        self._special.update({
            "%reserved_smem_offset_begin": begin, "%reserved_smem_offset_end": begin
            + RESERVED_SMEM, "%reserved_smem_offset_cap": RESERVED_SMEM,
            "%reserved_smem_offset_0": begin, "%reserved_smem_offset_1": begin + 16})
        self._env = env
        self.lane = lin % 32
        self.warp_id = slot * 64 + lin // 32
        self.warp_base = np.arange(n, dtype=np.int64) - self.lane
        self.warp_len = np.minimum(per - (lin - self.lane), 32)
        self.regs = _Registers(n, prog.registers)
        self.cc = np.zeros(n, np.uint8)
        self.pc = np.zeros(n, np.int64)
        self.exited = np.zeros(n, bool)
        self.waiting = np.zeros(n, bool)
        self.async_group = np.zeros(n, np.int64)   # cp.async groups committed per thread
        self.async_pending: list = []               # copies not yet written (ops_tensor)
        self.steps = 0
        self._pc_now = 0

    def special(self, name: str, idx: np.ndarray) -> np.ndarray:
        """Special register ``name`` for threads ``idx``."""
        if name in ("%clock", "%clock64", "%globaltimer", "%globaltimer_lo"):
            return np.full(len(idx), self.steps, np.uint64)
        value = self._special.get(name)
        if value is None:
            value = self._special[name] = self._per_thread(name)
        if np.ndim(value) == 0:
            return np.full(len(idx), value)
        return value[idx]

    def _per_thread(self, name: str) -> np.ndarray:
        """A per-thread special register, computed when a kernel first reads it."""
        lin, (bx, by) = self._lin, self._dims
        lane = (lin % 32).astype(np.uint64)
        one = np.uint64(1)
        if name.startswith("%tid."):
            return {"x": lin % bx, "y": (lin // bx) % by, "z": lin // (bx * by)}[name[-1]]
        if name.startswith("%ctaid.") and name[-1] in "xyz":
            cta = np.array(self._blocks, dtype=np.int64).reshape(-1, 3)
            return cta[self.slot, "xyz".index(name[-1])]
        table = {"%laneid": lambda: lin % 32, "%warpid": lambda: lin // 32,
                 "%lanemask_eq": lambda: one << lane,
                 "%lanemask_lt": lambda: (one << lane) - one,
                 "%lanemask_le": lambda: (one << (lane + one)) - one,
                 "%lanemask_ge": lambda: ~((one << lane) - one) & np.uint64(0xFFFFFFFF),
                 "%lanemask_gt": lambda: ~((one << (lane + one)) - one) & np.uint64(0xFFFFFFFF)}
        if name.startswith("%envreg"):
            if self._env is None:
                raise EmulationError(f"{self.where('')}: {name} (the grid-sync workspace) exists "
                                     "only in a cooperative launch; expected "
                                     "kernel(..., cooperative=True)")
            return np.asarray(self._env.get(name, 0), np.uint32)
        if name not in table:
            raise EmulationError(f"{self.where('')}: special register {name} is not emulated")
        return table[name]()

    def where(self, opcode: str) -> str:
        return self.prog.where(self._pc_now)

    def run(self) -> None:
        """Run every thread of the wave to its exit.

        While every live thread stands at one program counter (straight-line code, the common
        case) the loop keeps that counter as one number and the live threads as one index
        array, and writes the per-thread counters back only when the threads part.
        """
        prog, code = self.prog, self.prog.code
        obs = self.observer
        ncode = len(code)
        together = False          # every live thread is at pc ``p``; self.pc is stale
        live_idx = np.flatnonzero(~(self.exited | self.waiting))
        p = 0
        with np.errstate(all="ignore"):
            while True:
                if together:
                    idx = live_idx
                else:
                    live_idx = np.flatnonzero(~(self.exited | self.waiting))
                    if not len(live_idx):
                        if not self.waiting.any():
                            return
                        if not self._release():
                            at = prog.where(int(self.pc[self.waiting][0]) - 1)
                            raise EmulationError(f"kernel {prog.name!r}: deadlock: threads wait "
                                                 "at a barrier that the rest of their block "
                                                 f"never reaches ({at})")
                        continue
                    pcs = self.pc[live_idx]
                    p = int(pcs.min())
                    here = pcs == p
                    together = bool(here.all())
                    idx = live_idx if together else live_idx[here]
                if p >= ncode:
                    raise EmulationError(f"kernel {prog.name!r}: threads ran off the end of the "
                                         "code without ret or exit")
                self._pc_now = p
                self.steps += 1
                if self.steps > MAX_STEPS:
                    raise EmulationError(f"kernel {prog.name!r}: more than {MAX_STEPS} steps "
                                         f"(an endless loop?) at {prog.where(p)}")
                kind, guard, payload = code[p]
                take = idx
                if guard is not None:
                    name, neg = guard
                    g = self.regs[name][idx].astype(bool)
                    take = idx[~g] if neg else idx[g]
                if obs is not None:
                    obs.step(self, p, idx, take, kind)
                if kind == 0:
                    if len(take):
                        payload(self, take)
                    if together:
                        p += 1
                    else:
                        self.pc[idx] = p + 1
                    continue
                if kind == 1 and together and len(take) in (0, len(idx)):
                    p = payload if len(take) else p + 1   # a uniform branch
                    continue
                self.pc[idx] = p + 1      # the threads part (or may): counters per thread
                together = False
                if kind == 1:  # bra
                    self.pc[take] = payload
                elif kind == 2:  # ret / exit
                    self.exited[take] = True
                elif kind == 3:  # bar.sync
                    self.waiting[take] = True
                    self._release()
                else:
                    raise EmulationError(payload)

    def _release(self) -> bool:
        """Free the blocks whose every non-exited thread waits at a barrier."""
        nb = int(self.slot[-1]) + 1
        alive = np.bincount(self.slot[~self.exited], minlength=nb)
        parked = np.bincount(self.slot[self.waiting], minlength=nb)
        ready = (parked == alive) & (parked > 0)
        if not ready.any():
            return False
        self.waiting &= ~ready[self.slot]
        if self.observer is not None:
            self.observer.release(self, np.flatnonzero(ready))
        return True
