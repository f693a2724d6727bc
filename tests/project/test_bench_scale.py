"""The scale benchmark's own machinery (bench/scale/): its corpus sources and its measurements.

The benchmark itself is not run here (it times; tests do not); these check what it relies on:
the class definitions hold what the benchmark says they hold, a small unit compiles to the size
the small class promises, and the child runner reports exit status, kills at the timeout and sees
memory held by a grandchild.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "bench") not in sys.path:
    sys.path.insert(0, str(ROOT / "bench"))

from scale.measure import run_timed
from scale.sources import many_sources, small_sources

_INST = re.compile(r"^template __global__ void (\w+)<(.*)>\(", re.MULTILINE)


def test_many_kernel_file_has_256_distinct_instantiations():
    (src,) = many_sources().values()
    insts = _INST.findall(src)
    assert len(insts) == 256
    assert len(set(insts)) == 256
    assert {name for name, _ in insts} == {"axpy_k", "stencil_k", "reduce_k", "poly_k"}


def test_small_folder_has_120_units_and_4_globals_only_files():
    srcs = small_sources()
    units = [s for name, s in srcs.items() if name.startswith("unit_")]
    globs = [s for name, s in srcs.items() if name.startswith("globals_")]
    assert len(units) == 120 and len(globs) == 4
    assert all("__global__" in s for s in units)
    assert not any("__global__" in s for s in globs)


def test_small_units_compile_to_5_to_20_kb_of_ptx():
    pytest.importorskip("cuda.bindings.nvrtc")
    from scale.corpus import include_dirs, nvrtc_compile

    srcs = small_sources()
    inc = include_dirs()
    # the fewest kernels (4 templated, int) and the most (8 templated and the shared-memory pair)
    sizes = {name: len(nvrtc_compile(srcs[name], name, inc)) for name in ("unit_010", "unit_003")}
    assert all(5_000 <= s <= 20_000 for s in sizes.values()), sizes


def test_run_timed_reports_exit_status_and_kills_at_the_timeout():
    ok = run_timed([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert ok.rc == 3 and not ok.timed_out
    slow = run_timed([sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5)
    assert slow.timed_out and slow.rc != 0
    assert slow.seconds < 30


def test_run_timed_sees_memory_a_grandchild_holds():
    # the child stays small; its child touches 200 MB and holds it for a second
    grand = "b = b'x' * (200 * 2**20); import time; time.sleep(1.0)"
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {grand!r}])"
    run = run_timed([sys.executable, "-c", child], timeout=60, sample_tree=True)
    assert run.rc == 0
    assert run.tree_rss >= 200 * 2**20
    assert run.max_rss >= 200 * 2**20       # wait4 folds the reaped grandchild's peak in
