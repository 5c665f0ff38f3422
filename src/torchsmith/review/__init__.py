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
from torchsmith.plan.model import MachineFacts, Plan
from torchsmith.review.checks import (
    ARCH_KEYS,
    CMAKE_ARCH_KEYS,
    LineFinding,
    Target,
    run_checks,
)
from torchsmith.review.correct import Corrected, correct
from torchsmith.review.extract import ExtractedConfig, Setting, extract
from torchsmith.review.parse import parse_script
from torchsmith.review.switches import BuildSwitches


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
                corrected=correct(config, findings, target, kb, tree),
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
