"""How a build that fails (or never starts) is told and recorded: the arch check fails the attempt,
the explanation agrees with what the build knows, preflight's refusals are attempts too, and the
fixes name the tree, quoted for the shell they are copied into."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.build.configs import NVCC, cmake_config, copy_project, python_config
from torchsmith.build.config import make_config
from torchsmith.build.detect import detect_project
from torchsmith.build.diagnose import CPU_TORCH_RULE, NO_TOOLKIT_RULES, known_facts, reconcile
from torchsmith.build.model import Profile, Step
from torchsmith.build.options import BuildOptions
from torchsmith.build.preflight import clean_fix, cpu_torch_fix, preflight
from torchsmith.build.runner import (
    Artifact,
    BuildResult,
    StepResult,
    check_archs,
    install_outcome,
    record_blocked,
    run_build,
)
from torchsmith.build.scripts import emit_script
from torchsmith.build.tree import read_tree
from torchsmith.cli import main
from torchsmith.explain import explain_files, load_rules
from torchsmith.knowledge import Knowledge
from torchsmith.ledger import Ledger
from torchsmith.probe.model import Finding, Probe, TorchInfo

from .conftest import PROJECTS

FIXTURES = Path(__file__).parent / "fixtures"
FORCE_CUDA_LOG = FIXTURES / "scatter-like-force-cuda-cpu-torch.log"
SCATTER = detect_project(PROJECTS / "scatter_like")
CMAKE = detect_project(PROJECTS / "cuda_cmake")
TORCH_VENV = os.environ.get("TORCHSMITH_TEST_TORCH_VENV", "")
TORCH_PY = str(Path(TORCH_VENV) / "bin" / "python") if TORCH_VENV else ""
needs_torch = pytest.mark.skipif(
    not TORCH_PY or not Path(TORCH_PY).exists(), reason="needs $TORCHSMITH_TEST_TORCH_VENV"
)
needs_cuda = pytest.mark.skipif(
    not Path(NVCC).exists() or shutil.which("cmake") is None or shutil.which("ninja") is None,
    reason="needs nvcc 13.0, cmake and ninja",
)


def cpu_torch(probe: Probe) -> Probe:
    return dataclasses.replace(probe, torch=TorchInfo(version="2.13.0+cpu", location="/x"))


# -- the explanation of a failure agrees with the build (audit bug 5) ---------------------------


def test_cuda_home_unset_with_a_cpu_torch_blames_the_cpu_torch(h200: Probe, kb: Knowledge) -> None:
    """Audit: the build exported CUDA_HOME=/usr/local/cuda-13.0, failed with "CUDA_HOME
    environment variable is not set", and the diagnosis said to export CUDA_HOME=.../cuda-12.8:
    the CPU torch's cpp_extension ignores CUDA_HOME, as preflight had said."""
    probe = cpu_torch(h200)
    opts = BuildOptions(targets=("8.0",), sets=(("FORCE_CUDA", "1"),))
    config = make_config(SCATTER, probe, kb, opts)
    found = preflight(config, read_tree(SCATTER, config), probe, kb)
    assert "cpu-only-torch" in [f.category for f in found]
    said = explain_files([str(FORCE_CUDA_LOG)]).diagnoses
    assert said[0].rule == "toolkit.cuda-home-not-set"  # what explain alone says of the log
    assert "cuda-12.8" in said[0].fix

    (top, *_) = reconcile(said, known_facts(config, probe, found))
    assert (top.category, top.rule) == ("cpu-only-torch", CPU_TORCH_RULE)
    assert top.evidence == said[0].evidence
    assert "toolkit.cuda-home-not-set" in top.related
    assert "torch 2.13.0+cpu is a CPU build" in top.title
    assert "CUDA_HOME=/usr/local/cuda-13.0 this build exported never counted" in top.explanation
    assert "Preflight said so before the build (cpu-only-torch)" in top.explanation
    assert "FORCE_CUDA=1" in top.explanation
    assert "cuda-12.8" not in top.fix
    assert "install a CUDA build of torch into /opt/torch/.venv/bin/python3" in top.fix
    assert "torchsmith plan --python /opt/torch/.venv/bin/python3 --cc 8.0" in top.fix
    assert "CUDA 13.x" in top.fix
    assert "drop FORCE_CUDA=1" in top.fix


def test_cuda_home_unset_with_a_cuda_torch_names_this_builds_toolkit(
    h200: Probe, kb: Knowledge
) -> None:
    """A CUDA torch that still says CUDA_HOME is unset: the fix names the toolkit this build
    exports, never the rule's example path; with no toolkit, those this machine has."""
    config = make_config(SCATTER, h200, kb, BuildOptions(targets=("9.0",)))
    said = explain_files([str(FORCE_CUDA_LOG)]).diagnoses
    (top, *_) = reconcile(said, known_facts(config, h200))
    assert top.rule == "toolkit.cuda-home-not-set"
    assert "cuda-12.8" not in top.fix
    assert "exports CUDA_HOME=/usr/local/cuda-13.0 (CUDA 13.0)" in top.fix
    assert "/usr/local/cuda-13.0/bin/nvcc --version" in top.fix

    without = dataclasses.replace(config, cuda_home=None, cuda_version=None)
    (top, *_) = reconcile(said, known_facts(without, h200))
    assert "this machine has /usr/local/cuda-13.0 (CUDA 13.0)" in top.fix
    (top, *_) = reconcile(said, known_facts(without, dataclasses.replace(h200, cuda_toolkits=())))
    assert "this machine has no CUDA toolkit with nvcc" in top.fix


def test_the_rules_reconcile_rewrites_exist() -> None:
    ids = {r.id for r in load_rules()}
    assert ids >= NO_TOOLKIT_RULES


@pytest.mark.integration
@needs_torch
def test_a_real_force_cuda_build_against_a_cpu_torch_is_explained(
    tmp_path: Path, kb: Knowledge
) -> None:
    """The real failure: torch 2.13.0+cpu's CUDAExtension with CUDA_HOME exported, through
    run_build with the preflight finding the CLI hands it."""
    tree = copy_project("scatter_like", tmp_path)
    env = {"FORCE_CUDA": "1", "CUDA_HOME": "/usr/local/cuda-13.0", "TORCH_CUDA_ARCH_LIST": "8.0"}
    config = python_config(tree, TORCH_PY, ("setup.py", "build_ext", "--inplace"), env)
    config = dataclasses.replace(
        config, arch_list=("8.0",), cuda_home="/usr/local/cuda-13.0", cuda_version="13.0"
    )
    found = (Finding("cpu-only-torch", "error", "the target torch is a CPU build", "x"),)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    result = run_build(config, ledger=ledger, log_dir=tmp_path / "logs", preflight=found)
    assert result.status == "failed"
    assert "CUDA_HOME environment variable is not set" in Path(result.log_path or "").read_text()
    top = result.diagnoses[0]
    assert top.rule == CPU_TORCH_RULE
    assert "cuda-12.8" not in top.fix
    stored = ledger.get(result.attempt_id or -1).diagnoses[0]
    assert stored["rule"] == CPU_TORCH_RULE  # the ledger keeps the same explanation


# -- a failed arch check is a failed attempt (audit bug 4) --------------------------------------


@pytest.mark.integration
@needs_cuda
def test_a_build_without_the_target_sass_is_a_failed_attempt(tmp_path: Path) -> None:
    """Audit: the arch check failed (exit 1) and the ledger said succeeded, exit status 0."""
    tree = copy_project("tinycuda", tmp_path)
    config = dataclasses.replace(cmake_config(tree, ("9.0",)), arch_list=("8.0",))
    ledger = Ledger(tmp_path / "ledger.sqlite")
    result = run_build(config, ledger=ledger, log_dir=tmp_path / "logs")
    assert [s.status for s in result.steps] == ["succeeded", "succeeded"]
    assert result.sass == ("sm_90",)
    assert (result.status, result.exit_code, result.ok) == ("failed", 1, False)
    assert result.reason is not None
    assert result.reason.startswith("the arch check failed")
    assert "sm_80" in result.reason
    attempt = ledger.get(result.attempt_id or -1)
    assert (attempt.status, attempt.exit_code) == ("failed", 1)
    assert attempt.result["reason"] == result.reason
    assert attempt.archs == ["sm_90"]


def test_the_arch_check_names_a_cpu_torch_as_the_cause(h200: Probe, kb: Knowledge) -> None:
    """Audit: with a CPU torch (preflight said so, the build was forced) the arch check said to
    rebuild with --clean and check TORCH_CUDA_ARCH_LIST."""
    probe = cpu_torch(h200)
    config = make_config(SCATTER, probe, kb, BuildOptions(targets=("8.0",)))
    known = known_facts(config, probe)
    assert known.cpu_torch == "torch 2.13.0+cpu"
    assert "no CUDA code at all" in check_archs(("8.0",), (), (), has_outputs=True)[0].fix
    (f,) = check_archs(
        ("8.0",), (), (), has_outputs=True, cpu_fix=cpu_torch_fix(config, known.cpu_torch)
    )
    assert "--clean" not in f.fix
    assert "torch 2.13.0+cpu compiles no CUDA code" in f.fix
    assert "install a CUDA build of torch into /opt/torch/.venv/bin/python3" in f.fix
    assert known_facts(make_config(CMAKE, probe, kb, BuildOptions()), probe).cpu_torch is None


class _Guard:
    def __init__(self, *, failed: bool, attempt_id: int | None = None, notes: tuple[str, ...] = ()):
        self.failed = failed
        self.attempt_id = attempt_id
        self.notes = list(notes)


def _installing(tree: Path, status: str = "failed", reason: str = "arch") -> BuildResult:
    return BuildResult(
        project=str(tree), project_kind="cpp_extension", status=status,  # type: ignore[arg-type]
        exit_code=1, duration_s=1.0, peak_rss_bytes=0, log_path="x.log", attempt_id=7,
        steps=(StepResult("build", "b", "succeeded", 0, 1.0, 0),), targets=("8.0",),
        artifacts=(Artifact(str(tree / "dist" / "pkg-1.0-py3-none-any.whl"), (), ()),),
        reason=reason,
    )  # fmt: skip


def test_what_a_failed_build_had_installed_is_said_to_be_removed(tmp_path: Path) -> None:
    """Audit: a build whose arch check failed had its install put back without a word."""
    tree = tmp_path / "my tree"
    steps = (Step("build", ("py", "driver.py", "--install-from", "dist"), str(tree)),)
    config = dataclasses.replace(
        python_config(tree, "/venv/bin/python", (), {}), steps=steps, arch_list=("8.0",)
    )
    config = dataclasses.replace(config, project=dataclasses.replace(config.project, version="1.0"))
    done = install_outcome(_Guard(failed=True), config, _installing(tree))
    assert done.status == "removed"
    assert done.wheel == str(tree / "dist" / "pkg-1.0-py3-none-any.whl")
    assert "my tree 1.0, which this build had installed into /venv/bin/python" in done.note
    assert "was removed again because its arch check failed" in done.note
    wheel = shlex.quote(str(tree / "dist" / "pkg-1.0-py3-none-any.whl"))
    assert f"/venv/bin/python -m pip install {wheel} installs it as it is" in done.note

    kept = install_outcome(
        _Guard(failed=False, attempt_id=3, notes=("undo #3",)), config, _installing(tree)
    )
    assert (kept.status, kept.install_attempt, kept.note) == ("kept", 3, "undo #3")
    left = install_outcome(
        _Guard(failed=True, notes=("not all put back",)), config, _installing(tree)
    )
    assert (left.status, left.note) == ("restore-incomplete", "not all put back")
    nothing = dataclasses.replace(
        _installing(tree), steps=(StepResult("build", "b", "failed", 2, 1.0, 0),)
    )
    assert install_outcome(_Guard(failed=True), config, nothing).status == "unchanged"


# -- preflight's refusals are attempts (audit bug 12) -------------------------------------------


def test_a_blocked_build_is_recorded(h200: Probe, kb: Knowledge, tmp_path: Path) -> None:
    probe = cpu_torch(h200)
    config = make_config(SCATTER, probe, kb, BuildOptions(targets=("8.0",)))
    found = [
        f for f in preflight(config, read_tree(SCATTER, config), probe, kb) if f.severity == "error"
    ]
    ledger = Ledger(tmp_path / "ledger.sqlite")
    result = record_blocked(config, found, ledger=ledger, command=["torchsmith", "build"])
    assert (result.status, result.exit_code, result.log_path) == ("blocked", 3, None)
    attempt = ledger.get(result.attempt_id or -1)
    assert (attempt.kind, attempt.status, attempt.exit_code) == ("build", "blocked", 3)
    assert attempt.result["status"] == "blocked"
    reason = attempt.result["reason"]
    assert reason.startswith("blocked by preflight, no build step ran: cpu-only-torch")
    assert attempt.config["arch_list"] == ["8.0"]


@pytest.mark.integration
@needs_torch
def test_the_cli_records_a_build_preflight_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Audit: `build torch_scatter --python <CPU torch> --cc 8.0` exited 3 and `attempts list
    --kind build` showed nothing."""
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "ledger.sqlite"))
    tree = copy_project("scatter_like", tmp_path)
    code = main(["build", str(tree), "--python", TORCH_PY, "--cc", "8.0", "--cache", "none"])
    err = capsys.readouterr().err
    assert code == 3
    (attempt,) = Ledger().list(kind="build")
    assert f"(attempt #{attempt.id}: blocked, no build step ran)" in err
    assert (attempt.status, attempt.exit_code, attempt.tree) == ("blocked", 3, str(tree))
    assert "cpu-only-torch" in attempt.result["reason"]
    assert not (tree / "build").exists()
    assert main(["attempts", "list", "--kind", "build", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)["data"]
    assert listed["result"]["status"] == "blocked"


# -- fixes name the tree, quoted (audit, small) -------------------------------------------------


def test_the_stale_cache_fix_names_the_tree_quoted() -> None:
    fix = clean_fix("/work/my trees/proj")
    assert "torchsmith clean --yes '/work/my trees/proj'" in fix


@pytest.mark.integration
@needs_cuda
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_scripts_clean_message_quotes_the_tree(tmp_path: Path) -> None:
    """Audit: `TORCHSMITH_CLEAN=1 bash b.sh` suggested `torchsmith clean /path/with spaces`."""
    tree = copy_project("tinycuda", tmp_path / "with spaces")
    (tree / "build").mkdir()
    script = tmp_path / "b.sh"
    script.write_text(emit_script(cmake_config(tree, ("9.0",)), "bash"))
    done = subprocess.run(
        ["bash", str(script)],
        cwd=tmp_path,
        env={**os.environ, "TORCHSMITH_CLEAN": "1", "TORCHSMITH_LOG": str(tmp_path / "b.log")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    said = done.stdout + done.stderr
    assert "git cannot list" in said  # no git work tree: nothing removed
    suggested = said.split("nothing removed (", 1)[1].split(" removes its build outputs", 1)[0]
    assert shlex.split(suggested) == ["torchsmith", "clean", str(tree)]
    assert (tree / "build").is_dir()


# -- a setup that builds CUDA only when torch sees a GPU (GPU session 18) ------------------------


def test_an_extension_that_reads_force_cuda_gets_it_with_a_cuda_torch(
    h200: Probe, kb: Knowledge
) -> None:
    """On the H200 machine, `CUDA_VISIBLE_DEVICES= torchsmith build scatter_like --cc 9.0`
    built only the CPU part (its setup.py: WITH_CUDA = torch.cuda.is_available() ...) and the
    arch check failed; FORCE_CUDA=1 makes the build not depend on a visible GPU."""
    assert SCATTER.force_cuda_var == "FORCE_CUDA"
    config = make_config(SCATTER, h200, kb, BuildOptions(targets=("9.0",)))
    assert config.env.get("FORCE_CUDA") == "1"
    assert any(c.key == "FORCE_CUDA" and "sees a GPU" in c.reason for c in config.choices)
    # a CPU torch cannot build the CUDA part (preflight says cpu-only-torch): not forced
    assert "FORCE_CUDA" not in make_config(SCATTER, cpu_torch(h200), kb, BuildOptions()).env
    # what the user sets wins
    forced_off = make_config(SCATTER, h200, kb, BuildOptions(sets=(("FORCE_CUDA", "0"),)))
    assert forced_off.env["FORCE_CUDA"] == "0"
    exported = make_config(SCATTER, h200, kb, BuildOptions(inherited=(("FORCE_CUDA", "0"),)))
    assert "FORCE_CUDA" not in exported.env  # the build inherits the user's export as it is
    assert detect_project(PROJECTS / "tinyext").force_cuda_var is None


def test_a_result_without_any_gpu_code_points_at_the_setups_cuda_choice() -> None:
    """The H200 run above: 'found: no GPU code' asked to check TORCH_CUDA_ARCH_LIST, which was
    right; the setup had compiled no CUDA at all."""
    (none,) = check_archs(("9.0",), (), (), has_outputs=True)
    assert "no CUDA code at all" in none.fix
    assert "FORCE_CUDA=1" in none.fix
    other = check_archs(("9.0",), ("sm_80",), (), has_outputs=True)[0]
    assert other.subject == "sm_90"
    assert "TORCH_CUDA_ARCH_LIST" in other.fix


@pytest.mark.parametrize(
    ("targets", "profile", "warned"),
    [(("8.0",), "fast", True), (("8.0",), "portable", False), (("9.0",), "fast", False),
     (("9.0a",), "fast", False), (("10.0",), "fast", True), (("8.0", "12.0"), "fast", True)],
)  # fmt: skip
def test_a_build_this_machines_gpu_cannot_run_is_said(
    h200: Probe, kb: Knowledge, targets: tuple[str, ...], profile: Profile, warned: bool
) -> None:
    """On the H200 machine `build scatter_like --cc 8.0` built sm_80 only, without a word: the
    result cannot run there (SASS runs on its own major only; PTX, --profile portable, JITs)."""
    options = BuildOptions(targets=targets, profile=profile)
    config = make_config(SCATTER, h200, kb, options)
    found = [
        f for f in preflight(config, read_tree(SCATTER, config), h200, kb)
        if f.subject == "gpu 0" and f.category == "arch-not-compiled"
    ]  # fmt: skip
    assert bool(found) is warned
    if found:
        assert found[0].severity == "warning"
        assert "add --cc 9.0" in found[0].fix
