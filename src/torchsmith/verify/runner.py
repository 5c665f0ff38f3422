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
import math
import shlex
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from torchsmith import platforms
from torchsmith.binaries.archs import runs_on
from torchsmith.errors import InputError, UsageError
from torchsmith.findings.checks_torch import PLAN_HINT
from torchsmith.probe.model import DriverInfo, Finding, GpuInfo, TorchInfo
from torchsmith.probe.python_env import PROBE_TIMEOUT_S, child_env, probe_target
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

# The longest --timeout: a day (the runtime checks take seconds to minutes).
MAX_TIMEOUT_S = 86400.0

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
    extensions: tuple[str, ...] = (),
    probe_timeout_s: float | None = None,
) -> VerifyReport:
    """Verify the torch of interpreter ``python``; raises InputError for bad input.

    Bad input: no such interpreter, not a Python, no torch installed, a torch whose version
    cannot be read. An interpreter that gives no answer within ``probe_timeout_s`` (default:
    ``timeout_s``, at most PROBE_TIMEOUT_S) raises CommandTimeoutError (a hung tool, exit 4).
    Everything else (missing libraries, a failed import, a failed or hanging GPU check) comes
    back in the report with ``ok`` False. A timeout that is not a positive number of seconds up
    to MAX_TIMEOUT_S raises UsageError.
    """
    if not (math.isfinite(timeout_s) and 0 < timeout_s <= MAX_TIMEOUT_S):
        raise UsageError(
            f"--timeout {timeout_s:g}: must be a positive number of seconds, at most "
            f"{MAX_TIMEOUT_S:g}"
        )
    started = time.monotonic()
    answer_s = min(timeout_s, PROBE_TIMEOUT_S) if probe_timeout_s is None else probe_timeout_s
    tip = f"check that `{shlex.quote(str(python))} -c pass` returns, or raise --timeout if slow"
    exe, info, torch = probe_target(str(python), timeout=answer_s, tip=tip)
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
    import_fails = _static(report, torch, info.site_packages, exe)
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
    for extension in extensions:
        _extension(report, extension, exe)
    report.findings.extend(shadowed_libraries(report))
    _drop_repeats(report, explained=import_fails)
    report.duration_s = round(time.monotonic() - started, 3)
    report.ok = not any(c.passed is False for c in report.checks)
    return report


def _static(report: VerifyReport, torch: TorchInfo, site_packages: Any, exe: str) -> bool:
    """The shared-library check; True when what it found makes ``import torch`` fail."""
    os_name: static.LoaderOs = "windows" if platforms.current_os() == "windows" else "linux"
    if platforms.current_os() == "macos":
        report.add(Check("shared libraries", None, None, "not checked on macOS"))
        return False
    env = static.loader_env(os_name, tuple(site_packages), exe)
    try:
        result = static.check_torch(Path(torch.location), env)
    except InputError as exc:  # no torch/_C*: nothing to resolve, and nothing to import
        report.add(Check("shared libraries", False, None, exc.message))
        report.findings.append(
            Finding(
                "missing-runtime-library",
                "error",
                f"torch's extension module torch/_C*.so is missing from {torch.location}: "
                "the install is incomplete (`import torch` fails)",
                f"the torch install is damaged: `{static.reinstall_torch(torch.version)}`",
                subject="torch._C",
            )
        )
        return True
    detail = (
        "; ".join(
            f"{what}: {', '.join(names)}"
            for what, names in (
                ("missing", [m.name for m in result.missing if not m.damaged]),
                ("damaged", [m.name for m in result.missing if m.damaged]),
            )
            if names
        )
        or f"{len(result.objects)} binaries resolved"
    )
    if result.missing_lazy and not result.missing:
        detail += "; missing or damaged for on-demand parts: " + ", ".join(
            m.name for m in result.missing_lazy
        )
    report.add(
        Check(
            "shared libraries",
            not result.missing,
            len(result.objects),
            detail,
            result.duration_s,
        )
    )
    report.findings.extend(static.findings(result, torch.version, torch.cuda))
    return bool(result.missing)


def _extension(report: VerifyReport, target: str, exe: str) -> None:
    """Whether a CUDA extension (file, directory, wheel or installed package) runs on each GPU.

    Decided from the SASS and PTX inside its binaries, before any of its kernels runs: the
    cause behind "no kernel image is available" for an extension built for another GPU.
    """
    from torchsmith.binaries.targets import inspect_target  # noqa: PLC0415

    found = inspect_target(target, python=exe)
    name = f"extension {target}"
    if not found.sass and not found.ptx:
        report.add(Check(name, None, None, "holds no GPU code (a CPU-only build?)"))
        return
    archs = " ".join((*found.sass, *found.ptx))
    if not report.gpus:
        report.add(Check(name, None, archs, "no GPU checked here"))
        return
    for gpu in report.gpus:
        verdict = runs_on(found.sass, found.ptx, gpu.compute_capability)
        report.add(Check(f"{name} on cuda:{gpu.index}", verdict.ok, verdict.kind, verdict.detail))
        if verdict.ok and verdict.kind == "sass":
            continue
        cc = gpu.compute_capability
        report.findings.append(
            Finding(
                "arch-not-compiled",
                "warning" if verdict.ok else "error",
                f"{target} holds {archs}: "
                + (
                    f"only PTX reaches the {gpu.name} (compute capability {cc}), compiled at "
                    "first use"
                    if verdict.ok
                    else f"no code that runs on the {gpu.name} (compute capability {cc}); its "
                    "kernels fail with 'no kernel image is available for execution on the "
                    "device'"
                ),
                f"rebuild it for this GPU: TORCH_CUDA_ARCH_LIST={cc} "
                f"(torchsmith build PATH --cc {cc})",
                subject=target,
            )
        )


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


def _drop_repeats(report: VerifyReport, *, explained: bool = False) -> None:
    """A failed import explained as what the static check already named is said once.

    ``explained``: the static check found a library missing or damaged in the import closure
    of torch._C, so the import had to fail and its traceback adds only a guess (explain reads
    "libc10.so: cannot open shared object file" as an extension built for another torch).
    """
    static_categories = {f.category for f in report.findings if f.subject != "torch"}
    report.findings = [
        f
        for f in report.findings
        if not (f.subject == "torch" and f.message.startswith("`import torch` failed"))
        or (not explained and f.category not in static_categories)
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
