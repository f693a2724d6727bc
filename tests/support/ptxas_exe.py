"""Whole-program ptxas for the DSL tests: compile builder PTX with the ptxas executable (13.5,
or CUDA 12.9's for sm_50 ... sm_72) through ``compile_ptx(backend="ptxas")``, and the target
just below a form's minimum."""

from __future__ import annotations

import re

from ptxforge.arch.targets import TARGETS
from ptxforge.arch.targets import target as as_target
from ptxforge.errors import CompileError
from ptxforge.toolchain.compile import compile_ptx

__all__ = ["ptxas_stats", "ptxas_refuses", "retarget", "below"]


def ptxas_stats(ptx: str, arch: str):
    """The Compiled result of the ptxas executable for ``arch`` (AssertionError with the log
    when ptxas rejects the PTX)."""
    try:
        return compile_ptx(ptx, arch, backend="ptxas")
    except CompileError as exc:
        raise AssertionError(f"ptxas rejected the PTX for {arch}:\n{exc}\n{ptx}") from None


def retarget(ptx: str, arch: str) -> str:
    """The same PTX with its ``.target`` line naming ``arch``."""
    return re.sub(r"^\.target\s+\S+", f".target {arch}", ptx, count=1, flags=re.M)


def ptxas_refuses(ptx: str, arch: str) -> str:
    """ptxas's error text when it refuses ``ptx`` retargeted to ``arch``; AssertionError if it
    accepts it."""
    try:
        compile_ptx(retarget(ptx, arch), arch, backend="ptxas")
    except CompileError as exc:
        return str(exc)
    raise AssertionError(f"ptxas accepted the PTX for {arch}, expected a refusal")


def below(name: str) -> str:
    """The newest registered plain target older than ``name`` (sm_80 -> sm_75; sm_90a ->
    sm_90, the same SM without the arch-specific features)."""
    tgt = as_target(name)
    if tgt.suffix:
        return tgt.base
    older = [t for t in TARGETS.values() if not t.suffix and t.sm < tgt.sm]
    return older[-1].name
