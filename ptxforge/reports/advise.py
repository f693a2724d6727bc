"""``ptxforge advise``: a ranked list of changes to a kernel, each with its figures before
and after from real compiles.

The changes: a register cap (with the lever that takes effect for the kernel and front end,
:mod:`ptxforge.reports.levers`), the block size that gives the most blocks per SM, the shared
memory per block that would gain a block (against the next cliff), removing the cap that
makes a kernel spill, and ``#pragma unroll N`` on the loop whose replicated body holds the
peak (:mod:`ptxforge.reports.unroll`: compiled from the changed ``.cu`` when the source is
given, else marked as not proven).  Each item says what it buys (blocks per SM, occupancy) and what it costs
(spill bytes, SASS instructions).  "after" comes from a compile of the changed PTX; where a
change does not alter the code (the block size of a kernel without launch bounds, less shared
memory) it is the kernel's own compile set at the new launch, and ``after_from`` says so.

JSON (``"schema": "ptxforge.advise/1"``)::

    schema, file, arch, kernels: [{kernel, frontend, block_size, before: FIG,
                                   items: [{rank, kind, change, lever, levers, before: FIG,
                                            after: FIG | null, after_from, proven, buys,
                                            costs, tries?}]}]
    FIG = {registers, spill_stores, spill_loads, stack_frame, blocks_per_sm, occupancy,
           instructions, error, spill_lines: [{file, line, stores, loads, store_bytes,
           load_bytes, loop_depth, offsets}]}   (spill_lines: STL/LDL by source line, when
                                                 the compile spills)

Example::

    >>> r = advise(open("gemm.ptx").read(), "gemm.ptx", "sm_80")     # doctest: +SKIP
    >>> r.kernels[0].items[0].change                                   # doctest: +SKIP
    '__launch_bounds__(64, 10)'
"""

from __future__ import annotations

from typing import Optional, Union

import attrs

from ptxforge.arch.occupancy import arch_props, occupancy, unknown_arch_reason
from ptxforge.arch.spec import LaunchSpec
from ptxforge.ptx.demangle import demangle_function
from ptxforge.ptx.directives import ptx_entries, with_directives
from ptxforge.toolchain.regcap import NO_CAP

from .levers import Outcome, compile_outcome, detect_frontend, with_spill_lines

__all__ = ["ADVISE_SCHEMA", "AdviceItem", "AdviseReport", "KernelAdvice", "advise"]

ADVISE_SCHEMA = "ptxforge.advise/1"


@attrs.frozen(slots=True, kw_only=True)
class AdviceItem:
    """One change: ``kind`` (``"register cap"``, ``"block size"``, ``"shared memory"``,
    ``"remove spills"``), ``change`` (what to write), ``lever``/``levers`` (the proven levers
    of a cap, dicts), the figures ``before`` and ``after`` and where ``after`` came from."""

    kind: str
    change: str
    before: Outcome
    after: Outcome
    after_from: str
    lever: Optional[dict] = None
    levers: tuple = ()
    proven: bool = True            # False: "after" is not known (nothing could be compiled)
    tries: tuple = ()              # the unroll variants compiled: dicts

    @property
    def gain(self) -> tuple:
        """(blocks per SM gained, spill bytes saved): the ranking key."""
        if not self.proven:
            return (0, 0)
        return ((self.after.blocks_per_sm or 0) - (self.before.blocks_per_sm or 0),
                self.before.spill - self.after.spill)

    def to_dict(self, rank: int) -> dict:
        b, a = self.before, self.after
        occ = (None if a.occupancy is None or b.occupancy is None
               else round(a.occupancy - b.occupancy, 6))
        ins = (None if a.instructions is None or b.instructions is None
               else a.instructions - b.instructions)
        out = {"rank": rank, "kind": self.kind, "change": self.change, "lever": self.lever,
               "levers": list(self.levers), "before": b.to_dict(),
               "after": a.to_dict() if self.proven else None,
               "after_from": self.after_from, "proven": self.proven,
               "buys": {"blocks_per_sm": self.gain[0], "occupancy": occ,
                        "spill_bytes_saved": max(self.gain[1], 0)},
               "costs": {"spill_bytes": max(-self.gain[1], 0), "instructions": ins}}
        if not self.proven:
            out["buys"] = out["costs"] = None
        if self.tries:
            out["tries"] = list(self.tries)
        return out

    def text(self, rank: int) -> list:
        if not self.proven:
            return [f"  {rank}. {self.kind}: {self.change}",
                    f"     not proven: {self.after_from}"]
        d = self.to_dict(rank)
        buys, costs = d["buys"], d["costs"]
        blocks, occ = buys["blocks_per_sm"], buys["occupancy"]
        gained: list = []
        lost: list = []
        if blocks:
            points = "" if occ is None else f" ({abs(occ) * 100:.1f} points)"
            (gained if blocks > 0 else lost).append(f"{abs(blocks)} blocks/SM{points}")
        if buys["spill_bytes_saved"]:
            gained.append(f"{buys['spill_bytes_saved']} spill bytes removed")
        if costs["spill_bytes"]:
            lost.append(f"{costs['spill_bytes']} spill bytes")
        if costs["instructions"]:
            (lost if costs["instructions"] > 0 else gained).append(
                f"{abs(costs['instructions'])} SASS instructions"
                + (" fewer" if costs["instructions"] < 0 else ""))
        out = [f"  {rank}. {self.kind}: {self.change}",
               f"     after ({self.after_from}): {_fig(self.after)}",
               f"     buys {', '.join(gained) or 'nothing'}; costs {', '.join(lost) or 'nothing'}"]
        out += _spill_text(self.after, "     ")
        out += [f"     or: {lv['text']} (compiled: {_fig(_outcome(lv['compiled']))})"
                for lv in self.levers[1:] if lv["holds"]]
        return out


def _outcome(d: dict) -> Outcome:
    return Outcome(**{k: v for k, v in d.items() if k != "spill_lines"})


def _spill_text(o: Outcome, indent: str, top: int = 3) -> list:
    """The lines with the most local-memory traffic (deepest loop first)."""
    if not o.spill_lines:
        return []
    more = len(o.spill_lines) - top
    return ([f"{indent}local memory by line (deepest loop first): "
             + "; ".join(str(s) for s in o.spill_lines[:top])
             + (f"; {more} more lines" if more > 0 else "")])


def _fig(o: Outcome) -> str:
    if o.error:
        return f"refused: {o.error}"
    occ = "" if o.occupancy is None else f" ({o.occupancy * 100:.1f}%)"
    blocks = "n/a" if o.blocks_per_sm is None else str(o.blocks_per_sm)
    ins = "" if o.instructions is None else f", {o.instructions} instructions"
    return f"{o.registers} registers, {o.spill} spill bytes, {blocks} blocks/SM{occ}{ins}"


@attrs.frozen(slots=True, kw_only=True)
class KernelAdvice:
    """The advice for one kernel: its front end, launch, figures now and the ranked items."""

    kernel: str
    frontend: str
    block_size: int
    before: Outcome
    items: tuple
    notes: tuple = ()

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "frontend": self.frontend, "block_size": self.block_size,
                "before": self.before.to_dict(), "notes": list(self.notes),
                "items": [it.to_dict(i + 1) for i, it in enumerate(self.items)]}


@attrs.frozen(slots=True, kw_only=True)
class AdviseReport:
    """``ptxforge advise``: per kernel a :class:`KernelAdvice`."""

    file: str
    arch: str
    tool: str
    kernels: tuple

    def to_dict(self) -> dict:
        return {"schema": ADVISE_SCHEMA, "file": self.file, "arch": self.arch,
                "tool": self.tool, "kernels": [k.to_dict() for k in self.kernels]}

    def to_text(self) -> str:
        parts = []
        for k in self.kernels:
            lines = [f"advise: {demangle_function(k.kernel)} on {self.arch}, {k.block_size} "
                     f"threads/block, {k.frontend} ({self.tool})",
                     f"  now: {_fig(k.before)}"] + _spill_text(k.before, "  ")
            for i, it in enumerate(k.items):
                lines += it.text(i + 1)
            if not k.items:
                lines.append("  no change found that gains a block per SM or removes spills")
            lines += [f"  note: {n}" for n in k.notes]
            parts.append("\n".join(lines) + "\n")
        return "\n".join(parts)


def _cap_items(rep, s, budget: int, before: Outcome) -> list:
    """The proven cap recommendations (no spills; within ``budget`` spill bytes)."""
    from .occupancy_sweep import _proven

    out, seen = [], set()
    for b in sorted({0, budget}):
        rec = _proven(s, b, rep.ptx, rep.request, rep.proofs)
        if rec.choice is None or rec.choice.cap is None or not rec.holding \
                or rec.choice.cap in seen or rec.choice.cap >= NO_CAP:
            continue   # cap 255 is "no cap": the remove-spills item says so
        seen.add(rec.choice.cap)
        first = rec.holding[0]
        lv = first.lever
        ptx = with_directives(rep.ptx, s.kernel, dict(lv.changes)) if lv.changes else rep.ptx
        after = with_spill_lines(first.outcome, ptx, s.kernel, s.target, request=rep.request,
                                 max_registers=lv.max_registers)
        out.append(AdviceItem(kind="register cap", change=first.lever.text, before=before,
                              after=after, after_from=f"compiled: {first.lever.applied}",
                              lever=first.to_dict(), levers=tuple(p.to_dict() for p in rec.levers)))
    return out


def _spill_item(ptx: str, kernel: str, entry, target: str, block: int, before: Outcome,
                request) -> Optional[AdviceItem]:
    """When the kernel spills under its own cap (.maxnreg, .minnctapersm): the cap removed."""
    if not before.spill or (entry.maxnreg is None and entry.minnctapersm is None):
        return None
    drop = {"maxnreg": None, "minnctapersm": None}
    after = compile_outcome(with_directives(ptx, kernel, drop), kernel, target, block,
                            request=request)
    if after.error or after.spill >= before.spill:
        return None
    what = " and ".join(f".{d} {getattr(entry, d)}" for d in drop if getattr(entry, d))
    return AdviceItem(kind="remove spills", change=f"drop {what} (the kernel's own cap)",
                      before=before, after=after, after_from=f"compiled without {what}")


def _block_item(ptx: str, kernel: str, entry, target: str, block: int, before: Outcome,
                request) -> Optional[AdviceItem]:
    """The block size (a multiple of 32) with the most blocks' worth of warps per SM."""
    if before.registers is None or before.occupancy is None or entry.reqntid:
        return None
    props = arch_props(target)
    t, most = block, before.occupancy
    for size in range(32, props.max_threads_per_block + 1, 32):
        occ = occupancy(before.registers, size, props)
        if occ.occupancy > most + 1e-9:
            t, most = size, occ.occupancy
    if t == block:
        return None
    if entry.maxntid is not None:   # a launch bound: the change is __launch_bounds__(t)
        after = compile_outcome(with_directives(ptx, kernel, {"maxntid": (t, 1, 1)}), kernel,
                                target, t, request=request)
        how, change = f"compiled with .maxntid {t}", f"__launch_bounds__({t}) and launch {t}"
    else:
        after = compile_outcome(ptx, kernel, target, t, request=request)
        how, change = "the same compile at the new launch", f"launch {t} threads per block"
    if after.error or (after.occupancy or 0) <= before.occupancy + 1e-9:
        return None
    return AdviceItem(kind="block size", change=change, before=before, after=after,
                      after_from=how)


def _shared_item(k, target: str, before: Outcome) -> Optional[AdviceItem]:
    """The static shared memory per block that gains one block, when shared memory binds."""
    occ = k.occupancy
    if occ is None or "shared_memory" not in occ.limiting or before.registers is None:
        return None
    shared = k.stats.shared if k.stats is not None else 0
    want = occ.active_blocks + 1
    props = arch_props(target)
    for cut in range(shared, -1, -128):
        o = occupancy(before.registers, k.block_size, props, shared=cut,
                      dynamic_shared=k.dynamic_shared)
        if o.active_blocks >= want:
            after = attrs.evolve(before, blocks_per_sm=o.active_blocks, occupancy=o.occupancy)
            return AdviceItem(kind="shared memory",
                              change=f"{cut} bytes of static shared memory per block "
                                     f"(now {shared})",
                              before=before, after=after,
                              after_from="the kernel's compile with that shared memory (the "
                                         "occupancy table; the code must change to use less)")
        if "shared_memory" not in o.limiting:
            return None
    return None


def _unroll_item(k, target: str, block: int, before: Outcome, source,
                 request) -> tuple:
    """(item or None, note or None): ``#pragma unroll N`` on the loop around the peak's line
    when that line is replicated (:mod:`ptxforge.reports.unroll`), proven by compiling the
    changed source; unproven without it."""
    from .unroll import unroll_advice

    adv = unroll_advice(k, before, target, block, source=source, request=request)
    if adv is None:
        return None, None
    f, line, view = adv.line
    held = f"{f}:{line} ({adv.copies} copies in the PTX; the {view} view's peak line)"
    if not adv.proven:
        where = (f"one of the loops at {', '.join(f'{f}:{lp.line}' for lp in adv.loops)} "
                 f"(they hold {held})" if adv.loops else f"the loop around {held}")
        return AdviceItem(kind="unroll", change=f"#pragma unroll N, N below the present "
                          f"unroll, on {where}", before=before,
                          after=Outcome(), after_from=adv.why_unproven, proven=False), None
    tries = tuple({"loop_line": t.loop.line, "unroll": t.n, "compiled": t.outcome.to_dict()}
                  for t in adv.tries)
    if adv.best is None:
        if not adv.tries:
            return None, None
        tried = ", ".join(f"{t.n} at {f}:{t.loop.line}" for t in adv.tries)
        return None, (f"{held} is a replicated loop body; unrolling less gains no block "
                      f"without spills (compiled #pragma unroll {tried})")
    b = adv.best
    now = "no pragma" if b.loop.pragma is None else f"now #pragma unroll {b.loop.pragma}".strip()
    return AdviceItem(kind="unroll", change=f"#pragma unroll {b.n} on the loop at "
                      f"{f}:{b.loop.line} ({now}; it holds {held})", before=before,
                      after=b.outcome, after_from=f"compiled: the .cu with #pragma unroll "
                      f"{b.n} at line {b.loop.line}, NVRTC then ptxas", tries=tries), None


def _rank(item: AdviceItem) -> tuple:
    """Proven items first; most occupancy gained first (blocks per SM differ in size between
    block sizes), then the fewest spill bytes added, the most removed."""
    b, a = item.before, item.after
    occ = (a.occupancy or 0.0) - (b.occupancy or 0.0) if item.proven else 0.0
    return (not item.proven, -round(occ, 9), max(-item.gain[1], 0), -item.gain[1])


def advise(text: Union[str, bytes], file: str = "<ptx>",
           spec: Union[LaunchSpec, str, int, None] = None, *, kernel=None, request=None,
           spill_budget: int = 0, progress=None, source=None) -> AdviseReport:
    """Sweep, then prove and rank the changes for every selected kernel of the PTX ``text``
    (``spec``, ``kernel``, ``request`` as in
    :func:`~ptxforge.reports.occupancy_sweep.sweep_report`; ``spill_budget`` also proposes the
    cap with the most occupancy whose spills stay within that many bytes; ``source``, the
    CUDA source the PTX came from as ``(text, path, compile)`` with ``compile(text)`` its PTX
    (NVRTC with the user's flags), lets an unroll change be compiled and proven)."""
    from .occupancy_sweep import sweep_report

    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    rep = sweep_report(text, file, spec, kernel=kernel, request=request, progress=progress)
    rep = attrs.evolve(rep, spill_budget=spill_budget, proofs=rep.proofs)
    entries = {e.name: e for e in ptx_entries(text)}
    frontend = detect_frontend(text)
    out = []
    for k, s in zip(rep.analysis.kernels, rep.sweeps):
        tgt, block = s.target, s.block_size
        before = with_spill_lines(compile_outcome(text, k.name, tgt, block,
                                                  request=rep.request,
                                                  dynamic_shared=k.dynamic_shared),
                                  text, k.name, tgt, request=rep.request)
        entry = entries[k.name]
        items = _cap_items(rep, s, spill_budget, before)
        notes = []
        if unknown_arch_reason(tgt) is None:
            for extra in (_block_item(text, k.name, entry, tgt, block, before, rep.request),
                          _spill_item(text, k.name, entry, tgt, block, before, rep.request),
                          _shared_item(k, tgt, before)):
                if extra is not None:
                    items.append(extra)
            unroll, note = _unroll_item(k, tgt, block, before, source, rep.request)
            items += [unroll] if unroll is not None else []
            notes += [note] if note else []
        else:
            notes.append(f"{tgt}: no occupancy table, so no change can be ranked by blocks/SM")
        gaining = [r for r in s.rows if r.ok and r.blocks_per_sm and before.blocks_per_sm
                   is not None and r.blocks_per_sm > before.blocks_per_sm]
        spilling = min(gaining, key=lambda r: (r.spill_stores or 0) + (r.spill_loads or 0),
                       default=None)
        if spilling is not None and not any(it.kind == "register cap" for it in items):
            spill = (spilling.spill_stores or 0) + (spilling.spill_loads or 0)
            notes.append(f"every cap that gains a block spills: the least is cap "
                         f"{spilling.cap} ({spilling.registers} registers, {spill} spill "
                         f"bytes, {spilling.blocks_per_sm} blocks/SM); --spill-budget {spill} "
                         "proposes it with its lever")
        if frontend == "triton":
            notes.append("the block size of a Triton kernel is num_warps, which changes its "
                         "code: ptxforge.frontends.triton.num_warps_levers recompiles it at "
                         "each num_warps (advise has only the PTX)")
        if entry.threads is not None and frontend in ("cuda", "ptx", "numba"):
            notes.append("-maxrregcount does not cap this kernel: ptxas ignores it for a "
                         "kernel with launch bounds (.maxntid/.reqntid)")
        items.sort(key=_rank)
        out.append(KernelAdvice(kernel=k.name, frontend=frontend, block_size=block,
                                before=before, items=tuple(items), notes=tuple(notes)))
    return AdviseReport(file=file, arch=rep.analysis.arch, tool=rep.analysis.tool or "",
                        kernels=tuple(out))
