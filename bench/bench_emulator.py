"""Benchmark: the PTX interpreter's thread-instruction rate, this tree against an older one.

Four straight-line kernels written as PTX here (every thread runs every instruction, so
thread-instructions = threads x instructions, the same count on any version of the
interpreter), each launched on ``load(ptx, device="emulator")`` over 16384 threads:

* ``fma32`` / ``fma64``: 32 chained ``fma.rn`` on f32 / f64 (target: f64 within 3x of f32);
* ``copy``: 8 ``ld.global`` + 8 ``st.global`` of f32 per thread with their address arithmetic
  (memory-bound; also given relative to a NumPy copy of the same bytes);
* ``hist``: 4 ``atom.shared.add.u32`` per thread into 256 bins (colliding atomics).

Each tree is measured in its own child process (``PYTHONPATH`` set to the tree), best of
``--repeat`` launches after one warm-up, in one run of this script; the table gives each
rate and the ratios (new / old; f64 time / f32 time).  ``--tree DIR`` names the older tree
(a checkout whose ``ptxforge/`` to compare, e.g. ``git worktree add /tmp/old 01e0119``).

Usage::

    python bench/bench_emulator.py [--tree DIR] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

THREADS, BLOCK = 16384, 256
FMAS, COPIES, ATOMS = 32, 8, 4

HEAD = """.version 8.0
.target sm_80
.address_size 64
"""


def _index() -> list[str]:
    return ["mov.u32 %r1, %ctaid.x;", "mov.u32 %r2, %ntid.x;", "mov.u32 %r3, %tid.x;",
            "mad.lo.u32 %r4, %r1, %r2, %r3;"]


def fma_ptx(ty: str) -> str:
    """``out[i] = a[i] * (... (a[i] * b[i] + c[i]) ...) + c[i]``, FMAS times."""
    size = 4 if ty == "f32" else 8
    body = _index() + [f"mul.wide.u32 %rd4, %r4, {size};"]
    for k, p in enumerate("abc"):
        body += [f"ld.param.u64 %rd{k + 1}, [p{p}];", f"add.s64 %rd{k + 1}, %rd{k + 1}, %rd4;",
                 f"ld.global.{ty} %f{k + 1}, [%rd{k + 1}];"]
    for _ in range(FMAS):
        body.append(f"fma.rn.{ty} %f2, %f1, %f2, %f3;")
    body += ["ld.param.u64 %rd5, [po];", "add.s64 %rd5, %rd5, %rd4;",
             f"st.global.{ty} [%rd5], %f2;", "ret;"]
    reg = "f32" if ty == "f32" else "f64"
    return (HEAD + f".visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, "
            f".param .u64 po)\n{{\n.reg .b32 %r<5>;\n.reg .b64 %rd<6>;\n.reg .{reg} %f<4>;\n"
            + "\n".join(body) + "\n}\n")


def copy_ptx() -> str:
    """Each thread copies COPIES floats, strided by the thread count."""
    body = _index() + ["ld.param.u64 %rd1, [ps];", "ld.param.u64 %rd2, [pd];",
                       "mul.wide.u32 %rd3, %r4, 4;", "add.s64 %rd1, %rd1, %rd3;",
                       "add.s64 %rd2, %rd2, %rd3;"]
    for _ in range(COPIES):
        body += ["ld.global.f32 %f1, [%rd1];", "st.global.f32 [%rd2], %f1;",
                 f"add.s64 %rd1, %rd1, {THREADS * 4};", f"add.s64 %rd2, %rd2, {THREADS * 4};"]
    body.append("ret;")
    return (HEAD + ".visible .entry k(.param .u64 ps, .param .u64 pd)\n{\n.reg .b32 %r<5>;\n"
            ".reg .b64 %rd<4>;\n.reg .f32 %f<2>;\n" + "\n".join(body) + "\n}\n")


def hist_ptx() -> str:
    """Each thread adds 1 to ATOMS shared bins (tid*7+k) % 256, then thread 0..255 store them."""
    body = _index() + ["mov.u32 %r5, hist;"]
    for k in range(ATOMS):
        body += [f"mad.lo.u32 %r6, %r3, 7, {k};", "and.b32 %r6, %r6, 255;",
                 "shl.b32 %r6, %r6, 2;", "add.u32 %r6, %r6, %r5;",
                 "atom.shared.add.u32 %r7, [%r6], 1;"]
    body += ["bar.sync 0;", "shl.b32 %r6, %r3, 2;", "add.u32 %r6, %r6, %r5;",
             "ld.shared.u32 %r7, [%r6];", "ld.param.u64 %rd1, [po];",
             "mul.wide.u32 %rd2, %r4, 4;", "add.s64 %rd1, %rd1, %rd2;",
             "st.global.u32 [%rd1], %r7;", "ret;"]
    return (HEAD + ".visible .entry k(.param .u64 po)\n{\n.reg .b32 %r<8>;\n.reg .b64 %rd<3>;\n"
            ".shared .align 4 .b32 hist[256];\n" + "\n".join(body) + "\n}\n")


def _count(ptx: str) -> int:
    from ptxforge.ptx.parse import parse

    return len(parse(ptx).kernel("k").instructions)


def _best(fn, repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def child(repeat: int) -> dict:
    """Rates (thread-instructions per second) of this process's ptxforge."""
    import numpy as np

    from ptxforge.launch.loader import load

    rng = np.random.default_rng(0)
    grid = THREADS // BLOCK
    out: dict = {}
    for ty, dt in (("f32", np.float32), ("f64", np.float64)):
        ptx = fma_ptx(ty)
        a, b, c = (rng.standard_normal(THREADS).astype(dt) * 0.5 for _ in range(3))
        o = np.zeros(THREADS, dt)
        k = load(ptx, device="emulator")["k"]
        t = _best(lambda k=k, a=a, b=b, c=c, o=o: k(a, b, c, o, grid=grid, block=BLOCK), repeat)
        out[f"fma{ty[1:]}"] = THREADS * _count(ptx) / t
    src = rng.standard_normal(THREADS * COPIES).astype(np.float32)
    dst = np.zeros_like(src)
    ptx = copy_ptx()
    k = load(ptx, device="emulator")["k"]
    t = _best(lambda: k(src, dst, grid=grid, block=BLOCK), repeat)
    assert np.array_equal(src, dst)
    out["copy"] = THREADS * _count(ptx) / t
    # NumPy moving the same bytes (the kernel's copy in, loads + stores, copy out)
    big = np.zeros_like(src)
    out["numpy_copy_s"] = _best(lambda: np.copyto(big, src), max(repeat, 20))
    out["copy_s"] = t
    ptx = hist_ptx()
    hist = np.zeros(THREADS, np.uint32)
    k = load(ptx, device="emulator")["k"]
    t = _best(lambda: k(hist, grid=grid, block=BLOCK), repeat)
    assert int(hist.reshape(grid, BLOCK).sum(axis=1)[0]) == BLOCK * ATOMS
    out["hist"] = THREADS * _count(ptx) / t
    return out


def _measure(tree: Path, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    res = subprocess.run([sys.executable, __file__, "--child", "--repeat", str(repeat)],
                         env=env, capture_output=True, text=True, check=False)
    if res.returncode:
        raise SystemExit(f"the child for {tree} failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    """Print the rates of this tree (and of ``--tree``) and their ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, help="an older tree to compare against")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.repeat)))
        return
    trees = {"this": Path(__file__).resolve().parents[1]}
    if args.tree:
        trees["old"] = args.tree.resolve()
    rows = {name: _measure(tree, args.repeat) for name, tree in trees.items()}
    print(f"{'kernel':<8}" + "".join(f"{n + ' (M thr-inst/s)':>22}" for n in rows)
          + ("      this / old" if "old" in rows else ""))
    for key in ("fma32", "fma64", "copy", "hist"):
        line = f"{key:<8}" + "".join(f"{r[key] / 1e6:>22.2f}" for r in rows.values())
        if "old" in rows:
            line += f"{rows['this'][key] / rows['old'][key]:>16.2f}x"
        print(line)
    for name, r in rows.items():
        print(f"{name}: fma64 time / fma32 time = {r['fma32'] / r['fma64']:.2f} (target <= 3); "
              f"copy kernel time / NumPy copy of the same bytes = "
              f"{r['copy_s'] / r['numpy_copy_s']:.0f}")


if __name__ == "__main__":
    main()
