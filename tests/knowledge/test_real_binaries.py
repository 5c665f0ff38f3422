"""The knowledge base against real binaries: the CPU torch venv, recorded cuobjdump and inspect."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from torchsmith.knowledge import load_knowledge
from torchsmith.util.cmd import run

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]


def _torch_python() -> Path:
    root = Path(os.environ.get("TORCHSMITH_TEST_TORCH_VENV", REPO / ".cache" / "torch-venv"))
    return root / "bin" / "python"


def test_cuobjdump_of_torch_2_11_cu130_matches_the_kb() -> None:
    # cuobjdump --list-elf of libtorch_cuda.so from torch 2.11.0+cu130 (PyPI), on an H200
    text = (FIXTURES / "cuobjdump_elf_2.11.0+cu130.txt").read_text()
    archs = set(re.findall(r"\.(sm_\d+[af]?)\.cubin", text))
    kb = load_knowledge()
    wheel = kb.variant_archs("2.11.0", "cu130", "linux", "x86_64")
    assert wheel is not None
    assert set(wheel.sass) | set(wheel.extra) == archs
    assert wheel.ptx == ()  # cuobjdump --list-elf lists no PTX; the PyPI wheel has none
    assert kb.pypi_default("2.11.0", "linux") == "cu130"


@pytest.mark.integration
def test_cpu_torch_2_13_has_no_gpu_code_and_kb_agrees() -> None:
    python = _torch_python()
    if not python.exists():
        pytest.skip(f"no torch venv at {python}")
    script = (
        "import torch, sys; "
        "print(torch.__version__); print(torch.version.cuda); "
        "print(','.join(torch.cuda.get_arch_list())); "
        "print(f'{sys.version_info[0]}.{sys.version_info[1]}')"
    )
    result = run([str(python), "-c", script], timeout=120, check=True)
    version, cuda, archs, py = result.stdout.strip().splitlines()[-4:]
    assert version == "2.13.0+cpu"
    assert cuda == "None"
    assert archs == ""
    kb = load_knowledge()
    wheel = kb.variant_archs("2.13.0", "cpu", "linux", "x86_64")
    assert wheel is not None
    assert wheel.sass == ()
    assert wheel.ptx == ()
    assert kb.python_supported("2.13.0", py, "linux") is True


def test_what_inspect_read_on_the_gpu_machine_matches_the_kb() -> None:
    """`torchsmith inspect torch` on the H200 machine (torch 2.11.0+cu130, recorded JSON)."""
    recorded = REPO / "tests" / "fixtures" / "h200-linux" / "inspect-torch.json"
    data = json.loads(recorded.read_text())["data"]
    assert data["package_version"].startswith("2.11.0")
    lib = next(b for b in data["binaries"] if b["path"].endswith("libtorch_cuda.so"))
    counts: dict[str, int] = lib["sass_counts"]
    whole = max(counts.values())
    archs = load_knowledge().variant_archs("2.11.0", "cu130", "linux", "x86_64")
    assert archs is not None
    assert set(archs.sass) == {a for a, n in counts.items() if n == whole}
    assert set(archs.extra) == {a for a, n in counts.items() if n < whole}
    assert tuple(archs.ptx) == tuple(lib["ptx"]) == ()
