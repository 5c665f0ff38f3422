"""`kb show` and `kb refresh` answers a new user checked against the facts they rest on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchsmith.cli import main
from torchsmith.knowledge import load_knowledge
from torchsmith.knowledge.refresh import diff, parse_pypi_json

PYPI = Path(__file__).parent / "fixtures" / "pypi_torch_json_2026-11-21.json"


@pytest.mark.parametrize(
    ("arch", "oldest"),
    [("sm_90", "11.8"), ("sm_90a", "12.0"), ("compute_90a", "12.0"), ("sm_100f", "12.9")],
)
def test_arch_specific_and_family_names_get_their_own_toolkit_floor(
    arch: str, oldest: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """CUDA 11.8 emits sm_90 but not sm_90a; sm_100f needs 12.9, not sm_100's 12.8."""
    assert main(["kb", "show", arch, "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)["data"]["facts"]
    assert facts["cuda_toolkits"][0] == oldest
    assert main(["kb", "show", arch]) == 0
    assert f"CUDA {oldest} or newer" in capsys.readouterr().out


def test_an_arch_suffix_no_toolkit_emits_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kb", "show", "sm_86a"]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA GeForce RTX 3090" in out  # the GPUs of 8.6 are still named
    assert "no CUDA toolkit torchsmith knows can compile for sm_86a" in " ".join(out.split())


def test_an_index_page_without_torch_wheels_is_bad_input(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A wrong file (here the PyPI JSON) for --index-html must not end in "no changes"."""
    args = ["kb", "refresh", "--pypi-json", str(PYPI), "--index-html", str(PYPI), "--json"]
    assert main(args) == 3
    envelope = json.loads(capsys.readouterr().out)
    assert envelope["ok"] is False
    assert "lists no torch wheels" in envelope["error"]["message"]


def test_a_fetched_page_without_torch_wheels_is_a_note() -> None:
    report = diff(load_knowledge(), parse_pypi_json(PYPI.read_bytes()), "<html>Sign in</html>")
    assert report.changes == ()
    assert any("index variants not checked" in note for note in report.notes)
