"""Compile PTX with ptxas (through nvJitLink, a ptxas executable or the CUDA driver) and read
what it assigned: registers, spills, stack, shared and constant memory, barriers.

Example::

    >>> from ptxforge.toolchain.compile import compile_ptx, CompileOptions
    >>> c = compile_ptx(ptx_text, "sm_80", options=CompileOptions(max_registers=64))  # doctest: +SKIP
    >>> c["axpy"].registers                                                            # doctest: +SKIP
    10

Two compile modes give different figures, and every result names its ``mode``:

* ``"whole-program"`` (the default): what ``nvcc`` without ``-rdc``, ``ptxas`` alone, Triton
  and the driver's ``cuModuleLoadData`` JIT (the one :func:`ptxforge.load` uses) assign.
  ptxas sees the whole module, so helper routines (``__cuda_sm70_*`` warp-sync helpers, the
  division and square-root slow paths) are inlined or compiled with a private convention.
* ``"relocatable"`` (``relocatable=True``): ``ptxas -c``, ``nvcc -rdc=true`` and nvJitLink,
  which always compiles this way.  Calls to functions outside the kernel follow the ABI, which
  can lift the register count.

``backend="auto"`` runs the newest ptxas executable that accepts the target (the CUDA 13
ptxas of the ``nvidia-cuda-nvcc`` wheel, a dependency; the CUDA 12 one of
``nvidia-cuda-nvcc-cu12`` for sm_50 … sm_72), and falls back to nvJitLink, with a note that
its figures are relocatable, only when no ptxas executable is installed.  ``backend="driver"``
JIT-compiles for the GPU present (whole-program) and reads the function attributes the driver
reports.

``isolate=True`` runs an in-process backend (nvJitLink) in a worker child
(:mod:`ptxforge.toolchain.isolate`): a crash inside the native library then raises
:class:`~ptxforge.errors.CompilerCrashError` instead of ending the caller's process.  The
register-cap sweep always isolates.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
from typing import Optional, Union

import attrs

from ptxforge.arch.targets import TARGETS
from ptxforge.arch.targets import target as as_target
from ptxforge.errors import BackendUnavailableError, CompileError, CompilerCrashError, PtxforgeError
from ptxforge.ptx.directives import PtxEntry, PtxTarget, ptx_entries, ptx_target

from .backends import BACKEND_NAMES, Backend, DriverBackend, NvJitLinkBackend, PtxasBackend
from .kernel_stats import KernelStats, kernel_stats
from .ptxas_log import PtxasLog, extern_note, parse_ptxas_log

__all__ = [
    "CompileOptions",
    "CompileRequest",
    "Compiled",
    "KernelStats",
    "PtxEntry",
    "available_backends",
    "backend_status",
    "compile_many",
    "compile_ptx",
    "compiled_from_raw",
    "explain_compile_error",
    "get_backend",
    "prepare_options",
    "ptx_entries",
]

def _opt_level(_, attribute, value):
    if value not in (None, 0, 1, 2, 3) or isinstance(value, bool):
        raise PtxforgeError(f"CompileOptions.{attribute.name}: expected None or 0..3, got "
                            f"{value!r}")


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


def _entries(value) -> tuple:
    if isinstance(value, str):
        value = (value,)
    out = tuple(value)
    for name in out:
        if not isinstance(name, str) or not name or name.startswith("-"):
            raise PtxforgeError(f"CompileOptions.entries: expected kernel names, got {name!r}")
    return out


@attrs.frozen(slots=True, kw_only=True)
class CompileOptions:
    """ptxas options, validated here and turned into flags here (never touches a GPU).

    ``max_registers`` is ``--maxrregcount`` (16..255, None: ptxas's default); ``opt_level``
    0..3 (None: ptxas's default, -O3, or -O0 for debug PTX, the one level ptxas compiles
    ``.target sm_XX, debug`` at); ``line_info`` keeps PTX line numbers in the cubin; ``extra`` are further ptxas flags
    (passed through ``-Xptxas`` under nvJitLink, like ``opt_level``; the driver backend
    refuses them).  Per-kernel
    ``.maxnreg``/``.maxntid``/``.reqntid``/``.minnctapersm`` directives live in the PTX.
    ``relocatable`` compiles as ``ptxas -c`` (the default is whole-program, as nvcc builds);
    ``entries`` names the kernels to generate code for (ptxas ``-e``; empty: every one), so a
    large file compiles only what a report needs.

    Example::

        >>> CompileOptions(max_registers=64).ptxas_args("sm_80")
        ['-arch=sm_80', '-v', '-O3', '--maxrregcount=64']
        >>> CompileOptions(relocatable=True, entries=("k",)).ptxas_args("sm_90")
        ['-arch=sm_90', '-v', '-O3', '-c', '-e', 'k']
    """

    max_registers: Optional[int] = attrs.field(default=None, validator=_max_regs)
    opt_level: Optional[int] = attrs.field(default=None, validator=_opt_level)
    line_info: bool = attrs.field(default=False, converter=bool)
    extra: tuple = attrs.field(default=(), converter=_extra)
    relocatable: bool = attrs.field(default=False, converter=bool)
    entries: tuple = attrs.field(default=(), converter=_entries)

    @property
    def mode(self) -> str:
        """``"relocatable"`` (``ptxas -c``) or ``"whole-program"`` (the default)."""
        return "relocatable" if self.relocatable else "whole-program"

    @property
    def level(self) -> int:
        """The optimisation level passed to ptxas (3 when ``opt_level`` is None)."""
        return 3 if self.opt_level is None else self.opt_level

    def _common(self) -> list:
        flags = [f"-O{self.level}"]
        if self.max_registers is not None:
            flags.append(f"--maxrregcount={self.max_registers}")
        if self.line_info:
            flags.append("-lineinfo")
        return flags

    def ptxas_args(self, target: str) -> list:
        """Command-line flags for a ptxas executable (input and output files not included)."""
        flags = [f"-arch={as_target(target).name}", "-v", *self._common()]
        if self.relocatable:
            flags.append("-c")
        for name in self.entries:
            flags += ["-e", name]
        return flags + list(self.extra)

    def nvjitlink_args(self, target: str) -> list:
        """Options for nvJitLinkCreate."""
        # nvJitLink's own -O takes only 0 and 3 (ERROR_UNRECOGNIZED_OPTION for -O1/-O2);
        # ptxas's level goes through -Xptxas, which nvJitLink hands to its ptxas unchanged.
        args = [f"-arch={as_target(target).name}", "-verbose", f"-Xptxas=-O{self.level}"]
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
        if self.relocatable:
            raise PtxforgeError("CompileOptions.relocatable: the driver backend JIT-compiles "
                                "whole-program (cuModuleLoadData); use backend='ptxas' (ptxas -c) "
                                "or 'nvjitlink' for relocatable figures")
        names, values = ["CU_JIT_OPTIMIZATION_LEVEL"], [self.level]
        if self.max_registers is not None:
            names.append("CU_JIT_MAX_REGISTERS")
            values.append(self.max_registers)
        if self.line_info:
            names.append("CU_JIT_GENERATE_LINE_INFO")
            values.append(1)
        return names, values


def _backend(_, attribute, value) -> None:
    if not isinstance(value, Backend) and value not in ("auto", *BACKEND_NAMES):
        raise PtxforgeError(f"CompileRequest.backend: expected 'auto', one of "
                            f"{', '.join(BACKEND_NAMES)} or a Backend, got {value!r}")


def _options(_, attribute, value) -> None:
    if not isinstance(value, CompileOptions):
        raise PtxforgeError(f"CompileRequest.options: expected a CompileOptions, got "
                            f"{type(value).__name__} {value!r}")


def _ptxas_path(value) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise PtxforgeError(f"CompileRequest.ptxas: expected None or the path of a ptxas "
                            f"executable, got {value!r}")
    return os.fspath(value)


@attrs.frozen(slots=True, kw_only=True)
class CompileRequest:
    """How to compile: which compiler, which ptxas executable, which options, isolated or not.

    Validated once here and passed as one value through every report that compiles.
    ``backend`` is ``"auto"`` (the newest ptxas that accepts the target), ``"ptxas"``,
    ``"nvjitlink"``, ``"driver"`` or a :class:`~ptxforge.toolchain.backends.Backend`;
    ``ptxas`` pins a ptxas executable (it implies ``backend="ptxas"``); ``options`` are the
    ptxas :class:`CompileOptions` (``options.relocatable`` picks the mode); ``isolate``
    compiles an in-process backend in a worker child, so a crash of nvJitLink raises
    :class:`~ptxforge.errors.CompilerCrashError` instead of ending the caller's process.

    Example::

        >>> r = CompileRequest(backend="nvjitlink", options=CompileOptions(relocatable=True))
        >>> r.compiler, r.mode, r.isolate
        ('nvjitlink', 'relocatable', True)
        >>> CompileRequest(backend="nvcc")
        Traceback (most recent call last):
        ...
        ptxforge.errors.PtxforgeError: CompileRequest.backend: expected 'auto', one of ...
    """

    backend: Union[str, Backend] = attrs.field(default="auto", validator=_backend)
    ptxas: Optional[str] = attrs.field(default=None, converter=_ptxas_path)
    options: CompileOptions = attrs.field(factory=CompileOptions, validator=_options)
    isolate: bool = attrs.field(default=True, converter=bool)

    def __attrs_post_init__(self) -> None:
        if self.ptxas is not None and self.backend not in ("auto", "ptxas"):
            raise PtxforgeError(f"CompileRequest: ptxas={self.ptxas!r} names a ptxas "
                                f"executable; expected backend 'auto' or 'ptxas' with it, got "
                                f"{self.backend!r}")

    @property
    def compiler(self) -> Union[str, Backend]:
        """The backend :func:`compile_ptx` takes: a pinned ptxas when ``ptxas`` is set."""
        return PtxasBackend(self.ptxas) if self.ptxas is not None else self.backend

    @property
    def mode(self) -> str:
        """``"relocatable"`` or ``"whole-program"`` (``options.mode``)."""
        return self.options.mode

    def compile(self, ptx_or_module, target: Union[str, int],
                options: Optional[CompileOptions] = None) -> Compiled:
        """:func:`compile_ptx` with this request (``options`` replaces ``self.options``)."""
        return compile_ptx(ptx_or_module, target, backend=self.compiler,
                           options=self.options if options is None else options,
                           isolate=self.isolate)


# --- results ----------------------------------------------------------------------------------

@attrs.frozen(slots=True, kw_only=True)
class Compiled:
    """The result of :func:`compile_ptx`: per-kernel stats, cubin (if any) and the raw log."""

    target: str
    backend: str
    options: CompileOptions
    kernels: tuple
    log: str = attrs.field(repr=False)
    cubin: Optional[bytes] = attrs.field(default=None, repr=False)
    tool: str = ""                      # "nvJitLink 13.5", "ptxas 12.9 (/path/to/ptxas)"
    wall_time_s: float = 0.0
    tool_version: tuple = ()            # (13, 5)
    tool_path: Optional[str] = None     # the ptxas executable run (None for nvJitLink)
    note: Optional[str] = None          # e.g. "debug PTX: compiled at -O0"
    mode: str = "whole-program"         # or "relocatable" (ptxas -c, nvJitLink)

    @property
    def tool_version_text(self) -> Optional[str]:
        """``"13.5"``: the compiler's version as text (None when unknown)."""
        return ".".join(map(str, self.tool_version)) if self.tool_version else None

    @property
    def ptxas_log(self) -> PtxasLog:
        return parse_ptxas_log(self.log)

    def __getitem__(self, name: str) -> KernelStats:
        """The kernel ``name``: mangled, demangled, or an unambiguous prefix
        (:func:`~ptxforge.ptx.names.match_kernel`); a :class:`KernelNameError` (a KeyError)
        when none or several answer."""
        for k in self.kernels:
            if k.name == name:
                return k
        from ptxforge.errors import KernelNameError
        from ptxforge.ptx.names import lookup

        names = [k.name for k in self.kernels]
        found = lookup(names, name, "the compiled module", KernelNameError)
        if found not in names:
            raise KernelNameError(f"no kernel {name!r} in the compiled module (it has none)")
        return next(k for k in self.kernels if k.name == found)

    def __iter__(self):
        return iter(self.kernels)

    def __len__(self) -> int:
        return len(self.kernels)

    def cubin_info(self):
        """The cubin's own resource records (:mod:`ptxforge.toolchain.cubin`); None without a cubin."""
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


_NVJITLINK_NOTE = ("no ptxas executable is installed, so nvJitLink compiled the PTX: its figures "
                   "are relocatable (ptxas -c), not the whole-program ones nvcc and the driver "
                   "give; pip install nvidia-cuda-nvcc for those")


def _choose(target: str) -> tuple:
    """``(backend, note)`` for ``backend="auto"``: the newest ptxas executable that accepts
    ``target``, else nvJitLink (whose figures are relocatable, said in the note)."""
    from .backends import _env_ptxas

    _env_ptxas()        # a PTXFORGE_PTXAS that names no executable is an error, not a fallback
    ptxas = get_backend("ptxas")
    assert isinstance(ptxas, PtxasBackend)     # get_backend builds the 'ptxas' one as such
    pinned = ptxas.for_target(target)
    if pinned is not None:
        return pinned, None
    nvj = get_backend("nvjitlink")
    ok, why = ptxas.status()
    if not ok and nvj.supports(target):
        return nvj, _NVJITLINK_NOTE
    if ok:      # a ptxas exists but refuses the target: its error names the toolkit to install
        return ptxas, None
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
    """PTX text of a str, bytes or ir.Module (emitted with .file/.loc when ``line_info``); a
    UTF-8 byte order mark, which ptxas refuses as a non-ASCII character, is left out."""
    if isinstance(ptx_or_module, bytes):
        ptx_or_module = ptx_or_module.decode()
    if isinstance(ptx_or_module, str):
        return ptx_or_module.removeprefix("\ufeff")
    from ptxforge.ptx import ir
    if isinstance(ptx_or_module, ir.Module):
        from ptxforge.ptx.emit import emit
        return emit(ptx_or_module, line_info=line_info)
    raise PtxforgeError(f"compile: expected PTX text or an ir.Module, got "
                        f"{type(ptx_or_module).__name__}")


def prepare_options(options: CompileOptions, info: PtxTarget) -> tuple:
    """``(options, note)`` adjusted to what the PTX needs: debug PTX (``.target sm_XX, debug``,
    from nvcc/NVRTC ``-G``) compiles at -O0 only, so an unset ``opt_level`` becomes 0 there
    and an explicit higher one is refused with that advice."""
    if not info.debug:
        return options, None
    where = f" (line {info.line})" if info.line else ""
    if options.opt_level not in (None, 0):
        raise PtxforgeError(
            f"compile: the PTX is debug PTX ('.target {info.arch}, debug'{where}, from nvcc/"
            f"NVRTC -G); ptxas compiles debug PTX only at -O0 ('Optimized debugging not "
            f"supported'), got opt_level={options.opt_level}; pass opt_level=0 or leave it "
            "unset, or regenerate the PTX without -G (-lineinfo keeps the source lines)")
    return (attrs.evolve(options, opt_level=0),
            f"debug PTX ('.target {info.arch}, debug'{where}): compiled at -O0, the level "
            "ptxas accepts for it; registers and spills are those of the debug build")


def _compile_raw(be: Backend, ptx: str, tgt: str, entries: tuple, options: CompileOptions,
                 isolate: bool, pool=None):
    if isinstance(be, DriverBackend):   # needs the GPU context here, and reads attributes
        return be.compile(ptx, tgt, options, kernels=tuple(e.name for e in entries))
    if isolate:
        return be.compile_isolated(ptx, tgt, options, pool)
    return be.compile(ptx, tgt, options)


def compile_ptx(ptx_or_module, target: Union[str, int] = "sm_80", *,
                backend: Union[str, Backend] = "auto",
                options: Optional[CompileOptions] = None, isolate: bool = False,
                **option_fields) -> Compiled:
    """Compile PTX text (or an ``ir.Module``) for ``target``; per-kernel stats.

    ``option_fields`` are a shortcut for :class:`CompileOptions` fields
    (``compile_ptx(ptx, "sm_80", max_registers=64)``).  Raises :class:`CompileError` with
    ptxas's log, the offending PTX lines quoted and a hint where one applies (a ``.target``
    newer than ``target``, a ``.version`` newer than the compiler reads) when ptxas rejects
    the PTX, and :class:`BackendUnavailableError` when no backend can serve the target.
    ``isolate=True`` compiles in a worker child (:mod:`ptxforge.toolchain.isolate`; nvJitLink and other
    in-process backends, not the driver's JIT): a crash of nvJitLink raises
    :class:`~ptxforge.errors.CompilerCrashError` (a CompileError) instead of killing this
    process; the first one starts the worker (about 0.2 s), later ones reuse it (a few ms on
    top of the compile).

    Example::

        >>> compile_ptx(ptx, "sm_70")["axpy"].registers    # doctest: +SKIP
        10
    """
    if options is None:
        options = CompileOptions(**option_fields)
    elif option_fields:
        options = attrs.evolve(options, **option_fields)
    ptx = _source(ptx_or_module, options.line_info)
    tgt = as_target(target).name
    info = ptx_target(ptx)
    options, note = prepare_options(options, info)
    be, choice_note = _choose(tgt) if backend == "auto" else (get_backend(backend), None)
    entries = ptx_entries(ptx)
    if options.entries:
        _check_entries(options.entries, entries)
        entries = tuple(e for e in entries if e.name in options.entries)
    try:
        raw = _compile_raw(be, ptx, tgt, entries, options, isolate)
    except CompileError as exc:
        extern = _unresolved_extern(exc, be, options)
        if extern is None:
            raise explain_compile_error(exc, ptx, tgt, info) from None
        options = attrs.evolve(options, relocatable=True)
        try:
            raw = _compile_raw(be, ptx, tgt, entries, options, isolate)
        except CompileError as again:
            raise explain_compile_error(again, ptx, tgt, info) from None
        choice_note = "; ".join(n for n in (choice_note, extern) if n)
    note = "; ".join(n for n in (note, choice_note) if n) or None
    return compiled_from_raw(raw, entries, options, note)


def _unresolved_extern(exc: CompileError, be: Backend, options: CompileOptions) -> Optional[str]:
    """:func:`~ptxforge.toolchain.ptxas_log.extern_note` for a failed whole-program ptxas compile."""
    if options.relocatable or not isinstance(be, PtxasBackend):
        return None
    return extern_note(exc.log or "")


def _check_entries(wanted: tuple, entries: tuple) -> None:
    names = [e.name for e in entries]
    missing = [n for n in wanted if n not in names]
    if missing:
        raise PtxforgeError(f"compile: entries={missing!r} names no kernel of the PTX; it has: "
                            f"{', '.join(names) or 'none'}")


def compiled_from_raw(raw, entries: tuple, options: CompileOptions,
                      note: Optional[str] = None) -> Compiled:
    """A :class:`Compiled` from a backend's RawResult (stats per entry of ``entries``)."""
    notes = "; ".join(n for n in (note, raw.note) if n) or None
    return Compiled(target=raw.target, backend=raw.backend, options=options,
                    kernels=kernel_stats(raw, entries, options.max_registers), log=raw.log,
                    cubin=raw.cubin, tool=raw.tool, wall_time_s=raw.wall_time_s,
                    tool_version=raw.tool_version, tool_path=raw.tool_path, note=notes,
                    mode=raw.mode)


def explain_compile_error(exc: CompileError, ptx: str, target: str,
                          info: Optional[PtxTarget] = None) -> CompileError:
    """``exc`` with the PTX lines its log points at quoted and the hints that apply."""
    info = info or ptx_target(ptx)
    quoted = _quote_lines(ptx, exc.log)
    msg = str(exc).split("\n--- ")[0]
    if quoted:
        msg += "\noffending PTX:\n" + quoted
    msg += _target_hint(exc.log, info, target)
    msg += _version_hint(exc.log, target, exc.backend)
    err: CompileError
    if isinstance(exc, CompilerCrashError):
        msg += _crash_hint(exc, target)
        err = CompilerCrashError(msg, exc.crash, backend=exc.backend)
    else:
        err = CompileError(msg, log=exc.log, backend=exc.backend)
    err.diagnostics = parse_ptxas_log(exc.log).diagnostics
    return err


def _target_hint(log: str, info: PtxTarget, target: str) -> str:
    """Advice when the PTX's ``.target`` is newer than the architecture compiled for."""
    if "SM version specified by .target is higher" not in log:
        return ""
    where = f" (line {info.line})" if info.line else ""
    if info.arch is None:
        return (f"\nhint: the PTX's .target is newer than {target}, the architecture it was "
                "compiled for: compile for the PTX's .target (target=... / --arch)")
    return (f"\nhint: the PTX says '.target {info.arch}'{where}, newer than {target}, the "
            f"architecture it was compiled for: pass target='{info.arch}' "
            f"(ptxforge ... --arch {info.arch}), or regenerate the PTX for {target}")


def _version_hint(log: str, target: str, backend: str = "") -> str:
    """Advice when the compiler is older than the PTX's ``.version`` (naming only what
    applies to ``target``)."""
    m = re.search(r"Unsupported \.version (\d+\.\d+); current version is '(\d+\.\d+)'", log)
    if not m:
        return ""
    tool = {"ptxas": "this ptxas", "nvjitlink": "this nvJitLink"}.get(backend, "this ptxas")
    text = (f"\nhint: {tool} reads PTX ISA up to {m.group(2)}, the file says {m.group(1)}. ")
    known = TARGETS.get(target)
    if known is not None and 13 not in known.toolkits:
        text += (f"Only a CUDA 12 ptxas still targets {target} (CUDA 12.9 reads PTX ISA up to "
                 f"8.8; pip install nvidia-cuda-nvcc-cu12): regenerate the PTX with CUDA 12.x")
    else:
        text += f"Regenerate the PTX for {target} with a toolkit this compiler matches"
        if backend == "ptxas":
            nvj = get_backend("nvjitlink")
            if nvj.supports(target):
                text += f", or compile it with {nvj.status()[1]} (backend='nvjitlink')"
    return text + (", or, if the code uses nothing newer, lower its .version line to "
                   f"{m.group(2)} and try again.")


def _crash_hint(exc: CompilerCrashError, target: str) -> str:
    """Advice after a crash of an in-process compiler: the ptxas executable, if it serves."""
    if exc.backend == "ptxas":
        return ""
    alt = PtxasBackend().for_target(target)
    if alt is None:
        return (f"\nhint: no ptxas executable here accepts {target}; another nvJitLink "
                "release, or a different --maxrregcount, may compile it")
    return (f"\nhint: {alt.path} (a ptxas executable) accepts {target}: compile with "
            f"backend=PtxasBackend({alt.path!r}) or backend='ptxas'")


def _one(job) -> Compiled:
    ptx, target, backend, options = job[:4]
    isolate = job[4] if len(job) > 4 else False
    return compile_ptx(ptx, target, backend=backend, options=options, isolate=isolate)


def compile_many(jobs, *, max_workers: Optional[int] = None) -> list:
    """Compile independent ``(ptx, target, backend, options[, isolate])`` jobs in parallel.

    Results come back in job order; the first failure is raised after all jobs finish.
    nvJitLink holds the GIL, so threads overlap only ptxas executables and isolated
    compiles (each of those runs in a worker child; the sweep runs its caps that way).
    """
    jobs = list(jobs)
    workers = max_workers or min(len(jobs), os.cpu_count() or 1) or 1
    if workers == 1 or len(jobs) <= 1:
        return [_one(j) for j in jobs]
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_one, j) for j in jobs]
        concurrent.futures.wait(futures)
        return [f.result() for f in futures]
