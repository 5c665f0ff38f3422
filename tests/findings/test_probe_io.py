"""Probe files: round trip, and one clear error for every kind of garbage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.findings.test_findings import H200_MACHINE
from torchsmith import envelope
from torchsmith.errors import ProbeFileError
from torchsmith.probe.io import load_probe, parse_probe


def test_round_trip_through_the_envelope(tmp_path: Path) -> None:
    file = tmp_path / "probe.json"
    file.write_text(envelope.dumps(envelope.wrap("doctor", H200_MACHINE)))
    assert load_probe(file) == H200_MACHINE


def test_bare_data_object_is_accepted() -> None:
    data = envelope.wrap("doctor", H200_MACHINE)["data"]
    assert parse_probe(json.dumps(data)) == H200_MACHINE


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b"  \n", "is empty"),
        (b"\x00\x01\x02\xff\xfe binary", "is not JSON"),
        (b"[1, 2, 3]", "not a JSON object"),
        (b'{"schema": "torchsmith/plan", "schema_version": 1, "ok": true}', "not a probe"),
        (b'{"schema": "torchsmith/doctor", "schema_version": 99, "ok": true}', "schema 99"),
        (b'{"schema": "torchsmith/doctor", "ok": false}', "failed doctor run"),
        (b'{"host": 5}', "host: expected an object"),
        (b'{"gpus": []}', "host: missing"),
        (
            b'{"host": {"os": "linux", "os_pretty": "x"}, '
            b'"gpus": [{"index": "zero", "name": "x"}]}',
            r"gpus\[0\].index",
        ),
        (b'{"host": {"os": "beos", "os_pretty": "x"}}', "host.os"),
    ],
)
def test_garbage_gives_one_line(tmp_path: Path, content: bytes, message: str) -> None:
    file = tmp_path / "probe.json"
    file.write_bytes(content)
    with pytest.raises(ProbeFileError, match=message) as info:
        load_probe(file)
    assert "\n" not in info.value.message


def test_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ProbeFileError, match="no such file"):
        load_probe(tmp_path / "nope.json")
    with pytest.raises(ProbeFileError, match="is a directory"):
        load_probe(tmp_path)
