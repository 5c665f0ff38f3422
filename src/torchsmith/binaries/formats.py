"""Where fat binaries live inside ELF and PE files (and raw .fatbin / ar archives).

ELF: the ``.nv_fatbin`` section (``__nv_relfatbin`` for relocatable device code), found through
the section headers; only headers are read. PE (.dll/.pyd/.exe): the COFF section names are cut to
8 characters and no header points at the fatbin, so the file is scanned for the container prefix
and every candidate validated. Synthetic/odd layouts fall back to the same scan.
"""

from __future__ import annotations

import contextlib
import re
import struct
from dataclasses import dataclass
from typing import Literal

from torchsmith.binaries.fatbin import CONTAINER_PREFIX, ByteSource
from torchsmith.binaries.offload import BUNDLE_MAGIC as OFFLOAD_MAGIC
from torchsmith.binaries.offload import HIP_SECTIONS
from torchsmith.errors import InputError

Format = Literal["elf", "pe", "fatbin", "ar", "offload", "cubin", "ptx"]

FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
ELF_MAGIC = b"\x7fELF"
AR_MAGIC = b"!<arch>\n"
SHT_NOBITS = 8
SHN_XINDEX = 0xFFFF
EM_CUDA = 190  # e_machine of a cubin: an ELF file of GPU code (nvcc -cubin)
CUDA_ABI_V8 = 8  # EI_ABIVERSION from CUDA 12.x on: the SM moved from e_flags bits 0-7 to 8-15
PTX_HEAD_BYTES = 16 << 10  # where a PTX file's .version and .target directives are looked for
_PTX_TARGET = re.compile(rb"^[ \t]*\.target[ \t]+sm_(\d{2,3})([af]?)\b", re.MULTILINE)
_PTX_VERSION = re.compile(rb"^[ \t]*\.version[ \t]+\d+\.\d+", re.MULTILINE)


class BinaryFormatError(InputError):
    """A file is not a binary torchsmith can read (text, garbage, truncated)."""


class NotABinaryError(BinaryFormatError):
    """The file is no binary at all (text, a zip, unknown data): not a damaged one."""


class UnreadableFileError(BinaryFormatError):
    """The file could not be opened or read (permission denied, gone, an I/O error)."""


@dataclass(frozen=True)
class Region:
    """A byte range to walk for containers; ``trusted`` when it is a fatbin section."""

    name: str
    start: int
    end: int
    trusted: bool


@dataclass(frozen=True)
class Layout:
    format: Format
    regions: tuple[Region, ...]
    sections: tuple[tuple[str, int, int], ...] = ()  # (name, start, end) of PE sections
    note: str | None = None
    offload: tuple[Region, ...] | None = None  # ELF .hip_fatbin sections; None: scan regions
    # The file itself is GPU code (a cubin or a PTX file): ("sass", "sm_90") / ("ptx", ...)
    device_code: tuple[Literal["sass", "ptx"], str] | None = None


def sniff(head: bytes) -> Format | None:
    """The format from a file's first bytes, or None."""
    if head.startswith(ELF_MAGIC):
        return "elf"
    if head.startswith(b"MZ"):
        return "pe"
    if head.startswith(CONTAINER_PREFIX):
        return "fatbin"
    if head.startswith(AR_MAGIC):
        return "ar"
    if head.startswith((OFFLOAD_MAGIC, b"CCOB")):
        return "offload"
    return None


def describe_head(head: bytes) -> str:
    if not head:
        return "an empty file"
    if head.startswith(b"PK\x03\x04"):
        return "a zip archive"
    sample = head[:64]
    if all(32 <= b < 127 or b in b"\t\r\n" for b in sample):
        return "a text file"
    return f"unknown data (starts {head[:4].hex(' ')})"


def layout(src: ByteSource, display: str) -> Layout:
    """Find where to look for containers in a random-access source; raises BinaryFormatError."""
    head = src.read_at(0, 64)
    fmt = sniff(head)
    whole = Region("(whole file)", 0, src.size, trusted=False)
    if fmt == "elf":
        return _elf_layout(src, head, display)
    if fmt == "pe":
        sections = _pe_sections(src, head, display)
        return Layout("pe", (whole,), sections)
    if fmt == "fatbin":
        return Layout("fatbin", (Region("(raw fatbin)", 0, src.size, trusted=True),))
    if fmt == "ar":
        return Layout("ar", (whole,))
    if fmt == "offload":
        return Layout("offload", (), offload=(Region("(raw offload bundle)", 0, src.size, True),))
    target = ptx_target(src.read_at(0, PTX_HEAD_BYTES))
    if target is not None:
        return Layout("ptx", (), offload=(), device_code=("ptx", target))
    raise NotABinaryError(
        f"{display}: not an ELF or PE binary ({describe_head(head)})",
        tip="give a .so, .dll, .pyd, executable, wheel, directory or installed package name",
    )


@dataclass(frozen=True)
class ElfHeader:
    """The fields of an ELF header that locate its section headers."""

    end: str  # struct byte order: "<" or ">"
    machine: int  # e_machine
    shoff: int
    shentsize: int
    shnum: int  # 0 with shoff set: extended numbering, the count is in section 0
    shstrndx: int
    shdr: struct.Struct  # one section header of this class and byte order


def elf_header(head: bytes, size: int, display: str) -> ElfHeader:
    """The ELF header in ``head`` (the first 64 bytes), checked against the file's ``size``.

    Reads nothing beyond ``head``, so a forward-only stream (a wheel member: its section headers
    sit at the end, past what a scan may go back to) gets the same verdict on a cut or malformed
    header as a file on disk. A cubin's section table is not checked (it is not read either).
    Raises BinaryFormatError.
    """
    if len(head) < 52 or head[4] not in (1, 2) or head[5] not in (1, 2):
        raise BinaryFormatError(f"{display}: truncated or malformed ELF header")
    end = "<" if head[5] == 1 else ">"
    if head[4] == 2:
        if len(head) < 64:
            raise BinaryFormatError(f"{display}: truncated ELF header")
        (shoff,) = struct.unpack_from(end + "Q", head, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", head, 0x3A)
        shdr = struct.Struct(end + "IIQQQQIIQQ")
    else:
        (shoff,) = struct.unpack_from(end + "I", head, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", head, 0x2E)
        shdr = struct.Struct(end + "IIIIIIIIII")
    (machine,) = struct.unpack_from(end + "H", head, 0x12)
    if machine != EM_CUDA and shoff:
        if shentsize < shdr.size:
            raise BinaryFormatError(f"{display}: malformed ELF (section header size {shentsize})")
        if shoff + max(shnum, 1) * shentsize > size:
            raise BinaryFormatError(
                f"{display}: truncated ELF (section headers end past the file's {size:,} bytes)"
            )
    return ElfHeader(end, machine, shoff, shentsize, shnum, shstrndx, shdr)


def _elf_layout(src: ByteSource, head: bytes, display: str) -> Layout:
    elf = elf_header(head, src.size, display)
    if elf.machine == EM_CUDA:
        arch = _cubin_arch(src, head, elf.end)
        return Layout("cubin", (), offload=(), device_code=("sass", arch))
    whole = Region("(whole file)", 0, src.size, trusted=False)
    if elf.shoff == 0:
        return Layout("elf", (whole,), note="no ELF section headers; scanned the whole file")
    shoff, shentsize, shdr = elf.shoff, elf.shentsize, elf.shdr
    shnum, shstrndx = elf.shnum, elf.shstrndx

    def header(index: int) -> tuple[int, ...]:
        raw = src.read_at(shoff + index * shentsize, shdr.size)
        if len(raw) < shdr.size:
            raise BinaryFormatError(
                f"{display}: truncated ELF (section headers end past the file's {src.size:,} bytes)"
            )
        return shdr.unpack(raw)

    if shnum == 0 or shstrndx == SHN_XINDEX:  # extended numbering: the real values in section 0
        first = header(0)
        shnum = shnum or first[5]
        if shstrndx == SHN_XINDEX:
            shstrndx = first[6]
    if shoff + shnum * shentsize > src.size:
        raise BinaryFormatError(
            f"{display}: truncated ELF (section headers end past the file's {src.size:,} bytes)"
        )
    headers = [header(i) for i in range(shnum)]
    if not 0 <= shstrndx < shnum:
        raise BinaryFormatError(f"{display}: malformed ELF (bad section name table index)")
    strtab_off, strtab_size = headers[shstrndx][4], headers[shstrndx][5]
    names = src.read_at(strtab_off, min(strtab_size, 1 << 24))
    regions: list[Region] = []
    hip: list[Region] = []
    for h in headers:
        name = _cstr(names, h[0])
        if name in (*FATBIN_SECTIONS, *HIP_SECTIONS) and h[1] != SHT_NOBITS:
            start, size = h[4], h[5]
            if start + size > src.size:
                raise BinaryFormatError(f"{display}: truncated ELF ({name} ends past the file)")
            region = Region(name, start, start + size, trusted=True)
            (hip if name in HIP_SECTIONS else regions).append(region)
    return Layout("elf", tuple(regions), offload=tuple(hip))


def _cubin_arch(src: ByteSource, head: bytes, end: str) -> str:
    """``sm_90`` from a cubin's ELF header: the SM number is in e_flags.

    ABI version 8 (CUDA 12.x and later) keeps it in bits 8-15, older cubins in bits 0-7 (as
    LLVM's EF_CUDA_SM). The ``a``/``f`` suffix is not in the header: nvcc records its options
    (``-arch sm_90a -m 64``) in the cubin, which is where it is read from when present.
    """
    flags_at = 0x30 if head[4] == 2 else 0x24  # e_flags: ELFCLASS64, ELFCLASS32
    (flags,) = struct.unpack_from(end + "I", head, flags_at)
    number = (flags >> 8) & 0xFF if head[8] >= CUDA_ABI_V8 else flags & 0xFF
    option = f"-arch sm_{number}".encode()
    at = src.find(option, 0, src.size)
    suffix = src.read_at(at + len(option), 1) if at >= 0 else b""
    return f"sm_{number}{suffix.decode() if suffix in (b'a', b'f') else ''}"


def ptx_target(head: bytes) -> str | None:
    """``compute_90`` from a PTX file's ``.target sm_90`` directive (after ``.version``)."""
    version = _PTX_VERSION.search(head)
    target = _PTX_TARGET.search(head, version.end()) if version else None
    if target is None:
        return None
    return f"compute_{int(target.group(1))}{target.group(2).decode()}"


def _cstr(table: bytes, offset: int) -> str:
    if offset >= len(table):
        return ""
    stop = table.find(b"\0", offset)
    return table[offset : stop if stop >= 0 else len(table)].decode("latin-1")


def _pe_sections(src: ByteSource, head: bytes, display: str) -> tuple[tuple[str, int, int], ...]:
    if len(head) < 0x40:
        raise BinaryFormatError(f"{display}: truncated PE (DOS header)")
    (pe_off,) = struct.unpack_from("<I", head, 0x3C)
    coff = src.read_at(pe_off, 24)
    if len(coff) < 24 or coff[:4] != b"PE\0\0":
        raise BinaryFormatError(f"{display}: not a PE binary (MZ header without a PE signature)")
    count, opt_size = struct.unpack_from("<2xH12xH", coff, 4)
    table = pe_off + 24 + opt_size
    raw = src.read_at(table, count * 40)
    if len(raw) < count * 40:
        raise BinaryFormatError(f"{display}: truncated PE (section table past end of file)")
    sections = []
    for i in range(count):
        name, _vsize, _vaddr, raw_size, raw_ptr = struct.unpack_from("<8sIIII", raw, i * 40)
        text = name.rstrip(b"\0").decode("latin-1")
        if raw_size and raw_ptr + raw_size > src.size:
            raise BinaryFormatError(
                f"{display}: truncated PE (section {text or i} ends past the file's "
                f"{src.size:,} bytes)"
            )
        sections.append((text, raw_ptr, raw_ptr + raw_size))
    return tuple(sections)


PE_HEADERS_MAX = 64 << 10  # a stream's PE headers are checked when they end within this


class _HeadersBeyondError(Exception):
    """The PE headers reach past the bytes a stream keeps for them."""


class _Prefix:
    """The first bytes of a binary of ``size`` bytes, as a source for the header checks: a read
    past the file's end comes back short (damage), a read past the prefix alone raises."""

    def __init__(self, prefix: bytes, size: int) -> None:
        self._prefix = prefix
        self.size = size

    def read_at(self, offset: int, length: int) -> bytes:
        if min(offset + length, self.size) > len(self._prefix):
            raise _HeadersBeyondError
        return self._prefix[offset : offset + length]

    def find(self, pattern: bytes, start: int, end: int) -> int:  # pragma: no cover - unused
        return self._prefix.find(pattern, start, end)


def pe_headers(prefix: bytes, size: int, display: str) -> None:
    """For a forward-only stream (a wheel member): the checks :func:`layout` makes of a PE's
    headers and section table (a PE signature, a table inside the file, no section past its
    end), on the stream's first bytes. Headers reaching past ``prefix`` (PE_HEADERS_MAX; real
    ones end in the first few KiB) are not checked. Raises BinaryFormatError."""
    with contextlib.suppress(_HeadersBeyondError):
        _pe_sections(_Prefix(prefix, size), prefix, display)


def section_of(offset: int, sections: tuple[tuple[str, int, int], ...]) -> str | None:
    for name, start, end in sections:
        if start <= offset < end:
            return name
    return None


# ---------------------------------------------------------------- what a binary needs to load

PT_LOAD = 1
PT_DYNAMIC = 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 14, 15, 29


@dataclass(frozen=True)
class ElfDynamic:
    """The loader-relevant part of an ELF's dynamic section."""

    needed: tuple[str, ...]
    rpath: tuple[str, ...] = ()  # DT_RPATH entries (unexpanded: $ORIGIN kept)
    runpath: tuple[str, ...] = ()  # DT_RUNPATH entries
    soname: str | None = None
    elf_class: int = 2  # 1: 32-bit, 2: 64-bit
    machine: int = 0  # e_machine: 62 x86-64, 183 aarch64


def read_elf_dynamic(src: ByteSource, display: str) -> ElfDynamic:
    """DT_NEEDED, DT_RPATH, DT_RUNPATH and DT_SONAME, read through the program headers.

    The program headers are what ld.so itself reads (section headers may be stripped); the
    string table's virtual address is mapped to a file offset through the PT_LOAD segments.
    A static binary (no PT_DYNAMIC) needs nothing. Raises BinaryFormatError.
    """
    head = src.read_at(0, 64)
    if not head.startswith(ELF_MAGIC):
        raise BinaryFormatError(f"{display}: not an ELF binary ({describe_head(head)})")
    if len(head) < 52 or head[4] not in (1, 2) or head[5] not in (1, 2):
        raise BinaryFormatError(f"{display}: truncated or malformed ELF header")
    wide, end = head[4] == 2, ("<" if head[5] == 1 else ">")
    (machine,) = struct.unpack_from(end + "H", head, 0x12)
    if wide:
        (phoff,) = struct.unpack_from(end + "Q", head, 0x20)
        phentsize, phnum = struct.unpack_from(end + "HH", head, 0x36)
        phdr, dyn = struct.Struct(end + "IIQQQQQQ"), struct.Struct(end + "qQ")
    else:
        (phoff,) = struct.unpack_from(end + "I", head, 0x1C)
        phentsize, phnum = struct.unpack_from(end + "HH", head, 0x2A)
        phdr, dyn = struct.Struct(end + "IIIIIIII"), struct.Struct(end + "iI")
    loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
    dynamic: tuple[int, int] | None = None
    for i in range(phnum if phentsize >= phdr.size else 0):
        raw = src.read_at(phoff + i * phentsize, phdr.size)
        if len(raw) < phdr.size:
            raise BinaryFormatError(f"{display}: truncated ELF (program headers)")
        f = phdr.unpack(raw)
        # 64-bit: type, flags, offset, vaddr, paddr, filesz; 32-bit: type, offset, vaddr, paddr,
        # filesz
        p_type, offset, vaddr, filesz = (f[0], f[2], f[3], f[5]) if wide else (*f[0:3], f[4])
        if p_type == PT_LOAD:
            loads.append((vaddr, offset, filesz))
        elif p_type == PT_DYNAMIC:
            dynamic = (offset, filesz)
    if dynamic is None:
        return ElfDynamic((), elf_class=head[4], machine=machine)
    table = src.read_at(dynamic[0], dynamic[1])
    entries: list[tuple[int, int]] = []
    for pos in range(0, len(table) - dyn.size + 1, dyn.size):
        tag, value = dyn.unpack_from(table, pos)
        if tag == DT_NULL:
            break
        entries.append((tag, value))
    strtab = next((v for t, v in entries if t == DT_STRTAB), None)
    str_off = None
    for vaddr, offset, filesz in loads:
        if strtab is not None and vaddr <= strtab < vaddr + filesz:
            str_off = offset + (strtab - vaddr)
    if str_off is None:
        raise BinaryFormatError(f"{display}: malformed ELF (dynamic string table not mapped)")

    def string(value: int) -> str:
        raw = src.read_at(str_off + value, 4096)
        return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")

    def paths(tag: int) -> tuple[str, ...]:
        return tuple(p for t, v in entries if t == tag for p in string(v).split(":") if p)

    soname = next((string(v) for t, v in entries if t == DT_SONAME), None)
    return ElfDynamic(
        needed=tuple(string(v) for t, v in entries if t == DT_NEEDED),
        rpath=paths(DT_RPATH),
        runpath=paths(DT_RUNPATH),
        soname=soname,
        elf_class=head[4],
        machine=machine,
    )


@dataclass(frozen=True)
class PeImports:
    """The DLLs a PE file imports: loaded with it (``dlls``) or on first call (``delayed``)."""

    dlls: tuple[str, ...]
    delayed: tuple[str, ...] = ()
    machine: int = 0  # 0x8664 x64, 0xAA64 arm64, 0x14C x86


def read_pe_imports(src: ByteSource, display: str) -> PeImports:
    """The import and delay-import tables of a PE (.dll/.pyd/.exe); raises BinaryFormatError."""
    head = src.read_at(0, 64)
    if not head.startswith(b"MZ") or len(head) < 0x40:
        raise BinaryFormatError(f"{display}: not a PE binary ({describe_head(head)})")
    (pe_off,) = struct.unpack_from("<I", head, 0x3C)
    coff = src.read_at(pe_off, 24)
    if len(coff) < 24 or coff[:4] != b"PE\0\0":
        raise BinaryFormatError(f"{display}: not a PE binary (MZ header without a PE signature)")
    machine, count = struct.unpack_from("<HH", coff, 4)
    (opt_size,) = struct.unpack_from("<H", coff, 20)
    opt = src.read_at(pe_off + 24, opt_size)
    if len(opt) < 2:
        raise BinaryFormatError(f"{display}: truncated PE (optional header)")
    (magic,) = struct.unpack_from("<H", opt, 0)
    dirs_at = {0x10B: 96, 0x20B: 112}.get(magic)
    if dirs_at is None:
        raise BinaryFormatError(f"{display}: malformed PE (optional header magic {magic:#x})")
    raw = src.read_at(pe_off + 24 + opt_size, count * 40)
    if len(raw) < count * 40:
        raise BinaryFormatError(f"{display}: truncated PE (section table past end of file)")
    sections = [struct.unpack_from("<8xIIII", raw, i * 40) for i in range(count)]

    def offset(rva: int) -> int | None:
        for vsize, vaddr, raw_size, raw_ptr in sections:
            if vaddr <= rva < vaddr + max(vsize, raw_size):
                return int(raw_ptr + (rva - vaddr))
        return None

    def directory(index: int) -> tuple[int, int]:
        pos = dirs_at + index * 8
        if pos + 8 > len(opt):
            return 0, 0
        rva, size = struct.unpack_from("<II", opt, pos)
        return rva, size

    def name_at(rva: int) -> str | None:
        off = offset(rva)
        if off is None:
            return None
        return src.read_at(off, 512).split(b"\0", 1)[0].decode("latin-1") or None

    def names(index: int, size: int, name_field: int) -> tuple[str, ...]:
        rva, _ = directory(index)
        start = offset(rva) if rva else None
        out: list[str] = []
        while start is not None and len(out) < 4096:
            desc = src.read_at(start + len(out) * size, size)
            if len(desc) < size or desc == b"\0" * size:
                break
            (name_rva,) = struct.unpack_from("<I", desc, name_field)
            name = name_at(name_rva)
            if name is None:
                raise BinaryFormatError(f"{display}: malformed PE (import name outside sections)")
            out.append(name)
        return tuple(out)

    return PeImports(
        dlls=names(1, 20, 12),  # IMAGE_IMPORT_DESCRIPTOR: Name at +12
        delayed=names(13, 32, 4),  # IMAGE_DELAYLOAD_DESCRIPTOR: DllNameRVA at +4
        machine=machine,
    )
