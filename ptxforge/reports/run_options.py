"""How an analysis runs, not what it finds: a progress callback, when to read the SASS, worker processes."""

from __future__ import annotations

from typing import Callable, Optional

import attrs

__all__ = ["RunOptions"]


@attrs.frozen(slots=True, kw_only=True)
class RunOptions:
    """How an analysis runs, not what it finds (the result is the same for every value).

    ``progress(i, n, name)`` is called before each of several kernels (the CLI's progress
    line on a terminal); ``explain=True`` reads the SASS as soon as ptxas is done (for
    callers that read every gap, e.g. JSON), ``None`` when at most
    :data:`~ptxforge.reports.analyze_text.SUMMARY_ABOVE` kernels are analysed (the text
    report then prints every gap), ``False`` only when a gap is first read; ``jobs`` above 1
    (None: the cores) analyses the kernels in worker processes (:mod:`.kernel_pool`) when
    the module is big enough to gain.

    Example::

        >>> RunOptions(jobs=2).explain
        False
    """

    progress: Optional[Callable] = None
    explain: Optional[bool] = False
    jobs: Optional[int] = 1
