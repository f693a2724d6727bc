"""Compile PTX with ptxas (through nvJitLink, a ptxas executable or the CUDA driver) and read
what it assigned: registers, spills, stack, shared and constant memory, barriers.

Example::

    >>> from ptxforge.compile import compile_ptx, CompileOptions
    >>> c = compile_ptx(ptx_text, "sm_80", options=CompileOptions(max_registers=64))  # doctest: +SKIP
    >>> c["axpy"].registers                                                            # doctest: +SKIP
    10

``backend="auto"`` uses nvJitLink when the installed nvJitLink accepts the target and falls
back to a ptxas executable otherwise (nvJitLink 13 refuses sm_70/sm_72; the CUDA 12 ptxas of
``pip install nvidia-cuda-nvcc-cu12`` still targets them).  ``backend="driver"`` JIT-compiles
for the GPU present and reads the function attributes the driver reports.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
from typing import Optional, Union

import attrs

from .backends import (BACKEND_NAMES, Backend, DriverBackend, NvJitLinkBackend, PtxasBackend,
                       RawResult)
from .errors import BackendUnavailableError, CompileError, PtxforgeError
from .ptxas_log import PtxasLog, parse_ptxas_log

__all__ = ["TARGETS", "normalize_target", "CompileOptions", "KernelStats", "Compiled",
           "compile_ptx", "compile_many", "get_backend", "available_backends", "backend_status",
           "ptx_entries", "PtxEntry"]

_BASE_TARGETS = ("sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89",
                 "sm_90", "sm_100", "sm_101", "sm_103", "sm_110", "sm_120", "sm_121")
_A_VARIANTS = ("sm_90a", "sm_100a", "sm_101a", "sm_103a", "sm_110a", "sm_120a", "sm_121a")
_F_VARIANTS = ("sm_100f", "sm_101f", "sm_103f", "sm_110f", "sm_120f", "sm_121f")
#: Every target name the options accept (whether a given toolkit accepts it is its business).
TARGETS = _BASE_TARGETS + _A_VARIANTS + _F_VARIANTS


def normalize_target(target: Union[str, int]) -> str:
    """``"sm_80"`` from ``"sm_80"``, ``"80"``, ``80``, ``"8.0"`` or ``"compute_80"``."""
    s = str(target).strip().lower()
    m = re.fullmatch(r"(\d+)\.(\d)", s)
    if m:
        s = m.group(1) + m.group(2)
    s = re.sub(r"^(sm_|compute_)", "", s)
    name = "sm_" + s
    if name not in TARGETS:
        raise PtxforgeError(f"compile: unknown target {target!r}; expected one of {', '.join(TARGETS)}")
    return name


def _opt_level(_, attribute, value):
    if value not in (0, 1, 2, 3):
        raise PtxforgeError(f"CompileOptions.{attribute.name}: expected 0..3, got {value!r}")


def _max_regs(_, attribute, value):
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                              or not 16 <= value <= 255):
        raise PtxforgeError(f"CompileOptions.{attribute.name}: expected None or an int in "
                            f"16..255 (ptxas's --maxrregcount range), got {value!r}")


def _extra(value) -> tuple:
    if isinstance(value, str):
        value = value.split()
    out = tuple(value)
    for flag in out:
        if not isinstance(flag, str) or not flag.startswith("-"):
            raise PtxforgeError(f"CompileOptions.extra: expected ptxas flags such as "
                                f"'--warn-on-spills', got {flag!r}")
    return out


@attrs.frozen(slots=True)
class CompileOptions:
    """ptxas options, validated here and turned into flags here (never touches a GPU).

    ``max_registers`` is ``--maxrregcount`` (16..255, None: ptxas's default); ``opt_level``
    0..3; ``line_info`` keeps PTX line numbers in the cubin; ``extra`` are further ptxas flags
    (passed through ``-Xptxas`` under nvJitLink, like ``opt_level``; the driver backend
    refuses them).  Per-kernel
    ``.maxnreg``/``.maxntid``/``.reqntid``/``.minnctapersm`` directives live in the PTX.

    Example::

        >>> CompileOptions(max_registers=64).ptxas_args("sm_80")
        ['-arch=sm_80', '-v', '-O3', '--maxrregcount=64']
    """

    max_registers: Optional[int] = attrs.field(default=None, validator=_max_regs)
    opt_level: int = attrs.field(default=3, validator=_opt_level)
    line_info: bool = attrs.field(default=False, converter=bool)
    extra: tuple = attrs.field(default=(), converter=_extra)

    def _common(self) -> list:
        flags = [f"-O{self.opt_level}"]
        if self.max_registers is not None:
            flags.append(f"--maxrregcount={self.max_registers}")
        if self.line_info:
            flags.append("-lineinfo")
        return flags

    def ptxas_args(self, target: str) -> list:
        """Command-line flags for a ptxas executable (input and output files not included)."""
        return [f"-arch={normalize_target(target)}", "-v", *self._common(), *self.extra]

    def nvjitlink_args(self, target: str) -> list:
        """Options for nvJitLinkCreate."""
        # nvJitLink's own -O takes only 0 and 3 (ERROR_UNRECOGNIZED_OPTION for -O1/-O2);
        # ptxas's level goes through -Xptxas, which nvJitLink hands to its ptxas unchanged.
        args = [f"-arch={normalize_target(target)}", "-verbose", f"-Xptxas=-O{self.opt_level}"]
        if self.max_registers is not None:
            args.append(f"-maxrregcount={self.max_registers}")
        if self.line_info:
            args.append("-lineinfo")
        args.extend(f"-Xptxas={flag}" for flag in self.extra)
        return args

    def driver_jit_options(self) -> tuple:
        """(CUjit_option names, values) for cuModuleLoadDataEx, log buffers excluded."""
        if self.extra:
            raise PtxforgeError(f"CompileOptions.extra={self.extra!r}: the driver backend "
                                "takes no ptxas flags; use backend='nvjitlink' or 'ptxas'")
        names, values = ["CU_JIT_OPTIMIZATION_LEVEL"], [self.opt_level]
        if self.max_registers is not None:
            names.append("CU_JIT_MAX_REGISTERS")
            values.append(self.max_registers)
        if self.line_info:
            names.append("CU_JIT_GENERATE_LINE_INFO")
            values.append(1)
        return names, values


# --- what the PTX itself says about its kernels ------------------------------------------------

@attrs.frozen(slots=True)
class PtxEntry:
    """An ``.entry`` found in PTX text, with its performance directives and local arrays."""

    name: str
    line: int
    maxnreg: Optional[int] = None
    maxntid: Optional[tuple] = None
    reqntid: Optional[tuple] = None
    minnctapersm: Optional[int] = None
    local_array_bytes: int = 0


_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$%][\w$%]*)")
_LOCAL = re.compile(r"\.local\s+(?:\.align\s+\d+\s+)?\.([a-z]+)(\d+)\s+[\w$%]+((?:\s*\[\s*\d+\s*\])*)")


def _dims(text: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", text))


def ptx_entries(ptx: str) -> tuple:
    """The kernels of a PTX module in source order (comments are ignored)."""
    clean = re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"),
                                            ptx, flags=re.S))
    out = []
    for m in _ENTRY.finditer(clean):
        brace = clean.find("{", m.end())
        if brace < 0:
            continue
        header = clean[m.end():brace]
        header = header[header.rfind(")") + 1:] if ")" in header else header
        depth, end = 0, brace
        for end in range(brace, len(clean)):
            if clean[end] == "{":
                depth += 1
            elif clean[end] == "}":
                depth -= 1
                if depth == 0:
                    break
        body = clean[brace:end]
        local = 0
        for lm in _LOCAL.finditer(body):
            n = 1
            for d in _dims(lm.group(3)):
                n *= d
            local += max(int(lm.group(2)) // 8, 1) * n
        fields = {}
        for key in ("maxnreg", "maxntid", "reqntid", "minnctapersm"):
            dm = re.search(rf"\.{key}\s+([\d\s,]+)", header)
            if dm:
                vals = _dims(dm.group(1))
                fields[key] = vals[0] if key in ("maxnreg", "minnctapersm") else vals
        out.append(PtxEntry(m.group(1), clean.count("\n", 0, m.start()) + 1,
                            local_array_bytes=local, **fields))
    return tuple(out)


# --- results ----------------------------------------------------------------------------------

@attrs.frozen(slots=True)
class KernelStats:
    """What ptxas assigned to one kernel.

    ``stack_frame`` is the per-thread local-memory frame (spill slots and local arrays);
    ``local_array_bytes`` the part the PTX declares as ``.local`` arrays; ``spill_stores`` /
    ``spill_loads`` the bytes moved by spill instructions.  ``register_cap`` is the cap in
    force (``--maxrregcount`` or ``.maxnreg``, whichever is lower; None: none).
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
    cumulative_stack: Optional[int] = None
    body_registers: Optional[int] = None  # the log's 'Used N registers' (the body alone)

    @property
    def spills(self) -> bool:
        return bool(self.spill_stores or self.spill_loads)

    @property
    def spill_frame_bytes(self) -> int:
        """Frame bytes beyond the declared local arrays: an estimate of the spill area."""
        return max(self.stack_frame - self.local_array_bytes, 0)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in (
            "name", "target", "backend", "registers", "spill_stores", "spill_loads",
            "stack_frame", "local_array_bytes", "spill_frame_bytes", "shared", "constant_bank0",
            "barriers", "register_cap", "compile_time_ms", "max_threads_per_block")}


@attrs.frozen(slots=True)
class Compiled:
    """The result of :func:`compile_ptx`: per-kernel stats, cubin (if any) and the raw log."""

    target: str
    backend: str
    options: CompileOptions
    kernels: tuple
    log: str = attrs.field(repr=False)
    cubin: Optional[bytes] = attrs.field(default=None, repr=False)
    tool: str = ""
    wall_time_s: float = 0.0

    @property
    def ptxas_log(self) -> PtxasLog:
        return parse_ptxas_log(self.log)

    def __getitem__(self, name: str) -> KernelStats:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"no kernel {name!r}; compiled kernels: {[k.name for k in self.kernels]}")

    def __iter__(self):
        return iter(self.kernels)

    def __len__(self) -> int:
        return len(self.kernels)

    def cubin_info(self):
        """The cubin's own resource records (:mod:`ptxforge.cubin`); None without a cubin."""
        if self.cubin is None:
            return None
        from .cubin import read_cubin
        return read_cubin(self.cubin)


# --- backends ---------------------------------------------------------------------------------

_BACKENDS: dict = {}


def get_backend(name: Union[str, Backend]) -> Backend:
    """The backend called ``name`` ('nvjitlink', 'ptxas', 'driver'), or ``name`` itself."""
    if isinstance(name, Backend):
        return name
    if name not in BACKEND_NAMES:
        raise PtxforgeError(f"compile: unknown backend {name!r}; expected 'auto' or one of "
                            f"{', '.join(BACKEND_NAMES)}")
    if name not in _BACKENDS:
        _BACKENDS[name] = {"nvjitlink": NvJitLinkBackend, "ptxas": PtxasBackend,
                           "driver": DriverBackend}[name]()
    return _BACKENDS[name]


def backend_status() -> dict:
    """``{name: (available, description or reason)}`` for every backend."""
    return {name: get_backend(name).status() for name in BACKEND_NAMES}


def available_backends() -> tuple:
    """Names of the backends that can run on this machine."""
    return tuple(n for n, (ok, _) in backend_status().items() if ok)


def _choose(target: str) -> Backend:
    nvj = get_backend("nvjitlink")
    if nvj.supports(target):
        return nvj
    ptxas = get_backend("ptxas")
    ok, why = ptxas.status()
    if ok:
        return ptxas
    raise BackendUnavailableError(
        f"compile: no backend can compile for {target}: nvJitLink "
        f"({nvj.status()[1]}) refuses it and {why}")


def _quote_lines(ptx: str, log: str) -> str:
    """The PTX lines a log's 'line N' diagnostics point at, numbered."""
    lines = ptx.splitlines()
    by_line: dict = {}
    for d in parse_ptxas_log(log).diagnostics:
        if d.line is not None:
            by_line.setdefault(d.line, []).append(f"{d.severity}: {d.message}")
    out = []
    for n, msgs in by_line.items():
        text = lines[n - 1].strip() if 0 < n <= len(lines) else "<beyond the end of the PTX>"
        out.append(f"  line {n}: {text}\n      " + "\n      ".join(msgs))
    return "\n".join(out)


def _source(ptx_or_module, line_info: bool = False) -> str:
    """PTX text of a str, bytes or ir.Module (emitted with .file/.loc when ``line_info``)."""
    if isinstance(ptx_or_module, str):
        return ptx_or_module
    if isinstance(ptx_or_module, bytes):
        return ptx_or_module.decode()
    from . import ir
    if isinstance(ptx_or_module, ir.Module):
        from .emit import emit
        return emit(ptx_or_module, line_info=line_info)
    raise PtxforgeError(f"compile: expected PTX text or an ir.Module, got "
                        f"{type(ptx_or_module).__name__}")


def _stats(raw: RawResult, entries: tuple, options: CompileOptions) -> tuple:
    log = parse_ptxas_log(raw.log)
    cub = None
    if raw.cubin:
        from .cubin import read_cubin
        try:
            cub = {k.name: k for k in read_cubin(raw.cubin).kernels}
        except PtxforgeError:
            cub = None
    out = []
    for e in entries:
        try:
            f = log.function(e.name)
        except KeyError:
            f = None
        ck = cub.get(e.name) if cub else None
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
        caps = [c for c in (options.max_registers, e.maxnreg, f.register_cap if f else None)
                if c is not None]
        frame = attrs_.get("local_size_bytes",
                           f.stack_frame if f and f.stack_frame is not None
                           else (ck.frame_size if ck and ck.frame_size is not None else 0))
        shared = attrs_.get("shared_size_bytes",
                            f.shared if f and f.shared is not None else (ck.shared if ck else 0))
        barriers = f.barriers if f and f.barriers is not None else (
            (ck.barriers or 0) if ck is not None else None)
        max_threads = attrs_.get("max_threads_per_block")
        if max_threads is None and ck is not None and (ck.max_threads or ck.reqntid):
            max_threads = 1  # ptxas's own record in the cubin (EIATTR_MAX_THREADS / REQNTID)
            for d in (ck.reqntid or ck.max_threads):
                max_threads *= d
        if max_threads is None and (e.maxntid or e.reqntid):
            max_threads = 1
            for d in (e.reqntid or e.maxntid):
                max_threads *= d
        out.append(KernelStats(
            name=e.name, target=raw.target, backend=raw.backend, registers=int(regs),
            spill_stores=(f.spill_stores or 0) if f else 0,
            spill_loads=(f.spill_loads or 0) if f else 0,
            stack_frame=int(frame), local_array_bytes=e.local_array_bytes, shared=int(shared),
            constant_bank0=f.constant_bank0 if f else None, barriers=barriers,
            register_cap=min(caps) if caps else None,
            compile_time_ms=f.compile_time_ms if f else None,
            max_threads_per_block=max_threads,
            cumulative_stack=f.cumulative_stack if f else None,
            body_registers=f.registers if f else None))
    return tuple(out)


def compile_ptx(ptx_or_module, target: Union[str, int] = "sm_80", *,
                backend: Union[str, Backend] = "auto",
                options: Optional[CompileOptions] = None, **option_fields) -> Compiled:
    """Compile PTX text (or an ``ir.Module``) for ``target``; per-kernel stats.

    ``option_fields`` are a shortcut for :class:`CompileOptions` fields
    (``compile_ptx(ptx, "sm_80", max_registers=64)``).  Raises :class:`CompileError` with
    ptxas's log and the offending PTX lines quoted when ptxas rejects the PTX, and
    :class:`BackendUnavailableError` when no backend can serve the target.

    Example::

        >>> compile_ptx(ptx, "sm_70")["axpy"].registers    # doctest: +SKIP
        10
    """
    if options is None:
        options = CompileOptions(**option_fields)
    elif option_fields:
        options = attrs.evolve(options, **option_fields)
    ptx = _source(ptx_or_module, options.line_info)
    tgt = normalize_target(target)
    be = _choose(tgt) if backend == "auto" else get_backend(backend)
    entries = ptx_entries(ptx)
    try:
        if isinstance(be, DriverBackend):
            raw = be.compile(ptx, tgt, options, kernels=tuple(e.name for e in entries))
        else:
            raw = be.compile(ptx, tgt, options)
    except CompileError as exc:
        quoted = _quote_lines(ptx, exc.log)
        msg = str(exc).split("\n--- ")[0]
        if quoted:
            msg += "\noffending PTX:\n" + quoted
        msg += _version_hint(exc.log, tgt)
        err = CompileError(msg, log=exc.log, backend=exc.backend)
        err.diagnostics = parse_ptxas_log(exc.log).diagnostics
        raise err from None
    return Compiled(raw.target, raw.backend, options, _stats(raw, entries, options), raw.log,
                    raw.cubin, raw.tool, raw.wall_time_s)


def _version_hint(log: str, target: str) -> str:
    """Advice when ptxas is older than the PTX's ``.version`` (e.g. NVRTC 13 PTX, sm_70)."""
    m = re.search(r"Unsupported \.version (\d+\.\d+); current version is '(\d+\.\d+)'", log)
    if not m:
        return ""
    return (f"\nhint: this ptxas reads PTX ISA up to {m.group(2)}, the file says {m.group(1)}. "
            f"Regenerate the PTX for {target} with a matching toolkit (CUDA 12.x for sm_70), "
            "or, if the code uses nothing newer, lower its .version line and try again.")


def _one(job) -> Compiled:
    ptx, target, backend, options = job
    return compile_ptx(ptx, target, backend=backend, options=options)


def compile_many(jobs, *, max_workers: Optional[int] = None) -> list:
    """Compile independent ``(ptx, target, backend, options)`` jobs in parallel threads.

    Results come back in job order; the first failure is raised after all jobs finish.
    (ptxas executables run as subprocesses; nvJitLink runs in-process.)
    """
    jobs = list(jobs)
    workers = max_workers or min(len(jobs), os.cpu_count() or 1) or 1
    if workers == 1 or len(jobs) <= 1:
        return [_one(j) for j in jobs]
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_one, j) for j in jobs]
        concurrent.futures.wait(futures)
        return [f.result() for f in futures]
