"""Every module of the ptxforge package, by dotted name, with its file (for whole-package tests)."""

from __future__ import annotations

import pathlib

import ptxforge

PACKAGE = pathlib.Path(ptxforge.__file__).resolve().parent


def package_modules() -> dict[str, pathlib.Path]:
    """``{"ptxforge.ptx.ir": Path(...), ...}``; a package is named by its ``__init__``."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ("ptxforge",) + path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out
