"""GPU benchmark: ptxforge kernels against the hardware and against CUDA C++ (not a test).

Measured in one run on one device:

* device-to-device copy bandwidth (``cuMemcpyDtoDAsync``), the reference for memory-bound code;
* ptxforge ``saxpy`` and ``block_reduce_sum`` bandwidth as a fraction of it (goal: >= 90%);
* ptxforge ``sgemm_tiled`` against the same tiled algorithm written in CUDA C++, compiled by
  NVRTC and JIT-loaded through the same driver path (goal: within 5%).

Usage: ``python bench/bench_gpu.py [--quick]``.  Without a GPU it says so and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    import ptxforge  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ptxforge import ir, types
from ptxforge.device import gpu_unavailable_reason

# The same algorithm as ptxforge's sgemm_tiled: one thread per C element, TILE x TILE tiles of
# A and B staged through shared memory, one barrier after loading and one after using a tile.
SGEMM_CUDA = r"""
extern "C" __global__ void sgemm_tiled_cuda(const float* __restrict__ A,
                                            const float* __restrict__ B,
                                            float* __restrict__ C,
                                            unsigned M, unsigned N, unsigned K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned row = blockIdx.y * TILE + ty;
    unsigned col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
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


def _target_for(info) -> str:
    """The PTX target to build ptxforge kernels for on this device."""
    return info.target


def _build(factory, target, **kwargs):
    """Build a kernel for ``target``; fall back to sm_80 PTX if the builder rejects the target."""
    from ptxforge.errors import PtxforgeError

    try:
        return factory(target=target, **kwargs)
    except PtxforgeError:
        return factory(target="sm_80", **kwargs)


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

    from ptxforge import kernels
    from ptxforge.device import DeviceArray, check, device_info, driver
    from ptxforge.launch import load
    from ptxforge.timing import benchmark, time_launch

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
    results = {}

    # --- device-to-device copy ------------------------------------------------------------
    src = DeviceArray.from_host(rng.random(n, dtype=np.float32), opts.device)
    dst = DeviceArray.empty(n, np.float32, opts.device)

    def copy(stream):
        check(drv.cuMemcpyDtoDAsync(drv.CUdeviceptr(dst.ptr), drv.CUdeviceptr(src.ptr), nbytes,
                                    drv.CUstream(stream)), "cuMemcpyDtoDAsync")

    t_copy = benchmark(copy, warmup=3, repeat=repeat, device=opts.device, bytes=2 * nbytes,
                       label="D2D copy (read+write)")
    print(t_copy)

    # --- saxpy ----------------------------------------------------------------------------
    target = _target_for(info)
    saxpy = load(_build(kernels.saxpy, target), opts.device)["saxpy"]
    block = 256
    t_saxpy = time_launch(saxpy, n, 1.0001, src, dst, grid=(n + block - 1) // block, block=block,
                          repeat=repeat, bytes=3 * nbytes, label="ptxforge saxpy")
    print(t_saxpy)
    results["saxpy / copy bandwidth"] = (t_saxpy.gbps / t_copy.gbps, 0.90)

    # --- block reduction ------------------------------------------------------------------
    reduce_k = load(_build(kernels.block_reduce_sum, target, block=block), opts.device)["block_reduce_sum"]
    per_sm = reduce_k.max_active_blocks_per_sm(block)
    best = None
    for waves in (1, 2, 4):
        grid = max(info.multiprocessors * per_sm * waves, 1)
        out = DeviceArray.zeros(grid, np.float32, opts.device)
        t = time_launch(reduce_k, src, out, n, grid=grid, block=block, repeat=repeat,
                        bytes=nbytes + 4 * grid, label=f"ptxforge block_reduce_sum (grid {grid})")
        out.free()
        print(t)
        if best is None or t.median_ms < best.median_ms:
            best = t
    # the copy reads and writes; a reduction only reads, so compare with the copy's rate
    results["reduction / copy bandwidth"] = (best.gbps / t_copy.gbps, 0.90)
    src.free()
    dst.free()

    # --- sgemm: ptxforge vs CUDA C++ ------------------------------------------------------
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

    ours = load(_build(kernels.sgemm_tiled, target, tile=tile), opts.device)["sgemm_tiled"]
    t_ours = time_launch(ours, a_dev, b_dev, c1, m, n_, k, grid=grid, block=blk, repeat=repeat,
                         flops=flops, label="ptxforge sgemm_tiled")
    print(t_ours)

    how = "NVRTC PTX, driver JIT"
    try:
        ptx = nvrtc_compile(SGEMM_CUDA, target, (f"-DTILE={tile}",)).decode()
        theirs_mod = load(ptx, opts.device, signatures={"sgemm_tiled_cuda": SGEMM_CUDA_PARAMS})
    except Exception as exc:  # e.g. the driver is older than NVRTC's PTX ISA
        how = f"NVRTC cubin (PTX JIT failed: {str(exc).splitlines()[0]})"
        cubin = nvrtc_compile(SGEMM_CUDA, target, (f"-DTILE={tile}",), cubin=True)
        theirs_mod = load(cubin, opts.device, signatures={"sgemm_tiled_cuda": SGEMM_CUDA_PARAMS})
    theirs = theirs_mod["sgemm_tiled_cuda"]
    t_theirs = time_launch(theirs, a_dev, b_dev, c2, m, n_, k, grid=grid, block=blk,
                           repeat=repeat, flops=flops, label=f"CUDA C++ sgemm_tiled ({how})")
    print(t_theirs)
    print(f"registers: ptxforge {ours.num_regs}, CUDA C++ {theirs.num_regs}")
    same = np.allclose(c1.to_host(), c2.to_host(), rtol=1e-4, atol=1e-3)
    print(f"sgemm results agree: {same}")
    results["sgemm CUDA C++ time / ptxforge time"] = (t_theirs.median_ms / t_ours.median_ms, 0.95)
    for arr in (a_dev, b_dev, c1, c2):
        arr.free()

    print("\nratios (goal in brackets):")
    met = True
    for name, (ratio, goal) in results.items():
        status = "ok" if ratio >= goal else "BELOW GOAL"
        met &= ratio >= goal
        print(f"  {name:40s} {ratio:6.3f}  (>= {goal:.2f})  {status}")
    print("all goals met" if met and same else "some goals not met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
