"""Fixes for a log from Windows are written for cmd and PowerShell, not for a POSIX shell.

The logs are corpus cases (real, from their threads), and a compiler's real "Killed" line; the
machine context is the two facts ``--probe`` gives that matter here (its OS and RAM).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsmith.explain import explain_files, explain_text
from torchsmith.explain.rules import load_rules
from torchsmith.explain.shell import for_windows, marks, platform_of

CORPUS = Path(__file__).parent / "corpus"


def _explain(case: str) -> tuple[str, dict[str, str]]:
    result = explain_files(sorted(str(p) for p in (CORPUS / case).glob("log*.txt")))
    return result.fixes_for, {d.rule: d.fix for d in result.diagnoses}


def test_a_command_on_its_own_line_gets_a_line_per_shell() -> None:
    fix = '3. rebuild:\n   TORCH_CUDA_ARCH_LIST="8.6 12.0" pip install --no-cache-dir <package>'
    assert for_windows(fix) == (
        "3. rebuild:\n"
        '   cmd:        set "TORCH_CUDA_ARCH_LIST=8.6 12.0"\n'
        '   PowerShell: $env:TORCH_CUDA_ARCH_LIST="8.6 12.0"\n'
        "   pip install --no-cache-dir <package>"
    )


def test_a_command_in_a_sentence_gets_both_settings_before_it() -> None:
    fix = "rebuild with MAX_JOBS=1 NVCC_THREADS=1 pip install -v <package> for readable output."
    assert for_windows(fix) == (
        'rebuild with set "MAX_JOBS=1" & set "NVCC_THREADS=1" (PowerShell: $env:MAX_JOBS="1"; '
        '$env:NVCC_THREADS="1"), then pip install -v <package> for readable output.'
    )


@pytest.mark.parametrize(
    "prose",
    [
        'set USE_LIBUV=0 before torchrun (PowerShell: $env:USE_LIBUV="0")',
        "KMP_DUPLICATE_LIB_OK=TRUE only hides the check.",
        "rerun with MAX_JOBS=1 to get unmixed output.",
        "with TORCHDYNAMO_DISABLE=1 is set",
    ],
)
def test_settings_in_prose_are_left_alone(prose: str) -> None:
    assert for_windows(prose) == prose


def test_powershell_quotes_a_value_with_a_dollar() -> None:
    assert "$env:X='a$b'" in for_windows("X=a$b python -c pass")


def test_the_logs_paths_decide_the_platform() -> None:
    windows = b'  File "C:\\Users\\me\\venv\\lib\\site-packages\\torch\\__init__.py", line 1\n'
    posix = b'  File "/home/me/venv/lib/python3.11/site-packages/torch/__init__.py", line 1\n'
    assert marks(windows) == (2, 0)  # the drive letter and site-packages between backslashes
    assert marks(posix) == (0, 1)
    assert platform_of(*marks(windows)) == "windows"
    assert platform_of(*marks(posix), machine_os="windows") == "posix"  # the log wins
    assert platform_of(0, 0, machine_os="windows") == "windows"  # else the machine
    assert platform_of(0, 0) == "posix"


def test_a_windows_build_log_gets_cmd_and_powershell_commands() -> None:
    # nerfstudio#844: tiny-cuda-nn built on Windows by an nvcc that does not know compute_89
    fixes_for, fixes = _explain("nerfstudio-844-tcnn-compute89-old-nvcc-windows")
    assert fixes_for == "windows"
    fix = fixes["toolkit.nvcc-unsupported-arch"]
    assert "export" not in fix
    assert "/usr/local/cuda" not in fix
    assert 'set "CUDA_HOME=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v<' in fix
    assert "$env:CUDA_HOME=" in fix


def test_a_windows_runtime_log_sets_the_arch_list_before_pip() -> None:
    # Fooocus#4164: an RTX 5060 on Windows 11 with a torch that has no sm_120
    fixes_for, fixes = _explain("fooocus-4164-rtx5060-no-kernel-image-win11")
    assert fixes_for == "windows"
    fix = fixes["arch.no-kernel-image"]
    assert 'cmd:        set "TORCH_CUDA_ARCH_LIST=' in fix
    assert "PowerShell: $env:TORCH_CUDA_ARCH_LIST=" in fix
    assert '" pip install' not in fix


def test_a_linux_log_keeps_the_posix_fix() -> None:
    fixes_for, fixes = _explain("pytorch-133275-not-use-cuda-cache")
    assert fixes_for == "posix"
    assert "rm -rf build/CMakeCache.txt" in fixes["cache.not-use-cuda"]


def test_a_log_without_paths_takes_the_probes_platform() -> None:
    killed = "c++: fatal error: Killed signal terminated program cc1plus\n"
    windows = explain_text(killed, context={"os": "windows", "ram_gb": "32"})
    linux = explain_text(killed, context={"os": "linux", "ram_gb": "32"})
    assert (windows.fixes_for, linux.fixes_for) == ("windows", "posix")
    assert "PowerShell: $env:MAX_JOBS=" in windows.diagnoses[0].fix
    assert "MAX_JOBS=" in linux.diagnoses[0].fix
    assert "$env:" not in linux.diagnoses[0].fix


def test_every_windows_fix_is_windows_only() -> None:
    for rule in load_rules():
        if rule.fix_windows:
            for posix_only in ("rm -rf", "export ", "~/"):
                assert posix_only not in rule.fix_windows, rule.id
