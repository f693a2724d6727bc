"""WENO5 register pressure, after users' seeds 000 and 001 (an ocean model's momentum kernels).

1. One WENO5 reconstruction whose order is reduced at run time (``red_order`` 1, 2 or 3
   substencils, as near an immersed boundary), written two ways:
   * **cascade**: every coefficient is ``selp(order == 1, c1, selp(order == 2, c2, c3))`` of
     f64 literals (the ``ifelse`` chains of seed 000);
   * **table**: the coefficients are loaded from a constant-memory table indexed by order
     (the lookup table seed 000 proposes).
   It prints registers, the instruction mix and the kinds of ``selp``.
2. Kernel fission (seed 001) on sm_70 at 256 threads: one monolithic kernel doing several
   reconstructions against the same work split over two kernels, with what crossing 128
   registers costs in blocks per SM.

Figures come from ptxas (13.5 for sm_80; CUDA 12.9's for sm_70, which ptxas 13 no longer
targets) and ptxforge's occupancy calculator; the kernels are unverified on hardware (the
tests run the reconstruction on ptxforge's PTX interpreter against NumPy).

    python examples/weno.py [--quick]
"""

from __future__ import annotations

import sys
from fractions import Fraction as Fr

import _common  # noqa: F401  (puts a checkout's ptxforge on sys.path)

from ptxforge import analyze_pressure, compile_ptx, occupancy
from ptxforge.analysis.mix import instruction_mix
from ptxforge.dsl.builder import KernelBuilder

EPS = 1e-6
ORDERS = (1, 2, 3)                    # substencils in use: WENO1, WENO3, WENO5
FISSION_TARGET, FISSION_BLOCK = "sm_70", 256
FIELDS = 10                           # reconstructions in the monolithic kernel
PAIRS = tuple((j, m) for j in range(5) for m in range(j, 5))      # the 15 products v_j * v_m


def _square(coeffs: dict) -> dict:
    """(sum_j a_j v_j)^2 as {(j, m): coefficient} over j <= m."""
    out: dict = {}
    for j, a in coeffs.items():
        for m, b in coeffs.items():
            key = (min(j, m), max(j, m))
            out[key] = out.get(key, 0) + a * b
    return out


def _add(*forms) -> dict:
    out: dict = {}
    for scale, form in forms:
        for key, v in form.items():
            out[key] = out.get(key, 0) + scale * v
    return out


def coefficients(order: int):
    """(q, beta, d) for the reduced order: per substencil s, the reconstruction weights q[s]
    over v0..v4 (v2 is the cell left of the interface), the smoothness quadratic form beta[s]
    over the 15 products, and the optimal weight d[s]; unused substencils are all zero."""
    zero5, zero15 = [Fr(0)] * 5, {}
    if order == 3:   # Jiang & Shu (1996)
        q = [[Fr(1, 3), Fr(-7, 6), Fr(11, 6), 0, 0], [0, Fr(-1, 6), Fr(5, 6), Fr(1, 3), 0],
             [0, 0, Fr(1, 3), Fr(5, 6), Fr(-1, 6)]]
        c13, c14 = Fr(13, 12), Fr(1, 4)
        beta = [_add((c13, _square({0: 1, 1: -2, 2: 1})), (c14, _square({0: 1, 1: -4, 2: 3}))),
                _add((c13, _square({1: 1, 2: -2, 3: 1})), (c14, _square({1: 1, 3: -1}))),
                _add((c13, _square({2: 1, 3: -2, 4: 1})), (c14, _square({2: 3, 3: -4, 4: 1})))]
        d = [Fr(1, 10), Fr(6, 10), Fr(3, 10)]
    elif order == 2:
        q = [[0, Fr(-1, 2), Fr(3, 2), 0, 0], [0, 0, Fr(1, 2), Fr(1, 2), 0], zero5]
        beta = [_square({1: -1, 2: 1}), _square({2: -1, 3: 1}), zero15]
        d = [Fr(1, 3), Fr(2, 3), Fr(0)]
    else:
        q = [[0, 0, Fr(1), 0, 0], zero5, zero5]
        beta = [zero15, zero15, zero15]
        d = [Fr(1), Fr(0), Fr(0)]
    return ([[float(x) for x in row] for row in q],
            [[float(b.get(p, 0)) for p in PAIRS] for b in beta], [float(x) for x in d])


def _table() -> list:
    """Every coefficient, order by order: 3 x (15 q + 45 beta + 3 d) f64 values."""
    flat = []
    for order in ORDERS:
        q, beta, d = coefficients(order)
        flat += [x for row in q for x in row] + [x for row in beta for x in row] + d
    return flat


PER_ORDER = 15 + 45 + 3


def _cascade_constant(kb, values, is1, is2):
    """``selp(order == 1, c1, selp(order == 2, c2, c3))``, or the constant when all agree."""
    c1, c2, c3 = values
    if c1 == c2 == c3:
        return c1
    inner = c2 if c2 == c3 else kb.selp(c2, c3, is2, type="f64")
    return inner if c1 == inner else kb.selp(c1, inner, is1, type="f64")


def reconstruct(kb, v, order, variant: str, table=None):
    """One WENO5 reconstruction of the five f64 values ``v`` at the reduced ``order``."""
    if variant == "cascade":
        is1, is2 = kb.setp("==", order, 1), kb.setp("==", order, 2)
        per = [coefficients(o) for o in ORDERS]

        def coef(kind, s, j):
            return _cascade_constant(kb, [c[kind][s][j] if kind < 2 else c[2][s] for c in per],
                                     is1, is2)
    else:
        base = kb.elem_ptr(table, kb.mul(kb.sub(order, 1), PER_ORDER))

        per = [coefficients(o) for o in ORDERS]

        def coef(kind, s, j):
            if all((c[kind][s][j] if kind < 2 else c[2][s]) == 0.0 for c in per):
                return 0.0          # zero at every order: the table leaves it out as well
            index = (0, 15, 60)[kind] + (s * (5, 15, 1)[kind] + (j if kind < 2 else 0))
            return kb.ld(base, offset=8 * index)

    products = [kb.mul(v[j], v[m]) for j, m in PAIRS]
    alphas, recs = [], []
    for s in range(3):
        p = None
        for j in range(5):
            c = coef(0, s, j)
            if isinstance(c, float) and c == 0.0:
                continue
            p = kb.mul(v[j], c) if p is None else kb.fma(v[j], c, p)
        beta = None
        for k in range(15):
            c = coef(1, s, k)
            if isinstance(c, float) and c == 0.0:
                continue
            beta = kb.mul(products[k], c) if beta is None else kb.fma(products[k], c, beta)
        eps = kb.add(beta, EPS) if beta is not None else kb.mov(EPS, type="f64")
        alpha = kb.div(coef(2, s, 0), kb.mul(eps, eps))
        alphas.append(alpha)
        recs.append(p if p is not None else kb.mov(0.0, type="f64"))
    total = kb.add(kb.add(alphas[0], alphas[1]), alphas[2])
    num = kb.fma(alphas[2], recs[2], kb.fma(alphas[1], recs[1], kb.mul(alphas[0], recs[0])))
    return kb.div(num, total)


def build_single(variant: str, target: str = "sm_80"):
    """out[i] = WENO5(u[i-2 .. i+2]) at order[i]; ``variant`` "cascade" or "table"."""
    kb = KernelBuilder(f"weno5_{variant}", target=target)
    u = kb.load_param(kb.param_ptr("u", "f64"))
    order_p = kb.load_param(kb.param_ptr("order", "u32"))
    out = kb.load_param(kb.param_ptr("out", "f64"))
    i = kb.add(kb.global_id(), 2)
    table = None
    if variant == "table":
        table = kb.address_of(kb.const_array("coefficients", "f64", _table()))
    pu = kb.elem_ptr(u, kb.sub(i, 2))
    v = [kb.ld(pu, offset=8 * j) for j in range(5)]
    order = kb.ld(kb.elem_ptr(order_p, i))
    kb.st(kb.elem_ptr(out, i), reconstruct(kb, v, order, variant, table))
    return kb


def build_fission(parts: tuple, name: str, target: str = FISSION_TARGET, accumulate=False):
    """One kernel doing the reconstructions ``parts`` (field indices 0..5: u, v, w in x and
    y); the stencils are all loaded first, as a compiler hoisting loads does."""
    kb = KernelBuilder(name, target=target)
    kb.maxntid(FISSION_BLOCK)
    fields = kb.load_param(kb.param_ptr("fields", "f64"))
    order_p = kb.load_param(kb.param_ptr("order", "u32"))
    out = kb.load_param(kb.param_ptr("out", "f64"))
    stride = kb.load_param(kb.param("stride", "u32"))
    i = kb.add(kb.global_id(), 2)
    order = kb.ld(kb.elem_ptr(order_p, i))
    stencils = []
    for f in parts:
        pu = kb.elem_ptr(fields, kb.add(kb.mul(stride, f), kb.sub(i, 2)))
        stencils.append([kb.ld(pu, offset=8 * j) for j in range(5)])
    acc = None
    for v in stencils:
        r = reconstruct(kb, v, order, "cascade")
        acc = r if acc is None else kb.add(acc, r)
    po = kb.elem_ptr(out, i)
    kb.st(po, kb.add(kb.ld(po), acc) if accumulate else acc)
    return kb


def _stats(kb, target):
    module = kb.build()
    return module, compile_ptx(module, target, backend="ptxas")[module.kernels[0].name]


def single_figures(target: str = "sm_80") -> dict:
    out = {}
    for variant in ("cascade", "table"):
        module, stats = _stats(build_single(variant, target), target)
        kernel = module.kernels[0]
        out[variant] = {"registers": stats.registers, "spills": stats.spill_stores,
                        "estimate": analyze_pressure(kernel).peak.units,
                        "mix": instruction_mix(kernel)}
    return out


def fission_figures(fields: int = FIELDS) -> dict:
    """Registers and occupancy of the monolithic kernel and its two halves."""
    half = fields // 2
    kernels = {"mono": build_fission(tuple(range(fields)), "G_mono"),
               "split_a": build_fission(tuple(range(half)), "G_first"),
               "split_b": build_fission(tuple(range(half, fields)), "G_second", accumulate=True)}
    out = {}
    for key, kb in kernels.items():
        module, stats = _stats(kb, FISSION_TARGET)
        occ = occupancy(stats.registers, FISSION_BLOCK, FISSION_TARGET)
        out[key] = {"name": module.kernels[0].name, "registers": stats.registers,
                    "spills": stats.spill_stores, "blocks": occ.active_blocks,
                    "occupancy": occ.occupancy,
                    "estimate": analyze_pressure(module.kernels[0]).peak.units}
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    fields = FIELDS        # --quick is accepted; the whole example compiles in about a second
    del argv
    print("WENO5 with a run-time reduced order (seeds 000/001); compile-time figures, "
          "unverified on hardware")
    print()
    single = single_figures()
    print("1. one reconstruction on sm_80, coefficients as a selp cascade vs a constant table:")
    print(f"   {'variant':8}  {'ptxas regs':>10}  {'estimate':>8}  {'selp':>5}  "
          f"{'literal pair':>12}  {'lit+reg':>7}  {'reg pair':>8}  {'fma.f64':>7}  "
          f"{'ld.const':>8}  {'setp':>4}")
    for variant, f in single.items():
        m = f["mix"]
        print(f"   {variant:8}  {f['registers']:>10}  {f['estimate']:>8}  {m.selp.total:>5}  "
              f"{m.selp.literal_pair:>12}  {m.selp.literal_register:>7}  "
              f"{m.selp.register_pair:>8}  {m.by_opcode.get('fma.rn.f64', 0):>7}  "
              f"{m.groups.get('ld.const', 0):>8}  {m.by_family.get('setp', 0):>4}")
    print()
    fis = fission_figures(fields)
    print(f"2. kernel fission on {FISSION_TARGET} at {FISSION_BLOCK} threads per block "
          f"({fields} reconstructions, split {fields // 2} + {fields // 2}):")
    for key in ("mono", "split_a", "split_b"):
        f = fis[key]
        print(f"   {f['name']:9} ptxas {f['registers']:>3} registers, spills {f['spills']:>3} B, "
              f"estimate {f['estimate']:>3}: {f['blocks']} block(s)/SM, "
              f"{100 * f['occupancy']:.1f}% occupancy")
    print()
    c, t = single["cascade"], single["table"]
    verdict = "saves" if t["registers"] < c["registers"] else "does not save"
    print(f"lesson: the table {verdict} registers here ({c['registers']} with "
          f"{c['mix'].selp.total} selp, {t['registers']} with {t['mix'].groups.get('ld.const', 0)}"
          f" ld.const): ptxas hoists the loads, so the coefficients are live either way;")
    split_regs = max(fis["split_a"]["registers"], fis["split_b"]["registers"])
    print(f"  on sm_70 a 256-thread block fits twice only at <= 128 registers: fission took "
          f"{fis['mono']['registers']} -> {split_regs} registers, {fis['mono']['blocks']} -> "
          f"{min(fis['split_a']['blocks'], fis['split_b']['blocks'])} blocks per SM,")
    print("  paid for by re-reading and re-writing the output in the second kernel.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
