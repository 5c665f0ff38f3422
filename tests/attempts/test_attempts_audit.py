"""Audit of ``attempts``: export patterns and comparisons, show in full, list labels, diff of
different kinds. Every row is written through the real Ledger, as build, clean and install do."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.build.configs import cmake_config
from torchsmith.cli import main
from torchsmith.install.model import InstallOptions
from torchsmith.ledger import Ledger
from torchsmith.plan.model import Recommendation
from torchsmith.render.attempts import export_md, patterns
from torchsmith.util.serialize import to_jsonable


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    path = tmp_path / "ledger.sqlite3"
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(path))
    monkeypatch.setenv("COLUMNS", "80")  # what a pipe gets
    return Ledger(path)


SYNTAX = {"title": "syntax error in kernel.cu", "rule": "syntax"}


def build(
    ledger: Ledger,
    tree: Path,
    *,
    dirty: bool | None,
    status: Literal["succeeded", "failed"],
    jobs: int = 2,
    diagnoses: tuple[dict[str, str], ...] = (),
    archs: tuple[str, ...] = (),
    ptx: tuple[str, ...] = (),
    log: Path | None = None,
) -> int:
    config = dataclasses.replace(cmake_config(tree, ("8.0", "12.0")), jobs=jobs)
    attempt = ledger.start(
        "build",
        config=to_jsonable(config),
        command=["torchsmith", "build", str(tree)],
        tree=tree,
        git_commit="0123456789abcdef",
        git_dirty=dirty,
        project_kind="cmake",
        tools={"nvcc": "13.0"},
        log_path=log,
    )
    ledger.finish(
        attempt,
        status=status,
        exit_code=0 if status == "succeeded" else 1,
        peak_rss_bytes=3 * 2**30,
        diagnoses=diagnoses,
        archs=archs,
        result={"ptx": list(ptx)},
    )
    return attempt


def clean(ledger: Ledger, tree: Path) -> int:
    attempt = ledger.start(
        "clean",
        config={"in_git": True, "entries": [], "bytes": 10},
        command=("torchsmith", "clean", "--yes", str(tree)),
        tree=tree,
    )
    ledger.finish(attempt, status="succeeded", result={"reason": "removed 1 entry (10 B)"})
    return attempt


def install(ledger: Ledger, python: str, config: dict[str, Any], result: dict[str, Any]) -> int:
    attempt = ledger.start("install", config=config, command=("install",), tree=python)
    status = "failed" if result.get("error") else "succeeded"
    ledger.finish(attempt, status=status, exit_code=4 if result.get("error") else 0, result=result)
    return attempt


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    path = tmp_path / "a-rather-long-folder-name-for-a-project" / "with" / "nested" / "kernels"
    path.mkdir(parents=True)
    return path


def fixed_by_source(ledger: Ledger, tree: Path) -> list[int]:
    """ok, then local edits break it (syntax error), then a clean tree with new flags builds."""
    return [
        build(ledger, tree, dirty=False, status="succeeded", archs=("sm_80",)),
        build(ledger, tree, dirty=True, status="failed", diagnoses=(SYNTAX,)),
        build(ledger, tree, dirty=False, status="succeeded", jobs=8, archs=("sm_80",)),
    ]


def test_patterns_name_the_source_change(ledger: Ledger, tree: Path) -> None:
    ids = fixed_by_source(ledger, tree)
    seen, _ = patterns(ledger.list())
    assert seen == [
        f"attempt {ids[1]} (from {ids[0]}): after changing git_dirty no -> yes, "
        "succeeded -> failed (syntax error in kernel.cu)",
        f"attempt {ids[2]} (from {ids[1]}): after changing jobs, git_dirty yes -> no, "
        "failed -> succeeded",
    ]


def test_export_compares_only_the_same_tree(
    ledger: Ledger, tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = fixed_by_source(ledger, tree)
    other = tmp_path / "other"
    other.mkdir()
    elsewhere = build(ledger, other, dirty=None, status="failed", diagnoses=(SYNTAX,))
    again = build(ledger, tree, dirty=False, status="succeeded", archs=("sm_80",))
    assert main(["attempts", "export", "--format", "md"]) == 0
    md = capsys.readouterr().out
    section = md[md.index(f"## Attempt {elsewhere}") : md.index(f"## Attempt {again}")]
    assert "Changed from" not in section  # the first attempt on its tree
    assert f"**Changed from attempt {ids[2]}:**" in md[md.index(f"## Attempt {again}") :]
    assert f"attempt {elsewhere} " not in md[md.index("## Patterns") :]


EXPORT = (sys.executable, "-m", "torchsmith", "attempts", "export")


def test_export_of_no_attempts_says_so(ledger: Ledger, tree: Path) -> None:
    fixed_by_source(ledger, tree)
    for fmt in ("md", "html"):
        out = subprocess.run(
            [*EXPORT, "--format", fmt, "--tree", "/nonexistent"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "No build attempts on the tree" in out
        assert "/nonexistent" in out
        assert "only one attempt" not in out
        assert "Never tried" not in out


def test_build_advice_only_for_builds(
    ledger: Ledger, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixed_by_source(ledger, tree)
    clean(ledger, tree)
    clean(ledger, tree)
    assert main(["attempts", "export", "--kind", "clean"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("# Clean log")
    assert "compiler cache" not in md
    assert "- nothing obvious" in md
    assert main(["attempts", "export", "--kind", "clean", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["data"]["never_tried"] == []
    assert "compiler cache" in export_md(ledger.list(kind="build"), kind="build")


def flat(out: str) -> str:
    """The output with every space and line break gone: a wrapped value reads whole again."""
    return re.sub(r"\s+", "", out)


def test_show_in_full(ledger: Ledger, tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tree / "build" / "logs" / "build-kernels-20250101-000000-123456.log"
    attempt = build(
        ledger,
        tree,
        dirty=False,
        status="succeeded",
        archs=("sm_120", "sm_80"),
        ptx=("compute_120",),
        log=log,
    )
    assert main(["attempts", "show", str(attempt)]) == 0
    out = capsys.readouterr().out
    row = ledger.get(attempt)
    for fact in ("started", "finished", "took", "peak memory", "host", "pid"):
        assert re.search(rf"^ {fact} ", out, re.M), fact
    assert row.started_at in out
    assert "3.0 GiB" in out
    assert "sm_80;sm_120;compute_120" in out
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert str(log) in flat(out)
    configure = row.config["steps"][0]["argv"]
    assert flat(" ".join(configure).replace(";", "")) in flat(out).replace(";", "").replace("'", "")


def test_show_a_died_attempt(
    ledger: Ledger, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()
    attempt = ledger.start("build", config={}, tree=tree, pid=gone.pid)
    assert main(["attempts", "show", str(attempt)]) == 0
    out = capsys.readouterr().out
    assert f"died: process {gone.pid}" in out
    assert "never recorded" in out


def test_show_a_failed_install(ledger: Ledger, capsys: pytest.CaptureFixture[str]) -> None:
    before = {"numpy": "2.1.0", "torch": "2.5.0"}
    attempt = install(
        ledger,
        "/envs/a/bin/python",
        {"options": {}, "recommendation": {}},
        {
            "python": "/envs/a/bin/python",
            "status": "rolled-back",
            "before": before,
            "after": {"numpy": "2.2.0"},
            "snapshot": "/cache/torchsmith/snapshots/20250101-1",
            "origins": {"numpy": "https://pypi.org/simple"},
            "error": "uv failed: no solution for torch==9.9",
        },
    )
    assert main(["attempts", "show", str(attempt)]) == 0
    out = capsys.readouterr().out
    assert "uv failed: no solution for torch==9.9" in out
    assert "numpy: 2.1.0 -> 2.2.0" in out
    assert "torch: removed (was 2.5.0)" in out
    assert "/cache/torchsmith/snapshots/20250101-1" in out


def test_list_labels_rollbacks_and_gives_install_errors(
    ledger: Ledger, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    python = "/envs/a/bin/python"
    result = {"python": python, "before": {}, "after": {"torch": "2.6.0"}, "snapshot": "/s/1"}
    done = install(ledger, python, {"options": {}}, {**result, "error": None})
    failed = install(ledger, python, {"options": {}}, {**result, "error": "no index answered"})
    undo = install(ledger, python, {"rollback_of": done}, {**result, "error": None})
    build(ledger, tree, dirty=False, status="succeeded", archs=("sm_80",))
    assert main(["attempts", "list"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    rows = {int(line.split()[0]): line for line in out.splitlines()[1:] if line[:4].strip()}
    assert "no index" in rows[failed]
    assert rows[undo].split()[1:3] == ["rollback", f"#{done}"]
    assert str(tree) in flat(out)
    assert ledger.get(done).started_at[:19] in out


def test_diff_of_different_kinds(
    ledger: Ledger, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = build(ledger, tree, dirty=False, status="succeeded", archs=("sm_80",))
    cleaned = clean(ledger, tree)
    assert main(["attempts", "diff", str(made), str(cleaned)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(
        f"attempt {made} is a build and attempt {cleaned} a clean"
    )
    assert "(unset)" not in out
    assert f"attempt {made}: succeeded" in out
    assert f"attempt {cleaned}: succeeded removed 1 entry (10 B)" in out
    assert main(["attempts", "diff", str(made), str(cleaned), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["same_kind"] is False
    assert (data["a_kind"], data["b_kind"]) == ("build", "clean")
    assert data["changes"] == data["outcome"] == []


def test_show_and_diff_give_an_installs_options(
    ledger: Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    # attempts show printed nothing of what an install was asked to do
    python = "/envs/a/bin/python"
    rec = Recommendation(
        "wheel", "2.13.0", "cu130", "https://download.pytorch.org/whl/cu130",
        commands={"pip": "pip install torch"}, reasons=("the GPU is 12.0",),
    )  # fmt: skip
    result = {"python": python, "before": {}, "after": {"torch": "2.13.0+cu130"}, "error": None}
    asked = InstallOptions(companions=("torchvision",))
    first = install(ledger, python, to_jsonable({"options": asked, "recommendation": rec}), result)
    second = install(
        ledger, python,
        to_jsonable({"options": InstallOptions(installer="pip"), "recommendation": rec}),
        result,
    )  # fmt: skip
    assert main(["attempts", "show", str(first)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"option\.companions\s+torchvision", out)
    assert re.search(r"plan\.index_url\s+https://download.pytorch.org/whl/cu130", out)
    assert "pip install torch" not in out  # the plan's commands are not options
    assert main(["attempts", "diff", str(first), str(second), "--json"]) == 0
    changes = {c["key"] for c in json.loads(capsys.readouterr().out)["data"]["changes"]}
    assert changes == {"option.companions", "option.installer"}


LIST_COLUMNS = ("id", "kind", "started", "status", "took", "tree", "why")


@pytest.mark.parametrize("width", [20, 40, 60, 80, 120])
def test_list_keeps_the_id_and_whole_headers_at_any_width(
    ledger: Ledger,
    tree: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    width: int,
) -> None:
    # audit: at 40 columns the list showed kind, started and status ("inst…", "succee…") but no
    # id, which show, diff and --rollback need; at 60 the headers broke ("tre"/"e", "wh"/"y")
    python = "/envs/a/bin/python"
    result = {"python": python, "before": {}, "after": {"torch": "2.6.0"}, "error": None}
    done = install(ledger, python, {"options": {}}, result)
    undo = install(ledger, python, {"rollback_of": done}, result)
    made = build(ledger, tree, dirty=True, status="failed", diagnoses=(SYNTAX,))
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["attempts", "list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "…" not in out
    assert max(len(line) for line in lines) <= width
    header = lines[0].split()
    assert header[0] == "id"
    assert set(header) <= set(LIST_COLUMNS)  # every header whole, on its line
    ids = [int(line.split()[0]) for line in lines[1:] if line[:5].strip().isdigit()]
    assert ids == [made, undo, done]
    hidden = [name for name in LIST_COLUMNS if name not in header]
    if hidden:
        assert f"not shown at this width: {', '.join(hidden)}" in " ".join(
            line.strip() for line in lines
        )
    if width >= 60:
        assert {"kind", "started", "status"} <= set(header)


def test_diff_of_an_attempt_with_itself_is_one_sentence(
    ledger: Ledger, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # audit: "no difference" was followed by an empty table header and both outcomes
    made = build(ledger, tree, dirty=False, status="succeeded", archs=("sm_80",))
    assert main(["attempts", "diff", str(made), str(made)]) == 0
    out = capsys.readouterr().out
    assert out == f"attempt {made} compared with itself: no difference (succeeded)\n"
    again = build(ledger, tree, dirty=False, status="succeeded", archs=("sm_80",))
    assert main(["attempts", "diff", str(made), str(again)]) == 0
    out = capsys.readouterr().out
    assert "setting" not in out
    assert len(out.splitlines()) == 1
    assert out.startswith("no difference in configuration, inputs, tools or outcome")
