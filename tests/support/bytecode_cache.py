"""Compiled bytecode for the test run even where ``PYTHONDONTWRITEBYTECODE`` is set.

A machine that sets ``PYTHONDONTWRITEBYTECODE=1`` (this project's does) makes every test
process compile every module it imports from source: each xdist worker spent about 11 s of
CPU collecting (ptxforge, the test modules' assertion rewriting), and every ``python -m
ptxforge`` child a test starts compiled the package again.  :func:`install` lets Python write
and read bytecode under a private prefix instead (:data:`sys.pycache_prefix`, so no
``__pycache__`` folder appears in the source tree), for this process and, through the
environment, for the xdist workers and the children the tests start.

* The cache lives in ``$PTXFORGE_PYCACHE`` if set, else ``$XDG_CACHE_HOME/ptxforge-pycache``,
  else ``~/.cache/ptxforge-pycache``; a ``PYTHONPYCACHEPREFIX`` the user set is kept.
* ``PTXFORGE_PYCACHE=off`` leaves the interpreter as the environment configured it.
* Bytecode is checked against its source's modification time and size (Python's default), and
  written through a temporary file and a rename, so concurrent workers are safe.
* Nothing a test checks changes: bytecode only replaces the compiling of the same source.

Example::

    >>> import bytecode_cache
    >>> bytecode_cache.prefix() is None or bytecode_cache.prefix().name != ""
    True
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["install", "prefix"]


def prefix() -> Path | None:
    """The folder bytecode goes to; None when the cache is off."""
    env = os.environ.get("PTXFORGE_PYCACHE")
    if env == "off":
        return None
    if env:
        return Path(env)
    if os.environ.get("PYTHONPYCACHEPREFIX"):
        return Path(os.environ["PYTHONPYCACHEPREFIX"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ptxforge-pycache"


def install() -> None:
    """Write and read bytecode under :func:`prefix` in this process and its children."""
    where = prefix()
    if where is None or not (sys.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE")):
        return  # off, or bytecode is written the ordinary way already
    sys.pycache_prefix = str(where)
    sys.dont_write_bytecode = False
    # the xdist workers (started after the conftest files load) and the tests' children
    os.environ["PYTHONPYCACHEPREFIX"] = str(where)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
