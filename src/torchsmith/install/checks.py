"""What really landed, against what the plan asked for (pure: facts in, findings out).

The facts come from files: the dist-info versions, and the probe's description of torch
(its CUDA version and the archs inside its CUDA libraries), never from importing torch here.
"""

from __future__ import annotations

from torchsmith.install.envstate import Dist
from torchsmith.install.model import InstallResult
from torchsmith.probe.model import Finding, TorchInfo

COMPANIONS = ("torchvision", "torchaudio")


def _local(version: str | None) -> str | None:
    return version.split("+", 1)[1] if version and "+" in version else None


def check_landed(
    result: InstallResult, torch: TorchInfo | None, after: dict[str, Dist]
) -> tuple[list[Finding], list[str]]:
    findings: list[Finding] = []
    wanted = result.torch or ""
    got = after.get("torch")
    if got is None or torch is None:
        findings.append(
            Finding("other", "error", "torch is not installed after the install", "retry", "torch")
        )
        return findings, []
    archs = list(torch.archs.sass) if torch.archs is not None else []
    want_local, got_local = _local(wanted), got.local
    public = wanted.split("+", 1)[0]
    if got.version.split("+", 1)[0] != public:
        findings.append(_mismatch(f"torch {got.version} landed, the plan asked for {wanted}"))
    cuda_wanted = bool(want_local and want_local.startswith("cu"))
    if cuda_wanted and torch.cuda is None:
        findings.append(
            Finding(
                "cpu-only-torch", "error",
                f"the installer put a CPU-only torch {got.version} in place of {wanted}",
                f"install torch=={wanted} from the plan's index only", "torch",
            )
        )  # fmt: skip
    elif want_local and got_local and want_local != got_local:
        findings.append(
            _mismatch(f"torch {got.version} landed, not the {want_local} build {wanted}")
        )
    for name in COMPANIONS:
        dist = after.get(name)
        if dist is None or name not in {r.name for r in result.requirements}:
            continue
        spec = next(r.spec for r in result.requirements if r.name == name)
        minor = spec.split("==", 1)[1].rstrip(".*")
        if not dist.version.startswith(minor + "."):
            findings.append(_mismatch(f"{name} {dist.version} landed, the plan asked for {spec}"))
        elif dist.local and got_local and dist.local != got_local:
            findings.append(
                _mismatch(
                    f"{name} {dist.version} is a {dist.local} build beside torch {got.version}"
                )
            )
    return findings, archs


def _mismatch(message: str) -> Finding:
    return Finding(
        "companion-version-mismatch", "error", message,
        "install torch and its companions together from one index (torchsmith install)", "torch",
    )  # fmt: skip
