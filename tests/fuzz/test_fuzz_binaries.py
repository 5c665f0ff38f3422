"""Property tests over the binary readers (ELF, PE, fatbin containers, wheels): any bytes give a
report or one InputError line, never a traceback, and inspect --json keeps its envelope."""

from __future__ import annotations

import io
import struct
import tempfile
import zipfile
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from tests.binaries.pe import build_pe
from tests.fuzz.contract import check_inprocess, run_main
from torchsmith.binaries.fatbin import CONTAINER_PREFIX
from torchsmith.binaries.reader import read_binary, read_stream
from torchsmith.errors import InputError

REAL_ELF = Path("/bin/true").read_bytes()[:8192]  # a real ELF header and section table start


def fatbin(payload: bytes, size: int) -> bytes:
    return CONTAINER_PREFIX + struct.pack("<Q", size) + payload


@st.composite
def binaries(draw: st.DrawFn) -> bytes:
    payload = draw(st.binary(max_size=512))
    size = draw(st.one_of(st.integers(0, 2**64 - 1), st.just(len(payload))))
    kind = draw(st.sampled_from(["elf", "elf-mutated", "pe", "fatbin", "raw"]))
    if kind == "elf":
        return REAL_ELF[: draw(st.integers(0, len(REAL_ELF)))] + fatbin(payload, size)
    if kind == "elf-mutated":
        data = bytearray(REAL_ELF)
        for at, value in draw(st.lists(st.tuples(st.integers(0, 127), st.integers(0, 255)))):
            data[at] = value
        return bytes(data)
    if kind == "pe":
        return build_pe(fatbin(payload, size))
    if kind == "fatbin":
        return fatbin(payload, size) * draw(st.integers(1, 3))
    return payload


def _read(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lib.so"
        path.write_bytes(data)
        try:
            read_binary(path)
        except InputError as exc:
            assert "\n" not in exc.message  # noqa: PT017 (a property, not a raise check)
        try:
            read_stream("member.so", io.BytesIO(data), len(data))
        except InputError as exc:
            assert "\n" not in exc.message  # noqa: PT017 (a property, not a raise check)
        code, out, err = run_main("inspect", "--json", str(path))
        check_inprocess(code, err, out)


@given(binaries())
@example(b"")
@example(b"\x7fELF")
@example(b"MZ" + b"\x00" * 62)
@example(CONTAINER_PREFIX + struct.pack("<Q", 2**64 - 1))
def test_binary_readers(data: bytes) -> None:
    _read(data)


@given(
    st.lists(
        st.tuples(st.sampled_from(["a.so", "x/b.so", "c.dll", "d.txt"]), binaries()),
        max_size=3,
        unique_by=lambda member: member[0],
    )
)
def test_wheels(members: list[tuple[str, bytes]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wheel = Path(tmp) / "pkg-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            for name, data in members:
                archive.writestr(name, data)
        code, out, err = run_main("inspect", "--json", str(wheel))
        check_inprocess(code, err, out)


@given(st.binary(max_size=256))
def test_broken_zip(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wheel = Path(tmp) / "broken-1.0-py3-none-any.whl"
        wheel.write_bytes(b"PK\x03\x04" + data)
        code, out, err = run_main("inspect", "--json", str(wheel))
        check_inprocess(code, err, out)
