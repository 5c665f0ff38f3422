"""Read the GPU code inventory of one binary: a file on disk (mmap) or a stream (zip member)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from torchsmith.binaries.archs import RunsOn, sort_key
from torchsmith.binaries.fatbin import ByteSource, FatbinEntry, Scan, walk_region
from torchsmith.binaries.formats import (
    EM_CUDA,
    PE_HEADERS_MAX,
    Layout,
    NotABinaryError,
    Region,
    UnreadableFileError,
    elf_header,
    layout,
    pe_headers,
    section_of,
    sniff,
)
from torchsmith.binaries.offload import OffloadScan, scan_offload
from torchsmith.binaries.sources import MappedFile, StreamSource

NO_FATBIN = "no CUDA fat binary found"
DEVICE_FILE_NOTES = {
    "cubin": "a standalone cubin (an ELF file of SASS for one GPU architecture)",
    "ptx": "a PTX file (the driver JIT-compiles it for GPUs of its .target and newer)",
}

Progress = Callable[[int], None]  # called with bytes done (absolute, within the current file)


@dataclass(frozen=True)
class BinaryReport:
    """The GPU code inside one binary; counts are entries (cubins, PTX files) as cuobjdump lists."""

    path: str
    format: str  # "elf", "pe", "fatbin", "ar"
    size_bytes: int
    fatbin_found: bool
    containers: int = 0
    sass: tuple[str, ...] = ()  # distinct, sorted by arch number
    ptx: tuple[str, ...] = ()
    sass_counts: dict[str, int] = field(default_factory=dict)
    ptx_counts: dict[str, int] = field(default_factory=dict)
    lto_counts: dict[str, int] = field(default_factory=dict)  # LTO IR (-dlto), JIT-linked
    compressed_entries: int = 0
    fatbin_sections: tuple[str, ...] = ()  # where containers were found
    notes: tuple[str, ...] = ()
    error: str | None = None  # why it could not be read (inside a directory or wheel)
    runs_on: RunsOn | None = None  # filled in when a GPU is asked about
    gfx_counts: dict[str, int] = field(default_factory=dict)  # AMD code objects: "gfx90a:xnack-"
    offload_bundles: int = 0  # clang offload bundles (HIP fat binaries) read
    offload_sections: tuple[str, ...] = ()
    # compressed bundles whose targets could not be read (zstd before Python 3.14): AMD code of
    # unknown gfx, so neither "no GPU code" nor "no code for this GPU" may be said
    offload_unlisted: int = 0

    @property
    def gfx(self) -> tuple[str, ...]:
        """Distinct AMD targets without their features: ("gfx90a", "gfx1100")."""
        return tuple(dict.fromkeys(t.split(":")[0] for t in self.gfx_counts))

    @property
    def has_gpu_code(self) -> bool:
        return bool(
            self.sass or self.ptx or self.lto_counts or self.gfx_counts or self.offload_unlisted
        )


def _sorted_counts(counter: Counter[str]) -> dict[str, int]:
    return {k: counter[k] for k in sorted(counter, key=sort_key)}


def summarize(
    path: str, *, fmt: str, size: int, scan: Scan, where: tuple[str, ...], notes: list[str]
) -> BinaryReport:
    sass: Counter[str] = Counter()
    ptx: Counter[str] = Counter()
    lto: Counter[str] = Counter()
    compressed = 0
    for entry in scan.entries:
        if entry.kind == "sass":
            sass[entry.arch] += 1
        elif entry.kind == "ptx":
            ptx[entry.arch] += 1
        elif entry.kind == "lto":
            lto[entry.arch] += 1
        else:
            notes.append(f"fatbin entry of unknown kind {entry.arch} at 0x{entry.offset:x}")
        compressed += entry.compressed
    found = scan.containers > 0
    if not found and fmt not in DEVICE_FILE_NOTES:
        notes.insert(0, NO_FATBIN)
    return BinaryReport(
        path=path,
        format=fmt,
        size_bytes=size,
        fatbin_found=found,
        containers=scan.containers,
        sass=tuple(sorted(sass, key=sort_key)),
        ptx=tuple(sorted(ptx, key=sort_key)),
        sass_counts=_sorted_counts(sass),
        ptx_counts=_sorted_counts(ptx),
        lto_counts=_sorted_counts(lto),
        compressed_entries=compressed,
        fatbin_sections=where if found else (),
        notes=tuple(dict.fromkeys(notes + scan.notes)),
    )


def read_binary(
    path: Path, *, display: str | None = None, progress: Progress | None = None
) -> BinaryReport:
    """Read one binary file; raises BinaryFormatError (an InputError) if it is not one."""
    shown = display or str(path)
    try:
        source = MappedFile(str(path))
    except FileNotFoundError:
        raise UnreadableFileError(f"{shown}: no such file") from None
    except IsADirectoryError:
        raise UnreadableFileError(f"{shown}: is a directory") from None
    except OSError as exc:
        raise UnreadableFileError(f"{shown}: cannot be read: {exc.strerror or exc}") from None
    with source:
        if source.size == 0:
            raise NotABinaryError(f"{shown}: not a binary (an empty file)")
        return _read_laid_out(source, shown, progress)


def _read_laid_out(source: ByteSource, shown: str, progress: Progress | None) -> BinaryReport:
    """Read a source through :func:`layout`: every format, where section headers may be read."""
    found = layout(source, shown)
    scan = Scan()
    if found.device_code is not None:
        kind, arch = found.device_code
        scan.entries.append(FatbinEntry(kind, arch, 0, compressed=False))
    for region in found.regions:
        walk_region(
            source, region.start, region.end, scan, trusted=region.trusted, progress=progress
        )
    report = summarize(
        shown,
        fmt=found.format,
        size=source.size,
        scan=scan,
        where=_where(found, scan),
        notes=_notes(found),
    )
    offload_regions = found.offload if found.offload is not None else found.regions
    if found.offload is None and found.format in ("pe", "ar"):
        offload_regions = (Region("(whole file)", 0, source.size, trusted=False),)
    return with_offload(report, source, offload_regions)


def with_offload(
    report: BinaryReport, source: ByteSource, regions: tuple[Region, ...]
) -> BinaryReport:
    """The report with the AMD code objects of the offload bundles in ``regions``."""
    off = OffloadScan()
    for region in regions:
        scan_offload(source, region.start, region.end, off)
    if not off.bundles and not off.compressed:
        return report
    counts = Counter(e.target for e in off.entries if e.gfx is not None and e.size > 0)
    notes = [n for n in report.notes if not (n == NO_FATBIN and report.format == "offload")]
    if report.format == "offload" or (not report.fatbin_found and (counts or off.unlisted)):
        notes = [n for n in notes if n != NO_FATBIN]
    return replace(
        report,
        gfx_counts={k: counts[k] for k in sorted(counts, key=_gfx_key)},
        offload_bundles=off.bundles,
        offload_unlisted=off.unlisted,
        offload_sections=tuple(dict.fromkeys(r.name for r in regions)),
        notes=tuple(dict.fromkeys(notes + off.notes)),
    )


def _gfx_key(target: str) -> tuple[int, str]:
    gfx = target.split(":", maxsplit=1)[0].removeprefix("gfx")
    try:
        return (int(gfx[:-1]) * 16 + int(gfx[-1], 16), target)
    except ValueError:
        return (1 << 30, target)


def read_stream(
    display: str, stream: IO[bytes], size: int, *, progress: Progress | None = None
) -> BinaryReport:
    """Read a binary from a forward-only stream (a wheel member) by scanning for containers.

    Section headers sit at the end of an ELF file, so a stream cannot use them; every candidate
    container is validated instead, which gives the same result as the section walk on real
    binaries (tests compare the two). An ELF header that is cut short or points past the member
    raises BinaryFormatError, as :func:`read_binary` does, so the wheel counts it as damaged;
    so does a PE whose headers or sections are cut or point past the member.
    """
    source = StreamSource(stream, size)
    head = source.read_at(0, 64)
    fmt = sniff(head)
    # A cubin, a PTX file or a raw offload bundle is read from its start, as on disk; only an
    # ELF's section headers (at its end) are out of a stream's reach.
    if fmt in (None, "offload"):
        return _read_laid_out(source, display, progress)
    if fmt == "elf":  # a cut or malformed header is damage, as for a file on disk
        if elf_header(head, size, display).machine == EM_CUDA:
            return _read_laid_out(source, display, progress)
    elif fmt == "pe":  # its headers come first, so a stream reads them as a file would
        pe_headers(source.read_at(0, min(size, PE_HEADERS_MAX)), size, display)
    scan = Scan()
    walk_region(source, 0, size, scan, trusted=fmt == "fatbin", progress=progress)
    where = ("(scan)",) if scan.containers else ()
    return summarize(display, fmt=fmt, size=size, scan=scan, where=where, notes=[])


def _where(found: Layout, scan: Scan) -> tuple[str, ...]:
    if found.format == "pe":
        names = {section_of(e.offset, found.sections) or "(outside sections)" for e in scan.entries}
        return tuple(sorted(names))
    trusted = tuple(r.name for r in found.regions if r.trusted)
    return trusted or ("(scan)",)


def _notes(found: Layout) -> list[str]:
    if found.format in DEVICE_FILE_NOTES:
        return [DEVICE_FILE_NOTES[found.format]]
    return [found.note] if found.note else []
