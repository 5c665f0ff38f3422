"""What a demanding user of ``torchsmith inspect`` ran into, on real nvcc output and real files:
a wheel or package whose binaries have no .so name, a zstd-compressed ROCm bundle, ``--gpu``
values that are empty or name an Intel GPU, a single file without GPU code, and a long read."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from torchsmith.binaries.reader import read_binary
from torchsmith.binaries.targets import gfx_runs_on, inspect_target
from torchsmith.cli import main

from .conftest import Built

ROCM = Path(__file__).parent / "fixtures" / "rocm"
ZSTD_BUNDLE = ROCM / "gfx90a_gfx1100.ccob-v3-zstd"


def _tree(built: Built, device_files: Path, root: Path) -> Path:
    """A package tree whose GPU code sits in files without a .so/.dll/.pyd name."""
    (root / "pkg" / "bin").mkdir(parents=True)
    (root / "pkg" / "lib").mkdir()
    shutil.copy(built["app"], root / "pkg" / "bin" / "app")  # an executable: sm_80
    subprocess.run(  # a static library of relocatable device code: sm_120 + compute_120
        ["ar", "rcs", str(root / "pkg" / "lib" / "librdc.a"), str(built["rdc.o"])], check=True
    )
    shutil.copy(device_files / "k90a.cubin", root / "pkg" / "lib" / "k.cubin")
    shutil.copy(device_files / "k.ptx", root / "pkg" / "lib" / "k.ptx")
    shutil.copy(ROCM / "gfx90a_gfx1100.hipfb", root / "pkg" / "lib" / "k.hipfb")
    (root / "pkg" / "__init__.py").write_text("")
    return root


def _counts(report: object) -> dict[str, object]:
    data = json.loads(json.dumps(report, default=lambda o: o.__dict__))
    return {k: data[k] for k in ("sass_counts", "ptx_counts", "files_with_gpu_code")}


def test_a_wheel_is_read_by_content_as_its_directory_is(
    built: Built, device_files: Path, tmp_path: Path
) -> None:
    tree = _tree(built, device_files, tmp_path / "tree")
    wheel = tmp_path / "pkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("pkg-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        for path in sorted(tree.rglob("*")):
            if path.is_file():
                z.write(path, path.relative_to(tree).as_posix())
    from_wheel = inspect_target(str(wheel))
    from_dir = inspect_target(str(tree))
    assert from_wheel.files_with_gpu_code == from_dir.files_with_gpu_code == 5
    assert from_wheel.sass == from_dir.sass == ("sm_80", "sm_90a", "sm_120")
    assert from_wheel.ptx == from_dir.ptx == ("compute_90", "compute_120")
    for report in (from_wheel, from_dir):
        hip = next(b for b in report.binaries if b.path.endswith("k.hipfb"))
        assert hip.gfx == ("gfx90a", "gfx1100")
    assert not any("no .so" in note for note in from_wheel.notes)


def test_an_installed_package_lists_its_executables(
    built: Built, device_files: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RECORD names bin/app and lib/librdc.a: "no binaries found" would be false."""
    site = _tree(built, device_files, tmp_path / "site")
    info = site / "pkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 0.1\n")
    files = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in [*files, "pkg-0.1.dist-info/RECORD"]))
    monkeypatch.setenv("PYTHONPATH", str(site))
    report = inspect_target("pkg", python=sys.executable)
    assert report.kind == "package"
    assert report.files_with_gpu_code == 5
    assert report.sass == ("sm_80", "sm_90a", "sm_120")


def test_a_zstd_bundle_is_never_called_no_amd_code(capsys: pytest.CaptureFixture[str]) -> None:
    """ROCm compresses bundles with zstd (real: bitsandbytes' libbitsandbytes_rocm72.dll);
    before Python 3.14 they cannot be listed, which is not the same as holding no code."""
    report = read_binary(ZSTD_BUNDLE)
    assert report.has_gpu_code
    verdict = gfx_runs_on(report.gfx_counts, "gfx942", report.offload_unlisted)
    assert not verdict.ok
    if report.offload_unlisted:  # Python < 3.14
        assert report.gfx == ()
        assert verdict.kind == "unknown"
        assert "cannot tell" in verdict.route
        assert main(["inspect", str(ZSTD_BUNDLE), "--gpu", "MI300X", "--json"]) == 1
        data = json.loads(capsys.readouterr().out)["data"]
        assert data["files_with_gpu_code"] == 1
        assert data["runs_on"]["kind"] == "unknown"
        assert "no code object" not in data["runs_on"]["route"]
    else:
        assert report.gfx == ("gfx90a", "gfx1100")
        assert "gfx90a" in verdict.route


def test_an_amd_verdict_prints_no_blank_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(ROCM / "libtiny_hip.so"), "--gpu", "Radeon RX 7900 XTX"]) == 0
    out = capsys.readouterr().out
    assert "native code object gfx1100" in out
    assert not [line for line in out.splitlines() if line and not line.strip()]


@pytest.mark.parametrize(
    ("gpu", "message"),
    [
        ("", "--gpu is empty"),  # `--gpu "$GPU"` with GPU unset must not pass silently
        ("Intel Arc B580", "is an Intel GPU"),  # known to torchsmith: not "a name it knows"
    ],
)
def test_gpu_values_without_a_verdict_are_refused(
    built: Built, capsys: pytest.CaptureFixture[str], gpu: str, message: str
) -> None:
    assert main(["inspect", str(built["libmix.so"]), "--gpu", gpu]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert message in err
    assert "not a GPU name torchsmith knows" not in err


def test_a_file_without_gpu_code_is_shown(built: Built, capsys: pytest.CaptureFixture[str]) -> None:
    """The one file asked about is the answer, not "1 binaries ... not shown"."""
    assert main(["inspect", str(built.cpu_lib)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # Rich wraps long paths
    assert "libcpu.so: ELF" in out
    assert "no CUDA fat binary found" in out
    assert "not shown" not in out


def test_progress_moves_inside_one_big_file(built: Built, tmp_path: Path) -> None:
    """A file without section headers is scanned whole: the bar must move while it is."""
    head = bytearray(built.cpu_lib.read_bytes()[:64])
    head[0x28:0x30] = bytes(8)  # e_shoff = 0: no section headers
    big = tmp_path / "big.so"
    with big.open("wb") as fh:
        fh.write(head)
        fh.truncate(300 << 20)
    calls: list[tuple[int, int]] = []
    inspect_target(str(big), progress=lambda done, total, _name: calls.append((done, total)))
    assert any(0 < done < total for done, total in calls), calls


def test_a_windows_rocm_dll_in_a_wheel_lists_its_code_objects(tmp_path: Path) -> None:
    """As on disk: the offload bundle (real clang-offload-bundler output) inside a PE."""
    from .pe import build_pe  # noqa: PLC0415

    dll = build_pe(b"", text=b"\xc3" * 64 + (ROCM / "gfx90a_gfx1100.hipfb").read_bytes())
    (tmp_path / "amdhip64.dll").write_bytes(dll)
    assert read_binary(tmp_path / "amdhip64.dll").gfx == ("gfx90a", "gfx1100")
    wheel = tmp_path / "x-1-py3-none-win_amd64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("x-1.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        z.writestr("x/bin/amdhip64.dll", dll)
    (member,) = inspect_target(str(wheel)).binaries
    assert member.gfx == ("gfx90a", "gfx1100")
