"""Bad input: one line, the target as it was; Ctrl-C restores it (no torch is installed here)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.install.conftest import tree_hash
from torchsmith.cli import main
from torchsmith.install import executor
from torchsmith.install.envstate import package_set, read_dists
from torchsmith.ledger import Ledger

pytestmark = pytest.mark.integration
TORCH = ["--torch", "==2.13.0"]


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, err
    return errors[0]


def test_no_such_interpreter(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["install", "--python", str(tmp_path / "nope" / "python"), "--plan", "x.json"])
    assert code == 3
    assert "no such" in one_error(capsys)


def test_garbage_plan_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small_venv: Path
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("this is no plan")
    before = tree_hash(small_venv)
    code = main(["install", "--venv", str(small_venv), "--plan", str(plan)])
    assert code == 3
    assert "not JSON" in one_error(capsys)
    assert tree_hash(small_venv) == before


def test_two_targets_and_a_bad_rollback_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["install", "--venv", "/tmp/a", "--python", "/usr/bin/python3", *TORCH]) == 2
    assert "two targets" in one_error(capsys)
    assert main(["install", "--rollback", "abc"]) == 2
    one_error(capsys)


def test_rollback_with_nothing_recorded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "empty.db"))
    assert main(["install", "--rollback"]) == 3
    assert "no install left to roll back" in one_error(capsys)


def test_unreachable_index_in_json(
    capsys: pytest.CaptureFixture[str], small_venv: Path, tmp_path: Path
) -> None:
    plan = tmp_path / "plan.json"
    assert (
        main(["plan", "--json", "--os", "linux", "--python", "3.11", "--gpu", "none", *TORCH]) == 0
    )
    plan.write_text(capsys.readouterr().out)
    started = time.monotonic()
    code = main(
        ["install", "--json", "--venv", str(small_venv), "--plan", str(plan),
         "--index-url", "http://127.0.0.1:9/simple"]
    )  # fmt: skip
    assert time.monotonic() - started < 15
    doc = json.loads(capsys.readouterr().out)
    assert code == 4
    assert doc["ok"] is False
    assert "127.0.0.1:9" in doc["error"]["message"]


def test_ctrl_c_during_the_install_restores(
    capsys: pytest.CaptureFixture[str],
    small_venv: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C after the installer changed files: the venv is put back and the ledger says so."""
    site = next(small_venv.glob("lib/python3*/site-packages"))
    before = package_set(read_dists((str(site),)))
    hashed = tree_hash(small_venv)

    def interrupted(result: Any, sites: tuple[str, ...], on_step: Any) -> None:
        info = site / "setuptools-99.0.dist-info"
        for dist in site.glob("setuptools-*.dist-info"):  # the installer removed the old one...
            for line in (dist / "RECORD").read_text().splitlines():
                Path(site, line.split(",")[0]).unlink(missing_ok=True)
        info.mkdir()  # ...and was writing the new one
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: setuptools\nVersion: 99.0\n")
        (site / "new_module.py").write_text("x = 1\n")
        (info / "RECORD").write_text(
            "new_module.py,,\nsetuptools-99.0.dist-info/METADATA,,\n"
            "setuptools-99.0.dist-info/RECORD,,\n"
        )
        raise KeyboardInterrupt

    monkeypatch.setattr(executor, "_install", interrupted)
    plan = tmp_path / "plan.json"
    assert (
        main(["plan", "--json", "--os", "linux", "--python", "3.11", "--gpu", "none", *TORCH]) == 0
    )
    plan.write_text(capsys.readouterr().out)
    code = main(["install", "--venv", str(small_venv), "--plan", str(plan), "--no-verify"])
    assert code == 130
    assert package_set(read_dists((str(site),))) == before
    after = tree_hash(small_venv)
    changed = {k for k in set(hashed) | set(after) if hashed.get(k) != after.get(k)}
    assert not {k for k in changed if "__pycache__" not in k}, sorted(changed)[:10]
    latest = Ledger().latest(kind="install")
    assert latest is not None
    assert latest.status == "interrupted"


def test_an_error_the_plan_reports_blocks_the_install_until_forced(
    capsys: pytest.CaptureFixture[str], small_venv: Path
) -> None:
    # driver 470 cannot run an sm_120 GPU: installing any torch would not fix that
    before = tree_hash(small_venv)
    code = main(["install", "--venv", str(small_venv), "--cc", "12.0", "--driver", "470.10"])
    assert code == 2
    err = capsys.readouterr().err
    assert "cannot run the GPU" in err
    assert "--force" in err
    assert tree_hash(small_venv) == before
    # a dry run shows the error and the plan
    assert main(["install", "--dry-run", "--cc", "12.0", "--driver", "470.10"]) == 0
    assert "cannot run the GPU" in capsys.readouterr().err


def test_a_probe_of_another_os_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    probe = Path(__file__).parents[1] / "fixtures" / "h200-linux" / "doctor.json"
    data = json.loads(probe.read_text())
    data["data"]["host"]["os"] = "windows"
    windows = tmp_path / "windows.json"
    windows.write_text(json.dumps(data))
    assert main(["install", "--dry-run", "--probe", str(windows)]) == 2
    assert "describes a windows machine" in one_error(capsys)


def test_a_folder_that_is_no_venv_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # audit: `install --venv proj` turned a project folder into a venv (bin/, lib/, pyvenv.cfg)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "main.py").write_text("print(1)\n")
    before = tree_hash(project)
    code = main(["install", "--venv", str(project), *TORCH, "--dry-run"])
    assert code == 2
    assert "is not a virtual environment" in one_error(capsys)
    assert tree_hash(project) == before
