"""Arch names, ordering, and the runs-on rule (pure: no files, no tools)."""

from __future__ import annotations

import pytest

from torchsmith.binaries.archs import (
    NO_KERNEL_IMAGE,
    Arch,
    parse_arch,
    parse_compute_capability,
    runs_on,
    sort_archs,
)


@pytest.mark.parametrize(
    ("text", "arch"),
    [
        ("sm_90", Arch(90, "", "sass")),
        ("sm_90a", Arch(90, "a", "sass")),
        ("sm_100f", Arch(100, "f", "sass")),
        ("compute_120f", Arch(120, "f", "ptx")),
        ("compute_75", Arch(75, "", "ptx")),
        (" SM_121A ", Arch(121, "a", "sass")),
    ],
)
def test_parse_arch(text: str, arch: Arch) -> None:
    assert parse_arch(text) == arch
    assert parse_arch(arch.name) == arch


@pytest.mark.parametrize("text", ["sm90", "sm_9", "compute_90x", "lto_90", "", "sm_1000"])
def test_parse_arch_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a GPU architecture"):
        parse_arch(text)


def test_arch_properties() -> None:
    arch = parse_arch("sm_103a")
    assert (arch.major, arch.minor, arch.compute_capability) == (10, 3, "10.3")


@pytest.mark.parametrize(
    ("text", "cc"),
    [
        ("12.0", (12, 0)),
        ("8.6", (8, 6)),
        ("sm_120", (12, 0)),
        ("compute_89", (8, 9)),
        ("120", (12, 0)),
        ("90", (9, 0)),
        ("sm_90a", (9, 0)),
        ("10.3", (10, 3)),
    ],
)
def test_parse_compute_capability(text: str, cc: tuple[int, int]) -> None:
    assert parse_compute_capability(text) == cc


@pytest.mark.parametrize("text", ["RTX 5090", "12", "1.2.3", "sm_", "12.10", ""])
def test_parse_compute_capability_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a compute capability"):
        parse_compute_capability(text)


def test_sort_by_number_then_variant() -> None:
    names = ["sm_120", "sm_90a", "sm_100f", "sm_75", "sm_90", "sm_100", "sm_100a", "compute_90"]
    assert sort_archs(names) == (
        "sm_75",
        "sm_90",
        "compute_90",
        "sm_90a",
        "sm_100",
        "sm_100f",
        "sm_100a",
        "sm_120",
    )


# (sass, ptx, gpu, ok, route) — the rule, case by case.
CASES = [
    # plain SASS: same major, minor <= the GPU's
    (["sm_86"], [], "8.9", True, "native SASS sm_86"),
    (["sm_80"], [], "8.6", True, "native SASS sm_80"),
    (["sm_86"], [], "8.0", False, None),
    (["sm_80"], [], "9.0", False, None),
    (["sm_90"], [], "12.0", False, None),
    (["sm_120"], [], "12.1", True, "native SASS sm_120"),
    (["sm_75", "sm_80", "sm_86"], [], "8.9", True, "native SASS sm_86"),
    # arch-specific: exactly that compute capability
    (["sm_90a"], [], "9.0", True, "native SASS sm_90a"),
    (["sm_100a"], [], "10.3", False, None),
    (["sm_120a"], [], "12.1", False, None),
    # family-specific: same major, minor >=
    (["sm_100f"], [], "10.0", True, "native SASS sm_100f"),
    (["sm_100f"], [], "10.3", True, "native SASS sm_100f"),
    (["sm_103f"], [], "10.0", False, None),
    (["sm_100f"], [], "11.0", False, None),
    (["sm_100f"], [], "12.0", False, None),
    (["sm_120f"], [], "12.1", True, "native SASS sm_120f"),
    # PTX: JIT on equal or newer, any major
    ([], ["compute_90"], "12.0", True, "PTX JIT from compute_90 (slow first run)"),
    ([], ["compute_90"], "9.0", True, "PTX JIT from compute_90 (slow first run)"),
    ([], ["compute_90"], "8.9", False, None),
    ([], ["compute_75", "compute_86"], "9.0", True, "PTX JIT from compute_86 (slow first run)"),
    ([], ["compute_90a"], "9.0", True, "PTX JIT from compute_90a (slow first run)"),
    ([], ["compute_90a"], "10.0", False, None),
    ([], ["compute_120f"], "12.1", True, "PTX JIT from compute_120f (slow first run)"),
    ([], ["compute_100f"], "12.0", False, None),
    # SASS wins over PTX when both fit
    (["sm_90"], ["compute_90"], "9.0", True, "native SASS sm_90"),
    (["sm_80"], ["compute_80"], "9.0", True, "PTX JIT from compute_80 (slow first run)"),
    # torch 2.11 PyPI: sm_75..sm_120, no PTX
    (
        ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
        [],
        "12.1",
        True,
        "native SASS sm_120",
    ),
    (
        ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
        [],
        "10.3",
        True,
        "native SASS sm_100",
    ),
    (["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], [], "7.0", False, None),
    (["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], [], "11.0", False, None),
    # torch 2.7 cu126: no sm_120 → an RTX 5090 gets no kernel image
    (["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"], [], "sm_120", False, None),
    ([], [], "9.0", False, None),
]


@pytest.mark.parametrize(("sass", "ptx", "gpu", "ok", "route"), CASES)
def test_runs_on(sass: list[str], ptx: list[str], gpu: str, ok: bool, route: str | None) -> None:
    result = runs_on(sass, ptx, gpu)
    assert result.ok is ok
    if ok:
        assert result.route == route
        assert result.arch is not None
        assert result.arch in route
    else:
        assert result.kind == "none"
        assert NO_KERNEL_IMAGE in result.route


def test_runs_on_details() -> None:
    result = runs_on(["sm_90", "sm_90a"], [], "90")
    assert result.compute_capability == "9.0"
    assert result.kind == "sass"
    assert "also compatible: sm_90" in result.detail
    jit = runs_on([], ["compute_80"], "12.0")
    assert "JIT" in jit.detail
    no = runs_on(["sm_86"], [], "8.0")
    assert "Found: sm_86" in no.detail
    assert runs_on([], [], "8.0").detail == "the binaries hold no GPU code at all"


def test_runs_on_ignores_junk_and_rejects_bad_gpu() -> None:
    assert runs_on(["sm_90", "lto_90", "garbage"], [], "9.0").ok
    with pytest.raises(ValueError, match="not a compute capability"):
        runs_on(["sm_90"], [], "Hopper")


def test_lto_only_says_device_link_not_no_code() -> None:
    result = runs_on([], [], "9.0", ["lto_90"])
    assert not result.ok
    assert "device-linked" in result.route
    assert "nvcc -dlto -arch=sm_90" in result.detail
    assert "no GPU code" not in result.detail
    too_new = runs_on([], [], "8.6", ["lto_90"])
    assert "not sm_86" in too_new.detail
    # runnable code next to LTO IR decides as before
    assert runs_on(["sm_90"], [], "9.0", ["lto_90"]).route == "native SASS sm_90"
    assert runs_on([], [], "9.0").detail == "the binaries hold no GPU code at all"
