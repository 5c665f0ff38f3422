"""inspect_target / read_archs on wheels, directories, installed packages and bad input."""

from __future__ import annotations

import shutil
import struct
import zipfile
from pathlib import Path

import pytest

from torchsmith.binaries import inspect_target, read_archs
from torchsmith.binaries.reader import NO_FATBIN, read_binary
from torchsmith.errors import InputError, ToolError

from .conftest import Built

GPU_LIBS = ("libmix.so", "libptx.so", "libzstd.so")


def make_wheel(built: Built, path: Path, *, with_wheel_file: bool = True) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("demo/__init__.py", "")
        for name in GPU_LIBS:
            zf.write(built[name], f"demo/lib/{name}")
        zf.write(built.cpu_lib, "demo/_cpu.cpython-311-x86_64-linux-gnu.so")
        zf.writestr("demo/README.txt", "not a binary")
        if with_wheel_file:
            zf.writestr("demo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        zf.writestr("demo-1.0.dist-info/RECORD", "")
    return path


def test_wheel_is_read_in_place(built: Built, tmp_path: Path) -> None:
    wheel = make_wheel(built, tmp_path / "demo-1.0-py3-none-linux_x86_64.whl")
    seen: list[tuple[int, int]] = []
    report = inspect_target(
        str(wheel), progress=lambda done, total, _name: seen.append((done, total))
    )
    assert report.kind == "wheel"
    by_path = {b.path: b for b in report.binaries}
    assert set(by_path) == {f"demo/lib/{n}" for n in GPU_LIBS} | {
        "demo/_cpu.cpython-311-x86_64-linux-gnu.so"
    }
    for name in GPU_LIBS:
        direct = read_binary(built[name])
        member = by_path[f"demo/lib/{name}"]
        assert (member.sass_counts, member.ptx_counts) == (direct.sass_counts, direct.ptx_counts)
        assert member.containers == direct.containers
    assert not by_path["demo/_cpu.cpython-311-x86_64-linux-gnu.so"].fatbin_found
    assert report.files_with_gpu_code == 3
    assert report.sass == ("sm_75", "sm_86", "sm_90a", "sm_100f", "sm_120a")
    assert report.ptx == ("compute_80", "compute_86", "compute_90a", "compute_120f")
    assert report.sass_counts["sm_86"] == 2
    assert seen
    assert seen[-1][0] == seen[-1][1]
    assert not list(tmp_path.glob("demo"))  # nothing extracted


def test_zip_that_is_not_a_wheel(built: Built, tmp_path: Path) -> None:
    archive = make_wheel(built, tmp_path / "stuff.zip", with_wheel_file=False)
    with pytest.raises(InputError, match="not a wheel"):
        inspect_target(str(archive))


def test_broken_wheel(tmp_path: Path) -> None:
    fake = tmp_path / "broken-1.0-py3-none-any.whl"
    fake.write_bytes(b"PK\x03\x04 this is not really a zip")
    with pytest.raises(InputError, match="not a wheel"):
        inspect_target(str(fake))


def test_directory_is_searched_recursively(built: Built, tmp_path: Path) -> None:
    root = tmp_path / "tree"
    (root / "a" / "b").mkdir(parents=True)
    shutil.copy(built["libmix.so"], root / "a" / "libmix.so")
    shutil.copy(built["app"], root / "a" / "b" / "app")
    shutil.copy(built.cpu_lib, root / "libcpu.so")
    (root / "a" / "libmix.so.1").symlink_to("libmix.so")  # the same file twice: read once
    (root / "notes.txt").write_text("hello")
    (root / "data.bin").write_bytes(b"\x00\x01garbage")
    broken_elf = bytearray(b"\x7fELF\x02\x01\x01" + b"\0" * 57)
    struct.pack_into("<QHHHH", broken_elf, 0x28, 4096, 0, 64, 10, 1)  # headers past the end
    (root / "broken.so").write_bytes(bytes(broken_elf))
    report = inspect_target(str(root), compute_capability="9.0")
    paths = [b.path for b in report.binaries]
    assert paths == ["a/b/app", "a/libmix.so", "broken.so", "libcpu.so"]
    broken = next(b for b in report.binaries if b.path == "broken.so")
    assert broken.error is not None
    assert "ELF" in broken.error
    assert report.files_read == 3
    assert report.sass_counts == {"sm_75": 2, "sm_80": 2, "sm_90a": 2, "sm_100f": 2, "sm_120a": 2}
    assert report.runs_on is not None
    assert report.runs_on.ok
    assert report.runs_on.route == "native SASS sm_90a"
    per_file = {b.path: b.runs_on for b in report.binaries}
    assert per_file["a/b/app"] is not None
    assert not per_file["a/b/app"].ok  # sm_80 only: does not run on 9.0
    assert per_file["libcpu.so"] is None


def test_empty_directory(tmp_path: Path) -> None:
    report = inspect_target(str(tmp_path))
    assert report.binaries == ()
    assert report.notes == ("no binaries (ELF or PE files) found",)


@pytest.mark.parametrize("target", ["./missing.so", "/no/such/dir/", "missing.whl"])
def test_missing_path(target: str) -> None:
    with pytest.raises(InputError, match="no such file or directory"):
        inspect_target(target)


def test_text_file_target(tmp_path: Path) -> None:
    text = tmp_path / "k.cu"
    text.write_text("__global__ void k() {}\n")
    with pytest.raises(InputError, match="not an ELF or PE binary"):
        inspect_target(str(text))


def test_read_archs_union(built: Built, tmp_path: Path) -> None:
    archs = read_archs([built["libmix.so"], built["libptx.so"], built.cpu_lib])
    assert archs.sass == ("sm_75", "sm_90a", "sm_100f", "sm_120a")
    assert archs.ptx == ("compute_80", "compute_90a", "compute_120f")
    assert len(archs.files) == 3
    assert archs.error is None
    missing = read_archs([built["app"], tmp_path / "gone.so"])
    assert missing.sass == ("sm_80",)
    assert missing.error is not None
    assert "gone.so: no such file" in missing.error


# -- installed packages, in the real CPU torch venv ---------------------------------------


@pytest.mark.integration
def test_cpu_torch_package_is_clean(torch_python: str) -> None:
    report = inspect_target("torch", python=torch_python)
    assert report.kind == "package"
    assert report.package_version is not None
    assert report.package_version.startswith("2.")
    assert report.files_read >= 5
    assert any(b.path.endswith("libtorch_cpu.so") for b in report.binaries)
    assert all(not b.fatbin_found and b.error is None for b in report.binaries)
    assert all(b.notes == (NO_FATBIN,) for b in report.binaries)
    assert (report.sass, report.ptx, report.files_with_gpu_code) == ((), (), 0)


@pytest.mark.integration
def test_cpu_torch_lib_dir_reads_fast(torch_dir: Path) -> None:
    archs = read_archs([torch_dir / "lib"])
    assert archs.sass == ()
    assert archs.ptx == ()
    assert any(f.endswith("libtorch_cpu.so") for f in archs.files)


@pytest.mark.integration
def test_package_not_installed(torch_python: str) -> None:
    with pytest.raises(InputError, match="not installed"):
        inspect_target("surely-not-installed-pkg", python=torch_python)


def test_bad_interpreter(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="not found"):
        inspect_target("torch", python=str(tmp_path / "python"))
