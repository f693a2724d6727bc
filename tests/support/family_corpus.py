"""The family corpus: kernels written to look like real code (cub/thrust through NVRTC,
CUTLASS-like tensor-core GEMMs, llm.c-style fused kernels, stencils and wavelets, small
kernels, Triton and numba kernels), grouped by source family, with whole-program ptxas as the
truth (docs/prediction.md, issue 29).

A **family** is one file under ``tests/corpus/families/``: ``*.cu`` (NVRTC through
:func:`ptxforge.frontends.cuda_source.compile_cuda`, ``-std=c++17``, the cccl headers on the
path), ``triton_*.py`` and ``numba_*.py`` (a ``CORPUS`` list, as in ``tests/corpus/triton`` and
``tests/corpus/numba``).  Two validation sets:

* the fixed split of :func:`kernel_corpus.split_of` (a hash of the kernel id), as before;
* the **family-held-out** set: every kernel of the families in :data:`HELD_OUT`, whatever its
  hash.  Rules are fitted on kernels that are in the fixed training split *and* not in a
  held-out family (:func:`role`).

Each distinct kernel counts once: a kernel whose PTX body (its name taken out) is the same as an
earlier one's is dropped.  Compiled PTX and ptxas's counts share the disk cache of
:mod:`kernel_corpus`.

Example::

    >>> role("families/cub_block.cu:k", "cub_block")
    'train'
    >>> role("families/wavelets.cu:k", "wavelets")
    'held-out'
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import attrs

from kernel_corpus import (
    _ENTRY,
    _FRONTS,
    CorpusKernel,
    _cache_get,
    _cache_put,
    _display,
    _key,
    _load,
    _version,
    split_of,
)

__all__ = [
    "FAMILY_ROOT",
    "FAST",
    "HELD_OUT",
    "FamilyKernel",
    "families",
    "family_corpus",
    "role",
]

FAMILY_ROOT = Path(__file__).resolve().parents[1] / "corpus" / "families"
#: Families held out whole: never used to choose a rule or a constant.  At least one per
#: compiler, and one of each failure class the issue names (tensor cores, long runs of loads,
#: small kernels).
HELD_OUT = ("wmma_gemm", "wavelets", "cub_small", "llm_attention", "triton_more", "numba_more",
            "triton_extra", "numba_extra")
#: A small, fast slice for the test (every compiler, both roles).
FAST = ("cub_small", "wavelets", "small_kernels", "triton_more", "numba_more", "stencils")


@attrs.frozen(slots=True)
class FamilyKernel:
    """A corpus kernel with its family, compiler and role (``train``, ``validation``: the fixed
    split, or ``held-out``: its family is held out)."""

    kernel: CorpusKernel
    family: str
    compiler: str
    role: str


def role(kernel_id: str, family: str) -> str:
    """``held-out`` for a held-out family, else the fixed split of the id."""
    return "held-out" if family in HELD_OUT else split_of(kernel_id)


def families() -> list[str]:
    """Every family (file stem), sorted."""
    return sorted(p.stem for p in FAMILY_ROOT.iterdir() if p.suffix in (".cu", ".py"))


def _compiler(path: Path) -> str:
    if path.suffix == ".cu":
        return "nvrtc"
    return path.stem.split("_")[0]


def _nvrtc_module(path: Path, arch: str) -> str:
    from ptxforge.frontends.cuda_source import compile_cuda

    from corpus_util import _nvrtc_version

    text = path.read_text()
    flags = ["-std=c++17"]
    key = _key("family-nvrtc", text, path.name, arch, _nvrtc_version(), *flags,
               _version("nvidia-cuda-cccl"))
    hit = _cache_get("nvrtc", key)
    if hit is not None:
        return hit["ptx"]
    ptx = compile_cuda(text, str(path), arch, flags)
    _cache_put("nvrtc", key, {"ptx": ptx})
    return ptx


def _python_rows(path: Path, compiler: str, arch: str) -> list:
    dists, compile_one = _FRONTS[compiler]
    key = _key("family-" + compiler, path.read_text(), path.name, arch,
               *(_version(d) for d in dists))
    rows = _cache_get(compiler, key)
    if rows is None:
        module = _load(path, "family_" + compiler)
        rows = []
        for entry in module.CORPUS:
            kernel, ptx = compile_one(entry, arch)
            rows.append({"name": entry[0], "kernel": kernel, "ptx": ptx})
        _cache_put(compiler, key, rows)
    return rows


_BODY = re.compile(r"\.entry\s+([\w$.]+)")


def _body(ptx: str, name: str) -> str:
    """The text of entry ``name`` (from ``.entry`` to its closing brace), its name taken out."""
    start = ptx.find(f".entry {name}")
    end = ptx.find("\n}", start)
    return ptx[start:end].replace(name, "K") if start >= 0 else name


def _family_kernels(path: Path, arch: str) -> list[tuple[str, str, str]]:
    """(id, .entry name, module PTX) for each kernel of one family file."""
    compiler = _compiler(path)
    if compiler == "nvrtc":
        ptx = _nvrtc_module(path, arch)
        return [(f"families/{path.name}:{name}", mangled, ptx)
                for mangled, name in _display(_ENTRY.findall(ptx)).items()]
    return [(f"families/{path.name}:{r['name']}", r["kernel"], r["ptx"])
            for r in _python_rows(path, compiler, arch)]


@functools.cache
def _corpus(arch: str, only: tuple) -> tuple:
    out, seen = [], set()
    for stem in families():
        if only and stem not in only:
            continue
        path = next(p for p in sorted(FAMILY_ROOT.glob(stem + ".*")) if p.suffix in (".cu", ".py"))
        compiler = _compiler(path)
        for kid, name, ptx in _family_kernels(path, arch):
            body = _body(ptx, name)
            if body in seen:
                continue
            seen.add(body)
            k = CorpusKernel(kid, compiler, name, ptx, arch, split_of(kid),
                             str(path.relative_to(FAMILY_ROOT.parent)))
            out.append(FamilyKernel(k, stem, compiler, role(kid, stem)))
    return tuple(out)


def family_corpus(arch: str = "sm_80", only: tuple = ()) -> list[FamilyKernel]:
    """Every family kernel compiled for ``arch`` (or only the families in ``only``), each
    distinct kernel once, in a stable order."""
    return list(_corpus(arch, tuple(only)))
