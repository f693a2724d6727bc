"""Compile the scale corpus to PTX once and cache it; list its files per class.

The cache folder (default ``~/.cache/ptxforge-bench-scale``, or ``$PTXFORGE_BENCH_SCALE_CACHE``)
holds one sub-folder per key (a hash of the compile options, the NVRTC version, the
nvidia-cuda-cccl version and the nvcc version); beside each PTX file, ``.src/`` holds the hash
of the CUDA C++ it came from.  A file is compiled only when it is missing or its source
changed, so a second run compiles nothing.  NVRTC compiles with ``-lineinfo
--gpu-architecture=compute_80 -std=c++17`` and the cccl headers of the venv; the thrust class
needs host code, so nvcc compiles it (``-ptx -lineinfo -arch=sm_80``), and the class is skipped
with a printed reason without one.

Example::

    >>> corpus = build_corpus(["many"])          # doctest: +SKIP
    >>> [p.name for p in corpus.files["many"]]   # doctest: +SKIP
    ['many_templates.ptx']
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import CLASSES
from .gemm import gemm_sources
from .sources import big_sources, cub_sources, many_sources, small_sources, thrust_sources

__all__ = ["Corpus", "build_corpus", "cache_root", "find_nvcc", "include_dirs", "nvrtc_compile"]

_HERE = Path(__file__).resolve().parent
_NVRTC_OPTS = ["-lineinfo", "--gpu-architecture=compute_80", "-std=c++17"]
_NVCC_OPTS = ["-ptx", "-lineinfo", "-arch=sm_80", "-std=c++17"]
_SOURCES: dict[str, Callable[[], dict]] = {
    "cub": cub_sources, "thrust": thrust_sources, "many": many_sources, "big": big_sources,
    "gemm": gemm_sources, "small": small_sources}


@dataclass
class Corpus:
    """The compiled corpus: PTX paths per class, classes skipped (with why), the folder."""

    folder: Path
    files: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)
    compiled: int = 0
    seconds: float = 0.0


def cache_root() -> Path:
    """The cache folder: ``$PTXFORGE_BENCH_SCALE_CACHE`` or ``~/.cache/ptxforge-bench-scale``."""
    env = os.environ.get("PTXFORGE_BENCH_SCALE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "ptxforge-bench-scale"


def _nvidia_roots() -> list:
    roots = []
    for entry in sys.path:
        cand = Path(entry) / "nvidia"
        if cand.is_dir():
            roots.append(cand)
    return roots


def include_dirs() -> list:
    """[the cccl include folder (cub, thrust, cuda/), NVRTC's CUDA include folder]."""
    cccl, cuda = None, None
    for root in _nvidia_roots():
        for cub in sorted(glob.glob(str(root / "*" / "include" / "cccl" / "cub"))) + \
                sorted(glob.glob(str(root / "*" / "include" / "cub"))):
            cccl = cccl or str(Path(cub).parent)
        for hdr in sorted(glob.glob(str(root / "*" / "include" / "mma.h"))):
            cuda = cuda or str(Path(hdr).parent)
    if cccl is None or cuda is None:
        raise SystemExit("bench_scale: the cccl headers (pip install nvidia-cuda-cccl) or the CUDA "
                         f"headers (nvidia-cuda-nvrtc / -crt) are not in the venv; found cccl={cccl}, "
                         f"cuda={cuda}")
    return [cccl, cuda]


def find_nvcc() -> str | None:
    """nvcc from the venv's nvidia wheels (cu13, then cuda_nvcc), else PATH, else /usr/local/bin."""
    for root in _nvidia_roots():
        for rel in ("cu13/bin/nvcc", "cuda_nvcc/bin/nvcc"):
            if os.access(root / rel, os.X_OK):
                return str(root / rel)
    return shutil.which("nvcc") or (
        "/usr/local/bin/nvcc" if os.access("/usr/local/bin/nvcc", os.X_OK) else None)


def _versions() -> str:
    from importlib import metadata

    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    try:
        cccl = metadata.version("nvidia-cuda-cccl")
    except metadata.PackageNotFoundError:
        cccl = "?"
    nvcc = find_nvcc()
    nvcc_v = ""
    if nvcc:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                             timeout=60, check=False)
        nvcc_v = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "?"
    return f"nvrtc {major}.{minor}; cccl {cccl}; nvcc {nvcc} {nvcc_v}"


def _key() -> str:
    """The cache folder's key: the compile options and the compiler and header versions."""
    h = hashlib.sha256(repr((_NVRTC_OPTS, _NVCC_OPTS)).encode())
    h.update(_versions().encode())
    return h.hexdigest()[:16]


def _source_hash(src: str) -> str:
    return hashlib.sha256(src.encode()).hexdigest()


def _sidecar(path: Path) -> Path:
    """Where the source hash of ``CLASS/STEM.ptx`` lives (``.src/CLASS/STEM.sha256``, kept out of
    the class folder, which ``check DIR`` reads whole)."""
    return path.parent.parent / ".src" / path.parent.name / (path.stem + ".sha256")


def _fresh(path: Path, src: str) -> bool:
    """Whether ``path`` holds the PTX of exactly ``src`` (its sidecar says so)."""
    try:
        return path.exists() and _sidecar(path).read_text() == _source_hash(src)
    except OSError:
        return False


def nvrtc_compile(source: str, name: str, includes: list) -> str:
    """PTX of CUDA C++ ``source`` from NVRTC (raises RuntimeError with NVRTC's log)."""
    from cuda.bindings import nvrtc

    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
    if err != ok:
        raise RuntimeError(f"NVRTC could not create {name}.cu: {err.name}")
    try:
        opts = [o.encode() for o in _NVRTC_OPTS + [f"-I{d}" for d in includes]]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if err != ok:
            _, size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise RuntimeError(f"NVRTC failed on {name}.cu ({err.name}):\n"
                               f"{log.decode(errors='replace')[:4000]}")
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        buf = b" " * size
        nvrtc.nvrtcGetPTX(prog, buf)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return buf.rstrip(b"\0").decode()


def _nvcc_compile(source: str, name: str, nvcc: str) -> str:
    with tempfile.TemporaryDirectory(prefix="ptxforge-bench-nvcc-") as tmp:
        cu, out = Path(tmp) / f"{name}.cu", Path(tmp) / f"{name}.ptx"
        cu.write_text(source)
        res = subprocess.run([nvcc, *_NVCC_OPTS, str(cu), "-o", str(out)], capture_output=True,
                             text=True, timeout=1800, check=False)
        if res.returncode != 0:
            raise RuntimeError(f"nvcc failed on {name}.cu:\n{res.stderr[-4000:]}")
        return out.read_text()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def build_corpus(classes=CLASSES, root: Path | None = None, jobs: int = 2,
                 log: Callable[[str], None] = print) -> Corpus:
    """Compile the missing files of ``classes`` into the cache; the corpus's file lists."""
    folder = (root or cache_root()) / _key()
    corpus = Corpus(folder=folder)
    todo = []
    nvcc = find_nvcc()
    includes = include_dirs()
    for cls in classes:
        if cls == "thrust" and nvcc is None:
            corpus.skipped[cls] = ("thrust needs host code, which NVRTC does not compile, and no "
                                   "nvcc was found (pip install nvidia-cuda-nvcc)")
            log(f"skipping class thrust: {corpus.skipped[cls]}")
            continue
        paths = []
        for stem, src in sorted(_SOURCES[cls]().items()):
            path = folder / cls / f"{stem}.ptx"
            paths.append(path)
            if not _fresh(path, src):
                todo.append((cls, stem, src, path))
        corpus.files[cls] = paths
    if todo:
        log(f"compiling {len(todo)} corpus files into {folder} (once; cached) ...")
        t0 = time.perf_counter()

        def one(job):
            cls, stem, src, path = job
            t = time.perf_counter()
            ptx = _nvcc_compile(src, stem, nvcc) if cls == "thrust" else \
                nvrtc_compile(src, stem, includes)
            _write(path, ptx)
            _write(_sidecar(path), _source_hash(src))
            if cls != "small":
                secs = time.perf_counter() - t
                log(f"  {cls}/{stem}.ptx: {len(ptx) / 1e6:.2f} MB in {secs:.1f} s")

        # the slow ones first, so two workers finish together
        todo.sort(key=lambda j: (j[0] == "small", -len(j[2])))
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            list(pool.map(one, todo))
        corpus.compiled = len(todo)
        corpus.seconds = time.perf_counter() - t0
        log(f"compiled {len(todo)} files in {corpus.seconds:.0f} s")
    return corpus


if __name__ == "__main__":
    c = build_corpus()
    for cls, paths in c.files.items():
        size = sum(p.stat().st_size for p in paths)
        print(f"{cls:7s} {len(paths):4d} files {size / 1e6:7.2f} MB  {c.folder / cls}")
