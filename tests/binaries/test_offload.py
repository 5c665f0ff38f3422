"""inspect lists the gfx code objects of ROCm binaries (clang offload bundles) like SASS."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsmith.binaries.offload import OffloadScan, parse_bundle, scan_offload
from torchsmith.binaries.reader import read_binary
from torchsmith.binaries.sources import MappedFile
from torchsmith.cli import main

ROCM = Path(__file__).parent / "fixtures" / "rocm"


def test_bundle_entries_from_the_real_bundler() -> None:
    entries = parse_bundle((ROCM / "gfx90a_gfx1100.hipfb").read_bytes())
    assert entries is not None
    assert [(e.kind, e.triple, e.target, e.gfx) for e in entries] == [
        ("host", "x86_64-unknown-linux", "", None),
        ("hipv4", "amdgcn-amd-amdhsa", "gfx90a:xnack-", "gfx90a"),
        ("hipv4", "amdgcn-amd-amdhsa", "gfx1100", "gfx1100"),
    ]
    assert entries[0].size == 0
    assert entries[1].size == len(b"GFX90A-CODE-OBJECT-BYTES")


def test_elf_with_hip_fatbin_lists_every_target() -> None:
    report = read_binary(ROCM / "libtiny_hip.so")
    assert report.format == "elf"
    assert report.offload_sections == (".hip_fatbin",)
    assert report.offload_bundles == 2
    assert report.gfx_counts == {
        "gfx90a:xnack-": 1,
        "gfx942:sramecc+:xnack-": 1,
        "gfx1100": 1,
        "gfx1201": 1,
    }
    assert report.gfx == ("gfx90a", "gfx942", "gfx1100", "gfx1201")
    assert report.has_gpu_code
    assert not report.sass


@pytest.mark.parametrize("name", ["gfx90a_gfx1100.hipfb", "gfx90a_gfx1100.ccob-v2-zlib"])
def test_raw_and_compressed_bundles(name: str) -> None:
    report = read_binary(ROCM / name)
    assert report.format == "offload"
    assert report.gfx == ("gfx90a", "gfx1100")
    assert not report.notes


def test_a_truncated_bundle_is_not_listed() -> None:
    data = (ROCM / "gfx90a_gfx1100.hipfb").read_bytes()
    assert parse_bundle(data[:60]) is None


def test_scan_finds_bundles_anywhere_in_a_region(tmp_path: Path) -> None:
    blob = b"\0" * 100 + (ROCM / "gfx942_gfx1201.hipfb").read_bytes() + b"\xff" * 50
    path = tmp_path / "blob.bin"
    path.write_bytes(blob)
    scan = OffloadScan()
    with MappedFile(str(path)) as src:
        scan_offload(src, 0, src.size, scan)
    assert scan.bundles == 1
    assert {e.gfx for e in scan.entries} == {None, "gfx942", "gfx1201"}


def test_inspect_cli_prints_amdgpu_rows(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(ROCM / "libtiny_hip.so")]) == 0
    out = capsys.readouterr().out
    assert "AMDGPU" in out
    assert "gfx942:sramecc+:xnack-" in out


def test_a_rocm_wheel_member_lists_its_gfx_targets(tmp_path: Path) -> None:
    import zipfile  # noqa: PLC0415

    from torchsmith.binaries.targets import inspect_target  # noqa: PLC0415

    wheel = tmp_path / "torch-2.9.1+rocm6.4-cp312-cp312-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("torch-2.9.1+rocm6.4.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        z.write(ROCM / "libtiny_hip.so", "torch/lib/libtorch_hip.so")
        z.write(ROCM / "libtiny_hip.so", "torch/lib/libtorch_cpu.so")  # not a ROCm name
    reports = {r.path: r for r in inspect_target(str(wheel)).binaries}
    assert reports["torch/lib/libtorch_hip.so"].gfx == ("gfx90a", "gfx942", "gfx1100", "gfx1201")
    assert reports["torch/lib/libtorch_cpu.so"].gfx == ()


def test_inspect_gpu_says_whether_an_amd_gpu_has_a_code_object() -> None:
    assert main(["inspect", str(ROCM / "libtiny_hip.so"), "--gpu", "Radeon RX 7900 XTX"]) == 0
    assert main(["inspect", str(ROCM / "gfx90a_gfx1100.hipfb"), "--gpu", "MI300X"]) == 1


def test_gfx_runs_on_verdicts() -> None:
    from torchsmith.binaries.targets import gfx_runs_on  # noqa: PLC0415

    ok = gfx_runs_on(["gfx90a:xnack-", "gfx1100"], "gfx90a")
    assert ok.ok
    assert ok.arch == "gfx90a:xnack-"
    no = gfx_runs_on(["gfx90a:xnack-"], "gfx1031")
    assert not no.ok
    assert "gfx90a" in no.route
