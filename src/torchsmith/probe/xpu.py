"""Intel GPUs as the SYCL runtime sees them: ``sycl-ls`` (oneAPI), one line per device.

Formats (both kept verbatim in tests/fixtures): oneAPI 2024.2 and later print
``[opencl:gpu][opencl:1] Intel(R) OpenCL Graphics, Intel(R) Arc(TM) A770 Graphics OpenCL 3.0
NEO  [23.17.26241.33]``; older ones ``[ext_oneapi_level_zero:gpu:0] Intel(R) Level-Zero,
Intel(R) Arc(TM) A770 Graphics 1.3 [1.3.28044]``. PyTorch's xpu backend needs a Level Zero GPU.
"""

from __future__ import annotations

import re

from torchsmith.errors import ToolError
from torchsmith.probe.machine_reader import Machine
from torchsmith.probe.model import SyclDevice, XpuInfo

_LINE = re.compile(
    r"^\s*\[(?P<backend>[a-z_]+):(?P<type>[a-z]+)(?::\d+)?\](?:\[[a-z_]+:\d+\])?\s+"
    r"(?P<platform>[^,]+),\s+(?P<rest>.+?)\s*$"
)
_TAIL = re.compile(
    r"\s+(?:OpenCL \d+\.\d+(?: NEO)?(?: \(Build \d+\))?|\d+\.\d+(?:\.\d+)*)\s+\[[^\]]*\]$"
)


def parse_sycl_ls(text: str) -> tuple[SyclDevice, ...]:
    out = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        name = _TAIL.sub("", m["rest"]).strip()
        backend = m["backend"].removeprefix("ext_oneapi_")
        out.append(SyclDevice(backend=backend, device_type=m["type"], name=name))
    return tuple(out)


def probe_xpu(m: Machine, timeout: float = 10.0) -> XpuInfo | None:
    """``sycl-ls`` where it is installed (oneAPI); None where it is not."""
    if not m.which("sycl-ls"):
        return None
    try:
        res = m.run(["sycl-ls"], timeout)
    except ToolError:
        return None
    return XpuInfo(devices=parse_sycl_ls(res.stdout))
