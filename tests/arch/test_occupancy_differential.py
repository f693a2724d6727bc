"""Differential test: the Python calculator against NVIDIA's cuda_occupancy.h, cell by cell."""

import itertools
import shutil
import subprocess
from pathlib import Path

import pytest

from ptxforge.arch.occupancy import ARCHS, occupancy


def _header():
    try:
        import nvidia
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        for rel in ("cu13/include/cuda_occupancy.h", "cuda_runtime/include/cuda_occupancy.h",
                    "cu12/include/cuda_occupancy.h"):
            p = Path(root) / rel
            if p.is_file():
                return p
    return None


HEADER = _header()
GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(
    HEADER is None or GXX is None,
    reason=f"needs cuda_occupancy.h (pip install nvidia-cuda-runtime; found: {HEADER}) "
           f"and g++ (found: {GXX})")

HARNESS = r"""
#include <cstdio>
#include <cstring>
#include <climits>
#include "cuda_occupancy.h"
int main() {
  int major, minor, thr_sm, smem_sm, optin, reserved;
  int regs, block, smem_static, smem_dyn, barriers, carveout, regs_block;
  while (scanf("%d %d %d %d %d %d %d %d %d %d %d %d %d", &major, &minor, &thr_sm, &smem_sm, &optin,
               &reserved, &regs, &block, &smem_static, &smem_dyn, &barriers, &carveout,
               &regs_block) == 13) {
    cudaOccDeviceProp p;
    p.computeMajor = major; p.computeMinor = minor;
    p.maxThreadsPerBlock = 1024; p.maxThreadsPerMultiprocessor = thr_sm;
    p.regsPerBlock = regs_block; p.regsPerMultiprocessor = 65536; p.warpSize = 32;
    p.sharedMemPerBlock = 48 * 1024; p.sharedMemPerMultiprocessor = smem_sm;
    p.numSms = 1; p.sharedMemPerBlockOptin = optin; p.reservedSharedMemPerBlock = reserved;
    cudaOccFuncAttributes a;
    a.maxThreadsPerBlock = 1024; a.numRegs = regs; a.sharedSizeBytes = smem_static;
    a.partitionedGCConfig = PARTITIONED_GC_OFF; a.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
    a.maxDynamicSharedSizeBytes = smem_dyn; a.numBlockBarriers = barriers;
    a.virtualResourceCount = 0;
    cudaOccDeviceState s;
    s.carveoutConfig = carveout;
    cudaOccResult r;
    memset(&r, 0, sizeof(r));
    cudaOccError e = cudaOccMaxActiveBlocksPerMultiprocessor(&r, &p, &a, &s, block, smem_dyn);
    printf("%d %d %d %d %d\n", (int)e, r.activeBlocksPerMultiprocessor, r.blockLimitRegs,
           r.blockLimitWarps, r.blockLimitSharedMem);
  }
  return 0;
}
"""

ARCH_KEYS = sorted(ARCHS)   # every compute capability the target registry has a table for
REGS = [0, 1, 16, 24, 32, 33, 40, 48, 51, 56, 64, 72, 80, 84, 96, 104, 128, 129, 168, 200, 255]
BLOCKS = [32, 64, 96, 128, 160, 192, 256, 384, 512, 640, 672, 704, 768, 1024]
SMEM = [(0, 0, 1), (4096, 0, 1), (0, 20000, 2), (40000, 0, 3), (0, 70000, 1)]
CARVEOUT = [-1, 50]


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    d = tmp_path_factory.mktemp("occ")
    (d / "h.cpp").write_text(HARNESS)
    subprocess.run([GXX, "-O1", "-std=c++11", f"-I{HEADER.parent}", str(d / "h.cpp"), "-o",
                    str(d / "h")], check=True, capture_output=True)
    return d / "h"


def test_grid_agrees_with_cuda_occupancy_h(harness):
    cases = list(itertools.product(ARCH_KEYS, REGS, BLOCKS, SMEM, CARVEOUT))
    assert {"5.0", "5.3", "6.0", "6.2", "7.0", "9.0", "12.1"} <= set(ARCH_KEYS)
    assert len(cases) >= 40000
    lines = []
    for key, regs, block, (st, dyn, bars), carve in cases:
        p = ARCHS[key]
        lines.append(f"{p.major} {p.minor} {p.max_threads_per_sm} {p.shared_per_sm} "
                     f"{p.shared_per_block_optin} {p.reserved_shared_per_block} {regs} {block} "
                     f"{st} {dyn} {bars} {carve} {p.regs_per_block}")
    out = subprocess.run([str(harness)], input="\n".join(lines) + "\n", capture_output=True,
                         text=True, check=True).stdout.split("\n")
    mismatches = []
    for case, row in zip(cases, out):
        err, blocks, lregs, lwarps, lsmem = map(int, row.split())
        assert err == 0, (case, row)
        key, regs, block, (st, dyn, bars), carve = case
        o = occupancy(regs, block, key, shared=st, dynamic_shared=dyn, barriers=bars,
                      carveout=None if carve < 0 else carve)
        mine = (o.active_blocks, o.limits["registers"], o.limits["warps"], o.limits["shared_memory"])
        if mine != (blocks, lregs, lwarps, lsmem):
            mismatches.append((case, mine, (blocks, lregs, lwarps, lsmem)))
    assert not mismatches, f"{len(mismatches)} of {len(cases)} cells differ, e.g. {mismatches[:5]}"
