"""Which build switches a PyTorch tree defines: read from the tree, or from the knowledge base.

PyTorch's setup passes every ``BUILD_*``/``USE_*``/``CMAKE_*`` environment variable to CMake
without checking it, and CMake ignores a variable nothing reads: a misspelled or removed switch
does nothing, silently. This module answers "is ``NAME`` a real switch, and if not, why".
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from torchsmith.errors import InputError
from torchsmith.util.toml import loads_toml

_OPTION = re.compile(
    r"\b(?:option|cmake_dependent_option)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s+\"[^\"]*\"\s+"
    r"(?:\"[^\"]*\"|\S+)\s*(?:\"([^\"]*)\")?",
    re.DOTALL,
)
_SWITCH_PREFIXES = ("USE_", "BUILD_", "CAFFE2_")


@dataclass(frozen=True)
class Verdict:
    known: bool
    reason: str = ""
    suggestion: str | None = None


@dataclass(frozen=True)
class BuildSwitches:
    label: str  # "the PyTorch tree at X" / "PyTorch (knowledge base)"
    names: frozenset[str]
    ignored: dict[str, str] = field(default_factory=dict)  # name -> why it does nothing
    dependents: dict[str, tuple[str, ...]] = field(default_factory=dict)  # parent -> children
    source: str | None = None
    # name -> the OSes where its cmake_dependent_option condition forces it off (USE_NCCL's
    # "...;UNIX;NOT APPLE": windows and macos)
    platform_off: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @staticmethod
    def is_switch_name(name: str) -> bool:
        return name.startswith(_SWITCH_PREFIXES) and name.upper() == name

    def lookup(self, name: str) -> Verdict:
        if name in self.ignored:
            return Verdict(False, self.ignored[name])
        if name in self.names:
            return Verdict(True)
        close = difflib.get_close_matches(name, sorted(self.names), n=1, cutoff=0.75)
        return Verdict(
            False,
            "PyTorch passes it to CMake, which ignores a variable nothing reads",
            close[0] if close else None,
        )


def _dependents(depends_on: dict[str, list[str]]) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for child, parents in depends_on.items():
        for parent in parents:
            out.setdefault(parent, []).append(child)
    return {k: tuple(v) for k, v in out.items()}


def _data_text() -> str:
    return (
        resources.files("torchsmith.knowledge")
        .joinpath("data/pytorch_build_options.toml")
        .read_text("utf-8")
    )


@functools.lru_cache(maxsize=1)
def from_knowledge() -> BuildSwitches:
    """The switches of a recent PyTorch, from knowledge/data/pytorch_build_options.toml."""
    data = loads_toml(_data_text())
    options = data["options"]
    names = frozenset(options["names"]) | _script_names(options)
    ignored = {name: entry["reason"] for name, entry in data.get("ignored", {}).items()}
    return BuildSwitches(
        label="PyTorch's CMake (knowledge base)",
        names=names,
        ignored=ignored,
        dependents=_dependents(options.get("depends_on", {})),
        source=str(options["source"]),
        platform_off={k: tuple(v) for k, v in options.get("platform_off", {}).items()},
    )


def _script_names(options: dict[str, Any]) -> frozenset[str]:
    return frozenset(options.get("build_script_names", ()))


_FORCED = re.compile(r"\bset\s*\(\s*((?:USE|BUILD)_[A-Z0-9_]+)\s[^)]*\bFORCE\s*\)")


def parse_cmake_dependencies(text: str) -> dict[str, list[str]]:
    """cmake_dependent_option(NAME ... "CONDITION" ...): the switches NAME needs to be on."""
    depends_on: dict[str, list[str]] = {}
    for match in _OPTION.finditer(text):
        condition = match.group(2)
        if not condition or " OR " in condition:
            continue
        parents = [
            word
            for word in re.split(r"[;\s]+", condition)
            if re.fullmatch(r"(USE|BUILD)_[A-Z0-9_]+", word)
        ]
        if parents:
            depends_on[match.group(1)] = parents
    return depends_on


def parse_cmake_platforms(text: str) -> dict[str, tuple[str, ...]]:
    """cmake_dependent_option(NAME ... "...;UNIX;NOT APPLE" ...): the OSes that force NAME off."""
    out: dict[str, tuple[str, ...]] = {}
    for match in _OPTION.finditer(text):
        words = [w.strip() for w in (match.group(2) or "").split(";")]
        off = []
        if "UNIX" in words or "NOT WIN32" in words:
            off.append("windows")
        if "NOT APPLE" in words:
            off.append("macos")
        if off:
            out[match.group(1)] = tuple(off)
    return out


def from_tree(tree: Path) -> BuildSwitches:
    """The switches a source tree defines (build.tree.tree_options: its CMake option()s and the
    environment names its setup reads), with the dependencies and FORCEd values its CMake sets."""
    from torchsmith.build.model import Project  # noqa: PLC0415
    from torchsmith.build.tree import tree_options  # noqa: PLC0415

    top = tree / "CMakeLists.txt"
    if not top.is_file():
        raise InputError(
            f"--tree {tree}: no CMakeLists.txt there", tip="pass the root of a PyTorch checkout"
        )
    names = set(tree_options(Project(str(tree.resolve()), "pytorch", "setup.py")))
    forced: dict[str, str] = {}
    depends_on: dict[str, list[str]] = {}
    platform_off: dict[str, tuple[str, ...]] = {}
    for path in [top, *sorted((tree / "cmake").glob("*.cmake"))]:
        try:
            text = path.read_text("utf-8", errors="replace")
        except OSError as exc:
            raise InputError(f"--tree {tree}: cannot read {path.name}: {exc.strerror}") from exc
        depends_on.update(parse_cmake_dependencies(text))
        platform_off.update(parse_cmake_platforms(text))
        for name in _FORCED.findall(text):
            forced[name] = (
                f"{path.relative_to(tree)} forces it (CACHE ... FORCE), so any value you pass "
                "is overwritten"
            )
    options = loads_toml(_data_text())["options"]
    names |= _script_names(options)  # read by setup.py, not by CMake
    kb = from_knowledge()
    ignored = {k: v for k, v in kb.ignored.items() if k not in names}
    ignored.update(forced)
    return BuildSwitches(
        label=f"the tree at {tree}",
        names=frozenset(names),
        ignored=ignored,
        dependents=_dependents(depends_on),
        source=None,
        platform_off=platform_off,
    )
