"""`kb refresh` diff logic on a recorded PyPI JSON (https://pypi.org/pypi/torch/json, 2026-11-21,
trimmed to releases >= 2.12 and the fields the diff reads)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchsmith.cli import main
from torchsmith.errors import ToolError
from torchsmith.knowledge import load_knowledge
from torchsmith.knowledge.base import Knowledge
from torchsmith.knowledge.loader import data_texts, parse
from torchsmith.knowledge.refresh import (
    diff,
    fetch,
    index_variants,
    parse_pypi_json,
    releases_from_pypi,
    toml_for,
)
from torchsmith.util.toml import loads_toml

PYPI = Path(__file__).parent / "fixtures" / "pypi_torch_json_2026-11-21.json"
# The format of https://download.pytorch.org/whl/torch/ (a PEP 503 simple page).
_LINK = (
    '<a href="/whl/{v}/torch-2.15.0%2B{v}-{tag}.whl#sha256=00">torch-2.15.0+{v}-{tag}.whl</a><br/>'
)
INDEX_HTML = "\n".join(
    [
        "<!DOCTYPE html><html><body><h1>Links for torch</h1>",
        _LINK.format(v="cu130", tag="cp312-cp312-manylinux_2_28_x86_64"),
        _LINK.format(v="cu132", tag="cp312-cp312-win_amd64"),
        _LINK.format(v="xpu", tag="cp312-cp312-win_amd64"),
        "</body></html>",
    ]
)


def doc() -> dict[str, object]:
    return parse_pypi_json(PYPI.read_bytes())


def test_recorded_pypi_agrees_with_the_shipped_data() -> None:
    report = diff(load_knowledge(), doc(), None)
    assert report.newest_on_pypi == "2.15.0"
    assert report.changes == ()
    assert any(p.startswith("cuda-toolkit[") and "==13.2.2" in p for p in report.newest_cuda_pins)
    assert report.notes  # says the index was not read


def test_releases_from_pypi_reads_python_tags() -> None:
    by_version = {r.version: r for r in releases_from_pypi(doc())}
    r = by_version["2.15.0"]
    assert r.date == "2026-10-28"
    assert r.requires_python == ">=3.11"
    assert "3.15t" in r.python["linux-x86_64"]
    assert "3.10" not in r.python["linux-x86_64"]


def _kb_without(version: str) -> Knowledge:
    texts = dict(data_texts())
    doc_text = texts["torch_releases.toml"]
    start = doc_text.index(f'[[release]]\nversion = "{version}"')
    end = doc_text.index("\n[[", start + 1)
    texts["torch_releases.toml"] = doc_text[:start] + doc_text[end:]
    return Knowledge(parse(texts))


def test_a_new_release_is_reported_with_toml_to_paste() -> None:
    report = diff(_kb_without("2.15.0"), doc(), None)
    assert [c.subject for c in report.changes if c.what == "new-release"] == ["2.15.0"]
    entry = loads_toml(toml_for(report.new_releases))["release"][0]
    assert entry["version"] == "2.15.0"
    assert entry["source"] == "pypi_json"
    assert entry["python"]["macos-arm64"][0] == "3.11"


def test_changed_python_tags_are_reported() -> None:
    texts = dict(data_texts())
    old = '"linux-x86_64" = ["3.11", "3.12", "3.13", "3.14", "3.14t", "3.15", "3.15t"]'
    assert old in texts["torch_releases.toml"]
    texts["torch_releases.toml"] = texts["torch_releases.toml"].replace(
        old, '"linux-x86_64" = ["3.11", "3.12"]'
    )
    report = diff(Knowledge(parse(texts)), doc(), None)
    (change,) = report.changes
    assert (change.what, change.subject) == ("python-tags", "2.15.0 linux-x86_64")


def test_index_page_variants_are_compared() -> None:
    assert index_variants(INDEX_HTML) == {"2.15": {"cu130", "cu132", "xpu"}}
    report = diff(load_knowledge(), doc(), INDEX_HTML)
    (change,) = report.changes
    assert change.what == "index-variants"
    assert change.live == "cu130, cu132, xpu"


def test_unreachable_network_is_one_line() -> None:
    with pytest.raises(ToolError, match=r"^cannot reach http://127\.0\.0\.1:9/"):
        fetch("http://127.0.0.1:9/", timeout=2.0)


def test_garbage_pypi_answer() -> None:
    with pytest.raises(ToolError, match="not JSON"):
        parse_pypi_json(b"<html>")
    with pytest.raises(ToolError, match="no 'releases'"):
        parse_pypi_json(b"{}")


def test_cli_refresh_from_a_saved_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "new.toml"
    assert (
        main(["kb", "refresh", "--pypi-json", str(PYPI), "--offline-index", "--output", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    assert "newest torch on PyPI: 2.15.0" in text
    assert "no changes" in text
    assert not out.exists()  # nothing new, nothing written


def test_cli_kb_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kb", "show", "NVIDIA GeForce RTX 5070"]) == 0
    assert "12.0" in capsys.readouterr().out
    assert main(["kb", "show", "RTX 5075"]) == 2
    assert "close GPU names" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (PYPI.read_bytes()[:300], "is not JSON"),
        (b"\x7fELF\x02\x01\x01\x00\xd0\xff" * 30, "is not JSON"),
        (b"{}", "has no 'releases'"),
        (b'{"releases": {"3.0.0": "oops"}}', "malformed 'releases' entry for '3.0.0'"),
        (b'{"releases": {"3.0.0": [{"filename": 7}]}}', "malformed 'releases' entry"),
        (b'{"releases": {}, "info": []}', "malformed 'info'"),
    ],
)
def test_a_bad_pypi_json_file_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    assert main(["kb", "refresh", "--pypi-json", str(bad), "--offline-index"]) == 3
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith(f"error: --pypi-json {bad} ")
    assert message in first
    assert "Traceback" not in err


def test_an_unwritable_output_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "no" / "such" / "x.toml"
    args = ["kb", "refresh", "--pypi-json", str(PYPI), "--offline-index", "--output", str(target)]
    assert main(args) == 3
    err = capsys.readouterr().err
    assert f"--output {target} cannot be written" in err
    assert "input" not in err


def test_new_release_written_and_said_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import torchsmith.knowledge  # noqa: PLC0415

    monkeypatch.setattr(torchsmith.knowledge, "load_knowledge", lambda: _kb_without("2.15.0"))
    out = tmp_path / "out.toml"
    args = ["kb", "refresh", "--pypi-json", str(PYPI), "--offline-index", "--output", str(out)]
    assert main(args) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "2.15.0 is new: released 20" in text
    assert "(not in the shipped knowledge base)" in text
    assert "'absent'" not in text
    assert f"wrote 1 [[release]] entries to {out}" in text
    assert loads_toml(out.read_text())["release"][0]["version"] == "2.15.0"
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["output"] == str(out)
    (change,) = [c for c in data["report"]["changes"] if c["what"] == "new-release"]
    assert change["text"].startswith("2.15.0 is new")
