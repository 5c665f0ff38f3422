"""Bad input: one line, the target as it was; Ctrl-C restores it (no torch is installed here)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.install.conftest import PYTHON311, fresh_venv, tree_hash
from torchsmith.cli import main
from torchsmith.errors import InputError, UsageError
from torchsmith.install import executor, steps
from torchsmith.install.envstate import package_set, read_dists
from torchsmith.install.model import InstallStep
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
        # audit: an installer stopped while unpacking leaves folders it had made and no file in
        # them yet (torch-*.dist-info/licenses/third_party/..., an empty networkx/); an empty
        # dist-info then passed for an installed torch with invalid metadata
        (site / "torch-2.13.0+cpu.dist-info" / "licenses" / "third_party" / "x").mkdir(parents=True)
        (site / "networkx" / "__pycache__").mkdir(parents=True)  # pip compiles as it goes
        (site / "networkx" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"\0")
        raise KeyboardInterrupt

    monkeypatch.setattr(executor, "_install", interrupted)
    plan = tmp_path / "plan.json"
    assert (
        main(["plan", "--json", "--os", "linux", "--python", "3.11", "--gpu", "none", *TORCH]) == 0
    )
    plan.write_text(capsys.readouterr().out)
    code = main(["install", "--venv", str(small_venv), "--plan", str(plan), "--no-verify"])
    assert code == 130
    said = capsys.readouterr().err
    assert "interrupted: the install was undone" in said
    assert "recorded as interrupted" in said
    assert package_set(read_dists((str(site),))) == before
    after = tree_hash(small_venv)
    changed = {k for k in set(hashed) | set(after) if hashed.get(k) != after.get(k)}
    assert not {k for k in changed if "__pycache__" not in k}, sorted(changed)[:10]
    latest = Ledger().latest(kind="install")
    assert latest is not None
    assert latest.status == "interrupted"
    # review: an interrupted install restored in full kept its snapshot forever (pruning
    # leaves failed and interrupted ones alone)
    assert latest.result["snapshot"] is None


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


def test_a_prefix_with_a_python_is_no_venv(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # re-audit: a folder with bin/python (a link to the system's) was taken for a venv, so the
    # install would have gone into the system interpreter
    prefix = tmp_path / "fakeprefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "python").symlink_to(sys.executable)
    code = main(["install", "--venv", str(prefix), *TORCH, "--dry-run"])
    assert code == 2
    assert "no virtual environment" in one_error(capsys)


def test_rollback_picks_the_environment_and_keeps_the_order(tmp_path: Path) -> None:
    # re-audit: `--rollback --venv v1` found nothing (the install recorded bin/python3, rollback
    # looked for bin/python); `--rollback 13` undid the newer #14 as well, unsaid
    venv = tmp_path / "v1"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    ids = []
    for exe in ("python3", "python"):
        attempt = ledger.start("install", config={}, tree=str(venv / "bin" / exe))
        result = {"python": str(venv / "bin" / exe), "snapshot": str(tmp_path / f"s{exe}")}
        ledger.finish(attempt, status="succeeded", result=result)
        ids.append(attempt)
    picked = executor._rollback_target(ledger, None, str(venv / "bin" / "python"))
    assert picked.id == ids[1]
    with pytest.raises(UsageError, match=f"install #{ids[1]} into the same environment"):
        executor._rollback_target(ledger, ids[0], None)
    undo = ledger.start("install", config={"rollback_of": ids[1]})
    ledger.finish(undo, status="succeeded", result={})
    assert executor._rollback_target(ledger, ids[0], None).id == ids[0]  # #2 is undone now


@pytest.mark.integration
def test_an_empty_venv_folder_given_stays_when_the_install_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # re-audit: a failed install removed the (empty) --venv folder the user had made
    if PYTHON311 is None:
        pytest.skip("needs python3.11")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no find-links of this machine's: it fails
    monkeypatch.setenv("TORCHSMITH_SNAPSHOTS", str(tmp_path / "snapshots"))
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    folder = tmp_path / "env"
    folder.mkdir()
    empty_index = tmp_path / "index"
    empty_index.mkdir()
    argv = ["install", *TORCH, "--index-url", empty_index.as_uri(), "--no-verify"]
    inode = folder.stat().st_ino
    code = main([*argv, "--venv", str(folder)])
    assert code != 0
    capsys.readouterr()
    assert folder.is_dir()
    assert list(folder.iterdir()) == []
    # audit: the folder given was removed and made again: a shell inside it was left in a
    # deleted folder
    assert folder.stat().st_ino == inode
    # audit: new/../env made ./env, then failed on the path as written and left that venv
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--venv", "new/../made"]) != 0
    capsys.readouterr()
    assert not (tmp_path / "made").exists()
    assert not (tmp_path / "new").exists()
    # the parent folders made for a new venv stayed behind; a parent that was there stays
    (tmp_path / "kept").mkdir()
    assert main([*argv, "--venv", str(tmp_path / "kept" / "new" / "deeper" / "env")]) != 0
    capsys.readouterr()
    assert list((tmp_path / "kept").iterdir()) == []
    # review: the snapshot of the venv it made was compared with a folder no longer there,
    # "restore incomplete" was said and the snapshot left behind
    snapshots = Path(os.environ["TORCHSMITH_SNAPSHOTS"])
    assert not snapshots.exists() or list(snapshots.iterdir()) == []


def test_a_venv_step_that_fails_half_way_leaves_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # re-audit: python -m venv failing in ensurepip left a half-made venv, unrecorded, which
    # the next run took for an existing one. A real process that makes the folder and fails:
    made = (
        "import os, sys; os.makedirs(sys.argv[1] + '/bin'); "
        "open(sys.argv[1] + '/pyvenv.cfg', 'w'); sys.exit(1)"
    )

    def half_made(venv: Path) -> InstallStep:
        return InstallStep("create venv", (sys.executable, "-c", made, str(venv)))

    monkeypatch.setattr(steps, "venv_step", half_made)
    monkeypatch.setenv("TORCHSMITH_SNAPSHOTS", str(tmp_path / "snapshots"))
    target = tmp_path / "new" / "env"
    code = main(["install", *TORCH, "--venv", str(target), "--no-verify"])
    assert code != 0
    capsys.readouterr()
    assert not (tmp_path / "new").exists()


@pytest.mark.integration
def test_a_new_venv_goes_when_the_ledger_cannot_record_the_install(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # review: the venv was made, then the ledger could not be opened; the venv stayed and the
    # next run took it for an existing one
    (tmp_path / "notadir").write_text("")
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "notadir" / "ledger.db"))
    monkeypatch.setenv("TORCHSMITH_SNAPSHOTS", str(tmp_path / "snapshots"))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    index = tmp_path / "index"
    index.mkdir()
    target = tmp_path / "new" / "env"
    argv = ["install", *TORCH, "--index-url", index.as_uri(), "--no-verify"]
    assert main([*argv, "--venv", str(target)]) != 0
    assert "ledger" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    snapshots = tmp_path / "snapshots"
    assert not snapshots.exists() or not any(snapshots.rglob("*.json"))


def _fake_installer(site: Path) -> Any:
    """An `_install` stand-in that installs one small distribution (fakepkg 1.0) into ``site``."""

    def installed(result: Any, sites: tuple[str, ...], on_step: Any) -> None:
        info = site / "fakepkg-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakepkg\nVersion: 1.0\n")
        (info / "RECORD").write_text("fakepkg-1.0.dist-info/METADATA,,\n")
        result.after = package_set(read_dists(sites))

    return installed


def _saved_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    plan = tmp_path / "plan.json"
    assert (
        main(["plan", "--json", "--os", "linux", "--python", "3.11", "--gpu", "none", *TORCH]) == 0
    )
    plan.write_text(capsys.readouterr().out)
    return plan


def test_ctrl_c_before_the_install_says_nothing_changed(
    capsys: pytest.CaptureFixture[str],
    small_venv: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """audit: Ctrl-C before the attempt was recorded said the install 'was put back' and named
    an attempt the ledger did not hold."""
    plan = _saved_plan(capsys, tmp_path)
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "ledger.db"))

    def stopped(*_: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(executor, "_record_environment", stopped)
    before = tree_hash(small_venv)
    code = main(["install", "--venv", str(small_venv), "--plan", str(plan), "--no-verify"])
    assert code == 130
    said = capsys.readouterr().err
    assert "interrupted before anything was installed" in said
    assert "unchanged" in said
    assert Ledger().latest(kind="install") is None
    assert tree_hash(small_venv) == before


def test_ctrl_c_while_verifying_keeps_the_install_and_says_so(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """audit: Ctrl-C while verify ran said the install was put back; it stayed (rightly: it had
    succeeded and was recorded so)."""
    venv = fresh_venv(tmp_path / "venv")
    site = next(venv.glob("lib/python3*/site-packages"))
    plan = _saved_plan(capsys, tmp_path)
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "ledger.db"))

    installed = _fake_installer(site)

    def verifier(_: str) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(executor, "_install", installed)
    monkeypatch.setattr(executor, "default_verifier", lambda: verifier)
    code = main(["install", "--venv", str(venv), "--plan", str(plan)])
    assert code == 130
    said = capsys.readouterr().err
    latest = Ledger().latest(kind="install")
    assert latest is not None
    assert latest.status == "succeeded"
    assert f"interrupted while verifying: install #{latest.id} stays" in said
    assert f"install --rollback {latest.id} undoes it" in said
    assert "fakepkg" in package_set(read_dists((str(site),)))


def test_ctrl_c_while_the_success_is_recorded_is_held_then_stops_before_verify(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Ctrl-C (a real SIGINT) while the success is written to the ledger was ignored, and
    verify ran on; it is held until the record is written, then stops with the install kept."""
    venv = fresh_venv(tmp_path / "venv")
    site = next(venv.glob("lib/python3*/site-packages"))
    plan = _saved_plan(capsys, tmp_path)
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "ledger.db"))
    prune = executor.prune_snapshots
    verified: list[str] = []

    def pressed(*args: Any) -> Any:  # inside the held block, between record and prune
        os.kill(os.getpid(), signal.SIGINT)
        return prune(*args)

    monkeypatch.setattr(executor, "_install", _fake_installer(site))
    monkeypatch.setattr(executor, "prune_snapshots", pressed)
    monkeypatch.setattr(executor, "default_verifier", lambda: verified.append)
    # what the process had: Python's handler, or SIG_IGN where the tests run as a background job
    before = signal.getsignal(signal.SIGINT)
    code = main(["install", "--venv", str(venv), "--plan", str(plan)])
    assert code == 130
    said = capsys.readouterr().err
    latest = Ledger().latest(kind="install")
    assert latest is not None
    assert latest.status == "succeeded"
    assert "Ctrl-C is held until the environment and its record are in order" in said
    assert f"interrupted after the install was recorded: install #{latest.id} stays" in said
    assert not verified
    assert "fakepkg" in package_set(read_dists((str(site),)))
    assert signal.getsignal(signal.SIGINT) == before  # the held block put back what it found


def test_a_held_ctrl_c_never_raises_when_stderr_is_gone() -> None:
    """review: the handler wrote to stderr; under `| tee`, killed by the same Ctrl-C, the write
    raised BrokenPipeError inside the restore it protects."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    dead = os.fdopen(write_end, "w")
    saved = sys.stderr
    for stderr in (dead, None):
        sys.stderr = stderr  # type: ignore[assignment]
        try:
            with executor._no_interrupt() as held:
                os.kill(os.getpid(), signal.SIGINT)
                done = True  # reached: the handler raised nothing
        finally:
            sys.stderr = saved
        assert done
        assert held.pressed
    with contextlib.suppress(OSError):
        dead.close()


def _read_only(folder: Path) -> bool:
    """Make ``folder`` refuse new files (chmod; chattr +i where root ignores modes); whether
    that worked here."""
    folder.chmod(0o555)
    probe = folder / ".probe"
    try:
        probe.write_text("")
    except OSError:
        return True
    probe.unlink()
    done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False)
    return done.returncode == 0


def test_a_target_it_cannot_write_is_refused_before_anything(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """audit: an install into a read-only site-packages failed in the restore with
    'input ...: permission denied' and left its attempt 'died'; --dry-run said nothing."""
    venv = fresh_venv(tmp_path / "venv")
    site = next(venv.glob("lib/python3*/site-packages"))
    plan = _saved_plan(capsys, tmp_path)
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "ledger.db"))
    if not _read_only(site):
        site.chmod(0o755)
        pytest.skip("cannot make a folder read-only here")
    try:
        before = tree_hash(venv)
        for extra in (["--dry-run"], []):
            code = main(["install", "--venv", str(venv), "--plan", str(plan), *extra])
            assert code == 3
            line = one_error(capsys)
            assert f"cannot write to {site}" in line
            assert "nothing was installed" in line
        assert Ledger().latest(kind="install") is None
        assert tree_hash(venv) == before
    finally:
        subprocess.run(["chattr", "-i", str(site)], capture_output=True, check=False)
        site.chmod(0o755)


def test_one_environment_is_one_target_however_its_path_is_spelled(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """audit: an install through ``../venv/bin/python`` was recorded with the ``..`` in it, and
    `--rollback` named through ``venv/bin/python`` found no install to undo."""
    venv = fresh_venv(tmp_path / "venv5")
    site = next(venv.glob("lib/python3*/site-packages"))
    plan = _saved_plan(capsys, tmp_path)
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "ledger.db"))

    installed = _fake_installer(site)

    monkeypatch.setattr(executor, "_install", installed)
    (tmp_path / "sd").mkdir()
    monkeypatch.chdir(tmp_path / "sd")
    code = main(["install", "--python", "../venv5/bin/python", "--plan", str(plan), "--no-verify"])
    assert code == 0, capsys.readouterr().err
    latest = Ledger().latest(kind="install")
    assert latest is not None
    assert latest.result["python"] == str(venv / "bin" / "python")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["install", "--python", "venv5/bin/python", "--rollback", "--dry-run"]) == 0
    assert main(["install", "--venv", "sd/../venv5", "--rollback"]) == 0
    assert "fakepkg" not in package_set(read_dists((str(site),)))


def test_offline_the_tip_names_the_torch_a_local_source_has(
    capsys: pytest.CaptureFixture[str],
    small_venv: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """audit: offline, the plan's torch 2.15.0+cpu cannot come, and the find-links folder holds
    torch 2.13.0+cpu; nothing said that --torch ==2.13.0 would install it."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in (
        "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torch-2.14.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",  # another Python: not it
        "torch-2.14.1+cu130-cp311-cp311-manylinux_2_28_x86_64.whl",  # another variant
        # review: other platforms' wheels were named too
        "torch-2.14.0+cpu-cp311-cp311-macosx_11_0_arm64.whl",
        "torch-2.14.0+cpu-cp311-cp311-win_amd64.whl",
        "torch-2.14.0+cpu-cp311-cp311-manylinux_2_28_aarch64.whl",
    ):
        (wheels / name).write_bytes(b"")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "ledger.db"))
    code = main(
        ["install", "--venv", str(small_venv), "--gpu", "none", "--torch", "==2.15.0",
         "--index-url", "http://127.0.0.1:9/simple"]
    )  # fmt: skip
    assert code == 4
    line = capsys.readouterr().err
    assert f"{wheels} (PIP_FIND_LINKS) has torch 2.13.0+cpu: --torch ==2.13.0 installs it" in line


def test_a_venv_over_system_site_packages_is_judged_by_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review: a venv made with --system-site-packages lists the base interpreter's folders too;
    one of those read-only refused an install pip would only have written to the venv."""
    from torchsmith.probe.model import PythonInfo  # noqa: PLC0415

    venv, base = tmp_path / "venv", tmp_path / "base-dist-packages"
    own = venv / "lib" / "python3.11" / "site-packages"
    own.mkdir(parents=True)
    base.mkdir()
    if not _read_only(base):
        base.chmod(0o755)
        pytest.skip("cannot make a folder read-only here")
    try:

        def probe(python: str, **_: Any) -> Any:
            kind = "venv" if python == "venv" else "system"
            sites = (str(own), str(base))
            info = PythonInfo(
                python, "3.11.9", "CPython", 64, env_kind=kind, env_prefix=str(venv),
                site_packages=sites,
            )  # fmt: skip
            return info, None

        executor._writable("venv", probe("venv")[0])  # its own folder is writable: fine
        # outside an environment: one writable folder will do
        executor._writable("system", probe("system")[0])
        if not _read_only(own):
            pytest.skip("cannot make a folder read-only here")
        with pytest.raises(InputError, match=f"cannot write to {own}"):
            executor._writable("venv", probe("venv")[0])
        with pytest.raises(InputError, match="cannot write to"):
            executor._writable("system", probe("system")[0])
    finally:
        for folder in (base, own):
            subprocess.run(["chattr", "-i", str(folder)], capture_output=True, check=False)
            folder.chmod(0o755)


def test_ctrl_c_around_a_venv_it_makes_says_the_venv_went(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review: Ctrl-C while the venv was being made said '.../bin/python is unchanged' of an
    interpreter that never existed; after the install began, it said the venv 'is as it was'."""
    plan = _saved_plan(capsys, tmp_path)
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "ledger.db"))
    venv = tmp_path / "nest" / "a" / "venv"
    real_run = executor.cmd.run

    def half_made(argv: Any, **kwargs: Any) -> Any:
        if "venv" in argv:
            Path(argv[-1], "bin").mkdir(parents=True)
            raise KeyboardInterrupt
        return real_run(argv, **kwargs)

    monkeypatch.setattr(executor.cmd, "run", half_made)
    assert main(["install", "--venv", str(venv), "--plan", str(plan), "--no-verify"]) == 130
    said = capsys.readouterr().err
    assert f"the venv {venv} was not made" in said
    assert not (tmp_path / "nest").exists()

    monkeypatch.setattr(executor.cmd, "run", real_run)

    def stopped(*_: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(executor, "_install", stopped)
    assert main(["install", "--venv", str(venv), "--plan", str(plan), "--no-verify"]) == 130
    said = capsys.readouterr().err
    assert "interrupted: the install was undone: removed" in said
    assert "is as it was" not in said
    assert not (tmp_path / "nest").exists()


def test_a_link_before_dot_dot_keeps_the_path_as_given(tmp_path: Path) -> None:
    """review: with a linked folder before '..' and nothing at the short spelling yet, the short
    spelling named another folder (a rollback could then pick another venv)."""
    from torchsmith.probe.python_env import tidy_path  # noqa: PLC0415

    (tmp_path / "real").mkdir()
    (tmp_path / "linkdir").symlink_to(tmp_path / "real")
    linked = tmp_path / "linkdir" / ".." / "v1" / "bin" / "python"
    assert tidy_path(linked) == linked
    assert tidy_path(tmp_path / "sd" / ".." / "v1") == tmp_path / "v1"
    assert tidy_path(tmp_path / "v1" / "sub" / "..") == tmp_path / "v1"


@pytest.mark.parametrize(
    ("wheel", "platform", "fits"),
    [("manylinux_2_28_x86_64", "linux-x86_64", True),
     ("manylinux_2_28_aarch64", "linux-x86_64", False), ("linux_x86_64", "linux-x86_64", True),
     ("win_amd64", "win-amd64", True),
     ("win_amd64", "linux-x86_64", False), ("macosx_11_0_arm64", "macosx-11.0-arm64", True),
     ("macosx_11_0_arm64", "macosx-11.0-x86_64", False), ("any", "win-amd64", True),
     ("manylinux_2_17_x86_64.manylinux2014_x86_64", "linux-x86_64", True)],
)  # fmt: skip
def test_a_wheel_fits_a_platform_by_its_tags(wheel: str, platform: str, fits: bool) -> None:
    from torchsmith.install.indexes import _platform_fits  # noqa: PLC0415

    assert _platform_fits(wheel, platform) is fits
