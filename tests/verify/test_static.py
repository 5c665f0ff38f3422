"""The static loader check: ld.so order on real binaries, Windows order on a real DLL."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchsmith.verify import static
from torchsmith.verify.static import LoaderEnv, check_torch, loader_env, parse_ldconfig

from .conftest import torch_site

FIXTURES = Path(__file__).parent / "fixtures"

LDCONFIG = """\
3 libs found in cache `/etc/ld.so.cache'
\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1
\tlibm.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libm.so.6
\tlibm.so.6 (libc6) => /lib32/libm.so.6
"""


def test_parse_ldconfig_keeps_cache_order() -> None:
    cache = parse_ldconfig(LDCONFIG)
    assert cache["libm.so.6"] == ("/lib/x86_64-linux-gnu/libm.so.6", "/lib32/libm.so.6")
    assert cache["libz.so.1"] == ("/lib/x86_64-linux-gnu/libz.so.1",)


@pytest.mark.integration
def test_real_cpu_torch_resolves_completely() -> None:
    site = torch_site()
    env = loader_env("linux", [str(site)], "python")
    result = check_torch(site / "torch", env)
    assert result.missing == ()
    assert result.missing_lazy == ()
    assert result.unreadable == ()
    names = {Path(p).name for p in result.objects}
    assert {"libtorch_python.so", "libc10.so", "libtorch_cpu.so", "libgomp.so.1"} <= names
    assert any(n.startswith("libc.so") for n in names)  # found through ld.so.cache


@pytest.mark.integration
def test_deleted_core_library_is_named(torch_copy: Path) -> None:
    (torch_copy / "lib" / "libc10.so").unlink()
    env = loader_env("linux", [str(torch_copy.parent)], "python")
    result = check_torch(torch_copy, env)
    assert [m.name for m in result.missing] == ["libc10.so"]
    findings = static.findings(result, "2.13.0+cpu", None)
    assert findings[0].category == "missing-runtime-library"
    assert findings[0].severity == "error"
    assert "force-reinstall torch==2.13.0+cpu" in findings[0].fix


@pytest.mark.integration
def test_ld_library_path_beats_runpath_and_rpath_beats_both(
    torch_copy: Path, tmp_path: Path
) -> None:
    lib = torch_copy / "lib"
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy2(lib / "libc10.so", other / "libc10.so")
    env = LoaderEnv("linux", ld_library_path=(str(other),))
    walker = static._Walker(torch_copy, env)
    walker._read(str(lib / "libtorch_cpu.so"))
    found = walker._find("libc10.so", str(lib / "libtorch_cpu.so"), ())
    assert (found.via, found.path) == ("LD_LIBRARY_PATH", str(other / "libc10.so"))
    found = walker._find("libc10.so", str(lib / "libtorch_cpu.so"), (str(lib),))
    # DT_RPATH entries are ignored when the object has DT_RUNPATH (torch's libraries have it).
    assert found.via == "LD_LIBRARY_PATH"


def test_missing_cuda_library_points_at_its_pip_package(tmp_path: Path) -> None:
    torch_copy = tmp_path / "torch"
    # A libtorch_cuda-like dependency: libtorch.so needing libcudnn.so.9 (patched copy).
    result = static.StaticResult(
        torch_dir=str(torch_copy),
        objects=(),
        missing=(
            static.Resolved("libcudnn.so.9", None, str(torch_copy / "lib/libtorch_cuda.so"), ""),
        ),
    )
    (finding,) = static.findings(result, "2.11.0+cu130", "13.0")
    assert "nvidia-cudnn-cu13" in finding.fix
    assert "libtorch_cuda.so" in finding.message


def test_windows_search_order_with_a_real_dll(tmp_path: Path) -> None:
    torch_dir = tmp_path / "site" / "torch"
    (torch_dir / "lib").mkdir(parents=True)
    pyd = torch_dir / "_C.cp311-win_amd64.pyd"
    shutil.copy2(FIXTURES / "cudart64_12.dll", pyd)  # a real PE with real imports
    system32 = tmp_path / "System32"
    system32.mkdir()
    env = LoaderEnv("windows", system_dirs=(str(system32),))
    result = check_torch(torch_dir, env)
    assert result.missing == ()  # only API-set imports: always resolved
    # Now one that imports a DLL which is nowhere: cudart renamed as a dependency of _C.
    walker = static._Walker(torch_dir, env)
    assert walker._find("CUDART64_12.DLL", str(pyd), ()).path is None
    nvidia_bin = tmp_path / "site" / "nvidia" / "cuda_runtime" / "bin"
    nvidia_bin.mkdir(parents=True)
    shutil.copy2(FIXTURES / "cudart64_12.dll", nvidia_bin / "cudart64_12.dll")
    env = LoaderEnv("windows", fallback_dirs=(str(nvidia_bin),), system_dirs=(str(system32),))
    static._DIR_CACHE.clear()
    found = static._Walker(torch_dir, env)._find("CUDART64_12.DLL", str(pyd), ())
    assert (found.via, Path(found.path or "").name) == ("add_dll_directory", "cudart64_12.dll")


def test_windows_loader_env_adds_nvidia_bins(tmp_path: Path) -> None:
    (tmp_path / "nvidia" / "cudnn" / "bin").mkdir(parents=True)
    env = loader_env(
        "windows",
        [str(tmp_path)],
        r"C:\venv\Scripts\python.exe",
        {"CUDA_PATH": r"C:\CUDA", "PATH": "a;b", "SystemRoot": r"C:\Windows"},
    )
    assert env.fallback_dirs[0].endswith("bin")
    assert len(env.fallback_dirs) == 2
    assert env.system_dirs == (str(Path(r"C:\Windows") / "System32"),)


def test_windows_torch_layout_with_real_pe_files(tmp_path: Path) -> None:
    """A torch dir whose _C.pyd is a real CPython extension (imports python311.dll,
    KERNEL32.dll, VCRUNTIME140.dll and an API set), resolved in the Windows order."""
    torch_dir = tmp_path / "site" / "torch"
    (torch_dir / "lib").mkdir(parents=True)
    shutil.copy2(FIXTURES / "speedups.cp311-win_amd64.pyd", torch_dir / "_C.cp311-win_amd64.pyd")
    shutil.copy2(FIXTURES / "cudart64_12.dll", torch_dir / "lib" / "cudart64_12.dll")
    system32 = tmp_path / "Windows" / "System32"
    system32.mkdir(parents=True)
    (system32 / "kernel32.dll").write_bytes(b"MZ")  # case differs: Windows matches anyway
    python_dir = tmp_path / "Python311"
    python_dir.mkdir()
    (python_dir / "python311.dll").write_bytes(b"MZ")
    env = LoaderEnv("windows", system_dirs=(str(system32),), app_dirs=(str(python_dir),))
    static._DIR_CACHE.clear()
    result = check_torch(torch_dir, env)
    assert [m.name for m in result.missing] == ["VCRUNTIME140.dll"]
    assert result.missing_lazy == ()  # cudart64_12.dll in torch\lib imports only API sets
    (finding, *_) = static.findings(result, "2.11.0+cu128", "12.8")
    assert "Visual C++ Redistributable" in finding.fix
    assert "python311.dll" not in {Path(p).name for p in result.unreadable}


def _gcc_lib(gcc: str, out: Path, soname: str, *link: str, runpath: str | None = None) -> None:
    src = out.with_suffix(".c")
    src.write_text(f"int f_{abs(hash(soname)) % 10000}(void) {{ return 1; }}\n")
    args = [gcc, "-shared", "-fPIC", "-o", str(out), str(src), f"-Wl,-soname,{soname}"]
    if runpath:
        args.append(f"-Wl,--enable-new-dtags,-rpath,{runpath}")
    subprocess.run([*args, "-Wl,--no-as-needed", *link], check=True, capture_output=True)
    src.unlink()


@pytest.mark.integration
def test_missing_cudnn_in_a_gcc_built_cuda_layout_matches_ldd(tmp_path: Path) -> None:
    """Real ELF files laid out like a CUDA wheel: _C -> libtorch_cuda.so -> libcudnn.so.9 through
    RUNPATH $ORIGIN/../../nvidia/cudnn/lib; deleting libcudnn.so.9 is named, as ldd says."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc")
    site = tmp_path / "site"
    cudnn_dir = site / "nvidia" / "cudnn" / "lib"
    lib = site / "torch" / "lib"
    cudnn_dir.mkdir(parents=True)
    lib.mkdir(parents=True)
    _gcc_lib(gcc, cudnn_dir / "libcudnn.so.9", "libcudnn.so.9")
    _gcc_lib(
        gcc,
        lib / "libtorch_cuda.so",
        "libtorch_cuda.so",
        f"-L{cudnn_dir}",
        "-l:libcudnn.so.9",
        runpath="$ORIGIN/../../nvidia/cudnn/lib",
    )
    c_ext = site / "torch" / "_C.cpython-311-x86_64-linux-gnu.so"
    _gcc_lib(gcc, c_ext, "_C", f"-L{lib}", "-ltorch_cuda", runpath="$ORIGIN/lib")
    env = LoaderEnv("linux", ld_cache=parse_ldconfig(""))
    result = check_torch(site / "torch", env)
    assert result.missing == ()
    assert str(cudnn_dir / "libcudnn.so.9") in result.objects
    (cudnn_dir / "libcudnn.so.9").unlink()
    result = check_torch(site / "torch", env)
    assert [(m.name, Path(m.needed_by).name) for m in result.missing] == [
        ("libcudnn.so.9", "libtorch_cuda.so")
    ]
    (finding,) = static.findings(result, "2.11.0+cu130", "13.0")
    assert "pip install nvidia-cudnn-cu13" in finding.fix
    ldd = shutil.which("ldd")
    if ldd is not None:
        said = subprocess.run([ldd, str(c_ext)], capture_output=True, text=True, check=False)
        assert "libcudnn.so.9 => not found" in said.stdout


@pytest.mark.integration
def test_garbage_extension_module_is_damaged_not_resolved(torch_copy: Path) -> None:
    """torch/_C*.so replaced by text: ld.so stops on it ("file too short"), so the check fails
    naming the file instead of passing on the 19 libraries of torch/lib it still resolves."""
    (c_ext,) = torch_copy.glob("_C*.so")
    c_ext.unlink()
    c_ext.write_text("garbage\n")
    env = loader_env("linux", [str(torch_copy.parent)], "python")
    result = check_torch(torch_copy, env)
    (damaged,) = result.missing
    assert (damaged.name, damaged.path, damaged.needed_by) == (c_ext.name, str(c_ext), "")
    assert damaged.damaged == "is not an ELF file"
    assert result.unreadable == (str(c_ext),)
    (finding,) = static.findings(result, "2.13.0+cpu", None)
    assert (finding.category, finding.severity) == ("missing-runtime-library", "error")
    assert "is present but damaged: it is not an ELF file" in finding.message
    assert "`import torch` fails" in finding.message
    assert "part of the torch wheel itself" in finding.fix


@pytest.mark.integration
def test_empty_core_library_is_damaged_not_missing(torch_copy: Path) -> None:
    lib = torch_copy / "lib" / "libtorch_cpu.so"
    lib.unlink()
    lib.touch()
    env = loader_env("linux", [str(torch_copy.parent)], "python")
    result = check_torch(torch_copy, env)
    assert [(m.name, m.damaged, m.via) for m in result.missing] == [
        ("libtorch_cpu.so", "is empty", "runpath")
    ]
    assert result.missing_lazy == ()  # the same file, reached again from torch/lib: said once
    (finding,) = static.findings(result, "2.13.0+cpu", None)
    assert "cannot be found" not in finding.message
    assert "libtorch_cpu.so is present but damaged: it is empty" in finding.message
    assert "needed by libtorch_python.so" in finding.message


def test_a_damaged_candidate_stops_the_search_as_ld_so_does(tmp_path: Path) -> None:
    """ld.so skips a library of another ELF class, but fails on a file that is no ELF at all
    (a linker script here), even when a good copy comes later in the search."""
    dirs = [tmp_path / d for d in ("32bit", "script", "good")]
    for d in dirs:
        d.mkdir()
    (dirs[0] / "libx.so").write_bytes(b"\x7fELF\x01\x01\x01" + b"\0" * 13)
    (dirs[1] / "libx.so").write_text("INPUT(-lx)\n")
    shutil.copy2(Path(sys.executable).resolve(), dirs[2] / "libx.so")  # an ELF of this machine
    head = (dirs[2] / "libx.so").read_bytes()[:20]
    walker = static._Walker(tmp_path, LoaderEnv("linux"))
    walker.machine = (head[4], int.from_bytes(head[18:20], "little"))  # this machine's
    path = [str(d) for d in dirs]
    found = walker._find("libx.so", str(tmp_path / "needer.so"), (path[0], path[2]))
    assert (found.path, found.via, found.damaged) == (str(dirs[2] / "libx.so"), "rpath", None)
    found = walker._find("libx.so", str(tmp_path / "needer.so"), tuple(path))
    assert (found.path, found.damaged) == (str(dirs[1] / "libx.so"), "is not an ELF file")


@pytest.mark.parametrize(
    ("version", "command"),
    [
        (
            "2.13.0+cpu",
            "pip install --force-reinstall torch==2.13.0+cpu "
            "--index-url https://download.pytorch.org/whl/cpu",
        ),
        ("2.11.0+cu128", "torch==2.11.0+cu128 --index-url https://download.pytorch.org/whl/cu128"),
        ("2.9.1+rocm6.4", "--index-url https://download.pytorch.org/whl/rocm6.4"),
        ("2.9.0+xpu", "--index-url https://download.pytorch.org/whl/xpu"),
        ("2.9.0", "pip install --force-reinstall torch==2.9.0"),
        ("2.10.0a0+git1234abc", "pip install --force-reinstall torch==2.10.0a0+git1234abc"),
    ],
)
def test_reinstall_names_the_index_of_a_local_build(version: str, command: str) -> None:
    """PyPI has no +cpu/+cuXXX/+rocm/+xpu builds: pip finds them only on their own index."""
    said = static.reinstall_torch(version)
    assert command in said
    if "--index-url" not in command:
        assert "--index-url" not in said
    assert command in static.fix_for("libc10.so", version, None)
