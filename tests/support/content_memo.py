"""Results of slow, deterministic test-side computations (a reference implementation, the
generator's catalogue probe), remembered on disk, keyed by the code that computes them.

The key of an entry is the SHA-256 of

* every source file of the ``ptxforge`` package under test (path and text, read once per
  session: any change to the package makes every entry stale) and where the package lives
  (another checkout of the same code has entries of its own, since a result may quote its
  paths, as the catalogue probe's refusals do; a caller whose result cannot quote a path,
  such as the list-scheduler reference's positions and peak, passes ``located=False`` and
  shares its entries with every checkout of the same code: a fresh clone reads them),
* the text of the test-support files the caller names (the reference implementation itself),
* the caller's own key parts (its input: a PTX text, a kernel name, a budget).

So an entry is reused only when the code and the input are what produced it; the result of a
pure function of those is what the function would return again.  The entries live beside the
tool memo, under ``memo/`` of the corpus cache (:func:`kernel_corpus.cache_dir`);
``PTXFORGE_TOOL_CACHE=off`` (or ``memory``) turns the disk off here too: every call computes.

Example::

    >>> import content_memo
    >>> content_memo.remembered("doctest", ("x", 1), lambda: [1, 2]) == [1, 2]
    True
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

__all__ = ["identity", "install", "package_digest", "remembered", "stats"]

_FORMAT = "cm1"          # bump to ignore every entry on disk
_SUPPORT = Path(__file__).resolve().parent
_STATS = {"computed": 0, "hits": 0}


def stats() -> dict:
    """How many results this session computed and how many the disk answered."""
    return dict(_STATS)


@functools.cache
def package_digest(located: bool = True) -> str:
    """:func:`tree_digest` of the imported ``ptxforge`` package."""
    import ptxforge

    return tree_digest(Path(ptxforge.__file__).resolve().parent, located)


def tree_digest(root: Path, located: bool = True) -> str:
    """The SHA-256 of every ``.py`` file in the folder ``root`` (path in it, text) and, with
    ``located``, of where ``root`` is."""
    h = hashlib.sha256(_FORMAT.encode())
    if located:
        h.update(str(root).encode() + b"\0")   # results may quote it (an error's file:line)
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


@functools.cache
def _support_digest(names: tuple) -> str:
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode() + b"\0" + (_SUPPORT / name).read_bytes() + b"\0")
    return h.hexdigest()


def identity(path) -> tuple:
    """What the executable at ``path`` is: its path, size and modification time."""
    st = os.stat(path)
    return (os.path.abspath(path), st.st_size, st.st_mtime_ns)


def _enabled() -> bool:
    return os.environ.get("PTXFORGE_TOOL_CACHE", "disk").strip().lower() not in ("off",
                                                                                 "memory")


def _folder() -> Path:
    from kernel_corpus import cache_dir

    return cache_dir() / "memo"


def remembered(namespace: str, parts: tuple, compute, *, support: tuple = (),
               package: bool = True, located: bool = True):
    """``compute()``'s JSON-able result, from disk when the package, the ``support`` files
    (names in tests/support) and ``parts`` are those of a remembered run, else computed
    and stored.  ``parts`` must be made of str, bytes, int, float, bool, None and tuples.
    ``package=False``: the result does not depend on ptxforge (a compiler's output, keyed
    by the compiler's identity and its input in ``parts``); ``located=False``: the result
    cannot quote the package's paths, so the key has the package's files and not where they
    are; a raising ``compute`` stores nothing."""
    if not _enabled():
        _STATS["computed"] += 1
        return compute()
    h = hashlib.sha256(_FORMAT.encode())
    code = package_digest(located) if package else "-"
    for part in (namespace, code, _support_digest(tuple(support)), *parts):
        h.update(b"\0")
        h.update(part if isinstance(part, bytes) else repr(part).encode())
    path = _folder() / namespace / f"{h.hexdigest()[:40]}.json"
    try:
        value = json.loads(path.read_text())["value"]
        _STATS["hits"] += 1
        return value
    except (OSError, ValueError, KeyError, TypeError):
        pass
    value = compute()
    _STATS["computed"] += 1
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"value": value}, f)
        os.replace(tmp, path)
    except OSError:
        pass
    return value


def install() -> None:
    """Remember the generator's catalogue probe (``ptxforge.testing.ops._probe``: which of
    the ~1,800 catalogue entries the builder accepts on a target, about a second of building
    per target and session) like any other result here (idempotent)."""
    from ptxforge.testing import ops

    original = ops._probe
    if getattr(original, "_content_memo", False):
        return

    @functools.cache
    def _probe(target: str) -> tuple:
        ok, excluded = remembered("catalogue-probe", (target,),
                                  lambda: [list(x) for x in original(target)])
        return tuple(ok), tuple((key, why) for key, why in excluded)

    _probe._content_memo = True  # type: ignore[attr-defined]
    _probe.original = original  # type: ignore[attr-defined]
    ops._probe = _probe
