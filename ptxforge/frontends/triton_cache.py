"""Triton's kernel cache (``~/.triton/cache``): each compiled kernel's PTX with its metadata.

Triton writes every kernel it compiles to ``CACHE/HASH/NAME.{ptx,cubin,json,…}``; the JSON
holds what the launch needs and the PTX does not say: ``num_warps`` (the block is 32 ×
num_warps threads), ``shared`` (the shared memory Triton asks for at launch, i.e. dynamic
shared memory: its PTX declares only an ``extern`` array), ``name``, ``num_stages`` and the
target.  :func:`scan` finds those entries; :func:`analyze_entry` runs
:func:`ptxforge.reports.analyze.analyze_ptx` on one with that block size and shared memory.
The cache directory is ``$TRITON_CACHE_DIR``, else ``$TRITON_HOME/.triton/cache``, else
``~/.triton/cache`` (:func:`default_cache_dir`), as Triton itself decides.

Triton's own ``n_spills`` (what ``kernel.n_spills`` and PyTorch Inductor read) is the
kernel's local memory per thread divided by 4: its whole stack frame in 4-byte words, spill
slots and local arrays alike, and 0 for spills it cannot see.  ptxforge reports the spill
stores and loads ptxas emitted (bytes) apart from the stack; :func:`triton_n_spills` gives
Triton's figure for comparison.

Example::

    >>> entries = scan("/nonexistent/cache")   # doctest: +SKIP
    >>> triton_n_spills(stack=64)
    16
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Optional

import attrs

from ptxforge.errors import PtxforgeError

__all__ = [
    "N_SPILLS_NOTE",
    "CacheEntry",
    "analyze_cache",
    "analyze_entry",
    "default_cache_dir",
    "entry_for_ptx",
    "is_cache_dir",
    "read_entry",
    "scan",
    "n_spills_differs",
    "triton_n_spills",
    "with_n_spills_note",
]

#: The end of the note a Triton report carries when Triton's n_spills would differ from the
#: spill bytes ptxas reports (its whole stack frame in 4-byte words, local arrays included).
N_SPILLS_NOTE = "Triton's n_spills (local memory / 4) would say {n}."


def triton_n_spills(stack: Optional[int]) -> Optional[int]:
    """What Triton reports as ``n_spills`` for a kernel with ``stack`` bytes of local memory
    per thread (``CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES // 4``); None when unknown."""
    return None if stack is None else stack // 4


def default_cache_dir() -> pathlib.Path:
    """Triton's cache directory: ``$TRITON_CACHE_DIR``, else ``$TRITON_HOME/.triton/cache``,
    else ``~/.triton/cache``."""
    if os.environ.get("TRITON_CACHE_DIR"):
        return pathlib.Path(os.environ["TRITON_CACHE_DIR"])
    home = os.environ.get("TRITON_HOME") or os.path.expanduser("~")
    return pathlib.Path(home) / ".triton" / "cache"


@attrs.frozen(slots=True, kw_only=True)
class CacheEntry:
    """One compiled kernel in Triton's cache: its PTX file, name and launch metadata."""

    ptx_path: str
    name: str
    num_warps: int
    shared: int
    num_stages: Optional[int] = None
    arch: Optional[str] = None
    hash: Optional[str] = None
    cubin_path: Optional[str] = None

    @property
    def block_size(self) -> int:
        """Threads per block: 32 × ``num_warps``."""
        return 32 * self.num_warps


def _metadata(path: pathlib.Path) -> Optional[dict]:
    """The JSON metadata of a Triton kernel at ``path``, or None when it is not one."""
    if path.name.startswith("__grp__"):
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or "num_warps" not in data or "name" not in data:
        return None
    return data


def read_entry(json_path) -> Optional[CacheEntry]:
    """The cache entry described by ``json_path`` (None unless it is Triton metadata with a
    sibling ``.ptx``)."""
    path = pathlib.Path(json_path)
    meta = _metadata(path)
    if meta is None:
        return None
    ptx = path.with_suffix(".ptx")
    if not ptx.is_file():
        return None
    target = meta.get("target") or {}
    arch = target.get("arch") if isinstance(target, dict) else None
    num_warps, shared = meta.get("num_warps"), meta.get("shared") or 0
    if not isinstance(num_warps, int) or not 1 <= num_warps <= 32 or not isinstance(shared, int):
        raise PtxforgeError(f"{path}: Triton metadata with num_warps={num_warps!r}, "
                            f"shared={shared!r}; expected num_warps 1..32 and shared bytes")
    cubin = path.with_suffix(".cubin")
    return CacheEntry(ptx_path=str(ptx), name=str(meta["name"]), num_warps=num_warps, shared=shared,
                      num_stages=meta.get("num_stages"),
                      arch=f"sm_{arch}" if isinstance(arch, int) else None, hash=meta.get("hash"),
                      cubin_path=str(cubin) if cubin.is_file() else None)


def scan(directory=None) -> tuple:
    """Every kernel in a Triton cache directory (default :func:`default_cache_dir`), sorted
    by name, then ``num_warps``, ``num_stages``, then path; PtxforgeError when the
    directory does not exist."""
    root = pathlib.Path(directory) if directory is not None else default_cache_dir()
    if not root.is_dir():
        raise PtxforgeError(f"no Triton cache at {str(root)!r} (expected a directory of "
                            "HASH/NAME.ptx with NAME.json; set TRITON_CACHE_DIR or pass it)")
    out = [e for p in sorted(root.rglob("*.json")) if (e := read_entry(p)) is not None]
    return tuple(sorted(out, key=lambda e: (e.name, e.num_warps, e.num_stages or 0,
                                            e.ptx_path)))


def is_cache_dir(directory) -> bool:
    """Whether ``directory`` holds at least one Triton cache entry."""
    root = pathlib.Path(directory)
    return root.is_dir() and any(read_entry(p) is not None for p in root.rglob("*.json"))


def analyze_entry(entry: CacheEntry, *, compile: bool = True, target=None, **kwargs):
    """:func:`~ptxforge.reports.analyze.analyze_ptx` of a cache entry at its block size
    (32 × num_warps) with its shared memory as dynamic shared memory; the analysis' notes
    gain the sentence on Triton's ``n_spills``.  Returns ``(ModuleAnalysis, ptx text)``."""
    from ptxforge.arch.spec import LaunchSpec
    from ptxforge.reports.analyze import analyze_ptx

    try:
        text = pathlib.Path(entry.ptx_path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise PtxforgeError(f"cannot read {entry.ptx_path!r}: {exc.strerror or exc}") from None
    spec = LaunchSpec(target=target, block=entry.block_size, dynamic_shared=entry.shared)
    res = analyze_ptx(text, entry.ptx_path, spec, compile=compile, **kwargs)
    return with_n_spills_note(res), text


def entry_for_ptx(path) -> Optional[CacheEntry]:
    """The cache entry whose PTX is ``path`` (a ``.ptx`` beside Triton's JSON metadata), else
    None."""
    p = pathlib.Path(path)
    if p.suffix != ".ptx" or not p.is_file():
        return None
    return read_entry(p.with_suffix(".json"))


def analyze_cache(directory=None, *, kernel: Optional[str] = None, **kwargs) -> tuple:
    """``(ModuleAnalysis, …)`` of every kernel in a Triton cache (default
    :func:`default_cache_dir`; ``kernel``: only those of that name), each at its own block
    size and shared memory (:func:`analyze_entry`, which gets ``kwargs``)."""
    entries = [e for e in scan(directory) if kernel is None or e.name == kernel]
    if not entries:
        raise PtxforgeError(f"no kernel{f' named {kernel!r}' if kernel else ''} in the "
                            f"Triton cache {str(directory or default_cache_dir())!r}")
    return tuple(analyze_entry(e, **kwargs)[0] for e in entries)


def n_spills_differs(stats) -> bool:
    """Whether Triton's ``n_spills`` (stack / 4) would tell another story than ptxas's spill
    stores: a stack with no spills, or spill bytes that are not 4 × n_spills.

    Example::

        >>> from types import SimpleNamespace as S
        >>> n_spills_differs(S(stack_frame=0, spill_stores=0, spill_loads=0))
        False
        >>> n_spills_differs(S(stack_frame=128, spill_stores=0, spill_loads=0))
        True
    """
    n = triton_n_spills(stats.stack_frame)
    return n is not None and (n * 4 != stats.spill_stores or (n == 0 and stats.spill_loads > 0))


def with_n_spills_note(res):
    """``res`` (a ModuleAnalysis) with a note, ending in :data:`N_SPILLS_NOTE`, for each
    compiled kernel whose Triton ``n_spills`` would differ from ptxas's spills
    (:func:`n_spills_differs`); nothing for a kernel with no stack and no spills."""
    notes = list(res.notes)
    for k in res.kernels:
        if k.stats is not None and k.is_entry and n_spills_differs(k.stats):
            n = triton_n_spills(k.stats.stack_frame)
            notes.append(f"{k.name}: ptxas spilled {k.stats.spill_stores} bytes (stores) / "
                         f"{k.stats.spill_loads} bytes (loads), stack {k.stats.stack_frame} "
                         "bytes; " + N_SPILLS_NOTE.format(n=n))
    return attrs.evolve(res, notes=tuple(notes))
