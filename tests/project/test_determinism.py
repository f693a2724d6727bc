"""The same kernels give byte-identical PTX in fresh processes with different hash seeds."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import hashlib, sys
from ptxforge.dsl import kernels
from ptxforge.ptx import types as T
from ptxforge.dsl.builder import ModuleBuilder
from ptxforge.ptx.emit import emit
parts = [emit(kernels.saxpy(target="sm_90")), emit(kernels.block_reduce_sum(block=128)),
         emit(kernels.sgemm_tiled(tile=8), line_info=True), emit(kernels.modadd256())]
mb = ModuleBuilder()
f = mb.func("f", params=[("a", "u32"), ("b", "f32")], returns=[("r", "f32")])
f.set_return("r", f.fma(f.cvt(f.load_param("a"), T.f32), f.load_param("b"), 1.0))
k = mb.kernel("k")
k.st(k.load_param(k.param_ptr("o", T.f32)), k.call(f, k.tid(), 2.5))
parts.append(mb.ptx(line_info=True))
sys.stdout.write("\n".join(parts))
"""


def _run(seed: str) -> bytes:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, check=True,
                         capture_output=True)
    return out.stdout


def test_byte_identical_across_processes_and_hash_seeds():
    first, second = _run("0"), _run("4242")
    assert len(first) > 8_000
    assert hashlib.sha256(first).hexdigest() == hashlib.sha256(second).hexdigest()
    assert b".version 7.8" in first and b"fma.rn.f32" in first
