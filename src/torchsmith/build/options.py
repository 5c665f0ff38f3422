"""What the user asked ``torchsmith build`` for, as one frozen value (flags, already parsed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from torchsmith.build.model import Profile

CacheRequest = Literal["auto", "none", "sccache", "ccache"]


@dataclass(frozen=True)
class BuildOptions:
    targets: tuple[str, ...] = ()  # compute capabilities from --cc: "9.0", "12.0"
    gpus: tuple[str, ...] = ()  # GPU names from --gpu: "RTX 5070", "H200"
    probe_files: tuple[str, ...] = ()  # --probe FILE ...: the machines the result must run on
    profile: Profile = "fast"
    sets: tuple[tuple[str, str], ...] = ()  # --set KEY=VALUE, in the order given
    jobs: int | None = None  # --jobs N; None: from RAM and cores
    cache: CacheRequest = "auto"
    python: str | None = None  # --python PY; None: the probe's target interpreter
    clean: bool = False
    dry_run: bool = False
    # Where to look for sccache/ccache besides PATH: the target venv's and torchsmith's bin dirs.
    # Filled in by the CLI (an executor concern); make_config only reads it.
    tool_paths: dict[str, str] | None = None  # {"sccache": "/venv/bin/sccache", ...}
    # The user's own MAX_JOBS and TORCH_CUDA_ARCH_LIST, read from the environment by the CLI:
    # what a build would inherit, so the configuration says what it does with them.
    inherited: tuple[tuple[str, str], ...] = ()

    def inherited_value(self, name: str) -> str | None:
        return dict(self.inherited).get(name) or None
