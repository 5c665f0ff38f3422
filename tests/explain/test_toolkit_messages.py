"""nvcc's refusals of a host compiler, read from the CUDA toolkit itself.

crt/host_config.h holds every ``#error`` that stops a compile on an unsupported host compiler; the
test takes them from the toolkit installed here (CUDA 13.0) and prints each the way gcc and MSVC
report an ``#error`` in a header, and explain must file every one as unsupported-host-compiler.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchsmith.explain import explain_text

HOST_CONFIG = Path("/usr/local/cuda-13.0/include/crt/host_config.h")


def _errors() -> list[tuple[int, str]]:
    if not HOST_CONFIG.exists():
        return []
    lines = HOST_CONFIG.read_text(encoding="utf-8", errors="replace").splitlines()
    return [
        (n, m.group(1)) for n, line in enumerate(lines, 1) if (m := re.match(r"#error (.+)", line))
    ]


ERRORS = _errors()


def test_the_toolkit_is_here() -> None:
    if not HOST_CONFIG.exists():
        pytest.skip(f"no CUDA toolkit at {HOST_CONFIG.parents[2]}")
    assert len(ERRORS) >= 8


@pytest.mark.parametrize(("line", "text"), ERRORS, ids=[str(n) for n, _ in ERRORS])
def test_gcc_and_msvc_reports_of_each_error_are_an_unsupported_host_compiler(
    line: int, text: str
) -> None:
    gcc = f"{HOST_CONFIG}:{line}:2: error: #error {text}\n"
    msvc = (
        f"C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v13.0\\include\\crt/host_config.h"
        f"({line}): fatal error C1189: #error:  {text}\n"
    )
    for log in (gcc, msvc):
        result = explain_text(log)
        assert result.diagnoses, log
        assert result.diagnoses[0].category == "unsupported-host-compiler", log
