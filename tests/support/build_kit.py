"""Builds of real kernels on disk for the ``check`` and ``diff`` tests (NVRTC, with -lineinfo).

``write_build(dir)`` writes the PTX of corpus sources (``pressure.cu``: a kernel that spills
under ``__maxnreg__(32)`` and one that does not; ``templates.cu``: mangled template kernels)
and the hand-written ``local_array.ptx`` (a 256-byte local array: stack, no line info).
``first_loc(ptx, kernel)`` reads the kernel's first ``.loc`` with a regex of its own, apart
from ptxforge's parser, so the tests check the parser's attribution against it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from corpus_util import corpus_ptx

__all__ = ["DATA", "analyze_json", "first_loc", "write_build"]

DATA = Path(__file__).parents[1] / "data"


def write_build(directory: Path, sources=("pressure", "templates"), local_array: bool = True,
                arch: str = "sm_80") -> Path:
    """Write ``NAME.ptx`` for each corpus source (and ``local_array.ptx``) into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in sources:
        (directory / f"{name}.ptx").write_text(corpus_ptx(name, arch, lineinfo=True))
    if local_array:
        shutil.copy(DATA / "ptx" / "local_array.ptx", directory / "local_array.ptx")
    return directory


def first_loc(ptx: str, kernel: str) -> tuple:
    """``(file path, line)`` of the first ``.loc`` after ``.entry kernel`` in PTX text."""
    files = {int(m.group(1)): m.group(2)
             for m in re.finditer(r'^\s*\.file\s+(\d+)\s+"([^"]+)"', ptx, re.M)}
    start = re.search(rf"\.entry\s+{re.escape(kernel)}\b", ptx).end()
    m = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)", re.M).search(ptx, start)
    return files[int(m.group(1))], int(m.group(2))


def analyze_json(capsys, path, *extra) -> dict:
    """``{kernel: its JSON}`` from ``ptxforge analyze PATH --json``."""
    from ptxforge.cli import main

    assert main(["analyze", str(path), "--json", *map(str, extra)]) == 0
    out = json.loads(capsys.readouterr().out)
    return {k["name"]: k for k in out["kernels"]}
