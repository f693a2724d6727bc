"""Work split over worker processes, the results in the order given: every command's ``--jobs``.

:func:`ordered_map` runs a module-level function over items in ``jobs`` forked workers (in this
process when ``jobs`` is 1, when there is one item, or where ``fork`` is missing), so the
output is the same bytes for every ``jobs``.  The function should return its errors as values:
an exception raised in a worker reaches the caller only as well as it pickles.

Example::

    >>> ordered_map(abs, [-3, 1, -2], jobs=2)
    [3, 1, 2]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Optional

__all__ = ["default_jobs", "kernel_jobs", "ordered_imap", "ordered_map", "can_fork"]


def default_jobs() -> int:
    """The default ``--jobs``: the cores this process may run on.

    Example::

        >>> default_jobs() >= 1
        True
    """
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def kernel_jobs(jobs: Optional[int], compiling: bool) -> int:
    """The processes that analyse one file's kernels: ``jobs`` as given, else the cores, less
    the one the compiler runs on (ptxas, then nvdisasm) where the file is compiled beside the
    analysis: on two cores a second analysing process only competes with ptxas.

    Example::

        >>> kernel_jobs(3, True), kernel_jobs(None, False) == default_jobs()
        (3, True)
    """
    if jobs is not None:
        return jobs
    return max(1, default_jobs() - (1 if compiling else 0))


def can_fork() -> bool:
    """Whether worker processes can be forked here (and this is not one already: a pool's
    workers are daemons, which may not have children of their own)."""
    import multiprocessing   # imported when a command may use workers: start-up stays small

    return ("fork" in multiprocessing.get_all_start_methods()
            and not multiprocessing.current_process().daemon)


def ordered_map(fn: Callable, items: Iterable, jobs: Optional[int] = None) -> list:
    """``[fn(x) for x in items]``, computed by ``jobs`` worker processes (None: the cores)."""
    items = list(items)
    jobs = min(default_jobs() if jobs is None else jobs, len(items))
    if jobs <= 1 or not can_fork():
        return [fn(x) for x in items]
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        return pool.map(fn, items, chunksize=1)


def ordered_imap(fn: Callable, items: Iterable, jobs: Optional[int] = None) -> Iterator:
    """:func:`ordered_map` as a generator: each result is yielded, in the order given, as soon
    as it and those before it are ready (a report over hundreds of files writes each page as it
    comes instead of all at the end).

    Example::

        >>> list(ordered_imap(abs, [-3, 1, -2], jobs=2))
        [3, 1, 2]
    """
    items = list(items)
    jobs = min(default_jobs() if jobs is None else jobs, len(items))
    if jobs <= 1 or not can_fork():
        yield from (fn(x) for x in items)
        return
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        yield from pool.imap(fn, items, chunksize=1)
