"""The package type-checks clean: ``python -m mypy`` (pyproject.toml's settings) finds nothing.

``[tool.mypy]`` names the package and turns on ``check_untyped_defs``.  This is how the type
checker runs in CI (``.ci/run`` runs the test suite).  Skipped, with the reason, only where
mypy is not installed (it is in the ``test`` extra).

mypy's incremental cache lives beside the test corpus cache (``mypy/`` under
:func:`kernel_corpus.cache_dir`), not in the checkout, so a fresh clone does not type-check
the standard library and the third-party stubs again (15 s of CPU cold, under 2 s warm, measured
2026-11-27); mypy checks every cached module against its source (path, size, time, hash) and
re-checks what changed.  ``PTXFORGE_TOOL_CACHE=off`` or ``memory``: the checkout's own
``.mypy_cache`` as before.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (pip install -e '.[test]')")
def test_package_type_checks_clean() -> None:
    from kernel_corpus import cache_dir

    shared = os.environ.get("PTXFORGE_TOOL_CACHE", "disk").strip().lower() not in ("off",
                                                                                  "memory")
    cache = ["--cache-dir", str(cache_dir() / "mypy")] if shared else []
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--no-color-output", "--no-error-summary", *cache],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert proc.returncode == 0 and not errors, (
        f"mypy reports {len(errors)} error(s) (exit {proc.returncode}):\n"
        + (proc.stdout + proc.stderr).strip())
