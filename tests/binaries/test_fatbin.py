"""The fatbin reader on real nvcc 13.0 output, checked entry for entry against cuobjdump."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from torchsmith.binaries.cuobjdump import comparable, parse_listing, run_listing
from torchsmith.binaries.fatbin import CONTAINER_PREFIX, Scan, walk_region
from torchsmith.binaries.formats import BinaryFormatError, layout
from torchsmith.binaries.reader import NO_FATBIN, BinaryReport, read_binary, read_stream
from torchsmith.binaries.sources import MappedFile, StreamSource

from .conftest import BUILDS, Built
from .pe import build_pe, fatbin_bytes

FIXTURES = Path(__file__).parent / "fixtures"

# What each build must hold, as torchsmith names it (f and a kept).
EXPECTED: dict[str, tuple[dict[str, int], dict[str, int]]] = {
    "libmix.so": ({"sm_75": 2, "sm_90a": 2, "sm_100f": 2, "sm_120a": 2}, {"compute_120f": 1}),
    "libptx.so": ({}, {"compute_80": 1, "compute_90a": 1}),
    "libzstd.so": ({"sm_86": 2}, {"compute_86": 1}),
    "liblz4.so": ({"sm_89": 2}, {"compute_89": 1}),
    "libuncompressed.so": ({"sm_90": 2}, {"compute_90": 1}),
    "app": ({"sm_80": 2}, {}),
    "rdc.o": ({"sm_120": 1}, {"compute_120": 1}),
}


def section_offset(path: Path) -> int:
    with MappedFile(str(path)) as src:
        return layout(src, str(path)).regions[0].start


def counts(report: BinaryReport) -> tuple[dict[str, int], dict[str, int]]:
    return report.sass_counts, report.ptx_counts


@pytest.mark.parametrize("name", list(BUILDS))
def test_counts_equal_cuobjdump(built: Built, cuobjdump: str, name: str) -> None:
    report = read_binary(built[name])
    assert counts(report) == EXPECTED[name]
    listing, _seconds = run_listing(cuobjdump, built[name], timeout=120)
    assert comparable(report.sass_counts, report.ptx_counts) == listing
    assert report.fatbin_found
    assert report.notes == ()


def test_variants_and_compression(built: Built) -> None:
    mix = read_binary(built["libmix.so"])
    assert mix.sass == ("sm_75", "sm_90a", "sm_100f", "sm_120a")
    assert mix.ptx == ("compute_120f",)
    assert mix.containers == 2  # kernel + device-link stub
    assert mix.fatbin_sections == (".nv_fatbin",)
    assert read_binary(built["libzstd.so"]).compressed_entries == 3  # -compress-all: every entry
    assert read_binary(built["liblz4.so"]).compressed_entries == 1  # PTX only
    assert read_binary(built["libuncompressed.so"]).compressed_entries == 0
    assert read_binary(built["libptx.so"]).compressed_entries == 2  # default: PTX zstd
    rdc = read_binary(built["rdc.o"])
    assert rdc.fatbin_sections == ("__nv_relfatbin",)


def test_cpu_library_has_no_fatbin(built: Built) -> None:
    report = read_binary(built.cpu_lib)
    assert not report.fatbin_found
    assert report.notes == (NO_FATBIN,)
    assert (report.sass, report.ptx, report.containers) == ((), (), 0)


@pytest.mark.parametrize("name", ["libmix.so", "libzstd.so", "app", "rdc.o"])
@pytest.mark.parametrize("chunk", [4096, 1 << 20])
def test_stream_scan_matches_section_walk(built: Built, name: str, chunk: int) -> None:
    """Wheels are read as streams (no section headers): the scan must find exactly the same."""
    path = built[name]
    expected = read_binary(path)
    with path.open("rb") as fh:
        scan = Scan()
        walk_region(
            StreamSource(fh, path.stat().st_size, chunk),
            0,
            path.stat().st_size,
            scan,
            trusted=False,
        )
    assert scan.containers == expected.containers
    with path.open("rb") as fh:
        streamed = read_stream(name, fh, path.stat().st_size)
    assert counts(streamed) == counts(expected)


def test_elf_without_section_headers_is_scanned(built: Built, tmp_path: Path) -> None:
    data = bytearray(built["libmix.so"].read_bytes())
    struct.pack_into("<Q", data, 0x28, 0)  # e_shoff = 0: as if stripped of section headers
    target = tmp_path / "noshdr.so"
    target.write_bytes(bytes(data))
    report = read_binary(target)
    assert counts(report) == EXPECTED["libmix.so"]
    assert "no ELF section headers" in report.notes[0]


def test_raw_fatbin_file(built: Built, tmp_path: Path) -> None:
    target = tmp_path / "kernels.fatbin"
    target.write_bytes(fatbin_bytes(built["libmix.so"]))
    report = read_binary(target)
    assert report.format == "fatbin"
    assert counts(report) == EXPECTED["libmix.so"]


def test_synthetic_pe_dll(built: Built, tmp_path: Path, cuobjdump: str) -> None:
    """A minimal PE32+ with a real fatbin in .nv_fatb and decoy magics in .text."""
    target = tmp_path / "kernels.dll"
    target.write_bytes(build_pe(fatbin_bytes(built["libmix.so"])))
    report = read_binary(target)
    assert report.format == "pe"
    assert counts(report) == EXPECTED["libmix.so"]
    assert report.fatbin_sections == (".nv_fatb",)
    assert report.notes == ()  # the decoys are rejected silently
    pyd = tmp_path / "ext.cp311-win_amd64.pyd"
    pyd.write_bytes(build_pe(fatbin_bytes(built["libptx.so"])))
    assert counts(read_binary(pyd)) == EXPECTED["libptx.so"]


def test_recorded_cuobjdump_of_torch_211() -> None:
    """cuobjdump --list-elf of torch 2.11's libtorch_cuda.so, recorded on an H200 machine."""
    listing = parse_listing((FIXTURES / "cuobjdump_libtorch_cuda_2.11_h200.txt").read_text())
    assert listing.sass == {
        "sm_75": 444,
        "sm_80": 444,
        "sm_86": 444,
        "sm_90": 444,
        "sm_100": 444,
        "sm_120": 444,
        "sm_100a": 59,
        "sm_103a": 59,
        "sm_90a": 4,
        "sm_89": 1,
        "sm_120a": 1,
        "sm_121a": 1,
    }
    assert listing.ptx == {}
    assert sum(listing.sass.values()) == 2789


def test_parse_listing_ptx_and_merge() -> None:
    text = (
        "ELF file    1: libk.1.sm_90.cubin\n"
        "ELF file    2: libk.2.sm_100.cubin\n"
        "PTX file    1: libk.1.sm_120f.ptx\n"
        "PTX file    2: libk.2.sm_90a.ptx\n"
        "cuobjdump info    : File 'x' does not contain device code\n"
    )
    listing = parse_listing(text)
    assert listing.sass == {"sm_90": 1, "sm_100": 1}
    assert listing.ptx == {"compute_120f": 1, "compute_90a": 1}
    assert comparable({"sm_90": 1, "sm_100f": 1}, listing.ptx) == listing


# -- damaged input: never crash, never loop ---------------------------------------------------


def damaged(built: Built, tmp_path: Path, offset_in_section: int, patch: bytes) -> Path:
    source = built["libmix.so"]
    data = bytearray(source.read_bytes())
    at = section_offset(source) + offset_in_section
    data[at : at + len(patch)] = patch
    target = tmp_path / "damaged.so"
    target.write_bytes(bytes(data))
    return target


def test_corrupt_container_header_is_skipped_with_note(built: Built, tmp_path: Path) -> None:
    target = damaged(built, tmp_path, 4, struct.pack("<H", 7))  # version 7
    report = read_binary(target)
    assert any("corrupt fatbin container header" in n for n in report.notes)
    assert report.containers == 1  # the second container is still read
    assert report.sass_counts == {"sm_75": 1, "sm_90a": 1, "sm_100f": 1, "sm_120a": 1}


def test_corrupt_magic_is_reported(built: Built, tmp_path: Path) -> None:
    report = read_binary(damaged(built, tmp_path, 0, b"\0\0\0\0"))
    assert any("unrecognised data" in n for n in report.notes)
    assert report.containers == 1


def test_huge_payload_size_is_rejected(built: Built, tmp_path: Path) -> None:
    report = read_binary(damaged(built, tmp_path, 8, struct.pack("<Q", 1 << 62)))
    assert any("corrupt fatbin container header" in n for n in report.notes)


def test_corrupt_entry_header_keeps_earlier_entries(built: Built, tmp_path: Path) -> None:
    data = fatbin_bytes(built["libmix.so"])
    (first_payload,) = struct.unpack_from("<Q", data, 8)
    second = 16 + first_payload  # offset of the 2nd container; its 2nd entry follows the 1st
    (hdr,) = struct.unpack_from("<I", data, second + 16 + 4)
    (size,) = struct.unpack_from("<Q", data, second + 16 + 8)
    second_entry = second + 16 + hdr + size
    report = read_binary(damaged(built, tmp_path, second_entry + 4, struct.pack("<I", 3)))
    assert any("corrupt fatbin entry header" in n for n in report.notes)
    assert report.containers == 2
    assert sum(report.sass_counts.values()) + sum(report.ptx_counts.values()) == 5


def test_random_damage_never_crashes(built: Built, tmp_path: Path) -> None:
    source = built["libmix.so"]
    original = source.read_bytes()
    start = section_offset(source)
    length = len(fatbin_bytes(source))
    rng = random.Random(1234)
    target = tmp_path / "fuzz.so"
    for _ in range(150):
        data = bytearray(original)
        for _ in range(rng.randint(1, 8)):
            at = start + rng.randrange(length)
            data[at] = rng.randrange(256)
        if rng.random() < 0.3:  # plant a stray prefix somewhere
            at = start + rng.randrange(length - 8)
            data[at : at + 8] = CONTAINER_PREFIX
        target.write_bytes(bytes(data))
        report = read_binary(target)
        assert report.containers <= 3
        with target.open("rb") as fh:
            read_stream("fuzz", fh, len(data))


# -- not a binary -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"hello world\nthis is text\n", r"not an ELF or PE binary \(a text file\)"),
        (bytes(random.Random(7).randrange(256) for _ in range(4096)), "not an ELF or PE binary"),
        (b"\x7fELF\x02\x01", "truncated or malformed ELF header"),
        (b"MZ" + b"\0" * 100, "not a PE binary"),
    ],
)
def test_garbage_is_an_input_error(tmp_path: Path, content: bytes, message: str) -> None:
    target = tmp_path / "junk.so"
    target.write_bytes(content)
    with pytest.raises(BinaryFormatError, match=message):
        read_binary(target)


def test_truncated_elf(built: Built, tmp_path: Path) -> None:
    data = built["libmix.so"].read_bytes()
    target = tmp_path / "truncated.so"
    target.write_bytes(data[: len(data) // 2])
    with pytest.raises(BinaryFormatError, match="truncated ELF"):
        read_binary(target)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BinaryFormatError, match="no such file"):
        read_binary(tmp_path / "nope.so")


def test_truncated_pe_is_damaged(built: Built, tmp_path: Path) -> None:
    data = build_pe(fatbin_bytes(built["libmix.so"]))
    target = tmp_path / "cut.dll"
    target.write_bytes(data[:2000])
    with pytest.raises(BinaryFormatError, match="truncated PE"):
        read_binary(target)
    whole = tmp_path / "whole.dll"
    whole.write_bytes(data)
    assert read_binary(whole).sass  # the untruncated image still reads
