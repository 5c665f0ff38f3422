"""What a build knows that explain does not: its own settings, squared with a failed build's log.

explain reads a log as if it came from anywhere, so its fixes are general ("export
CUDA_HOME=/usr/local/cuda-12.8"). A build knows more: the CUDA_HOME it exported, the toolkits this
machine has, and what preflight found (a CPU-only torch). :func:`reconcile` rewrites the
diagnoses those facts contradict, so that the explanation of a failure agrees with the build that
failed. Pure: every fact comes in as an argument.

The case behind it: torch.utils.cpp_extension sets its ``CUDA_HOME`` to None whenever torch is a
CPU build (``CUDA_HOME = _find_cuda_home() if torch.cuda._is_compiled() and torch.version.cuda
else None``, torch 2.13), whatever the environment says, and CUDAExtension then stops with
"CUDA_HOME environment variable is not set" although the build exported it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from torchsmith.build.config import EXTENSION_KINDS
from torchsmith.build.model import BuildConfig
from torchsmith.build.preflight import cpu_torch_fix
from torchsmith.build.scripts import shell_command
from torchsmith.explain import Diagnosis
from torchsmith.probe.model import CudaToolkitInfo, Finding, Probe

CPU_TORCH_RULE = "build.cpu-torch-ignores-cuda-home"

# explain's rules (their stable ids) that say the build found no CUDA toolkit, or no nvcc where
# CUDA_HOME points: what torch's own CUDA_HOME decides for an extension build. Other rules of the
# category (a missing header, cudart at link time, an empty CMAKE_CUDA_ARCHITECTURES) keep theirs.
NO_TOOLKIT_RULES = frozenset(
    {
        "toolkit.cuda-home-not-set",
        "toolkit.cuda-home-missing-deepspeed",
        "toolkit.cuda-home-none-check",
        "toolkit.setup-cannot-run-nvcc",
        "toolkit.nvcc-missing-cicc",
        "general.nvcc-not-found",
        "general.extension-warned-no-nvcc",
        "general.jit-extension-disabled-no-nvcc",
        "general.cuda-toolkit-missing",
    }
)


@dataclass(frozen=True)
class Known:
    """The facts of one build that a diagnosis must agree with."""

    config: BuildConfig
    cpu_torch: str | None = None  # "torch 2.13.0+cpu", where the target torch is a CPU build
    preflight_said: bool = False  # preflight found it before the build (cpu-only-torch)
    toolkits: tuple[CudaToolkitInfo, ...] = ()  # the CUDA toolkits this machine has


def known_facts(
    config: BuildConfig, probe: Probe | None, preflight: Sequence[Finding] = ()
) -> Known:
    """What the build knows: its configuration, the probe of its target, preflight's findings."""
    said = any(f.category == "cpu-only-torch" for f in preflight)
    return Known(
        config=config,
        cpu_torch=_cpu_only_torch(config, probe, said=said),
        preflight_said=said,
        toolkits=tuple(probe.cuda_toolkits) if probe is not None else (),
    )


def _cpu_only_torch(config: BuildConfig, probe: Probe | None, *, said: bool) -> str | None:
    """ "torch 2.13.0+cpu" where an extension is built against a CPU build of torch (as
    preflight's cpu-only-torch, ``said``, says); None otherwise (a CMake project needs no
    torch)."""
    if config.project.kind not in EXTENSION_KINDS:
        return None
    torch = probe.torch if probe is not None else None
    if torch is not None and not torch.error and torch.cuda is None and torch.hip is None:
        return f"torch {torch.version}"
    return "the target torch" if said else None


def reconcile(diagnoses: Sequence[Diagnosis], known: Known) -> tuple[Diagnosis, ...]:
    """The diagnoses, each that says no CUDA toolkit was found (NO_TOOLKIT_RULES) rewritten with
    what the build knows: a CPU-only torch, the CUDA_HOME it exported, this machine's toolkits."""
    out: list[Diagnosis] = []
    for d in diagnoses:
        if d.rule in NO_TOOLKIT_RULES and not _about_rocm(d):
            d = _cpu_torch(d, known) if known.cpu_torch else _toolkit(d, known)
        if all(d.rule != seen.rule for seen in out):  # two rules about it: one rewrite each
            out.append(d)
    return tuple(out)


def _about_rocm(d: Diagnosis) -> bool:
    return any("ROCM" in line or "ROCm" in line for line in d.evidence)


def _cpu_torch(d: Diagnosis, known: Known) -> Diagnosis:
    config = known.config
    torch = known.cpu_torch or "the target torch"
    exported = config.env.get("CUDA_HOME")
    forced = config.env.get("FORCE_CUDA") == "1"
    explanation = (
        f"{torch[0].upper()}{torch[1:]} is a CPU build. Its torch.utils.cpp_extension sets its "
        "CUDA_HOME to None whenever torch has no CUDA (torch.cuda._is_compiled() is False), "
        "whatever the environment says"
        + (f": the CUDA_HOME={exported} this build exported never counted" if exported else "")
        + ", so the CUDA part of the build finds no toolkit and stops there."
        + (" FORCE_CUDA=1 made the setup build its CUDA part anyway." if forced else "")
        + (" Preflight said so before the build (cpu-only-torch)." if known.preflight_said else "")
    )
    fix = cpu_torch_fix(config, torch) + (
        "; or drop FORCE_CUDA=1 to build the CPU part only" if forced else ""
    )
    return dataclasses.replace(
        d,
        category="cpu-only-torch",
        rule=CPU_TORCH_RULE,
        title=f"{torch} is a CPU build: it ignores CUDA_HOME and builds no CUDA code",
        explanation=explanation,
        fix=fix,
        related=(d.rule, *d.related),
        basis="machine",
    )


def _toolkit(d: Diagnosis, known: Known) -> Diagnosis:
    """A fix naming this machine's toolkits, in place of the rule's example paths."""
    config = known.config
    if config.cuda_home:
        nvcc = config.cuda_home.rstrip("/\\") + "/bin/nvcc"
        fix = (
            f"this build already exports CUDA_HOME={config.cuda_home} (CUDA "
            f"{config.cuda_version or '?'}) to every step: check that "
            f"{shell_command((nvcc, '--version'))} runs, and that the setup does not replace the "
            "environment (sudo, env -i, a build isolation that drops it); torchsmith build "
            "--dry-run lists what it exports"
        )
    else:
        usable = [t for t in known.toolkits if t.nvcc]
        if usable:
            listed = ", ".join(f"{t.root} (CUDA {t.version or '?'})" for t in usable)
            fix = (
                f"this build found no toolkit it could use; this machine has {listed}: "
                "torchsmith build --dry-run says why it chose none (see preflight)"
            )
        else:
            fix = (
                "this machine has no CUDA toolkit with nvcc: install one whose major version "
                "matches the target torch's CUDA (torchsmith plan shows which), then build "
                "again: torchsmith sets CUDA_HOME to it"
            )
    return dataclasses.replace(d, fix=fix)
