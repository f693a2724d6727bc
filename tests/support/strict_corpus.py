"""The strict-breadth corpus (tests/corpus/strict/*.cu): NVRTC PTX for many targets and
options, kept only where the whole-program ptxas 13.5 executable accepts it.

Each source is compiled for :data:`ARCHS` with each of :data:`OPTION_SETS` (none,
``-lineinfo``, ``-G``).  NVRTC's PTX and ptxas's verdict are cached on disk, keyed by a hash of
the source, the options and the tool versions, so a warm run calls neither compiler.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["ARCHS", "OPTION_SETS", "STRICT_DIR", "accepted_modules", "include_dir", "ptxas_path",
           "ptxas_verdict", "sources", "strict_ptx"]

STRICT_DIR = Path(__file__).parents[1] / "corpus" / "strict"
# NVRTC 13 refuses compute_70 ("invalid value for -arch"), so the oldest target is sm_75.
ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a", "sm_120")
OPTION_SETS = ((), ("-lineinfo",), ("-G",))
_CACHE_DIR = Path(tempfile.gettempdir()) / "ptxforge-strict-cache"
_SITE = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" \
    / "site-packages" / "nvidia" / "cu13"


def include_dir() -> Path | None:
    """The CUDA headers of the nvidia wheels (cuda_fp16.h, mma.h ...), or None."""
    path = _SITE / "include"
    return path if (path / "cuda_fp16.h").exists() else None


def ptxas_path() -> Path | None:
    """The whole-program ptxas 13.x executable of the nvidia-cuda-nvcc wheel, or None."""
    path = _SITE / "bin" / "ptxas"
    return path if path.exists() else None


def sources() -> list[str]:
    """Stems of the strict corpus sources, sorted."""
    return sorted(p.stem for p in STRICT_DIR.glob("*.cu"))


@functools.cache
def _versions() -> str:
    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    ptxas = ptxas_path()
    pv = subprocess.run([str(ptxas), "--version"], check=False, capture_output=True,
                        text=True).stdout if ptxas else ""
    return f"{major}.{minor}|{pv.strip().splitlines()[-1] if pv else ''}"


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join([*parts, _versions(), "v1"]).encode()).hexdigest()[:32]


def _cached(path: Path, make) -> str:
    try:
        return path.read_text()
    except OSError:
        pass
    text = make()
    try:
        _CACHE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError:
        pass
    return text


def strict_ptx(name: str, arch: str, options: tuple = ()) -> str:
    """NVRTC's PTX of strict source ``name`` for ``arch`` with extra ``options``."""
    from compile_sources import nvrtc

    source = (STRICT_DIR / f"{name}.cu").read_text()
    opts = (*options, f"-I{include_dir()}")
    key = _key(source, name, arch, *options)
    tag = "".join(o.strip("-") for o in options) or "plain"
    return _cached(_CACHE_DIR / f"{name}-{arch}-{tag}-{key}.ptx",
                   lambda: nvrtc(source, name, arch, *opts))


def ptxas_verdict(ptx: str, arch: str) -> str:
    """'' when whole-program ptxas accepts ``ptx`` for ``arch``, else its error log."""
    path = _CACHE_DIR / f"verdict-{arch}-{_key(ptx, arch)}.json"

    def run() -> str:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "k.ptx"
            src.write_text(ptx)
            res = subprocess.run([str(ptxas_path()), f"-arch={arch}", str(src), "-o",
                                  str(Path(tmp) / "k.cubin")], check=False, capture_output=True,
                                 text=True)
        return json.dumps("" if res.returncode == 0 else (res.stderr or "failed"))

    return json.loads(_cached(path, run))


def accepted_modules() -> tuple[dict, dict]:
    """({(name, arch, options): ptx} that ptxas accepts, {(name, arch, options): why not})
    over every source, target and option set."""
    ok, refused = {}, {}
    for name in sources():
        for arch in ARCHS:
            for options in OPTION_SETS:
                try:
                    ptx = strict_ptx(name, arch, options)
                except RuntimeError as exc:
                    refused[(name, arch, options)] = f"NVRTC: {exc}"
                    continue
                why = ptxas_verdict(ptx, arch)
                if why:
                    refused[(name, arch, options)] = f"ptxas: {why}"
                else:
                    ok[(name, arch, options)] = ptx
    return ok, refused
