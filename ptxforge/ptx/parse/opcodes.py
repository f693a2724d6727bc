"""Which opcodes and modifiers PTX ISA 9.x has: the knowledge behind the strict parser's checks.

:func:`opcode_problem` says what is wrong with an opcode's text (``ad.f32``: unknown opcode;
``add.f32.foo``: ``.foo`` is no modifier of ``add``), or None.  The tables are written from
the PTX ISA reference (chapter 9, "Instruction Set", through ISA 9.x) and err on the side of
accepting: a false error on valid PTX is far worse than a missed one.  So

* every PTX type name (``.f32``, ``.e4m3x2``, ``.b128`` …) is accepted on every opcode;
* classic families (arithmetic, comparison, conversion, moves, loads and stores, atomics,
  control flow) list their modifiers;
* the large asynchronous and tensor families (``cp``, ``mbarrier``, ``wgmma``, ``tcgen05``,
  ``tensormap``, ``multimem``, textures and surfaces, video instructions, …) are *loose*:
  any modifier the ISA uses anywhere, or that has the shape of one (``.m16n8k16``,
  ``.2d``, ``.x4``, ``.32x32b``, ``.cta_group::2``), is accepted, so only a token that is no
  PTX modifier at all (a typo) is refused.

Example::

    >>> from ptxforge.ptx.parse.opcodes import opcode_problem
    >>> opcode_problem("fma.rn.ftz.f32") is None
    True
    >>> opcode_problem("ad.f32")
    "unknown opcode 'ad'"
    >>> opcode_problem("ld.globl.f32")
    "unknown modifier '.globl' for ld"
    >>> operand_widths("setp.lt.s32"), operand_widths("cvt.f32.s32")
    ((1, 32, 32, 1), None)
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["FAMILIES", "LOOSE_FAMILIES", "TYPE_NAMES", "opcode_problem", "operand_widths"]

TYPE_NAMES = frozenset("""
pred b1 b4 b6 b8 b16 b32 b64 b128 u2 u4 u8 u16 u32 u64 s2 s4 s8 s16 s32 s64
f16 f16x2 f32 f32x2 f64 bf16 bf16x2 tf32 e4m3 e5m2 e4m3x2 e5m2x2 e4m3x4 e5m2x4
e2m3 e3m2 e2m1 e2m3x2 e3m2x2 e2m1x2 e2m1x4 e2m3x4 e3m2x4 ue8m0 ue8m0x2 ue4m3 ue4m3x2
u16x2 s16x2 u8x4 s8x4 b4x16 b6x16 b8x16 b6x16_p32 b4x16_p64 s4x8 u4x8
""".split())

_RND = "rn rz rm rp"
_RNDI = "rni rzi rmi rpi"
_CMP = "eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan"
_BOOL = "and or xor"
_SCOPE = "cta cluster gpu sys"
_SEM = "weak volatile relaxed acquire release acq_rel sc mmio"
_SPACE = ("global shared shared::cta shared::cluster local const param param::entry "
          "param::func")
_EVICT = ("L1::evict_normal L1::evict_unchanged L1::evict_first L1::evict_last L1::no_allocate "
          "L2::evict_normal L2::evict_first L2::evict_last L2::evict_unchanged L2::cache_hint "
          "L2::64B L2::128B L2::256B")
_VEC = "v2 v4 v8"
_ATOM_OPS = "and or xor cas exch add inc dec min max"
_ASYNC = "async mbarrier::complete_tx::bytes bulk_group"

# family -> its modifiers (types are accepted everywhere; see the module docstring)
_STRICT = {
    # integer and floating-point arithmetic
    "add": f"{_RND} ftz sat cc", "sub": f"{_RND} ftz sat cc", "addc": "cc", "subc": "cc",
    "mul": f"{_RND} ftz sat lo hi wide", "mad": f"{_RND} ftz sat lo hi wide cc",
    "madc": "lo hi cc", "mul24": "lo hi", "mad24": "lo hi sat", "sad": "",
    "div": f"{_RND} ftz approx full", "rem": "", "abs": "ftz", "neg": "ftz",
    "min": "ftz NaN xorsign abs relu", "max": "ftz NaN xorsign abs relu",
    "popc": "", "clz": "", "bfind": "shiftamt", "fns": "", "brev": "", "bfe": "", "bfi": "",
    "szext": "clamp wrap", "bmsk": "clamp wrap", "dp4a": "", "dp2a": "lo hi",
    "copysign": "", "testp": "finite infinite number notanumber normal subnormal",
    "fma": f"{_RND} ftz sat relu oob", "rcp": f"{_RND} approx ftz",
    "sqrt": f"{_RND} approx ftz", "rsqrt": "approx ftz", "sin": "approx ftz",
    "cos": "approx ftz", "lg2": "approx ftz", "ex2": "approx ftz", "tanh": "approx",
    # comparison, selection, logic, moves
    "set": f"{_CMP} {_BOOL} ftz", "setp": f"{_CMP} {_BOOL} ftz", "selp": "", "slct": "ftz",
    "and": "", "or": "", "xor": "", "not": "", "cnot": "", "lop3": "and or",
    "shf": "l r clamp wrap", "shl": "", "shr": "", "prmt": "f4e b4e rc8 ecl ecr rc16",
    "mov": _VEC, "shfl": "sync up down bfly idx", "vote": "sync all any uni ballot",
    "match": "any all sync", "activemask": "", "redux": "sync add min max and or xor abs NaN",
    "elect": "sync",
    # conversion and addresses
    "cvt": f"{_RND} {_RNDI} rna rs ftz sat relu satfinite pack frnd2 scaled::n2::ue8m0",
    "cvta": f"to {_SPACE}", "isspacep": _SPACE, "mapa": _SPACE, "getctarank": _SPACE,
    # memory
    "ld": (f"{_SPACE} {_SEM} {_SCOPE} {_EVICT} {_VEC} ca cg cs lu cv nc unified "
           "L2::cache_hint"),
    "ldu": f"global {_VEC}",
    "st": f"{_SPACE} {_SEM} {_SCOPE} {_EVICT} {_VEC} wb cg cs wt bulk {_ASYNC}",
    "prefetch": f"global local L1 L2 {_EVICT} tensormap const param",
    "prefetchu": "L1", "applypriority": "global L2::evict_normal", "discard": "global L2",
    "atom": f"{_SPACE} {_SEM} {_SCOPE} {_ATOM_OPS} noftz L2::cache_hint {_VEC}",
    "red": (f"{_SPACE} {_SEM} {_SCOPE} {_ATOM_OPS} noftz L2::cache_hint {_VEC} {_ASYNC}"),
    "alloca": "local", "stacksave": "", "stackrestore": "",
    # synchronisation and control
    "bar": "sync arrive red popc and or cta aligned warp",
    "barrier": "sync arrive red popc and or cta cluster aligned wait relaxed acquire release",
    "membar": "cta gl sys proxy alias", "nanosleep": "", "trap": "", "brkpt": "", "exit": "",
    "pmevent": "mask", "ret": "uni", "bra": "uni", "brx": "idx uni", "call": "uni",
    "griddepcontrol": "launch_dependents wait", "setmaxnreg": "inc dec sync aligned",
}

#: Families whose modifiers are many and new: any known or modifier-shaped token is accepted.
LOOSE_FAMILIES = frozenset("""
cp mbarrier tensormap tcgen05 wgmma mma wmma ldmatrix stmatrix movmatrix multimem fence
createpolicy clusterlaunchcontrol tex tld4 txq suld sust sured suq istypep
vadd vsub vabsdiff vmin vmax vshl vshr vmad vset vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2
vset2 vadd4 vsub4 vavrg4 vabsdiff4 vmin4 vmax4 vset4
""".split())

# Modifiers of the loose families (and everything above): a token outside all of these that
# does not have a modifier's shape is a typo wherever it appears.
_LOOSE_WORDS = """
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
eq ne lt le gt ge lo ls hi hs
"""


def _words(text: str) -> frozenset:
    return frozenset(text.split())


FAMILIES: dict = {family: _words(mods) for family, mods in _STRICT.items()}
FAMILIES.update({family: frozenset() for family in LOOSE_FAMILIES})
_ALL_WORDS = frozenset().union(*FAMILIES.values(), _words(_LOOSE_WORDS), TYPE_NAMES,
                               _words(f"{_SPACE} {_EVICT} {_SEM} {_SCOPE} {_VEC} v16"))
# Modifier shapes of the loose families: mma shapes, dimensions, counts, tcgen05 shapes,
# ldmatrix element formats, CTA groups, video byte/half selectors and texture geometries.
_SHAPE = re.compile(
    r"(?:m\d+n\d+(?:k\d+)?|\d+d|a\d+d|2dms|a2dms|cube|acube|x\d+|\d+x\d+b(?:x\d+)?"
    r"|cta_group::\d+|b[0-7]|h[01]|[0-9]+|v\d+|num_ctas::\d+)\Z")
# Type names PTX may add (new narrow float formats appear in most releases): accepted on every
# opcode when they have a type's shape (.s2f6x2, .e8m0, .b12x4), so a new type is no error.
_TYPE_SHAPE = re.compile(
    r"(?:[busf](?:1|2|4|6|8|16|32|64|128)|bf16|tf32|u?e\d+m\d+|s\d+f\d+)(?:x\d+)?(?:_p\d+)?\Z")

_cache: dict = {}


def opcode_problem(opcode: str) -> Optional[str]:
    """What is wrong with ``opcode`` (family and dotted modifiers), or None when it is valid."""
    try:
        return _cache[opcode]
    except KeyError:
        pass
    parts = opcode.split(".")
    family = parts[0]
    allowed = FAMILIES.get(family)
    problem = None
    if allowed is None:
        problem = f"unknown opcode {family!r}"
    else:
        loose = family in LOOSE_FAMILIES
        for part in parts[1:]:
            if part in allowed or part in TYPE_NAMES or _TYPE_SHAPE.match(part):
                continue
            if loose and (part in _ALL_WORDS or _SHAPE.match(part)):
                continue
            problem = f"unknown modifier '.{part}' for {family}"
            break
    _cache[opcode] = problem
    return problem


# -- register widths -------------------------------------------------------------------------
# Families whose register operands all hold the instruction type (PTX ISA 9.4.1: only ld, st
# and cvt take wider registers; bit-size types agree with any type of their width).  Each
# entry is the width pattern: "=" the type's width for every operand; a tuple gives operand
# positions, the last one repeating.  1 stands for a predicate.
_SAME = frozenset("""
add sub addc subc min max abs neg and or xor not cnot fma div rem sqrt rcp rsqrt ex2 lg2 sin
cos tanh copysign mul mad madc mov prmt lop3 brev
""".split())
_WIDTH = {"pred": 1, "b128": 128, "f32x2": 64, "f16x2": 32, "bf16x2": 32, "u16x2": 32,
          "s16x2": 32}
_widths: dict[str, Optional[tuple[int, ...]]] = {}


def _type_width(name: str) -> Optional[int]:
    if name in _WIDTH:
        return _WIDTH[name]
    m = re.fullmatch(r"[busf](8|16|32|64)|bf(16)", name)
    return int(m.group(1) or m.group(2)) if m else None


def operand_widths(opcode: str) -> Optional[tuple[int, ...]]:
    """The register width each operand of ``opcode`` must have (1: a predicate; the last one
    repeats), or None when ptxforge does not check this opcode's operands."""
    try:
        return _widths[opcode]
    except KeyError:
        pass
    parts = opcode.split(".")
    family = parts[0]
    out: Optional[tuple[int, ...]] = None
    types = [t for t in parts[1:] if t in TYPE_NAMES]
    mods = set(parts[1:])
    skip = {"wide", "v2", "v4", "v8"} | ({"or", "and"} if family == "lop3" else set())
    if len(types) == 1 and not mods & skip:
        width = _type_width(types[0])
        if width is not None and family in _SAME:
            out = (width,)
        elif width is not None and family in ("shl", "shr"):
            out = (width, width, 32)
        elif width is not None and family == "setp":
            out = (1, width, width, 1)
        elif width is not None and family == "selp":
            out = (width, width, width, 1)
    _widths[opcode] = out
    return out
