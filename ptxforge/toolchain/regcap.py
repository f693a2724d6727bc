"""Which register cap ptxas compiled a kernel under, where it came from, and whether the
``--maxrregcount`` that was asked for took effect.

Measured with nvJitLink 13.5 and the ptxas 12.9 / 13.0 executables (tests/toolchain/test_compile.py
pins it on real compiles):

* ``--maxrregcount N`` caps a kernel without launch bounds;
* a kernel's own ``.maxnreg M`` overrides ``--maxrregcount`` whichever is lower ("Overriding
  global maxrregcount 40 with entry-specific value 56 of .maxnreg");
* ``.maxntid`` / ``.reqntid`` (``__launch_bounds__``) make ptxas ignore ``--maxrregcount``
  (silently) and derive a cap from the thread count and ``.minnctapersm``: the most registers
  per thread with which ``minnctapersm`` blocks fit in the register file (256 threads x 4
  blocks: 64; .maxntid 1024 alone: 64; 384 x 2: 80 because a warp's registers come in units
  of 256);
* ``.maxnreg`` next to ``.maxntid``/``.minnctapersm`` is honoured, the lower cap winning.

The cubin's EIATTR_MAXREG_COUNT records the cap in force (255: none); without a cubin the
same rules give it from the directives.

Example::

    >>> implied_register_cap(256, 4, "sm_80"), implied_register_cap(384, 2, "sm_80")
    (64, 80)
"""

from __future__ import annotations

from typing import Optional

import attrs

from ptxforge.arch.occupancy import implied_register_cap
from ptxforge.arch.ptxas_model import REGISTER_LIMIT

__all__ = ["NO_CAP", "RegisterCap", "implied_register_cap", "resolve_register_cap"]

#: EIATTR_MAXREG_COUNT of a kernel compiled without a cap (ptxas's register limit).
NO_CAP = REGISTER_LIMIT


@attrs.frozen(slots=True, kw_only=True)
class RegisterCap:
    """``cap``: the cap in force (None: none); ``source``: ``"--maxrregcount"``,
    ``".maxnreg"``, ``"launch bounds"`` or ``"ptxas"``; ``detail`` spells the source out;
    ``note`` says why a requested ``--maxrregcount`` did not apply (None when it did, or when
    none was asked)."""

    cap: Optional[int]
    source: Optional[str] = None
    detail: Optional[str] = None
    note: Optional[str] = None


def _bounds_text(entry) -> str:
    dims = entry.reqntid or entry.maxntid
    text = (".reqntid " if entry.reqntid else ".maxntid ") + ", ".join(map(str, dims))
    if entry.minnctapersm:
        text += f" x .minnctapersm {entry.minnctapersm}"
    return text


def resolve_register_cap(entry, requested: Optional[int], target: str,
                         recorded: Optional[int] = None,
                         floor: Optional[int] = None) -> RegisterCap:
    """The cap ``entry`` (a :class:`~ptxforge.ptx.directives.PtxEntry`) was compiled under.

    ``requested`` is the ``--maxrregcount`` passed (None: none); ``recorded`` the cubin's
    EIATTR_MAXREG_COUNT when there is a cubin (the authority; without one the rules in the
    module docstring stand in); ``floor`` the count ptxas raised a lower request to ("adjusting
    per thread register count of 16 to lower bound of 24").
    """
    threads = entry.threads
    candidates = []                       # (cap, source, detail), in order of preference
    note = None
    if requested is not None:
        if threads is not None:
            note = (f"--maxrregcount={requested} not applied: ptxas ignores --maxrregcount for "
                    f"a kernel with {'.reqntid' if entry.reqntid else '.maxntid'} "
                    "(__launch_bounds__); cap it with .maxnreg instead "
                    "(ptxforge.ptx.directives.with_maxnreg; the sweep does so)")
        elif entry.maxnreg is not None:
            note = (f"--maxrregcount={requested} not applied: the kernel's own .maxnreg "
                    f"{entry.maxnreg} overrides it")
        elif floor is not None and requested < floor:
            candidates.append((floor, "--maxrregcount",
                               f"--maxrregcount={requested}, raised by ptxas to {floor}, its "
                               f"lower bound for {target}"))
            note = (f"--maxrregcount={requested} raised to {floor}: ptxas's lower bound for "
                    f"{target}")
        else:
            candidates.append((requested, "--maxrregcount", f"--maxrregcount={requested}"))
    if entry.maxnreg is not None:
        candidates.append((entry.maxnreg, ".maxnreg", f".maxnreg {entry.maxnreg} in the PTX"))
    if threads is not None:
        implied = implied_register_cap(threads, entry.minnctapersm or 1, target)
        if implied < NO_CAP:
            blocks = entry.minnctapersm or 1
            candidates.append((implied, "launch bounds",
                               f"{_bounds_text(entry)}: {blocks} block{'s' * (blocks > 1)} of "
                               f"{threads} threads must fit in the register file"))
    derived = min((c for c, _, _ in candidates), default=None)
    cap = derived if recorded is None else (recorded if recorded < NO_CAP else None)
    if cap is None:
        return RegisterCap(cap=None, note=note)
    for c, source, detail in candidates:
        if c == cap:
            return RegisterCap(cap=cap, source=source, detail=detail, note=note)
    return RegisterCap(cap=cap, source="ptxas", detail=f"EIATTR_MAXREG_COUNT {cap} in the cubin",
                       note=note)
