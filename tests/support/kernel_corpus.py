"""The kernel corpus for learning and measuring register prediction: real kernels from NVRTC,
Triton and numba-cuda, with whole-program ptxas 13.x as the ground truth.

Sources (kept in the repository, compiled by the tests, never copied PTX):

- ``tests/corpus/*.cu`` and ``tests/corpus/nvrtc/*.cu``: CUDA C++, one NVRTC call per file
  (``-lineinfo``, the runtime headers' include folder); every ``.entry`` in the PTX is a kernel.
- ``tests/corpus/triton/*.py``: ``@triton.jit`` kernels; each file lists ``CORPUS``, a list of
  ``(name, fn, signature, constexprs, options)`` compiled with ``triton.compile(ASTSource(...),
  target=GPUTarget("cuda", SM, 32), options=options)``.
- ``tests/corpus/numba/*.py``: Python kernels; each file lists ``CORPUS``, a list of
  ``(name, fn, signature)`` compiled with ``numba.cuda.compile_ptx(fn, sig, cc=..., lineinfo=True)``.

API::

    corpus(arch="sm_80", sources=SOURCES) -> list[CorpusKernel]
        CorpusKernel: id ("nvrtc/gemm.cu:sgemm<64,64,8>", "triton/softmax.py:softmax_w4",
        "numba/stencil.py:jacobi_f32"), source ("nvrtc" | "triton" | "numba"), kernel (the
        .entry name in ptx), ptx (the whole module's text), arch, split ("train" |
        "validation": from a hash of the id alone, about 65/35), file (path under tests/corpus).
    ground_truth(k, relocatable=False) -> GroundTruth
        registers, spill_stores, spill_loads (bytes), stack (frame bytes), shared (static
        bytes), barriers, mode ("whole-program" | "relocatable"), tool ("ptxas 13.5"): from
        running the ptxas 13.x executable (``ptxas -arch=ARCH -v``, plus ``-c`` when
        relocatable) on the kernel's module in a subprocess and parsing its log.
    ground_truths(kernels, relocatable=False) -> dict[id, GroundTruth]
        the same for many kernels, one ptxas run per module, two at a time.
    split_of(kernel_id) -> "train" | "validation"

Compiled PTX and ptxas results are cached on disk under ``$PTXFORGE_CORPUS_CACHE``, else
``$XDG_CACHE_HOME/ptxforge-test-corpus``, else ``~/.cache/ptxforge-test-corpus``, keyed by a hash
of the source text, the options and the compiler's version; a warm ``corpus()`` imports neither
Triton nor numba.  The ptxas used is ``$PTXFORGE_CORPUS_PTXAS`` or the ``nvidia-cuda-nvcc`` 13
wheel's ``nvidia/cu13/bin/ptxas``.

Example::

    >>> from kernel_corpus import split_of
    >>> split_of("nvrtc/gemm.cu:sgemm<64,64,8>") in ("train", "validation")
    True
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs

from ptxforge.ptx.demangle import demangle, demangle_function
from ptxforge.toolchain.ptxas_log import parse_ptxas_log

__all__ = [
    "CORPUS_ROOT",
    "SOURCES",
    "TRAIN_PERCENT",
    "CorpusKernel",
    "GroundTruth",
    "cache_dir",
    "corpus",
    "corpus_modules",
    "corpus_ptxas",
    "ground_truth",
    "ground_truths",
    "split_of",
]

CORPUS_ROOT = Path(__file__).resolve().parents[1] / "corpus"
SOURCES = ("nvrtc", "triton", "numba")
TRAIN_PERCENT = 65
_FORMAT = "kc1"  # bump to invalidate every cached entry
_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$.]+)\s*\(?", re.MULTILINE)


@attrs.frozen(slots=True)
class CorpusKernel:
    """One kernel of the corpus: its stable id, where it came from, its module's PTX."""

    id: str
    source: str
    kernel: str
    ptx: str = attrs.field(repr=False)
    arch: str
    split: str
    file: str


@attrs.frozen(slots=True)
class GroundTruth:
    """What whole-program (or relocatable) ptxas reported for one kernel."""

    registers: int
    spill_stores: int
    spill_loads: int
    stack: int
    shared: int
    barriers: int
    mode: str
    tool: str

    @property
    def spills(self) -> bool:
        """True when ptxas spilled (stores or loads)."""
        return bool(self.spill_stores or self.spill_loads)


def split_of(kernel_id: str) -> str:
    """``"train"`` or ``"validation"``, from a hash of the id alone (about 65/35)."""
    h = int(hashlib.sha256(kernel_id.encode()).hexdigest()[:8], 16)
    return "train" if h % 100 < TRAIN_PERCENT else "validation"


def cache_dir() -> Path:
    """The on-disk cache folder (created on first write)."""
    env = os.environ.get("PTXFORGE_CORPUS_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ptxforge-test-corpus"


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join((_FORMAT,) + parts).encode()).hexdigest()[:32]


def _cache_get(kind: str, key: str):
    try:
        return json.loads((cache_dir() / kind / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None


def _cache_put(kind: str, key: str, value) -> None:
    folder = cache_dir() / kind
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(value, f)
        os.replace(tmp, folder / f"{key}.json")
    except OSError:
        pass


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


# --- NVRTC ------------------------------------------------------------------------------------

@functools.cache
def _include_dir() -> str | None:
    """The CUDA runtime headers of the pip wheels (mma.h, cuda_fp16.h, cuda_bf16.h)."""
    try:
        import nvidia
        roots = list(getattr(nvidia, "__path__", []))
    except ImportError:
        roots = []
    for root in roots:
        for rel in ("cu13/include", "cuda_runtime/include"):
            if (Path(root) / rel / "mma.h").is_file():
                return str(Path(root) / rel)
    return None


def _cu_files() -> list[Path]:
    return sorted(CORPUS_ROOT.glob("*.cu")) + sorted((CORPUS_ROOT / "nvrtc").glob("*.cu"))


def _nvrtc_module(path: Path, arch: str) -> str:
    from compile_sources import nvrtc
    from corpus_util import _nvrtc_version

    text = path.read_text()
    opts = ["-lineinfo"] + ([f"-I{_include_dir()}"] if _include_dir() else [])
    key = _key("nvrtc", text, path.name, arch, _nvrtc_version(), opts[0],
               _version("nvidia-cuda-runtime"))
    hit = _cache_get("nvrtc", key)
    if hit is not None:
        return hit["ptx"]
    ptx = nvrtc(text, path.stem, arch, *opts)
    _cache_put("nvrtc", key, {"ptx": ptx})
    return ptx


def _display(mangled: list[str]) -> dict[str, str]:
    """Readable, unique names: ``sgemm<64,64,8>``; the full signature or the mangled name
    where two would collide."""
    short = {m: demangle_function(m).replace(", ", ",") for m in mangled}
    out = {}
    for m in mangled:
        name = short[m]
        if sum(1 for v in short.values() if v == name) > 1:
            name = demangle(m).replace(", ", ",")
            if sum(1 for x in mangled if demangle(x).replace(", ", ",") == name) > 1:
                name = m
        out[m] = name
    return out


def _nvrtc_kernels(arch: str) -> list[CorpusKernel]:
    files = _cu_files()
    with ThreadPoolExecutor(max_workers=2) as pool:
        modules = list(pool.map(lambda p: _nvrtc_module(p, arch), files))
    out = []
    for path, ptx in zip(files, modules):
        entries = _ENTRY.findall(ptx)
        for mangled, name in _display(entries).items():
            kid = f"nvrtc/{path.name}:{name}"
            out.append(CorpusKernel(kid, "nvrtc", mangled, ptx, arch, split_of(kid),
                                    str(path.relative_to(CORPUS_ROOT))))
    return out


# --- Python front ends (Triton, numba) ----------------------------------------------------------

def _load(path: Path, source: str):
    name = f"ptxforge_corpus_{source}_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _triton_compile(entry, arch: str) -> tuple[str, str]:
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    _, fn, signature, constexprs, options = entry
    src = ASTSource(fn, signature, constexprs=constexprs)
    compiled = triton.compile(src, target=GPUTarget("cuda", int(arch[3:]), 32),
                              options=dict(options))
    ptx = compiled.asm["ptx"]
    return _ENTRY.findall(ptx)[0], ptx


def _numba_compile(entry, arch: str) -> tuple[str, str]:
    from numba import cuda

    _, fn, sig = entry
    cc = (int(arch[3:-1]), int(arch[-1]))
    ptx, _ = cuda.compile_ptx(fn, sig, cc=cc, lineinfo=True)
    return _ENTRY.findall(ptx)[0], ptx


_FRONTS = {
    "triton": (("triton",), _triton_compile),
    "numba": (("numba", "numba-cuda"), _numba_compile),
}


def _python_kernels(source: str, arch: str) -> list[CorpusKernel]:
    dists, compile_one = _FRONTS[source]
    versions = [_version(d) for d in dists]
    out = []
    for path in sorted((CORPUS_ROOT / source).glob("*.py")):
        key = _key(source, path.read_text(), path.name, arch, *versions)
        rows = _cache_get(source, key)
        if rows is None:
            module = _load(path, source)
            rows = []
            for entry in module.CORPUS:
                kernel, ptx = compile_one(entry, arch)
                rows.append({"name": entry[0], "kernel": kernel, "ptx": ptx})
            _cache_put(source, key, rows)
        for row in rows:
            kid = f"{source}/{path.name}:{row['name']}"
            out.append(CorpusKernel(kid, source, row["kernel"], row["ptx"], arch, split_of(kid),
                                    str(path.relative_to(CORPUS_ROOT))))
    return out


@functools.cache
def _corpus(arch: str, sources: tuple) -> tuple:
    out = []
    for source in sources:
        if source == "nvrtc":
            out.extend(_nvrtc_kernels(arch))
        elif source in _FRONTS:
            out.extend(_python_kernels(source, arch))
        else:
            raise ValueError(f"unknown corpus source {source!r}; expected one of {SOURCES}")
    ids = [k.id for k in out]
    dups = sorted({i for i in ids if ids.count(i) > 1})
    if dups:
        raise RuntimeError(f"duplicate corpus kernel ids: {dups}")
    return tuple(out)


def corpus(arch: str = "sm_80", sources: Iterable[str] = SOURCES) -> list[CorpusKernel]:
    """Every corpus kernel compiled for ``arch`` (sm_80 or newer), in a stable order."""
    return list(_corpus(arch, tuple(sources)))


@functools.cache
def corpus_modules(arch: str = "sm_80") -> dict:
    """``{ptx: parsed Module}`` for every module of :func:`corpus` (``arch``), each parsed once
    per session (named by its first kernel's id) and shared by the tests that walk the whole
    corpus's IR; the modules are immutable."""
    from ptxforge.ptx.parse import parse

    out: dict = {}
    for k in corpus(arch):
        if k.ptx not in out:
            out[k.ptx] = parse(k.ptx, k.id)
    return out


# --- ground truth: the ptxas executable ---------------------------------------------------------

@functools.cache
def corpus_ptxas() -> tuple[str, str]:
    """(path, "ptxas X.Y") of the ptxas 13.x executable used for the ground truth."""
    path = os.environ.get("PTXFORGE_CORPUS_PTXAS")
    if not path:
        import nvidia
        for root in getattr(nvidia, "__path__", []):
            if (Path(root) / "cu13" / "bin" / "ptxas").is_file():
                path = str(Path(root) / "cu13" / "bin" / "ptxas")
                break
    if not path:
        raise RuntimeError("no ptxas 13.x: install the nvidia-cuda-nvcc 13 wheel "
                           "(nvidia/cu13/bin/ptxas) or set PTXFORGE_CORPUS_PTXAS")
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60,
                         check=False).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    return path, f"ptxas {m.group(1) if m else '?'}"


def _module_truth(ptx: str, arch: str, relocatable: bool) -> dict:
    """{function: {registers, ...}} for every function of one module (disk cached)."""
    exe, tool = corpus_ptxas()
    mode = "relocatable" if relocatable else "whole-program"
    key = _key("ptxas", ptx, arch, mode, tool)
    hit = _cache_get("ptxas", key)
    if hit is not None:
        return hit
    with tempfile.TemporaryDirectory(prefix="ptxforge-corpus-") as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        cmd = [exe, f"-arch={arch}", "-v", str(src), "-o", str(Path(tmp) / "k.cubin")]
        if relocatable:
            cmd.insert(1, "-c")
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise RuntimeError(f"{tool} -arch={arch} rejected a corpus module:\n{log[-4000:]}")
    out = {}
    for f in parse_ptxas_log(log).functions:
        out[f.name] = {"registers": f.registers or 0, "spill_stores": f.spill_stores or 0,
                       "spill_loads": f.spill_loads or 0, "stack": f.stack_frame or 0,
                       "shared": f.shared or 0, "barriers": f.barriers or 0,
                       "mode": mode, "tool": tool}
    _cache_put("ptxas", key, out)
    return out


def ground_truth(k: CorpusKernel, relocatable: bool = False) -> GroundTruth:
    """Registers, spills, stack and shared memory ptxas 13.x gives kernel ``k``."""
    stats = _module_truth(k.ptx, k.arch, relocatable)
    if k.kernel not in stats:
        raise KeyError(f"ptxas reported no function {k.kernel!r} for {k.id}; "
                       f"reported: {sorted(stats)}")
    return GroundTruth(**stats[k.kernel])


def ground_truths(kernels: Iterable[CorpusKernel],
                  relocatable: bool = False) -> dict[str, GroundTruth]:
    """``{id: GroundTruth}`` for many kernels: one ptxas run per distinct module, two at once."""
    kernels = list(kernels)
    modules = {(k.ptx, k.arch) for k in kernels}
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda m: _module_truth(m[0], m[1], relocatable), sorted(modules)))
    return {k.id: ground_truth(k, relocatable) for k in kernels}
