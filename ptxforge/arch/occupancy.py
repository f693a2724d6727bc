"""Occupancy with the semantics of NVIDIA's ``cuda_occupancy.h``, plus register cliffs.

The calculation follows the header's model step by step:

* **registers**: a warp's registers (``regs × 32``) are rounded up to the 256-register
  allocation unit; each of the SM's 4 sub-partitions holds ``regs_per_sm / 4`` registers, so
  it fits ``floor((regs_per_sm / 4) / regs_per_warp)`` warps; the SM fits 4 times that many
  warps, and ``that // warps_per_block`` blocks.  A block whose registers (with its warps
  rounded up to a multiple of 4) exceed ``regs_per_block`` cannot launch at all.  GP100
  (6.0) has 2 sub-partitions, and runs only what also fits GP10x's 4.
* **warps**: ``max_threads_per_sm / 32 // warps_per_block``; 0 when the block is too big.
* **blocks**: the per-architecture maximum of resident blocks.
* **shared memory**: static + dynamic + the 1 KB the driver reserves per block on 8.0+,
  rounded up to the allocation unit (256 B before 8.0, 128 B on 8.0+), against the carveout
  the driver picks (the preferred carveout, or the smallest supported one that fits a block;
  Maxwell and Pascal have one fixed size and no opt-in above 48 KB).
* **barriers** (9.0+): ``blocks_limit × (1 or 2) // barriers per block``.

Example::

    >>> occupancy(255, 256, "sm_70").active_blocks
    1
    >>> round(occupancy(51, 256, "8.6").occupancy, 3)
    0.667
"""

from __future__ import annotations

import functools
from typing import Optional, Union

import attrs

from ptxforge.errors import PtxforgeError, UnsupportedError

from .ptxas_model import REGISTER_LIMIT
from .targets import TARGETS, ArchProps, Target
from .targets import target as as_target

__all__ = [
    "KernelLimits","ARCHS", "arch_props", "unknown_arch_reason", "Occupancy",
           "RegisterCliffs", "occupancy", "register_cliffs", "occupancy_table",
           "implied_register_cap"]

INT_MAX = 2**31 - 1
KB = 1024


#: The occupancy tables by compute capability (``"8.6"``): a view of the target registry.
ARCHS: dict = {t.cc: t.props for t in TARGETS.values() if t.props is not None and not t.suffix}


def arch_props(target: Union[str, int, Target, ArchProps]) -> ArchProps:
    """Properties for ``"sm_86"``, ``"sm_90a"``, ``"8.6"``, ``86``, a Target or an ArchProps.

    A name the registry does not know, or a target it has no occupancy table for, raises
    UnsupportedError with the registry's reason.
    """
    if isinstance(target, ArchProps):
        return target
    tgt = as_target(target)
    if tgt.props is None:
        raise UnsupportedError(f"occupancy: {tgt.occupancy_reason}")
    return tgt.props


def unknown_arch_reason(target) -> Optional[str]:
    """None when the occupancy table covers ``target``; else why it cannot be computed.

    Example::

        >>> unknown_arch_reason("sm_80") is None
        True
    """
    if isinstance(target, ArchProps):
        return None
    try:
        return as_target(target).occupancy_reason
    except UnsupportedError as exc:
        return str(exc)


def _ceil_div(x: int, y: int) -> int:
    return -(-x // y)


def _round_up(x: int, y: int) -> int:
    return _ceil_div(x, y) * y


@attrs.frozen(slots=True, kw_only=True)
class Occupancy:
    """Result of :func:`occupancy`.  ``limits`` maps each resource to its block limit."""

    arch: str
    registers: int
    block_size: int
    shared_per_block: int           # static + dynamic bytes asked for
    active_blocks: int
    active_warps: int
    max_warps: int
    occupancy: float                # active warps / max warps per SM
    limiting: tuple[str, ...]       # names of the resources that bind, e.g. ("registers",)
    limits: dict = attrs.field(eq=False)
    allocated_registers_per_block: int = 0
    allocated_shared_per_block: int = 0
    reason: Optional[str] = None    # why no block can launch (None: launchable)

    @property
    def launchable(self) -> bool:
        """Whether one block of this shape can be resident on an SM at all."""
        return self.active_blocks > 0

    def to_dict(self) -> dict:
        return {"arch": self.arch, "registers": self.registers, "block_size": self.block_size,
                "shared_per_block": self.shared_per_block, "active_blocks": self.active_blocks,
                "active_warps": self.active_warps, "max_warps": self.max_warps,
                "occupancy": round(self.occupancy, 6), "limiting": list(self.limiting),
                "limits": {k: (None if v == INT_MAX else v) for k, v in sorted(self.limits.items())},
                "launchable": self.launchable, "reason": self.reason}


def _smem_carveout(p: ArchProps, size: int) -> Optional[int]:
    """Round a wanted carveout up to a supported one (None: larger than any)."""
    for kb in p.carveouts_kb:
        if size <= kb * KB:
            return kb * KB
    return None


def _register_limit(p: ArchProps, regs: int, warps_per_block: int) -> int:
    """Blocks per SM the register file allows (cuda_occupancy.h's register step)."""
    regs_per_warp = _round_up(regs * p.warp_size, p.reg_alloc_unit)
    regs_assumed = regs_per_warp * _round_up(warps_per_block, p.sub_partitions)
    if (p.regs_per_block < regs_assumed or p.regs_per_block < regs_per_warp * warps_per_block
            or regs > p.register_check_limit):
        return 0
    if regs_per_warp == 0:
        return INT_MAX
    per_sub = (p.regs_per_sm // p.sub_partitions) // regs_per_warp
    return per_sub * p.sub_partitions // warps_per_block


def _block_check(p: ArchProps) -> ArchProps:
    """The properties whose per-block register check a launch must pass: GP100 (6.0, two
    sub-partitions) runs only what also fits GP10x (four), cuda_occupancy.h's rule for
    forward compatibility within Pascal; every other SM checks against itself."""
    return attrs.evolve(p, minor=1, sub_partitions=4) if (p.major, p.minor) == (6, 0) else p


def _limits(p: ArchProps, regs: int, block: int, static_smem: int, dyn_smem: int,
            barriers: int, carveout: Optional[int], max_dynamic: Optional[int]) -> tuple:
    warps_per_block = _ceil_div(block, p.warp_size)
    # registers
    regs_block = _round_up(regs * p.warp_size, p.reg_alloc_unit) * warps_per_block
    lim_regs = _register_limit(p, regs, warps_per_block)
    if lim_regs and _register_limit(_block_check(p), regs, warps_per_block) == 0:
        lim_regs = 0
    # warps
    lim_warps = 0 if block > p.max_threads_per_block else p.max_warps_per_sm // warps_per_block
    lim_blocks = p.max_blocks_per_sm
    # shared memory
    static_total = static_smem + p.reserved_shared_per_block
    smem_alloc = _round_up(static_total + dyn_smem, p.smem_alloc_unit)
    max_dyn = dyn_smem if max_dynamic is None else max_dynamic
    smem_max_use = static_total + max_dyn
    per_block_limit = p.shared_per_block_optin if smem_max_use > p.shared_per_block \
        else p.shared_per_block
    per_block_limit += p.reserved_shared_per_block
    wanted = p.shared_per_sm if carveout is None else carveout * p.shared_per_sm // 100
    preferred = _smem_carveout(p, wanted)
    if preferred is None:  # pragma: no cover - the table's own sizes always fit
        raise PtxforgeError(f"occupancy: carveout {carveout}% is not supported on {p.cc}")
    if dyn_smem > max_dyn or smem_alloc > per_block_limit:
        lim_smem = 0
    else:
        smem_sm: Optional[int]
        if preferred >= smem_alloc:
            smem_sm = preferred
        else:
            smem_sm = _smem_carveout(p, smem_alloc)
            if smem_sm is None:
                raise PtxforgeError(f"occupancy: {smem_alloc} bytes of shared memory per block "
                                    f"exceed every carveout of {p.cc}")
        lim_smem = smem_sm // smem_alloc if smem_alloc > 0 else INT_MAX
    limits = {"registers": lim_regs, "warps": lim_warps, "blocks": lim_blocks,
              "shared_memory": lim_smem}
    active = min(limits.values())
    limiting = [k for k in ("warps", "registers", "shared_memory", "blocks") if limits[k] == active]
    if p.major >= 9 and barriers > 0:
        lim_bars = lim_blocks * p.barrier_factor // barriers
        limits["barriers"] = lim_bars
        if lim_bars <= active:
            active = lim_bars
            limiting = [k for k in limiting if limits[k] == active] + ["barriers"]
    else:
        limits["barriers"] = INT_MAX
    return active, tuple(limiting), limits, regs_block, smem_alloc


def _max_regs_for_block(p: ArchProps, block: int) -> int:
    """The most registers per thread with which one block of ``block`` threads fits."""
    warps = _ceil_div(block, p.warp_size)
    sub = _block_check(p).sub_partitions
    for r in range(p.max_regs_per_thread, -1, -1):
        per_warp = _round_up(r * p.warp_size, p.reg_alloc_unit)
        if per_warp * _round_up(warps, sub) <= p.regs_per_block:
            return r
    return 0


def _why_not(p: ArchProps, registers: int, block: int, shared: int, dyn: int, barriers: int,
             limits: dict, smem_alloc: int) -> str:
    """Which resources keep even one block off the SM, with the limit and the ask."""
    why = []
    if block > p.max_threads_per_block:
        why.append(f"block size: {block} threads exceed the {p.max_threads_per_block} a block "
                   f"may have on {p.cc}")
    elif limits["registers"] == 0:
        per_warp = _round_up(registers * p.warp_size, p.reg_alloc_unit)
        check = _block_check(p)
        warps = _round_up(_ceil_div(block, p.warp_size), check.sub_partitions)
        gp10x = " as on GP10x, which GP100 must also fit" if check is not p else ""
        why.append(f"registers: {registers} registers/thread x {block} threads need "
                   f"{per_warp * warps} registers ({per_warp} per warp x {warps} warps{gp10x}), "
                   f"more than the {p.regs_per_block} one block may use on {p.cc} (at most "
                   f"{_max_regs_for_block(p, block)} registers/thread at this block size)")
    if limits["shared_memory"] == 0:
        reserved = (f" + {p.reserved_shared_per_block} reserved by the driver"
                    if p.reserved_shared_per_block else "")
        why.append(f"shared memory: {shared + dyn} bytes per block{reserved} = {smem_alloc} "
                   f"bytes, more than the {p.shared_per_block_optin + p.reserved_shared_per_block}"
                   f" a block may have on {p.cc} (opt-in maximum {p.shared_per_block_optin} "
                   "bytes)")
    if limits.get("barriers", INT_MAX) == 0:
        why.append(f"barriers: {barriers} barriers per block exceed the "
                   f"{p.max_blocks_per_sm * p.barrier_factor} an SM has on {p.cc}")
    return "; ".join(why) or "no block fits"


def _limit(attribute, value, least: int) -> None:
    """A KernelLimits field is None or an int of at least ``least``."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < least):
        raise PtxforgeError(f"KernelLimits.{attribute.name}: expected None or an int >= {least}, "
                            f"got {value!r}")


@attrs.frozen(slots=True, kw_only=True)
class KernelLimits:
    """A kernel's own launch limits, as it declares them or ptxas and the driver report:
    ``max_threads`` (``.maxntid``, ``__launch_bounds__``, or the compiled kernel's
    maximum), ``required_threads`` (the block size ``.reqntid`` demands) and
    ``max_dynamic_shared`` (its dynamic shared memory limit; None: the device's).

    Example::

        >>> occupancy(32, 512, "sm_80", kernel_limits=KernelLimits(max_threads=256)).active_blocks
        0
    """

    max_threads: Optional[int] = attrs.field(default=None,
                                             validator=lambda i, a, v: _limit(a, v, 1))
    required_threads: Optional[int] = attrs.field(default=None,
                                                  validator=lambda i, a, v: _limit(a, v, 1))
    max_dynamic_shared: Optional[int] = attrs.field(default=None,
                                                    validator=lambda i, a, v: _limit(a, v, 0))


_NO_LIMITS = KernelLimits()


def occupancy(registers: int, block_size: int, target: Union[str, ArchProps] = "sm_80", *,
              shared: int = 0, dynamic_shared: int = 0, barriers: int = 1,
              carveout: Optional[int] = None, kernel_limits: Optional[KernelLimits] = None
              ) -> Occupancy:
    """Active blocks per SM and occupancy for ``registers`` per thread at ``block_size``.

    ``shared`` is the kernel's static shared memory, ``dynamic_shared`` the launch's dynamic
    shared memory, ``barriers`` the barriers per block (counts on 9.0+), ``carveout`` the
    preferred shared-memory carveout in percent (None: the driver default, the maximum).
    ``kernel_limits`` are the kernel's own (:class:`KernelLimits`): its block-size limit
    (``.maxntid`` or what ptxas/the driver report) and the block size ``.reqntid`` demands;
    a block size they forbid cannot launch (0 blocks, limiter ``block_size`` or ``reqntid``).
    When no block can launch, ``reason`` says which resource, its limit and the ask.

    Example::

        >>> occupancy(128, 256, "sm_70").active_blocks
        2
    """
    p = arch_props(target)
    lim = _NO_LIMITS if kernel_limits is None else kernel_limits
    max_threads, required_threads = lim.max_threads, lim.required_threads
    max_dynamic_shared = lim.max_dynamic_shared
    if not isinstance(registers, int) or registers < 0:
        raise PtxforgeError(f"occupancy: registers must be an int >= 0, got {registers!r}")
    if not isinstance(block_size, int) or block_size <= 0:
        raise PtxforgeError(f"occupancy: block_size must be an int > 0, got {block_size!r}")
    if shared < 0 or dynamic_shared < 0 or barriers < 0:
        raise PtxforgeError(f"occupancy: shared={shared}, dynamic_shared={dynamic_shared}, "
                            f"barriers={barriers} must all be >= 0")
    if carveout is not None and not 0 <= carveout <= 100:
        raise PtxforgeError(f"occupancy: carveout is a percentage 0..100 or None, got {carveout}")
    active, limiting, limits, regs_block, smem_alloc = _limits(
        p, registers, block_size, shared, dynamic_shared, barriers, carveout, max_dynamic_shared)
    reason = None
    if required_threads is not None and block_size != required_threads:
        limits["block_size"] = 0
        active, limiting = 0, ("reqntid",)
        reason = (f"reqntid: the kernel requires exactly {required_threads} threads per block "
                  f"(.reqntid); a block of {block_size} cannot launch")
    elif max_threads is not None and block_size > max_threads:
        limits["block_size"] = 0
        active, limiting = 0, ("block_size",)
        reason = (f"block size: the kernel allows at most {max_threads} threads per block "
                  f"(.maxntid/.reqntid or ptxas); a block of {block_size} cannot launch")
    elif active == 0:
        reason = _why_not(p, registers, block_size, shared, dynamic_shared, barriers, limits,
                          smem_alloc)
    warps = active * _ceil_div(block_size, p.warp_size)
    return Occupancy(arch=f"sm_{p.major}{p.minor}", registers=registers, block_size=block_size,
                     shared_per_block=shared + dynamic_shared,
                     active_blocks=active, active_warps=warps, max_warps=p.max_warps_per_sm,
                     occupancy=warps / p.max_warps_per_sm, limiting=limiting,
                     limits=limits, allocated_registers_per_block=regs_block,
                     allocated_shared_per_block=smem_alloc, reason=reason)


@attrs.frozen(slots=True, kw_only=True)
class RegisterCliffs:
    """Where the register count changes the resident blocks per SM at a fixed block size.

    ``to_gain``: registers to shave to reach the next block/SM (None: registers do not bind
    or no count reaches more blocks); ``headroom``: registers that can be added before a block
    is lost (None: even 255 keeps the count); ``steps``: ``(max_registers, blocks)`` for every
    plateau, highest register count first.
    """

    registers: int
    block_size: int
    arch: str
    blocks: int
    to_gain: Optional[int]
    next_blocks: Optional[int]
    headroom: Optional[int]
    steps: tuple

    @property
    def caps(self) -> tuple:
        """The largest register count of each plateau: the caps worth trying."""
        return tuple(r for r, _ in self.steps)

    def to_dict(self) -> dict:
        return {"arch": self.arch, "registers": self.registers, "block_size": self.block_size,
                "blocks": self.blocks, "to_gain": self.to_gain, "next_blocks": self.next_blocks,
                "headroom": self.headroom,
                "steps": [{"max_registers": r, "blocks": b} for r, b in self.steps]}


_BLOCKS: dict = {}  # (props, block size, other resources) -> blocks per register count


def _blocks_per_count(p, block_size: int, kwargs: dict) -> list:
    """Blocks per SM at every register count 0..max (computed once per launch shape: a file
    of 840 kernels asks for the same few shapes; the list is never modified)."""
    try:
        key = (p, block_size, tuple(sorted(kwargs.items())))
        hash(key)
    except TypeError:
        key = None
    blocks = _BLOCKS.get(key) if key is not None else None
    if blocks is None:
        first = occupancy(0, block_size, p, **kwargs)   # checks the arguments once
        if first.limiting in (("reqntid",), ("block_size",)):   # no register count launches
            blocks = [0] * (p.max_regs_per_thread + 1)
        else:   # only the register limit moves: the resource arithmetic, no Occupancy each
            lim = kwargs.get("kernel_limits") or _NO_LIMITS
            args = (block_size, kwargs.get("shared", 0), kwargs.get("dynamic_shared", 0),
                    kwargs.get("barriers", 1), kwargs.get("carveout"), lim.max_dynamic_shared)
            blocks = [_limits(p, r, *args)[0] for r in range(p.max_regs_per_thread + 1)]
        if key is not None and len(_BLOCKS) < 4096:
            _BLOCKS[key] = blocks
    return blocks


def register_cliffs(registers: int, block_size: int, target: Union[str, ArchProps] = "sm_80",
                    **kwargs) -> RegisterCliffs:
    """The occupancy cliffs around ``registers`` (other resources held fixed).

    Example::

        >>> c = register_cliffs(255, 256, "sm_70")
        >>> c.to_gain, c.next_blocks
        (127, 2)
    """
    p = arch_props(target)
    top = p.max_regs_per_thread
    blocks = _blocks_per_count(p, block_size, kwargs)
    mine = blocks[min(registers, top)] if registers <= top else 0
    steps = []
    for r in range(top, 0, -1):
        if r == top or blocks[r] != blocks[r + 1]:
            steps.append((r, blocks[r]))
    to_gain = next_blocks = None
    for r in range(min(registers, top), 0, -1):
        if blocks[r] > mine:
            to_gain, next_blocks = registers - r, blocks[r]
            break
    headroom = None
    if registers <= top:
        last = registers
        while last < top and blocks[last + 1] == mine:
            last += 1
        headroom = None if last == top else last - registers
    return RegisterCliffs(registers=registers, block_size=block_size, arch=f"sm_{p.major}{p.minor}",
                          blocks=mine, to_gain=to_gain,
                          next_blocks=next_blocks, headroom=headroom, steps=tuple(steps))


def occupancy_table(registers_list, block_size: int, target="sm_80", **kwargs) -> list:
    """:func:`occupancy` for several register counts (a list of Occupancy)."""
    return [occupancy(r, block_size, target, **kwargs) for r in registers_list]


@functools.lru_cache(maxsize=1024)
def implied_register_cap(threads: int, min_blocks: int = 1, target: str = "sm_80") -> int:
    """The cap ptxas derives from launch bounds: the most registers per thread with which
    ``min_blocks`` blocks of ``threads`` threads fit in one SM's register file (255: none).

    The blocks the register file holds never grow with the registers per thread, so a binary
    search over 1 .. 255 finds it in eight occupancy evaluations (remembered per argument).
    ptxas also refuses a ``setmaxnreg.dec`` above it (the DSL checks that).

    Example::

        >>> implied_register_cap(256, 4, "sm_80"), implied_register_cap(1024, 1, "sm_90a")
        (64, 64)
    """
    props = arch_props("sm_80" if unknown_arch_reason(target) else target)
    want = max(min_blocks, 1)

    def fits(regs: int) -> bool:
        return occupancy(regs, threads, props).limits["registers"] >= want

    lo, hi = 0, REGISTER_LIMIT                    # fits(lo) holds (0: the sentinel), the answer <= hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
