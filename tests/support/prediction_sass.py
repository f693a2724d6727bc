"""What the prediction tests compare with: ptxas's count and the SASS liveness of a PTX text,
and the prediction's scheduled peak (what it says SASS holds at once).

Example::

    >>> callable(compiled) and callable(scheduled)
    True
"""

from __future__ import annotations

import pathlib
import subprocess
import tempfile

from ptxforge.toolchain.sass import sass_liveness

__all__ = ["compiled", "scheduled"]


def compiled(ptx: str) -> tuple[dict, object]:
    """({kernel: ptxas's count}, the SASS liveness) of ``ptx`` (whole-program, sm_80)."""
    from kernel_corpus import corpus_ptxas
    from prediction_variants import _ptxas

    exe, _ = corpus_ptxas()
    with tempfile.TemporaryDirectory() as d:
        src, out = pathlib.Path(d) / "k.ptx", pathlib.Path(d) / "k.cubin"
        src.write_text(ptx)
        subprocess.run([exe, "-arch=sm_80", str(src), "-o", str(out)], check=True,
                       capture_output=True, timeout=300)
        return _ptxas(ptx, "sm_80"), sass_liveness(out, line_info=False)


def scheduled(p) -> int:
    """The prediction's scheduled peak: what it says SASS holds at once, R1 not counted."""
    return sum(p.component(n).registers for n in ("ptx live", "no-register values",
                                                   "scheduling"))
