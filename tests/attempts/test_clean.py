"""Safe cleaning on a tree full of traps: only build outputs go; the canary outside survives."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import psutil
import pytest

from torchsmith import platforms
from torchsmith.build import clean as clean_mod
from torchsmith.build.clean import execute_clean, file_holders, plan_clean
from torchsmith.cli import main
from torchsmith.errors import InputError, UsageError
from torchsmith.ledger import Ledger


def git(tree: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=tree,
        check=True,
        capture_output=True,
    )


def cmake_cache(build: Path, source: Path) -> None:
    """A CMakeCache.txt in the lines CMake writes (the ones clean reads): ``build`` configured
    from ``source``. test_real_cmake_build_dir_is_proven checks them against real CMake."""
    build.mkdir(parents=True, exist_ok=True)
    (build / "CMakeCache.txt").write_text(
        "# This is the CMakeCache file.\n"
        f"CMAKE_CACHEFILE_DIR:INTERNAL={build}\n"
        f"CMAKE_HOME_DIRECTORY:INTERNAL={source}\n"
    )


@pytest.fixture
def trap(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "canary.txt").write_text("must survive")
    tree = tmp_path / "tree"
    tree.mkdir()
    git(tree, "init", "-q")
    # what real .gitignore files also list: a venv, secrets, data, checkpoints (never build output)
    (tree / ".gitignore").write_text(
        "build/\n*.o\n/dist\n*.egg-info/\n.venv/\n.env\ndata/\n*.pt\ncheckpoints/\n*.so\n*.env\n"
    )
    (tree / "src").mkdir()
    (tree / "src" / "kernel.cu").write_text("// source\n")
    # A tracked file named like a build directory, in a subfolder, and tracked files in build/.
    (tree / "tools").mkdir()
    (tree / "tools" / "dist").write_text("tracked file named dist\n")
    (tree / "build").mkdir()
    (tree / "build" / "CMakeLists.txt").write_text("tracked inside build/\n")
    git(tree, "add", ".gitignore", "src", "tools")
    git(tree, "add", "-f", "build/CMakeLists.txt")
    git(tree, "commit", "-qm", "init")
    # Build outputs.
    (tree / "build" / "obj").mkdir()
    (tree / "build" / "obj" / "kernel.o").write_bytes(b"\0" * 4096)
    cmake_cache(tree / "build", tree)
    ro = tree / "build" / "obj" / "readonly.o"
    ro.write_bytes(b"x" * 100)
    ro.chmod(0o444)
    (tree / "build" / "obj").chmod(0o555)  # a read-only folder too
    (tree / "src" / "kernel.o").write_bytes(b"o" * 10)
    (tree / "dist").mkdir()
    (tree / "dist" / "pkg-1.0-py3-none-any.whl").write_bytes(b"w" * 50)
    # Symlinks out of the tree, inside ignored places: removed as links, never followed.
    (tree / "build" / "out_link").symlink_to(outside)
    (tree / "dist" / "canary_link.o").symlink_to(outside / "canary.txt")
    # Ignored user data: kept, also below a tracked package named build and in an untracked venv.
    (tree / "src" / "tool" / "build").mkdir(parents=True)
    (tree / "src" / "tool" / "build" / "__init__.py").write_text("# a package\n")
    git(tree, "add", "-f", "src/tool/build/__init__.py")
    git(tree, "commit", "-qm", "a package named build")
    (tree / "src" / "tool" / "build" / "secrets.env").write_text("k=v\n")
    venv = tree / "torchenv"
    (venv / "lib" / "torch").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "torch" / "libtorch_cuda.so").write_bytes(b"ELF")
    (tree / "data").mkdir()
    (tree / "data" / "mesh.o").write_bytes(b"not an object file: data named like one")
    (tree / ".venv" / "bin").mkdir(parents=True)
    (tree / ".venv" / "bin" / "python").write_text("#!/bin/sh\n")
    (tree / ".env").write_text("TOKEN=secret\n")
    (tree / "data" / "train.csv").write_text("1,2\n")
    (tree / "model.pt").write_bytes(b"weights")
    # An untracked, not ignored new source file: kept.
    (tree / "src" / "new_kernel.cu").write_text("// not yet added\n")
    # A nested git repository inside an ignored folder, and one at the top.
    dep = tree / "build" / "_deps" / "fmt-src"
    dep.mkdir(parents=True)
    git(dep, "init", "-q")
    (dep / "format.h").write_text("// a clone\n")
    top_nested = tree / "third_party"
    top_nested.mkdir()
    git(top_nested, "init", "-q")
    (top_nested / "lib.c").write_text("int x;\n")
    return tree, outside


def test_trap_tree_loses_only_build_outputs(trap: tuple[Path, Path]) -> None:
    tree, outside = trap
    plan = plan_clean(tree, "cmake")
    paths = {e.path for e in plan.entries}
    assert plan.in_git
    assert "build/obj" in paths
    assert "dist" in paths
    assert "src/kernel.o" in paths
    assert "build/CMakeCache.txt" in paths
    assert "build/out_link" in paths
    assert "build/CMakeLists.txt" not in paths  # tracked
    assert not any(p.startswith("build/_deps") for p in paths)  # nested repo
    kept = {k.path: k.reason for k in plan.kept}
    assert "build/_deps" in kept  # a nested git repository (not provably output either)
    assert "src/new_kernel.cu" in kept
    assert "third_party" in kept
    for data in (".venv", ".env", "data", "model.pt"):
        assert data not in paths
        assert "not a known build output" in kept[data]
    assert plan.total_bytes >= 4096 + 100 + 10 + 50
    link = next(e for e in plan.entries if e.path == "build/out_link")
    assert link.kind == "symlink"
    assert link.bytes == 0

    with pytest.raises(UsageError):
        execute_clean(plan, confirmed=False)
    assert (tree / "build" / "obj" / "kernel.o").exists()

    result = execute_clean(plan, confirmed=True)
    assert result.ok, result.failed
    assert (outside / "canary.txt").read_text() == "must survive"
    assert not (tree / "build" / "obj").exists()
    assert not (tree / "dist").exists()
    assert not os.path.lexists(tree / "build" / "out_link")
    for kept_file in (
        "build/CMakeLists.txt",
        "src/kernel.cu",
        "tools/dist",
        "src/new_kernel.cu",
        "build/_deps/fmt-src/format.h",
        "third_party/lib.c",
        ".gitignore",
        ".venv/bin/python",
        "src/tool/build/secrets.env",
        "torchenv/lib/torch/libtorch_cuda.so",
        "data/mesh.o",
        ".env",
        "data/train.csv",
        "model.pt",
    ):
        assert (tree / kept_file).exists(), kept_file
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=tree, capture_output=True, text=True, check=True
    )
    assert " D " not in status.stdout


def test_symlinked_folder_out_of_the_tree_is_never_entered(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "build").mkdir(parents=True)
    cmake_cache(outside / "build", outside)
    tree = tmp_path / "plain"
    tree.mkdir()
    (tree / "linked").symlink_to(outside)
    cmake_cache(tree / "build", tree)
    (tree / "build" / "escape").symlink_to(outside / "build")
    (tree / "dist").mkdir()
    (tree / "dist" / "notes.txt").write_text("mine\n")  # not a wheel: not build output
    (tree / "my.egg-info").mkdir()
    (tree / "my.egg-info" / "PKG-INFO").write_text("Name: my\n")
    plan = plan_clean(tree, "cpp_extension")
    assert not plan.in_git
    assert {e.path for e in plan.entries} == {"build", "my.egg-info"}
    assert "dist" in {k.path for k in plan.kept}
    execute_clean(plan, confirmed=True)
    assert (outside / "build" / "CMakeCache.txt").exists()
    assert (tree / "dist" / "notes.txt").exists()
    assert not (tree / "build").exists()


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_real_cmake_build_dir_is_proven(tmp_path: Path) -> None:
    source = tmp_path / "proj"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(p NONE)\n"
    )
    (source / "main.cpp").write_text("int main() {}\n")
    subprocess.run(
        ["cmake", "-S", str(source), "-B", str(source / "out")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    subprocess.run(["cmake", "."], cwd=source, check=True, capture_output=True, timeout=120)
    text = (source / "out" / "CMakeCache.txt").read_text()
    assert f"CMAKE_HOME_DIRECTORY:INTERNAL={source}" in text  # the line cmake_cache() writes
    plan = plan_clean(source, "cmake")
    assert {e.path for e in plan.entries} == {"out"}  # the in-source configure proves nothing
    execute_clean(plan, confirmed=True)
    assert (source / "main.cpp").exists()
    assert (source / "CMakeLists.txt").exists()


@pytest.mark.parametrize(
    "cache",
    [
        "",  # an empty file named CMakeCache.txt
        "CMAKE_BUILD_TYPE:STRING=Release\n",  # no source folder named
        "CMAKE_HOME_DIRECTORY:INTERNAL={lib}\n",  # `cmake .` in the sources themselves
    ],
)
def test_sources_beside_a_cmake_cache_are_never_a_build_dir(tmp_path: Path, cache: str) -> None:
    # audit: `mkdir libfoo; echo ... > libfoo/main.cpp; touch libfoo/CMakeCache.txt` lost main.cpp
    lib = tmp_path / "tree" / "libfoo"
    lib.mkdir(parents=True)
    (lib / "main.cpp").write_text("int main() {}\n")
    (lib / "CMakeCache.txt").write_text(cache.format(lib=lib))
    assert plan_clean(tmp_path / "tree", "cmake").entries == ()


def test_untracked_files_in_a_build_folder_are_kept(tmp_path: Path) -> None:
    # audit: tracked build/release.sh, untracked build/new_tool.sh: the new script was deleted
    tree = tmp_path / "repo"
    (tree / "build").mkdir(parents=True)
    (tree / "build" / "release.sh").write_text("#!/bin/sh\n")
    git(tree, "init", "-q")
    git(tree, "add", ".")
    git(tree, "commit", "-qm", "init")
    (tree / "build" / "new_tool.sh").write_text("#!/bin/sh\n")
    (tree / "dist").mkdir()
    (tree / "dist" / "NOTES.md").write_text("mine\n")  # not ignored, not a wheel
    (tree / "_skbuild").mkdir()
    (tree / "_skbuild" / "build.ninja").write_text("# generated\n")  # output, but not ignored
    plan = plan_clean(tree, "cpp_extension")
    assert plan.entries == ()  # what git does not ignore stays, until .gitignore says otherwise
    assert {"build/new_tool.sh", "dist", "_skbuild"} <= {k.path for k in plan.kept}


def test_a_git_tree_git_cannot_read_is_refused(tmp_path: Path) -> None:
    # audit: git refusing a repo ('dubious ownership') made clean fall back to build/ whole,
    # tracked files included
    tree = tmp_path / "repo"
    (tree / "build" / "lib.linux").mkdir(parents=True)
    (tree / "build" / "lib.linux" / "helper.py").write_text("x = 1\n")
    git(tree, "init", "-q")
    git(tree, "add", ".")
    git(tree, "commit", "-qm", "init")
    (tree / ".git" / "HEAD").write_text("garbage\n")  # git no longer takes it for a repository
    with pytest.raises(InputError, match="git cannot read it"):
        plan_clean(tree, "cpp_extension")


@pytest.mark.parametrize("where", ["home", "root"])
def test_home_and_filesystem_root_are_refused(where: str) -> None:
    with pytest.raises(UsageError, match="not a source tree"):
        plan_clean(Path.home() if where == "home" else Path("/"), None)


def test_top_level_file_named_build_outside_git(tmp_path: Path) -> None:
    (tmp_path / "build").write_text("a script named build\n")
    plan = plan_clean(tmp_path, None)
    assert plan.entries == ()


def test_not_a_tree() -> None:
    with pytest.raises(InputError):
        plan_clean(Path("/nonexistent/tree"), None)


def test_cli_lists_then_deletes_with_yes(
    trap: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tree, outside = trap
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tree.parent / "ledger.sqlite"))
    assert main(["clean", str(tree), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["ok"]
    assert not listed["data"]["deleted"]
    assert (tree / "build" / "obj" / "kernel.o").exists()
    assert main(["clean", str(tree)]) == 0
    assert "--yes" in capsys.readouterr().out
    assert main(["clean", str(tree), "--yes", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)["data"]
    assert done["deleted"]
    assert done["result"]["bytes_freed"] > 0
    assert not (tree / "build" / "obj").exists()
    assert (outside / "canary.txt").exists()
    (recorded,) = Ledger().list(kind="clean")  # only --yes is recorded, listing is not
    assert (recorded.status, recorded.tree) == ("succeeded", str(tree.resolve()))
    assert recorded.result["removed"] == done["result"]["removed"]
    assert recorded.result["reason"].startswith(f"removed {len(done['result']['removed'])} ")
    assert {e["path"] for e in recorded.config["entries"]} >= set(done["result"]["removed"])


def test_failed_and_interrupted_cleans_are_recorded(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    cmake_cache(tree / "build", tree)
    plan = plan_clean(tree, "cmake")
    ledger = Ledger(tmp_path / "ledger.sqlite")

    def interrupt(path: Path) -> list[tuple[Path, str]]:
        raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(clean_mod, "_remove", interrupt)
        with pytest.raises(KeyboardInterrupt):
            execute_clean(plan, confirmed=True, ledger=ledger)
        patch.setattr(clean_mod, "_remove", lambda path: [(path, "held open")])
        failed = execute_clean(plan, confirmed=True, ledger=ledger)
    assert not failed.ok
    assert [a.status for a in ledger.list(kind="clean")] == ["failed", "interrupted"]
    assert ledger.list(kind="clean")[0].result["reason"] == (
        "removed 0 entries (0.0 MiB); 1 could not be removed: build: held open"
    )
    assert (tree / "build" / "CMakeCache.txt").exists()


def test_cli_missing_tree_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clean", "/nonexistent/tree"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error:")
    assert "Traceback" not in err


def test_held_file_names_its_process(tmp_path: Path) -> None:
    held = tmp_path / "held.obj"
    held.write_text("x")
    with held.open() as handle:
        holders = file_holders(held, processes=[psutil.Process()])
        assert handle
        assert holders
        assert f"(pid {os.getpid()})" in holders[0]
    exc = PermissionError(13, "The process cannot access the file")
    exc.winerror = 32  # type: ignore[attr-defined]
    with platforms.override("windows"):
        message = clean_mod._held_message(held, exc)
    assert "in use" in message


def test_readonly_file_mode_restored_not_needed(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    (tree / "build" / "temp.linux").mkdir(parents=True)
    f = tree / "build" / "temp.linux" / "a.o"
    f.write_text("x")
    f.chmod(stat.S_IRUSR)
    (tree / "build" / "temp.linux").chmod(0o500)
    result = execute_clean(plan_clean(tree, "cpp_extension"), confirmed=True)
    assert result.ok
    assert not (tree / "build").exists()


def _repo(tree: Path, gitignore: str) -> Path:
    tree.mkdir(parents=True)
    (tree / ".gitignore").write_text(gitignore)
    (tree / "main.c").write_text("int main() {}\n")
    git(tree, "init", "-q")
    git(tree, "add", ".")
    git(tree, "commit", "-qm", "init")
    return tree


def test_a_cmake_cache_naming_a_folder_inside_proves_nothing(tmp_path: Path) -> None:
    # re-audit: protobuf's old layout, `cmake -S cmake -B .` in third_party/lib: the cache names
    # third_party/lib/cmake, so the sources beside it went
    tree = _repo(tmp_path / "repo", "lib/\n")
    lib = tree / "third_party" / "lib"
    (lib / "cmake").mkdir(parents=True)
    (lib / "cmake" / "CMakeLists.txt").write_text("project(l C)\n")
    (lib / "src").mkdir()
    (lib / "src" / "l.c").write_text("int l;\n")
    cmake_cache(lib, lib / "cmake")
    assert "third_party/lib" not in {e.path for e in plan_clean(tree, "cmake").entries}
    for home in ("relative/src", str(tmp_path / "gone")):  # relative, or a folder not here
        cmake_cache(lib, Path(home))
        assert "third_party/lib" not in {e.path for e in plan_clean(tree, "cmake").entries}


def test_an_ignored_build_folder_must_show_it_is_output(tmp_path: Path) -> None:
    # re-audit: an ignored top-level build/ went whole on its name alone: an in-source CMake
    # subproject called build, or results under a `*` .gitignore
    tree = _repo(tmp_path / "repo", "build/\n")
    (tree / "build").mkdir()
    (tree / "build" / "CMakeLists.txt").write_text("project(q C)\n")
    (tree / "build" / "q.c").write_text("int q;\n")
    (tree / "build" / "build.ninja").write_text("# generated\n")
    assert "build" not in {e.path for e in plan_clean(tree, "cmake").entries}
    data = _repo(tmp_path / "dotfiles", "*\n!.gitignore\n!main.c\n")
    (data / "build").mkdir()
    (data / "build" / "results.csv").write_text("1,2\n")
    assert plan_clean(data, "cmake").entries == ()


def test_a_file_the_gitignore_takes_back_stays(tmp_path: Path) -> None:
    # re-audit: `/build/*` with `!/build/keep.txt`: keep.txt was deleted with the folder
    tree = _repo(tmp_path / "repo", "/build/*\n!/build/keep.txt\n")
    (tree / "build" / "obj").mkdir(parents=True)
    (tree / "build" / "obj" / "a.o").write_bytes(b"\0")
    (tree / "build" / "keep.txt").write_text("mine\n")
    plan = plan_clean(tree, "cmake")
    assert "build" not in {e.path for e in plan.entries}
    execute_clean(plan, confirmed=True)
    assert (tree / "build" / "keep.txt").read_text() == "mine\n"


@pytest.mark.skipif(os.name == "nt", reason="POSIX file names are bytes")
def test_a_name_that_is_not_utf8_names_the_same_file(tmp_path: Path) -> None:
    # re-audit: git's bytes decoded with replacement characters named another file, which went
    tree = _repo(tmp_path / "repo", "*.o\n")
    junk = os.fsdecode(b"keep\xff.o")
    (tree / junk).write_bytes(b"\0")
    (tree / "keep\ufffd.o").write_text("mine, not ignored? it is: *.o; still, another file\n")
    plan = plan_clean(tree, "cmake")
    assert junk in {e.path for e in plan.entries}
    execute_clean(plan, confirmed=True)
    assert not os.path.lexists(tree / junk)


def test_a_file_linked_from_outside_keeps_its_mode(tmp_path: Path) -> None:
    # re-audit (as an unprivileged user): a read-only file outside the tree, hard-linked into a
    # read-only build folder, went from 0444 to 0644: its mode is its data's, shared by both names
    outside = tmp_path / "outside.txt"
    outside.write_text("not the tree's\n")
    outside.chmod(0o444)
    tree = _repo(tmp_path / "repo", "build/\n")
    cmake_cache(tree / "build", tree)
    (tree / "build" / "obj").mkdir()
    os.link(outside, tree / "build" / "obj" / "linked.o")
    (tree / "build" / "obj").chmod(0o555)
    execute_clean(plan_clean(tree, "cmake"), confirmed=True)
    assert not (tree / "build").exists()
    assert stat.S_IMODE(outside.stat().st_mode) == 0o444
    assert outside.read_text() == "not the tree's\n"
