"""CUDA toolkit discovery: parsers on recorded outputs, the real nvcc 13.0, real pip nvcc wheels,
torch's own ``_find_cuda_home()`` as the referee, and Windows layouts replayed on Linux."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.probe.fakes import fake_tool
from torchsmith import platforms
from torchsmith.probe import toolkits
from torchsmith.probe.toolkits import (
    parse_dist_info_version,
    parse_gpu_names_from_help,
    parse_nvcc_list,
    parse_nvcc_version,
    parse_version_json,
    parse_version_txt,
    probe_cuda_toolkits,
    torch_cuda_home,
)

FIXTURES = Path(__file__).parent / "fixtures" / "toolkits"
REPO = Path(__file__).resolve().parents[2]
REAL_CUDA = Path("/usr/local/cuda")
REAL_NVCC = REAL_CUDA / "bin" / "nvcc"
SYSTEM_PATH = "/usr/bin:/bin"
SM_13_0 = tuple(
    f"sm_{n}" for n in (75, 80, 86, 87, 88, 89, 90, 100, 110, 103, 120, 121)
)  # nvcc's own order
needs_nvcc = pytest.mark.skipif(not REAL_NVCC.is_file(), reason="needs /usr/local/cuda/bin/nvcc")


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def fake_nvcc(path: Path, version_text: str) -> Path:
    """An nvcc that prints a recorded ``--version`` and the 13.0 target lists."""
    lists = {
        "--version": version_text,
        "--list-gpu-code": fixture("nvcc-13.0-linux-list-gpu-code.txt"),
        "--list-gpu-arch": fixture("nvcc-13.0-linux-list-gpu-arch.txt"),
    }
    return fake_tool(path, f"sys.stdout.write({lists!r}[sys.argv[1]])")


# ---------------------------------------------------------------------------- parsers


def test_parse_nvcc_version_linux_13_0() -> None:
    assert parse_nvcc_version(fixture("nvcc-13.0-linux-version.txt")) == ("13.0", "13.0.88")


def test_parse_nvcc_version_windows_12_3_with_crlf() -> None:
    assert parse_nvcc_version(fixture("nvcc-12.3-windows-version.txt")) == ("12.3", "12.3.107")


def test_parse_ptxas_version_from_a_pip_wheel() -> None:
    assert parse_nvcc_version(fixture("ptxas-12.4-pip-version.txt")) == ("12.4", "12.4.131")


def test_parse_nvcc_version_rejects_other_text() -> None:
    assert parse_nvcc_version("bash: nvcc: command not found") is None


def test_parse_nvcc_lists_keep_nvccs_order() -> None:
    assert parse_nvcc_list(fixture("nvcc-13.0-linux-list-gpu-code.txt")) == SM_13_0
    arch = parse_nvcc_list(fixture("nvcc-13.0-linux-list-gpu-arch.txt"))
    assert arch == tuple(s.replace("sm_", "compute_") for s in SM_13_0)


def test_parse_help_of_ptxas_12_4_gives_base_targets() -> None:
    sm, compute = parse_gpu_names_from_help(fixture("ptxas-12.4-pip-help.txt"))
    assert sm == tuple(f"sm_{n}" for n in (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90))
    assert compute[0] == "compute_50"
    assert compute[-1] == "compute_90"


def test_parse_help_of_nvcc_13_0_agrees_with_list_gpu_code() -> None:
    sm, compute = parse_gpu_names_from_help(fixture("nvcc-13.0-linux-help.txt"))
    assert set(sm) == set(SM_13_0)
    assert len(compute) == len(SM_13_0)


def test_parse_version_json_prefers_the_nvcc_version() -> None:
    assert parse_version_json(fixture("version-12.3.json")) == ("12.3", "12.3.107")
    assert parse_version_json("not json") is None
    assert parse_version_json("[]") is None


def test_parse_version_txt_of_old_toolkits() -> None:
    assert parse_version_txt(fixture("version-10.2.txt")) == ("10.2", "10.2.89")


def test_parse_dist_info_names() -> None:
    assert parse_dist_info_version("nvidia_cuda_nvcc-13.0.88.dist-info") == ("13.0", "13.0.88")
    cu12 = "nvidia_cuda_nvcc_cu12-12.4.131.dist-info"
    assert parse_dist_info_version(cu12) == ("12.4", "12.4.131")
    assert parse_dist_info_version("nvidia_cuda_runtime-13.0.96.dist-info") is None


# ---------------------------------------------------------------------------- the real nvcc 13.0


@needs_nvcc
def test_real_toolkit_through_path_is_found_and_selected() -> None:
    env = {"PATH": f"{REAL_CUDA}/bin:{SYSTEM_PATH}"}
    found = probe_cuda_toolkits(env)
    assert len(found) == 1  # PATH, /usr/local/cuda and /usr/local/cuda-13.0 are one toolkit
    tk = found[0]
    assert tk.root == str(REAL_CUDA.resolve())
    assert (tk.version, tk.full_version, tk.error) == ("13.0", "13.0.88", None)
    assert tk.sm_targets == SM_13_0
    assert tk.compute_targets[0] == "compute_75"
    assert tk.found_via[0] == "PATH"
    assert "/usr/local/cuda" in tk.found_via
    assert tk.selected
    assert tk.selected_reason is not None
    assert "first nvcc on PATH" in tk.selected_reason


@needs_nvcc
def test_real_toolkit_through_usr_local_cuda_only() -> None:
    (tk,) = probe_cuda_toolkits({"PATH": SYSTEM_PATH})
    assert tk.found_via[0] == "/usr/local/cuda"
    assert tk.sm_targets == SM_13_0
    assert tk.selected
    assert tk.selected_reason is not None
    assert "falls back to /usr/local/cuda" in tk.selected_reason


@needs_nvcc
def test_cuda_home_pointing_nowhere_is_still_what_torch_uses(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-cuda"
    env = {"PATH": f"{REAL_CUDA}/bin:{SYSTEM_PATH}", "CUDA_HOME": str(missing)}
    found = {tk.root: tk for tk in probe_cuda_toolkits(env)}
    bad = found[str(missing)]
    assert bad.selected
    assert bad.error is not None
    assert "does not exist" in bad.error
    assert bad.selected_reason is not None
    assert "CMake's FindCUDAToolkit would pick" in bad.selected_reason
    assert not found[str(REAL_CUDA.resolve())].selected


@needs_nvcc
def test_wrapper_script_on_path_makes_torch_pick_its_parent(tmp_path: Path) -> None:
    """A ``bin/nvcc`` wrapper outside the toolkit (like /usr/local/bin/nvcc on this machine)
    makes torch use the wrapper's grandparent as CUDA_HOME, which has no CUDA headers."""
    wrapper = tmp_path / "prefix" / "bin" / "nvcc"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(f'#!/bin/sh\nexec {REAL_NVCC.resolve()} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    found = {tk.root: tk for tk in probe_cuda_toolkits({"PATH": f"{wrapper.parent}:{SYSTEM_PATH}"})}
    picked = found[str(tmp_path / "prefix")]
    assert picked.version == "13.0"
    assert picked.selected
    assert picked.selected_reason is not None
    assert f"wrapper script for {REAL_NVCC.resolve()}" in picked.selected_reason
    assert "no cuda_runtime.h" in picked.selected_reason
    assert not found[str(REAL_CUDA.resolve())].selected


# ---------------------------------------------------------------------------- torch as referee


def _torch_python() -> Path | None:
    venv = Path(os.environ.get("TORCHSMITH_TEST_TORCH_VENV", REPO / ".cache" / "torch-venv"))
    python = venv / "bin" / "python"
    return python if python.is_file() else None


@needs_nvcc
@pytest.mark.integration
@pytest.mark.skipif(_torch_python() is None, reason="needs the CPU torch venv")
def test_torch_find_cuda_home_agrees(tmp_path: Path) -> None:
    """Run the real ``torch.utils.cpp_extension._find_cuda_home()`` in the torch venv under
    several environments and compare with :func:`torch_cuda_home`."""
    wrapper_bin = tmp_path / "wrap" / "bin"
    fake_tool(wrapper_bin / "nvcc", "pass")
    cases = [
        {"PATH": SYSTEM_PATH},
        {"PATH": f"{REAL_CUDA}/bin:{SYSTEM_PATH}"},
        {"PATH": f"{wrapper_bin}:{REAL_CUDA}/bin:{SYSTEM_PATH}"},
        {"PATH": SYSTEM_PATH, "CUDA_PATH": "/opt/elsewhere"},
        {"PATH": f"{REAL_CUDA}/bin:{SYSTEM_PATH}", "CUDA_HOME": "/x", "CUDA_PATH": "/y"},
    ]
    script = (
        "import json, os, sys\n"
        "import torch.utils.cpp_extension as ext\n"
        "out = []\n"
        "for env in json.load(sys.stdin):\n"
        "    os.environ.clear(); os.environ.update(env)\n"
        "    out.append(ext._find_cuda_home())\n"
        "print(json.dumps(out))\n"
    )
    python = _torch_python()
    assert python is not None
    run = subprocess.run(
        [str(python), "-c", script],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    theirs = json.loads(run.stdout.strip().splitlines()[-1])
    ours = [str(home) if (home := torch_cuda_home(env)[0]) else None for env in cases]
    assert ours == theirs


# ---------------------------------------------------------------------------- pip wheels, for real

PIP_WHEELS = {
    "cu12": "nvidia-cuda-nvcc-cu12==12.4.131",  # ptxas only: cu11/cu12 wheels ship no nvcc
    "cu13": "nvidia-cuda-nvcc==13.0.48",  # an older 13.0 than the system's 13.0.88
}


@pytest.fixture(scope="session")
def pip_site_packages() -> dict[str, Path]:
    """The real nvcc wheels from PyPI, installed once into .cache/ (reused on later runs)."""
    base = REPO / ".cache" / "test-pip-nvcc"
    out = {}
    for key, spec in PIP_WHEELS.items():
        target = base / spec.replace("==", "-")
        if not (target / ".ready").is_file():
            cmd = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
            cmd += ["--no-deps", "--upgrade", "--target", str(target), spec]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
            if done.returncode != 0:
                pytest.fail(f"pip could not install {spec}: {done.stderr.strip()[-500:]}")
            (target / ".ready").touch()
        out[key] = target
    return out


@pytest.mark.integration
@pytest.mark.slow
def test_pip_cu13_wheel_is_a_real_toolkit(pip_site_packages: dict[str, Path]) -> None:
    sp = pip_site_packages["cu13"]
    (tk,) = probe_cuda_toolkits({"PATH": SYSTEM_PATH}, site_packages=[sp], standard_dirs=())
    assert tk.root == str((sp / "nvidia" / "cu13").resolve())
    assert tk.nvcc == str(sp / "nvidia" / "cu13" / "bin" / "nvcc")
    assert (tk.version, tk.full_version, tk.error) == ("13.0", "13.0.48", None)
    assert tk.sm_targets == SM_13_0
    assert tk.found_via == ("pip",)
    assert not tk.selected  # torch never looks into site-packages


@pytest.mark.integration
@pytest.mark.slow
def test_pip_cu12_wheel_has_ptxas_but_no_nvcc(pip_site_packages: dict[str, Path]) -> None:
    sp = pip_site_packages["cu12"]
    (tk,) = probe_cuda_toolkits({"PATH": SYSTEM_PATH}, site_packages=[sp], standard_dirs=())
    assert tk.root == str((sp / "nvidia" / "cuda_nvcc").resolve())
    assert tk.nvcc is None
    assert (tk.version, tk.full_version) == ("12.4", "12.4.131")
    assert tk.sm_targets[0] == "sm_50"
    assert tk.sm_targets[-1] == "sm_90"
    assert tk.error is not None
    assert "no nvcc" in tk.error


@needs_nvcc
@pytest.mark.integration
@pytest.mark.slow
def test_system_and_pip_toolkits_side_by_side(pip_site_packages: dict[str, Path]) -> None:
    sps = [pip_site_packages["cu12"], pip_site_packages["cu13"]]
    env = {"PATH": f"{REAL_CUDA}/bin:{SYSTEM_PATH}"}
    found = probe_cuda_toolkits(env, site_packages=sps)
    assert [tk.full_version for tk in found] == ["13.0.88", "12.4.131", "13.0.48"]
    assert [tk.selected for tk in found] == [True, False, False]


# ---------------------------------------------------------------------------- failures


def test_hanging_nvcc_times_out_quickly_and_falls_back_to_version_json(tmp_path: Path) -> None:
    root = tmp_path / "cuda-hang"
    fake_tool(root / "bin" / "nvcc", "time.sleep(60)")
    (root / "version.json").write_text(fixture("version-12.3.json"), encoding="utf-8")
    started = time.monotonic()
    (tk,) = probe_cuda_toolkits(
        {"PATH": f"{root / 'bin'}:{SYSTEM_PATH}"}, standard_dirs=(), timeout=0.5
    )
    assert time.monotonic() - started < 8
    assert tk.error is not None
    assert "timed out" in tk.error
    assert (tk.version, tk.full_version) == ("12.3", "12.3.107")
    assert tk.selected


# nvcc 10.2's --help line for --gpu-architecture, as quoted in CMake issue 23293
# (https://gitlab.kitware.com/cmake/cmake/-/issues/23293).
NVCC_10_2_HELP = """--gpu-architecture <arch> (-arch)
        Allowed values for this option: 'compute_30','compute_32','compute_35',
        'compute_37','compute_50','compute_52','compute_53','compute_60','compute_61',
        'compute_62','compute_70','compute_72','compute_75','sm_30','sm_32','sm_35',
        'sm_37','sm_50','sm_52','sm_53','sm_60','sm_61','sm_62','sm_70','sm_72',
        'sm_75'.
"""


def _old_nvcc(path: Path, help_text: str) -> None:
    body = (
        f"answers = {{'--version': 'Cuda compilation tools, release 10.2, V10.2.89', "
        f"'--help': {help_text!r}}}\n"
        "if sys.argv[1] in answers:\n"
        "    print(answers[sys.argv[1]])\n"
        "else:\n"
        '    print("nvcc fatal   : Unknown option \'" + sys.argv[1] + "\'"); sys.exit(1)'
    )
    fake_tool(path, body)


def test_nvcc_without_list_flags_falls_back_to_help(tmp_path: Path) -> None:
    """An nvcc from before ``--list-gpu-code`` rejects it; the targets come from --help."""
    _old_nvcc(tmp_path / "cuda-10.2" / "bin" / "nvcc", NVCC_10_2_HELP)
    (tk,) = probe_cuda_toolkits({"PATH": SYSTEM_PATH}, standard_dirs=[str(tmp_path / "cuda-*")])
    assert tk.version == "10.2"
    assert tk.sm_targets[0] == "sm_30"
    assert tk.sm_targets[-1] == "sm_75"
    assert tk.compute_targets[0] == "compute_30"
    assert tk.error is None
    assert tk.found_via == (str(tmp_path / "cuda-*"),)


def test_nvcc_without_list_flags_or_help_says_why(tmp_path: Path) -> None:
    _old_nvcc(tmp_path / "cuda-10.2" / "bin" / "nvcc", "no help here")
    (tk,) = probe_cuda_toolkits({"PATH": SYSTEM_PATH}, standard_dirs=[str(tmp_path / "cuda-*")])
    assert (tk.version, tk.sm_targets) == ("10.2", ())
    assert tk.error is not None
    assert "Unknown option '--list-gpu-code'" in tk.error


def test_nothing_found_is_an_empty_tuple() -> None:
    assert probe_cuda_toolkits({"PATH": ""}, standard_dirs=()) == ()


def test_conda_toolkit_on_linux(tmp_path: Path) -> None:
    prefix = tmp_path / "conda-env"
    fake_nvcc(prefix / "bin" / "nvcc", fixture("nvcc-13.0-linux-version.txt"))
    (tk,) = probe_cuda_toolkits({"PATH": "", "CONDA_PREFIX": str(prefix)}, standard_dirs=())
    assert tk.found_via == ("conda",)
    assert tk.version == "13.0"


# ---------------------------------------------------------------------------- Windows on Linux


def _windows_tree(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """Program Files with CUDA v11.8 (nvcc.exe a plain file) and v12.3 (nvcc.exe that
    answers with a recorded Windows 12.3 output)."""
    program_files = tmp_path / "Program Files"
    cuda = program_files / "NVIDIA GPU Computing Toolkit" / "CUDA"
    v118, v123 = cuda / "v11.8", cuda / "v12.3"
    (v118 / "bin").mkdir(parents=True)
    (v118 / "bin" / "nvcc.exe").write_bytes(b"MZ\x90\x00")  # a PE header: not runnable here
    (v118 / "version.json").write_text(
        json.dumps({"cuda": {"version": "11.8.0"}, "cuda_nvcc": {"version": "11.8.89"}}),
        encoding="utf-8",
    )
    fake_nvcc(v123 / "bin" / "nvcc.exe", fixture("nvcc-12.3-windows-version.txt"))
    (v123 / "version.json").write_text(fixture("version-12.3.json"), encoding="utf-8")
    env = {
        "ProgramFiles": str(program_files),
        "CUDA_PATH_V11_8": str(v118),
        "CUDA_PATH_V12_3": str(v123),
        "Path": str(tmp_path / "Windows" / "System32"),
        "PATHEXT": ".COM;.EXE;.BAT;.CMD",
    }
    return env, v118, v123


def test_windows_cuda_path_selects_and_every_install_is_listed(tmp_path: Path) -> None:
    env, _, v123 = _windows_tree(tmp_path)
    env["CUDA_PATH"] = str(v123)  # what the CUDA installer sets: the last one installed
    with platforms.override("windows"):
        found = {Path(tk.root).name: tk for tk in probe_cuda_toolkits(env)}
    assert set(found) == {"v11.8", "v12.3"}
    new, old = found["v12.3"], found["v11.8"]
    assert (new.version, new.full_version, new.error) == ("12.3", "12.3.107", None)
    assert new.nvcc == str(v123 / "bin" / "nvcc.exe")
    assert new.found_via == ("CUDA_PATH", "CUDA_PATH_V12_3", "Program Files")
    assert new.selected
    assert new.selected_reason is not None
    assert new.selected_reason.startswith("CUDA_PATH is set")
    assert (old.version, old.full_version) == ("11.8", "11.8.89")  # from version.json
    assert old.error is not None
    assert not old.selected


def test_windows_without_cuda_path_torch_takes_the_alphabetically_first(tmp_path: Path) -> None:
    env, _, _ = _windows_tree(tmp_path)
    with platforms.override("windows"):
        found = probe_cuda_toolkits(env)
        home, reason = torch_cuda_home(env)
    assert home is not None
    assert home.name == "v11.8"
    assert "not newest" in reason
    assert [Path(tk.root).name for tk in found if tk.selected] == ["v11.8"]


def test_windows_nvcc_on_path_uses_pathext(tmp_path: Path) -> None:
    env, _, v123 = _windows_tree(tmp_path)
    env["Path"] = f"{tmp_path / 'nothing'};{v123 / 'bin'}"
    with platforms.override("windows"):
        home, reason = torch_cuda_home(env)
    assert home == v123
    assert "first nvcc on PATH" in reason


def test_windows_conda_toolkit_lives_under_library(tmp_path: Path) -> None:
    prefix = tmp_path / "miniforge" / "envs" / "build"
    fake_nvcc(prefix / "Library" / "bin" / "nvcc.exe", fixture("nvcc-12.3-windows-version.txt"))
    with platforms.override("windows"):
        (tk,) = probe_cuda_toolkits(
            {"CONDA_PREFIX": str(prefix), "ProgramFiles": str(tmp_path / "none")}
        )
    assert tk.root == str(prefix / "Library")
    assert (tk.version, tk.found_via) == ("12.3", ("conda",))


def test_windows_pip_wheel_layout(tmp_path: Path) -> None:
    """nvidia-cuda-nvcc 13.x for win_amd64 has the same layout: nvidia/cu13/bin/nvcc.exe."""
    sp = tmp_path / "Lib" / "site-packages"
    fake_nvcc(sp / "nvidia" / "cu13" / "bin" / "nvcc.exe", fixture("nvcc-13.0-linux-version.txt"))
    with platforms.override("windows"):
        (tk,) = probe_cuda_toolkits({"ProgramFiles": str(tmp_path / "none")}, site_packages=[sp])
    assert (tk.version, tk.found_via) == ("13.0", ("pip",))


def test_probe_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(toolkits, "discover", boom)
    (tk,) = probe_cuda_toolkits({"PATH": ""})
    assert tk.error is not None
    assert "disk on fire" in tk.error
