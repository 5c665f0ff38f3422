"""The static check: every shared library torch's binaries need, resolved as the loader would.

Nothing is loaded or imported. ELF (Linux): DT_NEEDED of each object, searched in ld.so's order

1. DT_RPATH of the object and of the objects that loaded it (only when the object has no
   DT_RUNPATH), ``$ORIGIN`` expanded;
2. ``LD_LIBRARY_PATH``;
3. DT_RUNPATH of the object (direct dependencies only);
4. ``/etc/ld.so.cache`` (``ldconfig -p``);
5. the default directories (``/lib``, ``/usr/lib``, their 64-bit and multiarch forms);

then torch's own fallback (``torch/__init__.py`` preloads CUDA libraries from the ``nvidia/*/lib``
directories of ``sys.path`` when ``libtorch_global_deps.so`` fails). A candidate of the wrong ELF
class or machine is skipped, as ld.so does; one that is not an ELF file at all (empty, truncated,
text) stops the search with an error, as ld.so's "file too short" / "invalid ELF header" does, and
is reported as damaged, not as missing. A name already loaded under that soname is reused.

PE (Windows): the import table (delay-loaded DLLs are listed apart: they load on first call), in
the order a DLL torch loads sees: its own directory, ``torch\\lib``, the ``os.add_dll_directory``
directories torch adds (``nvidia/*/bin`` of site-packages, ``CUDA_PATH\\bin``), System32, the
interpreter's directory, then ``PATH`` (torch's fallback ``LoadLibraryW``). API-set names
(``api-ms-*``, ``ext-ms-*``) are virtual and always resolve.
"""

from __future__ import annotations

import os
import re
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from torchsmith.binaries.formats import (
    BinaryFormatError,
    ElfDynamic,
    read_elf_dynamic,
    read_pe_imports,
)
from torchsmith.binaries.sources import MappedFile
from torchsmith.knowledge.model import index_url
from torchsmith.probe.model import Finding
from torchsmith.util import cmd

LoaderOs = Literal["linux", "windows"]
ELF_DEFAULT_DIRS = (
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
)
_MAX_OBJECTS = 2000
_ELF_HEAD = 20  # e_ident, e_type, e_machine: what _candidate needs to decide
# Local version tags that name a download.pytorch.org index (+cpu, +cu128, +rocm6.4, +xpu).
_INDEX_TAG = re.compile(r"^(cpu|cu\d+|rocm\d+(\.\d+)*|xpu)$")


@dataclass(frozen=True)
class LoaderEnv:
    """What the loader searches besides the binaries' own paths (injected in tests)."""

    os: LoaderOs
    ld_library_path: tuple[str, ...] = ()
    ld_cache: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # soname -> paths
    default_dirs: tuple[str, ...] = ELF_DEFAULT_DIRS
    fallback_dirs: tuple[str, ...] = ()  # torch's preload (nvidia/*/lib) / add_dll_directory
    system_dirs: tuple[str, ...] = ()  # Windows: System32
    app_dirs: tuple[str, ...] = ()  # Windows: the interpreter's directory
    path_dirs: tuple[str, ...] = ()  # Windows: PATH


@dataclass(frozen=True)
class Resolved:
    name: str
    path: str | None  # None: not found
    needed_by: str  # the object that needs it (path); "" for a root (torch._C, torch/lib/*)
    via: str  # "rpath", "runpath", "LD_LIBRARY_PATH", "ld.so.cache", "default", ...
    damaged: str | None = None  # present at path but the loader fails on it: "is empty", ...


@dataclass(frozen=True)
class StaticResult:
    """The outcome: every object read, every missing library, and what could not be read."""

    torch_dir: str
    objects: tuple[str, ...]
    missing: tuple[Resolved, ...]  # in the import closure of torch._C: import fails (or damaged)
    missing_lazy: tuple[Resolved, ...] = ()  # needed only by libraries torch loads later
    delayed: tuple[str, ...] = ()  # Windows delay-loaded DLLs (not checked)
    unreadable: tuple[str, ...] = ()  # also in missing/missing_lazy, as damaged
    duration_s: float = 0.0


# ---------------------------------------------------------------- environment


def parse_ldconfig(text: str) -> dict[str, tuple[str, ...]]:
    """``ldconfig -p`` output → soname → paths (in cache order)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = re.match(r"^\s+(\S+)\s+\(([^)]*)\)\s+=>\s+(\S.*)$", line)
        if m:
            out.setdefault(m.group(1), []).append(m.group(3).strip())
    return {k: tuple(v) for k, v in out.items()}


def loader_env(
    os_name: LoaderOs,
    site_packages: Sequence[str],
    python: str,
    environ: Mapping[str, str] | None = None,
) -> LoaderEnv:
    """The real search environment of this machine (runs ``ldconfig -p`` on Linux)."""
    env = os.environ if environ is None else environ
    if os_name == "windows":
        nvidia_bins = [
            str(p) for sp in site_packages for p in sorted(Path(sp).glob("nvidia/*/bin"))
        ]
        cuda = env.get("CUDA_PATH")
        root = env.get("SystemRoot", r"C:\Windows")
        return LoaderEnv(
            "windows",
            fallback_dirs=(*nvidia_bins, *([str(Path(cuda) / "bin")] if cuda else [])),
            system_dirs=(str(Path(root) / "System32"),),
            app_dirs=(str(Path(python).parent),),
            path_dirs=tuple(p for p in env.get("PATH", "").split(";") if p),
        )
    cache: dict[str, tuple[str, ...]] = {}
    for ldconfig in ("ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"):
        try:
            result = cmd.run([ldconfig, "-p"], timeout=10)
        except cmd.CommandNotFoundError:
            continue
        except cmd.CommandTimeoutError:
            break
        if result.ok:
            cache = parse_ldconfig(result.stdout)
            break
    preload = [
        str(p)
        for sp in site_packages
        for p in sorted([*Path(sp).glob("nvidia/*/lib"), *Path(sp).glob("nvidia/cu*/lib")])
    ]
    return LoaderEnv(
        "linux",
        ld_library_path=tuple(p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p),
        ld_cache=cache,
        fallback_dirs=tuple(dict.fromkeys(preload)),
    )


# ---------------------------------------------------------------- roots


def torch_roots(torch_dir: Path, os_name: LoaderOs) -> tuple[list[Path], list[Path]]:
    """(the extension modules ``import torch`` loads, the other libraries in ``torch/lib``)."""
    if os_name == "windows":
        primary = sorted(torch_dir.glob("_C*.pyd"))
        libs = sorted(torch_dir.glob("lib/*.dll"))
    else:
        primary = sorted(torch_dir.glob("_C*.so"))
        libs = sorted(p for p in torch_dir.glob("lib/*.so*") if p.is_file())
    return primary, libs


# ---------------------------------------------------------------- resolving


def check_torch(torch_dir: Path, env: LoaderEnv) -> StaticResult:
    """Resolve the import closure of ``torch._C``, then the rest of ``torch/lib``."""
    started = time.monotonic()
    primary, libs = torch_roots(torch_dir, env.os)
    if not primary:
        suffix = ".pyd" if env.os == "windows" else ".so"
        raise BinaryFormatError(
            f"{torch_dir}: no torch/_C*{suffix}: the torch install is incomplete",
            tip="reinstall torch (pip install --force-reinstall torch)",
        )
    walker = _Walker(torch_dir, env)
    missing = walker.walk(primary)
    seen_before = set(walker.loaded)
    missing_lazy = list(walker.walk([p for p in libs if str(p) not in seen_before]))
    names = {m.name.lower() for m in missing}
    return StaticResult(
        torch_dir=str(torch_dir),
        objects=tuple(walker.loaded),
        missing=tuple(missing),
        missing_lazy=tuple(m for m in missing_lazy if m.name.lower() not in names),
        delayed=tuple(sorted(walker.delayed)),
        unreadable=tuple(walker.unreadable),
        duration_s=time.monotonic() - started,
    )


class _Walker:
    def __init__(self, torch_dir: Path, env: LoaderEnv) -> None:
        self.torch_dir = torch_dir
        self.env = env
        self.loaded: dict[str, ElfDynamic | None] = {}  # path -> its dynamic info
        self.by_name: dict[str, str] = {}  # soname / basename (lowercase on Windows) -> path
        self.delayed: set[str] = set()
        self.unreadable: list[str] = []
        self.unreadable_why: dict[str, str] = {}  # path -> "is empty", "is not an ELF file", ...
        self.machine: tuple[int, int] | None = None

    def _key(self, name: str) -> str:
        return name.lower() if self.env.os == "windows" else name

    def walk(self, roots: Iterable[Path]) -> list[Resolved]:
        missing: dict[str, Resolved] = {}
        queue: deque[tuple[str, tuple[str, ...], Resolved | None]] = deque(
            (str(r), (), None) for r in roots
        )
        while queue and len(self.loaded) < _MAX_OBJECTS:
            path, inherited, reached = queue.popleft()
            if path in self.loaded:
                continue
            needed, own_rpath = self._read(path)
            if path not in self.loaded:  # not readable as a binary: the loader fails on it
                name = reached.name if reached else Path(path).name
                missing.setdefault(
                    self._key(name),
                    Resolved(
                        name,
                        path,
                        reached.needed_by if reached else "",
                        reached.via if reached else "",
                        self.unreadable_why.get(path, "cannot be read"),
                    ),
                )
                continue
            for name in needed:
                if self._key(name) in self.by_name:
                    continue
                found = self._find(name, path, (*own_rpath, *inherited))
                if found.path is None or found.damaged:
                    missing.setdefault(self._key(name), found)
                    continue
                self.by_name[self._key(name)] = found.path
                if found.via not in ("System32", "api-set", "python dir"):  # loaded already
                    queue.append((found.path, (*own_rpath, *inherited), found))
        # A name reached later under its soname (another route) was loaded after all.
        return [m for k, m in missing.items() if k not in self.by_name]

    def _read(self, path: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(needed names, rpath entries passed to what it loads); records the object."""
        try:
            with MappedFile(path) as src:
                if self.env.os == "windows":
                    imports = read_pe_imports(src, path)
                    self.delayed.update(imports.delayed)
                    self.loaded[path] = None
                    self.by_name.setdefault(self._key(Path(path).name), path)
                    return imports.dlls, ()
                dyn = read_elf_dynamic(src, path)
        except (OSError, BinaryFormatError) as exc:
            self.unreadable.append(path)
            elf = self.env.os == "linux"
            self.unreadable_why[path] = (elf and _damage(Path(path))) or _reason(exc, path)
            return (), ()
        self.loaded[path] = dyn
        self.machine = self.machine or (dyn.elf_class, dyn.machine)
        for name in (Path(path).name, dyn.soname):
            if name:
                self.by_name.setdefault(name, path)
        origin = str(Path(path).parent)
        rpath = () if dyn.runpath else tuple(_expand(p, origin) for p in dyn.rpath)
        return dyn.needed, rpath

    def _find(self, name: str, needed_by: str, rpath: tuple[str, ...]) -> Resolved:
        if self.env.os == "windows":
            return self._find_dll(name, needed_by)
        if "/" in name:
            return Resolved(name, name if Path(name).is_file() else None, needed_by, "path")
        dyn = self.loaded.get(needed_by)
        origin = str(Path(needed_by).parent)
        runpath = tuple(_expand(p, origin) for p in dyn.runpath) if dyn else ()
        tiers: list[tuple[str, Sequence[str]]] = [
            ("rpath", rpath if not runpath else ()),
            ("LD_LIBRARY_PATH", self.env.ld_library_path),
            ("runpath", runpath),
        ]
        candidates = [
            *((via, os.path.normpath(Path(d) / name)) for via, dirs in tiers for d in dirs),
            *(("ld.so.cache", c) for c in self.env.ld_cache.get(name, ())),
            *(
                (via, os.path.normpath(Path(d) / name))
                for via, dirs in (
                    ("default", self.env.default_dirs),
                    ("torch preload", self.env.fallback_dirs),
                )
                for d in dirs
            ),
        ]
        for via, candidate in candidates:
            usable, damaged = self._candidate(Path(candidate))
            if usable or damaged:
                return Resolved(name, candidate, needed_by, via, damaged)
        return Resolved(name, None, needed_by, "")

    def _find_dll(self, name: str, needed_by: str) -> Resolved:
        low = name.lower()
        if low.startswith(("api-ms-", "ext-ms-")):
            return Resolved(name, f"(API set) {name}", needed_by, "api-set")
        tiers = (
            ("dll dir", (str(Path(needed_by).parent),)),
            ("torch\\lib", (str(self.torch_dir / "lib"),)),
            ("add_dll_directory", self.env.fallback_dirs),
            ("System32", self.env.system_dirs),
            ("python dir", self.env.app_dirs),
            ("PATH", self.env.path_dirs),
        )
        for via, dirs in tiers:
            for d in dirs:
                hit = _casefold_lookup(Path(d), name)
                if hit is not None:
                    return Resolved(name, str(hit), needed_by, via)
        return Resolved(name, None, needed_by, "")

    def _candidate(self, path: Path) -> tuple[bool, str | None]:
        """(usable, why it is damaged): an ELF file of the same class and machine is usable;
        one of another class or machine is skipped, as ld.so does; a file that is there but not
        an ELF file (empty, text, truncated) stops ld.so with an error, so it is damaged."""
        try:
            with path.open("rb") as f:
                head = f.read(_ELF_HEAD)
        except OSError:  # absent, a dangling link or a link loop: ld.so looks further
            return False, None
        damaged = _damage_of_head(head)
        if damaged:
            return False, damaged
        if self.machine is None:
            return True, None
        machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
        return (head[4], machine) == self.machine, None


def _damage_of_head(head: bytes) -> str | None:
    """Why the loader refuses a file that starts with ``head``, or None when it may be a library."""
    if not head:
        return "is empty"
    if not head.startswith(b"\x7fELF"):
        return "is not an ELF file"
    if len(head) < _ELF_HEAD:
        return "is truncated (too short for an ELF header)"
    return None


def _damage(path: Path) -> str | None:
    try:
        with path.open("rb") as f:
            return _damage_of_head(f.read(_ELF_HEAD))
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"


def _reason(exc: OSError | BinaryFormatError, path: str) -> str:
    said = exc.message if isinstance(exc, BinaryFormatError) else str(exc.strerror or exc)
    return f"is not a readable library ({said.removeprefix(path + ': ')})"


def _expand(entry: str, origin: str) -> str:
    return entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)


_DIR_CACHE: dict[str, dict[str, str]] = {}


def _casefold_lookup(directory: Path, name: str) -> Path | None:
    key = str(directory)
    if key not in _DIR_CACHE:
        try:
            _DIR_CACHE[key] = {p.name.lower(): p.name for p in directory.iterdir() if p.is_file()}
        except OSError:
            _DIR_CACHE[key] = {}
    real = _DIR_CACHE[key].get(name.lower())
    return directory / real if real else None


# ---------------------------------------------------------------- findings

# Library name (prefix) -> the pip package that ships it ("{cu}": "-cu12" for CUDA 12, nothing
# for CUDA 13, where NVIDIA dropped the suffix for the toolkit's own libraries; "{major}": the CUDA
# major, kept in the names of cuDNN, NCCL, cuSPARSELt and NVSHMEM), or "driver".
_PROVIDERS: tuple[tuple[str, str], ...] = (
    ("libcuda.so", "driver"),
    ("nvcuda.dll", "driver"),
    ("libnvidia-ml", "driver"),
    ("libcudnn", "nvidia-cudnn-cu{major}"),
    ("cudnn", "nvidia-cudnn-cu{major}"),
    ("libnccl", "nvidia-nccl-cu{major}"),
    ("libcusparselt", "nvidia-cusparselt-cu{major}"),
    ("libnvshmem", "nvidia-nvshmem-cu{major}"),
    ("libcublas", "nvidia-cublas{cu}"),
    ("cublas", "nvidia-cublas{cu}"),
    ("libcudart", "nvidia-cuda-runtime{cu}"),
    ("cudart", "nvidia-cuda-runtime{cu}"),
    ("libcusparse", "nvidia-cusparse{cu}"),
    ("cusparse", "nvidia-cusparse{cu}"),
    ("libcufft", "nvidia-cufft{cu}"),
    ("cufft", "nvidia-cufft{cu}"),
    ("libcurand", "nvidia-curand{cu}"),
    ("curand", "nvidia-curand{cu}"),
    ("libcusolver", "nvidia-cusolver{cu}"),
    ("cusolver", "nvidia-cusolver{cu}"),
    ("libnvjitlink", "nvidia-nvjitlink{cu}"),
    ("nvjitlink", "nvidia-nvjitlink{cu}"),
    ("libnvrtc", "nvidia-cuda-nvrtc{cu}"),
    ("nvrtc", "nvidia-cuda-nvrtc{cu}"),
    ("libcupti", "nvidia-cuda-cupti{cu}"),
    ("cupti", "nvidia-cuda-cupti{cu}"),
    ("libnvtoolsext", "nvidia-nvtx{cu}"),
    ("libcufile", "nvidia-cufile{cu}"),
)
_TORCH_OWN = re.compile(r"^(lib)?(torch|c10|shm|caffe2|gomp|_C)", re.IGNORECASE)


def provider(name: str, cuda_major: str | None) -> str | None:
    """The pip package that ships ``name`` (``nvidia-cudnn-cu12``), "driver", or None."""
    low = name.lower()
    for prefix, what in _PROVIDERS:
        if low.startswith(prefix):
            major = cuda_major or "12"
            return what.format(major=major, cu="" if int(major) >= 13 else f"-cu{major}")
    return None


def reinstall_torch(torch_version: str) -> str:
    """The pip command that puts this exact torch back.

    A local version (+cpu, +cu128, +rocm6.4, +xpu) exists only on its download.pytorch.org
    index, never on PyPI, so the command names that index.
    """
    tag = torch_version.partition("+")[2]
    index = f" --index-url {index_url(tag)}" if _INDEX_TAG.match(tag) else ""
    return f"pip install --force-reinstall torch=={torch_version}{index}"


def fix_for(name: str, torch_version: str, cuda: str | None, *, damaged: bool = False) -> str:
    major = cuda.split(".")[0] if cuda else None
    what = provider(name, major)
    reinstall = reinstall_torch(torch_version)
    low = name.lower()
    if low.startswith(("vcruntime140", "msvcp140", "vcomp140", "concrt140")):
        return (
            f"{name} is part of the Microsoft Visual C++ Redistributable: install the latest "
            "2015-2022 x64 one (https://aka.ms/vs/17/release/vc_redist.x64.exe)"
        )
    if re.fullmatch(r"python3\d*\.dll", low):
        return (
            f"{name} is the interpreter's own DLL: this torch was built for another Python, or the "
            f"environment is broken; {reinstall} with this interpreter"
        )
    if what == "driver":
        return (
            f"{name} comes with the NVIDIA driver, not with pip: install or repair the driver "
            "(torchsmith doctor shows which version this torch needs)"
        )
    if what is not None and damaged:
        return (
            f"{name} ships in the pip package {what}: `pip install --force-reinstall --no-deps "
            f"{what}` in this environment (or `{reinstall}` to restore all of torch's "
            "dependencies)"
        )
    if what is not None:
        return (
            f"{name} ships in the pip package {what}: `pip install {what}` in this environment "
            f"(or `{reinstall}` to restore all of torch's dependencies); do not point "
            "LD_LIBRARY_PATH/PATH at another CUDA install"
        )
    if _TORCH_OWN.match(name):
        return f"{name} is part of the torch wheel itself, so the install is damaged: `{reinstall}`"
    if damaged:
        return (
            f"reinstall the package that owns the file (`dpkg -S {name}` or `rpm -qf` on its "
            f"path names it), or `{reinstall}`"
        )
    return (
        f"install the system package that provides {name} (e.g. `apt-file search {name}`), or "
        f"`{reinstall}`"
    )


def findings(result: StaticResult, torch_version: str, cuda: str | None) -> list[Finding]:
    out: list[Finding] = []
    for missing, lazy in ((result.missing, False), (result.missing_lazy, True)):
        for m in missing:
            out.append(
                Finding(
                    category="missing-runtime-library",
                    severity="warning" if lazy else "error",
                    message=_message(m, lazy=lazy),
                    fix=fix_for(m.name, torch_version, cuda, damaged=bool(m.damaged)),
                    subject=m.name,
                )
            )
    return out


def _message(m: Resolved, *, lazy: bool) -> str:
    if not m.needed_by:
        when = "torch loads it on demand: that feature fails" if lazy else "`import torch` fails"
    elif lazy:
        needer = Path(m.needed_by).name
        when = f"needed by {needer}, which torch loads on demand (fails when that feature is used)"
    else:
        when = f"needed by {Path(m.needed_by).name}: `import torch` fails"
    if m.damaged:
        return f"{m.name} is present but damaged: it {m.damaged} ({m.path}; {when})"
    return f"{m.name} cannot be found by the loader ({when})"
