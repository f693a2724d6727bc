"""What the bit-twiddling ops compute: builder kernels run on a small interpreter whose
semantics are written from the PTX ISA text (not from ptxforge), checked against Python
integers, the ISA's own examples and the ISA's prmt mode table.  No GPU needed.

This checks what ptxas cannot: that the builder puts operands where the ISA expects them
(prmt's {b, a} order, shf's low/high words), that lop3's table from a Python function is the
function, and that the docs' 64-bit shift is a 64-bit shift."""

from __future__ import annotations

import math
import pathlib
import random
import re
import struct

import pytest

from ptxforge.dsl.builder import KernelBuilder
from ptxforge.ptx import ir

M32 = 0xFFFFFFFF
ROOT = pathlib.Path(__file__).resolve().parents[2]


# -- reference semantics, from the PTX ISA ----------------------------------------------------

def _byte(x: int, k: int) -> int:
    return (x >> (8 * k)) & 0xFF


def prmt_ref(a: int, b: int, c: int, mode=None) -> int:
    """prmt.b32{.mode}: bytes of {b, a} (0-3 from a, 4-7 from b) picked per output byte."""
    pool = ((b & M32) << 32) | (a & M32)
    out = 0
    for k in range(4):
        if mode is None:
            nib = (c >> (4 * k)) & 0xF
            byte = _byte(pool, nib & 7)
            if nib & 8:  # replicate the byte's sign over the byte
                byte = 0xFF if byte & 0x80 else 0
        else:
            s = c & 3
            idx = {"f4e": s + k, "b4e": (s - k) % 8, "rc8": s, "ecl": max(k, s),
                   "ecr": min(k, s), "rc16": 2 * (s & 1) + (k & 1)}[mode]
            byte = _byte(pool, idx)
        out |= byte << (8 * k)
    return out


def lop3_ref(a: int, b: int, c: int, lut: int) -> int:
    """lop3: bit i of d is the table entry for (a_i, b_i, c_i); immLut = F(0xF0, 0xCC, 0xAA)
    puts F(a, b, c) at bit 4a + 2b + c."""
    return sum(((lut >> (4 * ((a >> i) & 1) + 2 * ((b >> i) & 1) + ((c >> i) & 1))) & 1) << i
               for i in range(32))


def shf_ref(direction: str, mode: str, a: int, b: int, c: int) -> int:
    """shf: shift the 64-bit {b, a} by n = min(c, 32) (.clamp) or c & 31 (.wrap); .l keeps the
    high 32 bits, .r the low 32 bits."""
    n = min(c, 32) if mode == "clamp" else c & 0x1F
    x = ((b & M32) << 32) | (a & M32)
    return ((x << n) >> 32) & M32 if direction == "l" else (x >> n) & M32


def szext_ref(signed: bool, mode: str, a: int, b: int) -> int:
    b1 = b & 0x1F
    too_large = b >= 32 and mode == "clamp"
    mask = 0 if too_large else (M32 << b1) & M32
    sign = False if (b1 == 0 or too_large or not signed) else bool((a >> ((b1 - 1) & 0x1F)) & 1)
    return (a & ~mask & M32) | (mask if sign else 0)


def bmsk_ref(mode: str, a: int, b: int) -> int:
    a1, b1 = a & 0x1F, b & 0x1F
    mask0, total = (M32 << a1) & M32, a1 + b1
    mask1 = (M32 << total) & M32 if total < 32 else 0
    overflow = total >= 32
    if mode == "clamp":
        if a >= 32:
            overflow, mask0 = True, 0
        if b >= 32:
            overflow = True
    if overflow:
        mask1 = 0
    elif b1 == 0:
        mask1 = M32
    return mask0 & ~mask1 & M32


def bfind_ref(bits: int, signed: bool, shiftamt: bool, a: int) -> int:
    msb = bits - 1
    if signed and (a >> msb) & 1:
        a = ~a & ((1 << bits) - 1)
    d = next((i for i in range(msb, -1, -1) if (a >> i) & 1), M32)
    return msb - d if shiftamt and d != M32 else d


def fns_ref(mask: int, base: int, offset: int) -> int:
    if offset == 0:
        return base if (mask >> base) & 1 else M32
    pos, count, inc = base, abs(offset) - 1, 1 if offset > 0 else -1
    while 0 <= pos < 32:
        if (mask >> pos) & 1:
            if count == 0:
                return pos
            count -= 1
        pos += inc
    return M32


def _sx(x: int, bits: int) -> int:
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


def dot_ref(family: str, mode, at_signed: bool, bt_signed: bool, a: int, b: int, c: int) -> int:
    """dp4a: c + sum of a's and b's byte products; dp2a: a's two halves times b's low (.lo) or
    high (.hi) two bytes.  Bytes/halves are sign- or zero-extended by their type."""
    ext = (lambda x, n: _sx(x, n)) if at_signed else (lambda x, n: x & ((1 << n) - 1))
    bext = (lambda x: _sx(x, 8)) if bt_signed else (lambda x: x & 0xFF)
    vb = [bext(b >> (8 * k)) for k in range(4)]
    if family == "dp4a":
        total = sum(ext(a >> (8 * k), 8) * vb[k] for k in range(4))
    else:
        first = 0 if mode == "lo" else 2
        total = sum(ext(a >> (16 * k), 16) * vb[first + k] for k in range(2))
    return (c + total) & M32


# -- a tiny interpreter over those -----------------------------------------------------------

def run(kb) -> dict:
    """Interpret the straight-line kernel ``kb`` builds; return register name -> value (ints
    are unsigned bit patterns, f32/f64 Python floats, predicates bools)."""
    regs: dict = {}

    def v(op):
        if isinstance(op, ir.Register):
            return regs[op.name]
        if isinstance(op, ir.Immediate):
            return op.value if isinstance(op.value, float) else op.value & ((1 << 64) - 1)
        raise AssertionError(op)

    for inst in kb.build().kernels[0].instructions:
        parts, ops = inst.opcode.split("."), inst.operands
        fam, ty = parts[0], parts[-1]
        d = ops[0].name if ops and isinstance(ops[0], ir.Register) else None
        x = [v(o) for o in ops[1:]] if fam not in ("ret",) else []
        wmask = (1 << 64) - 1 if ty.endswith("64") else M32
        if fam == "mov":
            regs[d] = x[0] if isinstance(x[0], float) else x[0] & wmask
        elif fam == "prmt":
            regs[d] = prmt_ref(x[0], x[1], x[2], parts[2] if len(parts) > 2 else None)
        elif fam == "lop3":
            regs[d] = lop3_ref(x[0], x[1], x[2], x[3])
        elif fam == "shf":
            regs[d] = shf_ref(parts[1], parts[2], x[0], x[1], x[2])
        elif fam == "shl":
            regs[d] = (x[0] << min(x[1], 32)) & M32
        elif fam == "szext":
            regs[d] = szext_ref(ty == "s32", parts[1], x[0] & M32, x[1])
        elif fam == "bmsk":
            regs[d] = bmsk_ref(parts[1], x[0], x[1])
        elif fam == "bfind":
            regs[d] = bfind_ref(int(ty[1:]), ty[0] == "s", "shiftamt" in parts, x[0] & wmask)
        elif fam == "fns":
            regs[d] = fns_ref(x[0] & M32, x[1], _sx(x[2], 32))
        elif fam in ("dp4a", "dp2a"):
            at, bt = parts[-2], parts[-1]
            mode = parts[1] if fam == "dp2a" else None
            regs[d] = dot_ref(fam, mode, at == "s32", bt == "s32", x[0], x[1], x[2])
        elif fam == "sad":
            a, b = (_sx(x[0], 32), _sx(x[1], 32)) if ty == "s32" else (x[0], x[1])
            regs[d] = (x[2] + abs(a - b)) & M32
        elif fam in ("mul24", "mad24"):
            a, b = (_sx(x[0], 24), _sx(x[1], 24)) if ty == "s32" else (x[0] & 0xFFFFFF, x[1] & 0xFFFFFF)
            t = a * b
            part = (t >> 16) if "hi" in parts else t
            regs[d] = (part + (x[2] if fam == "mad24" else 0)) & M32
        elif fam == "copysign":
            regs[d] = math.copysign(x[1], x[0])
        elif fam == "testp":
            regs[d] = _classify(x[0], parts[1], ty)
        elif fam == "ret":
            break
        else:
            raise AssertionError(f"the interpreter does not know {inst.opcode}")
    return regs


def _classify(f: float, cls: str, ty: str) -> bool:
    tiny = struct.unpack("<f", struct.pack("<I", 0x00800000))[0] if ty == "f32" else 2.2250738585072014e-308
    finite = math.isfinite(f)
    return {"finite": finite, "infinite": math.isinf(f), "number": not math.isnan(f),
            "notanumber": math.isnan(f), "normal": finite and abs(f) >= tiny,
            "subnormal": finite and 0 < abs(f) < tiny}[cls]


def _u32(kb, x):
    return kb.mov(x & M32, type="u32")


# -- prmt -------------------------------------------------------------------------------------

# The ISA's table: per mode, for c[1:0] = 0..3, the source byte of d.b3, d.b2, d.b1, d.b0.
PRMT_TABLE = {
    "f4e": ((3, 2, 1, 0), (4, 3, 2, 1), (5, 4, 3, 2), (6, 5, 4, 3)),
    "b4e": ((5, 6, 7, 0), (6, 7, 0, 1), (7, 0, 1, 2), (0, 1, 2, 3)),
    "rc8": ((0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)),
    "ecl": ((3, 2, 1, 0), (3, 2, 1, 1), (3, 2, 2, 2), (3, 3, 3, 3)),
    "ecr": ((0, 0, 0, 0), (1, 1, 1, 0), (2, 2, 1, 0), (3, 2, 1, 0)),
    "rc16": ((1, 0, 1, 0), (3, 2, 3, 2), (1, 0, 1, 0), (3, 2, 3, 2)),
}


@pytest.mark.parametrize("mode", sorted(PRMT_TABLE))
def test_prmt_modes_follow_the_isa_table(mode):
    a, b = 0x33221100, 0x77665544      # byte k of {b, a} is 0x11 * k
    kb = KernelBuilder("k")
    ra, rb = _u32(kb, a), _u32(kb, b)
    outs = [kb.prmt(ra, rb, s, mode=mode) for s in range(4)]
    regs = run(kb)
    for s, out in enumerate(outs):
        want = sum((0x11 * src) << (8 * (3 - pos)) for pos, src in enumerate(PRMT_TABLE[mode][s]))
        assert regs[out.name] == want == prmt_ref(a, b, s, mode), (mode, s)


def test_prmt_generic_selectors():
    kb = KernelBuilder("k")
    a, b = _u32(kb, 0x03020100), _u32(kb, 0x07060504)
    odd = kb.prmt(a, b, 0x7531)                         # the example in CUB's PRMT docs
    swapped = kb.prmt(_u32(kb, 0x11223344), 0, 0x0123)  # byte swap
    same = kb.prmt(a, b, 0x3210)
    high = kb.prmt(a, b, 0x7654)
    signs = kb.prmt(_u32(kb, 0x7F80FF01), 0, 0x89AB)    # bit 3: replicate each byte's sign
    regs = run(kb)
    assert regs[odd.name] == 0x07050301
    assert regs[swapped.name] == 0x44332211
    assert regs[same.name] == 0x03020100 and regs[high.name] == 0x07060504
    assert regs[signs.name] == 0x00FFFF00  # bytes 3, 2, 1, 0 of a: 0x01, 0xFF, 0x80, 0x7F


# -- lop3 -------------------------------------------------------------------------------------

FUNCTIONS = [lambda a, b, c: a & b & c, lambda a, b, c: a ^ b ^ c,
             lambda a, b, c: (a & b) | (~a & c), lambda a, b, c: (a & b) | (a & c) | (b & c),
             lambda a, b, c: ~(a | b) ^ c, lambda a, b, c: a & ~b, lambda a, b, c: ~c]


@pytest.mark.parametrize("k", range(len(FUNCTIONS)))
def test_lop3_computes_the_python_function(k):
    fn, rng = FUNCTIONS[k], random.Random(k)
    words = [(rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(32)) for _ in range(8)]
    kb = KernelBuilder("k")
    outs = [kb.lop3(_u32(kb, a), _u32(kb, b), _u32(kb, c), fn) for a, b, c in words]
    regs = run(kb)
    for (a, b, c), out in zip(words, outs):
        assert regs[out.name] == fn(a, b, c) & M32


# -- shf: multi-word shifts -------------------------------------------------------------------

def test_shf_is_a_64_bit_shift():
    rng = random.Random(3)
    cases = [(rng.getrandbits(64), n) for n in range(33)]
    kb = KernelBuilder("k")
    outs = []
    for x, n in cases:
        lo, hi, rn = _u32(kb, x), _u32(kb, x >> 32), _u32(kb, n)
        outs.append((kb.shf_l(lo, hi, rn), kb.shf_r(lo, hi, rn), kb.shf_l(lo, hi, rn, mode="wrap")))
    regs = run(kb)
    for (x, n), (left, right, wrapped) in zip(cases, outs):
        assert regs[left.name] == ((x << n) >> 32) & M32, n
        assert regs[right.name] == (x >> n) & M32, n
        assert regs[wrapped.name] == ((x << (n % 32)) >> 32) & M32, n


def test_docs_shift_example_shifts_256_bits():
    """The builder.md example (a 64-bit shift across two words), generalised to 8 words."""
    block = next(b for b in re.findall(r"```python\n(.*?)```", (ROOT / "docs/builder.md").read_text(),
                                       flags=re.S) if "shf_l" in b)
    namespace: dict = {}
    exec(compile(block, "docs/builder.md", "exec"), namespace)
    shift_left = namespace["shift_left"]
    rng = random.Random(11)
    for n in (0, 1, 13, 31):
        x = rng.getrandbits(256)
        kb = KernelBuilder("k")
        words = [_u32(kb, x >> (32 * k)) for k in range(8)]
        out = shift_left(kb, words, n)
        regs = run(kb)
        got = sum(regs[w.name] << (32 * k) for k, w in enumerate(out))
        assert got == (x << n) % (1 << 256), n


# -- the others: the ISA's own examples and Python integers ------------------------------------

def test_isa_examples_fns_bmsk_szext():
    kb = KernelBuilder("k", target="sm_80")
    mask = _u32(kb, 0xAAAAAAAA)
    f = [kb.fns(mask, base, off) for base, off in ((3, 1), (3, -1), (2, 1), (2, -1), (0, 0), (1, 0))]
    m = kb.bmsk(1, 2, mode="wrap")
    z = kb.szext(_u32(kb, M32), 0, mode="wrap")
    s12 = kb.szext(kb.mov(0x800, type="s32"), 12)
    u12 = kb.szext(_u32(kb, 0xFFFFF800), 12)
    clamp = kb.szext(_u32(kb, 0x80000000), _u32(kb, 40), type="s32")
    regs = run(kb)
    assert [regs[r.name] for r in f] == [3, 3, 3, 1, M32, 1]
    assert regs[m.name] == 0x00000006 and regs[z.name] == 0
    assert regs[s12.name] == 0xFFFFF800 and regs[u12.name] == 0x800
    assert regs[clamp.name] == 0x80000000


def test_bfind_dot_products_sad_mul24():
    kb = KernelBuilder("k", target="sm_80")
    bf = [kb.bfind(_u32(kb, 0x00010000)), kb.bfind(_u32(kb, 0x00010000), shiftamt=True),
          kb.bfind(kb.mov(-1, type="s32")), kb.bfind(kb.mov(-2, type="s32")), kb.bfind(_u32(kb, 0))]
    sa = kb.mov(_sx(_pack(1, -2, 3, -4), 32), type="s32")
    sb = kb.mov(_sx(_pack(5, 6, -7, 8), 32), type="s32")
    d4 = kb.dp4a(sa, sb, 100)
    ub = _u32(kb, _pack(5, 6, -7, 8))
    mixed = kb.dp4a(sa, ub, 0)
    halves = kb.mov(_sx(((-3 & 0xFFFF) << 16) | 7, 32), type="s32")
    lo, hi = kb.dp2a(halves, sb, 0), kb.dp2a(halves, sb, 0, mode="hi")
    sad = kb.sad(kb.mov(-5, type="s32"), kb.mov(7, type="s32"), kb.mov(1, type="s32"))
    m24 = kb.mul24(_u32(kb, 0xFF000003), _u32(kb, 5))            # the top 8 bits are ignored
    h24 = kb.mul24(_u32(kb, 0xFFFFFF), _u32(kb, 0xFFFFFF), mode="hi")
    regs = run(kb)
    assert [regs[r.name] for r in bf] == [16, 15, M32, 0, M32]
    assert regs[d4.name] == 100 + 5 - 12 - 21 - 32
    assert regs[mixed.name] == (5 - 12 + 3 * 249 - 32) & M32   # b's bytes unsigned: -7 is 249
    assert regs[lo.name] == (7 * 5 - 3 * 6) & M32 and regs[hi.name] == (7 * -7 - 3 * 8) & M32
    assert regs[sad.name] == 13
    assert regs[m24.name] == 15 and regs[h24.name] == ((0xFFFFFF * 0xFFFFFF) >> 16) & M32


def _pack(*bytes_) -> int:
    return sum((b & 0xFF) << (8 * k) for k, b in enumerate(bytes_))


def test_copysign_is_ptx_order_and_testp_classes():
    kb = KernelBuilder("k")
    neg, two = kb.mov(-1.0, type="f32"), kb.mov(2.0, type="f32")
    c = kb.copysign(neg, two)          # b with a's sign
    tiny = kb.mov(1e-40, type="f32")
    classes = {cls: kb.testp(cls, v) for cls, v in (("subnormal", tiny), ("normal", c))}
    regs = run(kb)
    assert regs[c.name] == -2.0
    assert regs[classes["subnormal"].name] and regs[classes["normal"].name]
