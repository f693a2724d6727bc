"""256-bit modular addition on the GPU, checked element by element against Python integers.

Each element is 8 little-endian u32 limbs; out = (a + b) mod p for a, b < p.  The inputs
include the carry cases that matter: a + b overflowing 2**256, a + b == p, a + b == p - 1,
zeros, and limb-boundary values.  Without a GPU it prints what it built and exits 0.
"""

from __future__ import annotations

import random
import sys

import _common
import numpy as np

from ptxforge.dsl import kernels
from ptxforge.launch.loader import load

LIMBS = 8
MASK = (1 << 32) - 1


def to_limbs(values) -> np.ndarray:
    """Python ints < 2**256 → (len, 8) uint32 array, least significant limb first."""
    return np.array([[(v >> (32 * i)) & MASK for i in range(LIMBS)] for v in values], np.uint32)


def from_limbs(rows: np.ndarray) -> list:
    return [sum(int(limb) << (32 * i) for i, limb in enumerate(row)) for row in rows]


def cases(count: int, seed: int = 4):
    """(a, b, p) triples with a, b < p: special cases first, then random ones."""
    rnd = random.Random(seed)
    top = (1 << 256) - 1
    p_big = top - 188                                  # near 2**256: a + b overflows 256 bits
    out = [
        (0, 0, p_big), (p_big - 1, 1, p_big), (p_big - 1, p_big - 1, p_big),
        (p_big - 2, 1, p_big), (1 << 255, (1 << 255) - 190, p_big),
        (MASK, 1, 1 << 64), ((1 << 32) - 1, (1 << 32) - 1, (1 << 33) + 1),
        (5, 6, 7), (0, 6, 7), (3, 3, 7),
    ]
    while len(out) < count:
        p = rnd.getrandbits(256) | 1
        if rnd.random() < 0.3:
            p |= 1 << 255                              # large moduli: frequent 257-bit sums
        if p < 2:
            continue
        out.append((rnd.randrange(p), rnd.randrange(p), p))
    return out


def main() -> int:
    module, _info = _common.build_for_device(kernels.modadd256)
    if _common.report_no_gpu("modadd256", module):
        return 0
    kernel = load(module)["modadd256"]
    triples = cases(100_003)
    a, b, p = (to_limbs(col) for col in zip(*triples))
    out = np.zeros_like(a)
    n, block = len(triples), 256
    kernel(a, b, p, out, n, grid=(n + block - 1) // block, block=block)
    got = from_limbs(out)
    wrong = [i for i, ((x, y, m), r) in enumerate(zip(triples, got)) if r != (x + y) % m]
    for i in wrong[:5]:
        x, y, m = triples[i]
        print(f"  element {i}: a={x:#x} b={y:#x} p={m:#x}\n    got {got[i]:#x} expected {(x + y) % m:#x}")
    overflow = sum(1 for x, y, _ in triples if x + y >= 1 << 256)
    print(f"modadd256: {n} elements ({overflow} with a+b >= 2**256), registers {kernel.num_regs}, "
          f"{len(wrong)} wrong")
    print("modadd256: PASS" if not wrong else "modadd256: FAIL")
    return 0 if not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
