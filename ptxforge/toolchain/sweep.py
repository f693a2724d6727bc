"""Register-cap sweep: compile one kernel at several register caps and tabulate registers,
spills, stack and occupancy per cap.

The default caps are the occupancy cliffs for the chosen block size (the largest register
count of each blocks-per-SM plateau) down to 24: the caps where a user gains a block.  For a
target the occupancy table lacks, the defaults are :data:`GENERIC_CAPS` and the occupancy
columns are None ("n/a").

How a cap is applied: ``--maxrregcount`` for a plain kernel; ``.maxnreg N`` written into the
kernel's PTX for one with ``.maxntid``/``.reqntid`` (``__launch_bounds__``, for which ptxas
ignores ``--maxrregcount``) or its own ``.maxnreg`` (which overrides it).  Each row says the
cap ptxas compiled under (``register_cap``) and where it came from, so a cap that launch
bounds undercut shows as such.

Every compile runs in a worker child (:mod:`ptxforge.toolchain.isolate`, in parallel): a cap at which
nvJitLink crashes becomes a row marked ``crashed`` ("nvJitLink crashed (signal 11 (SIGSEGV))
at cap 24") and, when a ptxas executable accepts the target, that row is compiled again with
it and says so.  A cap ptxas refuses ("Insufficient registers (24) … Try to compile with
register target of 28 or higher") becomes a row marked ``refused`` with ptxas's reason and
``min_registers``; the rest of the table is unaffected.

Example::

    >>> s = sweep(ptx, "pressure", LaunchSpec(target="sm_80", block=256))  # doctest: +SKIP
    >>> print(s.to_text())                                        # doctest: +SKIP
"""

from __future__ import annotations

import concurrent.futures
import json
import re
from typing import Optional, Union

import attrs

from ptxforge.arch.occupancy import KernelLimits, occupancy, register_cliffs, unknown_arch_reason
from ptxforge.arch.spec import LaunchSpec, launch_spec
from ptxforge.errors import CompileError, CompilerCrashError, PtxforgeError
from ptxforge.ptx.directives import ptx_entries, ptx_target, with_maxnreg, with_version

from .backends import PtxasBackend
from .compile import (
    CompileOptions,
    CompileRequest,
    _choose,
    _source,
    compiled_from_raw,
    explain_compile_error,
    get_backend,
    prepare_options,
)
from .isolate import shared_pool
from .ptxas_log import parse_ptxas_log

__all__ = ["GENERIC_CAPS", "Sweep", "SweepRow", "default_caps", "sweep"]

#: Default caps for a target without an occupancy table (no cliffs to compute).
GENERIC_CAPS = (255, 128, 96, 64, 48, 40, 32, 24)

_MIN_REGS = re.compile(r"register target of (\d+) or higher")
_MIN_REGS_IN = re.compile(r"Insufficient registers \(\d+\) to compile instruction at line \d+ "
                          r"in function ([\w$.]+?)\.?(?:\s|$)")


@attrs.frozen(slots=True, kw_only=True)
class SweepRow:
    """One compile: ``cap`` None is the uncapped baseline.

    ``status`` is ``"ok"``, ``"refused"`` (ptxas rejected the cap: ``error`` is its reason,
    ``min_registers`` the least it asked for when it said) or ``"crashed"`` (the compiler
    died and no retry succeeded: ``error`` says how).  The figures are None unless the row
    compiled.  ``register_cap``/``register_cap_source``: the cap ptxas compiled under and its
    origin; ``note``: how the row was obtained when that is not the plain way (a retry with
    the ptxas executable after a crash, a cap the launch bounds undercut).
    """

    cap: Optional[int]
    registers: Optional[int]
    spill_stores: Optional[int]
    spill_loads: Optional[int]
    stack_frame: Optional[int]
    blocks_per_sm: Optional[int]        # None: no occupancy table for the target, or failed
    occupancy: Optional[float]
    limiting: tuple
    reason: Optional[str] = None        # why no block launches (or why occupancy is unknown)
    status: str = "ok"
    error: Optional[str] = None
    min_registers: Optional[int] = None
    register_cap: Optional[int] = None
    register_cap_source: Optional[str] = None
    backend: Optional[str] = None
    tool: Optional[str] = None
    note: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return {"cap": self.cap, "registers": self.registers, "spill_stores": self.spill_stores,
                "spill_loads": self.spill_loads, "stack_frame": self.stack_frame,
                "blocks_per_sm": self.blocks_per_sm,
                "occupancy": None if self.occupancy is None else round(self.occupancy, 6),
                "limiting": list(self.limiting), "reason": self.reason, "status": self.status,
                "error": self.error, "min_registers": self.min_registers,
                "register_cap": self.register_cap,
                "register_cap_source": self.register_cap_source, "backend": self.backend,
                "tool": self.tool, "note": self.note}


@attrs.frozen(slots=True, kw_only=True)
class Sweep:
    """The table of a sweep, baseline first then caps from high to low.

    ``cap_method``: ``"--maxrregcount"`` or ``".maxnreg"`` (how the caps were applied);
    ``notes``: sentences about the whole sweep (why caps went in as ``.maxnreg``, debug PTX).
    """

    kernel: str
    target: str
    block_size: int
    backend: str
    rows: tuple
    cap_method: str = "--maxrregcount"
    notes: tuple = ()
    tool: str = ""

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "target": self.target, "block_size": self.block_size,
                "backend": self.backend, "tool": self.tool, "cap_method": self.cap_method,
                "notes": list(self.notes), "rows": [r.to_dict() for r in self.rows]}

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)

    def to_text(self) -> str:
        from ptxforge.ptx.demangle import demangle_function

        head = (f"register-cap sweep: {demangle_function(self.kernel)} on {self.target}, "
                f"{self.block_size} threads/block ({self.backend})")
        cols = ("cap", "regs", "spill st", "spill ld", "stack", "blocks/SM", "occupancy", "limited by")
        lines = [head, "  ".join(f"{c:>9}" for c in cols)]
        reasons, row_notes = [], []
        for r in self.rows:
            name = "none" if r.cap is None else str(r.cap)
            if r.note:
                name += "*"
                row_notes.append(f"* cap {r.cap if r.cap is not None else 'none'}: {r.note}")
            if not r.ok:
                cells = (name, r.status) + ("-",) * 6
                row_notes.append(f"cap {r.cap if r.cap is not None else 'none'}: {r.error}")
            else:
                na = r.blocks_per_sm is None
                cells = (name, str(r.registers), str(r.spill_stores), str(r.spill_loads),
                         str(r.stack_frame), "n/a" if na else str(r.blocks_per_sm),
                         "n/a" if na else f"{r.occupancy * 100:.1f}%",
                         ",".join(r.limiting) or "-")
                if r.reason and r.reason not in reasons:
                    reasons.append(r.reason)
            lines.append("  ".join(f"{c:>9}" for c in cells))
        unknown = unknown_arch_reason(self.target) is not None
        lines += [("occupancy n/a: " if unknown else "cannot launch: ") + why for why in reasons]
        lines += row_notes + list(self.notes)
        return "\n".join(lines)


def default_caps(target: str, block_size: int, *, floor: int = 24, **occ_kwargs) -> tuple:
    """The register counts at the occupancy cliffs for ``block_size``, down to ``floor``
    (:data:`GENERIC_CAPS` for a target without an occupancy table)."""
    if unknown_arch_reason(target) is not None:
        return tuple(c for c in GENERIC_CAPS if c >= floor)
    cliffs = register_cliffs(255, block_size, target, **occ_kwargs)
    caps = {c for c in cliffs.caps if floor <= c <= 255}
    caps.add(floor)
    return tuple(sorted(caps, reverse=True))


def _check_kernel(ptx: str, kernel: Optional[str], entries: dict) -> str:
    names = list(entries)
    if kernel is None and len(names) != 1:
        raise PtxforgeError(f"sweep: the PTX has kernels {', '.join(names) or 'none'}; "
                            "name the one to sweep")
    if kernel is None:
        return names[0]
    if kernel not in entries:
        funcs = _functions(ptx)
        what = ("is a .func, not an .entry kernel" if kernel in funcs
                else "is not a kernel of the PTX")
        if not names:
            raise PtxforgeError(f"sweep: {kernel!r} {what}: the PTX has no .entry kernels, "
                                f"only functions ({', '.join(funcs) or 'none'}); ptxas reports "
                                "registers per kernel, so only .entry kernels can be swept")
        raise PtxforgeError(f"sweep: {kernel!r} {what}; the kernels are: {', '.join(names)}")
    return kernel


def _run(be, jobs: list, tgt: str, isolate: bool, max_workers: Optional[int]) -> list:
    """Per job (ptx, options): a RawResult or the CompileError it raised."""
    if len(jobs) == 1:
        try:
            return [be.compile_isolated(jobs[0][0], tgt, jobs[0][1]) if isolate
                    else be.compile(jobs[0][0], tgt, jobs[0][1])]
        except CompileError as exc:
            return [exc]
    if isolate and be.in_process:
        outcomes = shared_pool().map([be.isolated_job(p, tgt, o) for p, o in jobs], max_workers)
        out = []
        for (p, o), outcome in zip(jobs, outcomes):
            try:
                out.append(be.finish(outcome, tgt, o))
            except CompileError as exc:
                out.append(exc)
        return out

    def one(job):
        try:
            return be.compile(job[0], tgt, job[1])
        except CompileError as exc:
            return exc

    workers = max(1, min(len(jobs), max_workers or 2))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, jobs))


def _refusal(exc: CompileError) -> tuple:
    """(ptxas's reason, the least registers it asked for or None)."""
    errors = parse_ptxas_log(exc.log).errors
    text = "; ".join(dict.fromkeys(d.message for d in errors if "aborted" not in d.message))
    text = text or str(exc).splitlines()[0]
    m = _MIN_REGS.search(exc.log)
    return text, int(m.group(1)) if m else None


def _retry(ptx: str, tgt: str, options: CompileOptions, crash: CompilerCrashError):
    """After a crash: (RawResult or None, sentence saying what was tried)."""
    what = str(crash).splitlines()[0]
    alt = PtxasBackend().for_target(tgt)
    if alt is None:
        ok, why = PtxasBackend().status()
        return None, (f"{what}; no ptxas executable here accepts {tgt} to retry with"
                      + ("" if ok else f" ({why})"))
    try:
        raw = alt.compile(ptx, tgt, options)
        return raw, f"{what}; this row is from {raw.tool}"
    except CompileError as exc:
        m = re.search(r"Unsupported \.version (\d+)\.(\d+); current version is '(\d+)\.(\d+)'",
                      exc.log)
        if m is None:
            return None, f"{what}; the retry with {alt.path} failed too: {_refusal(exc)[0]}"
        have, can = f"{m.group(1)}.{m.group(2)}", (int(m.group(3)), int(m.group(4)))
    try:
        raw = alt.compile(with_version(ptx, can), tgt, options)
    except CompileError as exc:
        return None, (f"{what}; the retry with {alt.path} (.version {have} lowered to "
                      f"{can[0]}.{can[1]}) failed too: {_refusal(exc)[0]}")
    return raw, (f"{what}; this row is from {raw.tool}, with the PTX's .version {have} "
                 f"lowered to {can[0]}.{can[1]}, the newest it reads")


def _row(cap, k, tgt, block_size, dynamic_shared, required, raw_backend, tool, note):
    unknown = unknown_arch_reason(tgt)
    common = dict(register_cap=k.register_cap, register_cap_source=k.register_cap_source,
                  backend=raw_backend, tool=tool, note=note)
    if unknown is not None:
        return SweepRow(cap=cap, registers=k.registers, spill_stores=k.spill_stores,
                        spill_loads=k.spill_loads, stack_frame=k.stack_frame, blocks_per_sm=None,
                        occupancy=None, limiting=(), reason=unknown, **common)
    occ = occupancy(k.registers, block_size, tgt, shared=k.shared, dynamic_shared=dynamic_shared,
                    barriers=max(k.barriers or 1, 1), kernel_limits=KernelLimits(max_threads=k.max_threads_per_block,
                                        required_threads=required))
    return SweepRow(cap=cap, registers=k.registers, spill_stores=k.spill_stores,
                    spill_loads=k.spill_loads, stack_frame=k.stack_frame,
                    blocks_per_sm=occ.active_blocks, occupancy=occ.occupancy, limiting=occ.limiting,
                    reason=occ.reason, **common)


def sweep(ptx_or_module, kernel: Optional[str] = None,
          spec: Union[LaunchSpec, str, int, None] = "sm_80", *, caps=None, extra_caps=(),
          request: Optional[CompileRequest] = None, max_workers: Optional[int] = None) -> Sweep:
    """Compile ``kernel`` uncapped and at each cap (in parallel) and tabulate the results.

    ``spec`` is the launch (a :class:`~ptxforge.arch.spec.LaunchSpec`, or a target name;
    target default sm_80, block default 256 threads); ``request`` the
    :class:`~ptxforge.toolchain.compile.CompileRequest` (backend, options; its
    ``isolate=False`` compiles in this process, where a crash of nvJitLink ends it).
    ``caps`` None means :func:`default_caps`; ``extra_caps`` are added to either.
    """
    spec, request = launch_spec(spec), request or CompileRequest()
    tgt = spec.target or "sm_80"
    block_size = 256 if spec.block is None else spec.block
    dynamic_shared, options, isolate = spec.dynamic_shared, request.options, request.isolate
    backend = request.compiler
    ptx = _source(ptx_or_module)
    info = ptx_target(ptx)
    entries = {e.name: e for e in ptx_entries(ptx)}
    kernel = _check_kernel(ptx, kernel, entries)
    chosen = set(default_caps(tgt, block_size) if caps is None else caps) | set(extra_caps)
    for c in chosen:
        if not isinstance(c, int) or isinstance(c, bool) or not 16 <= c <= 255:
            raise PtxforgeError(f"sweep: caps must be ints in 16..255, got {c!r}")
    cap_list = [None] + sorted(chosen, reverse=True)
    base, debug_note = prepare_options(options, info)
    base = attrs.evolve(base, max_registers=None,
                        entries=(kernel,) if len(entries) > 1 else base.entries)
    entry = entries[kernel]
    notes = [debug_note] if debug_note else []
    method = "--maxrregcount"
    if entry.threads is not None or entry.maxnreg is not None:
        method = ".maxnreg"
        why = (f"ptxas ignores --maxrregcount for a kernel with "
               f"{'.reqntid' if entry.reqntid else '.maxntid'} (__launch_bounds__)"
               if entry.threads is not None else
               f"the kernel's own .maxnreg {entry.maxnreg} overrides --maxrregcount")
        notes.insert(0, f"caps applied as '.maxnreg N' in {kernel}'s PTX: {why}")
    jobs = []
    for c in cap_list:
        if c is None:
            jobs.append((ptx, base))
        elif method == ".maxnreg":
            jobs.append((with_maxnreg(ptx, kernel, c), base))
        else:
            jobs.append((ptx, attrs.evolve(base, max_registers=c)))
    be = _choose(tgt)[0] if backend == "auto" else get_backend(backend)
    results = _run(be, jobs, tgt, isolate, max_workers)
    required = entry.threads if entry.reqntid else None
    rows = []
    for cap, (job_ptx, opts), res in zip(cap_list, jobs, results):
        note = None
        if isinstance(res, CompilerCrashError):
            raw, note = _retry(job_ptx, tgt, opts, res)
            if raw is None:
                rows.append(SweepRow(cap=cap, registers=None, spill_stores=None, spill_loads=None,
                                     stack_frame=None, blocks_per_sm=None, occupancy=None,
                                     limiting=(), reason=None, status="crashed", error=note,
                                     backend=be.name))
                continue
            res = raw
        elif isinstance(res, CompileError):
            if cap is None:
                raise explain_compile_error(res, job_ptx, tgt, info)
            text, least = _refusal(res)
            other = _MIN_REGS_IN.search(res.log)
            if (method == "--maxrregcount" and other and other.group(1) != kernel
                    and other.group(1) in entries):
                # ptxas refused another kernel of the module at this cap: cap this one alone
                job_ptx, opts = with_maxnreg(ptx, kernel, cap), base
                res = _run(be, [(job_ptx, opts)], tgt, isolate, 1)[0]
                if not isinstance(res, CompileError):
                    note = (f"compiled with '.maxnreg {cap}' in {kernel} alone: at "
                            f"--maxrregcount={cap} ptxas refuses another kernel of the module "
                            f"({text})")
        if isinstance(res, CompileError):
            text, least = _refusal(res)
            rows.append(SweepRow(cap=cap, registers=None, spill_stores=None, spill_loads=None,
                                 stack_frame=None, blocks_per_sm=None, occupancy=None, limiting=(),
                                 reason=None, status="refused", error=f"refused by ptxas: {text}",
                                 min_registers=least, backend=be.name))
            continue
        k = compiled_from_raw(res, tuple(e for e in ptx_entries(job_ptx) if e.name == kernel),
                              opts)[kernel]
        if cap is not None and k.register_cap is not None and k.register_cap > cap:
            note = "; ".join(n for n in (note, f"ptxas raised the cap to {k.register_cap}, its "
                                         f"lower bound for {tgt}") if n)
        if cap is not None and k.register_cap is not None and k.register_cap < cap:
            bound = (f"{k.register_cap_source}: {k.register_cap_detail}"
                     if k.register_cap_detail else k.register_cap_source)
            note = "; ".join(n for n in (note, f"not binding: ptxas compiled under "
                                         f"{k.register_cap}, from the {bound}") if n)
        if cap is not None and rows and rows[0].registers is not None \
                and cap >= rows[0].registers and k.registers != rows[0].registers:
            note = "; ".join(n for n in (note, _UNREACHED_ROW.format(
                base=rows[0].registers)) if n)
            if _UNREACHED_NOTE not in notes:
                notes.append(_UNREACHED_NOTE)
        rows.append(_row(cap, k, tgt, block_size, dynamic_shared, required, res.backend,
                         res.tool, note))
    return Sweep(kernel=kernel, target=tgt, block_size=block_size, backend=be.name,
                 rows=tuple(rows), cap_method=method, notes=tuple(notes),
                 tool=be.status()[1] if be.name != "ptxas" else (rows[0].tool or ""))


# Measured with ptxas 13.5 and 12.9 alike (sgemm_4x4 of tests/corpus/gemm.cu: 56 uncapped, 67
# at --maxrregcount 255, 254 and 128): any explicit cap changes ptxas's allocation heuristics,
# even one the kernel never reaches.  nvcc -maxrregcount=N gives the capped figure.
_UNREACHED_ROW = "the cap is not below the uncapped count ({base}), yet the count changed"
_UNREACHED_NOTE = ("ptxas allocates differently whenever a register cap is given, even one at or "
                   "above the uncapped count, so such a row can differ from the uncapped one; "
                   "this is ptxas's own behaviour (nvcc -maxrregcount gives the same), not the "
                   "sweep's")


_FUNC = re.compile(r"\.func\s+(?:\([^)]*\)\s*)?([A-Za-z_$%][\w$%]*)")


def _functions(ptx: str) -> list:
    """Names of the ``.func`` functions declared in PTX text, in order, once each."""
    return list(dict.fromkeys(_FUNC.findall(re.sub(r"//[^\n]*", "", ptx))))
