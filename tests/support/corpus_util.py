"""The CUDA C++ test corpus (tests/corpus/*.cu) compiled to PTX with NVRTC.

Every source is compiled for sm_80 and sm_90, with and without ``-lineinfo``.  Results are
cached in memory for the session and on disk (keyed by a hash of the source, the options and
the NVRTC version), so a warm test run does not call NVRTC at all.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

__all__ = [
    "CORPUS_DIR",
    "ARCHS",
    "VARIANTS",
    "corpus_sources",
    "compile_cu",
    "cuda_include_dirs",
    "corpus_ptx",
    "all_corpus_ptx",
    "ptxas_stats",
    "stable_folder",
    "stable_source",
]

CORPUS_DIR = Path(__file__).parents[1] / "corpus"
ARCHS = ("sm_80", "sm_90")
VARIANTS = tuple((arch, lineinfo) for arch in ARCHS for lineinfo in (False, True))
_CACHE_DIR = Path(tempfile.gettempdir()) / "ptxforge-corpus-cache"


def corpus_sources() -> list[str]:
    """Names (stems) of the corpus sources, sorted."""
    return sorted(p.stem for p in CORPUS_DIR.glob("*.cu"))


@functools.lru_cache(maxsize=None)
def _nvrtc_version() -> str:
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def _check(err, prog=None, what="") -> None:
    from cuda.bindings import nvrtc

    if err == nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return
    log = ""
    if prog is not None:
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        buf = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, buf)
        log = buf.decode(errors="replace")
    raise RuntimeError(f"NVRTC failed ({err.name}) {what}\n{log}")


def cuda_include_dirs() -> tuple[str, ...]:
    """The CUDA headers NVRTC needs for cub, cuda::barrier / cuda::pipeline and cooperative
    groups: the nvidia-cuda-cccl headers and the toolkit's include dir from the nvidia wheels."""
    import nvidia

    out = []
    for root in nvidia.__path__:
        for inc in sorted(Path(root).glob("cu[0-9]*/include")):
            out += [str(inc / "cccl"), str(inc)]
    return tuple(p for p in out if Path(p).is_dir())


def _nvrtc_compile(source: str, name: str, arch: str, lineinfo: bool,
                   options: tuple = ()) -> str:
    from cuda.bindings import nvrtc

    opts = [f"-arch=compute_{arch[3:]}", "--std=c++17", "-default-device", *options]
    if lineinfo:
        opts.append("-lineinfo")
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
    _check(err, what=f"creating {name}.cu")
    try:
        raw = [o.encode() for o in opts]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(raw), raw)
        _check(err, prog, f"compiling {name}.cu for {arch}")
        err, size = nvrtc.nvrtcGetPTXSize(prog)
        _check(err, prog)
        buf = b" " * size
        (err,) = nvrtc.nvrtcGetPTX(prog, buf)
        _check(err, prog)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return buf.rstrip(b"\0").decode()


def compile_cu(source: str, name: str, arch: str = "sm_80", lineinfo: bool = False,
               options: tuple = ()) -> str:
    """PTX for CUDA C++ ``source`` (disk-cached by content, options and NVRTC version);
    ``options`` are extra NVRTC flags (``-I...``)."""
    key = hashlib.sha256(
        "\0".join([source, name, arch, str(lineinfo), _nvrtc_version(), "v1", *options]).encode()
    ).hexdigest()[:32]
    path = _CACHE_DIR / f"{name}-{arch}-{int(lineinfo)}-{key}.ptx"
    try:
        return path.read_text()
    except OSError:
        pass
    ptx = _nvrtc_compile(source, name, arch, lineinfo, tuple(options))
    try:
        _CACHE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(ptx)
        os.replace(tmp, path)
    except OSError:
        pass
    return ptx


@functools.lru_cache(maxsize=None)
def corpus_ptx(name: str, arch: str = "sm_80", lineinfo: bool = False) -> str:
    """PTX of corpus source ``name`` (e.g. ``"weno"``) for ``arch``."""
    source = (CORPUS_DIR / f"{name}.cu").read_text()
    return compile_cu(source, name, arch, lineinfo)


def all_corpus_ptx() -> dict[tuple[str, str, bool], str]:
    """Every (name, arch, lineinfo) variant, compiled two at a time."""
    jobs = [(n, a, li) for n in corpus_sources() for a, li in VARIANTS]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda j: corpus_ptx(*j), jobs))
    return dict(zip(jobs, results))


_FUNC = re.compile(r"Function properties for '?([\w$.]+)'?:?")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_REGS = re.compile(r"[Uu]sed (\d+) registers")


def ptxas_stats(log: str) -> dict[str, dict[str, int]]:
    """Per function: registers, stack, spill_stores, spill_loads from a verbose ptxas log."""
    out: dict[str, dict[str, int]] = {}
    current = None
    for line in log.splitlines():
        if line.startswith("info    :"):
            break  # nvJitLink's own summary repeats the figures in another format
        m = _FUNC.search(line)
        if m:
            current = out.setdefault(m.group(1), {})
            continue
        if current is None:
            continue
        m = _STACK.search(line)
        if m:
            current.update(stack=int(m.group(1)), spill_stores=int(m.group(2)),
                           spill_loads=int(m.group(3)))
        m = _REGS.search(line)
        if m:
            current["registers"] = int(m.group(1))
    return out


def stable_source(text: str, name: str) -> Path:
    """``text`` saved as ``name`` in a folder of its own (:func:`stable_folder`)."""
    return stable_folder({name: text}) / name


def stable_folder(files: dict) -> Path:
    """A folder holding ``files`` (name: text), named by their SHA-256, under the corpus cache
    (kernel_corpus.cache_dir): a path that is the same in every run.

    A test that runs the CLI on a source written to ``tmp_path`` gets PTX naming a new folder
    in every run (NVRTC's ``.file`` line), so the tool memo (tool_memo.py) never sees the
    same input twice; from this folder it does.  Only for tests that read the files, never
    write beside them: the folder is checked to hold exactly ``files``.
    """
    from kernel_corpus import cache_dir

    h = hashlib.sha256()
    for name in sorted(files):
        h.update(f"{name}\0{files[name]}\0".encode())
    folder = cache_dir() / "sources" / h.hexdigest()[:24]
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = folder / name
        try:
            if path.read_text() == text:
                continue
        except OSError:
            pass
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    extra = {p.name for p in folder.iterdir() if not p.name.endswith(".tmp")} - set(files)
    assert not extra, f"{folder} holds files a test wrote beside the sources: {sorted(extra)}"
    return folder
