"""One call for the CLI: detect, read the tree's switches and compiler caches, configure, preflight.

The reading parts (detect_project, tree_options, find_compiler_caches, read_tree) touch the
file system; make_config and preflight stay pure. Nothing here changes the machine.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from torchsmith.build.config import EXTENSION_KINDS, make_config
from torchsmith.build.detect import detect_project
from torchsmith.build.model import BuildConfig, Project
from torchsmith.build.options import BuildOptions
from torchsmith.build.preflight import preflight
from torchsmith.build.tree import TreeFacts, find_compiler_caches, read_tree, tree_options
from torchsmith.knowledge import Knowledge
from torchsmith.probe.model import Finding, Probe


@dataclass(frozen=True)
class Prepared:
    project: Project
    config: BuildConfig
    tree: TreeFacts
    findings: tuple[Finding, ...]  # preflight, errors first

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)


def prepare(
    path: Path,
    probe: Probe,
    kb: Knowledge,
    options: BuildOptions,
    *,
    fleet: tuple[Probe, ...] = (),
) -> Prepared:
    """Raises InputError (no project) or UsageError (bad --cc/--gpu/--set/--cache)."""
    project = detect_project(path)
    python = options.python or (probe.python.executable if probe.python else None)
    if options.tool_paths is None:
        options = dataclasses.replace(options, tool_paths=find_compiler_caches(python))
    known = tree_options(project) if project.kind == "pytorch" else None
    config = make_config(project, probe, kb, options, fleet=fleet, known_options=known)
    torch = probe.torch.location if probe.torch and project.kind in EXTENSION_KINDS else None
    tree = read_tree(project, config, torch)
    return Prepared(project, config, tree, preflight(config, tree, probe, kb))
