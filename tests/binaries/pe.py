"""A minimal, synthetic PE32+ DLL holding a real fatbin, for the Windows (.dll/.pyd) path.

Windows binaries cannot be produced here, so this writes the smallest PE32+ image torchsmith's
reader needs: DOS header, PE signature, COFF header, a zeroed PE32+ optional header and a section
table with a ``.text`` section and a ``.nv_fatb`` section (nvcc's Windows section name, the 8-char
cut of ``.nv_fatbin``) holding the fatbin bytes copied from an nvcc-built ELF. ``.text`` carries
decoy container magics that a reader must reject. Not loadable by Windows; not meant to be.
"""

from __future__ import annotations

import struct
from pathlib import Path

from torchsmith.binaries.formats import layout
from torchsmith.binaries.sources import MappedFile

FILE_ALIGN = 0x200
OPTIONAL_HEADER_SIZE = 0xF0  # PE32+
MACHINE_AMD64 = 0x8664
CHARACTERISTICS_DLL = 0x2022  # executable image | large address aware | DLL

# The container prefix (magic 0xBA55ED50, version 1, header size 16) followed by nonsense:
# what `cmp eax, 0xBA55ED50`-style code or data could look like by chance.
DECOYS = (
    struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 1 << 40)  # payload past the end of the file
    + struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 128)
    + b"\xff" * 128  # entry header with kind 0xffff: not an entry
)


def _align(n: int) -> int:
    return (n + FILE_ALIGN - 1) // FILE_ALIGN * FILE_ALIGN


def build_pe(fatbin: bytes, text: bytes = b"\xc3" * 64 + DECOYS) -> bytes:
    sections = [(b".text", text), (b".nv_fatb", fatbin)]
    pe_offset = 0x80
    headers_end = pe_offset + 4 + 20 + OPTIONAL_HEADER_SIZE + 40 * len(sections)
    dos = bytearray(pe_offset)
    dos[0:2] = b"MZ"
    struct.pack_into("<I", dos, 0x3C, pe_offset)
    coff = struct.pack(
        "<HHIIIHH",
        MACHINE_AMD64,
        len(sections),
        0,
        0,
        0,
        OPTIONAL_HEADER_SIZE,
        CHARACTERISTICS_DLL,
    )
    optional = bytearray(OPTIONAL_HEADER_SIZE)
    struct.pack_into("<H", optional, 0, 0x20B)  # PE32+
    table = b""
    body = b""
    raw_ptr = _align(headers_end)
    vaddr = 0x1000
    for name, data in sections:
        raw_size = _align(len(data))
        table += struct.pack(
            "<8sIIIIIIHHI", name, len(data), vaddr, raw_size, raw_ptr, 0, 0, 0, 0, 0x40000040
        )
        body += data + b"\0" * (raw_size - len(data))
        raw_ptr += raw_size
        vaddr += _align(len(data)) + 0x1000
    head = bytes(dos) + b"PE\0\0" + coff + bytes(optional) + table
    return head + b"\0" * (_align(headers_end) - len(head)) + body


def fatbin_bytes(path: Path) -> bytes:
    """The fatbin section of an nvcc-built ELF, to put into a PE."""
    with MappedFile(str(path)) as src:
        (region,) = layout(src, str(path)).regions
        return src.read_at(region.start, region.end - region.start)
