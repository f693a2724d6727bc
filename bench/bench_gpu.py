"""GPU benchmark: ptxforge kernels against the hardware and against CUDA C++ (not a test).

Measured in one run on one device:

* device-to-device copy bandwidth (``cuMemcpyDtoDAsync`` timed with CUDA events; read + write
  bytes, 2 x size), the reference for memory-bound code;
* ptxforge ``saxpy`` (3 x 4 x N bytes: x read, y read and written) and ``block_reduce_sum``
  (4 x N bytes read) bandwidth as a fraction of it (goal: >= 90%);
* ptxforge ``sgemm_tiled`` against the same tiled algorithm written in CUDA C++ and compiled by
  NVRTC (goal: ptxforge time <= 1.05 x CUDA C++ time).  Both are JIT-compiled by the same
  driver from PTX, so the same ptxas builds both.

Usage: ``python bench/bench_gpu.py [--quick]``.  Without a GPU it says so and exits 0.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

try:
    import ptxforge  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ptxforge.launch.device import gpu_unavailable_reason
from ptxforge.ptx import ir, types

# The same algorithm as ptxforge's sgemm_tiled, instruction for instruction in the PTX (pinned
# by tests/project/test_examples.py): one thread per C element, TILE x TILE tiles of A and B staged
# through shared memory with one barrier after loading and one after using a tile, the K loop
# kept rolled (`#pragma unroll 1` = ptxforge's `.pragma "nounroll"`), the TILE FMAs of a tile
# unrolled, plain (not `__restrict__`/.nc) global loads, and 256 threads per block at most
# (`__launch_bounds__`; ptxforge says `.reqntid 16, 16`).
SGEMM_CUDA = r"""
extern "C" __global__ void __launch_bounds__(TILE * TILE)
sgemm_tiled_cuda(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned row = blockIdx.y * TILE + ty;
    unsigned col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    #pragma unroll 1
    for (unsigned k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = A[row * K + k0 + tx];
        Bs[ty][tx] = B[(k0 + ty) * N + col];
        __syncthreads();
        #pragma unroll
        for (unsigned k = 0; k < TILE; ++k)
            acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();
    }
    C[row * N + col] = acc;
}
"""

SGEMM_CUDA_PARAMS = (
    ir.Param("A", types.u64, pointer=True), ir.Param("B", types.u64, pointer=True),
    ir.Param("C", types.u64, pointer=True), ir.Param("M", types.u32),
    ir.Param("N", types.u32), ir.Param("K", types.u32),
)

_VERSION_RE = re.compile(r"^\s*\.version\s+\d+\.\d+", re.MULTILINE)


def nvrtc_compile(source: str, arch: str, options: tuple = (), *, cubin: bool = False) -> bytes:
    """CUDA C++ → PTX (``compute_XX``) or cubin (``sm_XX``) with NVRTC; raise with its log."""
    from cuda.bindings import nvrtc

    def ok(result, what, prog=None):
        err, *values = result
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            log = ""
            if prog is not None:
                size = nvrtc.nvrtcGetProgramLogSize(prog)[1]
                buf = b" " * size
                nvrtc.nvrtcGetProgramLog(prog, buf)
                log = buf.decode(errors="replace")
            raise RuntimeError(f"NVRTC {what} failed ({err.name})\n{log}")
        return values[0] if len(values) == 1 else None

    prog = ok(nvrtc.nvrtcCreateProgram(source.encode(), b"sgemm_cuda.cu", 0, [], []), "create")
    try:
        number = arch.split("_", 1)[1]
        flags = [f"--gpu-architecture={'sm' if cubin else 'compute'}_{number}".encode(),
                 b"-default-device", *(o.encode() for o in options)]
        ok(nvrtc.nvrtcCompileProgram(prog, len(flags), flags), "compile", prog)
        if cubin:
            size = ok(nvrtc.nvrtcGetCUBINSize(prog), "size")
            buf = b" " * size
            ok(nvrtc.nvrtcGetCUBIN(prog, buf), "get cubin")
            return buf
        size = ok(nvrtc.nvrtcGetPTXSize(prog), "size")
        buf = b" " * size
        ok(nvrtc.nvrtcGetPTX(prog, buf), "get ptx")
        return buf.rstrip(b"\0 ")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def sgemm_cuda_ptx(target: str, tile: int) -> str:
    """The CUDA C++ SGEMM as NVRTC's PTX for ``target``."""
    return nvrtc_compile(SGEMM_CUDA, target, (f"-DTILE={tile}",)).decode()


def with_ptx_version(ptx: str, like: str) -> str:
    """``ptx`` with the ``.version`` line of ``like`` (NVRTC writes its own toolkit's ISA
    version, which an older driver's JIT refuses even when no newer feature is used)."""
    version = _VERSION_RE.search(like)
    return _VERSION_RE.sub(version.group(0).strip(), ptx, count=1) if version else ptx


def _build(factory, target, **kwargs):
    """Build a kernel for ``target``; fall back to sm_80 PTX if the builder rejects the target."""
    from ptxforge.errors import PtxforgeError

    try:
        return factory(target=target, **kwargs)
    except PtxforgeError:
        return factory(target="sm_80", **kwargs)


def _better(a, b):
    return a if b is None or a.median_ms <= b.median_ms else b


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller problems, fewer runs")
    parser.add_argument("--device", type=int, default=0)
    opts = parser.parse_args(argv)

    reason = gpu_unavailable_reason(opts.device)
    if reason is not None:
        print(f"bench_gpu: needs an NVIDIA GPU and driver; not run here ({reason.splitlines()[0]})")
        return 0

    import numpy as np

    from ptxforge import emit
    from ptxforge.dsl import kernels
    from ptxforge.errors import DeviceError
    from ptxforge.launch.device import DeviceArray, check, device_info, driver
    from ptxforge.launch.loader import load
    from ptxforge.launch.args import LaunchConfig
    from ptxforge.launch.timing import benchmark, time_launch

    info = device_info(opts.device)
    drv = driver()
    print(f"device {opts.device}: {info.name}, {info.target}, {info.multiprocessors} SMs, "
          f"driver CUDA {info.driver_cuda_version[0]}.{info.driver_cuda_version[1]}, "
          f"L2 {info.l2_cache_bytes >> 20} MiB")
    repeat = 10 if opts.quick else 30
    # Arrays well beyond L2 so bandwidth is DRAM bandwidth.
    n = (1 << 24) if opts.quick else max(1 << 26, 8 * info.l2_cache_bytes // 4)
    nbytes = 4 * n
    rng = np.random.default_rng(0)
    results = []   # (name, value, goal, higher is better)

    # --- device-to-device copy ------------------------------------------------------------
    src = DeviceArray.from_host(rng.random(n, dtype=np.float32), opts.device)
    dst = DeviceArray.zeros(n, np.float32, opts.device)

    def copy(stream):
        check(drv.cuMemcpyDtoDAsync(drv.CUdeviceptr(dst.ptr), drv.CUdeviceptr(src.ptr), nbytes,
                                    drv.CUstream(stream)), "cuMemcpyDtoDAsync")

    t_copy = benchmark(copy, warmup=3, repeat=repeat, device=opts.device, bytes=2 * nbytes,
                       label="D2D copy (read+write)")
    print(t_copy)

    # --- saxpy ----------------------------------------------------------------------------
    target = info.target
    saxpy = load(_build(kernels.saxpy, target), opts.device)["saxpy"]
    block = 256
    t_saxpy = time_launch(saxpy, n, 1.0001, src, dst,
                          config=LaunchConfig(grid=(n + block - 1) // block, block=block),
                          repeat=repeat, bytes=3 * nbytes, label="ptxforge saxpy")
    print(t_saxpy)
    results.append(("saxpy GB/s / copy GB/s", t_saxpy.gbps / t_copy.gbps, 0.90, True))

    # --- block reduction ------------------------------------------------------------------
    reduce_k = load(_build(kernels.block_reduce_sum, target, block=block), opts.device)["block_reduce_sum"]
    per_sm = reduce_k.max_active_blocks_per_sm(block)
    best = None
    for waves in (1, 2, 4):
        grid = max(info.multiprocessors * per_sm * waves, 1)
        with DeviceArray.zeros(grid, np.float32, opts.device) as out:
            t = time_launch(reduce_k, src, out, n, config=LaunchConfig(grid=grid, block=block),
                            repeat=repeat,
                            bytes=nbytes + 4 * grid, label=f"ptxforge block_reduce_sum (grid {grid})")
        print(t)
        best = _better(t, best)
    # the copy reads and writes; a reduction only reads: both are bytes moved per second
    results.append(("reduction GB/s / copy GB/s", best.gbps / t_copy.gbps, 0.90, True))
    src.free()
    dst.free()

    # --- sgemm: ptxforge vs CUDA C++, both JIT-compiled by this driver from PTX ------------
    tile = 16
    size = 1024 if opts.quick else 4096
    m = n_ = k = size
    a = rng.random((m, k), dtype=np.float32)
    b = rng.random((k, n_), dtype=np.float32)
    a_dev, b_dev = DeviceArray.from_host(a, opts.device), DeviceArray.from_host(b, opts.device)
    c1 = DeviceArray.zeros((m, n_), np.float32, opts.device)
    c2 = DeviceArray.zeros((m, n_), np.float32, opts.device)
    flops = 2 * m * n_ * k
    grid, blk = (n_ // tile, m // tile), (tile, tile)

    ours_module = _build(kernels.sgemm_tiled, target, tile=tile)
    ours = load(ours_module, opts.device)["sgemm_tiled"]
    ptx = sgemm_cuda_ptx(target, tile)
    how = "NVRTC PTX, driver JIT"
    try:
        theirs_mod = load(ptx, opts.device, signatures={"sgemm_tiled_cuda": SGEMM_CUDA_PARAMS})
    except DeviceError as exc:
        if getattr(exc, "cuda_error", "") != "CUDA_ERROR_UNSUPPORTED_PTX_VERSION":
            raise
        ptx = with_ptx_version(ptx, emit(ours_module))
        how = f"NVRTC PTX at ptxforge's {_VERSION_RE.search(ptx).group(0).strip()}, driver JIT"
        theirs_mod = load(ptx, opts.device, signatures={"sgemm_tiled_cuda": SGEMM_CUDA_PARAMS})
    theirs = theirs_mod["sgemm_tiled_cuda"]
    t_ours = t_theirs = None
    for _ in range(2):                  # alternate, keep each one's better median
        t_ours = _better(time_launch(ours, a_dev, b_dev, c1, m, n_, k,
                                     config=LaunchConfig(grid=grid, block=blk),
                                     repeat=repeat, flops=flops, label="ptxforge sgemm_tiled"), t_ours)
        t_theirs = _better(time_launch(theirs, a_dev, b_dev, c2, m, n_, k,
                                       config=LaunchConfig(grid=grid, block=blk),
                                       repeat=repeat, flops=flops,
                                       label=f"CUDA C++ sgemm_tiled ({how})"), t_theirs)
    print(t_ours)
    print(t_theirs)
    print(f"registers: ptxforge {ours.num_regs}, CUDA C++ {theirs.num_regs}")
    r1, r2 = c1.to_host(), c2.to_host()
    rows = rng.choice(m, size=min(m, 64), replace=False)   # a float64 reference for some rows
    ref = a[rows].astype(np.float64) @ b.astype(np.float64)
    bound = k * np.finfo(np.float32).eps * (np.abs(a[rows]).astype(np.float64) @ np.abs(b))
    within = all(bool(np.all(np.abs(r[rows] - ref) <= bound)) for r in (r1, r2))
    same = within and bool(np.allclose(r1, r2, rtol=1e-5, atol=0))
    print(f"sgemm results agree: {same} (both within K*eps*(|A|@|B|) of float64 on {len(rows)} "
          f"rows: {within}; bit-identical: {bool(np.array_equal(r1, r2))})")
    results.append(("sgemm ptxforge time / CUDA C++ time", t_ours.median_ms / t_theirs.median_ms,
                    1.05, False))
    for arr in (a_dev, b_dev, c1, c2):
        arr.free()

    print("\nratios (goal in brackets):")
    met = True
    for name, ratio, goal, higher in results:
        good = ratio >= goal if higher else ratio <= goal
        met &= good
        print(f"  {name:40s} {ratio:6.3f}  ({'>=' if higher else '<='} {goal:.2f})  "
              f"{'ok' if good else 'MISSED'}")
    print("all goals met" if met and same else "some goals not met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
