"""What ptxforge learned about a compiler executable (its version, the targets it takes), remembered on disk.

Each run of ``ptxforge`` used to ask every ptxas it found for ``--version`` and the chosen one
whether it takes the target: five or six child processes before the compile, more than a
small file's analysis costs.  :func:`remembered` keeps such a fact in a JSON file under the
user's cache folder (``$XDG_CACHE_HOME/ptxforge/tool_facts.json``, else
``~/.cache/ptxforge/``), keyed by the executable's real path, size and modification time, so
a replaced or upgraded executable is asked again.  ``PTXFORGE_TOOL_FACTS=off`` keeps
nothing on disk; a cache that cannot be read or written is ignored.

Example::

    >>> remembered("/bin/true", "probe", lambda: 42) if os.path.exists("/bin/true") else 42
    42
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["ENV", "cache_file", "forget", "remembered"]

#: ``off`` keeps the facts in this process only.
ENV = "PTXFORGE_TOOL_FACTS"
_VERSION = 1
_lock = threading.Lock()
_facts: dict | None = None


def cache_file() -> str:
    """Where the facts are kept."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ptxforge", "tool_facts.json")


def _load() -> dict:
    global _facts
    if _facts is None:
        _facts = {}
        if os.environ.get(ENV, "").lower() != "off":
            try:
                with open(cache_file(), encoding="utf-8") as fh:
                    data = json.load(fh)
                if isinstance(data, dict) and data.get("version") == _VERSION:
                    _facts = dict(data.get("facts", {}))
            except (OSError, ValueError):
                pass
    return _facts


def _save(facts: dict) -> None:
    if os.environ.get(ENV, "").lower() == "off":
        return
    for key in [k for k in facts if not os.path.exists(k.split("|", 1)[0])]:
        del facts[key]   # executables that are gone (a temporary folder's) are forgotten
    path = cache_file()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"version": _VERSION, "facts": facts}, fh, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass


def remembered(exe: str, what: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` (a JSON value) for the fact ``what`` about executable ``exe``, from the
    cache when this exact file (path, size, modification time) was asked before."""
    try:
        st = os.stat(exe)
        key = f"{os.path.realpath(exe)}|{st.st_size}|{st.st_mtime_ns}|{what}"
    except OSError:
        return compute()
    with _lock:
        facts = _load()
        if key in facts:
            return facts[key]
    value = compute()
    with _lock:
        facts = _load()
        facts[key] = value
        _save(facts)
    return value


def forget() -> None:
    """Drop what this process read from the cache file (it is read again when next asked)."""
    global _facts
    with _lock:
        _facts = None
