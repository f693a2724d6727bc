"""Benchmark: register-pressure analysis time versus ptxas compile time, and peak memory.

Builds two large kernels with the KernelBuilder DSL (or directly in IR when the builder is not
importable) and compiles a branchy CUDA C++ kernel at two sizes with NVRTC, then for each:

* times the full analysis (CFG, liveness, peak, report; no interference graph) with
  ``time.perf_counter`` (best of ``--repeat``),
* compiles the same PTX with ptxas inside nvJitLink (``ptxforge.toolchain.compile`` when present,
  otherwise nvJitLink directly) in the same run, and prints analysis / ptxas as a ratio,
* measures the analysis's Python heap peak with ``tracemalloc`` (separate run) and the
  process's ``ru_maxrss``.

Kernels:

* ``tile64x64``: a fully unrolled 64×64 register tile, 4096 f32 accumulators updated by
  in-place ``fma`` over a short K loop (64 + 64 loads and 4096 fma per iteration);
* ``straight20k``: a 20,000-instruction straight-line kernel (loads, then a long chain of
  fma/add over a sliding window of live values, then stores);
* ``branchy<NK>``: :data:`BRANCHY_CU` compiled by NVRTC (``-lineinfo``, disk-cached through
  ``tests/support/corpus_util.py``) and parsed: ``NK`` unrolled steps inside a runtime loop, each
  with a data-dependent three-way branch over 64 accumulators (about 22 instructions and 4
  blocks per step; the compiler's merges give registers defined in several blocks), at
  ``--branchy-nk`` steps and at twice that.  The parse is timed apart (it is not part of the
  ratio, as for the other shapes; the ratio with it is printed too).  The two sizes give the
  scaling line: analysis time at 2N over time at N (2 means linear; runs of the two sizes
  interleaved, best of at least 5 each), beside the same ratio for one linear pass over the
  IR (the instruction mix), which shows how far cache and memory effects alone push linear
  code above 2 on the machine at hand.

Usage::

    python bench/bench_analysis.py [--repeat 3] [--arch sm_80] [--no-ptxas] [--graph]
                                   [--shapes tile,straight,branchy] [--branchy-nk 1000]

Goal: ratio <= 0.1 and peak memory < 1 GB.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from ptxforge import emit  # noqa: E402
from ptxforge.analysis.liveness import analyze_liveness  # noqa: E402
from ptxforge.analysis.mix import instruction_mix  # noqa: E402
from ptxforge.analysis.pressure import analyze_pressure  # noqa: E402
from ptxforge.ptx import ir, types  # noqa: E402

# cold figures: ptxas and nvdisasm run in every timed call, whatever ptxforge's result cache
# (ptxforge/toolchain/result_cache.py) holds from earlier runs
os.environ.setdefault("PTXFORGE_CACHE", "off")

TILE = 64
K_STEPS = 4
CHAIN = 20_000

#: The branchy shape: NK (a macro) unrolled steps, each a data-dependent three-way branch.
BRANCHY_CU = r"""// NK unrolled steps with a data-dependent three-way branch each, inside a runtime loop
extern "C" __global__ void branchy(const float* __restrict__ q, const int* __restrict__ flags,
                                   float* __restrict__ out, int n, int stride, int reps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc[64];
#pragma unroll
    for (int j = 0; j < 64; ++j) acc[j] = q[i + j * stride];
#pragma unroll 1
    for (int it = 0; it < reps; ++it) {
        const float* qb = q + i + it * stride;
        const int* fb = flags + it;
#pragma unroll
        for (int k = 0; k < NK; ++k) {
            int f = fb[k];
            if (f & 1) {
                acc[k & 63] = fmaf(acc[(k * 7) & 63], qb[(k & 255) * 32], acc[k & 63]);
                if (f & 2) out[i + k] = acc[(k * 3) & 63];
            } else if (f & 4) {
                acc[(k + 5) & 63] *= 1.0001f;
            } else {
                acc[(k + 11) & 63] = fmaxf(acc[(k + 11) & 63], acc[(k * 5 + 13) & 63]);
            }
        }
    }
    float r = 0;
#pragma unroll
    for (int j = 0; j < 64; ++j) r += acc[j] * (j + 1);
    out[i] = r;
}
"""


# ----- kernels with the builder ---------------------------------------------------------

def tile_with_builder():
    from ptxforge.dsl.builder import KernelBuilder

    kb = KernelBuilder("tile64x64", target="sm_80")
    a = kb.load_param(kb.param_ptr("a", "f32"))
    b = kb.load_param(kb.param_ptr("b", "f32"))
    c = kb.load_param(kb.param_ptr("c", "f32"))
    acc = [kb.mov(0.0, type="f32") for _ in range(TILE * TILE)]
    with kb.loop(0, K_STEPS, 1) as k:
        pa = kb.elem_ptr(a, kb.mul(k, TILE))
        pb = kb.elem_ptr(b, kb.mul(k, TILE))
        av = [kb.ld(pa, offset=4 * i) for i in range(TILE)]
        bv = [kb.ld(pb, offset=4 * j) for j in range(TILE)]
        for i in range(TILE):
            for j in range(TILE):
                kb.ifma(acc[i * TILE + j], av[i], bv[j])
    for n, v in enumerate(acc):
        kb.st(c, v, offset=4 * n)
    kb.ret()
    return kb.build()


def straight_with_builder():
    from ptxforge.dsl.builder import KernelBuilder

    kb = KernelBuilder("straight20k", target="sm_80")
    x = kb.load_param(kb.param_ptr("x", "f32"))
    y = kb.load_param(kb.param_ptr("y", "f32"))
    vals = [kb.ld(x, offset=4 * i) for i in range(128)]
    for i in range(CHAIN - 2 * 128):
        n = len(vals)
        if i % 2:
            vals.append(kb.fma(vals[n - 1], vals[n - 37], vals[n - 91]))
        else:
            vals.append(kb.add(vals[n - 2], vals[n - 64]))
    for i, v in enumerate(vals[-120:]):
        kb.st(y, v, offset=4 * i)
    kb.ret()
    return kb.build()


# ----- the same kernels directly in IR (fallback) ------------------------------------------

class _IR:
    """Tiny IR assembler for the fallback path."""

    def __init__(self, name: str, params: tuple) -> None:
        self.name, self.params, self.body, self.count = name, params, [], {}

    def reg(self, ty):
        prefix = ty.reg_class.prefix
        self.count[prefix] = self.count.get(prefix, 0) + 1
        return ir.Register(f"{prefix}{self.count[prefix]}", ty)

    def op(self, opcode, *operands, ndefs=1, guard=None):
        self.body.append(ir.Instruction(opcode, tuple(operands), ndefs, guard))

    def module(self) -> ir.Module:
        decls = tuple(ir.RegDecl(c.decl, c.prefix, n + 1) for c in types.REG_CLASSES
                      for p, n in self.count.items() if p == c.prefix)
        k = ir.Kernel(self.name, params=tuple(ir.Param(p, types.u64) for p in self.params),
                      body=tuple(self.body), reg_decls=decls)
        return ir.Module("7.0", "sm_80", kernels=(k,))


def _f(x: float) -> ir.Immediate:
    return ir.Immediate(x, types.f32)


def tile_ir():
    m = _IR("tile64x64", ("a", "b", "c"))
    ptrs = []
    for name in ("a", "b", "c"):
        r = m.reg(types.u64)
        m.op("ld.param.u64", r, ir.Address(ir.Symbol(name)))
        g = m.reg(types.u64)
        m.op("cvta.to.global.u64", g, r)
        ptrs.append(g)
    a, b, c = ptrs
    acc = []
    for _ in range(TILE * TILE):
        r = m.reg(types.f32)
        m.op("mov.f32", r, _f(0.0))
        acc.append(r)
    k = m.reg(types.u32)
    m.op("mov.u32", k, ir.Immediate(0))
    m.body.append(ir.Label("$K"))
    off = m.reg(types.u64)
    m.op("mul.wide.u32", off, k, ir.Immediate(4 * TILE))
    pa, pb = m.reg(types.u64), m.reg(types.u64)
    m.op("add.s64", pa, a, off)
    m.op("add.s64", pb, b, off)
    av, bv = [], []
    for base, out in ((pa, av), (pb, bv)):
        for i in range(TILE):
            r = m.reg(types.f32)
            m.op("ld.global.f32", r, ir.Address(base, 4 * i))
            out.append(r)
    for i in range(TILE):
        for j in range(TILE):
            d = acc[i * TILE + j]
            m.op("fma.rn.f32", d, av[i], bv[j], d)
    m.op("add.u32", k, k, ir.Immediate(1))
    p = m.reg(types.pred)
    m.op("setp.lt.u32", p, k, ir.Immediate(K_STEPS))
    m.op("bra", ir.LabelRef("$K"), ndefs=0, guard=ir.Guard(p))
    for n, v in enumerate(acc):
        m.op("st.global.f32", ir.Address(c, 4 * n), v, ndefs=0)
    m.op("ret", ndefs=0)
    return m.module()


def straight_ir():
    m = _IR("straight20k", ("x", "y"))
    x, y = m.reg(types.u64), m.reg(types.u64)
    m.op("ld.param.u64", x, ir.Address(ir.Symbol("x")))
    m.op("ld.param.u64", y, ir.Address(ir.Symbol("y")))
    vals = []
    for i in range(128):
        r = m.reg(types.f32)
        m.op("ld.global.f32", r, ir.Address(x, 4 * i))
        vals.append(r)
    for i in range(CHAIN - 2 * 128):
        n, r = len(vals), m.reg(types.f32)
        if i % 2:
            m.op("fma.rn.f32", r, vals[n - 1], vals[n - 37], vals[n - 91])
        else:
            m.op("add.f32", r, vals[n - 2], vals[n - 64])
        vals.append(r)
    for i, v in enumerate(vals[-120:]):
        m.op("st.global.f32", ir.Address(y, 4 * i), v, ndefs=0)
    m.op("ret", ndefs=0)
    return m.module()


# ----- the branchy kernel from CUDA C++ ---------------------------------------------------------

def branchy_ptx(nk: int, arch: str) -> str:
    """PTX of :data:`BRANCHY_CU` with ``NK = nk`` (NVRTC, -lineinfo; cached on disk)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "support"))
    from corpus_util import compile_cu

    return compile_cu(f"#define NK {nk}\n" + BRANCHY_CU, "branchy", arch, True)


# ----- measuring -------------------------------------------------------------------------------

def ptxas_seconds(ptx: str, arch: str) -> tuple[float, str]:
    """Wall time of ptxas (inside nvJitLink) on ``ptx``; and which path compiled it."""
    try:
        from ptxforge.toolchain.compile import compile_ptx
    except ImportError:
        compile_ptx = None
    if compile_ptx is not None:
        t0 = time.perf_counter()
        compiled = compile_ptx(ptx, arch, backend="nvjitlink")
        elapsed = time.perf_counter() - t0
        regs = ", ".join(f"{k.name}: {getattr(k, 'registers', '?')} registers" for k in compiled.kernels)
        return elapsed, f"ptxforge.compile/nvjitlink ({regs})"
    from cuda.bindings import nvjitlink

    data = ptx.encode()
    t0 = time.perf_counter()
    h = nvjitlink.create(1, [f"-arch={arch}"])
    try:
        nvjitlink.add_data(h, nvjitlink.InputType.PTX, data, len(data), "bench.ptx")
        nvjitlink.complete(h)
    finally:
        nvjitlink.destroy(h)
    return time.perf_counter() - t0, "nvJitLink directly"


def _seconds(fn, *args) -> float:
    """Wall time of one call, after a collection."""
    gc.collect()
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def analysis(kernel: ir.Kernel):
    """The measured work: CFG, liveness, peak and the full report (no interference graph)."""
    report = analyze_pressure(kernel)
    report.to_dict()
    report.to_text()
    return report


def _cases(args) -> list:
    """(name, make) per shape; ``make()`` gives (module, PTX text, how it was built, parse seconds)."""
    def builder_case(with_builder, with_ir):
        def make():
            if args.ir:
                module, how = with_ir(), "ir"
            else:
                try:
                    module, how = with_builder(), "builder"
                except ImportError:
                    module, how = with_ir(), "ir (builder not importable)"
            return module, emit(module), how, None
        return make

    def branchy_case(nk):
        def make():
            from ptxforge.ptx.parse import parse

            t0 = time.perf_counter()
            ptx = branchy_ptx(nk, args.arch)
            nvrtc_s = time.perf_counter() - t0
            gc.collect()
            t0 = time.perf_counter()
            module = parse(ptx)
            parse_s = time.perf_counter() - t0
            return module, ptx, f"NVRTC (or its cache) in {nvrtc_s:.1f} s, then parse", parse_s
        return make

    cases = []
    shapes = {x.strip() for x in args.shapes.split(",") if x.strip()}
    if "tile" in shapes:
        cases.append(("tile64x64", builder_case(tile_with_builder, tile_ir)))
    if "straight" in shapes:
        cases.append(("straight20k", builder_case(straight_with_builder, straight_ir)))
    if "branchy" in shapes:
        for nk in (args.branchy_nk, 2 * args.branchy_nk):
            cases.append((f"branchy{nk}", branchy_case(nk)))
    return cases


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--arch", default="sm_80")
    ap.add_argument("--no-ptxas", action="store_true")
    ap.add_argument("--graph", action="store_true", help="also time the budgeted interference graph")
    ap.add_argument("--ir", action="store_true", help="build the kernels in IR, not with the builder")
    ap.add_argument("--shapes", default="tile,straight,branchy",
                    help="comma-separated: tile, straight, branchy (default: all)")
    ap.add_argument("--branchy-nk", type=int, default=1000,
                    help="unrolled steps of the smaller branchy kernel (the other has twice as many)")
    args = ap.parse_args(argv)

    worst = 0.0
    measured: dict[str, tuple] = {}  # name -> (kernel kept for the scaling line, ptxas seconds)
    for name, make in _cases(args):
        t0 = time.perf_counter()
        try:
            module, ptx, how, parse_s = make()
        except Exception as exc:  # NVRTC missing or failing: report, do not hide
            print(f"== {name}: not built ({type(exc).__name__}: {str(exc)[:200]})")
            continue
        build_s = time.perf_counter() - t0
        kernel = module.kernels[0]
        times = []
        for _ in range(args.repeat):
            gc.collect()
            t0 = time.perf_counter()
            report = analysis(kernel)
            times.append(time.perf_counter() - t0)
        best = min(times)
        live_s = min(_seconds(analyze_liveness, kernel) for _ in range(args.repeat))
        gc.collect()
        tracemalloc.start()
        analysis(kernel)
        _, heap_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"== {name} (built with {how} in {build_s:.2f} s)")
        print(f"   instructions {report.n_instructions:,}, blocks {report.n_blocks}, loops {len(report.loops)}, "
              f"virtual registers {sum(n for _, n in report.registers_by_type):,}, PTX {len(ptx):,} bytes")
        print(f"   peak {report.peak.units:,} units at instruction {report.peak.index} "
              f"({len(report.peak.values):,} values live)")
        print(f"   analysis: best {best:.3f} s of {args.repeat} (runs: "
              + ", ".join(f"{x:.3f}" for x in times) + f"; liveness alone: best {live_s:.3f} s); "
              f"tracemalloc peak {heap_peak / 2**20:.1f} MiB")
        if parse_s is not None:
            print(f"   parse: {parse_s:.3f} s")
        if args.graph:
            from ptxforge.analysis.interference import build_interference

            lv = analyze_liveness(kernel)
            t0 = time.perf_counter()
            ig = build_interference(lv)
            print(f"   interference graph (budget): {time.perf_counter() - t0:.2f} s")
            print("   " + ig.describe().replace("\n", "\n   "))
            del ig, lv
        ptxas_s = None
        if not args.no_ptxas:
            try:
                ptxas_s, path = ptxas_seconds(ptx, args.arch)
            except Exception as exc:  # report, do not hide
                print(f"   ptxas: failed ({type(exc).__name__}: {str(exc)[:200]})")
            else:
                ratio = best / ptxas_s
                worst = max(worst, ratio)
                print(f"   ptxas ({args.arch}, {path}): {ptxas_s:.3f} s")
                print(f"   ratio analysis/ptxas = {ratio:.3f}"
                      f"  [{'ok' if ratio <= 0.1 else 'over the 0.1 goal'}]")
                if parse_s is not None:
                    print(f"   ratio (parse + analysis)/ptxas = {(parse_s + best) / ptxas_s:.3f}")
        measured[name] = (kernel if name.startswith("branchy") else None, ptxas_s)
        del module, kernel, report
    small, large = f"branchy{args.branchy_nk}", f"branchy{2 * args.branchy_nk}"
    if small in measured and large in measured:
        scaling(measured[small], measured[large], small, large, max(args.repeat, 5))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"== process ru_maxrss {rss:.0f} MiB (includes kernel construction and ptxas in-process); "
          f"worst ratio {worst:.3f}")
    return 0


def scaling(one: tuple, two: tuple, small: str, large: str, rounds: int) -> None:
    """Time at 2N over time at N: the two kernels' runs interleaved (the load of a shared machine
    changes by the second), best of ``rounds`` each; beside it the same for one linear pass."""
    (k1, p1), (k2, p2) = one, two
    best: dict[tuple, float] = {}
    for _ in range(rounds):
        for what, fn in (("analysis", analysis), ("liveness", analyze_liveness), ("mix", instruction_mix)):
            for size, k in ((1, k1), (2, k2)):
                t = _seconds(fn, k)
                best[what, size] = min(best.get((what, size), t), t)
    n1, n2 = len(k1.instructions), len(k2.instructions)
    x = {w: best[w, 2] / best[w, 1] for w in ("analysis", "liveness", "mix")}
    line = (f"== scaling {small} -> {large} (interleaved, best of {rounds}): instructions x{n2 / n1:.2f}, "
            f"analysis x{x['analysis']:.2f} ({best['analysis', 1]:.3f} -> {best['analysis', 2]:.3f} s), "
            f"liveness x{x['liveness']:.2f}")
    if p1 and p2:
        line += f", ptxas x{p2 / p1:.2f} (one run each)"
    print(line + "  (x2 per doubling is linear)")
    print(f"   linear reference: one pass over the same IR (instruction_mix) x{x['mix']:.2f}: what "
          f"cache and memory effects alone do to linear code here")


if __name__ == "__main__":
    raise SystemExit(main())
