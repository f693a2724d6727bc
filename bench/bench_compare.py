"""How long ``ptxforge compare`` takes on two kernels of one large file, before and after it
learned to compile each input once and only the kernels compared (ptxas ``-e``), as a ratio to
one ptxas compile of the whole file in the same run.

    python bench/bench_compare.py [--kernels 48] [--repeat 3]

The file is generated: NVRTC compiles ``--kernels`` instantiations of a register-tiled GEMM
template (sizes and unroll factors vary), the shape of a large library file.  "before" is what
compare did until issue 12: each side analysed on its own with the whole file compiled
(``CompileOptions(entries=<every kernel>)`` reproduces it); "after" is the ``ptxforge compare
FILE FILE --pair A=B`` command as it is now.  Times are the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# cold figures: ptxas and nvdisasm run in every timed call, whatever ptxforge's result cache
# (ptxforge/toolchain/result_cache.py) holds from earlier runs
os.environ.setdefault("PTXFORGE_CACHE", "off")

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "support"))

SOURCE = r"""
template <int TM, int TN, int UNROLL>
__global__ void gemm_tile(const float *__restrict__ a, const float *__restrict__ b,
                          float *__restrict__ c, int n, int k) {
    __shared__ float as[16][TM * 16 + 1], bs[16][TN * 16 + 1];
    int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    float acc[TM][TN] = {};
    for (int kk = 0; kk < k; kk += 16) {
        for (int i = 0; i < TM; ++i) as[tx][ty * TM + i] = a[(blockIdx.y * 16 * TM + ty * TM + i) * k + kk + tx];
        for (int j = 0; j < TN; ++j) bs[ty][tx * TN + j] = b[(kk + ty) * n + blockIdx.x * 16 * TN + tx * TN + j];
        __syncthreads();
#pragma unroll UNROLL
        for (int q = 0; q < 16; ++q)
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) acc[i][j] += as[q][ty * TM + i] * bs[q][tx * TN + j];
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j)
            c[(blockIdx.y * 16 * TM + ty * TM + i) * n + blockIdx.x * 16 * TN + tx * TN + j] = acc[i][j];
}
"""


def _generate(count: int) -> tuple:
    from compile_sources import nvrtc

    shapes = [(tm, tn, u) for tm in (1, 2, 4, 8) for tn in (1, 2, 4, 8) for u in (1, 2, 4, 16)]
    shapes = shapes[:count]
    src = SOURCE + "".join(f"template __global__ void gemm_tile<{tm},{tn},{u}>(const float*, "
                           "const float*, float*, int, int);\n" for tm, tn, u in shapes)
    ptx = nvrtc(src, "bench_compare", "sm_80")
    return ptx, shapes


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=48)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from ptxforge.cli import main as cli
    from ptxforge.ptx.directives import ptx_entries
    from ptxforge.reports.analyze import analyze_ptx
    from ptxforge.toolchain.backends import PtxasBackend
    from ptxforge.toolchain.compile import CompileOptions, CompileRequest

    ptx, _ = _generate(args.kernels)
    names = [e.name for e in ptx_entries(ptx)]
    a, b = names[len(names) // 3], names[2 * len(names) // 3]
    exe = PtxasBackend().for_target("sm_80").path
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.ptx"
        path.write_text(ptx)
        one = _best(lambda: subprocess.run([exe, "-arch=sm_80", str(path), "-o",
                                            str(Path(tmp) / "o.cubin")], check=True), args.repeat)
        every = CompileOptions(entries=tuple(names))

        def before():
            for k in (a, b):
                analyze_ptx(ptx, str(path), kernel=k, request=CompileRequest(options=every))

        def after():
            with contextlib.redirect_stdout(io.StringIO()):
                assert cli(["compare", str(path), str(path), "--pair", f"{a}={b}",
                            "--json"]) == 0

        t_before, t_after = _best(before, args.repeat), _best(after, args.repeat)
    print(f"file: {len(ptx) / 1e6:.2f} MB of PTX, {len(names)} kernels; comparing {a} with {b}")
    print(f"one ptxas compile of the file (whole-program 13.x): {one:.2f} s")
    print(f"compare before (each side compiles the whole file):  {t_before:.2f} s  "
          f"= {t_before / one:.2f}x one ptxas compile")
    print(f"compare after (one compile, -e the two kernels):    {t_after:.2f} s  "
          f"= {t_after / one:.2f}x one ptxas compile")
    print(f"after / before: {t_after / t_before:.2f}")


if __name__ == "__main__":
    main()
