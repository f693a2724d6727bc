"""How ptxas's register count rises when k more .f32 values are kept live across a kernel.

For a few base kernels (built with ``ptxforge.testing.strategies`` recipes) and k = 0..32, compile the
base kernel and the same kernel with k extra ``.f32`` values loaded before a ``bar.sync`` at
the start and stored after a ``bar.sync`` at the end, in one module (one ptxas call), and
print the estimate's rise (always exactly k) next to ptxas's rise.

Run: ``PYTHONPATH=. python bench/ptxas_rise.py [--target sm_80] [--kmax 32] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import random

from ptxforge.analysis.liveness import analyze_liveness
from ptxforge.testing.strategies import KernelRecipe, ModuleRecipe, build_module, op_keys
from ptxforge.toolchain.compile import compile_ptx

__all__ = ["base_recipes", "rise", "main"]


def _random_steps(rng: random.Random, keys: tuple, n: int) -> tuple:
    """n op steps with random keys and picks (deterministic for a seeded rng)."""
    return tuple(("op", rng.choice(keys), tuple(rng.randrange(256) for _ in range(4)), None)
                 for _ in range(n))


def base_recipes(target: str) -> dict:
    """Named base-kernel step lists: empty, an f32 FMA chain, a loop, two random mixes."""
    keys = op_keys(target, ssa_only=True)
    fma = tuple(("op", "fma.f32", (k, k + 1, k + 2, k + 3), None) for k in range(16))
    loop = (("loop", 7, 0, tuple(("op", "fma.f32", (k, 2 * k, 3 * k, k), None) for k in range(6))),)
    return {
        "empty": (),
        "fma16": fma,
        "loop": loop,
        "mixA": _random_steps(random.Random(1), keys, 24),
        "mixB": _random_steps(random.Random(2), keys, 40),
    }


def rise(steps: tuple, k: int, target: str) -> tuple:
    """(estimate rise, ptxas rise, ptxas base count) for keeping k more values live."""
    pair = (KernelRecipe(steps=steps, directives=0, live_across=0),
            KernelRecipe(steps=steps, directives=0, live_across=k))
    recipe = ModuleRecipe(target=target, funcs=(), kernels=pair)
    module = build_module(recipe)
    est = [max(analyze_liveness(kern).series("at")) for kern in module.kernels]
    compiled = compile_ptx(module, target)
    regs = [compiled["k0"].registers, compiled["k1"].registers]
    return est[1] - est[0], regs[1] - regs[0], regs[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="sm_80")
    ap.add_argument("--kmax", type=int, default=32)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    bases = base_recipes(args.target)
    table = {name: [rise(steps, k, args.target) for k in range(args.kmax + 1)]
             for name, steps in bases.items()}
    names = list(table)
    print(f"ptxas register rise for k extra live .f32 values ({args.target}); "
          f"estimate rise is k in every cell unless marked")
    print("base registers: " + ", ".join(f"{n}={table[n][0][2]}" for n in names))
    print("  k | " + " | ".join(f"{n:>6}" for n in names))
    for k in range(args.kmax + 1):
        cells = []
        for n in names:
            est, px, _ = table[n][k]
            cells.append(f"{px:>6}" if est == k else f"{px:>3}!{est:<2}")
        print(f"{k:>3} | " + " | ".join(cells))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({n: [list(r) for r in rows] for n, rows in table.items()}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
