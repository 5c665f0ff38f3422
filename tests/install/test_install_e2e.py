"""`torchsmith install` end to end: the real torch 2.13.0 CPU wheel from this machine's pip config.

The cheap checks (dry-run, unreachable index) run first, on the fresh venv. Then two real
torch installs into that venv (uv links from its cache, so the second is quick): a failed one (a
failure injected after torch landed, as when a resolver swaps the CUDA torch for a CPU one) that
must roll back, then a good one that verify checks and `--rollback` undoes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.install.conftest import fresh_venv, tree_hash
from torchsmith import envelope
from torchsmith.cli import main
from torchsmith.install import executor
from torchsmith.install.envstate import package_set, read_dists
from torchsmith.ledger import Ledger
from torchsmith.plan.inputs import PlanRequest, plan_for
from torchsmith.probe.model import Finding

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TORCH = ["--torch", "==2.13.0"]


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["install", "--json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out)


def site(venv: Path) -> tuple[str, ...]:
    return tuple(str(p) for p in venv.glob("lib/python3*/site-packages"))


def packages(venv: Path) -> dict[str, str]:
    return package_set(read_dists(site(venv)))


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fresh_venv(tmp_path_factory.mktemp("e2e") / "venv")


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved plan (what-if: no live probe) for torch 2.13.0 on CPython 3.11 without a GPU."""
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    request = PlanRequest(os="linux", python="3.11", gpus=("none",), torch="==2.13.0")
    path.write_text(envelope.dumps(envelope.wrap("plan", plan_for(request))))
    return path


def test_dry_run_leaves_the_venv_byte_for_byte(
    venv: Path, plan_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tree_hash(venv)
    argv = ["--venv", str(venv), "--plan", str(plan_file), "--with", "torchvision"]
    code = main(["install", "--dry-run", *argv])
    out = capsys.readouterr().out
    assert code == 0
    assert "pip install --python" in out
    assert "torchvision==" in out
    assert tree_hash(venv) == before


def test_unreachable_index_fails_fast_with_one_line(
    venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tree_hash(venv)
    started = time.monotonic()
    code = main(
        ["install", "--venv", str(venv), "--index-url", "http://127.0.0.1:9/simple", *TORCH]
    )
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 4
    assert elapsed < 15
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1
    assert "127.0.0.1:9" in errors[0]
    assert "Traceback" not in err
    assert tree_hash(venv) == before


def test_failure_after_torch_landed_rolls_back(
    venv: Path, plan_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (venv / ".lock").unlink(missing_ok=True)  # a venv uv never installed into
    before = packages(venv)
    tree = tree_hash(venv)
    seen: dict[str, str] = {}

    def swapped(result: Any, torch: Any, after: Any) -> tuple[list[Finding], list[str]]:
        seen.update(package_set(after))  # torch really was in place when the check ran
        return [Finding("cpu-only-torch", "error", "injected swap", "reinstall", "torch")], []

    monkeypatch.setattr(executor, "check_landed", swapped)
    code = main(["install", "--venv", str(venv), "--plan", str(plan_file), "--no-verify"])
    captured = capsys.readouterr()
    assert code == 4
    assert "rolled-back" in captured.out
    errors = [ln for ln in captured.err.splitlines() if ln.startswith("error:")]
    assert errors == ["error: cpu-only-torch: injected swap"]
    assert seen["torch"] == "2.13.0+cpu"
    assert packages(venv) == before
    # uv's empty .lock in the venv's root stayed behind
    assert not (venv / ".lock").exists()
    assert tree_hash(venv) == tree
    attempt = Ledger().latest(kind="install")
    assert attempt is not None
    assert attempt.status == "failed"
    assert attempt.result["before"] == before == attempt.result["after"]
    assert attempt.result["status"] == "rolled-back"
    assert attempt.result["origins"]["torch"] == "probably /opt/wheels"  # uv names none: a guess


def test_install_then_verify(venv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = packages(venv)
    code, doc = run_json(capsys, "--venv", str(venv), *TORCH)
    assert code == 0, doc
    data = doc["data"]
    assert doc["schema"] == "torchsmith/install"
    assert data["status"] == "succeeded"
    assert data["before"] == before
    assert data["changed"]["torch"] == [None, "2.13.0+cpu"]
    assert data["origins"]["torch"] == "probably /opt/wheels"  # the pip config find-links
    assert packages(venv)["torch"] == "2.13.0+cpu"
    report = data["verify"]
    cpu_only = [f for f in report["findings"] if f["category"] == "cpu-only-torch"]
    assert cpu_only
    assert "torchsmith plan" in cpu_only[0]["fix"]
    attempt = Ledger().get(data["ledger_id"])
    assert attempt.status == "succeeded"
    assert attempt.result["after"]["torch"] == "2.13.0+cpu"
    assert Path(attempt.result["snapshot"], "manifest.json").is_file()


def test_rollback_dry_run_changes_nothing(venv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # audit: --rollback --dry-run rolled back for real
    before = tree_hash(venv)
    code, doc = run_json(capsys, "--rollback", "--dry-run")
    assert code == 0
    assert doc["data"]["status"] == "planned"
    assert doc["data"]["changed"]["torch"][1] is None  # torch would go
    assert tree_hash(venv) == before
    # --venv limits the rollback to installs into that venv; another venv has none
    other = str(venv.parent / "other-venv")
    assert main(["install", "--rollback", "--venv", other]) == 3
    assert "no install into" in capsys.readouterr().err


def test_rollback_restores_the_set_before_the_install(
    venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    latest = Ledger().latest(kind="install")
    assert latest is not None
    installed_id = max(a.id for a in Ledger().list(kind="install") if a.status == "succeeded")
    wanted = Ledger().get(installed_id).result["before"]
    code, doc = run_json(capsys, "--rollback", str(installed_id))
    assert code == 0
    assert doc["data"]["status"] == "rolled-back"
    assert packages(venv) == wanted
    assert "torch" not in packages(venv)
    assert not list(venv.glob("bin/torchrun"))


def test_nothing_is_left_to_roll_back(capsys: pytest.CaptureFixture[str]) -> None:
    # audit: a second --rollback "rolled back" the rollback, or a failed install already restored
    assert main(["install", "--rollback"]) == 3
    assert "no install left to roll back" in capsys.readouterr().err
