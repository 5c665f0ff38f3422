"""Build resource facts (knowledge/data/build.toml): per-job memory, disk, Windows path budget.

Read once and validated like the rest of the knowledge base: every table names sources that the
file itself defines under ``[source.KEY]``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

from torchsmith.errors import KnowledgeError
from torchsmith.knowledge.model import SOURCE_STATUSES, Source
from torchsmith.util.toml import TOMLDecodeError, loads_toml


@dataclass(frozen=True)
class BuildFacts:
    cxx_job_gb: float
    nvcc_thread_gb: float
    reserve_gb: float
    nvcc_threads_max: int
    disk_gb: dict[str, float]  # project kind -> GB
    windows_max_tree_path: int
    sources: dict[str, Source]
    memory_sources: tuple[str, ...]
    disk_sources: tuple[str, ...]

    def job_gb(self, cuda: bool, nvcc_threads: int = 1) -> float:
        """Peak memory of one parallel compile job."""
        return self.nvcc_thread_gb * nvcc_threads if cuda else self.cxx_job_gb

    def jobs_that_fit(self, ram_gb: float, cuda: bool, nvcc_threads: int = 1) -> int:
        """Parallel compile jobs that fit in ``ram_gb`` after the reserve (at least 1): the one
        budget build, preflight, review and doctor all advise MAX_JOBS from."""
        return max(1, int((ram_gb - self.reserve_gb) // self.job_gb(cuda, nvcc_threads)))


def parse_build_facts(text: str) -> BuildFacts:
    try:
        doc = loads_toml(text)
    except TOMLDecodeError as exc:
        raise KnowledgeError(f"knowledge file build.toml is not valid TOML: {exc}") from exc
    sources = {}
    for key, t in doc.get("source", {}).items():
        status = t.get("status")
        if status not in SOURCE_STATUSES or not all(
            isinstance(t.get(k), str) for k in ("title", "url", "date")
        ):
            raise KnowledgeError(f"build.toml [source.{key}]: malformed source")
        sources[key] = Source(key, t["title"], t["url"], t["date"], status, t.get("note"))

    def table(name: str) -> tuple[dict[str, Any], tuple[str, ...]]:
        t = doc.get(name)
        if not isinstance(t, dict):
            raise KnowledgeError(f"build.toml: missing [{name}]")
        refs = t.get("source")
        keys = (refs,) if isinstance(refs, str) else tuple(refs or ())
        if not keys or any(k not in sources for k in keys):
            raise KnowledgeError(f"build.toml [{name}]: every fact needs a defined source")
        return t, keys

    def num(t: dict[str, Any], key: str, where: str) -> float:
        v = t.get(key)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
            raise KnowledgeError(f"build.toml [{where}]: {key} must be a positive number")
        return float(v)

    mem, mem_src = table("memory")
    disk, disk_src = table("disk")
    win, _ = table("windows")
    return BuildFacts(
        cxx_job_gb=num(mem, "cxx_job_gb", "memory"),
        nvcc_thread_gb=num(mem, "nvcc_thread_gb", "memory"),
        reserve_gb=num(mem, "reserve_gb", "memory"),
        nvcc_threads_max=int(num(mem, "nvcc_threads_max", "memory")),
        disk_gb={k.removesuffix("_gb"): num(disk, k, "disk") for k in disk if k.endswith("_gb")},
        windows_max_tree_path=int(num(win, "max_tree_path", "windows")),
        sources=sources,
        memory_sources=mem_src,
        disk_sources=disk_src,
    )


@functools.cache
def load_build_facts() -> BuildFacts:
    root = resources.files("torchsmith.knowledge") / "data"
    return parse_build_facts((root / "build.toml").read_text(encoding="utf-8"))
