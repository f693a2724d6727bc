"""The package type-checks clean: ``python -m mypy`` (pyproject.toml's settings) finds nothing.

``[tool.mypy]`` names the package and turns on ``check_untyped_defs``.  This is how the type
checker runs in CI (``.ci/run`` runs the test suite).  Skipped, with the reason, only where
mypy is not installed (it is in the ``test`` extra).
"""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (pip install -e '.[test]')")
def test_package_type_checks_clean() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--no-color-output", "--no-error-summary"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert proc.returncode == 0 and not errors, (
        f"mypy reports {len(errors)} error(s) (exit {proc.returncode}):\n"
        + (proc.stdout + proc.stderr).strip())
