"""The one opcode table: every PTX opcode family with its traits, modifiers and operand shape.

Each family has one :class:`OpInfo` row in :data:`FAMILIES`.  Consumers ask the row by trait
(in the spirit of xdsl's ``op.has_trait(IsTerminator)``) instead of keeping their own sets of
family names: the CFG asks :class:`Terminator`, the lexer :class:`WritesNoRegister`, the mix,
the SASS view and the list scheduler :class:`MemoryAccess`, the if-converter and the
scheduler :class:`WarpCollective` / :class:`Barrier` / :class:`OrdersMemory`.  The strict
parser's modifier check (:mod:`ptxforge.ptx.parse.opcodes`) reads :attr:`OpInfo.modifiers`;
the builder's stricter table (:data:`ptxforge.ptx.isa.OPS`: legal types, rules, forbidden
forms) takes its operand shapes from here and its modifiers are a subset of these (a test
holds them to it).

A dotted opcode is parsed once into an interned :class:`Opcode` (family, modifiers, types,
vector width, state space, the row), kept on the IR (:attr:`ptxforge.ptx.ir.Instruction.op`).

Example::

    >>> from ptxforge.ptx.opcodes import FAMILIES, Terminator, opcode_of
    >>> FAMILIES["bra"].has(Terminator), FAMILIES["add"].has(Terminator)
    (True, False)
    >>> op = opcode_of("ld.global.v4.f32")
    >>> op.family, op.space, op.vector, op.types, op.info.memory.direction
    ('ld', 'global', 4, ('f32',), 'load')
    >>> FAMILIES["fma"].shape, [s.name for s in FAMILIES["fma"].operands]
    ('d, a, b, c', ['d', 'a', 'b', 'c'])
"""

from __future__ import annotations

import re
from typing import Optional

import attrs

__all__ = [
    "Trait", "Terminator", "Branch", "Return", "Abort", "Call", "WritesNoRegister",
    "WarpCollective", "Barrier",
    "OrdersMemory", "MemoryAccess", "OperandSlot", "OpInfo", "Opcode", "FAMILIES",
    "TYPE_NAMES", "SPACES", "LOOSE_WORDS", "opcode_of", "info", "families_with",
]


# -- traits ----------------------------------------------------------------------------------
class Trait:
    """A fact about an opcode family; marker traits are classes, parameterised ones attrs
    instances (:class:`MemoryAccess`).  Ask with :meth:`OpInfo.has`."""


class Terminator(Trait):
    """Ends a basic block: ``bra``, ``brx``, ``ret``, ``exit``, ``trap``."""


class Branch(Terminator):
    """Jumps to a label (``bra``) or one of a list of labels (``brx.idx``)."""


class Return(Terminator):
    """Ends the function or the thread normally (``ret``, ``exit``)."""


class Abort(Terminator):
    """Ends the kernel with an error (``trap``)."""


class Call(Trait):
    """Calls a function (``call``): a block boundary for the predicator, an ordering point."""


class WarpCollective(Trait):
    """Every lane of a warp takes part (``shfl``, ``vote``, ``redux`` ...): predicating one
    changes which lanes join."""


class Barrier(Trait):
    """A CTA barrier (``bar``, ``barrier``)."""


class OrdersMemory(Trait):
    """Orders every memory operation around it (barriers, fences, calls, async-copy and
    mbarrier bookkeeping, warpgroup MMA, trap)."""


@attrs.frozen(slots=True, kw_only=True)
class WritesNoRegister(Trait):
    """Writes no register: every operand is a use.  ``unless`` lists sub-opcode prefixes of the
    family that do write one (``mbarrier.try_wait``); ``unless_modifier`` a modifier that
    does (``bar.red``)."""

    unless: tuple = ()
    unless_modifier: str = ""

    def applies(self, opcode: str, modifiers: tuple) -> bool:
        """True when ``opcode`` (with its ``modifiers``) writes no register."""
        if self.unless and opcode.startswith(self.unless):
            return False
        return not (self.unless_modifier and self.unless_modifier in modifiers)


@attrs.frozen(slots=True, kw_only=True)
class MemoryAccess(Trait):
    """Reads or writes memory through an address operand.

    ``direction``: ``load``, ``store``, ``atomic`` (read-modify-write, reductions included),
    ``prefetch``, ``async`` (``cp.async`` copies and their bookkeeping) or ``fragment``
    (``wmma``: the sub-opcode, ``.load`` or ``.store``, says which).  ``texture`` marks the
    texture and surface families, whose ``spaces`` are fixed; other families name their state
    space in a modifier (:attr:`Opcode.space`).  ``shared_only`` marks the families that only
    ever reach shared memory (``ldmatrix``, ``stmatrix``), whatever space they spell.
    """

    direction: str
    texture: bool = False
    spaces: tuple = ()
    shared_only: bool = False

    @property
    def reads(self) -> bool:
        """Loads and prefetches (what a scheduler orders as a read)."""
        return self.direction in ("load", "prefetch")

    @property
    def writes(self) -> bool:
        """Stores and atomics (what a scheduler orders as a write)."""
        return self.direction in ("store", "atomic")


# -- modifier words (PTX ISA 9.x, chapter 9) ---------------------------------------------------
TYPE_NAMES = frozenset("""
pred b1 b4 b6 b8 b16 b32 b64 b128 u2 u4 u8 u16 u32 u64 s2 s4 s8 s16 s32 s64
f16 f16x2 f32 f32x2 f64 bf16 bf16x2 tf32 e4m3 e5m2 e4m3x2 e5m2x2 e4m3x4 e5m2x4
e2m3 e3m2 e2m1 e2m3x2 e3m2x2 e2m1x2 e2m1x4 e2m3x4 e3m2x4 ue8m0 ue8m0x2 ue4m3 ue4m3x2
u16x2 s16x2 u8x4 s8x4 b4x16 b6x16 b8x16 b6x16_p32 b4x16_p64 s4x8 u4x8
""".split())
#: The state spaces an opcode may name (the part before ``::``), in the order the reports use.
SPACES = ("global", "shared", "local", "const", "param", "tex")

#: Named modifier groups; a row's modifier text refers to one as ``@name``.
_GROUPS = {
    "rounding": "rn rz rm rp",
    "rounding_int": "rni rzi rmi rpi",
    "compare": "eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan",
    "bool": "and or xor",
    "scope": "cta cluster gpu sys",
    "semantics": "weak volatile relaxed acquire release acq_rel sc mmio",
    "space": ("global shared shared::cta shared::cluster local const param param::entry "
              "param::func"),
    "eviction": ("L1::evict_normal L1::evict_unchanged L1::evict_first L1::evict_last "
                 "L1::no_allocate L2::evict_normal L2::evict_first L2::evict_last "
                 "L2::evict_unchanged L2::cache_hint L2::64B L2::128B L2::256B"),
    "vector": "v2 v4 v8",
    "atomic_op": "and or xor cas exch add inc dec min max",
    "async": "async mbarrier::complete_tx::bytes bulk_group",
}

#: Modifiers of the loose families (and every word above): a token outside all of these that
#: has no modifier's shape is a typo wherever it appears.
LOOSE_WORDS = frozenset("""
async bulk tensor reduce commit_group wait_group wait_all wait_group_read ca cg shared global
shared::cta shared::cluster mbarrier::complete_tx::bytes bulk_group multicast::cluster
im2col im2col_w im2col_w::128 tile tile::gather4 tile::scatter4 im2col::w im2col::w::128
gather4 scatter4 prefetch noinc arrive expect_tx complete_tx init inval test_wait try_wait
parity pending_count arrive_drop release acquire relaxed cta cluster gpu sys
fence proxy alias cp_fenceproxy replace global_address rank box_dim global_dim
global_stride element_stride elemtype interleave_layout swizzle_mode swizzle_atomicity
fill_mode b1024 tensormap tensormap::generic async::generic mbarrier_init op_restrict
sync_restrict::shared::cta sync_restrict::shared::cluster sc acq_rel
mma_async sync aligned commit_group wait_group sp sp::ordered_metadata row col
satfinite relu ftz kind::f16 kind::tf32 kind::f8f6f4 kind::i8 kind::mxf8f6f4
kind::mxf4 kind::mxf4nvf4 block_scale block_scale::block16 block_scale::block32
scale_vec::1X scale_vec::2X scale_vec::4X collector::a::fill collector::a::use
collector::a::lastuse collector::a::discard collector::b0::fill collector::b0::use
collector::b0::lastuse collector::b0::discard collector::b1::fill collector::b1::use
collector::b1::lastuse collector::b1::discard ws alloc dealloc relinquish_alloc_permit
ld st wait::ld wait::st shift commit cp fence::before_thread_sync fence::after_thread_sync
unpack::16b pack::16b warpx2::02_13 warpx2::01_23 warpx4 multicast::cluster::all
load store trans a b c d mma aligned m8n8 m16n8 m16n16 m8n16 m16n32 m32n8
ld_reduce red st acc::f32 acc::f16 weak add min max and or xor inc dec cas exch
try_cancel query_cancel is_canceled get_first_ctaid get_first_ctaid::x get_first_ctaid::y
get_first_ctaid::z fractional range L2 L2::evict_last L2::evict_normal L2::evict_first
L2::evict_unchanged L2::cache_hint L2::64B L2::128B L2::256B L1::evict_last
L1::evict_first L1::evict_normal L1::evict_unchanged L1::no_allocate cvt
base level grad clamp_to_edge clamp_to_border trap zero clamp b p
width height depth num_mipmap_levels num_samples channel_data_type channel_order
normalized_coords filter_mode addr_mode_0 addr_mode_1 addr_mode_2 force_unnormalized_coords
array_size memory_layout texref samplerref surfref r g
sat add secop min max sat op popc mbarrier read cp_mask im2col_no_offs noComplete
mbarrier::arrive::one down ashift block16 block32 po expect_tx
eq ne lt le gt ge lo ls hi hs v16
""".split()) | frozenset(w for g in _GROUPS.values() for w in g.split())


# -- operand shapes ----------------------------------------------------------------------------
@attrs.frozen(slots=True, kw_only=True)
class OperandSlot:
    """One operand position of a family's shape: its name in the shape text (``d``, ``[a]``,
    ``{d}``, ``u32``), its ``form`` (``value``, ``address``, ``vector``, ``label``, ``call``)
    and whether it is optional (written ``[, x]`` in the shape)."""

    name: str
    form: str = "value"
    optional: bool = False


def _slots(shape: str) -> tuple:
    """The structure of a shape text (``"d, [a], b[, c]"``); alternatives after ``|`` dropped."""
    text = re.sub(r"\[\|(\w+)\]", r"|\1", shape.split(" | ", 1)[0].strip())
    if text.startswith("[") and text.endswith("]]") and "[, " in text:
        text = "?" + text[1:-1]  # "[id[, count]]": every operand optional
    text = text.replace("[, ", ",?")
    items, depth, cur = [], 0, ""
    for ch in text + ",":
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
            continue
        depth = max(0, depth + (ch in "[{(") - (ch in "]})"))
        cur += ch
    out, optional = [], False
    for item in filter(None, items):
        optional = optional or item.startswith("?")
        item = item.lstrip("?")
        while item.count("]") > item.count("["):
            item = item[:-1]
        form = ("address" if item.startswith("[") else "vector" if item.startswith("{")
                else "call" if item.startswith("(") else "label" if item == "label"
                else "value")
        out.append(OperandSlot(name=item, form=form, optional=optional))
    return tuple(out)


# -- rows ----------------------------------------------------------------------------------
_UNSET: tuple = ()


@attrs.frozen(slots=True, kw_only=True)
class OpInfo:
    """One opcode family: its traits, modifier groups, operand shape and latency class.

    ``modifiers`` are the words the strict parser accepts after the family (type names are
    accepted everywhere); a ``loose`` family (``cp``, ``wgmma``, ``tcgen05`` ...) accepts any
    PTX modifier word or modifier-shaped token.  ``latency`` is the scheduler's class:
    ``alu``, ``sfu`` (the special-function unit), ``memory``, ``tensor`` or ``control``.
    ``widths`` is the register-width pattern the strict parser checks (``"="`` the type's
    width, an int a fixed one, 1 a predicate; the last repeats), or None.
    """

    family: str
    groups: tuple = ()
    traits: tuple = ()
    loose: bool = False
    latency: str = "alu"
    shape: str = ""
    operands: tuple = ()
    widths: Optional[tuple] = None
    modifiers: frozenset = attrs.field(default=frozenset(), repr=False)
    memory: Optional[MemoryAccess] = attrs.field(default=None, repr=False)

    def has(self, trait) -> bool:
        """Does the family have ``trait`` (a trait class, or an exact trait value)?"""
        if isinstance(trait, type):
            return any(isinstance(t, trait) or (isinstance(t, type) and issubclass(t, trait))
                       for t in self.traits)
        return trait in self.traits

    def get(self, trait: type):
        """The family's trait value of class ``trait`` (a :class:`MemoryAccess` ...), or None."""
        return next((t for t in self.traits if isinstance(t, trait)), None)

    @property
    def is_terminator(self) -> bool:
        """Shorthand for ``has(Terminator)``."""
        return self.has(Terminator)


def _row(family: str, mods: str = "", *traits, loose: bool = False, latency: str = "alu",
         shape: str = "", widths: Optional[tuple] = None) -> OpInfo:
    """A row from a modifier text (``"@rounding ftz sat"``) and traits."""
    groups, plain = [], []
    for word in mods.split():
        if word.startswith("@"):
            groups.append((word[1:], tuple(_GROUPS[word[1:]].split())))
        else:
            plain.append(word)
    if plain:
        groups.append(("", tuple(plain)))
    words = frozenset(w for _, g in groups for w in g)
    memory = next((t for t in traits if isinstance(t, MemoryAccess)), None)
    return OpInfo(family=family, groups=tuple(groups), traits=tuple(traits), loose=loose,
                  latency=latency, shape=shape, operands=_slots(shape),
                  widths=widths, modifiers=words, memory=memory)


_SAME = ("=",)
_NODEF = WritesNoRegister()
_LOAD = MemoryAccess(direction="load")
_STORE = MemoryAccess(direction="store")
_ATOMIC = MemoryAccess(direction="atomic")
_PREFETCH = MemoryAccess(direction="prefetch")
_TEX_READ = MemoryAccess(direction="load", texture=True, spaces=("tex",))
_SURF_WRITE = MemoryAccess(direction="store", texture=True, spaces=("tex", "global"))
_SURF_ATOMIC = MemoryAccess(direction="atomic", texture=True, spaces=("tex", "global"))
_SPACE_MODS = "@space"

_ROWS = (
    # integer and floating-point arithmetic ---------------------------------------------
    _row("add", "@rounding ftz sat cc", shape="d, a, b", widths=_SAME),
    _row("sub", "@rounding ftz sat cc", shape="d, a, b", widths=_SAME),
    _row("addc", "cc", shape="d, a, b", widths=_SAME),
    _row("subc", "cc", shape="d, a, b", widths=_SAME),
    _row("mul", "@rounding ftz sat lo hi wide", shape="d, a, b", widths=_SAME),
    _row("mad", "@rounding ftz sat lo hi wide cc", shape="d, a, b, c", widths=_SAME),
    _row("madc", "lo hi cc", shape="d, a, b, c", widths=_SAME),
    _row("mul24", "lo hi", shape="d, a, b"),
    _row("mad24", "lo hi sat", shape="d, a, b, c"),
    _row("sad", "", shape="d, a, b, c"),
    _row("div", "@rounding ftz approx full", latency="sfu", shape="d, a, b", widths=_SAME),
    _row("rem", "", latency="sfu", shape="d, a, b", widths=_SAME),
    _row("abs", "ftz", shape="d, a", widths=_SAME),
    _row("neg", "ftz", shape="d, a", widths=_SAME),
    # PTX ISA 9.7.3.10/11 and 9.7.4.x: .ftz (f32), .NaN (sm_80), .xorsign.abs (sm_86), .relu
    # (half types, sm_80; s32/s16x2, sm_90); redux takes .abs and .NaN as well.
    _row("min", "ftz NaN xorsign abs relu", shape="d, a, b", widths=_SAME),
    _row("max", "ftz NaN xorsign abs relu", shape="d, a, b", widths=_SAME),
    _row("popc", "", shape="u32, a"),
    _row("clz", "", shape="u32, a"),
    _row("bfind", "shiftamt", shape="u32, a"),
    _row("fns", "", shape="u32, a, base, s32"),
    _row("brev", "", shape="d, a", widths=_SAME),
    _row("bfe", "", shape="d, a, u32, u32"),
    _row("bfi", "", shape="d, a, b, u32, u32"),
    _row("szext", "clamp wrap", shape="d, a, n"),
    _row("bmsk", "clamp wrap", shape="b32, n, n"),
    _row("dp4a", "", shape="d, a, b, c"),
    _row("dp2a", "lo hi", shape="d, a, b, c"),
    _row("copysign", "", shape="d, a, b", widths=_SAME),
    _row("testp", "finite infinite number notanumber normal subnormal", shape="pred, a"),
    _row("fma", "@rounding ftz sat relu oob", shape="d, a, b, c", widths=_SAME),
    _row("rcp", "@rounding approx ftz", latency="sfu", shape="d, a", widths=_SAME),
    _row("sqrt", "@rounding approx ftz", latency="sfu", shape="d, a", widths=_SAME),
    _row("rsqrt", "approx ftz", latency="sfu", shape="d, a", widths=_SAME),
    _row("sin", "approx ftz", latency="sfu", shape="d, a", widths=_SAME),
    _row("cos", "approx ftz", latency="sfu", shape="d, a", widths=_SAME),
    _row("lg2", "approx ftz", latency="sfu", shape="d, a", widths=_SAME),
    _row("ex2", "approx ftz", latency="sfu", shape="d, a", widths=_SAME),
    _row("tanh", "approx", latency="sfu", shape="d, a", widths=_SAME),
    # comparison, selection, logic, moves ---------------------------------------------------
    _row("set", "@compare @bool ftz", shape="d, a, b"),
    _row("setp", "@compare @bool ftz", shape="pred, a, b", widths=(1, "=", "=", 1)),
    _row("selp", "", shape="d, a, b, pred", widths=("=", "=", "=", 1)),
    _row("slct", "ftz", shape="d, a, b, c"),
    _row("and", "", shape="d, a, b", widths=_SAME),
    _row("or", "", shape="d, a, b", widths=_SAME),
    _row("xor", "", shape="d, a, b", widths=_SAME),
    _row("not", "", shape="d, a", widths=_SAME),
    _row("cnot", "", shape="d, a", widths=_SAME),
    _row("lop3", "and or", shape="d, a, b, c, lut", widths=_SAME),
    _row("shf", "l r clamp wrap", shape="d, a, b, n"),
    _row("shl", "", shape="d, a, u32", widths=("=", "=", 32)),
    _row("shr", "", shape="d, a, u32", widths=("=", "=", 32)),
    _row("prmt", "f4e b4e rc8 ecl ecr rc16", shape="d, a, b, sel", widths=_SAME),
    _row("mov", "@vector", shape="d, a", widths=_SAME),
    _row("shfl", "sync up down bfly idx", WarpCollective, shape="d[|p], a, b, c, mask"),
    _row("vote", "sync all any uni ballot", WarpCollective, shape="d, p, mask"),
    _row("match", "any all sync", WarpCollective, shape="d, a, mask"),
    _row("activemask", "", WarpCollective, shape="d"),
    _row("redux", "sync add min max and or xor abs NaN", WarpCollective, shape="d, a, mask"),
    _row("elect", "sync", WarpCollective, shape="d, mask"),
    # conversion and addresses -----------------------------------------------------------
    _row("cvt", "@rounding @rounding_int rna rs ftz sat relu satfinite pack frnd2 "
         "scaled::n2::ue8m0", shape="d, a"),
    _row("cvta", "to @space", shape="d, a"),
    _row("isspacep", _SPACE_MODS, shape="pred, a"),
    _row("mapa", _SPACE_MODS, shape="d, a, b"),
    _row("getctarank", _SPACE_MODS, shape="d, a"),
    # memory ---------------------------------------------------------------------------
    _row("ld", "@space @semantics @scope @eviction @vector ca cg cs lu cv nc unified "
         "L2::cache_hint", _LOAD, latency="memory", shape="d, [a]"),
    _row("ldu", "global @vector", _LOAD, latency="memory", shape="d, [a]"),
    _row("st", "@space @semantics @scope @eviction @vector wb cg cs wt bulk @async",
         _STORE, _NODEF, latency="memory", shape="[a], b"),
    _row("prefetch", "global local L1 L2 @eviction tensormap const param", _PREFETCH, _NODEF,
         shape="[a]"),
    _row("prefetchu", "L1", _PREFETCH, _NODEF, shape="[a]"),
    _row("applypriority", "global L2::evict_normal", _NODEF, shape="[a], size"),
    _row("discard", "global L2", _NODEF, shape="[a], size"),
    _row("atom", "@space @semantics @scope @atomic_op noftz L2::cache_hint @vector", _ATOMIC,
         latency="memory", shape="d, [a], b"),
    _row("red", "@space @semantics @scope @atomic_op noftz L2::cache_hint @vector @async",
         _ATOMIC, _NODEF, latency="memory", shape="[a], b"),
    _row("alloca", "local", shape="d, size"),
    _row("stacksave", "", shape="d"),
    _row("stackrestore", "", _NODEF, shape="a"),
    # synchronisation and control --------------------------------------------------------
    _row("bar", "sync arrive red popc and or cta aligned warp", Barrier, OrdersMemory,
         WritesNoRegister(unless_modifier="red"), latency="control", shape="[id[, count]]"),
    _row("barrier", "sync arrive red popc and or cta cluster aligned wait relaxed acquire "
         "release", Barrier, OrdersMemory, WritesNoRegister(unless_modifier="red"),
         latency="control", shape="[id[, count]]"),
    _row("membar", "cta gl sys proxy alias", OrdersMemory, _NODEF, latency="control"),
    _row("fence", "", OrdersMemory, _NODEF, loose=True, latency="control"),
    _row("nanosleep", "", _NODEF, latency="control", shape="t"),
    _row("trap", "", Abort, OrdersMemory, _NODEF, latency="control"),
    _row("brkpt", "", _NODEF, latency="control"),
    _row("exit", "", Return, _NODEF, latency="control"),
    _row("pmevent", "mask", _NODEF, latency="control", shape="a"),
    _row("ret", "uni", Return, _NODEF, latency="control"),
    _row("bra", "uni", Branch, _NODEF, latency="control", shape="label"),
    _row("brx", "idx uni", Branch, _NODEF, latency="control", shape="a, table"),
    _row("call", "uni", Call, OrdersMemory, _NODEF, latency="control",
         shape="(ret), func, (args)"),
    _row("griddepcontrol", "launch_dependents wait", OrdersMemory, _NODEF, latency="control"),
    _row("setmaxnreg", "inc dec sync aligned", _NODEF, latency="control", shape="n"),
    # asynchronous copies, tensor cores, textures and surfaces (loose) ---------------------
    _row("cp", "", MemoryAccess(direction="async"), OrdersMemory, _NODEF, loose=True,
         latency="memory",
         shape="[d], [a], size[, [mbar]] | n"),
    _row("mbarrier", "", OrdersMemory, WritesNoRegister(unless=(
        "mbarrier.arrive", "mbarrier.test_wait", "mbarrier.try_wait",
        "mbarrier.pending_count")), loose=True, latency="control"),
    _row("tensormap", "", _NODEF, loose=True),
    _row("tcgen05", "", WritesNoRegister(unless=("tcgen05.ld", "tcgen05.alloc")), loose=True,
         latency="tensor"),
    _row("wgmma", "", OrdersMemory, WritesNoRegister(unless=("wgmma.mma_async",)), loose=True,
         latency="tensor", shape="{d}, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b[, "
         "imm-trans-a, imm-trans-b] | n"),
    _row("mma", "", loose=True, latency="tensor", shape="{d}, {a}, {b}, {c}"),
    _row("wmma", "", MemoryAccess(direction="fragment"),
         WritesNoRegister(unless=("wmma.load", "wmma.mma")), loose=True, latency="tensor"),
    _row("ldmatrix", "", MemoryAccess(direction="load", shared_only=True), loose=True,
         latency="memory", shape="{d}, [a]"),
    _row("stmatrix", "", MemoryAccess(direction="store", shared_only=True), _NODEF, loose=True,
         latency="memory", shape="[a], {b}"),
    _row("movmatrix", "", loose=True, shape="d, a"),
    _row("multimem", "", _ATOMIC, WritesNoRegister(unless=("multimem.ld_reduce",)), loose=True,
         latency="memory"),
    _row("createpolicy", "", loose=True),
    _row("clusterlaunchcontrol", "", loose=True),
    _row("tex", "", _TEX_READ, loose=True, latency="memory"),
    _row("tld4", "", _TEX_READ, loose=True, latency="memory"),
    _row("txq", "", loose=True),
    _row("suld", "", _TEX_READ, loose=True, latency="memory"),
    _row("sust", "", _SURF_WRITE, _NODEF, loose=True, latency="memory"),
    _row("sured", "", _SURF_ATOMIC, _NODEF, loose=True, latency="memory"),
    _row("suq", "", loose=True),
    _row("istypep", "", loose=True),
) + tuple(_row(video, "", loose=True) for video in (
    # the SIMD video instructions: scalar (vadd ...), two halves (vadd2 ...) and four bytes
    *(f"v{op}" for op in ("add", "sub", "absdiff", "min", "max", "shl", "shr", "mad", "set")),
    *(f"v{op}{n}" for n in (2, 4)
      for op in ("add", "sub", "avrg", "absdiff", "min", "max", "set"))))

#: The opcode table: every family PTX ISA 9.x has, keyed by name.
FAMILIES: dict[str, OpInfo] = {row.family: row for row in _ROWS}


def info(family: str) -> Optional[OpInfo]:
    """The row of ``family`` (``"bra"``), or None for a name PTX does not have.

    Example: ``info("bra").is_terminator`` is True.
    """
    return FAMILIES.get(family)


def families_with(trait) -> tuple:
    """The names of the families that have ``trait``, in table order.

    Example: ``families_with(Terminator)`` is ``('trap', 'exit', 'ret', 'bra', 'brx')``.
    """
    return tuple(name for name, row in FAMILIES.items() if row.has(trait))


# -- parsed opcodes ----------------------------------------------------------------------------
@attrs.frozen(slots=True, kw_only=True)
class Opcode:
    """A dotted opcode parsed once: ``family``, ``parts`` (every token after it), the
    ``modifiers`` (tokens that are no type name) and ``types`` (those that are), the vector
    width (``.v4`` → 4, else 1), the first state space named (``shared`` for
    ``ld.shared::cta``, None when generic or not a memory op) and the family's row
    (``info``, None for an unknown family).  Interned: :func:`opcode_of` returns the same
    object for the same text."""

    text: str
    family: str
    parts: tuple
    modifiers: tuple
    types: tuple
    vector: int
    space: Optional[str]
    info: Optional[OpInfo]
    no_def: bool

    def has(self, *names: str) -> bool:
        """True when any of ``names`` is one of the opcode's tokens."""
        return any(n in self.parts for n in names)

    def has_trait(self, trait) -> bool:
        """True when the family has ``trait`` (False for unknown families); the answer is
        kept per opcode and trait (the prediction asks ~170k times on a 3.4 MB file)."""
        key = (id(self), trait)
        hit = _TRAITS.get(key)
        if hit is not None and hit[0] is self:
            return hit[1]
        row = self.info
        value = row is not None and row.has(trait)
        _TRAITS[key] = (self, value)   # the opcode kept alive: its id is not reused
        return value


#: :meth:`Opcode.has_trait`'s answers: ``(id(opcode), trait) -> (opcode, answer)``.
_TRAITS: dict = {}


_interned: dict[str, Opcode] = {}


def opcode_of(text: str) -> Opcode:
    """The parsed, interned :class:`Opcode` of a dotted opcode text.

    Example: ``opcode_of("st.shared.v2.b32").vector`` is 2.
    """
    op = _interned.get(text)
    if op is None:
        op = _interned[text] = _parse(text)
    return op


def _parse(text: str) -> Opcode:
    family, *rest = text.split(".")
    parts = tuple(rest)
    types = tuple(p for p in parts if p in TYPE_NAMES)
    modifiers = tuple(p for p in parts if p not in TYPE_NAMES)
    vector = next((int(p[1:]) for p in modifiers if p in ("v2", "v4", "v8", "v16")), 1)
    space = next((base for base in (p.split("::", 1)[0] for p in modifiers)
                  if base in SPACES), None)
    row = FAMILIES.get(family)
    nodef = row.get(WritesNoRegister) if row is not None else None
    no_def = nodef is not None and nodef.applies(text, modifiers)
    return Opcode(text=text, family=family, parts=parts, modifiers=modifiers, types=types,
                  vector=vector, space=space, info=row, no_def=no_def)
