"""The ELF dynamic-section and PE import readers, on real binaries."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from torchsmith.binaries.formats import BinaryFormatError, read_elf_dynamic, read_pe_imports
from torchsmith.binaries.sources import MappedFile

FIXTURES = Path(__file__).parent / "fixtures"
DLL = FIXTURES / "cudart64_12.dll"


def _objdump_dlls(path: Path) -> list[str] | None:
    objdump = shutil.which("objdump")
    if objdump is None:
        return None
    out = subprocess.run([objdump, "-p", str(path)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return None
    return [
        line.split(":", 1)[1].strip() for line in out.stdout.splitlines() if "DLL Name:" in line
    ]


def test_pe_imports_of_a_real_windows_dll() -> None:
    with MappedFile(str(DLL)) as src:
        imports = read_pe_imports(src, str(DLL))
    assert imports.machine == 0x8664
    assert "api-ms-win-core-libraryloader-l1-2-0.dll" in imports.dlls
    assert len(imports.dlls) == 18
    assert imports.delayed == ()
    expected = _objdump_dlls(DLL)
    if expected is not None:
        assert list(imports.dlls) == expected


def test_pe_reader_refuses_elf_and_truncation(tmp_path: Path) -> None:
    with MappedFile(sys.executable) as src, pytest.raises(BinaryFormatError, match="not a PE"):
        read_pe_imports(src, sys.executable)
    cut = tmp_path / "cut.dll"
    cut.write_bytes(DLL.read_bytes()[:300])
    with MappedFile(str(cut)) as src, pytest.raises(BinaryFormatError):
        read_pe_imports(src, str(cut))


def _readelf_needed(path: Path) -> tuple[list[str], list[str]] | None:
    readelf = shutil.which("readelf")
    if readelf is None:
        return None
    out = subprocess.run([readelf, "-d", str(path)], capture_output=True, text=True, check=False)
    needed = [ln.split("[", 1)[1].rstrip("]") for ln in out.stdout.splitlines() if "(NEEDED)" in ln]
    runpath = [
        p
        for ln in out.stdout.splitlines()
        if "(RUNPATH)" in ln or "(RPATH)" in ln
        for p in ln.split("[", 1)[1].rstrip("]").split(":")
    ]
    return needed, runpath


@pytest.mark.parametrize(
    "path", [Path(sys.executable).resolve(), Path(shutil.which("ls") or "/bin/ls")]
)
def test_elf_dynamic_matches_readelf(path: Path) -> None:
    with MappedFile(str(path)) as src:
        dyn = read_elf_dynamic(src, str(path))
    expected = _readelf_needed(path)
    if expected is None:
        pytest.skip("no readelf")
    assert list(dyn.needed) == expected[0]
    assert [*dyn.rpath, *dyn.runpath] == expected[1]
    assert dyn.elf_class == 2


def test_elf_32bit_and_static(tmp_path: Path) -> None:
    # A minimal 32-bit little-endian ELF with no program headers: needs nothing.
    head = bytearray(52)
    head[:4] = b"\x7fELF"
    head[4], head[5] = 1, 1
    struct.pack_into("<H", head, 0x12, 3)
    f = tmp_path / "static32"
    f.write_bytes(bytes(head))
    with MappedFile(str(f)) as src:
        dyn = read_elf_dynamic(src, str(f))
    assert dyn.needed == ()
    assert dyn.elf_class == 1
    assert dyn.machine == 3
