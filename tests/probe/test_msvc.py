"""MSVC via vswhere, replayed on Linux: recorded/real-format vswhere JSON, a fake Visual Studio
tree under tmp_path, and fake vswhere.exe / cl.exe scripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.probe.fakes import fake_tool
from torchsmith import platforms
from torchsmith.probe.msvc import (
    VSWHERE_ARGS,
    msc_ver_for_toolset,
    parse_cl_banner,
    parse_vswhere_json,
    probe_msvc,
)
from torchsmith.probe.tools import probe_compilers

FIXTURES = Path(__file__).parent / "fixtures" / "tools"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


# ---------------------------------------------------------------------------- parsers


def test_parse_real_vswhere_output_of_build_tools_2022() -> None:
    (vs,) = parse_vswhere_json(fixture("vswhere-2022-buildtools-real.json"))
    assert vs.display_name == "Visual Studio Build Tools 2022"
    assert vs.installation_version == "17.14.37027.9"
    assert vs.installation_path == r"C:\Program Files (x86)\Microsoft Visual Studio\2022\BuildTools"
    assert vs.product_id == "Microsoft.VisualStudio.Product.BuildTools"
    assert (vs.product_line_version, vs.display_version) == ("2022", "17.14.28")
    assert (vs.is_prerelease, vs.is_complete) == (False, True)


def test_parse_vswhere_with_a_prerelease() -> None:
    installs = parse_vswhere_json(fixture("vswhere-2022-buildtools-and-2026-insiders.json"))
    assert [vs.product_line_version for vs in installs] == ["2022", "18"]
    assert [vs.is_prerelease for vs in installs] == [False, True]


def test_parse_vswhere_tolerates_a_banner_and_rejects_garbage() -> None:
    text = "Visual Studio Locator version 3.1.7\n" + fixture("vswhere-2022-buildtools-real.json")
    assert len(parse_vswhere_json(text)) == 1
    assert parse_vswhere_json("[]") == ()
    with pytest.raises(ValueError):
        parse_vswhere_json("No instances found.")


@pytest.mark.parametrize(
    ("toolset", "msc_ver"),
    [
        ("14.0", "1900"),  # VS 2015
        ("14.16.27023", "1916"),  # VS 2017 15.9
        ("14.29.30133", "1929"),  # VS 2019 16.11
        ("14.40.33807", "1940"),  # VS 2022 17.10: the first that CUDA <= 12.3 rejects
        ("14.44.35207", "1944"),  # VS 2022 17.14
        ("14.50.35717", "1950"),  # VS 2026 18.0
        ("19.44.35207.1", "1944"),  # a cl.exe version
        ("garbage", None),
    ],
)
def test_msc_ver_for_toolset(toolset: str, msc_ver: str | None) -> None:
    assert msc_ver_for_toolset(toolset) == msc_ver


def test_parse_cl_banner() -> None:
    parsed = parse_cl_banner(fixture("cl-19.44-x64-banner.txt"))
    assert parsed == {"version": "19.44.35207.1", "target": "x64", "msc_ver": "1944"}


# ---------------------------------------------------------------------------- the probe on Linux


def _visual_studio(
    tmp_path: Path, fixture_name: str, toolsets: dict[str, list[str]]
) -> dict[str, str]:
    """A fake machine: vswhere.exe answering with ``fixture_name`` (its installation paths
    moved under tmp_path) and, per installation folder name, the MSVC toolsets it has."""
    data = json.loads(fixture(fixture_name))
    for install in data:
        leaf = install["installationPath"].split("\\")[-2:]
        root = tmp_path.joinpath("vs", *leaf)
        install["installationPath"] = str(root)
        versions = toolsets.get(leaf[-1], [])
        for version in versions:
            cl = root / "VC" / "Tools" / "MSVC" / version / "bin" / "Hostx64" / "x64" / "cl.exe"
            cl.parent.mkdir(parents=True)
            cl.write_bytes(b"MZ")
        if versions:
            default = root / "VC" / "Auxiliary" / "Build" / "Microsoft.VCToolsVersion.default.txt"
            default.parent.mkdir(parents=True)
            default.write_text(versions[-1] + "\n", encoding="utf-8")
    pf86 = tmp_path / "Program Files (x86)"
    expected_args = list(VSWHERE_ARGS)
    fake_tool(
        pf86 / "Microsoft Visual Studio" / "Installer" / "vswhere.exe",
        f"assert sys.argv[1:] == {expected_args!r}, sys.argv\nprint({json.dumps(data)!r})",
    )
    return {"ProgramFiles(x86)": str(pf86), "Path": str(tmp_path / "empty")}


def test_every_toolset_of_every_installation(tmp_path: Path) -> None:
    env = _visual_studio(
        tmp_path,
        "vswhere-2022-buildtools-and-2026-insiders.json",
        {"BuildTools": ["14.29.30133", "14.44.35207"], "Insiders": ["14.50.35717"]},
    )
    with platforms.override("windows"):
        found = probe_msvc(env, timeout=10)
    assert [(t.name, t.version, t.details["msc_ver"]) for t in found] == [
        ("msvc", "14.29.30133", "1929"),
        ("msvc", "14.44.35207", "1944"),
        ("msvc", "14.50.35717", "1950"),
    ]
    old, new, preview = found
    assert (old.details["default"], new.details["default"]) == ("false", "true")
    assert new.details["vs"] == "Visual Studio Build Tools 2022"
    assert new.path is not None
    assert new.path.endswith("cl.exe")
    assert preview.details["prerelease"] == "true"
    assert all(t.error is None for t in found)


def test_build_tools_without_the_cpp_workload(tmp_path: Path) -> None:
    """The real recording: Build Tools 2022 installed without VC tools (no VC folder)."""
    env = _visual_studio(tmp_path, "vswhere-2022-buildtools-real.json", {})
    with platforms.override("windows"):
        (info,) = probe_msvc(env, timeout=10)
    assert (info.name, info.path, info.version, info.error) == ("msvc", None, None, None)
    assert "no C++ toolset" in info.details["note"]


def test_no_visual_studio_at_all(tmp_path: Path) -> None:
    with platforms.override("windows"):
        (info,) = probe_msvc({"ProgramFiles(x86)": str(tmp_path), "Path": ""}, timeout=10)
    assert (info.path, info.version, info.error) == (None, None, None)
    assert "vswhere.exe not found" in info.details["note"]


def test_hanging_vswhere_times_out(tmp_path: Path) -> None:
    pf86 = tmp_path / "pf86"
    fake_tool(pf86 / "Microsoft Visual Studio" / "Installer" / "vswhere.exe", "time.sleep(60)")
    with platforms.override("windows"):
        (info,) = probe_msvc({"ProgramFiles(x86)": str(pf86)}, timeout=0.5)
    assert info.error is not None
    assert "timed out" in info.error


def test_developer_prompt_cl_on_path_joins_the_compilers(tmp_path: Path) -> None:
    env = _visual_studio(
        tmp_path, "vswhere-2022-buildtools-and-2026-insiders.json", {"BuildTools": ["14.44.35207"]}
    )
    bin_dir = tmp_path / "devprompt"
    banner = fixture("cl-19.44-x64-banner.txt")
    fake_tool(bin_dir / "cl.exe", f"sys.stderr.write({banner!r})")
    env.update(Path=str(bin_dir), VCToolsVersion="14.44.35207", VSCMD_VER="17.14.10")
    with platforms.override("windows"):
        found = probe_compilers(env, timeout=10)
    names = [t.name for t in found]
    assert names[:5] == ["gcc", "g++", "clang", "clang++", "c++"]
    assert [t.version for t in found if t.name == "msvc"] == ["14.44.35207", None]  # 2026: none
    cl = next(t for t in found if t.name == "cl")
    assert cl.version == "19.44.35207.1"
    assert cl.details["msc_ver"] == "1944"
    assert cl.details["VCToolsVersion"] == "14.44.35207"
