"""The three compile backends: nvJitLink, the ptxas executable, the CUDA driver's JIT.

Each backend turns PTX text into ``RawResult`` (cubin bytes when it has them, ptxas's info
log, and for the driver the function attributes it read).  None of them is imported at
``import ptxforge`` time: cuda.bindings modules load on first use, so a machine without a
driver or GPU only loses the backends that need them.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

import attrs

from ptxforge.arch.targets import TARGETS
from ptxforge.arch.targets import target as as_target
from ptxforge.errors import BackendUnavailableError, CompileError, DeviceError

from . import result_cache
from ._worker import nvjitlink_link
from .ptxas_run import announce_cubin, announce_started, run_to_files
from .tool_facts import remembered

__all__ = [
    "BACKEND_NAMES",
    "Backend",
    "DriverBackend",
    "NvJitLinkBackend",
    "PtxasBackend",
    "RawResult",
    "find_ptxas",
    "ptxas_version",
]

BACKEND_NAMES = ("nvjitlink", "ptxas", "driver")
_PIP_HINT = "pip install nvidia-cuda-nvcc-cu12"
_PIP_HINT_13 = "pip install nvidia-cuda-nvcc"


@attrs.frozen(slots=True, kw_only=True)
class RawResult:
    """What a backend produced: cubin (or None), the info log, per-kernel driver attributes."""

    backend: str
    target: str
    cubin: Optional[bytes]
    log: str
    wall_time_s: float
    attributes: dict = attrs.field(factory=dict, eq=False)   # kernel -> {attr: value}
    tool: str = ""                                            # e.g. "nvJitLink 13.5"
    tool_version: tuple = ()                                  # e.g. (13, 5)
    tool_path: Optional[str] = None                           # the ptxas executable run
    note: Optional[str] = None                                # e.g. how the PTX was adjusted
    mode: str = "whole-program"                               # or "relocatable"


class Backend:
    """Base class: ``status()`` says whether it can run here and why not.

    ``in_process`` backends run the compiler inside this process (a crash there ends it);
    :meth:`compile_isolated` runs them in a child process instead (:mod:`ptxforge.toolchain.isolate`).
    """

    name = "?"
    label = "?"            # how messages name it ("nvJitLink", "the ptxas executable")
    in_process = True

    def status(self) -> tuple:
        """(available, description-or-reason)."""
        raise NotImplementedError

    def supports(self, target: str) -> bool:
        return self.status()[0]

    def compile(self, ptx: str, target: str, options) -> RawResult:
        raise NotImplementedError

    def isolated_job(self, ptx: str, target: str, options) -> tuple:
        """The job a worker child runs for :meth:`compile` (see :mod:`ptxforge.toolchain.isolate`)."""
        return ("call", ("ptxforge.toolchain.backends", "_compile_in_child", (self, ptx, target, options)))

    def finish(self, outcome, target: str, options) -> RawResult:
        """The RawResult of a worker's outcome; raises what the child raised, or
        :class:`~ptxforge.errors.CompilerCrashError` when the child died."""
        from ptxforge.errors import CompilerCrashError

        from .isolate import Crash, error_from_child

        if isinstance(outcome, Crash):
            cap = getattr(options, "max_registers", None)
            at = f" at cap {cap}" if cap is not None else ""
            raise CompilerCrashError(
                f"{self.label} crashed ({outcome.describe()}){at} compiling for {target}",
                outcome, backend=self.name)
        kind, value = outcome
        if kind == "raise":
            raise error_from_child(value)
        return value

    def compile_isolated(self, ptx: str, target: str, options, pool=None) -> RawResult:
        """:meth:`compile` in a worker child (in this process for out-of-process backends)."""
        if not self.in_process:
            return self.compile(ptx, target, options)
        from .isolate import shared_pool

        job = self.isolated_job(ptx, target, options)
        return self.finish((pool or shared_pool()).run(job), target, options)


def _compile_in_child(backend: "Backend", ptx: str, target: str, options) -> RawResult:
    """Entry point of a ``call`` job: the backend's in-process compile."""
    return backend.compile(ptx, target, options)


def _compile_error(backend: str, target: str, log: str, what: str) -> CompileError:
    """A CompileError; the caller (compile.py) quotes the PTX lines the log points at."""
    return CompileError(f"{backend} could not compile the PTX for {target}: {what}",
                        log=log, backend=backend)


# --- nvJitLink --------------------------------------------------------------------------------

class NvJitLinkBackend(Backend):
    """ptxas inside libnvJitLink (pip nvidia-nvjitlink): no GPU, no driver needed."""

    name = "nvjitlink"
    label = "nvJitLink"

    @staticmethod
    def _module():
        try:
            from cuda.bindings import nvjitlink
        except Exception as exc:  # pragma: no cover - depends on the install
            raise BackendUnavailableError(
                f"nvjitlink backend: cuda.bindings.nvjitlink is not importable ({exc}); "
                "pip install cuda-bindings nvidia-nvjitlink") from exc
        return nvjitlink

    def version(self) -> tuple:
        """(major, minor) of the installed nvJitLink."""
        return tuple(self._module().version())

    def status(self) -> tuple:
        try:
            major, minor = self.version()
        except Exception as exc:
            return False, str(exc)
        return True, f"nvJitLink {major}.{minor}"

    @functools.lru_cache(maxsize=64)
    def supports(self, target: str) -> bool:
        try:
            nvj = self._module()
            handle = nvj.create(1, [f"-arch={target}"])
        except Exception:
            return False
        nvj.destroy(handle)
        return True

    def compile(self, ptx: str, target: str, options) -> RawResult:
        self._module()
        args = options.nvjitlink_args(target)
        return self._result(nvjitlink_link(args, ptx.encode()), target, args)

    def isolated_job(self, ptx: str, target: str, options) -> tuple:
        return ("nvjitlink", (options.nvjitlink_args(target), ptx.encode()))

    def finish(self, outcome, target: str, options) -> RawResult:
        if isinstance(outcome, tuple) and outcome[0] == "ok":
            return self._result(outcome[1], target, options.nvjitlink_args(target))
        return super().finish(outcome, target, options)

    def _result(self, res: dict, target: str, args: list) -> RawResult:
        version = ".".join(map(str, res["version"]))
        if res["stage"] == "create":
            if "ARCH" in res["error"]:
                raise BackendUnavailableError(
                    f"nvjitlink backend: the installed nvJitLink {version} refuses target "
                    f"{target} ({res['error']}); use backend='ptxas' with a CUDA 12 ptxas "
                    f"({_PIP_HINT})")
            raise CompileError(f"nvJitLink rejected the options {args}: {res['error']}",
                               backend=self.name)
        if res["error"] is not None:
            raise _compile_error(self.name, target,
                                 (res["error_log"] + "\n" + res["info"]).strip(), res["error"])
        return RawResult(backend=self.name, target=target, cubin=res["cubin"], log=res["info"],
                         wall_time_s=res["wall"], tool=f"nvJitLink {version}",
                         tool_version=tuple(res["version"]), mode="relocatable")


# --- ptxas executable -------------------------------------------------------------------------

def _pip_ptxas() -> list:
    """ptxas binaries shipped inside pip packages (nvidia-cuda-nvcc, -cu12, -cu11)."""
    found = []
    try:
        import nvidia  # namespace package
        roots = list(getattr(nvidia, "__path__", []))
    except Exception:
        roots = []
    for root in roots:
        for rel in ("cuda_nvcc/bin/ptxas", "cu13/bin/ptxas", "cu12/bin/ptxas"):
            p = Path(root) / rel
            if p.is_file():
                found.append(str(p))
    return found


def _env_ptxas() -> Optional[str]:
    """``$PTXFORGE_PTXAS`` checked: None when unset; an error when it names no executable."""
    env = os.environ.get("PTXFORGE_PTXAS")
    if not env:
        return None
    if not os.path.isfile(env):
        what = "is a directory" if os.path.isdir(env) else "does not exist"
        raise BackendUnavailableError(
            f"PTXFORGE_PTXAS={env!r}: the path {what}; expected the path of a ptxas "
            "executable (or unset PTXFORGE_PTXAS to search PATH, CUDA_HOME and pip packages)")
    if not os.access(env, os.X_OK):
        raise BackendUnavailableError(
            f"PTXFORGE_PTXAS={env!r}: the file is not executable; expected the path of a "
            "ptxas executable (chmod +x it, or unset PTXFORGE_PTXAS)")
    return env


@functools.lru_cache(maxsize=8)
def _searched(path: Optional[str], cuda_home: Optional[str], cuda_path: Optional[str]) -> tuple:
    """The ptxas paths PATH, $CUDA_HOME, $CUDA_PATH and the pip packages name, searched once
    per value of those variables (a folder of files compiles each with the same ptxas; each
    call still checks that the files are there)."""
    cands = []
    which = shutil.which("ptxas", path=path)
    if which:
        cands.append(which)
    for home in (cuda_home, cuda_path):
        if home:
            cands.append(str(Path(home) / "bin" / "ptxas"))
    return tuple(cands + _pip_ptxas())


def find_ptxas() -> list:
    """Every ptxas found: $PTXFORGE_PTXAS, PATH, $CUDA_HOME/$CUDA_PATH, pip packages (in order).

    Raises :class:`BackendUnavailableError` when ``$PTXFORGE_PTXAS`` is set but names no
    executable file (a typo there must not silently pick another ptxas).
    """
    cands = []
    env = _env_ptxas()
    if env:
        cands.append(env)
    cands.extend(_searched(os.environ.get("PATH"), os.environ.get("CUDA_HOME"),
                           os.environ.get("CUDA_PATH")))
    out, seen = [], set()
    for c in cands:
        if c not in seen and os.path.isfile(c) and os.access(c, os.X_OK):
            seen.add(c)
            out.append(c)
    return out


@functools.lru_cache(maxsize=32)
def ptxas_version(path: str) -> tuple:
    """(major, minor) of a ptxas executable, from ``--version`` (remembered per file:
    :mod:`.tool_facts`); (0, 0) if unreadable."""
    return tuple(remembered(path, "ptxas --version", lambda: list(_ask_version(path))))


def _ask_version(path: str) -> tuple:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except Exception:
        return (0, 0)
    m = re.search(r"release (\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


_NOT_A_TARGET = re.compile(r"Value '[^']+' is not defined for option 'gpu-name'")


@functools.lru_cache(maxsize=64)
def _accepts(exe: str, target: str) -> bool:
    """Whether the ptxas executable ``exe`` knows ``target`` (``-arch=T --version``,
    remembered per file: :mod:`.tool_facts`)."""
    return bool(remembered(exe, f"ptxas -arch={target}", lambda: _ask_accepts(exe, target)))


def _ask_accepts(exe: str, target: str) -> bool:
    try:
        proc = subprocess.run([exe, f"-arch={target}", "--version"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and not _NOT_A_TARGET.search(proc.stdout + proc.stderr)


def _describe(exe: str) -> str:
    return f"ptxas {'.'.join(map(str, ptxas_version(exe)))} ({exe})"


class PtxasBackend(Backend):
    """A ptxas executable; ``path`` pins one, else each found ptxas is tried newest first
    (``$PTXFORGE_PTXAS``, when set, is the only one tried)."""

    name = "ptxas"
    label = "the ptxas executable"
    in_process = False

    def __init__(self, path: Optional[str] = None) -> None:
        self.path = path

    def candidates(self) -> list:
        if self.path:
            return [self.path]
        env = _env_ptxas()
        if env:
            return [env]
        return sorted(find_ptxas(), key=lambda p: ptxas_version(p), reverse=True)

    def status(self) -> tuple:
        try:
            cands = self.candidates()
        except BackendUnavailableError as exc:
            return False, str(exc)
        if not cands:
            return False, ("no ptxas executable on PATH, under CUDA_HOME/CUDA_PATH or in a pip "
                           f"package; {_PIP_HINT_13} adds one ({_PIP_HINT} adds the CUDA 12 "
                           "ptxas, which also targets sm_50 … sm_72)")
        return True, "; ".join(f"{p} (CUDA {'.'.join(map(str, ptxas_version(p)))})" for p in cands)

    def for_target(self, target: str) -> Optional["PtxasBackend"]:
        """A backend pinned to the newest ptxas that accepts ``target`` (None: none does)."""
        try:
            cands = self.candidates()
        except BackendUnavailableError:
            return None
        for exe in cands:
            if _accepts(exe, target):
                return PtxasBackend(exe)
        return None

    def compile(self, ptx: str, target: str, options) -> RawResult:
        cands = self.candidates()
        if not cands:
            raise BackendUnavailableError("ptxas backend: " + self.status()[1])
        refused = []
        with tempfile.TemporaryDirectory(prefix="ptxforge-") as tmp:
            src = os.path.join(tmp, "kernel.ptx")
            out = os.path.join(tmp, "kernel.cubin")
            with open(src, "w") as fh:
                fh.write(ptx)
            for exe in cands:
                if not os.path.isfile(exe):
                    raise BackendUnavailableError(
                        f"ptxas backend: the pinned ptxas {exe!r} does not exist")
                args = options.ptxas_args(target)
                key = result_cache.ptxas_key(exe, args, ptx) if result_cache.enabled() else None
                kept = result_cache.load_ptxas(key)
                if kept is not None:    # this PTX, tool and arguments ran before
                    return _kept_run(self.name, target, exe, options, out, kept)
                t0 = time.perf_counter()
                returncode, text = run_to_files([exe, *args, src, "-o", out], tmp)
                wall = time.perf_counter() - t0
                log = text.replace(src, "kernel.ptx")
                if returncode != 0 and _NOT_A_TARGET.search(log):
                    refused.append(_describe(exe))
                    continue
                if returncode != 0:
                    what = f"{_describe(exe)} exited with {returncode}"
                    if returncode < 0:
                        what = f"{_describe(exe)} crashed (signal {-returncode})"
                    raise _compile_error(self.name, target, log, what)
                if not os.path.isfile(out):
                    raise BackendUnavailableError(
                        f"ptxas backend: {exe} exited 0 but wrote no cubin; expected a ptxas "
                        "executable (is it ptxas?)")
                announce_cubin(out)
                with open(out, "rb") as fh:
                    cubin = fh.read()
                result_cache.store_ptxas(key, cubin, log, wall)
                return RawResult(backend=self.name, target=target, cubin=cubin, log=log,
                                 wall_time_s=wall, tool=_describe(exe),
                                 tool_version=ptxas_version(exe), tool_path=exe, mode=options.mode)
        raise BackendUnavailableError(
            f"ptxas backend: no installed ptxas accepts target {target}; refused by: "
            f"{', '.join(refused)}. {_toolkit_hint(target)}")


def _kept_run(backend: str, target: str, exe: str, options, out: str, kept: tuple) -> RawResult:
    """The RawResult of a ptxas run the result cache kept (:mod:`.result_cache`): its cubin
    written at ``out`` for the hooks of :func:`~.ptxas_run.when_cubin_written`, as a run
    would."""
    cubin, log, wall = kept
    with open(out, "wb") as fh:
        fh.write(cubin)
    announce_started()
    announce_cubin(out)
    return RawResult(backend=backend, target=target, cubin=cubin, log=log, wall_time_s=wall,
                     tool=_describe(exe), tool_version=ptxas_version(exe), tool_path=exe,
                     mode=options.mode)


def _toolkit_hint(target: str) -> str:
    """Which CUDA toolkits' ptxas compile ``target`` (from the target registry), and how to get one."""
    known = TARGETS.get(target)
    if known is None:
        return f"{target} is not a target ptxforge knows"
    if known.toolkits == (12,):
        return f"Only a CUDA 12 ptxas targets {target} (CUDA 13 dropped it): {_PIP_HINT} adds one"
    if known.toolkits == (13,):
        return (f"Only a CUDA 13 ptxas targets {target}: pip install nvidia-cuda-nvcc (13.x) "
                "adds one, or use nvJitLink 13 (backend='nvjitlink')")
    return f"CUDA {' and '.join(map(str, known.toolkits))} ptxas target {target}"


# --- CUDA driver ------------------------------------------------------------------------------

_DRIVER_ATTRS = {
    "num_regs": "CU_FUNC_ATTRIBUTE_NUM_REGS",
    "local_size_bytes": "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES",
    "shared_size_bytes": "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES",
    "const_size_bytes": "CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES",
    "max_threads_per_block": "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
}


def _check(driver, result, what: str):
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise DeviceError(f"driver backend: {what} failed with {getattr(err, 'name', err)}")
    return rest[0] if len(rest) == 1 else tuple(rest)


class DriverBackend(Backend):
    """JIT through the CUDA driver (cuModuleLoadDataEx) for the GPU present (device 0)."""

    name = "driver"
    label = "the CUDA driver's JIT"

    def __init__(self, device: int = 0) -> None:
        self.device = device

    @staticmethod
    def _driver():
        try:
            from cuda.bindings import driver
        except Exception as exc:
            raise BackendUnavailableError(
                f"driver backend: cuda.bindings.driver is not importable ({exc})") from exc
        return driver

    def _init(self):
        driver = self._driver()
        try:
            (err,) = driver.cuInit(0)
        except Exception as exc:
            raise BackendUnavailableError(f"driver backend: libcuda not loadable ({exc})") from exc
        if err != driver.CUresult.CUDA_SUCCESS:
            raise BackendUnavailableError(
                f"driver backend: cuInit failed ({getattr(err, 'name', err)}): no NVIDIA GPU or "
                "driver on this machine")
        count = _check(driver, driver.cuDeviceGetCount(), "cuDeviceGetCount")
        if count <= self.device:
            raise BackendUnavailableError(
                f"driver backend: device {self.device} requested, {count} present")
        dev = _check(driver, driver.cuDeviceGet(self.device), "cuDeviceGet")
        attr = driver.CUdevice_attribute
        major = _check(driver, driver.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute")
        minor = _check(driver, driver.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute")
        return driver, dev, f"sm_{major}{minor}"

    def device_target(self) -> str:
        """``sm_XY`` of the GPU the driver would JIT for."""
        return self._init()[2]

    def status(self) -> tuple:
        try:
            driver, dev, sm = self._init()
            name = _check(driver, driver.cuDeviceGetName(64, dev), "cuDeviceGetName")
        except Exception as exc:
            return False, str(exc)
        name = bytes(name).split(b"\0")[0].decode(errors="replace")
        return True, f"device {self.device}: {name} ({sm})"

    def supports(self, target: str) -> bool:
        try:
            return self.device_target() == as_target(target).base
        except Exception:
            return False

    def compile(self, ptx: str, target: str, options, kernels=()) -> RawResult:
        driver, dev, sm = self._init()
        if target is not None and as_target(target).base != sm:
            raise BackendUnavailableError(
                f"driver backend: the driver JIT-compiles for the GPU present ({sm}), "
                f"not for {target}; use backend='nvjitlink' for other targets")
        names, values = options.driver_jit_options()
        opt = driver.CUjit_option
        size = 1 << 16
        info_buf, err_buf = bytearray(size), bytearray(size)
        keys = [opt.CU_JIT_INFO_LOG_BUFFER, opt.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                opt.CU_JIT_ERROR_LOG_BUFFER, opt.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                opt.CU_JIT_LOG_VERBOSE] + [getattr(opt, n) for n in names]
        vals = [info_buf, size, err_buf, size, 1] + list(values)
        ctx = _check(driver, driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        _check(driver, driver.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
        attributes: dict = {}
        try:
            t0 = time.perf_counter()
            err, module = driver.cuModuleLoadDataEx(ptx.encode() + b"\0", len(keys), keys, vals)
            wall = time.perf_counter() - t0
            info = bytes(info_buf).split(b"\0")[0].decode(errors="replace")
            if err != driver.CUresult.CUDA_SUCCESS:
                log = bytes(err_buf).split(b"\0")[0].decode(errors="replace")
                raise _compile_error(self.name, sm, (log + "\n" + info).strip(),
                                     f"cuModuleLoadDataEx returned {getattr(err, 'name', err)}")
            try:
                fattr = driver.CUfunction_attribute
                for kname in kernels:
                    fn = _check(driver, driver.cuModuleGetFunction(module, kname.encode()),
                                f"cuModuleGetFunction({kname})")
                    attributes[kname] = {
                        key: _check(driver, driver.cuFuncGetAttribute(getattr(fattr, cname), fn),
                                    f"cuFuncGetAttribute({cname})")
                        for key, cname in _DRIVER_ATTRS.items()}
            finally:
                driver.cuModuleUnload(module)
        finally:
            driver.cuCtxPopCurrent()
            driver.cuDevicePrimaryCtxRelease(dev)
        return RawResult(backend=self.name, target=sm, cubin=None, log=info, wall_time_s=wall,
                         attributes=attributes, tool=self.status()[1])

    def max_active_blocks(self, ptx: str, kernel: str, block_size: int,
                          dynamic_shared: int = 0) -> int:
        """cuOccupancyMaxActiveBlocksPerMultiprocessor for ``kernel`` loaded from ``ptx``."""
        driver, dev, _ = self._init()
        ctx = _check(driver, driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        _check(driver, driver.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
        try:
            module = _check(driver, driver.cuModuleLoadData(ptx.encode() + b"\0"), "cuModuleLoadData")
            try:
                fn = _check(driver, driver.cuModuleGetFunction(module, kernel.encode()),
                            f"cuModuleGetFunction({kernel})")
                return _check(driver, driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                    fn, block_size, dynamic_shared), "cuOccupancyMaxActiveBlocksPerMultiprocessor")
            finally:
                driver.cuModuleUnload(module)
        finally:
            driver.cuCtxPopCurrent()
            driver.cuDevicePrimaryCtxRelease(dev)
