"""What install is asked to do, what it decided, and what happened (rendered or --json)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Literal

from torchsmith.install.indexes import IndexConfig
from torchsmith.probe.model import Finding

InstallerName = Literal["uv", "pip"]
Status = Literal["planned", "succeeded", "failed", "rolled-back", "interrupted"]


@dataclass(frozen=True)
class InstallOptions:
    python: str | None = None  # an interpreter; None with venv None: the active one
    venv: str | None = None  # created when missing
    companions: tuple[str, ...] = ()  # torchvision, torchaudio
    index_url: str | None = None
    find_links: tuple[str, ...] = ()
    installer: InstallerName | None = None  # None: uv where present, else pip
    dry_run: bool = False
    verify: bool = True
    timeout_s: float = 1800.0

    def __post_init__(self) -> None:
        # one spelling of the venv from here on, the one python -m venv makes: lexical, as venv
        # does it (new/../env is ./env, even where `new` does not exist)
        if self.venv is not None:
            object.__setattr__(self, "venv", os.path.abspath(self.venv))  # noqa: PTH100


@dataclass(frozen=True)
class Requirement:
    name: str
    spec: str  # "torch==2.13.0+cpu", "torchvision==0.28.*"
    source: str | None  # where it should come from: a find-links dir or index URL; None: default
    why: str  # "find-links /opt/wheels (pip config)", "plan index"


@dataclass(frozen=True)
class InstallStep:
    title: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)  # only what torchsmith adds


@dataclass
class InstallResult:
    python: str
    installer: str
    status: Status
    torch: str | None  # the plan's pick, "2.13.0+cpu"
    variant: str | None
    requirements: list[Requirement] = field(default_factory=list)
    steps: list[InstallStep] = field(default_factory=list)
    before: dict[str, str] = field(default_factory=dict)
    after: dict[str, str] = field(default_factory=dict)
    changed: dict[str, list[str | None]] = field(default_factory=dict)  # name -> [before, after]
    origins: dict[str, str] = field(default_factory=dict)  # name -> where it came from
    snapshot: str | None = None
    ledger_id: int | None = None
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    archs: list[str] = field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0
    verify: Any = None  # the VerifyReport, when verify ran
    sources: IndexConfig | None = None  # the package sources used


def diff(before: dict[str, str], after: dict[str, str]) -> dict[str, list[str | None]]:
    names = sorted(set(before) | set(after))
    return {n: [before.get(n), after.get(n)] for n in names if before.get(n) != after.get(n)}
