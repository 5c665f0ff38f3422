"""Check the GPU probe on a real GPU machine: NVML path vs nvidia-smi path vs nvidia-smi itself.

    python bench/check_gpu_probe.py            # prints JSON; exit 1 when the paths disagree

Runs probe_gpus() three ways (NVML; NVML forced off so nvidia-smi XML+CSV is used; the
compute capability fallback through the knowledge base), times each, and compares them with a
fresh ``nvidia-smi --query-gpu`` so a parser drift on a new driver shows at once.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from torchsmith.errors import ToolError
from torchsmith.probe import nvidia_smi
from torchsmith.probe.gpus import probe_gpus
from torchsmith.probe.host import probe_host
from torchsmith.probe.machine_reader import LiveMachine
from torchsmith.probe.model import GpuInfo
from torchsmith.util.serialize import to_jsonable

T = TypeVar("T")


def timed(fn: Callable[..., T], *args: Any, **kw: Any) -> tuple[T, float]:
    started = time.perf_counter()
    out = fn(*args, **kw)
    return out, round(time.perf_counter() - started, 4)


def key(g: GpuInfo) -> tuple[object, ...]:
    return (g.index, g.name, g.uuid, g.compute_capability, g.pci_bus_id, g.mig_mode)


def main() -> int:
    host, t_host = timed(probe_host, Path.cwd())
    (nvml_gpus, nvml_driver), t_nvml = timed(probe_gpus)
    (smi_gpus, smi_driver), t_smi = timed(probe_gpus, nvml_loader=lambda: "NVML: disabled")
    try:
        smi_direct = LiveMachine().run(list(nvidia_smi.CSV_ARGV), timeout=30)
        truth = nvidia_smi.parse_nvidia_smi_csv(smi_direct.stdout) if smi_direct.ok else ()
    except ToolError:
        truth = ()
    nvidia_nvml = [key(g) for g in nvml_gpus if g.vendor == "nvidia"]
    nvidia_smi_path = [key(g) for g in smi_gpus if g.vendor == "nvidia"]
    truth_keys = [key(g) for g in truth]
    checks = {
        "nvml_equals_nvidia_smi_path": nvidia_nvml == nvidia_smi_path,
        "nvml_equals_fresh_csv_query": nvidia_nvml == truth_keys,
        "driver_versions_agree": (nvml_driver and nvml_driver.version)
        == (smi_driver and smi_driver.version),
        "cuda_versions_agree": (nvml_driver and nvml_driver.cuda_version)
        == (smi_driver and smi_driver.cuda_version),
    }
    report = {
        "seconds": {"probe_host": t_host, "probe_gpus_nvml": t_nvml, "probe_gpus_smi": t_smi},
        "host": to_jsonable(host),
        "nvml": {"gpus": to_jsonable(nvml_gpus), "driver": to_jsonable(nvml_driver)},
        "nvidia_smi": {"gpus": to_jsonable(smi_gpus), "driver": to_jsonable(smi_driver)},
        "checks": checks,
    }
    print(json.dumps(report, indent=1))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
