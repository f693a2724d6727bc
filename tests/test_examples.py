"""The examples and the benchmark on a machine without a GPU: one clear line, exit status 0.

(On a GPU machine these are skipped; tests/test_gpu.py runs the examples and checks PASS.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ptxforge.device import gpu_unavailable_reason

ROOT = Path(__file__).resolve().parents[1]
NO_GPU = gpu_unavailable_reason()
pytestmark = pytest.mark.skipif(NO_GPU is None, reason="a GPU is present: tests/test_gpu.py runs the examples")


@pytest.mark.parametrize("script, entry", [("saxpy.py", "saxpy"),
                                           ("block_reduction.py", "block_reduce_sum"),
                                           ("sgemm.py", "sgemm_tiled"),
                                           ("modadd256.py", "modadd256")])
def test_example_without_gpu_explains_and_exits_zero(script, entry):
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout
    assert f"built {entry} (" in lines[0] and "bytes of PTX" in lines[0]
    assert "needs a GPU" in lines[0]
    assert proc.stderr == ""


def test_example_ptx_size_is_the_emitted_size():
    from ptxforge import emit, kernels

    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "saxpy.py")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    size = len(emit(kernels.saxpy(target="sm_80")))
    assert f"({size} bytes of PTX" in proc.stdout


def test_benchmark_without_gpu_explains_and_exits_zero():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_gpu.py"), "--quick"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("bench_gpu: needs an NVIDIA GPU and driver; not run here")
    assert len(proc.stdout.strip().splitlines()) == 1
