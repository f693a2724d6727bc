"""Asynchronous copies and register budgets: ``cp.async`` (sm_80) with its commit / wait
groups, ``cp.async.bulk`` (sm_90) and ``setmaxnreg`` (sm_90a and the other ``a``/``f``
targets).

A ``cp.async`` writes shared memory behind the thread's back: nothing in a register changes,
so liveness sees only its two address operands.  Wait for the group (``cp_async_wait``) and
``bar_sync`` before reading what it wrote.

Example::

    >>> from ptxforge.dsl.builder import KernelBuilder
    >>> kb = KernelBuilder("k", target="sm_80")
    >>> src = kb.load_param(kb.param_ptr("x", "f32"))
    >>> tile = kb.shared_array("tile", "f32", 256, align=16)
    >>> kb.cp_async(kb.elem_ptr(tile, kb.tid()), kb.elem_ptr(src, kb.global_id()), 4)
    >>> kb.cp_async_commit(); kb.cp_async_wait(0)
    >>> "cp.async.ca.shared.global [%r3], [%rd4], 4;" in kb.ptx()
    True
"""

from __future__ import annotations

from ptxforge.arch.occupancy import implied_register_cap
from ptxforge.arch.ptxas_model import REGISTER_LIMIT
from ptxforge.errors import BuildError
from ptxforge.ptx import ir
from ptxforge.ptx import types as T

from .checks import _register_internal, _where, caller_loc, type_error
from .memory import MemoryOps

__all__ = ["AsyncCopyOps", "SETMAXNREG_RANGE", "entry_register_ceiling"]

_register_internal(__file__)

#: setmaxnreg's count: a multiple of 8 in this inclusive range (PTX ISA 9.7.17.1).
SETMAXNREG_RANGE = (24, 256)


def _group_count(op: str, n, loc) -> ir.Immediate:
    """The immediate group count of a wait (0 .. 7 pending groups)."""
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= 7:
        raise BuildError(f"{op}: n (groups left pending) must be an int in [0, 7], got {n!r}"
                         f"{_where(loc)}")
    return ir.Immediate(n, T.u32)


def entry_register_ceiling(directives: dict[str, tuple[int, ...]], target: str = "sm_80"
                           ) -> int | None:
    """The most registers a thread of this kernel may hold at entry, as ptxas derives it from
    the kernel's directives: ``.maxnreg n``, and the cap launch bounds imply (``.maxntid`` or
    ``.reqntid`` threads, times ``.minnctapersm`` blocks, in one SM's register file:
    :func:`~ptxforge.arch.occupancy.implied_register_cap`); None when no directive bounds it.

    ptxas refuses a ``setmaxnreg.dec`` to a count above this (error C7406): a warp cannot
    lower its budget to more than it starts with.

    Example::

        >>> entry_register_ceiling({".maxntid": (256, 1, 1), ".minnctapersm": (2,)}, "sm_90a")
        128
        >>> entry_register_ceiling({}) is None
        True
    """
    bounds = []
    if ".maxnreg" in directives:
        bounds.append(directives[".maxnreg"][0])
    dims = directives.get(".reqntid") or directives.get(".maxntid")
    if dims:
        blocks = directives.get(".minnctapersm", (1,))[0]
        cap = implied_register_cap(dims[0] * dims[1] * dims[2], blocks, target)
        if cap < REGISTER_LIMIT:
            bounds.append(cap)
    return min(bounds) if bounds else None


def _directive_text(directives: dict[str, tuple[int, ...]]) -> str:
    """The register-bounding directives as PTX writes them (".maxnreg 64, .maxntid 1024")."""
    return ", ".join(f"{name} {'x'.join(map(str, directives[name]))}"
                     for name in (".maxnreg", ".maxntid", ".reqntid", ".minnctapersm")
                     if name in directives)


class AsyncCopyOps(MemoryOps):
    """Mixin: ``cp.async``, ``cp.async.bulk`` and ``setmaxnreg``."""

    def _space_address(self, op, addr, want: str, loc, offset: int = 0) -> ir.Address:
        """An address in state space ``want`` ("shared" or "global")."""
        address, _, space = self._resolve_address(op, addr, T.b8, None, offset, loc)
        if not space and want == "global" and isinstance(address.base, ir.Register) \
                and address.base.type.bits == 64:
            space = "global"  # an untagged 64-bit pointer (a .func's parameter): the caller's word
        if space != want:
            raise BuildError(f"{op}: expected a {want}-memory address, got the "
                             f"{space or 'generic'} space{_where(loc)}")
        return address

    # -- cp.async (sm_80) -------------------------------------------------------------------

    def cp_async(self, dst, src, size: int = 16, *, cache: str = "ca", pred=None) -> None:
        """``cp.async.{ca,cg}.shared.global [dst], [src], size``: copy 4, 8 or 16 bytes from
        global to shared memory without a register in between (``cg``, which bypasses L1,
        copies 16 only).  Commit with :meth:`cp_async_commit`, wait with :meth:`cp_async_wait`.

        Example: ``kb.cp_async(kb.elem_ptr(tile, i), kb.elem_ptr(x, gi), 16, cache="cg")``
        """
        loc = caller_loc()
        if cache not in ("ca", "cg"):
            raise BuildError(f"cp_async: cache must be 'ca' or 'cg', got {cache!r}{_where(loc)}")
        allowed = (16,) if cache == "cg" else (4, 8, 16)
        if size not in allowed:
            raise BuildError(f"cp_async: cp.async.{cache} copies {' or '.join(map(str, allowed))}"
                             f" bytes, got {size!r}{_where(loc)}")
        d = self._space_address("cp_async", dst, "shared", loc)
        s = self._space_address("cp_async", src, "global", loc)
        self._emit(f"cp.async.{cache}.shared.global", (d, s, ir.Immediate(size, T.u32)), 0, loc,
                   pred, "cp_async")

    def cp_async_commit(self) -> None:
        """``cp.async.commit_group``: close the group of cp.async issued since the last one."""
        self._emit("cp.async.commit_group", (), 0, caller_loc(), op="cp_async_commit")

    def cp_async_wait(self, n: int = 0) -> None:
        """``cp.async.wait_group n``: wait until at most ``n`` groups are still in flight
        (1 in a double-buffered loop: the tile for the next step may still be arriving)."""
        loc = caller_loc()
        self._emit("cp.async.wait_group", (_group_count("cp_async_wait", n, loc),), 0, loc,
                   op="cp_async_wait")

    def cp_async_wait_all(self) -> None:
        """``cp.async.wait_all``: wait for every cp.async of this thread."""
        self._emit("cp.async.wait_all", (), 0, caller_loc(), op="cp_async_wait_all")

    # -- cp.async.bulk (sm_90) --------------------------------------------------------------

    def cp_async_bulk(self, dst, src, size, *, mbar=None, pred=None) -> None:
        """``cp.async.bulk``: copy ``size`` bytes (a multiple of 16) between global and shared
        memory by the copy engine.  Global to shared needs ``mbar``, the shared address of a
        ``.b64`` mbarrier that counts the bytes in (``.mbarrier::complete_tx::bytes``); shared
        to global completes as a bulk group (:meth:`cp_async_bulk_commit` / ``_wait``).

        Example: ``kb.cp_async_bulk(kb.elem_ptr(out, i), kb.address_of(tile), 4096)``
        """
        loc = caller_loc()
        if isinstance(size, int) and not isinstance(size, bool):
            if size <= 0 or size % 16:
                raise BuildError(f"cp_async_bulk: size must be a positive multiple of 16 "
                                 f"bytes, got {size}{_where(loc)}")
            count: ir.Immediate | ir.Register = ir.Immediate(size, T.u32)
        elif isinstance(size, ir.Register) and size.type.bits == 32 and size.type.is_int:
            count = size
        else:
            raise type_error("cp_async_bulk", "a byte count (int or .u32 register)", size, loc)
        dst_space = self._resolve_address("cp_async_bulk", dst, T.b8, None, 0, loc)[2]
        if dst_space == "shared":
            if mbar is None:
                raise BuildError(f"cp_async_bulk: a global -> shared bulk copy completes on an "
                                 f"mbarrier; pass mbar= (the shared address of a .b64 "
                                 f"mbarrier){_where(loc)}")
            d = self._space_address("cp_async_bulk", dst, "shared", loc)
            s = self._space_address("cp_async_bulk", src, "global", loc)
            m = self._space_address("cp_async_bulk", mbar, "shared", loc)
            self._emit("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
                       (d, s, count, m), 0, loc, pred, "cp_async_bulk")
            return
        if mbar is not None:
            raise BuildError(f"cp_async_bulk: a shared -> global bulk copy completes as a bulk "
                             f"group, not on an mbarrier; drop mbar={_where(loc)}")
        d = self._space_address("cp_async_bulk", dst, "global", loc)
        s = self._space_address("cp_async_bulk", src, "shared", loc)
        self._emit("cp.async.bulk.global.shared::cta.bulk_group", (d, s, count), 0, loc, pred,
                   "cp_async_bulk")

    def cp_async_bulk_commit(self) -> None:
        """``cp.async.bulk.commit_group``: close the group of bulk copies issued so far."""
        self._emit("cp.async.bulk.commit_group", (), 0, caller_loc(), op="cp_async_bulk_commit")

    def cp_async_bulk_wait(self, n: int = 0) -> None:
        """``cp.async.bulk.wait_group n``: wait until at most ``n`` bulk groups are pending."""
        loc = caller_loc()
        self._emit("cp.async.bulk.wait_group", (_group_count("cp_async_bulk_wait", n, loc),), 0,
                   loc, op="cp_async_bulk_wait")

    # -- setmaxnreg (sm_90a) ----------------------------------------------------------------

    def setmaxnreg(self, count: int, *, inc: bool = True) -> None:
        """``setmaxnreg.{inc,dec}.sync.aligned.u32 count``: raise (or, ``inc=False``, lower)
        this warp's register budget, for warp-specialised kernels (producers give registers
        to consumers); ``count`` is a multiple of 8 in [24, 256].

        Example: ``kb.setmaxnreg(240)``
        """
        loc = caller_loc()
        lo, hi = SETMAXNREG_RANGE
        if not isinstance(count, int) or isinstance(count, bool) or not lo <= count <= hi \
                or count % 8:
            raise BuildError(f"setmaxnreg: count must be a multiple of 8 in [{lo}, {hi}], got "
                             f"{count!r}{_where(loc)}")
        self._emit(f"setmaxnreg.{'inc' if inc else 'dec'}.sync.aligned.u32",
                   (ir.Immediate(count, T.u32),), 0, loc, op="setmaxnreg")
        self.__dict__.setdefault("_setmaxnreg", []).append((count, inc, loc))

    def build_kernel(self) -> ir.Kernel:
        """As :meth:`_Core.build_kernel`, after checking each ``setmaxnreg.dec`` against the
        largest register count ptxas sees in the kernel (it rejects one above, C7406): the
        largest ``setmaxnreg.inc`` count when there is one, else the count the directives give
        the kernel at entry (measured with ptxas 13.5; order in the code does not matter)."""
        calls = self.__dict__.get("_setmaxnreg", ())
        incs = [count for count, inc, _ in calls if inc]
        ceiling = max(incs) if incs else entry_register_ceiling(self._directives, self.target)
        why = ("its largest setmaxnreg.inc count" if incs else
               f"what {self.name} has at entry (from {_directive_text(self._directives)})")
        for count, inc, loc in calls:
            if not inc and ceiling is not None and count > ceiling:
                raise BuildError(
                    f"setmaxnreg(count={count}, inc=False): lowers the register budget to more "
                    f"than {why}, {ceiling}; ptxas rejects it (C7406): use a count of at most "
                    f"{ceiling}{_where(loc)}")
        return super().build_kernel()
