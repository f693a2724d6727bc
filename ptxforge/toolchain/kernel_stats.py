"""Per-kernel statistics from what a backend produced: the ptxas log, the cubin's records, the
driver's attributes, and the PTX's own directives.

A kernel that calls functions runs with more than its own body: the register count it
launches with is the maximum over its call graph, the stack it needs is its frame plus the
deepest chain of callee frames, and the spill instructions of every function it may call run
on its behalf.  :class:`KernelStats` carries the call graph's figures in ``registers``,
``spill_stores``/``spill_loads`` and ``stack_frame``, and the kernel body's own in
``body_registers``, ``body_spill_stores``/``body_spill_loads`` and ``body_stack_frame``
(equal unless the kernel calls functions).

Where they come from: the call graph and each function's frame from the cubin
(``.nv.callgraph``, EIATTR_FRAME_SIZE), the call graph's stack from EIATTR_MIN_STACK_SIZE (the
same figure as ptxas's "cumulative stack size" and nvJitLink's "N stack"), each function's
spill bytes from the log's "Function properties for F" lines.  With recursion ptxas cannot
bound the stack ("Stack size for entry function 'k' cannot be statically determined"):
``stack_known`` is then False and ``stack_frame`` a lower bound (each recursive function
counted once).
"""

from __future__ import annotations

import re
from typing import Optional

import attrs

from ptxforge.errors import CompileError, PtxforgeError

from .ptxas_log import parse_ptxas_log
from .regcap import resolve_register_cap

__all__ = ["KernelStats", "callee_spills", "deepest_chain", "kernel_stats"]


@attrs.frozen(slots=True, kw_only=True)
class KernelStats:
    """What ptxas assigned to one kernel.

    ``registers``: what the kernel launches with (for a kernel that calls functions, the
    maximum over its call graph); ``body_registers``: ptxas's "Used N registers" for the
    kernel's own body.  ``spill_stores``/``spill_loads``: bytes moved by spill instructions in
    the kernel and every function it may call (``body_spill_*``: the kernel's own).
    ``stack_frame``: the per-thread stack the launch needs (the kernel's frame plus the deepest
    chain of callee frames; a lower bound when ``stack_known`` is False);
    ``body_stack_frame``: the kernel's own frame (spill slots and local arrays);
    ``local_array_bytes``: the part of the own frame the PTX declares as ``.local`` arrays.
    ``callees``: the functions it may call (the cubin's call graph, transitively).
    ``register_cap``: the cap ptxas compiled it under (None: none), ``register_cap_source``
    where it came from (``--maxrregcount``, ``.maxnreg``, ``launch bounds``, ``ptxas``),
    ``register_cap_detail`` spelled out, ``register_cap_note`` why a requested
    ``--maxrregcount`` did not apply (see :mod:`ptxforge.toolchain.regcap`).
    """

    name: str
    target: str
    backend: str
    registers: int
    spill_stores: int = 0
    spill_loads: int = 0
    stack_frame: int = 0
    local_array_bytes: int = 0
    shared: int = 0
    constant_bank0: Optional[int] = None
    barriers: Optional[int] = None
    register_cap: Optional[int] = None
    compile_time_ms: Optional[float] = None
    max_threads_per_block: Optional[int] = None
    body_registers: Optional[int] = None   # the log's 'Used N registers' (the body alone)
    body_spill_stores: Optional[int] = None
    body_spill_loads: Optional[int] = None
    body_stack_frame: Optional[int] = None
    callees: tuple = ()
    stack_known: bool = True
    register_cap_source: Optional[str] = None
    register_cap_detail: Optional[str] = None
    register_cap_note: Optional[str] = None

    @property
    def spills(self) -> bool:
        return bool(self.spill_stores or self.spill_loads)

    @property
    def cumulative_stack(self) -> int:
        """ptxas's name for :attr:`stack_frame` (the call graph's stack)."""
        return self.stack_frame

    @property
    def spill_frame_bytes(self) -> int:
        """Own frame bytes beyond the declared local arrays: an estimate of the spill area."""
        own = self.stack_frame if self.body_stack_frame is None else self.body_stack_frame
        return max(own - self.local_array_bytes, 0)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in (
            "name", "target", "backend", "registers", "spill_stores", "spill_loads",
            "stack_frame", "local_array_bytes", "spill_frame_bytes", "shared", "constant_bank0",
            "barriers", "register_cap", "compile_time_ms", "max_threads_per_block",
            "body_registers", "body_spill_stores", "body_spill_loads", "body_stack_frame",
            "stack_known", "register_cap_source", "register_cap_note")} | {
            "callees": list(self.callees)}


def callee_spills(log, name: str, callees) -> tuple[int, int]:
    """Spill (stores, loads) bytes the ptxas ``log`` records for ``callees`` of ``name`` (a
    recursive ``name`` among them is not counted twice; functions without a record add 0)."""
    st = ld = 0
    for c in callees:
        if c == name:
            continue
        try:
            cf = log.function(c)
        except KeyError:
            continue
        st += cf.spill_stores or 0
        ld += cf.spill_loads or 0
    return st, ld


def deepest_chain(name: str, frames: dict, edges: dict) -> int:
    """The largest sum of callee frames along a call chain from ``name`` (``edges``: caller →
    callees; a cycle is counted once)."""
    return _deepest(name, frames, edges, frozenset({name}))


def _deepest(name: str, frames: dict, edges: dict, path: frozenset) -> int:
    """The largest sum of frames along a call chain from ``name`` (a cycle counted once)."""
    best = 0
    for callee in edges.get(name, ()):
        if callee in path:
            continue
        best = max(best, frames.get(callee, 0) + _deepest(callee, frames, edges, path | {callee}))
    return best


def _floor(log) -> Optional[int]:
    """The register count ptxas raised a too-low --maxrregcount to (None: it did not)."""
    for d in log.warnings:
        m = re.search(r"adjusting per thread register count of \d+ to lower bound of (\d+)",
                      d.message)
        if m:
            return int(m.group(1))
    return None


def _unbounded(log) -> set:
    """Kernels whose stack ptxas could not determine statically (log warnings)."""
    out = set()
    for d in log.diagnostics:
        m = re.search(r"Stack size for entry function '([^']+)' cannot be statically", d.message)
        if m:
            out.add(m.group(1))
    return out


def _read_cubin(raw):
    if not raw.cubin:
        return None
    from .cubin import read_cubin
    try:
        return read_cubin(raw.cubin)
    except PtxforgeError:
        return None


def kernel_stats(raw, entries: tuple, requested_cap: Optional[int] = None) -> tuple:
    """One :class:`KernelStats` per entry of ``entries`` (:func:`~ptxforge.ptx.directives.
    ptx_entries`) from a backend's :class:`~ptxforge.toolchain.backends.RawResult`."""
    log = parse_ptxas_log(raw.log)
    info = _read_cubin(raw)
    cub = {k.name: k for k in info.kernels} if info is not None else {}
    frames = {k.name: k.frame_size or 0 for k in cub.values()}
    edges: dict = {}
    for a, b in (info.calls if info is not None else ()):
        edges.setdefault(a, []).append(b)
    unbounded = _unbounded(log)
    out = []
    for e in entries:
        try:
            f = log.function(e.name)
        except KeyError:
            f = None
        ck = cub.get(e.name)
        attrs_ = raw.attributes.get(e.name, {})
        # What the kernel runs with: the driver's figure, else the cubin's EIATTR_REGCOUNT
        # (for a kernel that calls functions that is the maximum over its call graph), else
        # the log's 'Used N registers', which covers the kernel's own body only.
        regs = attrs_.get("num_regs")
        if regs is None and ck is not None:
            regs = ck.registers
        if regs is None and f is not None:
            regs = f.registers
        if regs is None:
            raise CompileError(f"{raw.backend}: no register count for kernel {e.name!r} in the "
                               "log, the cubin or the driver", log=raw.log, backend=raw.backend)
        callees = info.reachable(e.name) if info is not None else ()
        if "num_regs" not in attrs_:
            # A relocatable cubin (ptxas -c) is not linked yet: each function carries its own
            # count, and the device link gives the kernel the maximum over its call graph.
            regs = max([regs] + [cub[c].registers for c in callees
                                 if c in cub and cub[c].registers is not None])
        own_frame = attrs_.get("local_size_bytes",
                               f.stack_frame if f and f.stack_frame is not None
                               else (ck.frame_size if ck and ck.frame_size is not None else 0))
        known = e.name not in unbounded and (ck is None or ck.call_stack_known)
        stack = None
        if known and ck is not None and ck.min_stack_size is not None:
            stack = ck.min_stack_size
        elif known and f is not None and f.cumulative_stack is not None:
            stack = f.cumulative_stack
        elif known and (linked := log.summary(e.name)) is not None and linked.stack is not None:
            stack = linked.stack
        if stack is None:
            stack = own_frame + deepest_chain(e.name, frames, edges)
        body_st = (f.spill_stores or 0) if f else 0
        body_ld = (f.spill_loads or 0) if f else 0
        cst, cld = callee_spills(log, e.name, callees)
        st, ld = body_st + cst, body_ld + cld
        shared = attrs_.get("shared_size_bytes")
        if shared is None:
            shared = f.shared if f and f.shared is not None else (ck.shared if ck else 0)
        barriers = f.barriers if f and f.barriers is not None else (
            (ck.barriers or 0) if ck is not None else None)
        max_threads = attrs_.get("max_threads_per_block")
        if max_threads is None and ck is not None and (ck.max_threads or ck.reqntid):
            max_threads = 1  # ptxas's own record in the cubin (EIATTR_MAX_THREADS / REQNTID)
            for d in (ck.reqntid or ck.max_threads):
                max_threads *= d
        if max_threads is None:
            max_threads = e.threads
        cap = resolve_register_cap(e, requested_cap, raw.target,
                                   ck.max_registers if ck is not None else None, _floor(log))
        out.append(KernelStats(
            name=e.name, target=raw.target, backend=raw.backend, registers=int(regs),
            spill_stores=st, spill_loads=ld, stack_frame=int(stack),
            local_array_bytes=e.local_array_bytes, shared=int(shared),
            constant_bank0=f.constant_bank0 if f else None, barriers=barriers,
            register_cap=cap.cap, compile_time_ms=f.compile_time_ms if f else None,
            max_threads_per_block=max_threads, body_registers=f.registers if f else None,
            body_spill_stores=body_st if f else None, body_spill_loads=body_ld if f else None,
            body_stack_frame=int(own_frame), callees=callees, stack_known=known,
            register_cap_source=cap.source, register_cap_detail=cap.detail,
            register_cap_note=cap.note))
    return tuple(out)
