"""``torchsmith inspect`` end to end through cli.main: JSON envelope, human output, exit codes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from torchsmith.binaries.gpu import resolve_gpu
from torchsmith.cli import main
from torchsmith.commands.inspect import inspect_cmd
from torchsmith.errors import UsageError
from torchsmith.render.progress import byte_progress

from .conftest import Built


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main(["inspect", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_json_envelope(built: Built, capsys: pytest.CaptureFixture[str]) -> None:
    code, envelope = run_json(capsys, str(built["libmix.so"]), "--gpu", "sm_120")
    assert code == 0
    assert envelope["schema"] == "torchsmith/inspect"
    data = envelope["data"]
    assert isinstance(data, dict)
    assert set(data) >= {"binaries", "sass", "ptx", "runs_on"}
    assert data["sass"] == ["sm_75", "sm_90a", "sm_100f", "sm_120a"]
    assert data["ptx"] == ["compute_120f"]
    (binary,) = data["binaries"]
    assert binary["fatbin_found"] is True
    assert binary["sass_counts"] == {"sm_75": 2, "sm_90a": 2, "sm_100f": 2, "sm_120a": 2}
    assert data["runs_on"]["route"] == "native SASS sm_120a"  # type: ignore[index]


def test_gpu_verdicts_and_exit_codes(built: Built, capsys: pytest.CaptureFixture[str]) -> None:
    code, envelope = run_json(capsys, str(built["libmix.so"]), "--gpu", "12.1")
    runs = envelope["data"]["runs_on"]  # type: ignore[index]
    assert (code, runs["ok"], runs["route"]) == (
        0,
        True,
        "PTX JIT from compute_120f (slow first run)",
    )
    # The command itself exits 1 when nothing runs (checked through click directly: cli.main
    # drops the exit code of a command that calls ctx.exit(1); see the change request).
    result = CliRunner().invoke(inspect_cmd, [str(built["libmix.so"]), "--gpu", "8.6", "--json"])
    assert result.exit_code == 1
    runs = json.loads(result.stdout)["data"]["runs_on"]
    assert "no kernel image is available" in runs["route"]


def test_human_output(built: Built, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(built.root), "--gpu", "9.0"]) == 0
    out = capsys.readouterr().out
    assert "libmix.so" in out
    assert "sm_100f" in out
    assert "libcpu.so" not in out  # no GPU code: hidden without --all
    assert "GPU 9.0: native SASS sm_90a" in out
    assert main(["inspect", str(built.root), "--all"]) == 0
    out = capsys.readouterr().out
    assert "libcpu.so: ELF" in out
    assert "no CUDA fat binary found" in out


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["/no/such/file.so"], 3, "no such file or directory"),
        (["x.so", "--gpu", "Hopperish 9000"], 2, "--gpu 'Hopperish 9000'"),
    ],
)
def test_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], code: int, message: str
) -> None:
    assert main(["inspect", *args]) == code
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert message in err
    assert "Traceback" not in err


def test_garbage_file_json_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.dll"
    junk.write_bytes(b"\x00" * 100)
    code, envelope = run_json(capsys, str(junk))
    assert code == 3
    assert envelope["ok"] is False
    assert "not an ELF or PE binary" in envelope["error"]["message"]  # type: ignore[index]


def test_resolve_gpu_forms() -> None:
    assert resolve_gpu("12.0").compute_capability == "12.0"
    assert resolve_gpu("sm_120").compute_capability == "12.0"
    assert resolve_gpu("86").compute_capability == "8.6"
    with pytest.raises(UsageError, match="not a GPU name torchsmith knows"):
        resolve_gpu("definitely not a gpu")


def test_resolve_gpu_by_name() -> None:
    """Names go through the knowledge base (torchsmith.knowledge, NVIDIA's CC table)."""
    rtx = resolve_gpu("RTX 5090")
    assert rtx.compute_capability == "12.0"
    assert rtx.name is not None
    assert "5090" in rtx.name
    assert resolve_gpu("H100").compute_capability == "9.0"


def test_gpu_name_on_the_command_line(built: Built, capsys: pytest.CaptureFixture[str]) -> None:
    code, envelope = run_json(capsys, str(built["libmix.so"]), "--gpu", "RTX 5090")
    data = envelope["data"]
    assert code == 0
    assert data["compute_capability"] == "12.0"  # type: ignore[index]
    assert "RTX 5090" in data["gpu"]  # type: ignore[index]


def test_progress_bar_draws_for_big_work() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    with byte_progress(console, "inspect") as update:
        update(0, 1 << 30, "torch/lib/libtorch_cuda.so")
        update(1 << 29, 1 << 30, "torch/lib/libtorch_cuda.so")
        update(1 << 30, 1 << 30, "")
    assert "inspect" in console.file.getvalue()  # type: ignore[attr-defined]
    quiet = Console(file=io.StringIO(), force_terminal=True)
    with byte_progress(quiet, "inspect") as update:
        update(0, 1000, "small.so")  # small work: no bar at all
    assert quiet.file.getvalue() == ""  # type: ignore[attr-defined]
