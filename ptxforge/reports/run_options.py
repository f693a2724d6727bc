"""How an analysis runs, not what it finds: progress callback, when to read the SASS, workers."""

from __future__ import annotations

from typing import Any, Callable, Optional

import attrs

from ptxforge.errors import PtxforgeError

from .kernel_pool import PARTS

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
    the module is big enough to gain; ``parts`` names the pieces of each kernel's PTX part
    computed up front, beside ptxas (some of :data:`~ptxforge.reports.kernel_pool.PARTS`:
    ``"mix"``, ``"pressure"``, ``"prediction"``; None: all); the others are computed when
    first read (``check`` reads only what its output prints); ``started`` is ptxas already
    started on the text by :func:`~ptxforge.reports.analyze_compile.start_early` (the CLI
    starts it before it imports the analysis), used when it was started on that very text and
    request.

    Example::

        >>> RunOptions(jobs=2).explain
        False
    """

    progress: Optional[Callable] = None
    explain: Optional[bool] = False
    jobs: Optional[int] = 1
    parts: Optional[tuple] = None
    started: Optional[Any] = None

    def __attrs_post_init__(self) -> None:
        if self.progress is not None and not callable(self.progress):
            raise PtxforgeError(f"RunOptions.progress: expected a callable progress(i, n, name) "
                                f"or None, got {type(self.progress).__name__}")
        if self.explain not in (True, False, None):
            raise PtxforgeError(f"RunOptions.explain: expected True, False or None, got "
                                f"{self.explain!r}")
        if self.jobs is not None and (isinstance(self.jobs, bool) or not isinstance(self.jobs, int)
                                      or self.jobs < 1):
            raise PtxforgeError(f"RunOptions.jobs: expected a worker count of 1 or more (None: "
                                f"the cores), got {self.jobs!r}")
        if self.parts is not None and (not isinstance(self.parts, tuple)
                                       or any(p not in PARTS for p in self.parts)):
            raise PtxforgeError(f"RunOptions.parts: expected None or a tuple of "
                                f"{', '.join(map(repr, PARTS))}, got {self.parts!r}")
        if self.started is not None and not callable(getattr(self.started, "serves", None)):
            raise PtxforgeError("RunOptions.started: expected what analyze_compile.start_early "
                                f"returned, or None, got {type(self.started).__name__}")
