"""Where fat binaries live inside ELF and PE files (and raw .fatbin / ar archives).

ELF: the ``.nv_fatbin`` section (``__nv_relfatbin`` for relocatable device code), found through
the section headers; only headers are read. PE (.dll/.pyd/.exe): the COFF section names are cut to
8 characters and no header points at the fatbin, so the file is scanned for the container prefix
and every candidate validated. Synthetic/odd layouts fall back to the same scan.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Literal

from torchsmith.binaries.fatbin import CONTAINER_PREFIX, ByteSource
from torchsmith.errors import InputError

Format = Literal["elf", "pe", "fatbin", "ar"]

FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
ELF_MAGIC = b"\x7fELF"
AR_MAGIC = b"!<arch>\n"
SHT_NOBITS = 8
SHN_XINDEX = 0xFFFF


class BinaryFormatError(InputError):
    """A file is not a binary torchsmith can read (text, garbage, truncated)."""


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
    raise BinaryFormatError(
        f"{display}: not an ELF or PE binary ({describe_head(head)})",
        tip="give a .so, .dll, .pyd, executable, wheel, directory or installed package name",
    )


def _elf_layout(src: ByteSource, head: bytes, display: str) -> Layout:
    if len(head) < 52 or head[4] not in (1, 2) or head[5] not in (1, 2):
        raise BinaryFormatError(f"{display}: truncated or malformed ELF header")
    wide = head[4] == 2
    end = "<" if head[5] == 1 else ">"
    if wide:
        if len(head) < 64:
            raise BinaryFormatError(f"{display}: truncated ELF header")
        (shoff,) = struct.unpack_from(end + "Q", head, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", head, 0x3A)
        shdr = struct.Struct(end + "IIQQQQIIQQ")
    else:
        (shoff,) = struct.unpack_from(end + "I", head, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", head, 0x2E)
        shdr = struct.Struct(end + "IIIIIIIIII")
    whole = Region("(whole file)", 0, src.size, trusted=False)
    if shoff == 0:
        return Layout("elf", (whole,), note="no ELF section headers; scanned the whole file")
    if shentsize < shdr.size:
        raise BinaryFormatError(f"{display}: malformed ELF (section header size {shentsize})")

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
    regions = []
    for h in headers:
        name = _cstr(names, h[0])
        if name in FATBIN_SECTIONS and h[1] != SHT_NOBITS:
            start, size = h[4], h[5]
            if start + size > src.size:
                raise BinaryFormatError(f"{display}: truncated ELF ({name} ends past the file)")
            regions.append(Region(name, start, start + size, trusted=True))
    return Layout("elf", tuple(regions))


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
        sections.append((name.rstrip(b"\0").decode("latin-1"), raw_ptr, raw_ptr + raw_size))
    return tuple(sections)


def section_of(offset: int, sections: tuple[tuple[str, int, int], ...]) -> str | None:
    for name, start, end in sections:
        if start <= offset < end:
            return name
    return None
