"""Runs INSIDE the target interpreter: report the interpreter and the torch it would import.

Printed as one line, ``TORCHSMITH-PROBE:`` followed by JSON, so that stray output from ``.pth``
files cannot be mistaken for the answer. Rules this script keeps:

- it never imports torch (a broken torch must not break the report; importing it takes seconds):
  ``importlib.util.find_spec`` on a top-level name runs the finders only, and ``torch/version.py``
  is returned as text, parsed by torchsmith;
- it stays fast (tens of milliseconds): no ``importlib.metadata`` (40 ms to import), only a name
  match over the listings of the ``sys.path`` directories, opening just the wanted ``METADATA``;
- it runs on CPython 3.6 and newer (no walrus, no ``X | Y`` at runtime, no ``importlib.metadata``),
  so that old interpreters still get a report.
"""

# os.path, not pathlib: pathlib costs ~5 ms to import and this script runs on every doctor call.
# ruff: noqa: PTH100, PTH112, PTH118, PTH119, PTH120, PTH123, PTH208

import json
import os
import re
import struct
import sys
import sysconfig

MARKER = "TORCHSMITH-PROBE:"
SCHEMA = 1
# Distributions whose versions matter next to torch; looked up by normalised name.
DISTS = (
    "torch",
    "torchvision",
    "torchaudio",
    "triton",
    "pytorch-triton",
    "pytorch-triton-rocm",
    "pytorch-triton-xpu",
    "xformers",
    "flash-attn",
    "nvidia-cudnn-cu11",
    "nvidia-cudnn-cu12",
    "nvidia-cudnn-cu13",
    "nvidia-nccl-cu11",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
    "nvidia-cuda-runtime-cu11",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cuda-runtime",
)
_LEVELS = {"alpha": "a", "beta": "b", "candidate": "rc", "final": ""}
_IMPLEMENTATIONS = {"cpython": "CPython", "pypy": "PyPy", "graalpy": "GraalPy"}
_MAX_VERSION_PY = 65536


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _python_version() -> str:
    v = sys.version_info
    text = f"{v[0]}.{v[1]}.{v[2]}"
    level = _LEVELS.get(v[3], v[3])
    return text + (level + str(v[4]) if level else "")


def _env_kind() -> str:
    base = getattr(sys, "real_prefix", None) or sys.base_prefix  # real_prefix: old virtualenv
    if os.path.realpath(base) != os.path.realpath(sys.prefix):
        return "venv"
    if os.path.isdir(os.path.join(sys.prefix, "conda-meta")):
        return "conda"
    return "system"


def _search_path() -> "list[str]":
    """``sys.path`` as a program would see it, without this script's own directory."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [p for p in sys.path if p and os.path.abspath(p) != here]


def _metadata_version(path: str) -> "str | None":
    """The ``Version:`` header of a dist-info ``METADATA`` or egg-info ``PKG-INFO``."""
    for name in ("METADATA", "PKG-INFO"):
        candidate = os.path.join(path, name) if os.path.isdir(path) else path
        try:
            with open(candidate, encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                    if not line.strip():
                        break
        except OSError:
            continue
    return None


def _dists(search: "list[str]") -> "dict[str, dict[str, str | None]]":
    """First match on the search path wins, as importlib.metadata does."""
    wanted = set(DISTS)
    found: dict[str, dict[str, str | None]] = {}  # local: never evaluated, fine on 3.6
    for entry in search:
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for name in names:
            stem, dot, ext = name.rpartition(".")
            if not dot or ext not in ("dist-info", "egg-info"):
                continue
            project = _normalise(stem.split("-", 1)[0])
            if project not in wanted or project in found:
                continue
            path = os.path.join(entry, name)
            version = _metadata_version(path)
            if version is None and "-" in stem:
                version = stem.split("-", 1)[1]
            found[project] = {"version": version, "path": path}
    return found


def _torch(search: "list[str]") -> "dict[str, object] | None":
    import importlib.util  # noqa: PLC0415 - imported late on purpose: not needed before

    saved = sys.path[:]
    sys.path[:] = search
    try:
        spec = importlib.util.find_spec("torch")
    except Exception as exc:  # noqa: BLE001 - a broken finder is a fact to report
        return {"find_error": f"{type(exc).__name__}: {exc}"}
    finally:
        sys.path[:] = saved
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    origin = spec.origin if spec.origin not in (None, "namespace") else None
    location = os.path.dirname(origin) if origin else (locations[0] if locations else None)
    info: dict[str, object] = {
        "location": location,
        "origin": origin,
        "namespace": origin is None,
        "version_py": None,
        "version_py_error": None,
        "lib_files": [],
    }
    if location is None:
        return info
    try:
        with open(os.path.join(location, "version.py"), "rb") as f:
            info["version_py"] = f.read(_MAX_VERSION_PY).decode("utf-8", "replace")
    except OSError as exc:
        info["version_py_error"] = f"{type(exc).__name__}: {exc.strerror or exc}"
    lib = os.path.join(location, "lib")
    if os.path.isdir(lib):
        info["lib_files"] = sorted(os.listdir(lib))
    return info


def main() -> None:
    search = _search_path()
    config = sysconfig.get_config_var("Py_GIL_DISABLED")
    report = {
        "schema": SCHEMA,
        "executable": sys.executable,
        "version": _python_version(),
        "implementation": _IMPLEMENTATIONS.get(sys.implementation.name, sys.implementation.name),
        "bits": struct.calcsize("P") * 8,
        "free_threaded": bool(config),
        "env_kind": _env_kind(),
        "prefix": sys.prefix,
        "platform_tag": sysconfig.get_platform(),
        "site_packages": [
            p for p in search if os.path.basename(p) in ("site-packages", "dist-packages")
        ],
        "torch": _torch(search),
        "dists": _dists(search),
    }
    sys.stdout.write(MARKER + json.dumps(report, sort_keys=True) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
