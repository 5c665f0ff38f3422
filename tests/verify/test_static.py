"""The static loader check: ld.so order on real binaries, Windows order on a real DLL."""

from __future__ import annotations

import shutil
import subprocess
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
