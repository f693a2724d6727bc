"""Expected values computed without the code under test, for the CLI and report tests.

``ptxas_v`` runs the ptxas executable as its own process and reads its ``-v`` log with the
tests' parser (corpus_util.ptxas_stats), not ptxforge's compile path.  ``blocks_per_sm`` works
out resident blocks per SM from the CUDA C++ Programming Guide's per-compute-capability limits
(typed in here, as in tests/arch/test_occupancy_published.py) and the occupancy calculator's
published allocation rules, not from ptxforge.arch.occupancy:

* warps: ``floor(max warps per SM / warps per block)``; blocks: the resident-block limit;
* registers: ``regs * 32`` rounded up to 256 per warp, allocated in each of the SM's 4
  sub-partitions (``regs per SM / 4`` each), a block's warps spread over them;
* shared memory: the block's bytes plus 1 KB the system reserves per block (8.0 and newer),
  rounded up to 128 bytes, against the largest carveout.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from corpus_util import ptxas_stats

__all__ = ["PUBLISHED", "blocks_per_sm", "ptxas_v"]

KB = 1024
#: cc: (max threads / SM, max resident blocks / SM, registers / SM, shared memory / SM in KB)
PUBLISHED = {
    "8.0": (2048, 32, 65536, 164),
    "8.6": (1536, 16, 65536, 100),
    "8.9": (1536, 24, 65536, 100),
    "9.0": (2048, 32, 65536, 228),
}


def _up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def blocks_per_sm(regs: int, block: int, arch: str = "sm_80", shared: int = 0,
                  max_threads: "int | None" = None) -> tuple[int, tuple]:
    """(resident blocks per SM, the limits that bind in ptxforge's vocabulary)."""
    cc = f"{arch[3:-1]}.{arch[-1]}"
    threads, max_blocks, regs_sm, smem_kb = PUBLISHED[cc]
    if max_threads is not None and block > max_threads:
        return 0, ("block",)
    warps = -(-block // 32)
    limits = {"warps": (threads // 32) // warps, "blocks": max_blocks}
    per_warp = _up(max(regs, 1) * 32, 256)
    per_sub = (regs_sm // 4) // per_warp
    limits["registers"] = per_sub * 4 // warps if per_warp * _up(warps, 4) <= regs_sm else 0
    per_block = _up(shared + KB, 128)
    limits["shared_memory"] = (smem_kb * KB) // per_block
    best = min(limits.values())
    order = ("warps", "registers", "shared_memory", "blocks")
    return best, tuple(k for k in order if limits[k] == best)


def ptxas_v(ptx: str, arch: str = "sm_80") -> dict:
    """{kernel: registers, stack, spill_stores, spill_loads} from ``ptxas -v`` run on its own."""
    from ptxforge.toolchain.backends import PtxasBackend

    exe = PtxasBackend().for_target(arch)
    assert exe is not None, f"no ptxas executable accepts {arch}"
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_text(ptx)
        proc = subprocess.run([exe.path, f"-arch={arch}", "-v", str(src), "-o", str(out)],
                              capture_output=True, text=True, check=True)
    return ptxas_stats(proc.stdout + proc.stderr)
