"""Read and validate the knowledge base's TOML files into value objects.

Every fact table must name its source (`source = "key"` or a list of keys) and every key must be
defined in sources.toml; anything else is a :class:`KnowledgeError` naming the file and entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from torchsmith.errors import KnowledgeError
from torchsmith.knowledge.model import (
    FACT_STATUSES,
    GPU_KINDS,
    PLATFORMS,
    SOURCE_STATUSES,
    AmdGpu,
    ArchSuffix,
    Companions,
    CudaToolkit,
    DriverFloor,
    GpuModel,
    IntelGpu,
    MpsRequirement,
    RocmArchs,
    Source,
    SourceBuildRange,
    TorchRelease,
    Wheel,
    WheelArchs,
    XpuSupport,
    minor_of,
)
from torchsmith.util.toml import TOMLDecodeError, loads_toml

FILES = (
    "sources.toml",
    "gpus.toml",
    "cuda_toolkits.toml",
    "driver_compat.toml",
    "torch_releases.toml",
    "torch_wheels.toml",
    "accelerators.toml",
)

_VERSION = re.compile(r"^\d+(\.\d+)+$")
_DRIVER = re.compile(r"^\d{3}(\.\d+){0,2}$")
_CC = re.compile(r"^\d{1,2}\.\d$")
_SM = re.compile(r"^sm_\d{2,3}[af]?$")
_PTX = re.compile(r"^compute_\d{2,3}[af]?$")
_VARIANT = re.compile(r"^(cu\d{3}|cpu|rocm\d+(\.\d+)+|xpu)$")
_PY = re.compile(r"^3\.\d+t?$")

T = TypeVar("T")


class Parsed:
    """Everything the files say, validated; the query layer indexes it."""

    def __init__(self) -> None:
        self.sources: dict[str, Source] = {}
        self.gpus: list[GpuModel] = []
        self.toolkits: list[CudaToolkit] = []
        self.floors: list[DriverFloor] = []
        self.releases: list[TorchRelease] = []
        self.wheels: list[Wheel] = []
        self.source_builds: list[SourceBuildRange] = []
        self.arch_suffixes: list[ArchSuffix] = []
        self.amd_gpus: list[AmdGpu] = []
        self.rocm_archs: list[RocmArchs] = []
        self.intel_gpus: list[IntelGpu] = []
        self.xpu: list[XpuSupport] = []
        self.mps: MpsRequirement | None = None


def data_texts() -> dict[str, str]:
    """The shipped data files, by file name."""
    root = resources.files("torchsmith.knowledge") / "data"
    return {name: (root / name).read_text(encoding="utf-8") for name in FILES}


def read_dir(path: Path) -> dict[str, str]:
    """Data files from a folder (tests and `kb refresh` validate edited copies this way)."""
    try:
        return {name: (path / name).read_text(encoding="utf-8") for name in FILES}
    except OSError as exc:
        raise KnowledgeError(f"cannot read knowledge file: {exc}") from exc


def parse(texts: Mapping[str, str]) -> Parsed:
    docs: dict[str, dict[str, Any]] = {}
    for name in FILES:
        if name not in texts:
            raise KnowledgeError(f"knowledge file {name} is missing")
        try:
            docs[name] = loads_toml(texts[name])
        except TOMLDecodeError as exc:
            raise KnowledgeError(f"knowledge file {name} is not valid TOML: {exc}") from exc
    out = Parsed()
    out.sources = _sources(docs["sources.toml"])
    ctx = _Ctx(out.sources)
    out.gpus = ctx.each("gpus.toml", "gpu", docs["gpus.toml"], _gpu)
    out.toolkits = _toolkits(ctx, docs["cuda_toolkits.toml"])
    out.source_builds = ctx.each(
        "cuda_toolkits.toml", "source_build", docs["cuda_toolkits.toml"], _source_build
    )
    out.arch_suffixes = ctx.each(
        "cuda_toolkits.toml", "arch_suffix", docs["cuda_toolkits.toml"], _arch_suffix
    )
    out.floors = ctx.each("driver_compat.toml", "floor", docs["driver_compat.toml"], _floor)
    out.wheels = ctx.each("torch_wheels.toml", "wheel", docs["torch_wheels.toml"], _wheel)
    out.releases = _releases(ctx, docs["torch_releases.toml"], out.wheels)
    acc = docs["accelerators.toml"]
    out.amd_gpus = ctx.each("accelerators.toml", "amd_gpu", acc, _amd_gpu)
    out.rocm_archs = ctx.each("accelerators.toml", "rocm_archs", acc, _rocm_archs)
    out.intel_gpus = ctx.each("accelerators.toml", "intel_gpu", acc, _intel_gpu)
    out.xpu = ctx.each("accelerators.toml", "xpu", acc, _xpu)
    mps = acc.get("mps")
    if isinstance(mps, dict):
        out.mps = MpsRequirement(
            macos_min=_str(mps, "macos_min", "accelerators.toml mps", _VERSION),
            arch=_str(mps, "arch", "accelerators.toml mps"),
            sources=ctx.refs(mps, "accelerators.toml mps"),
        )
    _check_unique(out)
    return out


class _Ctx:
    def __init__(self, sources: dict[str, Source]) -> None:
        self.sources = sources

    def refs(self, table: Mapping[str, Any], where: str) -> tuple[str, ...]:
        if "source" not in table:
            raise KnowledgeError(f"{where}: fact has no source")
        raw = table["source"]
        keys = [raw] if isinstance(raw, str) else raw
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
            raise KnowledgeError(f"{where}: source must be a key or a non-empty list of keys")
        for key in keys:
            if key not in self.sources:
                raise KnowledgeError(f"{where}: unknown source {key!r} (define it in sources.toml)")
        return tuple(keys)

    def each(
        self,
        file: str,
        array: str,
        doc: Mapping[str, Any],
        build: Callable[[_Ctx, Mapping[str, Any], str], T],
    ) -> list[T]:
        items = doc.get(array, [])
        if not isinstance(items, list):
            raise KnowledgeError(f"{file}: [[{array}]] must be an array of tables")
        return [build(self, item, f"{file} {array}[{i}]") for i, item in enumerate(items)]


def _str(
    table: Mapping[str, Any], key: str, where: str, pattern: re.Pattern[str] | None = None
) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value:
        raise KnowledgeError(f"{where}: {key} must be a non-empty string")
    if pattern is not None and not pattern.match(value):
        raise KnowledgeError(f"{where}: {key} {value!r} is malformed")
    return value


def _opt_str(table: Mapping[str, Any], key: str, where: str) -> str | None:
    return None if key not in table else _str(table, key, where)


def _int(table: Mapping[str, Any], key: str, where: str) -> int:
    value = table.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise KnowledgeError(f"{where}: {key} must be an integer")
    return value


def _strs(
    table: Mapping[str, Any], key: str, where: str, pattern: re.Pattern[str]
) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise KnowledgeError(f"{where}: {key} must be a list of strings")
    for item in value:
        if not pattern.match(item):
            raise KnowledgeError(f"{where}: {key} entry {item!r} is malformed")
    return tuple(value)


def _sources(doc: Mapping[str, Any]) -> dict[str, Source]:
    out: dict[str, Source] = {}
    for key, table in doc.items():
        where = f"sources.toml [{key}]"
        if not isinstance(table, dict):
            raise KnowledgeError(f"{where}: must be a table")
        status = _str(table, "status", where)
        if status not in SOURCE_STATUSES:
            raise KnowledgeError(f"{where}: status {status!r} is not one of {SOURCE_STATUSES}")
        out[key] = Source(
            key=key,
            title=_str(table, "title", where),
            url=_str(table, "url", where),
            date=_str(table, "date", where),
            status=status,  # type: ignore[arg-type]
            note=_opt_str(table, "note", where),
        )
    return out


def _gpu(ctx: _Ctx, t: Mapping[str, Any], where: str) -> GpuModel:
    (source,) = ctx.refs(t, where)[:1]
    kind = _str(t, "kind", where)
    if kind not in GPU_KINDS:
        raise KnowledgeError(f"{where}: kind {kind!r} is not one of {GPU_KINDS}")
    aliases = t.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise KnowledgeError(f"{where}: aliases must be a list of strings")
    return GpuModel(
        name=_str(t, "name", where),
        compute_capability=_str(t, "compute_capability", where, _CC),
        architecture=_str(t, "architecture", where),
        kind=kind,  # type: ignore[arg-type]
        source=source,
        aliases=tuple(aliases),
    )


def _toolkits(ctx: _Ctx, doc: Mapping[str, Any]) -> list[CudaToolkit]:
    table = doc.get("toolkit", {})
    if not isinstance(table, dict):
        raise KnowledgeError("cuda_toolkits.toml: [toolkit.X] must be tables")
    out = []
    for version, t in table.items():
        where = f"cuda_toolkits.toml toolkit.{version}"
        if not _VERSION.match(version) or not isinstance(t, dict):
            raise KnowledgeError(f"{where}: malformed toolkit entry")
        parts = {}
        for group in ("driver", "targets", "host_compilers"):
            sub = t.get(group)
            if not isinstance(sub, dict):
                raise KnowledgeError(f"{where}: missing [{group}] table")
            parts[group] = sub
        drv, tgt, host = parts["driver"], parts["targets"], parts["host_compilers"]
        sources = (
            ctx.refs(drv, f"{where}.driver")
            + ctx.refs(tgt, f"{where}.targets")
            + ctx.refs(host, f"{where}.host_compilers")
        )
        linux = _opt_str(drv, "linux", where)
        windows = _opt_str(drv, "windows", where)
        for value in (linux, windows):
            if value is not None and not _DRIVER.match(value):
                raise KnowledgeError(f"{where}: driver version {value!r} is malformed")
        full = _opt_str(t, "full_version", where)
        out.append(
            CudaToolkit(
                version=version,
                full_version=full,
                min_driver_linux=linux,
                min_driver_windows=windows,
                sm_targets=_strs(tgt, "sm", where, _SM),
                max_gcc_major=_int(host, "gcc_max_major", where),
                max_clang_major=_int(host, "clang_max_major", where),
                msc_ver_min=_int(host, "msc_ver_min", where),
                msc_ver_max=_int(host, "msc_ver_max", where),
                sources=tuple(dict.fromkeys(sources)),
            )
        )
    return sorted(out, key=lambda tk: _vkey(tk.version))


_ANY = re.compile(r"^\S.*$")
_GFX = re.compile(r"^gfx\d{1,2}[0-9a-f]{2}$")
_OS = re.compile(r"^(linux|windows|macos)$")


def _amd_gpu(ctx: _Ctx, t: Mapping[str, Any], where: str) -> AmdGpu:
    consumer = t.get("consumer")
    if not isinstance(consumer, bool):
        raise KnowledgeError(f"{where}: consumer must be true or false")
    return AmdGpu(
        name=_str(t, "name", where),
        gfx=_str(t, "gfx", where, _GFX),
        consumer=consumer,
        sources=ctx.refs(t, where),
        aliases=_strs(t, "aliases", where, _ANY),
    )


def _rocm_archs(ctx: _Ctx, t: Mapping[str, Any], where: str) -> RocmArchs:
    return RocmArchs(
        torch=_str(t, "torch", where, _VERSION),
        variants=_strs(t, "variants", where, _VARIANT),
        gfx=_strs(t, "gfx", where, _GFX),
        status=_status(t, where),  # type: ignore[arg-type]
        sources=ctx.refs(t, where),
        note=_opt_str(t, "note", where),
    )


def _intel_gpu(ctx: _Ctx, t: Mapping[str, Any], where: str) -> IntelGpu:
    return IntelGpu(
        name=_str(t, "name", where),
        family=_str(t, "family", where),
        os=_strs(t, "os", where, _OS),
        sources=ctx.refs(t, where),
        aliases=_strs(t, "aliases", where, _ANY),
        torch_min=(_str(t, "torch_min", where, _VERSION) if "torch_min" in t else None),
    )


def _xpu(ctx: _Ctx, t: Mapping[str, Any], where: str) -> XpuSupport:
    return XpuSupport(
        torch_min=_str(t, "torch_min", where, _VERSION),
        os=_strs(t, "os", where, _OS),
        status=_status(t, where),  # type: ignore[arg-type]
        sources=ctx.refs(t, where),
    )


def _source_build(ctx: _Ctx, t: Mapping[str, Any], where: str) -> SourceBuildRange:
    lo = _str(t, "cuda_min", where, _VERSION)
    hi = _str(t, "cuda_max", where, _VERSION)
    if _vkey(lo) > _vkey(hi):
        raise KnowledgeError(f"{where}: cuda_min {lo} is above cuda_max {hi}")
    return SourceBuildRange(
        torch=_str(t, "torch", where, _VERSION),
        cuda_min=lo,
        cuda_max=hi,
        status=_status(t, where),  # type: ignore[arg-type]
        sources=ctx.refs(t, where),
        note=_opt_str(t, "note", where),
    )


def _arch_suffix(ctx: _Ctx, t: Mapping[str, Any], where: str) -> ArchSuffix:
    suffix = _str(t, "suffix", where)
    if suffix not in ("a", "f"):
        raise KnowledgeError(f"{where}: suffix must be a or f, not {suffix!r}")
    return ArchSuffix(
        suffix=suffix,
        first_cc=_str(t, "first_cc", where, _VERSION),
        min_cuda=_str(t, "min_cuda", where, _VERSION),
        sources=ctx.refs(t, where),
        cmake=tuple(_specifier(s, f"{where}: cmake") for s in _strs(t, "cmake", where, _ANY)),
    )


def _specifier(text: str, where: str) -> str:
    """A specifier set with a >= floor (build config names the first version that takes it)."""
    try:
        specs = SpecifierSet(text)
    except InvalidSpecifier as exc:
        raise KnowledgeError(f"{where} {text!r} is not a version specifier") from exc
    if not any(s.operator == ">=" for s in specs):
        raise KnowledgeError(f"{where} {text!r} has no >= floor")
    return text


def _floor(ctx: _Ctx, t: Mapping[str, Any], where: str) -> DriverFloor:
    return DriverFloor(
        cuda_major=_int(t, "cuda_major", where),
        linux=_str(t, "linux", where, _DRIVER),
        windows=_str(t, "windows", where, _DRIVER),
        sources=ctx.refs(t, where),
    )


def _status(t: Mapping[str, Any], where: str) -> str:
    status = _str(t, "status", where)
    if status not in FACT_STATUSES:
        raise KnowledgeError(f"{where}: status {status!r} is not one of {FACT_STATUSES}")
    return status


def _wheel(ctx: _Ctx, t: Mapping[str, Any], where: str) -> Wheel:
    sources = ctx.refs(t, where)
    status = _status(t, where)
    os_name = _str(t, "os", where)
    arch = _str(t, "arch", where)
    if f"{os_name}-{arch}" not in PLATFORMS:
        raise KnowledgeError(f"{where}: platform {os_name}-{arch} is unknown")
    archs = None
    if "sass" in t:
        archs = WheelArchs(
            sass=_strs(t, "sass", where, _SM),
            ptx=_strs(t, "ptx", where, _PTX),
            extra=_strs(t, "extra", where, _SM),
            source=sources,
            status=status,  # type: ignore[arg-type]
        )
    return Wheel(
        torch=_str(t, "torch", where, _VERSION),
        variant=_str(t, "variant", where, _VARIANT),
        os=os_name,
        arch=arch,
        archs=archs,
        status=status,  # type: ignore[arg-type]
        sources=sources,
    )


def _releases(ctx: _Ctx, doc: Mapping[str, Any], wheels: list[Wheel]) -> list[TorchRelease]:
    defaults: dict[str, dict[str, str]] = {}
    default_sources: dict[str, tuple[str, ...]] = {}
    for i, t in enumerate(doc.get("pypi_default", [])):
        where = f"torch_releases.toml pypi_default[{i}]"
        default_sources[where] = ctx.refs(t, where)
        platform = _str(t, "platform", where)
        if platform not in PLATFORMS:
            raise KnowledgeError(f"{where}: platform {platform!r} is unknown")
        minor = _str(t, "torch", where, _VERSION)
        defaults.setdefault(minor, {})[platform] = _str(t, "variant", where, _VARIANT)
    companions: dict[str, Companions] = {}
    for i, t in enumerate(doc.get("companion", [])):
        where = f"torch_releases.toml companion[{i}]"
        c = Companions(
            torch=_str(t, "torch", where, _VERSION),
            torchvision=_str(t, "torchvision", where, _VERSION),
            torchaudio=_str(t, "torchaudio", where, _VERSION),
            sources=ctx.refs(t, where),
            note=_opt_str(t, "note", where),
        )
        companions[c.torch] = c
    variants: dict[str, list[str]] = {}
    for w in wheels:
        variants.setdefault(w.torch, [])
        if w.variant not in variants[w.torch]:
            variants[w.torch].append(w.variant)
    out = []
    for i, t in enumerate(doc.get("release", [])):
        where = f"torch_releases.toml release[{i}]"
        sources = ctx.refs(t, where)
        version = _str(t, "version", where, _VERSION)
        requires = _str(t, "requires_python", where)
        try:
            SpecifierSet(requires)
        except InvalidSpecifier as exc:
            raise KnowledgeError(f"{where}: requires_python {requires!r} is malformed") from exc
        py = t.get("python", {})
        if not isinstance(py, dict):
            raise KnowledgeError(f"{where}: python must be a table")
        python: dict[str, tuple[str, ...]] = {}
        for platform in py:
            if platform not in PLATFORMS:
                raise KnowledgeError(f"{where}: platform {platform!r} is unknown")
            python[platform] = _strs(py, platform, where, _PY)
        minor = minor_of(version)
        out.append(
            TorchRelease(
                version=version,
                date=_str(t, "date", where),
                requires_python=requires,
                python=python,
                pypi_default=dict(defaults.get(minor, {})),
                sources=sources,
                companions=companions.get(minor),
                variants=tuple(variants.get(minor, ())),
            )
        )
    return sorted(out, key=lambda r: _vkey(r.version))


def _check_unique(p: Parsed) -> None:
    seen: set[tuple[str, ...]] = set()
    for w in p.wheels:
        key = (w.torch, w.variant, w.os, w.arch)
        if key in seen:
            raise KnowledgeError(f"torch_wheels.toml: duplicate entry {' '.join(key)}")
        seen.add(key)
    versions = [r.version for r in p.releases]
    if len(set(versions)) != len(versions):
        raise KnowledgeError("torch_releases.toml: a release is listed twice")


def _vkey(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))
