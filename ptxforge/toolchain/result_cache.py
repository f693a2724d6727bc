"""ptxas's and nvdisasm's results kept on disk, so a second run on the same input skips them.

``ptxforge analyze``, ``report``, ``sass``, ``check`` and ``diff`` run ptxas on a PTX file and
nvdisasm on its cubin; on a file that has not changed since the last run both give the same
bytes again (they are deterministic for a given input), and on a small file nvdisasm alone
takes most of the time (its start-up: about 0.4 s for sm_80).  Like the driver's JIT cache,
this keeps each successful run's output, keyed by everything it depends on:

* ptxas: the PTX text, the executable (real path, size, modification time) and its arguments
  (the target, ``-O``, ``-lineinfo``, a register cap, ``-c``, ...), with the temporary file
  names left out; kept: the cubin and the log;
* nvdisasm: the cubin's bytes, the executable and the flags; kept: the listing.

A failed run (an error, a refusal, a crash) is never kept, so an error is always the tool's
own.  Entries live in ``$PTXFORGE_CACHE_DIR``, else ``$XDG_CACHE_HOME/ptxforge/results``, else
``~/.cache/ptxforge/results``, compressed; past ``$PTXFORGE_CACHE_MB`` (default 1024) the
least recently used go (looked at when a process first writes there, and again each time it
has written another sixteenth of the limit).  ``PTXFORGE_CACHE=off`` turns it off (every run runs the tools); a
folder that cannot be read or written is the same as no cache.  Removing the folder is
always safe.

Example::

    >>> key = digest("example", b"input")
    >>> len(key)
    64
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zlib
from typing import Optional, Union

__all__ = ["DIR_ENV", "ENV", "LIMIT_ENV", "digest", "enabled", "folder", "get", "identity",
           "load_ptxas", "ptxas_key", "put", "store_ptxas"]

#: ``off`` turns the cache off.
ENV = "PTXFORGE_CACHE"
#: Where the entries live (default: under the user's cache folder).
DIR_ENV = "PTXFORGE_CACHE_DIR"
#: The size in MiB past which the least recently used entries are removed.
LIMIT_ENV = "PTXFORGE_CACHE_MB"

_FORMAT = b"ptxforge-result-cache/1"
_DEFAULT_MB = 1024


def enabled() -> bool:
    """Whether results are kept and reused (``$PTXFORGE_CACHE`` is not ``off``)."""
    return os.environ.get(ENV, "").strip().lower() not in ("off", "0", "no", "false")


def folder() -> str:
    """The folder the entries live in."""
    chosen = os.environ.get(DIR_ENV)
    if chosen:
        return chosen
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ptxforge", "results")


def identity(exe: str) -> str:
    """An executable's real path, size and modification time (a replaced tool is a new key)."""
    st = os.stat(exe)
    return f"{os.path.realpath(exe)}|{st.st_size}|{st.st_mtime_ns}"


def digest(*parts: Union[str, bytes]) -> str:
    """The SHA-256 (hex) of ``parts``, each length-prefixed so no two lists of parts collide."""
    h = hashlib.sha256(_FORMAT)
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else bytes(part)
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _path(kind: str, key: str) -> str:
    return os.path.join(folder(), kind, key[:2], key)


def get(kind: str, key: str) -> Optional[bytes]:
    """The bytes kept for ``key`` (``kind``: ``ptxas`` or ``nvdisasm``), or None."""
    if not enabled():
        return None
    path = _path(kind, key)
    try:
        with open(path, "rb") as fh:
            data = zlib.decompress(fh.read())
        os.utime(path)          # recently used: the last to be removed
    except (OSError, zlib.error):
        return None
    return data


def put(kind: str, key: str, data: bytes) -> None:
    """Keep ``data`` for ``key``; a folder that cannot be written is ignored."""
    if not enabled():
        return
    path = _path(kind, key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        packed = zlib.compress(data, 1)
        with os.fdopen(fd, "wb") as fh:
            fh.write(packed)
        os.replace(tmp, path)   # whole or not at all, also with several processes writing
    except OSError:
        return
    _written_since_trim(len(packed))


#: Bytes this process has put in each folder since it last trimmed it (absent: never trimmed).
_WRITTEN: dict = {}


def _written_since_trim(size: int) -> None:
    """Trim the folder at this process's first put there, then once it has put another
    sixteenth of the limit: each trim walks the whole folder, too much for every put of a
    ``check`` over a build folder or a register-cap sweep."""
    where = folder()
    written = _WRITTEN.get(where)
    if written is not None and written + size < _limit() // 16:
        _WRITTEN[where] = written + size
        return
    _WRITTEN[where] = 0
    _trim()


def _limit() -> int:
    try:
        return max(1, int(os.environ.get(LIMIT_ENV, _DEFAULT_MB))) << 20
    except ValueError:
        return _DEFAULT_MB << 20


def _trim() -> None:
    """Remove the least recently used entries while the folder holds more than the limit."""
    entries = []
    for root, _dirs, files in os.walk(folder()):
        for name in files:
            path = os.path.join(root, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            entries.append((st.st_mtime_ns, st.st_size, path))
    total, limit = sum(e[1] for e in entries), _limit()
    for _time, size, path in sorted(entries):
        if total <= limit:
            break
        try:
            os.remove(path)
        except OSError:
            continue
        total -= size


def ptxas_key(exe: str, args: list, ptx: str) -> Optional[str]:
    """The key of a ptxas run (None when the executable cannot be looked at)."""
    try:
        return digest("ptxas", identity(exe), "\0".join(args), ptx)
    except OSError:
        return None


def load_ptxas(key: Optional[str]) -> Optional[tuple]:
    """``(cubin, log, wall seconds of the run that made it)`` kept for ``key``, or None."""
    data = get("ptxas", key) if key else None
    if data is None:
        return None
    head, _, cubin = data.partition(b"\n")
    try:
        meta = json.loads(head)
        return cubin, str(meta["log"]), float(meta["wall"])
    except (ValueError, KeyError, TypeError):
        return None


def store_ptxas(key: Optional[str], cubin: bytes, log: str, wall: float) -> None:
    """Keep a successful ptxas run's cubin and log for ``key``."""
    if key:
        put("ptxas", key, json.dumps({"log": log, "wall": wall}).encode("utf-8") + b"\n" + cubin)
