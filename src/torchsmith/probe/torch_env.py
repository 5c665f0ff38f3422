"""The installed torch, from what ``scripts/target_probe.py`` found in the target, read as data.

Nothing here imports torch. ``torch/version.py`` is parsed with :mod:`ast` (literals only); the
cuDNN and NCCL versions come, best effort, from

- the library files a wheel bundles in ``torch/lib`` (download.pytorch.org's older Linux wheels:
  ``libcudnn.so.8``, ``libnccl.so.2.x.y``; Windows CUDA wheels: ``cudnn64_9.dll``), which the
  loader finds first through torch's ``$ORIGIN`` rpath — the name carries the major version, or
  more where the file has a longer suffix;
- else the pip distributions torch depends on (``nvidia-cudnn-cu13``, ``nvidia-nccl-cu12`` ...),
  preferring the one that matches torch's CUDA major — their version is the full one.

The GPU archs (``TorchInfo.archs``) are read from torch's own CUDA libraries only
(``libtorch_cuda*.so``/``torch_cuda*.dll`` and ``c10_cuda``), never from cuDNN/cuBLAS.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchsmith.binaries.targets import read_archs
from torchsmith.probe.model import ArchSet, TorchInfo

_VERSION_FIELDS = ("__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu")
_HASH = r"(?:-[0-9a-f]{8})?"  # auditwheel-style renaming: libcudnn-1a2b3c4d.so.8
_CUDNN_FILES = (
    re.compile(rf"^libcudnn{_HASH}\.so\.(\d+(?:\.\d+)*)$"),
    re.compile(r"^cudnn64_(\d+)\.dll$", re.IGNORECASE),
)
_NCCL_FILES = (re.compile(rf"^libnccl{_HASH}\.so\.(\d+(?:\.\d+)*)$"),)
_ARCH_FILES = re.compile(
    r"^(?:lib)?(?:torch_cuda(?:_cu|_cpp|_linalg)?|c10_cuda)\.(?:so|dll)$", re.IGNORECASE
)


@dataclass(frozen=True)
class LibraryVersion:
    """A version and where it was read: ``torch/lib/libcudnn.so.9`` or ``nvidia-cudnn-cu13``."""

    version: str
    source: str


# ---------------------------------------------------------------- torch/version.py


def parse_version_py(text: str) -> dict[str, str | bool | None]:
    """The literal assignments of a ``torch/version.py``; ValueError when it is not usable.

    Handles both the annotated form (``cuda: Optional[str] = '13.0'``, torch 1.10+) and the
    plain one (``cuda = '10.2'``). Nothing in the file is executed.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:  # ValueError: source with NUL bytes
        line = getattr(exc, "lineno", None)
        where = f" (line {line})" if line else ""
        raise ValueError(f"not valid Python{where}: {getattr(exc, 'msg', exc)}") from None
    values: dict[str, str | bool | None] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name) or target.id not in _VERSION_FIELDS:
            continue
        try:
            literal = ast.literal_eval(value)
        except ValueError:
            continue
        if literal is None or isinstance(literal, (str, bool)):
            values[target.id] = literal
    if not isinstance(values.get("__version__"), str) or not values["__version__"]:
        raise ValueError("no __version__ string in it")
    return values


# ---------------------------------------------------------------- the report -> TorchInfo


def torch_info_from_report(report: Mapping[str, Any]) -> TorchInfo | None:
    """:class:`TorchInfo` from the target script's JSON; ``None`` when torch is not installed."""
    dists = _dist_versions(report.get("dists"))
    found = report.get("torch")
    dist_version = dists.get("torch")
    companions = _companions(dists)
    if not isinstance(found, Mapping):
        if dist_version is None:
            return None
        meta = _dist_path(report.get("dists"), "torch") or "its metadata"
        return TorchInfo(
            version=dist_version,
            location="",
            companions=companions,
            error=f"torch {dist_version} is recorded as installed ({meta}) but no torch "
            "package can be found: a broken or half-removed install",
        )
    location = _opt_str(found.get("location")) or ""
    fields, problem = _version_fields(found, location)
    if fields is None:
        return TorchInfo(dist_version or "unknown", location, companions=companions, error=problem)
    return _healthy_torch(fields, location, found, dists, companions)


def _version_fields(
    found: Mapping[str, Any], location: str
) -> tuple[dict[str, str | bool | None] | None, str | None]:
    """The parsed ``torch/version.py``, or ``None`` and why the install cannot be read."""
    if found.get("find_error"):
        return None, f"looking for torch failed: {found['find_error']}"
    if found.get("namespace"):
        return None, f"{location}/ has no __init__.py: a leftover directory, not an install"
    text = found.get("version_py")
    if not isinstance(text, str):
        why = found.get("version_py_error") or "missing"
        return None, f"torch/version.py cannot be read: {why}"
    try:
        return parse_version_py(text), None
    except ValueError as exc:
        return None, f"torch/version.py is broken: {exc}"


def _healthy_torch(
    fields: Mapping[str, str | bool | None],
    location: str,
    found: Mapping[str, Any],
    dists: Mapping[str, str],
    companions: dict[str, str],
) -> TorchInfo:
    cuda = _opt_str(fields.get("cuda"))
    hip = _opt_str(fields.get("hip"))
    lib_files = [f for f in found.get("lib_files") or () if isinstance(f, str)]
    cudnn = cudnn_version(lib_files, dists, cuda)
    nccl = nccl_version(lib_files, dists, cuda)
    debug = fields.get("debug")
    archs = None
    if cuda is not None and location:
        archs = read_torch_archs(cuda_library_paths(Path(location) / "lib", lib_files))
    return TorchInfo(
        version=str(fields["__version__"]),
        location=location,
        cuda=cuda,
        hip=hip,
        git_version=_opt_str(fields.get("git_version")),
        debug=debug if isinstance(debug, bool) else None,
        cudnn=cudnn.version if cudnn else None,
        nccl=nccl.version if nccl else None,
        companions=companions,
        archs=archs,
        sources={
            name: lib.source for name, lib in (("cudnn", cudnn), ("nccl", nccl)) if lib is not None
        },
    )


# ---------------------------------------------------------------- cuDNN, NCCL, archs


def cudnn_version(
    lib_files: Iterable[str], dists: Mapping[str, str], cuda: str | None
) -> LibraryVersion | None:
    """cuDNN bundled in ``torch/lib`` first, else the ``nvidia-cudnn-cuXY`` distribution."""
    return _bundled(lib_files, _CUDNN_FILES) or _from_dist(dists, "nvidia-cudnn", cuda)


def nccl_version(
    lib_files: Iterable[str], dists: Mapping[str, str], cuda: str | None
) -> LibraryVersion | None:
    """NCCL bundled in ``torch/lib`` first, else the ``nvidia-nccl-cuXY`` distribution."""
    return _bundled(lib_files, _NCCL_FILES) or _from_dist(dists, "nvidia-nccl", cuda)


def cuda_library_paths(lib_dir: Path, lib_files: Iterable[str]) -> tuple[Path, ...]:
    """torch's own CUDA libraries in ``lib_dir`` (those that carry its GPU code)."""
    return tuple(lib_dir / name for name in sorted(lib_files) if _ARCH_FILES.match(name))


def read_torch_archs(paths: Sequence[Path]) -> ArchSet:
    """The SASS/PTX archs in torch's CUDA libraries (fatbin headers only, no cuobjdump)."""
    if not paths:
        return ArchSet(error="no CUDA libraries of torch found in torch/lib")
    return read_archs(paths)


def _bundled(
    lib_files: Iterable[str], patterns: Sequence[re.Pattern[str]]
) -> LibraryVersion | None:
    best: LibraryVersion | None = None
    for name in lib_files:
        for pattern in patterns:
            match = pattern.match(name)
            if match and (best is None or len(match.group(1)) > len(best.version)):
                best = LibraryVersion(match.group(1), f"torch/lib/{name}")
    return best


def _from_dist(dists: Mapping[str, str], stem: str, cuda: str | None) -> LibraryVersion | None:
    major = cuda.split(".", 1)[0] if cuda else None
    names = sorted((n for n in dists if n.startswith(f"{stem}-cu")), reverse=True)
    if major is not None:
        names.sort(key=lambda n: n != f"{stem}-cu{major}")
    return LibraryVersion(dists[names[0]], names[0]) if names else None


def _dist_versions(raw: object) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, str] = {}
    for name, entry in raw.items():
        version = entry.get("version") if isinstance(entry, Mapping) else None
        if isinstance(name, str) and isinstance(version, str):
            out[name] = version
    return out


def _dist_path(raw: object, name: str) -> str | None:
    entry = raw.get(name) if isinstance(raw, Mapping) else None
    path = entry.get("path") if isinstance(entry, Mapping) else None
    return path if isinstance(path, str) else None


def _companions(dists: Mapping[str, str]) -> dict[str, str]:
    """torch's companions and the NVIDIA libraries it loads, by distribution name.

    The target script looks up exactly those (its ``DISTS``), so everything but torch itself.
    """
    return {name: version for name, version in sorted(dists.items()) if name != "torch"}


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
