"""What `torchsmith build` installs is an install: undoable with `install --rollback`, and put back
when the build fails. A real torch C++ extension (tests/build/projects/cpp_ext) built against the
CPU torch 2.13.0 and installed by the parallel driver into a venv of its own, which sees that
torch through a .pth file (as bench/gpu_build.sh sets up its venv on the GPU machine)."""

from __future__ import annotations

import os
import subprocess
import sysconfig
from pathlib import Path

import pytest

from tests.build.configs import copy_project
from tests.install.conftest import fresh_venv
from torchsmith.cli import main
from torchsmith.install.envstate import package_set, read_dists
from torchsmith.ledger import Ledger

TORCH_VENV = os.environ.get("TORCHSMITH_TEST_TORCH_VENV", "")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(not TORCH_VENV, reason="needs $TORCHSMITH_TEST_TORCH_VENV"),
]


def _venv_seeing_torch(path: Path) -> tuple[Path, Path]:
    venv = fresh_venv(path)
    python = venv / "bin" / "python"
    torch_site = subprocess.run(
        [str(Path(TORCH_VENV) / "bin" / "python"), "-c",
         "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    site = next(venv.glob("lib/python3*/site-packages"))
    (site / "_torch.pth").write_text(torch_site + "\n")
    # setuptools before 70.1 (Python 3.11's venv has 65) packages wheels only with `wheel`
    subprocess.run([str(python), "-m", "pip", "install", "-q", "wheel"], check=True, timeout=300)
    return python, site


def test_a_build_that_installs_is_an_install_you_can_roll_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Audit: build ran pip --force-reinstall into the target with no snapshot and no install
    attempt, so `install --rollback` could not undo it."""
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setenv("TORCHSMITH_SNAPSHOTS", str(tmp_path / "snapshots"))
    monkeypatch.setenv("TORCHSMITH_LOG_DIR", str(tmp_path / "logs"))
    python, site = _venv_seeing_torch(tmp_path / "venv")
    before = package_set(read_dists((str(site),)))
    tree = copy_project("cpp_ext", tmp_path)
    code = main(["build", str(tree), "--python", str(python), "--cache", "none"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "install --rollback undoes it" in out
    installed = package_set(read_dists((str(site),)))
    assert set(installed) - set(before)  # the extension's distribution landed
    (attempt,) = Ledger().list(kind="install")
    assert attempt.config["by"] == {"build": str(tree)}
    assert main(["install", "--rollback"]) == 0
    capsys.readouterr()
    assert package_set(read_dists((str(site),))) == before

    (tree / "tiny.cpp").write_text("this is not C++\n")  # a build that fails installs nothing
    assert main(["build", str(tree), "--python", str(python), "--cache", "none"]) == 1
    capsys.readouterr()
    assert package_set(read_dists((str(site),))) == before
    assert [a.config.get("by") for a in Ledger().list(kind="install")][-1] == {"build": str(tree)}
    assert len([a for a in Ledger().list(kind="install") if "by" in a.config]) == 1
    assert sysconfig  # the module docstring's .pth set-up uses the same paths


def test_a_forced_build_against_a_cpu_torch_fails_as_one_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Audit (torch_scatter 2.1.2, torch 2.13.0+cpu, --cc 8.0 --force): the arch check failed,
    the install was put back without a word, the ledger said succeeded with exit status 0 and
    the fix said --clean. With FORCE_CUDA=1 the diagnosis said to export a CUDA_HOME the build
    had exported, pointing at a CUDA 12.8 this machine does not have."""
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setenv("TORCHSMITH_SNAPSHOTS", str(tmp_path / "snapshots"))
    monkeypatch.setenv("TORCHSMITH_LOG_DIR", str(tmp_path / "logs"))
    python, site = _venv_seeing_torch(tmp_path / "venv")
    before = package_set(read_dists((str(site),)))
    tree = copy_project("scatter_like", tmp_path)
    argv = ["build", str(tree), "--python", str(python), "--cc", "8.0", "--cache", "none"]

    assert main([*argv, "--force", "--set", "FORCE_CUDA=1"]) == 1
    out = capsys.readouterr().out
    assert "most likely cause: torch 2.13.0+cpu is a CPU build" in " ".join(out.split())
    assert "cuda-12.8" not in out
    assert package_set(read_dists((str(site),))) == before

    assert main([*argv, "--force"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "Successfully installed scatter-like" in out  # pip did install it...
    assert package_set(read_dists((str(site),))) == before  # ...and it was put back
    assert "scatter_like 0.0.1, which this build had installed into" in out  # ...which is said
    assert "was removed again because its arch check failed" in out
    assert "rebuild with a clean tree" not in out
    assert "torch 2.13.0+cpu compiles no CUDA code" in out
    forced = Ledger().list(kind="build")[0]
    assert (forced.status, forced.exit_code) == ("failed", 1)
    assert forced.result["reason"].startswith("the arch check failed")
    assert forced.result["installed"]["status"] == "removed"
    assert Path(forced.result["installed"]["wheel"]).is_file()
    assert not [a for a in Ledger().list(kind="install") if "by" in a.config]
