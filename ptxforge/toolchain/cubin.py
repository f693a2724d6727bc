"""A small dependency-free reader for the resource attributes in a cubin (ELF64).

ptxas records each kernel's resources as EIATTR records in ``.nv.info`` (module-wide records
keyed by the function's symbol index: REGCOUNT, FRAME_SIZE, MIN_STACK_SIZE, …) and in
``.nv.info.<kernel>`` (MAXREG_COUNT, REQNTID, MAX_THREADS, NUM_BARRIERS, …).  A record is a
4-byte header ``format:u8 attribute:u8 value:u16``; for EIFMT_SVAL the u16 is the payload
size and the payload follows.  Before sm_90 the register count is also the high byte of the
``.text.<kernel>`` section's ``sh_info``; from sm_90 on that byte is 0 and only
EIATTR_REGCOUNT carries it.  Older toolkits (CUDA 12 for sm_70) keep the barrier count in
bits 20..26 of the ``.text.<kernel>`` section flags instead of EIATTR_NUM_BARRIERS, and from
sm_90 on the ``.nv.shared.<kernel>`` section of a kernel with static shared memory also holds
the 1 KB the driver reserves (ptxas's log reports the kernel's own bytes).

Example::

    >>> info = read_cubin(cubin_bytes)            # doctest: +SKIP
    >>> info.kernel("axpy").registers             # doctest: +SKIP
    10
"""

from __future__ import annotations

import struct
from typing import Optional, Union

import attrs

from ptxforge.errors import PtxforgeError

__all__ = ["EIATTR", "EIFMT", "UNKNOWN_STACK", "RESERVED_SHARED_SM90", "Section", "Record",
           "CubinKernel", "CubinInfo", "read_cubin", "parse_nv_info", "sm_from_e_flags"]

EIFMT = {1: "NVAL", 2: "BVAL", 3: "HVAL", 4: "SVAL"}

#: Attribute codes this reader names (others are kept with their number).
EIATTR = {
    0x04: "CTAIDZ_USED", 0x05: "MAX_THREADS", 0x0a: "PARAM_CBANK", 0x10: "REQNTID",
    0x11: "FRAME_SIZE", 0x12: "MIN_STACK_SIZE", 0x17: "KPARAM_INFO", 0x19: "CBANK_PARAM_SIZE",
    0x1b: "MAXREG_COUNT", 0x1c: "EXIT_INSTR_OFFSETS", 0x1d: "S2RCTAID_INSTR_OFFSETS",
    0x1e: "CRS_STACK_SIZE", 0x23: "MAX_STACK_SIZE", 0x2f: "REGCOUNT", 0x33: "STATISTICS",
    0x36: "SW_WAR", 0x37: "CUDA_API_VERSION", 0x4c: "NUM_BARRIERS", 0x50: "SPARSE_MMA_MASK",
}
#: EIATTR_MIN_STACK_SIZE / CRS_STACK_SIZE value for "cannot be statically determined".
UNKNOWN_STACK = 0xFFFFFFFF
#: Shared memory the driver reserves per block on sm_90+, held in ``.nv.shared.<kernel>``.
RESERVED_SHARED_SM90 = 1024
_BY_NAME = {v: k for k, v in EIATTR.items()}
SHT_CUDA_INFO = 0x70000000


@attrs.frozen(slots=True, kw_only=True)
class Section:
    index: int
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int


@attrs.frozen(slots=True, kw_only=True)
class Record:
    """One EIATTR record: ``value`` is an int (NVAL→None, BVAL/HVAL) or bytes (SVAL)."""

    attribute: int
    format: int
    value: Union[int, bytes, None]

    @property
    def name(self) -> str:
        return EIATTR.get(self.attribute, f"0x{self.attribute:02x}")

    def words(self) -> tuple:
        """An SVAL payload as little-endian u32 words."""
        v = self.value if isinstance(self.value, bytes) else b""
        return struct.unpack_from(f"<{len(v) // 4}I", v)


@attrs.frozen(slots=True, kw_only=True)
class CubinKernel:
    """Resources of one kernel as the cubin records them (None: not recorded)."""

    name: str
    registers: Optional[int]
    text_info_registers: Optional[int]     # sh_info high byte of .text.<k> (0 on sm_90+)
    frame_size: Optional[int]
    min_stack_size: Optional[int]
    max_stack_size: Optional[int]          # (None or UNKNOWN_STACK: not statically known)
    max_registers: Optional[int]           # EIATTR_MAXREG_COUNT (the cap ptxas honoured)
    barriers: Optional[int]
    max_threads: Optional[tuple]
    reqntid: Optional[tuple]
    crs_stack_size: Optional[int]
    shared: int                            # the kernel's own static shared bytes
    local: int                             # size of .nv.local.<k> (0 when absent)
    constant0: int                         # size of .nv.constant0.<k>
    text_size: int
    records: tuple = attrs.field(default=(), repr=False)
    reserved_shared: int = 0               # sm_90+: the 1 KB reserved, counted in .nv.shared.<k>
    callees: tuple = ()                    # functions it calls directly (or may call indirectly)

    @property
    def param_bytes(self) -> Optional[int]:
        """Bytes of kernel parameters in constant bank 0 (EIATTR_CBANK_PARAM_SIZE), or None."""
        for r in self.records:
            if r.name == "CBANK_PARAM_SIZE":
                return r.value if isinstance(r.value, int) else None
        return None

    @property
    def call_stack_known(self) -> bool:
        """False when ptxas could not bound the call graph's stack (recursion)."""
        return self.min_stack_size != UNKNOWN_STACK


@attrs.frozen(slots=True, kw_only=True)
class CubinInfo:
    """The ELF header facts and every function found (kernels and device functions)."""

    sm: int
    sections: tuple = attrs.field(repr=False)
    kernels: tuple
    abi_version: int = 0                   # e_ident[EI_ABIVERSION]: 7 old layout, 8 new
    e_flags: int = 0
    calls: tuple = ()                      # (caller, callee) pairs, direct and possible indirect

    def kernel(self, name: str) -> CubinKernel:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"no kernel {name!r} in the cubin; present: {[k.name for k in self.kernels]}")

    def reachable(self, name: str) -> tuple:
        """Every function ``name`` may call, directly or through others (sorted, itself
        excluded unless it recurses)."""
        edges: dict = {}
        for a, b in self.calls:
            edges.setdefault(a, []).append(b)
        seen, todo = set(), list(edges.get(name, ()))
        while todo:
            f = todo.pop()
            if f not in seen:
                seen.add(f)
                todo.extend(edges.get(f, ()))
        return tuple(sorted(seen))


def parse_nv_info(data: bytes) -> tuple:
    """Decode a ``.nv.info*`` section body into :class:`Record` s."""
    out, pos = [], 0
    while pos + 4 <= len(data):
        fmt, attr, val = struct.unpack_from("<BBH", data, pos)
        pos += 4
        if fmt == 4:
            payload = bytes(data[pos:pos + val])
            if len(payload) != val:
                raise PtxforgeError(f"cubin: truncated EIATTR 0x{attr:02x} record at byte {pos - 4}")
            out.append(Record(attribute=attr, format=fmt, value=payload))
            pos += val
        elif fmt in (1, 2, 3):
            out.append(Record(attribute=attr, format=fmt,
                              value=None if fmt == 1 else (val & 0xFF if fmt == 2 else val)))
        else:
            raise PtxforgeError(f"cubin: unknown EIATTR format byte 0x{fmt:02x} at byte {pos - 4}; "
                                "expected 0x01..0x04 (NVAL, BVAL, HVAL, SVAL)")
    return tuple(out)


def sm_from_e_flags(e_flags: int, abi_version: int) -> int:
    """The SM number of a cubin's ``e_flags`` under ELF ABI ``abi_version`` (7 or 8).

    Example::

        >>> sm_from_e_flags(0x460546, 7), sm_from_e_flags(0x06005004, 8)
        (70, 80)
    """
    if abi_version >= 8:
        return (e_flags >> 8) & 0xFF
    return e_flags & 0xFF


def _call_edges(words: tuple, symbols: dict) -> tuple:
    """(caller, callee) names from ``.nv.callgraph`` words (groups split by marker rows)."""
    out, group = [], 0
    for a, b in zip(words[::2], words[1::2]):
        if a == 0 and b >= 0xFFFFFFF0:
            # 0 direct calls, 1 address taken, 2 indirect callers, 3 indirect targets
            group = 0xFFFFFFFF - b
            continue
        if group in (0, 3) and a in symbols and b in symbols:
            out.append((symbols[a], symbols[b]))
    return tuple(dict.fromkeys(out))


def _cstr(blob: bytes, off: int) -> str:
    end = blob.index(b"\0", off)
    return blob[off:end].decode(errors="replace")


def read_cubin(data: "bytes | bytearray | memoryview") -> CubinInfo:
    """Read sections, symbols and EIATTR records of a cubin.

    Raises PtxforgeError when ``data`` is not a little-endian ELF64 CUDA object, or is one cut
    short (a truncated or damaged file).
    """
    data = bytes(data)
    try:
        return _read_cubin(data)
    except (struct.error, IndexError) as exc:
        raise PtxforgeError(f"cubin: the ELF object of {len(data):,} bytes is truncated or "
                            f"damaged ({exc}); expected a complete CUDA cubin") from None


def _read_cubin(data: bytes) -> CubinInfo:
    """The body of :func:`read_cubin` (struct errors mean a truncated object)."""
    if data[:4] != b"\x7fELF" or len(data) < 64 or data[4] != 2 or data[5] != 1:
        raise PtxforgeError(f"cubin: expected a little-endian ELF64 object, got {data[:6]!r}…")
    machine = struct.unpack_from("<H", data, 0x12)[0]
    if machine != 190:
        raise PtxforgeError(f"cubin: ELF machine {machine}, expected 190 (EM_CUDA)")
    flags = struct.unpack_from("<I", data, 0x30)[0]
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = data[raw[shstrndx][4]: raw[shstrndx][4] + raw[shstrndx][5]]
    sections = tuple(Section(index=i, name=_cstr(names, r[0]), type=r[1], flags=r[2], offset=r[4],
                             size=r[5], link=r[6], info=r[7])
                     for i, r in enumerate(raw))
    by_name = {s.name: s for s in sections}

    def body(s: Section) -> bytes:
        return data[s.offset:s.offset + s.size]

    # symbols: index -> name
    symbols: dict = {}
    symtab = by_name.get(".symtab")
    if symtab is not None:
        strtab = body(sections[symtab.link])
        blob = body(symtab)
        for i in range(len(blob) // 24):
            st_name = struct.unpack_from("<I", blob, i * 24)[0]
            symbols[i] = _cstr(strtab, st_name)
    # module-wide records keyed by symbol index
    per_sym: dict = {}
    if ".nv.info" in by_name:
        for rec in parse_nv_info(body(by_name[".nv.info"])):
            if isinstance(rec.value, bytes) and len(rec.value) >= 8:   # an SVAL
                sym, value = struct.unpack_from("<II", rec.value)
                per_sym.setdefault(symbols.get(sym, str(sym)), {})[rec.name] = value
    abi = data[8]
    sm = sm_from_e_flags(flags, abi)
    calls: tuple = ()
    if ".nv.callgraph" in by_name:
        cg = body(by_name[".nv.callgraph"])
        calls = _call_edges(struct.unpack_from(f"<{len(cg) // 8 * 2}I", cg), symbols)
    kernels = []
    for s in sections:
        if not s.name.startswith(".text."):
            continue
        name = s.name[len(".text."):]
        info = by_name.get(".nv.info." + name)
        recs = parse_nv_info(body(info)) if info is not None else ()
        local = {r.name: r for r in recs}
        glob = per_sym.get(name, {})

        def hval(key: str) -> Optional[int]:
            r = local.get(key)
            if r is None:
                return None
            return r.value if not isinstance(r.value, bytes) else r.words()[0]

        def triple(key: str) -> Optional[tuple]:
            r = local.get(key)
            return r.words() if r is not None and isinstance(r.value, bytes) else None

        sh_regs = (s.info >> 24) & 0xFF
        smem = by_name[".nv.shared." + name].size if ".nv.shared." + name in by_name else 0
        reserved = min(smem, RESERVED_SHARED_SM90) if sm >= 90 else 0
        kernels.append(CubinKernel(
            name=name,
            registers=glob.get("REGCOUNT", sh_regs or None),
            text_info_registers=sh_regs,
            frame_size=glob.get("FRAME_SIZE"),
            min_stack_size=glob.get("MIN_STACK_SIZE"),
            max_stack_size=glob.get("MAX_STACK_SIZE"),
            max_registers=hval("MAXREG_COUNT"),
            barriers=hval("NUM_BARRIERS") if "NUM_BARRIERS" in local else
            (((s.flags >> 20) & 0x7F) or None),
            max_threads=triple("MAX_THREADS"),
            reqntid=triple("REQNTID"),
            crs_stack_size=hval("CRS_STACK_SIZE"),
            shared=smem - reserved,
            local=by_name[".nv.local." + name].size if ".nv.local." + name in by_name else 0,
            constant0=(by_name[".nv.constant0." + name].size
                       if ".nv.constant0." + name in by_name else 0),
            text_size=s.size,
            records=recs,
            reserved_shared=reserved,
            callees=tuple(dict.fromkeys(b for a, b in calls if a == name)),
        ))
    kernels.sort(key=lambda k: k.name)
    return CubinInfo(sm=sm, sections=sections, kernels=tuple(kernels), abi_version=abi,
                     e_flags=flags, calls=calls)
