"""`torchsmith review`: read someone's build script and say what in it is wrong for a machine.

Pure from text to result: :func:`review_text` parses the script (review.parse), extracts the
configuration each section would use (review.extract), checks it against the target machine,
the knowledge base and the tree's build switches (review.checks), asks the planner whether a
source build is needed at all, and proposes a corrected configuration as ``torchsmith build``
flags.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torchsmith.errors import InputError
from torchsmith.knowledge import Knowledge
from torchsmith.knowledge.compat import arch_list_tokens, covers, split_entry
from torchsmith.plan.model import MachineFacts, Plan
from torchsmith.review.checks import (
    ARCH_KEYS,
    CMAKE_ARCH_KEYS,
    JOB_KEYS,
    LineFinding,
    Target,
    run_checks,
)
from torchsmith.review.extract import ExtractedConfig, Setting, extract
from torchsmith.review.parse import parse_script
from torchsmith.review.switches import BuildSwitches

# Settings a corrected configuration carries over as `--set KEY=VALUE` when the check passed.
_CARRIED_PREFIXES = ("USE_", "BUILD_")


@dataclass(frozen=True)
class Corrected:
    """The configuration torchsmith would use instead, as `torchsmith build` arguments."""

    build_args: tuple[str, ...]
    dropped: tuple[str, ...] = ()  # settings left out, each with why


@dataclass(frozen=True)
class SectionReview:
    index: int
    title: str | None
    dialect: str
    first_line: int
    settings: dict[str, Setting]
    findings: tuple[LineFinding, ...]
    changed_from_previous: tuple[str, ...] = ()
    corrected: Corrected | None = None


@dataclass(frozen=True)
class ReviewResult:
    file: str
    kind: str  # "script" or "markdown"
    machine: MachineFacts
    source_build_needed: bool | None  # None: the plan could not tell
    wheel_advice: str | None
    sections: tuple[SectionReview, ...]
    never_tried: tuple[str, ...] = field(default_factory=tuple)

    @property
    def errors(self) -> int:
        return sum(1 for s in self.sections for f in s.findings if f.finding.severity == "error")


def review_text(
    text: str,
    *,
    filename: str,
    target: Target,
    kb: Knowledge,
    switches: BuildSwitches,
    plan: Plan | None,
    tree: str | None = None,
) -> ReviewResult:
    script = parse_script(text, filename)
    configs = [extract(section) for section in script.sections]
    configs = [c for c in configs if c.settings or c.commands]
    if not any(c.has_build or _has_build_settings(c) for c in configs):
        raise InputError(
            f"{filename} holds no build command or build setting torchsmith can review",
            tip="pass a script that runs cmake, setup.py or pip install (or sets "
            "TORCH_CUDA_ARCH_LIST and similar)",
        )
    reviews: list[SectionReview] = []
    previous: ExtractedConfig | None = None
    for config in configs:
        findings = tuple(run_checks(config, target, kb, switches))
        reviews.append(
            SectionReview(
                index=config.section,
                title=config.title,
                dialect=config.dialect,
                first_line=config.first_line,
                settings=dict(config.effective()),
                findings=findings,
                changed_from_previous=_changes(previous, config) if previous else (),
                corrected=_corrected(config, findings, target, tree),
            )
        )
        previous = config
    needed, advice = _source_build_needed(plan)
    return ReviewResult(
        file=filename,
        kind=script.kind,
        machine=target.facts,
        source_build_needed=needed,
        wheel_advice=advice,
        sections=tuple(reviews),
        never_tried=_never_tried(configs, target),
    )


def _has_build_settings(config: ExtractedConfig) -> bool:
    return config.get(*ARCH_KEYS, *CMAKE_ARCH_KEYS, "MAX_JOBS", "CUDA_HOME") is not None


def _source_build_needed(plan: Plan | None) -> tuple[bool | None, str | None]:
    if plan is None:
        return None, None
    rec = plan.recommendation
    if rec.kind == "wheel":
        command = rec.commands.get("pip") or next(iter(rec.commands.values()), "")
        what = f"torch {rec.torch}" + (f" ({rec.variant})" if rec.variant else "")
        return False, (
            f"no source build is needed: one wheel install of {what} runs on this machine: "
            f"{command}"
        )
    if rec.kind == "source":
        return True, None
    return None, None


def _changes(before: ExtractedConfig, after: ExtractedConfig) -> tuple[str, ...]:
    old, new = before.effective(), after.effective()
    out: list[str] = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a is None and b is not None:
            out.append(f"+ {key}={b.value}")
        elif b is None and a is not None:
            out.append(f"- {key}={a.value}")
        elif a is not None and b is not None and a.value != b.value:
            out.append(f"~ {key}: {a.value} -> {b.value}")
    return tuple(out)


def _corrected(
    config: ExtractedConfig, findings: tuple[LineFinding, ...], target: Target, tree: str | None
) -> Corrected:
    args: list[str] = [tree or "."]
    flagged = {f.key for f in findings if f.finding.severity in ("error", "warning")}
    arch = config.get(*ARCH_KEYS)
    # a sound list's arch- or family-specific entries for these GPUs (9.0a for an H100) are kept
    written = (
        [e.removesuffix("+PTX") for e in arch_list_tokens(arch.value.strip().strip("\"'"))]
        if arch is not None and arch.key not in flagged
        else []
    )
    for cc in sorted({g.compute_capability for g in target.facts.gpus if g.compute_capability}):
        mine = [e for e in dict.fromkeys(written) if split_entry(e)[1] and _covers(e, cc)]
        for entry in mine or [cc]:
            args += ["--cc", entry]
    dropped: list[str] = []
    for key, setting in config.effective().items():
        if not key.startswith(_CARRIED_PREFIXES) or key in ("BUILD_DIR",):
            continue
        if key in flagged:
            dropped.append(f"{key}={setting.value}")
            continue
        value = setting.value.strip().strip("\"'")
        args += ["--set", f"{key}={value}"]
    for key in (*ARCH_KEYS, *CMAKE_ARCH_KEYS, "CUDA_TOOLKIT_ROOT_DIR", "CMAKE_CUDA_FLAGS"):
        named = config.get(key)
        if named is not None and key in flagged:
            dropped.append(f"{key}={named.value}")
    jobs = config.get(*JOB_KEYS)
    job_finding = next((f for f in findings if f.key == (jobs.key if jobs else None)), None)
    if jobs is not None and job_finding is not None:
        dropped.append(f"{jobs.key}={jobs.value}")
    elif jobs is not None and jobs.value.strip("\"'").isdigit():
        args += ["--jobs", jobs.value.strip("\"'")]
    return Corrected(build_args=tuple(args), dropped=tuple(dropped))


def _covers(entry: str, cc: str) -> bool:
    try:
        return covers(entry, cc)
    except ValueError:  # not an X.Ya entry (a name, a typo): it covers nothing
        return False


def _never_tried(configs: list[ExtractedConfig], target: Target) -> tuple[str, ...]:
    """For a log of attempts: the right values that no attempt used."""
    if len(configs) < 2:
        return ()
    out: list[str] = []
    ccs = sorted({g.compute_capability for g in target.facts.gpus if g.compute_capability})
    tried = {c.get(*ARCH_KEYS).value for c in configs if c.get(*ARCH_KEYS) is not None}  # type: ignore[union-attr]
    if ccs and not any(all(cc in value for cc in ccs) for value in tried):
        out.append(
            f"no attempt set TORCH_CUDA_ARCH_LIST to the GPU's own compute capability "
            f"({';'.join(ccs)})"
        )
    return tuple(out)
