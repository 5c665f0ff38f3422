"""AMD GPU code in ROCm binaries: clang offload bundles, the HIP fat binary format.

hipcc puts one bundle per translation unit into the ELF section ``.hip_fatbin``. A bundle is

    "__CLANG_OFFLOAD_BUNDLE__"                      24 bytes
    u64 number of entries                            little-endian, like every field
    per entry: u64 offset (from the bundle start), u64 size, u64 id length, id bytes

with entry ids such as ``host-x86_64-unknown-linux-gnu-`` (empty) and
``hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`` (a code object for gfx90a, XNACK off); older
toolchains wrote ``hip-amdgcn-amd-amdhsa-gfx906``. Newer ones may compress a bundle: ``CCOB``,
u16 version, u16 method, sizes and a hash, then the zlib or zstd stream of a plain bundle.
(clang/lib/Driver/OffloadBundler.cpp in LLVM describes both.)
"""

from __future__ import annotations

import importlib.util
import re
import struct
import zlib
from dataclasses import dataclass, field

from torchsmith.binaries.fatbin import ByteSource

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_MAGIC = b"CCOB"
HIP_SECTIONS = (".hip_fatbin", ".hipFatBinSegment")
MAX_ENTRIES = 4096
_ID = re.compile(
    r"^(?P<kind>[a-z0-9]+)-(?P<triple>[a-z0-9_]+-[a-z0-9_]*-[a-z0-9_]*)(?:-(?P<rest>.*))?$"
)
_GFX = re.compile(r"(gfx[0-9]{2,3}[0-9a-f](?:-generic)?)((?::[a-z]+[+-])*)$")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class OffloadEntry:
    kind: str  # "hipv4", "hip", "openmp", "host"
    triple: str  # "amdgcn-amd-amdhsa"
    target: str  # "gfx90a:xnack-" (features kept), "" for the host entry
    size: int
    offset: int  # of the entry in the file

    @property
    def gfx(self) -> str | None:
        m = _GFX.search(self.target)
        return m[1] if m else None


@dataclass
class OffloadScan:
    bundles: int = 0
    compressed: int = 0  # CCOB bundles seen
    unlisted: int = 0  # CCOB bundles whose targets could not be read: AMD code of unknown gfx
    entries: list[OffloadEntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def parse_bundle(data: bytes, base: int = 0) -> list[OffloadEntry] | None:
    """The entries of one uncompressed bundle at the start of ``data``; None if malformed."""
    if not data.startswith(BUNDLE_MAGIC) or len(data) < 32:
        return None
    (count,) = struct.unpack_from("<Q", data, 24)
    if not 0 < count <= MAX_ENTRIES:
        return None
    pos, out = 32, []
    for _ in range(count):
        if pos + 24 > len(data):
            return None
        offset, size, id_len = struct.unpack_from("<QQQ", data, pos)
        pos += 24
        if id_len > 1024 or pos + id_len > len(data):
            return None
        ident = data[pos : pos + id_len].decode("ascii", "replace")
        pos += id_len
        m = _ID.match(ident)
        if m is None:
            return None
        target = (m["rest"] or "").removeprefix("-")
        out.append(OffloadEntry(m["kind"], m["triple"], target, size, base + offset))
    return out


def _decompress(data: bytes) -> bytes | None:
    """A CCOB bundle's payload (zlib; zstd where this Python has it), or None."""
    if len(data) < 8:
        return None
    version, method = struct.unpack_from("<HH", data, 4)
    header = {1: 4 + 2 + 2 + 4 + 8, 2: 4 + 2 + 2 + 4 + 4 + 8, 3: 4 + 2 + 2 + 8 + 8 + 8}.get(version)
    if header is None:
        return None
    payload = data[header:]
    if method == 0:  # llvm::compression::Format::Zlib
        try:
            return zlib.decompress(payload)
        except zlib.error:
            return None
    try:
        from compression import zstd  # type: ignore[import-not-found]  # noqa: PLC0415
    except ImportError:  # Python < 3.14: counted, not listed
        return None
    try:
        return bytes(zstd.decompress(payload))
    except zstd.ZstdError:
        return None


def _has_zstd() -> bool:
    """Whether this Python reads zstd (3.14's compression.zstd), without importing it."""
    try:
        return importlib.util.find_spec("compression.zstd") is not None
    except ModuleNotFoundError:  # no "compression" package at all
        return False


def scan_offload(src: ByteSource, start: int, end: int, scan: OffloadScan) -> None:
    """Find and parse every offload bundle (plain or compressed) in [start, end)."""
    for magic in (BUNDLE_MAGIC, COMPRESSED_MAGIC):
        pos = start
        while pos < end:
            hit = src.find(magic, pos, end)
            if hit < 0:
                break
            pos = hit + len(magic)
            if magic == BUNDLE_MAGIC:
                head = src.read_at(hit, min(end - hit, 32 + MAX_ENTRIES * 64))
                entries = parse_bundle(head, hit)
                if entries is None:
                    continue
                scan.bundles += 1
                scan.entries.extend(entries)
            else:
                _compressed(src, hit, end, scan)


def _compressed(src: ByteSource, hit: int, end: int, scan: OffloadScan) -> None:
    head = src.read_at(hit, 32)
    if len(head) < 16:
        return
    version, method = struct.unpack_from("<HH", head, 4)
    if version not in (1, 2, 3) or method not in (0, 1):
        return
    if version == 1:
        total = end - hit
    elif version == 2:
        (total,) = struct.unpack_from("<I", head, 8)
    else:
        (total,) = struct.unpack_from("<Q", head, 8)
    if not 16 < total <= end - hit:
        return
    scan.compressed += 1
    plain = _decompress(src.read_at(hit, total))
    entries = parse_bundle(plain) if plain else None
    if entries is None:
        scan.unlisted += 1
        if method == 1 and not _has_zstd():
            scan.notes.append(
                "zstd-compressed offload bundles not listed: reading them needs Python 3.14+ "
                "(compression.zstd)"
            )
        else:
            scan.notes.append(f"compressed offload bundle at 0x{hit:x} could not be listed")
        return
    scan.bundles += 1
    scan.entries.extend(OffloadEntry(e.kind, e.triple, e.target, e.size, hit) for e in entries)
