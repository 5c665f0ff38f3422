"""CUDA fat binary containers: find them, walk their entry headers, never decompress.

Layout (checked against nvcc 13.0 output and cuobjdump; see build-anchors.md §6):

- A container starts with a 16-byte header ``<IHHQ``: magic 0xBA55ED50, version 1, header size 16,
  payload size. Containers follow each other (8-byte aligned) inside ``.nv_fatbin``.
- Entries follow back to back inside the payload; each header is at least 64 bytes
  (observed 64, 80, 96, 112, 120)::

      u16 kind (1 PTX, 2 ELF/SASS, 8 LTO IR); u16 ?; u32 header_size; u64 payload_size;
      u32 compressed_size; u32 ?; u16 minor; u16 major; u32 arch (90, 120, ...);
      u32 name_offset; u32 name_length; u64 flags; u64 ?; u64 uncompressed_size

- Flags: 0x2000 LZ4, 0x8000 zstd, 0x100000 arch-specific ``a``, 0x200000 family-specific ``f``.

Everything reads through a :class:`ByteSource`, so the same walker serves an mmap'ed file and a
forward-only stream (a wheel member being decompressed).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

MAGIC = 0xBA55ED50
# magic, version 1, header size 16: the 8 bytes every container starts with.
MAGIC_BYTES = struct.pack("<I", MAGIC)
CONTAINER_PREFIX = struct.pack("<IHH", MAGIC, 1, 16)
CONTAINER_HEADER = struct.Struct("<IHHQ")
ENTRY_HEADER = struct.Struct("<HHIQIIHHIIIQQQ")  # 64 bytes

KIND_PTX = 1
KIND_ELF = 2
KIND_LTO = 8

FLAG_LZ4 = 0x2000
FLAG_ZSTD = 0x8000
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY_SPECIFIC = 0x200000

MIN_ENTRY_HEADER = ENTRY_HEADER.size
MAX_ENTRY_HEADER = 4096  # far above anything observed; a larger value means a corrupt header

EntryKind = Literal["sass", "ptx", "lto", "other"]


class ByteSource(Protocol):
    """Random (or forward-only) access to the bytes of one binary."""

    @property
    def size(self) -> int: ...

    def read_at(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes at ``offset`` (fewer at the end)."""
        ...

    def find(self, pattern: bytes, start: int, end: int) -> int:
        """Offset of the first ``pattern`` in [start, end), or -1."""
        ...


@dataclass(frozen=True)
class FatbinEntry:
    kind: EntryKind
    arch: str  # "sm_90a", "compute_120f", "lto_90", "kind7_90"
    offset: int  # of the entry header in the file
    compressed: bool


@dataclass
class Scan:
    """What walking one region found (mutable while walking, then read)."""

    containers: int = 0
    entries: list[FatbinEntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def entry_arch(kind: int, arch: int, flags: int) -> tuple[EntryKind, str]:
    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY_SPECIFIC else ""
    if kind == KIND_ELF:
        return "sass", f"sm_{arch}{suffix}"
    if kind == KIND_PTX:
        return "ptx", f"compute_{arch}{suffix}"
    if kind == KIND_LTO:
        return "lto", f"lto_{arch}{suffix}"
    return "other", f"kind{kind}_{arch}{suffix}"


def walk_container(
    src: ByteSource, offset: int, limit: int, scan: Scan, *, strict: bool = False
) -> int | None:
    """Walk the container at ``offset``; return its end, or None if it is no valid container.

    A container is valid when its header fits in ``limit`` and its first entry header is sane
    (``strict``: every entry header). Otherwise a bad later entry header stops the walk with a
    note, keeping the entries before it.
    """
    header = src.read_at(offset, CONTAINER_HEADER.size)
    if len(header) < CONTAINER_HEADER.size:
        return None
    magic, version, header_size, payload = CONTAINER_HEADER.unpack(header)
    end: int = offset + header_size + payload
    if magic != MAGIC or version != 1 or header_size != 16 or end > limit:
        return None
    if payload == 0:  # an empty container (nvcc writes one for a PTX-only device-link stub)
        scan.containers += 1
        return end
    if payload < MIN_ENTRY_HEADER:
        return None
    pos = offset + header_size
    found: list[FatbinEntry] = []
    while pos + MIN_ENTRY_HEADER <= end:
        raw = src.read_at(pos, MIN_ENTRY_HEADER)
        if len(raw) < MIN_ENTRY_HEADER:
            break
        fields = ENTRY_HEADER.unpack(raw)
        kind, hdr_size, size, compressed_size, arch, flags = (
            fields[0],
            fields[2],
            fields[3],
            fields[4],
            fields[8],
            fields[11],
        )
        sane = (
            0 < kind < 64
            and MIN_ENTRY_HEADER <= hdr_size <= MAX_ENTRY_HEADER
            and hdr_size % 8 == 0
            and pos + hdr_size + size <= end
            and 10 <= arch < 1000
        )
        if not sane:
            if strict or not found:
                return None
            scan.notes.append(
                f"corrupt fatbin entry header at 0x{pos:x}; rest of that container skipped"
            )
            break
        entry_kind, name = entry_arch(kind, arch, flags)
        compressed = bool(flags & (FLAG_LZ4 | FLAG_ZSTD)) or compressed_size != 0
        found.append(FatbinEntry(entry_kind, name, pos, compressed))
        pos += hdr_size + size
    if not found:
        return None
    scan.containers += 1
    scan.entries.extend(found)
    return end


def walk_region(
    src: ByteSource,
    start: int,
    end: int,
    scan: Scan,
    *,
    trusted: bool,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Find and walk every container in [start, end).

    ``trusted``: the region is a fatbin section, so anything there that is not a valid container
    earns a note. Otherwise (a scan of a whole PE file or stream) candidates that fail validation
    are silently skipped: the magic can occur by chance, e.g. in cudart's own code.
    Always makes progress, so it ends on any input.
    """
    # In a fatbin section any magic is a container (a bad one earns a note); elsewhere only the
    # full 8-byte prefix is worth a look.
    pattern = MAGIC_BYTES if trusted else CONTAINER_PREFIX
    pos = start
    while pos < end:
        hit = _find(src, pattern, pos, end, progress)
        if hit < 0:
            if trusted and _has_data(src, pos, end):
                scan.notes.append(
                    f"unrecognised data at 0x{pos:x}..0x{end:x} in the fatbin section skipped"
                )
            break
        if trusted and hit > pos and _has_data(src, pos, hit):
            scan.notes.append(f"unrecognised data at 0x{pos:x}..0x{hit:x} in the fatbin section")
        container_end = walk_container(src, hit, end, scan, strict=not trusted)
        if container_end is None:
            if trusted:
                scan.notes.append(f"corrupt fatbin container header at 0x{hit:x}; skipped")
            pos = hit + 1
        else:
            pos = container_end
        if progress is not None:
            progress(pos)


FIND_STEP = 64 << 20  # a search reports progress at least this often (a 1 GB DLL: 16 times)


def _find(
    src: ByteSource, pattern: bytes, start: int, end: int, progress: Callable[[int], None] | None
) -> int:
    """``src.find`` in steps, so that a long stretch without a container still moves the bar."""
    if progress is None:
        return src.find(pattern, start, end)
    pos = start
    while pos < end:
        stop = min(end, pos + FIND_STEP)
        hit = src.find(pattern, pos, min(end, stop + len(pattern) - 1))
        if hit >= 0:
            return hit
        pos = stop
        progress(pos)
    return -1


def _has_data(src: ByteSource, start: int, end: int) -> bool:
    """Whether [start, end) holds more than alignment padding (non-zero bytes)."""
    if end - start > 4096:
        return True
    return any(src.read_at(start, end - start))
