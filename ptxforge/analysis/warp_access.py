"""What one warp's access costs: 32-byte sectors (global, local) and shared-memory banks.

Pure functions over the byte addresses the threads of a warp present (lane order), so the
static analysis (:mod:`ptxforge.analysis.memory_access`) and the checked fixes
(:mod:`ptxforge.analysis.memory_fixes`) count the same way.  The rules (docs/memory.md):

- **global**: the number of distinct 32-byte sectors the warp's bytes fall in (Nsight
  Compute's sectors per request): 4 for 32 consecutive 4-byte elements, 32 for a stride of
  32 bytes or more, 1 when every thread reads the same 4 bytes.
- **shared**: 32 banks of 4-byte words (bank = word index mod 32).  A warp's request is
  processed in *phases*: 32 threads for accesses of 1 to 4 bytes, 16 (each half warp) for 8
  bytes, 8 (each quarter warp) for 16 bytes, so that a phase moves at most 128 bytes.  In a
  phase, the threads that touch the same word share it (a broadcast, not a conflict); the
  phase takes as many wavefronts as the most distinct words any one bank is asked for (its
  *ways*).  Wavefronts per request add the phases up; ways is the worst phase's.
- **local**: per-thread memory, interleaved by 4-byte word across the 32 threads of a warp
  (word k of lane l at ``128*k + 4*l``): the same offset in every thread is 4 sectors for a
  4-byte access, 8 for 8 bytes.

Example::

    >>> from ptxforge.analysis.warp_access import global_sectors, shared_banks
    >>> global_sectors([4 * lane for lane in range(32)], 4)
    4
    >>> shared_banks([128 * lane for lane in range(32)], 4)
    (32, 32)
"""

from __future__ import annotations

__all__ = [
    "BANKS",
    "WARP",
    "global_sectors",
    "ideal_sectors",
    "local_sectors",
    "shared_banks",
    "shared_phase",
    "warps",
]

from .affine import THREAD_SYMBOLS, Affine

WARP = 32
BANKS = 32


def warps(block: tuple) -> list:
    """The threads of each warp of a block as (x, y, z) tuples, x fastest."""
    bx, by, bz = block
    threads = [(i % bx, (i // bx) % by, i // (bx * by)) for i in range(bx * by * bz)]
    return [threads[w:w + WARP] for w in range(0, len(threads), WARP)]


def global_sectors(addresses, width: int) -> int:
    """Distinct 32-byte sectors touched by ``width`` bytes at each address."""
    return len({s for a in addresses for s in range(a // 32, (a + width - 1) // 32 + 1)})


def ideal_sectors(lanes: int, width: int) -> int:
    """The fewest sectors ``lanes`` threads reading distinct ``width``-byte elements touch."""
    return max(1, -(-lanes * width // 32))


def shared_phase(width: int) -> int:
    """Threads per phase of a shared-memory request of ``width`` bytes per thread."""
    return WARP if width <= 4 else max(1, 128 // width)


def shared_banks(addresses, width: int, phase: int = 0) -> tuple:
    """(ways, wavefronts) of a shared-memory request: ``phase`` threads at a time (default
    :func:`shared_phase`), the most distinct words one bank is asked for in each phase."""
    phase = phase or shared_phase(width)
    addresses = list(addresses)
    worst, wavefronts = 0, 0
    for start in range(0, len(addresses), phase):
        banks: dict = {}
        for a in addresses[start:start + phase]:
            for word in range(a // 4, (a + width - 1) // 4 + 1):
                banks.setdefault(word % BANKS, set()).add(word)
        ways = max((len(words) for words in banks.values()), default=0)
        worst = max(worst, ways)
        wavefronts += ways
    return worst, wavefronts


def local_sectors(offsets, width: int) -> int:
    """Sectors of a local-memory access: each lane's ``width`` bytes at its per-thread offset,
    with words interleaved across the warp (word k of lane l at ``128*k + 4*l``)."""
    sectors = set()
    for lane, off in enumerate(offsets):
        for word in range(off // 4, (off + width - 1) // 4 + 1):
            sectors.add((128 * word + 4 * lane) // 32)
    return len(sectors)


def lane_addresses(value: Affine, block: tuple):
    """Per warp of the block, each thread's byte address (uniform terms as 0), or the reason
    (a thread index whose stride depends on a parameter) as a string."""
    coeff = {s: 0 for s in THREAD_SYMBOLS}
    for mono, c in value.thread_part().items():
        if len(mono) != 1:
            other = " * ".join(s for s in mono if s not in THREAD_SYMBOLS)
            thread = next(s for s in mono if s in THREAD_SYMBOLS)
            return f"the stride of {thread} depends on {other}: not known before launch"
        coeff[mono[0]] += c
    base = value.offset()
    cx, cy, cz = coeff["tid.x"], coeff["tid.y"], coeff["tid.z"]
    return [[base + cx * x + cy * y + cz * z for x, y, z in w] for w in warps(block)]
