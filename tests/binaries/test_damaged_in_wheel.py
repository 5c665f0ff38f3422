"""A damaged binary inside a wheel is counted and shown as damaged, as it is in a directory.

A wheel member is read as a forward-only stream, so its section headers (at the end of an ELF
file) cannot be read; the ELF header alone must still tell a cut or malformed member from a
healthy binary without GPU code, with the words ``read_binary`` uses for the same bytes on disk.
A PE's headers come first, so they are checked whole.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from torchsmith.binaries.reader import NO_FATBIN, BinaryReport, read_binary
from torchsmith.binaries.targets import inspect_target
from torchsmith.cli import main
from torchsmith.errors import InputError

from .conftest import Built
from .pe import build_pe, fatbin_bytes

GARBAGE_ELF = b"\x7fELF\x02\x01\x01" + b"\xff" * 1000  # section headers at 0xffff...: past the end


@pytest.fixture
def members(built: Built) -> dict[str, bytes]:
    whole = built["libmix.so"].read_bytes()
    return {
        "pkg/good.so": whole,
        "pkg/lib.so": GARBAGE_ELF,
        "pkg/cut.so": whole[: len(whole) // 2],  # the section headers are in the cut half
        "pkg/stub.so": b"\x7fELF\x02\x01",  # the ELF header itself cut short
    }


def make_wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(
            "x-1.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-any\n",
        )
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def file_verdict(tmp_path: Path, name: str, data: bytes) -> str:
    """What ``read_binary`` says of the same bytes as a file: the damage, without the path."""
    path = tmp_path / Path(name).name
    path.write_bytes(data)
    with pytest.raises(InputError) as caught:
        read_binary(path)
    return caught.value.message.removeprefix(f"{path}: ")


def test_damaged_members_are_counted_and_the_rest_is_read(
    built: Built, members: dict[str, bytes], tmp_path: Path
) -> None:
    report = inspect_target(str(make_wheel(tmp_path / "x-1-py3-none-any.whl", members)))
    names = ("pkg/cut.so", "pkg/lib.so", "pkg/stub.so")
    damaged = {name: file_verdict(tmp_path, name, members[name]) for name in names}
    assert sorted(report.damaged) == [f"{name} ({why})" for name, why in damaged.items()]
    assert report.notes == (f"3 files are damaged: {', '.join(report.damaged)}",)
    assert damaged["pkg/lib.so"].startswith("truncated ELF (section headers end past")
    assert damaged["pkg/stub.so"] == "truncated or malformed ELF header"
    by_path = {b.path: b for b in report.binaries}
    for name, why in damaged.items():
        assert (by_path[name].error, by_path[name].notes) == (why, (why,))
        assert NO_FATBIN not in by_path[name].notes  # not passed off as a healthy binary
    good = by_path["pkg/good.so"]
    assert good.error is None
    direct = read_binary(built["libmix.so"])
    assert (good.sass_counts, good.ptx_counts) == (direct.sass_counts, direct.ptx_counts)
    assert (report.files_read, report.files_with_gpu_code) == (1, 1)


def test_cli_shows_the_damage_and_exits_as_for_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = make_wheel(tmp_path / "w.whl", {"pkg/lib.so": GARBAGE_ELF})
    # Damaged members are a finding of the inspection, not a failure of it: exit 0 with the
    # count, as inspect DIR does (tests/binaries/test_problems.py); 3 is for a bad TARGET itself.
    assert main(["inspect", str(wheel), "--all"]) == 0
    out = capsys.readouterr().out
    assert "1 file is damaged: pkg/lib.so (truncated ELF" in " ".join(out.split())
    assert NO_FATBIN not in out
    assert main(["inspect", str(wheel), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert [d.split(" (")[0] for d in data["damaged"]] == ["pkg/lib.so"]
    assert data["binaries"][0]["error"].startswith("truncated ELF (section headers end past")
    assert data["files_read"] == 0


def test_damaged_pe_members_are_counted_as_on_disk(built: Built, tmp_path: Path) -> None:
    """A PE's headers and section table come first, so a stream checks them as a file would:
    a cut image, an MZ stub without a PE signature, and a section table pointing past the member
    are damaged, with the words ``read_binary`` uses; a whole image reads its GPU code."""
    whole = build_pe(fatbin_bytes(built["libmix.so"]))
    far = bytearray(whole[:0x40])
    far[0x3C:0x40] = (1 << 31).to_bytes(4, "little")  # e_lfanew past the end
    members = {
        "pkg/good.dll": whole,
        "pkg/cut.dll": whole[:2000],
        "pkg/stub.pyd": b"MZ" + b"\0" * 200,
        "pkg/far.dll": bytes(far),
    }
    report = inspect_target(str(make_wheel(tmp_path / "x-1-py3-none-win_amd64.whl", members)))
    names = ("pkg/cut.dll", "pkg/far.dll", "pkg/stub.pyd")
    damaged = {name: file_verdict(tmp_path, name, members[name]) for name in names}
    assert sorted(report.damaged) == [f"{name} ({why})" for name, why in damaged.items()]
    assert damaged["pkg/cut.dll"].startswith("truncated PE (section")
    assert damaged["pkg/far.dll"].startswith("not a PE binary")
    good = {b.path: b for b in report.binaries}["pkg/good.dll"]
    direct = read_binary_bytes(tmp_path / "good.dll", whole)
    assert good.error is None
    assert (good.sass_counts, good.ptx_counts) == (direct.sass_counts, direct.ptx_counts)
    assert good.sass_counts


def read_binary_bytes(path: Path, data: bytes) -> BinaryReport:
    path.write_bytes(data)
    return read_binary(path)
