"""Fatbins and the shared libraries that embed them: the cubins and PTX inside, per arch.

``nvcc -fatbin`` writes a fat binary; ``nvcc -shared`` (and every CUDA extension of a Python
wheel) puts one fat binary per translation unit into the ELF section ``.nv_fatbin`` of the
library.  A fat binary is a 16-byte header (magic ``0xBA55ED50``, version, header size, size
of the entries) and entries, each a header (kind: 1 PTX, 2 ELF cubin; its own size; the
payload size; the arch as ``major * 10 + minor``; flags, ``0x2000`` / ``0x8000`` for an
LZ4 / zstd-compressed payload; the uncompressed size) and the payload.  :func:`entries` reads
them without running anything; a compressed payload (nvcc compresses PTX with zstd by
default) is listed with ``data`` None, since the standard library cannot inflate it:
``nvcc --compress-mode=none`` or ``cuobjdump -xptx`` give it plain.  A wheel (a zip) is
read member by member: every shared library, object, cubin or fat binary in it that holds
CUDA code gives its entries, each naming the member (``pkg/_ops.so``).

Example::

    >>> [(e.kind, e.arch) for e in entries(open("k.fatbin", "rb").read())]  # doctest: +SKIP
    [('cubin', 'sm_80'), ('cubin', 'sm_86'), ('ptx', 'sm_86')]
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
from typing import Optional

import attrs

from ptxforge.errors import PtxforgeError

__all__ = ["FATBIN_MAGIC", "ContainerReport", "FatbinEntry", "analyze_container", "entries",
           "is_cuda_elf", "is_fatbin_container"]

#: The first four bytes of a fat binary (little-endian).
FATBIN_MAGIC = 0xBA55ED50
_ZIP = b"PK\x03\x04"                # a wheel is a zip archive
#: Files of a wheel that may hold CUDA code: shared libraries, objects, cubins, fat binaries.
_BINARY = re.compile(r"\.(so(\.[\d.]+)?|o|pyd|dll|cubin|fatbin)$")
_EM_CUDA = 190                      # e_machine of a cubin
_COMPRESSED = {0x2000: "LZ4", 0x8000: "zstd"}


@attrs.frozen(slots=True, kw_only=True)
class FatbinEntry:
    """One entry of a fat binary: ``kind`` (``"cubin"`` or ``"ptx"``), ``arch`` (``sm_80``),
    ``index`` (its place among the container's entries), ``data`` (the cubin's bytes or the
    PTX text; None when compressed) and ``compressed`` (the codec's name, or None)."""

    kind: str
    arch: str
    index: int
    data: Optional[object] = attrs.field(repr=False)
    compressed: Optional[str] = None
    member: Optional[str] = None    # the file inside a wheel (zip) it came from


def is_cuda_elf(data: bytes) -> bool:
    """Whether ``data`` is a cubin (an ELF file for the CUDA machine), not a host ELF.

    Example::

        >>> is_cuda_elf(b"\\x7fELF" + bytes(14) + (190).to_bytes(2, "little")), is_cuda_elf(b"x")
        (True, False)
    """
    return data[:4] == b"\x7fELF" and len(data) >= 20 and \
        struct.unpack_from("<H", data, 18)[0] == _EM_CUDA


def is_fatbin_container(data: bytes) -> bool:
    """Whether ``data`` is a fat binary or a host ELF (a ``.so``, an object) that embeds one.

    Example::

        >>> is_fatbin_container(FATBIN_MAGIC.to_bytes(4, "little") + bytes(12))
        True
    """
    if len(data) >= 16 and struct.unpack_from("<I", data, 0)[0] == FATBIN_MAGIC:
        return True
    if data[:4] == _ZIP:   # a wheel (or any zip): its binaries are looked at by entries()
        return True
    return data[:4] == b"\x7fELF" and not is_cuda_elf(data) and _section(data) is not None


def _section(elf: bytes, wanted: str = ".nv_fatbin") -> Optional[bytes]:
    """The bytes of the section ``wanted`` of a 64-bit little-endian ELF file, or None."""
    if len(elf) < 64 or elf[4] != 2 or elf[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    if not shoff or shstrndx >= shnum or shoff + shnum * shentsize > len(elf):
        return None

    def header(i: int) -> tuple:   # sh_name, sh_type, sh_offset, sh_size
        base = shoff + i * shentsize
        name, kind = struct.unpack_from("<II", elf, base)
        offset, size = struct.unpack_from("<QQ", elf, base + 24)
        return name, kind, offset, size
    _, _, str_off, str_size = header(shstrndx)
    names = elf[str_off:str_off + str_size]
    for i in range(shnum):
        name, kind, offset, size = header(i)
        end = names.find(b"\0", name)
        if names[name:end].decode(errors="replace") == wanted and kind != 8:  # 8: NOBITS
            return elf[offset:offset + size]
    return None


def _one_fatbin(blob: bytes, at: int, out: list) -> int:
    """Append the entries of the fat binary at ``blob[at:]`` to ``out``; its end."""
    magic, _version, head, size = struct.unpack_from("<IHHQ", blob, at)
    if magic != FATBIN_MAGIC:
        raise PtxforgeError(f"expected a fat binary (magic 0x{FATBIN_MAGIC:08X}) at byte {at}, "
                            f"got 0x{magic:08X}")
    pos, end = at + head, at + head + size
    if end > len(blob):
        raise PtxforgeError(f"the fat binary at byte {at} says {size} bytes of entries; only "
                            f"{len(blob) - at - head} follow (truncated file?)")
    while pos + 64 <= end:
        kind, _, ehead, payload = struct.unpack_from("<HHIQ", blob, pos)
        arch, = struct.unpack_from("<I", blob, pos + 28)
        flags, = struct.unpack_from("<Q", blob, pos + 40)
        if ehead < 64 or pos + ehead + payload > end:
            raise PtxforgeError(f"fat binary entry at byte {pos}: header {ehead} bytes, payload "
                                f"{payload} bytes run past the container's end ({end})")
        data = blob[pos + ehead:pos + ehead + payload]
        codec = next((name for bit, name in _COMPRESSED.items() if flags & bit), None)
        if kind in (1, 2):
            value: Optional[object] = None
            if codec is None:
                value = data if kind == 2 else data.split(b"\0", 1)[0].decode(errors="replace")
            out.append(FatbinEntry(kind="cubin" if kind == 2 else "ptx",
                                   arch=f"sm_{arch}", index=len(out), data=value,
                                   compressed=codec))
        pos += ehead + payload
    return end


def entries(data: bytes) -> list:
    """Every :class:`FatbinEntry` of a fat binary, or of the fat binaries in the
    ``.nv_fatbin`` section of a host ELF (a ``.so``: one per translation unit, in order).
    PtxforgeError for other data or a malformed container.

    Example::

        >>> entries(b"not a fatbin")
        Traceback (most recent call last):
        ...
        ptxforge.errors.PtxforgeError: expected a fat binary (magic 0xBA55ED50) or an ELF file with a .nv_fatbin section; got neither
    """
    if data[:4] == _ZIP:
        return _archive_entries(data)
    blob = data
    if data[:4] == b"\x7fELF" and not is_cuda_elf(data):
        found = _section(data)
        if found is None:
            raise PtxforgeError("the ELF file has no .nv_fatbin section: no CUDA code in it")
        blob = found
    elif len(data) < 16 or struct.unpack_from("<I", data, 0)[0] != FATBIN_MAGIC:
        raise PtxforgeError("expected a fat binary (magic 0xBA55ED50) or an ELF file with a "
                            ".nv_fatbin section; got neither")
    out: list = []
    at = 0
    while at + 16 <= len(blob):
        if struct.unpack_from("<I", blob, at)[0] != FATBIN_MAGIC:   # alignment padding
            at += 8
            continue
        at = _one_fatbin(blob, at, out)
    return out


def _archive_entries(data: bytes) -> list:
    """The entries of every CUDA binary in a wheel (a zip): each member that is a host ELF
    with a ``.nv_fatbin`` section, a fat binary or a cubin, in name order; each entry keeps
    the member's name.  PtxforgeError when the archive cannot be read or holds none."""
    from ptxforge.toolchain.cubin import read_cubin

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError) as exc:
        raise PtxforgeError(f"expected a wheel (a zip archive): {exc}") from None
    out: list = []
    with archive:
        for info in sorted(archive.infolist(), key=lambda i: i.filename):
            if info.is_dir() or not _BINARY.search(info.filename):
                continue
            blob = archive.read(info)
            if is_cuda_elf(blob):
                found = [FatbinEntry(kind="cubin", arch=f"sm_{read_cubin(blob).sm}", index=0,
                                     data=blob)]
            elif blob[:4] != _ZIP and is_fatbin_container(blob):
                found = entries(blob)
            else:
                continue
            out += [attrs.evolve(e, index=len(out) + i, member=info.filename)
                    for i, e in enumerate(found)]
    if not out:
        raise PtxforgeError("the archive holds no CUDA code: no shared library with a "
                            ".nv_fatbin section, no cubin and no fat binary in it")
    return out


@attrs.frozen(slots=True, kw_only=True)
class ContainerReport:
    """Every entry of a fat binary (or ``.so``) analysed: ``(entry, report)`` pairs (a
    :class:`~ptxforge.reports.cubin.CubinReport` per cubin, a
    :class:`~ptxforge.reports.analyze.ModuleAnalysis` per PTX) and the entries not analysed,
    each with why (compressed, no kernel)."""

    file: str
    analysed: tuple
    skipped: tuple          # (entry, why)

    def to_dict(self) -> dict:
        """JSON-ready dict (``schema`` ``ptxforge.fatbin/1``)."""
        return {"schema": "ptxforge.fatbin/1", "file": self.file,
                "entries": [{"index": e.index, "kind": e.kind, "arch": e.arch,
                             "member": e.member, "report": r.to_dict()}
                            for e, r in self.analysed],
                "skipped": [{"index": e.index, "kind": e.kind, "arch": e.arch,
                             "member": e.member, "why": why} for e, why in self.skipped]}

    def to_text(self) -> str:
        """Each entry's report in turn, then one line per entry not analysed."""
        from ptxforge._text import plural

        kinds = [e.kind for e, _ in self.analysed] + [e.kind for e, _ in self.skipped]
        n = len(kinds)
        head = (f"{self.file}: {n} fat binary entr{'y' if n == 1 else 'ies'}"
                f" ({plural(kinds.count('cubin'), 'cubin')}, {kinds.count('ptx')} PTX); "
                f"{len(self.analysed)} analysed\n")
        body = "\n".join(r.to_text() for _, r in self.analysed)
        tail = "".join(f"entry {e.index} ({e.kind}, {e.arch}"
                       + (f", {e.member}" if e.member else "") + f"): {why}\n"
                       for e, why in self.skipped)
        return head + "\n" + body + ("\n" + tail if tail else "")


def analyze_container(data: bytes, file: str, spec, *, kernel: Optional[str] = None,
                      compile: bool = True, request=None) -> ContainerReport:
    """Analyse every entry of a fat binary or a ``.so`` (:func:`entries`) for its own arch:
    cubins with :func:`~ptxforge.reports.cubin.analyze_cubin`, plain PTX with
    :func:`~ptxforge.reports.analyze.analyze_ptx`.  ``spec`` (a
    :class:`~ptxforge.arch.spec.LaunchSpec`) with a target keeps the entries of that arch
    only; ``kernel`` the entries that hold it.

    Example::

        >>> rep = analyze_container(open("libk.so", "rb").read(), "libk.so", LaunchSpec())  # doctest: +SKIP
        >>> [(e.arch, [k.name for k in r.kernels]) for e, r in rep.analysed]  # doctest: +SKIP
        [('sm_80', ['_Z5scalePf']), ('sm_86', ['_Z5scalePf'])]
    """
    from ptxforge.errors import NoKernelError
    from ptxforge.reports.analyze import analyze_ptx
    from ptxforge.reports.cubin import analyze_cubin

    analysed, skipped = [], []
    wanted = spec.target
    for e in entries(data):
        if wanted is not None and e.arch != wanted:
            continue
        if e.data is None:
            skipped.append((e, f"{e.compressed}-compressed, not read (build with nvcc "
                               "--compress-mode=none, or extract it with cuobjdump -xptx)"))
            continue
        label = (f"{file}!{e.member}" if e.member else file) + f"#{e.index}:{e.kind}:{e.arch}"
        at = attrs.evolve(spec, target=e.arch)
        rep: object
        try:
            if e.kind == "cubin":
                rep = analyze_cubin(e.data, label, at, kernel=kernel)
            else:
                rep = analyze_ptx(e.data, label, at, compile=compile, kernel=kernel,
                                  request=request)
        except NoKernelError:
            skipped.append((e, "no kernel"))
            continue
        except PtxforgeError:
            if kernel is None:
                raise
            continue                    # this entry does not hold the kernel asked for
        if not getattr(rep, "kernels", ()):
            skipped.append((e, "no kernel"))
            continue
        analysed.append((e, rep))
    if kernel is not None and not analysed:
        raise PtxforgeError(f"no kernel named {kernel!r} in any entry of {file}")
    return ContainerReport(file=file, analysed=tuple(analysed), skipped=tuple(skipped))
