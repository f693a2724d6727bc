"""Nsight Compute against the interpreter's profile, on the kernels of tests/support/memory_kernels.py.

On a machine with a GPU, nvcc and ncu::

    python bench/ncu_memory.py --write m.cu        # the kernels and a host program
    nvcc -arch=sm_90 -lineinfo -o m m.cu
    ncu --csv --metrics $(python bench/ncu_memory.py --metrics) ./m > ncu.csv

Then, anywhere: ``python bench/ncu_memory.py --compare ncu.csv`` profiles the same launches on
the interpreter (ptxforge.launch.profile_kernel, sm_80 PTX from NVRTC) and prints both per
kernel and metric.  Not a test: it needs a GPU and Nsight Compute's counters.  One H100
measurement is kept in tests/launch/data/ncu_memory_h100.csv, which
tests/launch/test_profile.py compares with the interpreter (docs/memory.md).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT))

METRICS = ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
           "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
           "smsp__sass_average_branch_targets_threads_uniform.pct")

#: name, grid, block, arguments (f32[N] arrays filled 0, 1, 2, ... or ints)
LAUNCHES = (
    ("copy", (2, 1), (256, 1), ("f32:1024", "f32:512")),
    ("strided", (2, 1), (256, 1), ("f32:1024", "f32:512")),
    ("broadcast", (2, 1), (256, 1), ("f32:1024", "f32:512")),
    ("transpose_naive", (2, 2), (32, 32), ("f32:4096", "f32:4096", 64)),
    ("transpose_tile", (2, 2), (32, 32), ("f32:4096", "f32:4096", 64)),
    ("transpose_padded", (2, 2), (32, 32), ("f32:4096", "f32:4096", 64)),
    ("doubles", (1, 1), (64, 1), ("f64:64", "f64:64")),
    ("diverge", (2, 1), (256, 1), ("f32:512", "f32:512", 5)),
)


def host_source() -> str:
    """The kernels and a main() that launches each once (CUDA C++)."""
    from memory_kernels import SOURCE

    iota = ("template <class T> T *iota(int n) { T *h = new T[n]; for (int i = 0; i < n; ++i)"
            " h[i] = (T)i; T *d; cudaMalloc(&d, n * sizeof(T)); cudaMemcpy(d, h, n * sizeof(T),"
            " cudaMemcpyHostToDevice); delete[] h; return d; }")
    lines = ["#include <cstdio>", "#include <cuda_runtime.h>", SOURCE, iota, "int main() {"]
    for name, g, b, args in LAUNCHES:
        vals = []
        for a in args:
            if isinstance(a, str):
                ty, n = a.split(":")
                vals.append(f"iota<{'float' if ty == 'f32' else 'double'}>({n})")
            else:
                vals.append(str(a))
        lines.append(f"  {name}<<<dim3({g[0]}, {g[1]}), dim3({b[0]}, {b[1]})>>>"
                     f"({', '.join(vals)});")
    lines += ["  cudaError_t e = cudaDeviceSynchronize();",
              '  printf("%s\\n", cudaGetErrorString(e)); return e != cudaSuccess; }']
    return "\n".join(lines) + "\n"


def interpreter() -> dict:
    """{kernel: {metric: value}} from profiles on the interpreter."""
    import numpy as np
    from memory_kernels import memory_ptx

    from ptxforge.launch.loader import load
    from ptxforge.launch.profile import profile_kernel

    mod = load(memory_ptx(), device="emulator")
    out = {}
    for name, g, b, args in LAUNCHES:
        vals: list = []
        for a in args:
            if isinstance(a, str):
                ty, n = a.split(":")
                vals.append(np.arange(int(n)).astype(np.float32 if ty == "f32" else np.float64))
            else:
                vals.append(a)
        prof = profile_kernel(mod[name], *vals, grid=g, block=b)
        out[name] = {k: v for k, v in prof.metrics().items() if k in METRICS}
    return out


def read_ncu(path: str) -> dict:
    """{kernel: {metric: value}} from ncu's --csv output."""
    out: dict = {}
    with open(path, newline="") as fh:
        rows = [r for r in csv.reader(fh) if r]
    head = next(k for k, r in enumerate(rows) if "Metric Name" in r)
    cols = rows[head]
    for r in rows[head + 1:]:
        rec = dict(zip(cols, r))
        name = rec.get("Kernel Name", "").split("(")[0]
        value = rec.get("Metric Value", "").replace(",", "")
        try:
            out.setdefault(name, {})[rec["Metric Name"]] = float(value)
        except ValueError:
            continue
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", metavar="FILE.cu")
    ap.add_argument("--metrics", action="store_true")
    ap.add_argument("--compare", metavar="NCU.csv")
    args = ap.parse_args(argv)
    if args.metrics:
        print(",".join(METRICS))
    if args.write:
        Path(args.write).write_text(host_source())
    if args.compare:
        gpu, emu = read_ncu(args.compare), interpreter()
        print(f"{'kernel':17} {'metric':58} {'ncu':>9} {'interpreter':>11}")
        for name in emu:
            for metric in METRICS:
                g, e = gpu.get(name, {}).get(metric), emu[name].get(metric)
                if g is None and not e:
                    continue
                print(f"{name:17} {metric:58} {'-' if g is None else f'{g:g}':>9} "
                      f"{'-' if e is None else e:>11}")


if __name__ == "__main__":
    main()
