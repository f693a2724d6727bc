"""Each distinct run of a compiler tool (the ptxas executable, nvJitLink's ptxas, nvdisasm,
NVRTC, and the tests' reference nvcc) once: the test session remembers its result, keyed by
everything the tool's output depends on.

Many tests run ``ptxforge analyze``/``check``/``sass`` on the same few files (a module fixture's
build, a corpus source), and each of those runs pays ptxas and two nvdisasm processes, which
cost far more than the analysis itself; the property tests compile hundreds of generated
modules, the same ones in every run (the default hypothesis profile is derandomized).
:func:`install` wraps the places the package runs them,
:meth:`PtxasBackend.compile <ptxforge.toolchain.backends.PtxasBackend.compile>`,
:meth:`NvJitLinkBackend.compile <ptxforge.toolchain.backends.NvJitLinkBackend.compile>` (in
process; a compile in the isolated worker, ``isolate=True`` and the sweep, always runs) and
``ptxforge.toolchain.sass._run``, with a memo:

* NVRTC (``ptxforge.frontends.cuda_source.compile_cuda``, wrapped where the package binds
  it) and nvcc (tests/support/nvcc_util.py) are keyed by the source's text and path, the
  target, the flags, every local header the source includes (by content), the header names
  in its folder and the NVIDIA wheels' versions (nvcc: also its executable and the host
  compiler's); a source written to a new ``tmp_path`` in every run is a new input every time,
  so tests that compile a ``.cu`` read it from ``corpus_util.stable_folder``;
* the key is the tool's input and every option: for ptxas the PTX text, the target, the
  :class:`~ptxforge.toolchain.compile.CompileOptions` and the executables it would try (path,
  size and modification time of each); for nvJitLink the same with its version and its
  wheel's; for nvdisasm the executable (path, size, time), the cubin's SHA-256 and the flags;
* only successful runs are remembered: an error, a refusal or a crash runs the tool again
  every time, so every test of an error path still sees the real tool fail;
* results also go to an on-disk cache (``tools/`` under the corpus cache,
  :func:`kernel_corpus.cache_dir`), so a warm run asks each tool only about inputs no run
  has seen; ``PTXFORGE_TOOL_CACHE=memory`` keeps the memo in memory only (every distinct
  input compiled once per session), ``PTXFORGE_TOOL_CACHE=off`` runs every call.

Everything above those two calls (reading the cubin, parsing the logs and the listings, the
analysis and the reports) runs in every test.  The tools are deterministic for a given
input: the memo changes how often they run, not what a test sees, except the ``wall_time_s``
of a remembered ptxas result, which is that of the run that produced it.

Example::

    >>> import tool_memo
    >>> tool_memo.mode() in ("disk", "memory", "off")
    True
"""

from __future__ import annotations

import base64
import collections
import functools
import hashlib
import json
import os
import re
import tempfile
import threading
from pathlib import Path

from ptxforge.errors import PtxforgeError

__all__ = ["install", "mode", "nvcc_run", "nvjitlink_log", "source_inputs", "stats"]

_FORMAT = "tm1"          # bump to ignore every entry on disk
_LOCK = threading.Lock()
_MEMO: collections.OrderedDict = collections.OrderedDict()
_KEEP = 1024             # results kept in memory (the least recently used go; disk keeps all)
_STATS = {f"{tool}_{what}": 0 for tool in ("ptxas", "nvjitlink", "nvdisasm", "nvrtc", "nvcc")
          for what in ("runs", "hits")}


def mode() -> str:
    """``"disk"`` (the default), ``"memory"`` or ``"off"``, from ``$PTXFORGE_TOOL_CACHE``."""
    value = os.environ.get("PTXFORGE_TOOL_CACHE", "disk").strip().lower()
    return value if value in ("disk", "memory", "off") else "disk"


def stats() -> dict:
    """How many tool runs this session made and how many the memo answered."""
    return dict(_STATS)


def _identity(path: str) -> tuple:
    """What the tool at ``path`` is: its path, size and modification time (OSError if none)."""
    st = os.stat(path)
    return (os.path.abspath(path), st.st_size, st.st_mtime_ns)


def _digest(*parts) -> str:
    h = hashlib.sha256(_FORMAT.encode())
    for part in parts:
        h.update(b"\0")
        h.update(part if isinstance(part, bytes) else repr(part).encode())
    return h.hexdigest()[:40]


@functools.cache
def _folder() -> Path:
    from kernel_corpus import cache_dir

    return cache_dir() / "tools"


def _disk_get(key: str):
    if mode() != "disk":
        return None
    try:
        return json.loads((_folder() / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None


def _disk_put(key: str, value) -> None:
    if mode() != "disk":
        return
    folder = _folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(value, f)
        os.replace(tmp, folder / f"{key}.json")
    except OSError:
        pass


def _remembered(key: str, run, encode, decode, counter: str):
    """The memo's answer for ``key`` (memory, then disk), else ``run()``'s, remembered."""
    with _LOCK:
        hit = _MEMO.get(key)
        if hit is not None:
            _MEMO.move_to_end(key)
    if hit is None:
        stored = _disk_get(key)
        if stored is not None:
            try:
                hit = decode(stored)
            except (KeyError, TypeError, ValueError):   # another format: run the tool again
                hit = None
    if hit is not None:
        _STATS[counter + "_hits"] += 1
    else:
        hit = run()                 # raises: nothing remembered
        _STATS[counter + "_runs"] += 1
        _disk_put(key, encode(hit))
    with _LOCK:
        _MEMO[key] = hit
        while len(_MEMO) > _KEEP:
            _MEMO.popitem(last=False)
    return hit


# --- ptxas ------------------------------------------------------------------------------------

def _raw_fields(raw_type) -> tuple:
    import attrs

    return tuple(f.name for f in attrs.fields(raw_type))


def _encode_raw(raw) -> dict:
    import attrs

    doc = attrs.asdict(raw, recurse=False)
    doc["cubin"] = None if raw.cubin is None else base64.b64encode(raw.cubin).decode()
    doc["tool_version"] = list(raw.tool_version)
    return doc


def _decoder(raw_type):
    def decode(doc: dict):
        doc = dict(doc)
        if doc["cubin"] is not None:
            doc["cubin"] = base64.b64decode(doc["cubin"])
        doc["tool_version"] = tuple(doc["tool_version"])
        return raw_type(**doc)
    return decode


def _wrap_compile(cls, raw_type, name: str, identity) -> None:
    """Remember ``cls.compile`` (a backend's) per input: ``identity(backend)`` is the tool's
    part of the key, or None when the tool cannot be named (the real call then says why)."""
    original = cls.compile
    if getattr(original, "_tool_memo", False):
        return
    fields = _raw_fields(raw_type)
    decode = _decoder(raw_type)

    @functools.wraps(original)
    def compile(self, ptx, target, options):
        ident = None if mode() == "off" else identity(self)
        if not ident:
            return original(self, ptx, target, options)
        key = f"{name}-" + _digest(ident, ptx, target, options, fields)
        return _remembered(key, lambda: original(self, ptx, target, options), _encode_raw,
                           decode, name)

    compile._tool_memo = True
    cls.compile = compile


def _ptxas_identity(backend):
    """Path, size and time of each executable the backend would try (None: none found)."""
    try:
        return tuple(_identity(exe) for exe in backend.candidates()) or None
    except (OSError, PtxforgeError):   # no ptxas, a missing pinned one: the real call says so
        return None


# --- nvJitLink (in process; the isolated worker's jobs are not remembered) ------------------

@functools.cache
def _nvjitlink_identity() -> tuple:
    """nvJitLink's version and the wheel that ships it (raises when it is not importable)."""
    import importlib.metadata

    from cuda.bindings import nvjitlink

    try:
        wheel = importlib.metadata.version("nvidia-nvjitlink")
    except importlib.metadata.PackageNotFoundError:
        wheel = "absent"
    return tuple(nvjitlink.version()), wheel


def nvjitlink_log(ptx: str, args: tuple, run) -> str:
    """``run()``'s text (nvJitLink's info log for ``ptx`` with ``args``), remembered like a
    compile (for tests/conftest.py's ``nvjitlink_compile``); a failing run is not."""
    try:
        ident = _nvjitlink_identity()
    except (ImportError, OSError, RuntimeError):
        return run()
    if mode() == "off":
        return run()
    key = "nvjitlink-log-" + _digest(ident, ptx, tuple(args))
    return _remembered(key, run, lambda s: s, lambda s: s if isinstance(s, str) else None,
                       "nvjitlink")


def _nvjitlink_key(backend):
    """nvJitLink's version and wheel (None: not installed; the real call says so)."""
    try:
        return _nvjitlink_identity()
    except (ImportError, OSError, RuntimeError):
        return None


# --- nvdisasm ---------------------------------------------------------------------------------

def _wrap_nvdisasm(sass) -> None:
    original = getattr(sass, "_run", None)
    if original is None or getattr(original, "_tool_memo", False):
        return

    @functools.wraps(original)
    def _run(tool, cubin, flags):
        if mode() == "off":
            return original(tool, cubin, flags)
        try:
            ident = _identity(tool)
        except OSError:
            return original(tool, cubin, flags)
        key = "nvdisasm-" + _digest(ident, hashlib.sha256(bytes(cubin)).digest(), tuple(flags))
        return _remembered(key, lambda: original(tool, cubin, flags), lambda s: s,
                           lambda s: s if isinstance(s, str) else None, "nvdisasm")

    _run._tool_memo = True
    sass._run = _run


# --- NVRTC (in process) -------------------------------------------------------------------

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"([^"\n]+)"|<([^>\n]+)>|(\S))', re.MULTILINE)
_HEADERISH = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".inc", ".ipp", ".tcc")


@functools.cache
def _nvrtc_identity() -> tuple:
    """NVRTC's version and the versions of the NVIDIA wheels whose headers it reads."""
    import importlib.metadata

    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    wheels = sorted((d.metadata["Name"] or "", d.version)
                    for d in importlib.metadata.distributions()
                    if (d.metadata["Name"] or "").lower().startswith(("nvidia-", "cuda-")))
    return (major, minor), tuple(wheels)


def _local_headers(text: str, here: Path, dirs: list, seen: dict) -> bool:
    """Add the content of every header ``text`` includes from ``here`` or ``dirs`` (the source's
    folder and the ``-I`` folders), recursively, to ``seen``; False when an include cannot be
    read off the text (``#include MACRO``).  A name no local folder holds is a header of the
    NVIDIA wheels, keyed by their versions."""
    for quoted, angled, other in _INCLUDE.findall(text):
        if other:
            return False
        name = quoted or angled
        for folder in ([here] if quoted else []) + dirs:
            path = folder / name
            if path.is_file():
                key = str(path.resolve())
                if key not in seen:
                    body = path.read_bytes()
                    seen[key] = hashlib.sha256(body).hexdigest()
                    if not _local_headers(body.decode(errors="replace"), path.parent, dirs,
                                          seen):
                        return False
                break
    return True


def source_inputs(source, path: str, flags) -> tuple | None:
    """What a compile of CUDA C++ ``source`` (from ``path``, with ``flags``) reads besides the
    toolkit's own headers: every local header it includes (path and SHA-256, recursively) and
    the header names in the source's folder; None when that cannot be read off the text (an
    ``#include MACRO``, a pre-include, an options file)."""
    if any(str(f).startswith(("-include", "--pre-include", "-dopt", "--options-file"))
           for f in flags):
        return None
    text = source.decode(errors="replace") if isinstance(source, bytes) else str(source)
    folder = Path(path).resolve().parent if path not in ("", "<stdin>") else None
    dirs = ([folder] if folder else []) + [Path(str(f)[2:]) for f in flags
                                           if str(f).startswith("-I") and len(str(f)) > 2]
    seen: dict = {}
    try:
        if not _local_headers(text, folder or Path.cwd(), dirs, seen):
            return None
        # what a wheel header's own include could find first: the source folder's headers
        listing = sorted(p.name for p in folder.iterdir()
                         if p.is_dir() or p.name.endswith(_HEADERISH)) if folder else []
    except OSError:
        return None
    return tuple(sorted(seen.items())), tuple(listing)


def _nvrtc_key(source, path: str, target, flags) -> str | None:
    """The memo key of one NVRTC compile, or None when its inputs cannot all be named."""
    inputs = source_inputs(source, path, flags)
    if inputs is None:
        return None
    try:
        ident = _nvrtc_identity()
    except (ImportError, OSError, RuntimeError):
        return None
    return "nvrtc-" + _digest(ident, source, path, target, tuple(map(str, flags)), inputs)


def nvcc_run(exe: str, path, arch: str, flags: tuple, run):
    """``run()``'s text (the log of ``nvcc -cubin -Xptxas -v`` on the source at ``path``),
    remembered like a tool run: keyed by the source's text and local headers, the
    path, arch and flags, nvcc's and the host compiler's executables (path, size, time) and the
    NVIDIA wheels' versions.  A failing run (an exception) is not remembered."""
    import shutil

    if mode() == "off":
        return run()
    try:
        text = Path(path).read_bytes()
        inputs = source_inputs(text, str(path), flags)
        host = tuple(_identity(t) for t in (shutil.which("gcc"), shutil.which("g++")) if t)
        ident = (_identity(exe), host, _nvrtc_identity())
    except (OSError, ImportError, RuntimeError):
        return run()
    if inputs is None:
        return run()
    key = "nvcc-" + _digest(ident, text, str(path), arch, tuple(map(str, flags)), inputs)
    return _remembered(key, run, lambda v: v, lambda v: v if isinstance(v, str) else None,
                       "nvcc")


def _wrap_nvrtc() -> None:
    """Remember :func:`ptxforge.frontends.cuda_source.compile_cuda` per input: the source, its
    path, the target, the flags, every local header it includes (by content) and NVRTC's and
    the NVIDIA wheels' versions.  A failing compile is not remembered."""
    import sys

    from ptxforge.frontends import cuda_source, inputs, tune  # noqa: F401  (bind them first)

    original = cuda_source.compile_cuda
    if getattr(original, "_tool_memo", False):
        return

    @functools.wraps(original)
    def compile_cuda(source, path, target=None, flags=()):
        key = None if mode() == "off" else _nvrtc_key(source, path, target, flags)
        if key is None:
            return original(source, path, target, flags)
        return _remembered(key, lambda: original(source, path, target, flags), lambda s: s,
                           lambda s: s if isinstance(s, str) else None, "nvrtc")

    compile_cuda._tool_memo = True
    for name, module in list(sys.modules.items()):
        if name.startswith("ptxforge") and getattr(module, "compile_cuda", None) is original:
            module.compile_cuda = compile_cuda


def install() -> None:
    """Wrap the package's ptxas, nvdisasm and NVRTC calls with the memo (idempotent)."""
    from ptxforge.toolchain import backends, sass

    _wrap_compile(backends.PtxasBackend, backends.RawResult, "ptxas", _ptxas_identity)
    _wrap_compile(backends.NvJitLinkBackend, backends.RawResult, "nvjitlink", _nvjitlink_key)
    _wrap_nvdisasm(sass)
    _wrap_nvrtc()
