"""Clean on real git trees: names that are not UTF-8 reach the ledger, a tree inside a folder git
ignores, and a kept-list that says one true thing per path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.attempts.test_clean import git
from torchsmith.build.clean import execute_clean, plan_clean
from torchsmith.cli import main
from torchsmith.ledger import Ledger

posix_names = pytest.mark.skipif(os.name == "nt", reason="POSIX file names are bytes")
BAD = os.fsdecode(b"bad\xffname.so")  # what os.listdir and git (decoded as clean does) give


def repo(tree: Path, gitignore: str) -> Path:
    """A committed repository: setup.py and the .gitignore, with setuptools' output in build/."""
    tree.mkdir(parents=True)
    (tree / ".gitignore").write_text(gitignore)
    (tree / "setup.py").write_text("x\n")
    git(tree, "init", "-q")
    git(tree, "add", ".")
    git(tree, "commit", "-qm", "init")
    (tree / "build" / "temp.x").mkdir(parents=True)
    (tree / "build" / "temp.x" / "a.o").write_text("o\n")
    return tree


# -- a name that is not UTF-8 -------------------------------------------------------------------
@posix_names
def test_a_name_that_is_not_utf8_is_cleaned_and_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the ledger got the surrogate-escaped name and SQLite refused it: exit 70, nothing removed
    tree = repo(tmp_path / "g", "build/\n*.so\n")
    (tree / BAD).write_text("y\n")
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "ledger.sqlite"))
    assert main(["clean", str(tree), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["data"]["plan"]["entries"]
    assert {e["path"] for e in listed} == {BAD, "build"}
    assert main(["clean", str(tree), "--yes", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)["data"]
    assert sorted(done["result"]["removed"]) == sorted([BAD, "build"])
    assert sorted(p.name for p in tree.iterdir()) == [".git", ".gitignore", "setup.py"]
    (recorded,) = Ledger().list(kind="clean")
    assert recorded.status == "succeeded"
    assert sorted(recorded.result["removed"]) == sorted([BAD, "build"])  # the exact names
    assert BAD in {e["path"] for e in recorded.config["entries"]}


def test_the_ledger_stores_any_text_as_valid_utf8(tmp_path: Path) -> None:
    # JSON columns (command, config, result, archs) keep the exact text; the plain ones (tree,
    # log path) write a byte os.fsdecode could not decode as backslashreplace writes it
    ledger = Ledger(tmp_path / "ledger.sqlite")
    tree = os.fsdecode(b"/src/t\xe9st")
    attempt = ledger.start(
        "build",
        config={"entries": [BAD], os.fsdecode(b"k\xff"): "\ud800"},
        command=("torchsmith", "build", tree),
        tree=tree,
        log_path=Path(tree) / "build.log",
    )
    ledger.update_result(attempt, {"snapshot": BAD})
    done = ledger.finish(attempt, status="succeeded", result={"removed": [BAD]}, archs=[BAD])
    assert done.tree == "/src/t\\xe9st"
    assert done.log_path == "/src/t\\xe9st/build.log"
    assert done.command[-1] == tree
    assert done.config == {"entries": [BAD], os.fsdecode(b"k\xff"): "\ud800"}
    assert done.result == {"removed": [BAD]}
    assert done.archs == [BAD]
    assert "unreadable_columns" not in done.result
    found = ledger.latest(kind="build", tree=tree)  # found by the name it was started with
    assert found is not None
    assert found.id == attempt
    assert ledger.get(attempt).config["entries"] == [BAD]


# -- a tree inside a folder git ignores -----------------------------------------------------------
def test_a_folder_inside_an_ignored_build_folder_is_cleaned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # git ls-files fails there ("directory entry not superset of prefix"): exit 4
    tree = repo(tmp_path / "g", "build/\n")
    inner = tree / "build" / "temp.x"
    (inner / "deep").mkdir()
    (inner / "deep" / "b.o").write_text("o\n")
    assert main(["clean", str(inner), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["data"]["plan"]
    assert {e["path"] for e in plan["entries"]} == {"a.o", "deep"}
    assert all(
        "in build, ignored by git, a build directory" in e["reason"] for e in plan["entries"]
    )
    result = execute_clean(plan_clean(inner), confirmed=True)
    assert result.ok
    assert inner.is_dir()  # the tree itself stays
    assert list(inner.iterdir()) == []
    assert (tree / "setup.py").read_text() == "x\n"


def test_the_ignored_build_folder_itself_is_emptied(tmp_path: Path) -> None:
    # it was kept whole as "the tree itself": git lists it as ./ from inside
    tree = repo(tmp_path / "g", "build/\n")
    plan = plan_clean(tree / "build")
    assert [(e.path, e.kind) for e in plan.entries] == [("temp.x", "dir")]
    assert plan.kept == ()


def test_inside_an_ignored_folder_that_is_not_build_output_all_stays(tmp_path: Path) -> None:
    # a clean of the whole tree keeps data/: one of its folders keeps everything too
    tree = repo(tmp_path / "g", "build/\ndata/\n")
    (tree / "data" / "run1").mkdir(parents=True)
    (tree / "data" / "run1" / "mesh.o").write_text("data named like an object file\n")
    (tree / "data" / "run1" / "train.csv").write_text("1,2\n")
    assert "data" in {k.path for k in plan_clean(tree).kept}
    plan = plan_clean(tree / "data" / "run1")
    assert plan.entries == ()
    assert [(k.path, k.reason) for k in plan.kept] == [
        (".", "in data, ignored by git, but not a known build output: may be data")
    ]


def test_inside_an_ignored_folder_of_an_untracked_folder_all_stays(tmp_path: Path) -> None:
    # a clean of the whole tree keeps the untracked folder whole, with what git ignores in it
    tree = repo(tmp_path / "g", "build/\n")
    sub = tree / "newpkg" / "build" / "temp.y"
    sub.mkdir(parents=True)
    (sub / "c.o").write_text("o\n")
    (tree / "newpkg" / "module.py").write_text("# not added yet\n")
    assert "newpkg/build" not in {e.path for e in plan_clean(tree).entries}
    plan = plan_clean(sub)
    assert plan.entries == ()
    assert [k.reason for k in plan.kept] == ["in an untracked folder (newpkg), kept whole"]


def test_inside_an_ignored_folder_holding_tracked_files(tmp_path: Path) -> None:
    # git goes into build/ (it holds a tracked file): build/temp.x is the ignored folder
    tree = repo(tmp_path / "g", "build/\n")
    (tree / "build" / "tracked.txt").write_text("mine\n")
    git(tree, "add", "-f", "build/tracked.txt")
    git(tree, "commit", "-qm", "tracked in build")
    (tree / "build" / "temp.x" / "sub").mkdir()
    (tree / "build" / "temp.x" / "sub" / "b.o").write_text("o\n")
    plan = plan_clean(tree / "build" / "temp.x" / "sub")
    assert [e.path for e in plan.entries] == ["b.o"]
    assert plan.entries[0].reason.startswith("in build/temp.x, ignored by git")
    execute_clean(plan, confirmed=True)
    assert (tree / "build" / "tracked.txt").read_text() == "mine\n"
    assert (tree / "build" / "temp.x" / "a.o").exists()


def test_a_folder_named_like_a_glob_inside_an_ignored_folder(tmp_path: Path) -> None:
    tree = repo(tmp_path / "g", "build/\n")
    odd = tree / "build" / "temp[1]*"
    odd.mkdir()
    (odd / "c.o").write_text("o\n")
    assert [e.path for e in plan_clean(odd).entries] == ["c.o"]


# -- the kept list ---------------------------------------------------------------------------------
def test_each_kept_path_is_told_once_and_truly(tmp_path: Path) -> None:
    # src was "ignored by git" and "untracked and not ignored: may be a new source file" at
    # once, src/a.o "not a known build output", and an empty folder "may be a new source file"
    tree = repo(tmp_path / "g", "build/\n*.o\n")
    (tree / "src").mkdir()
    (tree / "src" / "a.o").write_text("o\n")
    (tree / "empty" / "inner").mkdir(parents=True)
    (tree / "newpkg").mkdir()
    (tree / "newpkg" / "mod.py").write_text("# new\n")
    (tree / "newpkg" / "mod.o").write_text("o\n")
    (tree / "notes.txt").write_text("new\n")
    plan = plan_clean(tree)
    kept = [(k.path, k.reason) for k in plan.kept]
    assert len({p for p, _ in kept}) == len(kept), kept
    assert dict(kept) == {
        "src": "an untracked folder of ignored files only, kept whole",
        "src/a.o": "in an untracked folder (src), kept whole",
        "newpkg": "untracked and not ignored: may be a new source file",
        "newpkg/mod.o": "in an untracked folder (newpkg), kept whole",
        "notes.txt": "untracked and not ignored: may be a new source file",
    }
    assert [e.path for e in plan.entries] == ["build"]  # what goes is as before
    execute_clean(plan, confirmed=True)
    assert (tree / "src" / "a.o").exists()
    assert (tree / "empty" / "inner").is_dir()


def test_a_nested_repository_keeps_its_ignored_folder_from_inside_too(tmp_path: Path) -> None:
    # a clean of the work tree keeps build/ whole (it holds a nested repository): so does a clean
    # of a folder in it (the audit's clean of build/temp.x removed the notes and objects beside it)
    tree = repo(tmp_path / "g", "build/\n")
    inner = tree / "build" / "temp.x"
    (inner / "dep").mkdir()
    git(inner / "dep", "init", "-q")
    (inner / "NOTES.txt").write_text("mine\n")
    assert "build" in {k.path for k in plan_clean(tree).kept}
    plan = plan_clean(inner)
    assert plan.entries == ()
    assert [k.path for k in plan.kept] == ["."]
    assert "nested git repository" in plan.kept[0].reason


def test_an_untracked_folder_cleaned_on_its_own_is_not_told_as_kept(tmp_path: Path) -> None:
    # its ignored objects go (as before); the list said "kept ." beside them
    tree = repo(tmp_path / "g", "*.o\n")
    (tree / "obj").mkdir()
    for name in ("x.o", "y.o"):
        (tree / "obj" / name).write_text("o\n")
    plan = plan_clean(tree / "obj")
    assert sorted(e.path for e in plan.entries) == ["x.o", "y.o"]
    assert [k.path for k in plan.kept] == []
