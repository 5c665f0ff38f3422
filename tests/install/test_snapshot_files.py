"""Restoring a snapshot checks files, not only names and versions (real pip, real wheels).

Two wheels that ship one module are written in the wheel format (PEP 427: a zip with
METADATA, WHEEL and RECORD) and installed with the venv's own pip, as a companion that
vendors a module does: the second overwrites the first's file. A restore must remove the
second and put the first's file back, though the first kept its version.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.install.conftest import fresh_venv
from torchsmith.install import snapshot

pytestmark = pytest.mark.integration


def wheel(folder: Path, name: str, files: dict[str, str]) -> Path:
    path = folder / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    contents = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    rows = []
    for rel, text in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        rows.append(f"{rel},sha256={digest.decode()},{len(text.encode())}")
    rows.append(f"{info}/RECORD,,")
    with zipfile.ZipFile(path, "w") as archive:
        for rel, text in contents.items():
            archive.writestr(rel, text)
        archive.writestr(f"{info}/RECORD", "\n".join(rows) + "\n")
    return path


def test_a_file_another_wheel_wrote_over_is_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHSMITH_SNAPSHOTS", str(tmp_path / "snapshots"))
    venv = fresh_venv(tmp_path / "venv")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
    first = wheel(tmp_path, "alpha", {"shared_mod.py": "WHO = 'alpha'\n"})
    second = wheel(tmp_path, "beta", {"shared_mod.py": "WHO = 'beta'\n", "beta.py": "x = 1\n"})
    subprocess.run([*pip, str(first)], check=True, timeout=300)
    sites = tuple(str(p) for p in venv.glob("lib/python3*/site-packages"))
    shared = Path(sites[0]) / "shared_mod.py"
    taken = snapshot.take(sites)
    subprocess.run([*pip, str(second)], check=True, timeout=300)
    assert shared.read_text() == "WHO = 'beta'\n"
    after = snapshot.restore(taken.path)
    assert after == taken.packages
    assert shared.read_text() == "WHO = 'alpha'\n"
    assert not (Path(sites[0]) / "beta.py").exists()
