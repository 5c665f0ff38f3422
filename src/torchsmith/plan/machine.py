"""Machine facts for the planner: derived from a Probe, then overridden by what-if flags.

Live probes, probe files and what-if flags all become one :class:`MachineFacts`, so the planner
has a single input path.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from torchsmith.errors import UsageError
from torchsmith.knowledge import Knowledge
from torchsmith.knowledge.base import norm_arch
from torchsmith.plan.model import GpuTarget, MachineFacts, Origin
from torchsmith.probe.model import Probe, TorchInfo

# Apple silicon's GPU as people name it: "Apple M2", "Apple M1 Pro GPU", "M3 Max". A bare "M4" or
# "M60" is not taken for one: NVIDIA's Tesla M4, M6, M10, M40 and M60 have such names.
_APPLE = re.compile(
    r"^\s*(?:apple\s+m(?P<n>[1-9])(?:\s+(?P<tier>pro|max|ultra))?"
    r"|m(?P<bare>[1-9])\s+(?P<bare_tier>pro|max|ultra))(?:\s+gpu)?\s*$",
    re.I,
)
_DRIVER = re.compile(r"^\d{2,3}(\.\d{1,3}){0,2}$")
_CC = re.compile(r"^\d{1,2}\.\d$")
_PY = re.compile(r"^3\.(\d{1,2})(?:\.\d+)?(t?)$")
_TOOLKIT = re.compile(r"^\d{1,2}\.\d{1,2}(\.\d+)?$")
OS_CHOICES = ("linux", "windows", "macos")
ARCH_CHOICES = ("x86_64", "aarch64", "amd64", "arm64")


@dataclass(frozen=True)
class WhatIf:
    """What-if flags; each one that is set replaces the probed fact."""

    gpus: tuple[str, ...] = ()  # names; "none" means no GPU
    ccs: tuple[str, ...] = ()
    driver: str | None = None
    os: str | None = None
    arch: str | None = None
    python: str | None = None  # a version; paths are resolved by the caller
    cuda_toolkits: tuple[str, ...] = ()

    def any(self) -> bool:
        return any(dataclasses.astuple(self))


def facts_from_probe(probe: Probe, kb: Knowledge, origin: Origin) -> MachineFacts:
    notes: list[str] = []
    gpus = tuple(_target(g.name, g.vendor, g.compute_capability, kb, g.gfx) for g in probe.gpus)
    driver = probe.driver.version if probe.driver is not None else None
    if probe.driver is not None and probe.driver.error and any(g.vendor == "nvidia" for g in gpus):
        notes.append(f"driver not read: {probe.driver.error}")
    python = None
    if probe.python is not None and not probe.python.error:
        python = python_tag(probe.python.version, probe.python.free_threaded)
    toolkits = tuple(  # one toolkit found by two routes (CUDA_HOME and PATH) counts once
        dict.fromkeys(
            t.version for t in probe.cuda_toolkits if t.version is not None and t.error is None
        )
    )
    gcc = next((c for c in probe.compilers if c.name in ("gcc", "g++") and c.version), None)
    msvc = next((c for c in probe.compilers if c.name == "msvc" and c.version), None)
    cmake = probe.build_tool("cmake")
    return MachineFacts(
        os=probe.host.os,
        arch=norm_arch(probe.host.arch),
        gpus=gpus,
        driver=driver,
        python=python,
        cuda_toolkits=toolkits,
        gcc_major=_major(gcc.version) if gcc and gcc.version else None,
        msc_ver=_msc_ver(msvc.details.get("msc_ver")) if msvc else None,
        cmake=cmake.version if cmake else None,
        origin=origin,
        notes=tuple(notes),
        torch_installed=torch_version(probe.torch),
    )


def torch_version(torch: TorchInfo | None) -> str | None:
    """The version of a probed torch install ("2.13.0+cpu"); None when there is none."""
    return torch.version if torch is not None and torch.version else None


def blank_facts(os_name: str) -> MachineFacts:
    """A machine known only through flags: x86_64 (arm64 on macOS), nothing else known."""
    arch = "aarch64" if os_name == "macos" else "x86_64"
    return MachineFacts(os=os_name, arch=arch, origin="what-if")  # type: ignore[arg-type]


def apply_what_if(facts: MachineFacts, what: WhatIf, kb: Knowledge) -> MachineFacts:
    changes: dict[str, object] = {}
    if what.os is not None:
        if what.os not in OS_CHOICES:
            raise UsageError(f"--os {what.os}: not one of {', '.join(OS_CHOICES)}")
        changes["os"] = what.os
        if what.arch is None and what.os != facts.os:
            changes["arch"] = "aarch64" if what.os == "macos" else "x86_64"
    if what.arch is not None:
        arch = norm_arch(what.arch)
        if arch not in ("x86_64", "aarch64"):
            raise UsageError(f"--arch {what.arch}: not one of {', '.join(ARCH_CHOICES)}")
        changes["arch"] = arch
    if what.gpus or what.ccs:
        gpus = resolve_gpus(what.gpus, what.ccs, kb)
        changes["gpus"] = gpus
        jetson = next((g for g in gpus if g.jetson), None)
        if jetson is not None:
            # a Jetson is an aarch64 Linux board: plan for it, and refuse flags that cannot be
            if (what.arch and norm_arch(what.arch) != "aarch64") or (
                what.os and what.os != "linux"
            ):
                raise UsageError(
                    f"--gpu {jetson.name!r} is a Jetson, an aarch64 Linux board: it cannot go "
                    "with --os/--arch of another platform",
                    tip="leave out --os and --arch, or give --os linux --arch aarch64",
                )
            changes["os"], changes["arch"] = "linux", "aarch64"
        if any(g.vendor == "apple" for g in gpus):
            # An Apple GPU is Apple silicon, and a Mac unless --os says otherwise.
            if what.os is None:
                changes["os"] = "macos"
            if what.arch is None:
                changes["arch"] = "aarch64"
    if what.driver is not None:
        changes["driver"] = validate_driver(what.driver)
    if what.python is not None:
        changes["python"] = validate_python(what.python)
        if changes["python"] != facts.python:  # another Python than the one probed: not its torch
            changes["torch_installed"] = None
            changes["python_path"] = None
    if what.cuda_toolkits:
        changes["cuda_toolkits"] = tuple(validate_toolkit(t) for t in what.cuda_toolkits)
    if not changes:
        return facts
    if changes.get("os", facts.os) != facts.os or changes.get("arch", facts.arch) != facts.arch:
        changes["cmake"] = None  # this machine's CMake says nothing of another platform's
    origin: Origin = "what-if" if facts.origin == "live" else facts.origin
    return dataclasses.replace(facts, origin=origin, **changes)  # type: ignore[arg-type]


def means_no_gpu(name: str) -> bool:
    """Whether a --gpu value says the machine has no GPU (``none``, ``no``, ``cpu``)."""
    return name.strip().lower() in ("none", "no", "cpu")


def resolve_gpus(
    names: tuple[str, ...], ccs: tuple[str, ...], kb: Knowledge
) -> tuple[GpuTarget, ...]:
    out: list[GpuTarget] = []
    for name in names:
        if means_no_gpu(name):
            continue
        gpu = kb.find_gpu(name)
        apple = _APPLE.match(name) if gpu is None else None
        if apple:
            number = apple["n"] or apple["bare"]
            tier = apple["tier"] or apple["bare_tier"]
            out.append(
                GpuTarget(
                    name=f"Apple M{number}{f' {tier.capitalize()}' if tier else ''}",
                    compute_capability=None,
                    vendor="apple",
                    architecture="Apple silicon",
                    source=kb.mps.sources[0] if kb.mps and kb.mps.sources else None,
                )
            )
            continue
        other = _other_vendor(name, None, kb) if gpu is None else None
        if other is not None:
            out.append(other)
            continue
        if gpu is None:
            close = kb.suggest_gpus(name)
            hint = f"; close matches: {', '.join(close)}" if close else ""
            raise UsageError(
                f"--gpu {name!r}: unknown GPU{hint}",
                tip="use the name nvidia-smi, amd-smi or sycl-ls prints, an AMD gfx target "
                '(gfx1100), "Apple M2" for a Mac, or give an NVIDIA compute capability with '
                "--cc X.Y",
            )
        out.append(
            GpuTarget(
                name=gpu.name if gpu.kind != "laptop" or not gpu.aliases else name,
                compute_capability=gpu.compute_capability,
                architecture=gpu.architecture,
                kind=gpu.kind,
                source=gpu.source,
            )
        )
    for cc in ccs:
        if not _CC.match(cc.strip()):
            raise UsageError(f"--cc {cc}: a compute capability looks like 8.6 or 12.0")
        out.append(
            GpuTarget(
                name=f"GPU with compute capability {cc.strip()}", compute_capability=cc.strip()
            )
        )
    return tuple(out)


def validate_driver(text: str) -> str:
    value = text.strip()
    if not _DRIVER.match(value):
        raise UsageError(
            f"--driver {text}: not a driver version",
            tip="give it as nvidia-smi prints it, e.g. 581.57 or 570.133.07",
        )
    return value


def validate_python(text: str) -> str:
    m = _PY.match(text.strip())
    if not m:
        raise UsageError(
            f"--python {text}: not a Python version or an interpreter path",
            tip="give a version like 3.12 (3.13t for free-threaded) or a path to python",
        )
    return f"3.{int(m.group(1))}{m.group(2)}"


def validate_toolkit(text: str) -> str:
    value = text.strip()
    if not _TOOLKIT.match(value):
        raise UsageError(f"--cuda-toolkit {text}: not a CUDA version (like 12.4)")
    major, minor = value.split(".")[:2]
    return f"{int(major)}.{int(minor)}"


def python_tag(version: str, free_threaded: bool) -> str | None:
    m = re.match(r"^3\.(\d+)", version)
    if not m:
        return None
    return f"3.{int(m.group(1))}" + ("t" if free_threaded else "")


def _with_sycl_names(
    gpus: tuple[GpuTarget, ...], probe: Probe, kb: Knowledge
) -> tuple[GpuTarget, ...]:
    """Intel GPUs by the names SYCL prints ("Intel(R) Arc(TM) A770 Graphics"), which the
    knowledge base knows, rather than the PCI database's chip names ("DG2 [Arc A770]")."""
    if probe.xpu is None:
        return gpus
    named = [
        t
        for d in probe.xpu.devices
        if d.device_type == "gpu"
        and (t := _other_vendor(d.name, None, kb)) is not None
        and t.vendor == "intel"
    ]
    named = list({t.name: t for t in named}.values())
    if not named:
        return gpus
    unknown_intel = [g for g in gpus if g.vendor == "intel" and kb.find_intel_gpu(g.name) is None]
    rest = [g for g in gpus if g not in unknown_intel and g.name not in {t.name for t in named}]
    return tuple(rest + named)


def _other_vendor(name: str, gfx: str | None, kb: Knowledge) -> GpuTarget | None:
    """An AMD GPU (by name or gfx target) or an Intel GPU the knowledge base knows."""
    amd = kb.find_amd_gpu(gfx) if gfx else None
    amd = amd or kb.find_amd_gpu(name)
    if amd is not None or (gfx and gfx.startswith("gfx")):
        return GpuTarget(
            name=name,
            compute_capability=None,
            vendor="amd",
            architecture=gfx or (amd.gfx if amd else None),
            kind="consumer" if amd is None or amd.consumer else "datacenter",
            source=amd.sources[0] if amd else None,
        )
    intel = kb.find_intel_gpu(name)
    if intel is not None:
        return GpuTarget(
            name=name,
            compute_capability=None,
            vendor="intel",
            architecture=intel.family,
            source=intel.sources[0],
        )
    return None


def _target(
    name: str, vendor: str, cc: str | None, kb: Knowledge, gfx: str | None = None
) -> GpuTarget:
    if vendor in ("amd", "intel"):
        known = _other_vendor(name, gfx, kb)
        if known is not None:
            return known
    if vendor != "nvidia":
        return GpuTarget(name=name, compute_capability=None, vendor=vendor)  # type: ignore[arg-type]
    model = kb.find_gpu(name)
    return GpuTarget(
        name=name,
        compute_capability=cc or (model.compute_capability if model else None),
        architecture=model.architecture if model else None,
        kind=model.kind if model else None,
        source=model.source if model else None,
    )


def _major(version: str) -> int | None:
    m = re.match(r"^(\d+)", version)
    return int(m.group(1)) if m else None


def _msc_ver(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None
