"""explain and review on the command line: the inputs and flags a user gets wrong, each answered
with one clear line and the right exit code, and output that reads as what it names."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from torchsmith.cli import main

NVCC = "nvcc fatal   : Unsupported gpu architecture 'compute_120'\n"
REVIEW = Path(__file__).parents[1] / "review"
SKELETON = Path(__file__).parents[1] / "build" / "projects" / "pytorch_skeleton"
H200 = Path(__file__).parents[1] / "fixtures" / "h200-linux" / "doctor.json"


def _stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def test_stdin_named_twice_is_a_usage_error_not_an_empty_log(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # audit: `explain - - < build.log` said "standard input is empty" (exit 3): the first -
    # had read it all, and the log was not empty
    _stdin(monkeypatch, NVCC)
    assert main(["explain", "-", "-"]) == 2
    err = capsys.readouterr().err
    assert "standard input can be read only once" in err
    assert "empty" not in err


def test_a_diagnosis_from_stdin_names_standard_input_not_a_dash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # audit: the location of a piped log's diagnosis read "-:1"
    _stdin(monkeypatch, NVCC)
    assert main(["explain"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # as read, whatever the width
    assert "standard input:1" in out
    assert "-:1" not in out


@pytest.mark.parametrize("value", ["nan", "inf", "1e300", "0", "-4"])
def test_review_ram_that_is_no_amount_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    # audit: --ram nan / inf / 1e300 ended in "internal error" (exit 70)
    script = tmp_path / "build.sh"
    script.write_text("export MAX_JOBS=8\npython setup.py develop\n")
    code = main(["review", str(script), "--gpu", "RTX 4090", "--os", "linux", "--ram", value])
    err = capsys.readouterr().err
    assert code == 2
    assert "--ram must be a positive number of GiB" in err
    assert "internal error" not in err


def test_review_of_a_missing_path_says_it_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # audit: a path that does not exist was "not a file", as a directory was
    missing = tmp_path / "buidl.sh"
    assert main(["review", str(missing), "--os", "linux"]) == 3
    assert f"{missing}: no such file" in capsys.readouterr().err
    assert main(["review", str(tmp_path), "--os", "linux"]) == 3
    assert f"{tmp_path} is a directory" in capsys.readouterr().err


def test_review_emit_with_json_prints_one_document_when_the_script_cannot_be_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # audit: the review's envelope (ok: true) was printed, then the --emit error's (ok: false):
    # two JSON documents on stdout, which no JSON reader takes
    tree = tmp_path / "pytorch"
    shutil.copytree(SKELETON, tree)
    script = REVIEW / "fixtures" / "rtx5070-cuda12.9.sh"
    argv = ["review", str(script), "--probe", str(H200), "--tree", str(tree), "--json"]
    code = main([*argv, "--emit", "cmd", "-o", str(tmp_path / "build.cmd")])
    doc = json.loads(capsys.readouterr().out)
    assert code == 2
    assert doc["ok"] is False
    assert "--emit cmd does not run on linux" in doc["error"]["message"]


def test_review_emit_to_stdout_leaves_only_the_script_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # audit: `review ... --emit bash > build.sh` wrote the review's table above the script's
    # shebang, so the file did not run; the view goes to stderr when the script takes stdout
    tree = tmp_path / "pytorch"
    shutil.copytree(SKELETON, tree)
    script = REVIEW / "fixtures" / "rtx5070-cuda12.9.sh"
    argv = ["review", str(script), "--probe", str(H200), "--tree", str(tree), "--emit", "bash"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("#!/usr/bin/env bash\n")
    assert "export TORCH_CUDA_ARCH_LIST=9.0" in captured.out
    assert "corrected: torchsmith build" in captured.err
    out = tmp_path / "build.sh"
    assert main([*argv, "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert "corrected: torchsmith build" in captured.out
    assert f"wrote {out} (bash)" in captured.err
    assert out.read_text().startswith("#!/usr/bin/env bash\n")
