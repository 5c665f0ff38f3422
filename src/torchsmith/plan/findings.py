"""Machine problems that matter for the plan, as doctor-style findings."""

from __future__ import annotations

from packaging.version import Version

from torchsmith.knowledge import Knowledge, TorchRelease
from torchsmith.knowledge.compat import driver_at_least, parse_cc
from torchsmith.plan.model import GpuTarget, MachineFacts, Recommendation, Rejection, SourceBuild
from torchsmith.probe.model import Finding
from torchsmith.taxonomy import Severity


def collect(
    *,
    machine: MachineFacts,
    kb: Knowledge,
    rec: Recommendation,
    rejected: list[Rejection],
    releases: list[TorchRelease],
    nvidia: tuple[GpuTarget, ...],
    source: SourceBuild | None,
) -> tuple[Finding, ...]:
    out: list[Finding] = []
    out += _driver(machine, kb, rec, rejected, releases)
    out += _toolkits(machine, kb, rec, nvidia, source)
    out += _python(machine, kb, rec, releases)
    return tuple(dict.fromkeys(out))  # two installs of one toolkit version say the same thing


def driver_for_gpus(os_name: str, kb: Knowledge, nvidia: tuple[GpuTarget, ...]) -> str | None:
    """The driver the GPUs' architectures came with: the highest minimum of the first CUDA that
    targets each (560.76 on Windows for an RTX 5070's sm_120 ... as the knowledge base has it)."""
    best: str | None = None
    for gpu in nvidia:
        known = kb.arch_introduced(gpu.sm) if gpu.sm else None
        if known is None:
            continue
        first = known[1]
        need = first.min_driver(os_name)
        if need and (best is None or not driver_at_least(best, need)):
            best = need
    return best


def driver_vs_gpu(
    machine: MachineFacts, kb: Knowledge, nvidia: tuple[GpuTarget, ...]
) -> Finding | None:
    """Whether the driver predates a GPU's architecture, by what the knowledge base can prove.

    An error (nothing runs) where the driver is below the minimum of the toolkit release just
    before the first one that targets the GPU's sm_XY; a warning where it is below that first
    one's minimum only: not provably too old, but a new architecture usually arrives with the
    driver branch of that first CUDA (the RTX 50 series, sm_120, with R570 and CUDA 12.8).
    """
    if machine.driver is None or machine.os not in ("linux", "windows"):
        return None
    warning: Finding | None = None
    severity: Severity
    for gpu in nvidia:
        known = kb.arch_introduced(gpu.sm) if gpu.sm else None
        if known is None:
            continue
        before, first = known
        floor, need = before.min_driver(machine.os), first.min_driver(machine.os)
        if floor is not None and not driver_at_least(machine.driver, floor):
            message = (
                f"driver {machine.driver} cannot run the {gpu.name} ({gpu.sm}): it is older than "
                f"CUDA {before.version}'s minimum driver ({floor}), and {gpu.sm} GPUs came with "
                f"CUDA {first.version}"
            )
            fix = f"install an NVIDIA driver >= {need}" if need else "install a newer NVIDIA driver"
            severity = "error"
        elif warning is None and need is not None and not driver_at_least(machine.driver, need):
            message = (
                f"driver {machine.driver} is older than CUDA {first.version}'s minimum ({need}), "
                f"the first CUDA for {gpu.sm}: a new GPU architecture usually needs a driver of "
                f"that release or newer, so it may not run the {gpu.name}"
            )
            fix = f"if nvidia-smi does not list the {gpu.name}, install an NVIDIA driver >= {need}"
            severity = "warning"
        else:
            continue
        found = Finding(
            category="driver-too-old",
            severity=severity,
            message=message,
            fix=fix,
            subject="driver",
            source=first.sources[0] if first.sources else None,
        )
        if severity == "error":
            return found
        warning = found
    return warning


def _driver(
    machine: MachineFacts,
    kb: Knowledge,
    rec: Recommendation,
    rejected: list[Rejection],
    releases: list[TorchRelease],
) -> list[Finding]:
    too_old = [r for r in rejected if r.category == "driver-too-old"]
    if rec.kind in ("wheel", "none") and machine.driver is None and rec.min_driver:
        return [
            Finding(
                category="other",
                severity="info",
                message=f"the NVIDIA driver version is unknown; the {rec.variant} wheel needs "
                f">= {rec.min_driver}",
                fix="check with nvidia-smi, or plan with --driver VERSION",
                subject="driver",
            )
        ]
    if not too_old or machine.driver is None:
        return []
    newest = too_old[0]
    floor = kb.variant_min_driver(newest.variant or "", machine.os) or "?"
    runs = (
        f"; until then torch {rec.torch}+{rec.variant} is the newest that runs on it"
        if rec.kind == "wheel"
        else ""
    )
    return [
        Finding(
            category="driver-too-old",
            severity="error" if rec.kind == "none" else "warning",
            message=f"driver {machine.driver} is too old for torch {newest.torch}+{newest.variant} "
            f"(needs >= {floor}){runs}",
            fix=f"install an NVIDIA driver >= {floor}",
            subject="driver",
            source=newest.source[0] if newest.source else None,
        )
    ]


def _toolkits(
    machine: MachineFacts,
    kb: Knowledge,
    rec: Recommendation,
    nvidia: tuple[GpuTarget, ...],
    source: SourceBuild | None,
) -> list[Finding]:
    out: list[Finding] = []
    sms = {g.sm for g in nvidia if g.sm}
    for version in machine.cuda_toolkits:
        tk = kb.toolkit(version)
        if rec.kind == "wheel" and (rec.variant or "").startswith("cu"):
            out.append(
                Finding(
                    category="other",
                    severity="info",
                    message=f"the installed CUDA toolkit {version} is not used by the torch wheel, "
                    "which brings its own CUDA runtime; it matters only for building CUDA "
                    "extensions or torch itself",
                    fix="nothing to do for installing torch; leave CUDA_HOME alone",
                    subject=f"cuda {version}",
                )
            )
        if tk is None or not sms:
            continue
        missing = sorted(sms - set(tk.sm_targets))
        if missing:
            able = kb.toolkits_for_text(missing, have=version)
            can = bool(kb.toolkits_for(missing))
            fix = (
                f"install CUDA {source.toolkit_span} for a source build"
                if source
                else f"to build extensions for this GPU, install a toolkit that can: {able}"
                if can
                else "use a toolkit that lists these archs in nvcc --list-gpu-code"
            )
            out.append(
                Finding(
                    category="toolkit-too-old-for-arch",
                    severity="warning" if rec.kind == "wheel" else "error",
                    message=f"CUDA {version}'s nvcc cannot compile for {', '.join(missing)}; "
                    + (f"toolkits that can: {able}" if can else able),
                    fix=fix,
                    subject=f"cuda {version}",
                    source=tk.sources[1] if len(tk.sources) > 1 else tk.sources[0],
                )
            )
    if source is not None and source.installed_toolkit_ok is False:
        installed = ", ".join(machine.cuda_toolkits)
        out.append(
            Finding(
                category="toolkit-torch-cuda-mismatch",
                severity="warning" if rec.kind != "source" else "error",
                message=f"the installed CUDA {installed} is not among the toolkits a source build "
                f"of torch {source.torch} can use here ({source.toolkit_span}), and the build "
                "takes the toolkit CUDA_HOME or the PATH points at",
                fix=f"install CUDA {source.toolkit} and set CUDA_HOME to it before building",
                subject="cuda",
            )
        )
    return out


def _python(
    machine: MachineFacts, kb: Knowledge, rec: Recommendation, releases: list[TorchRelease]
) -> list[Finding]:
    if machine.python is None or rec.torch is None or not releases:
        return []
    newest = releases[0]
    if Version(rec.torch) >= Version(newest.version):
        return []
    tags = newest.python.get(f"{machine.os}-{machine.arch}") or ()
    if machine.python in tags or not tags:
        return []
    return [
        Finding(
            category="python-unsupported",
            severity="warning",
            message=f"torch {newest.version} has no wheel for Python {machine.python} "
            f"(it has {', '.join(tags)}); with this Python the newest is {rec.torch}",
            fix=f"use {_pythons(tags)} for torch {newest.version}",
            subject="python",
            source=newest.sources[0],
        )
    ]


def jetson(gpu: GpuTarget) -> tuple[Finding, ...]:
    major, minor = parse_cc(gpu.compute_capability or "0.0")
    return (
        Finding(
            category="arch-not-compiled",
            severity="error",
            message=f"the {gpu.name} (sm_{major}{minor}) needs a Jetson (JetPack) build of torch",
            fix="pip install NVIDIA's PyTorch for Jetson wheel for your JetPack version, or use "
            "the NVIDIA L4T PyTorch container",
            subject=gpu.name,
            source="jetson_pytorch",
        ),
    )


def _pythons(tags: tuple[str, ...] | list[str]) -> str:
    """ "Python 3.11 to 3.15 (free-threaded: 3.14t, 3.15t)": a range of the regular builds, and the
    free-threaded ones by name, since a range over both would include a 3.13t the release lacks."""
    regular = [t for t in tags if not t.endswith("t")]
    threaded = [t for t in tags if t.endswith("t")]
    if not regular:
        return "Python " + ", ".join(threaded)
    text = f"Python {regular[0]}–{regular[-1]}" if len(regular) > 1 else f"Python {regular[0]}"
    return text + (f" (free-threaded: {', '.join(threaded)})" if threaded else "")
