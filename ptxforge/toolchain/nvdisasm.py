"""Finding and running nvdisasm: on a cubin's bytes (:func:`run`), or started on a cubin file
the moment ptxas has written it (:func:`start`), so it runs while the caller goes on.

Light on purpose (no import beyond the standard library, :mod:`ptxforge.errors` and
:mod:`.result_cache`): the compile thread of ``analyze`` imports it right after ptxas exits,
and every millisecond there delays nvdisasm, the longest step of a small file's default path.
A listing the result cache kept for the same cubin, executable and flags is read from it
instead of running nvdisasm again.

Example::

    >>> started = start(find_nvdisasm(), "module.cubin", LIFE_RANGES)   # doctest: +SKIP
    >>> "// +" in started.output()     # the life-range table          # doctest: +SKIP
    True
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterable, Optional, Sequence, Union

from ptxforge.errors import BackendUnavailableError, PtxforgeError

from . import result_cache

__all__ = ["LIFE_RANGES", "NVDISASM_ENV", "Kept", "Started", "find_nvdisasm", "nvdisasm_version",
           "run", "start"]

#: Environment variable naming the nvdisasm executable, or a folder to search (alone).
NVDISASM_ENV = "PTXFORGE_NVDISASM"
#: The flags of the life-range listing every SASS reading starts from.
LIFE_RANGES = ("-c", "--life-range-mode", "narrow")
_INSTALL = ("install it with `pip install nvidia-cuda-nvdisasm` (or `pip install "
            "'ptxforge[sass]'`), or point $PTXFORGE_NVDISASM at an nvdisasm executable")


def _in_dir(d: str) -> list:
    return [str(Path(d) / "nvdisasm"), str(Path(d) / "bin" / "nvdisasm")]


def _wheel_candidates() -> list:
    """nvdisasm inside NVIDIA wheels: ``nvidia/cu13/bin`` (CUDA 13), ``nvidia/cuda_nvdisasm/bin``
    and ``nvidia/cuda_nvcc/bin`` (CUDA 12 layouts), any other ``nvidia/*/bin``."""
    try:
        import nvidia  # namespace package of the NVIDIA wheels
        roots = sorted(getattr(nvidia, "__path__", []))
    except ImportError:
        roots = []
    order = {"cu13": 0, "cuda_nvdisasm": 1, "cuda_nvcc": 2}
    out = []
    for root in roots:
        found = glob.glob(os.path.join(root, "*", "bin", "nvdisasm"))
        out += sorted(found, key=lambda p: (order.get(Path(p).parent.parent.name, 9), p))
    return out


def _pathfinder_candidate() -> list:
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
        found = find_nvidia_binary_utility("nvdisasm")
    except Exception:  # not installed, too old, or it failed: the other places still count
        return []
    return [found] if found else []


def _default_candidates():
    """The wheels, cuda.pathfinder, PATH, $CUDA_HOME and $CUDA_PATH, in that order; each
    place looked at only when the ones before it had no nvdisasm (cuda.pathfinder's import
    costs more than a small file's analysis)."""
    yield from _wheel_candidates()
    yield from _pathfinder_candidate()
    which = shutil.which("nvdisasm")
    if which:
        yield which
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            yield str(Path(os.environ[var]) / "bin" / "nvdisasm")


def _usable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_nvdisasm(search_dirs: Optional[Sequence[Union[str, os.PathLike]]] = None) -> str:
    """The nvdisasm executable to use.

    ``search_dirs`` given: only ``DIR/nvdisasm`` and ``DIR/bin/nvdisasm`` of those.  Else
    ``$PTXFORGE_NVDISASM`` (an executable, or a folder searched alone), then the NVIDIA
    wheels, ``cuda.pathfinder``, ``PATH``, ``$CUDA_HOME/bin`` and ``$CUDA_PATH/bin``.
    Raises :class:`~ptxforge.errors.BackendUnavailableError` saying what to install.

    Example::

        >>> find_nvdisasm()                      # doctest: +SKIP
        '/venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvdisasm'
    """
    env = os.environ.get(NVDISASM_ENV)
    cands: Iterable[str]
    if search_dirs is not None:
        dirs = [os.fspath(d) for d in search_dirs]
        cands, where = [c for d in dirs for c in _in_dir(d)], f"in {', '.join(dirs) or '(none)'}"
    elif env and os.path.isdir(env):
        cands, where = _in_dir(env), f"in ${NVDISASM_ENV}={env}"
    elif env:
        if not _usable(env):
            raise BackendUnavailableError(f"${NVDISASM_ENV}={env} is not an executable file; "
                                          f"expected the path of nvdisasm; {_INSTALL}")
        return env
    else:
        cands = _default_candidates()
        where = "in the NVIDIA wheels (nvidia/*/bin), cuda.pathfinder, PATH, $CUDA_HOME, $CUDA_PATH"
    for c in cands:
        if _usable(c):
            return c
    raise BackendUnavailableError(f"sass: nvdisasm not found {where}; {_INSTALL}")


@functools.lru_cache(maxsize=8)
def nvdisasm_version(path: str) -> str:
    """``"13.5"`` from ``nvdisasm --version`` (``"?"`` when it does not say; remembered per
    file: :mod:`.tool_facts`)."""
    from .tool_facts import remembered

    return str(remembered(path, "nvdisasm --version", lambda: _ask_version(path)))


def _ask_version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else "?"


def run(tool: str, cubin: bytes, flags: Sequence[str]) -> str:
    """nvdisasm's standard output for ``flags`` on ``cubin`` (bytes); PtxforgeError with its
    message.

    Example::

        >>> "// +" in run(find_nvdisasm(), cubin, LIFE_RANGES)     # doctest: +SKIP
        True
    """
    key = _key(tool, cubin, flags)
    kept = result_cache.get("nvdisasm", key) if key else None
    if kept is not None:
        return kept.decode("utf-8")
    with tempfile.TemporaryDirectory(prefix="ptxforge-sass-") as d:
        path = os.path.join(d, "module.cubin")
        with open(path, "wb") as fh:
            fh.write(cubin)
        try:
            res = subprocess.run([tool, *flags, path], capture_output=True, text=True,
                                 timeout=300, close_fds=False)   # posix_spawn: ptxas_run.py
        except (OSError, subprocess.SubprocessError) as exc:
            raise BackendUnavailableError(f"sass: could not run {tool}: {exc}; {_INSTALL}") \
                from None
    if res.returncode != 0:
        raise _failed(tool, flags, res.returncode, res.stderr or res.stdout, path)
    if key:
        result_cache.put("nvdisasm", key, res.stdout.encode("utf-8"))
    return res.stdout


def _key(tool: str, cubin: bytes, flags: Sequence[str]) -> Optional[str]:
    """The result cache's key of nvdisasm ``flags`` on ``cubin`` (None: no cache, or the
    executable cannot be looked at)."""
    if not result_cache.enabled():
        return None
    try:
        return result_cache.digest("nvdisasm", result_cache.identity(tool), "\0".join(flags),
                                   cubin)
    except OSError:
        return None


def _failed(tool: str, flags: Sequence[str], returncode: int, message: str, path: str
            ) -> PtxforgeError:
    msg = message.strip().replace(path, "<cubin>")
    hint = ""
    m = re.search(r'architecture "?SM_?(\d+)', msg, re.I)
    if m or "arch" in msg.lower():
        which = f"sm_{m.group(1)}" if m else "this cubin's architecture"
        hint = (f"\nhint: this nvdisasm ({nvdisasm_version(tool)}) does not read {which}; "
                "nvdisasm 13 reads sm_75 and newer, a CUDA 12 nvdisasm also sm_50 … sm_72 "
                f"(point ${NVDISASM_ENV} at one)")
    return PtxforgeError(f"sass: nvdisasm {' '.join(flags)} failed on the cubin "
                         f"(exit {returncode}): {msg or 'no message'}{hint}")


class Started:
    """nvdisasm running with ``flags`` on its own link (or copy) of a cubin file, its output
    going to a file (:func:`start`); :meth:`output` waits for it."""

    def __init__(self, tool: str, cubin_path: str, flags: Sequence[str],
                 key: Optional[str] = None) -> None:
        self.tool, self.flags, self._key = tool, tuple(flags), key
        self._dir = tempfile.mkdtemp(prefix="ptxforge-sass-")
        self._path = os.path.join(self._dir, "module.cubin")
        try:
            os.link(cubin_path, self._path)     # the compiler's folder goes away after
        except OSError:
            shutil.copyfile(cubin_path, self._path)
        with open(os.path.join(self._dir, "out"), "wb") as out, \
                open(os.path.join(self._dir, "err"), "wb") as err:
            # files, not pipes: the waiting thread wants the interpreter's lock once
            self._proc = subprocess.Popen([tool, *self.flags, self._path], stdout=out,
                                          stderr=err, stdin=subprocess.DEVNULL,
                                          close_fds=False)   # posix_spawn: ptxas_run.py

    def output(self) -> str:
        """nvdisasm's standard output (waits); PtxforgeError as :func:`run` raises it."""
        try:
            code = self._proc.wait(timeout=300)
            with open(os.path.join(self._dir, "out"), "rb") as out, \
                    open(os.path.join(self._dir, "err"), "rb") as err:
                text = out.read().decode("utf-8", errors="replace")
                message = err.read().decode("utf-8", errors="replace")
        except subprocess.TimeoutExpired:
            self._proc.kill()
            raise PtxforgeError(f"sass: nvdisasm {' '.join(self.flags)} ran over 300 s on "
                                "the cubin") from None
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)
        if code != 0:
            raise _failed(self.tool, self.flags, code, message or text, self._path)
        if self._key:
            result_cache.put("nvdisasm", self._key, text.encode("utf-8"))
        return text

    def discard(self) -> None:
        """Stop it (its output is not wanted) and remove its files."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        shutil.rmtree(self._dir, ignore_errors=True)


class Kept:
    """A listing the result cache kept, in :class:`Started`'s place (nothing runs)."""

    def __init__(self, tool: str, flags: Sequence[str], text: str) -> None:
        self.tool, self.flags, self._text = tool, tuple(flags), text

    def output(self) -> str:
        """The listing."""
        return self._text

    def discard(self) -> None:
        """Nothing to stop."""


def start(tool: Optional[str], cubin_path: str, flags: Sequence[str] = LIFE_RANGES
          ) -> Union[Started, Kept, None]:
    """nvdisasm (``tool``, default :func:`find_nvdisasm`) started with ``flags`` on the cubin
    at ``cubin_path``, which may be removed once this returns (:class:`Kept`: the result
    cache's listing of that cubin); None when nvdisasm cannot be found or started (the
    caller's own :func:`run` then says why)."""
    try:
        tool = tool or find_nvdisasm()
        key = None
        if result_cache.enabled():
            with open(cubin_path, "rb") as fh:
                key = _key(tool, fh.read(), flags)
            kept = result_cache.get("nvdisasm", key) if key else None
            if kept is not None:
                return Kept(tool, flags, kept.decode("utf-8"))
        return Started(tool, cubin_path, flags, key)
    except (OSError, PtxforgeError):
        return None
