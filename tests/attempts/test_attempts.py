"""attempts list/show/diff/export on rows written by real ledger calls and by real builds."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

import pytest

from tests.build.configs import NVCC, cmake_config, copy_project
from torchsmith.build.runner import run_build
from torchsmith.cli import main
from torchsmith.ledger import Ledger
from torchsmith.render.attempts import diff_attempts, export_html, export_md
from torchsmith.util.serialize import to_jsonable


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    path = tmp_path / "ledger.sqlite3"
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(path))
    return Ledger(path)


OOM = {"title": "nvcc was killed: out of memory", "rule": "oom-killed", "category": "oom"}
PROBE = {"gpus": [{"name": "NVIDIA H200", "compute_capability": "9.0"}]}


def record(
    ledger: Ledger,
    tree: Path,
    archs: tuple[str, ...],
    env: dict[str, str],
    status: Literal["succeeded", "failed"],
    diagnoses: Sequence[dict[str, str]] = (),
) -> int:
    config = cmake_config(tree, archs, env=env)
    attempt = ledger.start(
        "build",
        config=to_jsonable(config),
        command=["torchsmith", "build", str(tree)],
        tree=tree,
        git_commit="0123456789abcdef",
        git_dirty=False,
        project_kind="cmake",
        probe=PROBE,
        tools={"nvcc": "13.0", "cmake": "3.25.1"},
    )
    ledger.finish(
        attempt,
        status=status,
        exit_code=0 if status == "succeeded" else 1,
        diagnoses=diagnoses,
        archs=["sm_" + a.replace(".", "") for a in archs] if status == "succeeded" else [],
    )
    return attempt


@pytest.fixture
def three(ledger: Ledger, tmp_path: Path) -> list[int]:
    tree = tmp_path / "proj"
    tree.mkdir()
    return [
        record(ledger, tree, ("8.0",), {"USE_CUDA": "1", "MAX_JOBS": "2"}, "failed", [OOM]),
        record(ledger, tree, ("8.6",), {"USE_CUDA": "1", "MAX_JOBS": "2"}, "failed", [OOM]),
        record(ledger, tree, ("8.6",), {"USE_CUDA": "0", "MAX_JOBS": "2"}, "succeeded"),
    ]


def test_diff_names_exactly_the_arch_change(ledger: Ledger, three: list[int]) -> None:
    d = diff_attempts(ledger.get(three[0]), ledger.get(three[1]))
    assert [c.key for c in d.changes] == [
        "arch_list",
        "cmake.CMAKE_CUDA_ARCHITECTURES",
        "step.configure",
    ]
    assert (d.changes[0].a, d.changes[0].b) == ("8.0", "8.6")
    assert [c.key for c in d.outcome] == []  # both failed the same way


def test_diff_names_exactly_the_use_change(ledger: Ledger, three: list[int]) -> None:
    d = diff_attempts(ledger.get(three[1]), ledger.get(three[2]))
    assert [(c.key, c.a, c.b) for c in d.changes] == [("env.USE_CUDA", "1", "0")]
    assert {c.key for c in d.outcome} == {
        "outcome.status",
        "outcome.exit_code",
        "outcome.diagnosis",
        "outcome.archs",
    }


def test_cli_list_show_diff_json(three: list[int], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attempts", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["schema"] == "torchsmith/attempts"
    assert [a["id"] for a in listed["data"]] == three[::-1]
    assert main(["attempts", "show", str(three[0])]) == 0
    shown = capsys.readouterr().out
    assert "env.USE_CUDA" in shown
    assert "nvcc was killed" in shown
    assert main(["attempts", "diff", str(three[1]), str(three[2]), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert [c["key"] for c in data["changes"]] == ["env.USE_CUDA"]
    assert main(["attempts", "diff", str(three[1]), str(three[2])]) == 0
    assert "env.USE_CUDA" in capsys.readouterr().out


def test_export_markdown_reads_as_a_page(
    ledger: Ledger, three: list[int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md = export_md(ledger.list())
    assert md.index("## Attempt 1") < md.index("## Attempt 2") < md.index("## Patterns")
    assert "```bash\nexport MAX_JOBS=2\nexport USE_CUDA=1\n" in md
    assert "- `arch_list: '8.0' -> '8.6'`" in md
    assert "- `env.USE_CUDA: '1' -> '0'`" in md
    assert "after changing env.USE_CUDA, failed -> succeeded" in md
    assert "never set to the GPU's own arch (9.0)" in md
    assert "fewer parallel jobs (always 2)" in md
    page = export_html(ledger.list())
    assert page.count("<h2>") == 5
    assert '<pre><code class="language-bash">' in page
    assert "<li><code>env.USE_CUDA: '1' -&gt; '0'</code></li>" in page
    out = tmp_path / "log.html"
    assert main(["attempts", "export", "--format", "html", "-o", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    capsys.readouterr()
    assert main(["attempts", "export", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["never_tried"][0].startswith("the arch list was never set")


def test_missing_attempt_one_line(three: list[int], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attempts", "show", "999"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("error: no attempt 999")
    assert err[1].startswith("tip:")


def test_corrupt_ledger_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.sqlite3"
    bad.write_bytes(b"this is not a database" * 100)
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(bad))
    assert main(["attempts", "list"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: the ledger")
    assert "Traceback" not in err
    assert bad.read_bytes() == b"this is not a database" * 100


@pytest.mark.integration
@pytest.mark.slow
def test_diff_of_two_real_builds(ledger: Ledger, tmp_path: Path) -> None:
    if not Path(NVCC).exists() or not shutil.which("cmake") or not shutil.which("ninja"):
        pytest.skip("nvcc 13.0, cmake and ninja are needed")
    tree = copy_project("cuda_cmake", tmp_path)
    first = cmake_config(tree, ("8.0",))
    second = cmake_config(tree, ("9.0",))
    second = replace(second, cmake_args=(*second.cmake_args, "-DTINYKERN_FAST_MATH=ON"))
    configure = second.steps[0]
    second = replace(
        second,
        steps=(
            replace(configure, argv=(*configure.argv, "-DTINYKERN_FAST_MATH=ON")),
            *second.steps[1:],
        ),
    )
    a = run_build(first, ledger=ledger, log_dir=tmp_path / "logs")
    b = run_build(second, ledger=ledger, log_dir=tmp_path / "logs")
    assert a.status == b.status == "succeeded"
    assert a.attempt_id is not None
    assert b.attempt_id is not None
    d = diff_attempts(ledger.get(a.attempt_id), ledger.get(b.attempt_id))
    assert [c.key for c in d.changes] == [
        "arch_list",
        "cmake.CMAKE_CUDA_ARCHITECTURES",
        "cmake.TINYKERN_FAST_MATH",
        "step.configure",
    ]
    # CMake's "80" is real and virtual: the PTX is in the result too
    assert [(c.key, c.a, c.b) for c in d.outcome] == [
        ("outcome.archs", "sm_80;compute_80", "sm_90;compute_90")
    ]
