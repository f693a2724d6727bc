"""nvcc from the ``nvidia-cuda-nvcc`` wheel, run as a separate process: the reference figures
that ``.cu`` input is checked against (``nvcc -cubin -Xptxas -v`` with the same flags)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import tool_memo

from corpus_util import ptxas_stats

__all__ = ["nvcc_stats"]


def _nvcc() -> str:
    import nvidia

    for root in nvidia.__path__:
        for exe in sorted(Path(root).glob("cu*/bin/nvcc")):
            return str(exe)
    found = shutil.which("nvcc")
    if found is None:
        pytest.skip("no nvcc (the nvidia-cuda-nvcc wheel is a dependency)")
    return found


def nvcc_stats(path: Path, arch: str = "sm_80", flags: tuple = ()) -> dict:
    """``{kernel: registers, stack, spill_stores, spill_loads}`` from ``nvcc -cubin -Xptxas -v``
    (the log of a successful run is remembered by the tool memo, keyed by the source's
    content: see tool_memo.nvcc_run; the log is parsed every time)."""
    exe = _nvcc()

    def run() -> str:
        with tempfile.TemporaryDirectory() as tmp:   # not beside the sources: check reads those
            proc = subprocess.run([exe, "-cubin", f"-arch={arch}", "-lineinfo", "-Xptxas", "-v",
                                   *flags, str(path), "-o", str(Path(tmp) / "k.cubin")],
                                  capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout + proc.stderr

    stats = ptxas_stats(tool_memo.nvcc_run(exe, path, arch, tuple(flags), run))
    assert stats
    return stats
