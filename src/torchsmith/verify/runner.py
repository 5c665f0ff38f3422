"""``run_verify``: the static check, then the runtime script in a subprocess of the target.

Order: resolve the interpreter; describe it and its torch without importing it (the probe
script); resolve every shared library torch's binaries need (:mod:`.static`); decide, from the
archs inside torch's CUDA libraries, which compute capabilities it can run on; then run
``scripts/verify_target.py`` in the target under a timeout. The script rewrites its JSON after
every check, so a hang still gives what ran and names what hung.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from torchsmith import platforms
from torchsmith.binaries.archs import runs_on
from torchsmith.errors import InputError
from torchsmith.findings.checks_torch import PLAN_HINT
from torchsmith.probe.model import DriverInfo, Finding, GpuInfo, TorchInfo
from torchsmith.probe.python_env import child_env, probe_python_and_torch, resolve_python
from torchsmith.util import cmd
from torchsmith.verify import static
from torchsmith.verify.model import Check, VerifyReport
from torchsmith.verify.results import apply_runtime

log = logging.getLogger(__name__)

SCRIPT = Path(__file__).parent / "scripts" / "verify_target.py"
# Compute capabilities whose runs-on decision is handed to the script (every CUDA GPU since 5.0).
KNOWN_CCS = (
    "5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.8",
    "8.9", "9.0", "10.0", "10.1", "10.3", "11.0", "12.0", "12.1",
)  # fmt: skip

GpuProbe = Callable[[], tuple[tuple[GpuInfo, ...], DriverInfo | None]]


def _live_gpus() -> tuple[tuple[GpuInfo, ...], DriverInfo | None]:
    from torchsmith.probe.gpus import probe_gpus  # noqa: PLC0415 (only when verify runs)

    return probe_gpus()


def run_verify(
    python: str | Path,
    *,
    full: bool = False,
    timeout_s: float = 120.0,
    gpu_probe: GpuProbe | None = None,
) -> VerifyReport:
    """Verify the torch of interpreter ``python``; raises InputError for bad input.

    Bad input: no such interpreter, not a Python, no torch installed, a torch whose version
    cannot be read. Everything else (missing libraries, a failed import, a failed or hanging
    GPU check) comes back in the report with ``ok`` False.
    """
    started = time.monotonic()
    exe = resolve_python(str(python))
    info, torch = probe_python_and_torch(exe)
    if info.error:
        raise InputError(f"--python {python}: {info.error}", tip="check that the interpreter runs")
    if torch is None:
        raise InputError(
            f"no torch installed in {exe}",
            tip=f"install it first: {PLAN_HINT}, `torchsmith install` carries it out",
        )
    if torch.error or not torch.location:
        raise InputError(f"torch in {exe} is broken: {torch.error}", tip="reinstall torch")
    report = VerifyReport(
        python=exe,
        mode="full" if full else "quick",
        torch_version=torch.version,
        torch_cuda=torch.cuda,
        torch_location=torch.location,
    )
    probe = gpu_probe or _live_gpus
    _static(report, torch, info.site_packages, exe)
    gpus: tuple[GpuInfo, ...] = ()
    cpu_only = torch.cuda is None and torch.hip is None
    if cpu_only:  # only then does it matter whether the machine has an NVIDIA GPU
        gpus, driver = probe()
        report.driver_version = driver.version if driver else None
        report.findings.append(_cpu_only(torch, gpus))
    routes = _routes(torch)
    _runtime(report, exe, {"full": full, "routes": routes}, timeout_s)
    if torch.cuda is not None and report.driver_version is None:  # the script could not read it
        _, driver = probe()
        report.driver_version = driver.version if driver else None
    if cpu_only:
        nvidia = [g for g in gpus if g.vendor == "nvidia"]
        report.add(
            Check(
                "cuda build",
                False if nvidia else None,
                None,
                "CPU-only torch" + (f" on a machine with {nvidia[0].name}" if nvidia else ""),
            )
        )
    report.findings.extend(shadowed_libraries(report))
    _drop_repeats(report)
    report.duration_s = round(time.monotonic() - started, 3)
    report.ok = not any(c.passed is False for c in report.checks)
    return report


def _static(report: VerifyReport, torch: TorchInfo, site_packages: Any, exe: str) -> None:
    os_name: static.LoaderOs = "windows" if platforms.current_os() == "windows" else "linux"
    if platforms.current_os() == "macos":
        report.add(Check("shared libraries", None, None, "not checked on macOS"))
        return
    env = static.loader_env(os_name, tuple(site_packages), exe)
    try:
        result = static.check_torch(Path(torch.location), env)
    except InputError as exc:
        report.add(Check("shared libraries", False, None, exc.message))
        return
    missing = [m.name for m in result.missing]
    detail = f"{len(result.objects)} binaries resolved"
    if missing:
        detail = "missing: " + ", ".join(missing)
    elif result.missing_lazy:
        detail += "; missing for on-demand parts: " + ", ".join(m.name for m in result.missing_lazy)
    report.add(
        Check("shared libraries", not missing, len(result.objects), detail, result.duration_s)
    )
    report.findings.extend(static.findings(result, torch.version, torch.cuda))


def shadowed_libraries(report: VerifyReport) -> list[Finding]:
    """A CUDA library loaded from elsewhere although torch's own install ships one of that name.

    The classic: LD_LIBRARY_PATH (or PATH) pointing at a system CUDA/cuDNN, so the process runs
    with a cuDNN other than the one torch was built and tested with.
    """
    if not report.torch_location or not report.loaded:
        return []
    site = Path(report.torch_location).parent
    shipped: dict[str, Path] = {}
    for pattern in ("torch/lib/*", "nvidia/*/lib/*", "nvidia/*/bin/*"):
        for path in site.glob(pattern):
            shipped.setdefault(path.name.lower(), path)
    out = []
    for lib in report.loaded:
        own = shipped.get(lib.name.lower())
        if own is None or Path(lib.path).resolve() == own.resolve():
            continue
        out.append(
            Finding(
                "other",
                "warning",
                f"{lib.name} was loaded from {lib.path}, not from the copy torch's install ships "
                f"({own})",
                "remove the other CUDA/cuDNN directory from LD_LIBRARY_PATH (Linux) or PATH "
                "(Windows) for this environment, so torch uses the libraries it was built with",
                subject=lib.name,
            )
        )
    return out


def _drop_repeats(report: VerifyReport) -> None:
    """A failed import explained as what the static check already named is said once."""
    static_categories = {f.category for f in report.findings if f.subject != "torch"}
    report.findings = [
        f
        for f in report.findings
        if not (f.subject == "torch" and f.message.startswith("`import torch` failed"))
        or f.category not in static_categories
    ]


def _cpu_only(torch: TorchInfo, gpus: tuple[GpuInfo, ...]) -> Finding:
    nvidia = sorted({g.name for g in gpus if g.vendor == "nvidia"})
    if nvidia:
        return Finding(
            "cpu-only-torch",
            "error",
            f"torch {torch.version} is a CPU-only build: your {', '.join(nvidia)} will not be used",
            f"reinstall torch from a CUDA index; {PLAN_HINT}",
            subject="torch",
        )
    return Finding(
        "cpu-only-torch",
        "info",
        f"torch {torch.version} is a CPU-only build (no NVIDIA GPU is visible here, so no GPU "
        "checks ran)",
        f"for a GPU machine install a CUDA build instead; {PLAN_HINT}",
        subject="torch",
    )


def _routes(torch: TorchInfo) -> dict[str, dict[str, Any]]:
    """The runs-on decision for every compute capability, from torch's own CUDA libraries."""
    if torch.cuda is None or torch.archs is None or torch.archs.error:
        return {}
    out = {}
    for cc in KNOWN_CCS:
        r = runs_on(torch.archs.sass, torch.archs.ptx, cc)
        out[cc] = {"ok": r.ok, "kind": r.kind, "route": r.route, "detail": r.detail}
    return out


def _runtime(report: VerifyReport, exe: str, args: Mapping[str, Any], timeout_s: float) -> None:
    with tempfile.TemporaryDirectory(prefix="torchsmith-verify-") as tmp:
        out = Path(tmp) / "result.json"
        argv = [
            exe,
            "-B",
            str(SCRIPT),
            str(out),
            json.dumps({**args, "nccl_budget_s": timeout_s / 2}),
        ]
        failure: str | None = None
        result: cmd.CommandResult | None = None
        try:
            result = cmd.run(argv, timeout=timeout_s, env=child_env(), cwd=tmp)
        except cmd.CommandTimeoutError:
            failure = "timeout"
        except cmd.CommandNotFoundError as exc:
            raise InputError(exc.message) from exc
        state: dict[str, Any] = {}
        if out.is_file():
            try:
                state = json.loads(out.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                log.debug("unreadable verify result: %s", exc)
    if failure == "timeout":
        running = state.get("running") or "starting the interpreter / import torch"
        report.error = f"no answer after {timeout_s:g}s while running '{running}' (hung; stopped)"
        report.add(Check(str(running), False, None, report.error, timeout_s))
    elif not state and result is not None:
        said = (result.stderr or result.stdout).strip().splitlines()
        report.error = (
            f"the verify script ended (exit status {result.returncode}) without a result"
            + (f": {said[-1][:200]}" if said else "")
        )
        report.add(Check("runtime checks", False, None, report.error))
    elif not state.get("done") and state.get("import_error") is None and result is not None:
        said = (result.stderr or "").strip().splitlines()
        report.error = (
            f"the verify script died (exit status {result.returncode}) during "
            f"'{state.get('running')}'" + (f": {said[-1][:200]}" if said else "")
        )
        report.add(Check(str(state.get("running") or "runtime checks"), False, None, report.error))
    apply_runtime(report, state)
