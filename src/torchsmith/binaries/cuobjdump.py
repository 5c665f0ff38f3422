"""cuobjdump, for cross-checking only (tests, bench): torchsmith never needs it at runtime.

``cuobjdump --list-elf`` prints ``ELF file    1: libx.1.sm_90.cubin`` and ``--list-ptx`` prints
``PTX file    1: libx.1.sm_120f.ptx``. It lists family-specific cubins without their ``f``
(``sm_100f`` shows as ``sm_100``), and PTX under the sm_ name; :func:`comparable` maps
torchsmith's counts onto that view.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from torchsmith.util import cmd

_LINE = re.compile(r"^(ELF|PTX) file\s+\d+:\s+(\S+?)\.(sm_\d+[af]?)\.(cubin|ptx)\s*$")


@dataclass(frozen=True)
class Listing:
    sass: dict[str, int]  # "sm_90": count, as cuobjdump names them
    ptx: dict[str, int]  # "compute_120f": count


def parse_listing(text: str) -> Listing:
    """Count the ELF and PTX files in cuobjdump ``--list-elf`` / ``--list-ptx`` output."""
    sass: Counter[str] = Counter()
    ptx: Counter[str] = Counter()
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        kind, _stem, arch, _ext = match.groups()
        if kind == "ELF":
            sass[arch] += 1
        else:
            ptx["compute_" + arch.removeprefix("sm_")] += 1
    return Listing(dict(sass), dict(ptx))


def comparable(sass: Mapping[str, int], ptx: Mapping[str, int]) -> Listing:
    """torchsmith's counts as cuobjdump would show them (family cubins merged into plain)."""
    merged: Counter[str] = Counter()
    for arch, count in sass.items():
        merged[arch[:-1] if arch.endswith("f") else arch] += count
    return Listing(dict(merged), dict(ptx))


def find_cuobjdump() -> str | None:
    """cuobjdump on PATH, in CUDA_HOME / /usr/local/cuda, or from the pip package."""
    found = cmd.which("cuobjdump")
    if found:
        return found
    candidates = [Path("/usr/local/cuda/bin/cuobjdump")]
    for entry in sys.path:
        nvidia = Path(entry) / "nvidia"
        if nvidia.is_dir():
            candidates.extend(sorted(nvidia.glob("*/bin/cuobjdump")))
    return next((str(c) for c in candidates if c.is_file()), None)


def run_listing(tool: str, path: Path, *, timeout: float = 300.0) -> tuple[Listing, float]:
    """Run cuobjdump --list-elf and --list-ptx on ``path``; return the listing and seconds taken."""
    elf = cmd.run([tool, "--list-elf", str(path)], timeout=timeout)
    ptx = cmd.run([tool, "--list-ptx", str(path)], timeout=timeout)
    listing = parse_listing(elf.stdout + "\n" + ptx.stdout)
    return listing, elf.duration_s + ptx.duration_s
