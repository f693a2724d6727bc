"""The one target registry: every GPU target ptxforge knows, and what each layer needs of it.

A :class:`Target` is one name a compiler takes (``sm_90a``): its compute capability, the
lowest PTX ISA version that knows it, which CUDA toolkits' ptxas compile it, and the per-SM
limits the occupancy calculator needs (:class:`ArchProps`, or None where ptxforge has no
table for it, with the reason).  Every layer (the builder's ``target=``, compile options,
occupancy, the reports and the CLI) turns what the user typed into a :class:`Target` with
:func:`target`, once, at its entry point, so they accept the same names and refuse the
others with the same message.

Example::

    >>> t = target("90a")
    >>> t.name, t.cc, t.min_ptx, t.compute
    ('sm_90a', '9.0', (8, 0), 'compute_90a')
    >>> target(80) is target("sm_80") is target("8.0") is target("compute_80")
    True
"""

from __future__ import annotations

import re
from typing import Optional, Union

import attrs

from ptxforge.errors import UnsupportedError

__all__ = ["ArchProps", "DEFAULT_ARCH", "Target", "TARGETS", "resolve_target", "target",
           "target_names"]

#: The target an analysis assumes when neither the caller nor the PTX names one it knows.
DEFAULT_ARCH = "sm_80"

KB = 1024


@attrs.frozen(slots=True, kw_only=True)
class ArchProps:
    """The per-compute-capability properties the calculator needs (cudaDeviceProp subset)."""

    major: int
    minor: int
    max_threads_per_block: int
    max_threads_per_sm: int
    regs_per_block: int
    regs_per_sm: int
    shared_per_block: int           # default per-block limit (48 KB)
    shared_per_sm: int              # the largest carveout
    shared_per_block_optin: int
    reserved_shared_per_block: int  # 1 KB on 8.0+
    max_blocks_per_sm: int
    carveouts_kb: tuple[int, ...]   # supported shared-memory carveouts, KB
    warp_size: int = 32
    sub_partitions: int = 4
    reg_alloc_unit: int = 256
    max_regs_per_thread: int = 255

    @property
    def cc(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size

    @property
    def register_check_limit(self) -> int:
        """Registers per thread above which cuda_occupancy.h fits no block (255 before 7.0, 256
        after: the header's own bound; ptxas never assigns more than 255)."""
        return 255 if self.major < 7 else 256

    @property
    def smem_alloc_unit(self) -> int:
        return 256 if self.major < 8 else 128

    @property
    def barrier_factor(self) -> int:
        """Barriers available per resident-block slot (9.0+ only enter the calculation)."""
        if self.major == 8:
            return 2 if self.minor == 0 else 1
        if self.major == 10:
            return 2 if self.minor == 0 else 1
        if self.major == 12:
            return 1
        return 2


def _props(major, minor, threads_sm, smem_sm_kb, max_blocks, carveouts, reserved):
    optin = (smem_sm_kb - (1 if reserved else 0)) * KB if major >= 7 else 48 * KB
    return ArchProps(major=major, minor=minor, max_threads_per_block=1024,
                     max_threads_per_sm=threads_sm, regs_per_block=65536, regs_per_sm=65536,
                     shared_per_block=48 * KB, shared_per_sm=smem_sm_kb * KB,
                     shared_per_block_optin=optin, reserved_shared_per_block=KB if reserved else 0,
                     max_blocks_per_sm=max_blocks, carveouts_kb=tuple(carveouts))


_VOLTA = (0, 8, 16, 32, 64, 96)
_A100 = (0, 8, 16, 32, 64, 100, 132, 164)
_GA10X = (0, 8, 16, 32, 64, 100)
_H100 = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)

#: Per-SM limits by compute capability (NVIDIA CUDA C++ Programming Guide, "Compute
#: Capabilities" table; carveouts and block limits as cuda_occupancy.h models them, which
#: tests/arch/test_occupancy_differential.py checks cell by cell).
_PROPS = {
    # Maxwell and Pascal: dedicated shared memory (no carveout: one configuration), no opt-in
    # above 48 KB; 5.3 and 6.2 allow 32K registers per block; GP100 (6.0) has 2 sub-partitions.
    "5.0": _props(5, 0, 2048, 64, 32, (64,), False),
    "5.2": _props(5, 2, 2048, 96, 32, (96,), False),
    "5.3": attrs.evolve(_props(5, 3, 2048, 64, 32, (64,), False), regs_per_block=32768),
    "6.0": attrs.evolve(_props(6, 0, 2048, 64, 32, (64,), False), sub_partitions=2),
    "6.1": _props(6, 1, 2048, 96, 32, (96,), False),
    "6.2": attrs.evolve(_props(6, 2, 2048, 64, 32, (64,), False), regs_per_block=32768),
    "7.0": _props(7, 0, 2048, 96, 32, _VOLTA, False),
    "7.2": _props(7, 2, 2048, 96, 32, _VOLTA, False),
    "7.5": _props(7, 5, 1024, 64, 16, (32, 64), False),
    "8.0": _props(8, 0, 2048, 164, 32, _A100, True),
    "8.6": _props(8, 6, 1536, 100, 16, _GA10X, True),
    "8.7": _props(8, 7, 1536, 164, 16, _A100, True),
    "8.9": _props(8, 9, 1536, 100, 24, _GA10X, True),
    "9.0": _props(9, 0, 2048, 228, 32, _H100, True),
    "10.0": _props(10, 0, 2048, 228, 32, _H100, True),
    "10.3": _props(10, 3, 2048, 228, 32, _H100, True),
    "12.0": _props(12, 0, 1536, 100, 24, _GA10X, True),
    "12.1": _props(12, 1, 1536, 100, 24, _GA10X, True),
}


@attrs.frozen(slots=True, kw_only=True)
class Target:
    """A compilation target such as ``sm_90a``: SM number, suffix, PTX minimum, toolkits, limits.

    ``suffix`` is ``""``, ``"a"`` (architecture-specific features, this SM only) or ``"f"``
    (family-specific features).  ``toolkits`` lists the CUDA major versions whose ptxas
    compiles the target.  ``props`` holds the occupancy calculator's per-SM limits, or None;
    then :attr:`occupancy_reason` says why.
    """

    name: str
    sm: int
    suffix: str
    min_ptx: tuple
    toolkits: tuple
    props: Optional[ArchProps] = attrs.field(default=None, eq=False, repr=False)

    @property
    def major(self) -> int:
        return self.sm // 10

    @property
    def minor(self) -> int:
        return self.sm % 10

    @property
    def cc(self) -> str:
        """The compute capability, ``"9.0"`` for sm_90a."""
        return f"{self.major}.{self.minor}"

    @property
    def base(self) -> str:
        """The name without its ``a``/``f`` suffix (``"sm_90"`` for sm_90a)."""
        return f"sm_{self.sm}"

    @property
    def compute(self) -> str:
        """The virtual architecture of the same name (``"compute_90a"``)."""
        return f"compute_{self.sm}{self.suffix}"

    @property
    def occupancy_reason(self) -> Optional[str]:
        """None when the occupancy calculator covers this target; else why not."""
        if self.props is not None:
            return None
        covered = ", ".join(t.name for t in TARGETS.values() if t.props is not None and not t.suffix)
        return (f"no occupancy table for {self.name}: its per-SM limits (threads, registers, "
                f"shared memory) are not in ptxforge's table, which covers {covered} (and "
                "their a/f variants)")

    def __str__(self) -> str:
        return self.name


def _tk(*majors: int) -> tuple:
    return tuple(majors)


# Lowest PTX ISA version that knows each target (PTX ISA "Release notes" / target table), and
# the CUDA toolkits whose ptxas compiles it.  Measured here by compiling an empty kernel at
# every PTX version with ptxas 12.9 (nvidia-cuda-nvcc-cu12) and nvJitLink 13.5: sm_75 and
# later accept the listed version and refuse the one below; CUDA 13 dropped sm_50 … sm_72
# and renamed sm_101 to sm_110, and only CUDA 13 knows sm_88 and sm_110.  sm_50 … sm_72 keep
# the ISA's documented minimums (ptxas 12.9 also takes sm_70 at PTX 5.1).
_ROWS = (
    ("sm_50", "4.0", _tk(12)), ("sm_52", "4.1", _tk(12)), ("sm_53", "4.2", _tk(12)),
    ("sm_60", "5.0", _tk(12)), ("sm_61", "5.0", _tk(12)), ("sm_62", "5.0", _tk(12)),
    ("sm_70", "6.0", _tk(12)), ("sm_72", "6.1", _tk(12)),
    ("sm_75", "6.3", _tk(12, 13)), ("sm_80", "7.0", _tk(12, 13)), ("sm_86", "7.1", _tk(12, 13)),
    ("sm_87", "7.4", _tk(12, 13)), ("sm_88", "9.0", _tk(13)), ("sm_89", "7.8", _tk(12, 13)),
    ("sm_90", "7.8", _tk(12, 13)), ("sm_90a", "8.0", _tk(12, 13)),
    ("sm_100", "8.6", _tk(12, 13)), ("sm_100a", "8.6", _tk(12, 13)),
    ("sm_100f", "8.8", _tk(12, 13)),
    ("sm_101", "8.6", _tk(12)), ("sm_101a", "8.6", _tk(12)), ("sm_101f", "8.8", _tk(12)),
    ("sm_103", "8.8", _tk(12, 13)), ("sm_103a", "8.8", _tk(12, 13)),
    ("sm_103f", "8.8", _tk(12, 13)),
    ("sm_110", "9.0", _tk(13)), ("sm_110a", "9.0", _tk(13)), ("sm_110f", "9.0", _tk(13)),
    ("sm_120", "8.7", _tk(12, 13)), ("sm_120a", "8.7", _tk(12, 13)),
    ("sm_120f", "8.8", _tk(12, 13)),
    ("sm_121", "8.8", _tk(12, 13)), ("sm_121a", "8.8", _tk(12, 13)),
    ("sm_121f", "8.8", _tk(12, 13)),
)

_NAME = re.compile(r"sm_(\d+)([af]?)")

#: Every target ptxforge knows, by name, oldest first.
TARGETS: dict[str, Target] = {}
for _name, _ptx, _kits in _ROWS:
    _m = _NAME.fullmatch(_name)
    assert _m is not None, _name  # the table's names are all sm_NN[a|f]
    _sm = int(_m.group(1))
    _major, _minor = _ptx.split(".")
    TARGETS[_name] = Target(name=_name, sm=_sm, suffix=_m.group(2),
                            min_ptx=(int(_major), int(_minor)), toolkits=_kits,
                            props=_PROPS.get(f"{_sm // 10}.{_sm % 10}"))


def target_names() -> str:
    """The known names, comma-separated, for error messages."""
    return ", ".join(TARGETS)


def target(spec: Union[str, int, Target]) -> Target:
    """The registered :class:`Target` for ``spec``; UnsupportedError names the known ones.

    Accepts ``"sm_80"``, ``"SM_80"``, ``"80"``, ``80``, ``"8.0"``, ``"compute_80"`` and the
    ``a``/``f`` variants (``"sm_90a"``, ``"90a"``, ``"compute_100f"``), or a Target.

    Example::

        >>> target("compute_100f").name
        'sm_100f'
    """
    if isinstance(spec, Target):
        return spec
    if type(spec) is str:   # a registered name as written ("sm_80"): no parsing to do
        found = TARGETS.get(spec)
        if found is not None:
            return found
    if isinstance(spec, bool) or not isinstance(spec, (str, int)):
        raise UnsupportedError(f"unknown target {spec!r}: expected a name such as 'sm_80' "
                               f"(one of {target_names()}), got a {type(spec).__name__}")
    s = str(spec).strip().lower()
    m = re.fullmatch(r"(\d+)\.(\d)([af]?)", s)
    if m:
        s = m.group(1) + m.group(2) + m.group(3)
    name = "sm_" + re.sub(r"^(sm_|compute_)", "", s)
    found = TARGETS.get(name)
    if found is None:
        raise UnsupportedError(f"unknown target {spec!r}; expected one of {target_names()}")
    return found


def resolve_target(given: Optional[Union[str, int]], ptx_target: Optional[str]) -> tuple:
    """``(target, source, note)``: ``given`` when given (source ``"given"``); else the PTX's
    own ``.target`` when ptxforge knows it (``"target"``); else :data:`DEFAULT_ARCH`
    (``"default"``) with a note saying why.

    Example::

        >>> resolve_target(None, "sm_90a")[:2], resolve_target("8.6", "sm_80")[:2]
        (('sm_90a', 'target'), ('sm_86', 'given'))
    """
    if given is not None:
        return target(given).name, "given", None
    word = (ptx_target or "").split(",")[0].strip()
    if not word:
        return DEFAULT_ARCH, "default", (f"the PTX has no .target: analysed for {DEFAULT_ARCH}"
                                         " (pass --arch to choose)")
    try:
        tgt = target(word)
    except UnsupportedError:
        return DEFAULT_ARCH, "default", (f"the PTX's .target {word} is not a target ptxforge "
                                         f"knows: analysed for {DEFAULT_ARCH} (pass --arch to "
                                         "choose)")
    return tgt.name, "target", None
