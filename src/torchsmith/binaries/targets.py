"""What ``torchsmith inspect`` reads: a binary, a wheel, a directory, or an installed package."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from torchsmith.binaries.archs import RunsOn, runs_on, sort_archs, sort_key
from torchsmith.binaries.formats import (
    PTX_HEAD_BYTES,
    BinaryFormatError,
    NotABinaryError,
    Region,
    UnreadableFileError,
    describe_head,
    ptx_target,
    sniff,
)
from torchsmith.binaries.reader import BinaryReport, read_binary, read_stream, with_offload
from torchsmith.binaries.sources import StreamSource
from torchsmith.errors import InputError, UsageError
from torchsmith.probe.model import ArchSet
from torchsmith.util import cmd
from torchsmith.util.inputs import check_input, open_input, os_error
from torchsmith.util.progress import ByteProgress, offset

TargetKind = Literal["file", "directory", "wheel", "package"]

# Files of a distribution worth reading without a look inside (RECORD lists them).
BINARY_NAME = re.compile(r"\.(so(\.\d+)*|dll|pyd)$", re.IGNORECASE)
SNIFF_BYTES = 64  # enough for every magic sniff() knows (an offload bundle's is 24 bytes)
# Files in a directory, wheel or distribution never worth opening.
TEXT_SUFFIXES = frozenset(
    [
        ".py",
        ".pyi",
        ".pyc",
        ".pyx",
        ".pxd",
        ".h",
        ".hpp",
        ".hh",
        ".cuh",
        ".cu",
        ".cpp",
        ".cc",
        ".c",
        ".txt",
        ".md",
        ".rst",
        ".json",
        ".yaml",
        ".yml",
        ".toml",
        ".cfg",
        ".ini",
        ".cmake",
        ".html",
        ".css",
        ".js",
        ".csv",
        ".typed",
        ".pth",
        ".sh",
        ".bat",
        ".ps1",
        ".in",
        ".lock",
    ]
)
# The same as a pattern, for the package lookup script (RECORD lists every file).
TEXT_NAME = re.compile(
    "(" + "|".join(re.escape(suffix) for suffix in sorted(TEXT_SUFFIXES)) + ")$", re.IGNORECASE
)
PACKAGE_TIMEOUT_S = 60.0
PACKAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


# ROCm libraries in a wheel (libtorch_hip.so, libamdhip64.so, librocblas.so, libMIOpen.so, ...;
# on Windows amdhip64.dll, libbitsandbytes_rocm72.dll)
ROCM_NAME = re.compile(r"(hip|roc|miopen|rccl|amd)[^/]*\.(so|dll)", re.IGNORECASE)


@dataclass(frozen=True)
class InspectReport:
    """GPU code found in a target, per binary and in total."""

    target: str
    kind: TargetKind
    location: str  # the file, directory or wheel read
    binaries: tuple[BinaryReport, ...]
    sass: tuple[str, ...] = ()  # union over binaries, sorted by arch number
    ptx: tuple[str, ...] = ()
    sass_counts: dict[str, int] = field(default_factory=dict)  # summed over binaries
    ptx_counts: dict[str, int] = field(default_factory=dict)
    lto_counts: dict[str, int] = field(default_factory=dict)
    files_read: int = 0
    files_with_gpu_code: int = 0
    package_version: str | None = None
    gpu: str | None = None  # what was asked for: "12.0", "RTX 5090"
    compute_capability: str | None = None
    runs_on: RunsOn | None = None
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    unreadable: tuple[str, ...] = ()  # paths not read at all: "lib/x.so (permission denied)"
    damaged: tuple[str, ...] = ()  # binaries cut short or malformed: "x.so (truncated ELF ...)"


@dataclass
class Problems:
    """What a directory, wheel or package held that could not be read, or read as damaged."""

    unreadable: list[str] = field(default_factory=list)
    damaged: list[str] = field(default_factory=list)

    def add(self, shown: str, exc: InputError) -> None:
        """File a read failure of ``shown``: damaged binary, unreadable path, or neither."""
        reason = _reason(shown, exc.message)
        if isinstance(exc, UnreadableFileError):
            self.unreadable.append(f"{shown} ({reason})")
        elif isinstance(exc, BinaryFormatError) and not isinstance(exc, NotABinaryError):
            self.damaged.append(f"{shown} ({reason})")

    def notes(self) -> list[str]:
        out = []
        for items, one, many in (
            (self.unreadable, "1 path could not be read", "paths could not be read"),
            (self.damaged, "1 file is damaged", "files are damaged"),
        ):
            if items:
                head = one if len(items) == 1 else f"{len(items)} {many}"
                more = f" and {len(items) - 5} more" if len(items) > 5 else ""
                out.append(f"{head}: {', '.join(items[:5])}{more}")
        return out


def inspect_target(
    target: str,
    *,
    python: str | None = None,
    compute_capability: str | None = None,
    gpu: str | None = None,
    progress: ByteProgress | None = None,
    gfx: str | None = None,
) -> InspectReport:
    """Read the GPU code in ``target``: a binary, a .whl, a directory, or an installed package.

    A package name is located in the ``python`` interpreter (default: this one) without importing
    it. With ``compute_capability`` ("12.0", "sm_120", "120") each binary and the total get
    :class:`RunsOn`; ``gpu`` is only recorded (the name the user asked about).
    Raises InputError for a missing path, a file that is no binary, a zip that is no wheel, or a
    package that is not installed.
    """
    started = time.monotonic()
    path = Path(target).expanduser()
    version = None
    notes: list[str] = []
    problems = Problems()
    if not target.strip():
        raise UsageError(
            "TARGET is empty", tip="give a binary, wheel, directory or package; '.' for here"
        )
    if path.is_dir():
        kind: TargetKind = "directory"
        location = str(path)
        files = _directory_files(path, problems)
        binaries = _read_files(files, path, progress, notes, problems)
    elif path.is_file() or os.path.lexists(path):
        check_input(path, what="binary")  # refuses devices, FIFOs and sockets with one line
        kind, location = _file_kind(path), str(path)
        if kind == "wheel":
            binaries = _read_wheel(path, progress, notes, problems)
        else:
            binaries = (read_binary(path, progress=_within(progress, 0, _size(path), str(path))),)
            if progress is not None:
                progress(binaries[0].size_bytes, binaries[0].size_bytes, str(path))
    elif _looks_like_path(target):
        raise InputError(f"{target}: no such file or directory")
    else:
        kind = "package"
        found = locate_package(target, python=python)
        location, version = found.location, found.version
        root = Path(found.location) if Path(found.location).is_dir() else None
        binaries = _read_files(iter(found.files), root, progress, notes, problems)
    report = summarize_binaries(
        target,
        kind=kind,
        location=location,
        binaries=binaries,
        notes=[*notes, *problems.notes()],
        version=version,
    )
    report = dataclasses.replace(
        report, unreadable=tuple(problems.unreadable), damaged=tuple(problems.damaged)
    )
    if gfx is not None:
        report = with_runs_on_gfx(report, gfx, gpu=gpu)
    elif compute_capability is not None:
        report = with_runs_on(report, compute_capability, gpu=gpu)
    return dataclasses.replace(report, seconds=round(time.monotonic() - started, 3))


def summarize_binaries(
    target: str,
    *,
    kind: TargetKind,
    location: str,
    binaries: Iterable[BinaryReport],
    notes: Iterable[str] = (),
    version: str | None = None,
) -> InspectReport:
    items = tuple(sorted(binaries, key=lambda b: b.path))
    sass: Counter[str] = Counter()
    ptx: Counter[str] = Counter()
    lto: Counter[str] = Counter()
    for b in items:
        sass.update(b.sass_counts)
        ptx.update(b.ptx_counts)
        lto.update(b.lto_counts)
    return InspectReport(
        target=target,
        kind=kind,
        location=location,
        binaries=items,
        sass=sort_archs(sass),
        ptx=sort_archs(ptx),
        sass_counts={k: sass[k] for k in sorted(sass, key=sort_key)},
        ptx_counts={k: ptx[k] for k in sorted(ptx, key=sort_key)},
        lto_counts={k: lto[k] for k in sorted(lto, key=sort_key)},
        files_read=sum(1 for b in items if b.error is None),
        files_with_gpu_code=sum(1 for b in items if b.has_gpu_code),
        package_version=version,
        notes=tuple(notes),
    )


def with_runs_on(
    report: InspectReport, compute_capability: str, *, gpu: str | None = None
) -> InspectReport:
    """Add the runs-on verdict for one GPU, per binary with GPU code and in total."""
    total = runs_on(report.sass, report.ptx, compute_capability, report.lto_counts)
    binaries = tuple(
        dataclasses.replace(b, runs_on=runs_on(b.sass, b.ptx, compute_capability, b.lto_counts))
        if b.sass or b.ptx or b.lto_counts
        else b
        for b in report.binaries
    )
    return dataclasses.replace(
        report,
        binaries=binaries,
        gpu=gpu or compute_capability,
        compute_capability=total.compute_capability,
        runs_on=total,
    )


def gfx_runs_on(targets: Iterable[str], gfx: str, unlisted: int = 0) -> RunsOn:
    """Whether AMD code objects run on one gfx target: only its own target's code does.

    ``unlisted`` compressed bundles may hold ``gfx``'s code: the verdict is then "cannot tell",
    not "no code object" (still not ok: nothing shows that the code runs).
    """
    have = list(dict.fromkeys(targets))
    own = [t for t in have if t.split(":")[0] == gfx]
    if own:
        return RunsOn(True, f"native code object {own[0]}", "", gfx, "sass", own[0])
    bases = ", ".join(dict.fromkeys(t.split(":")[0] for t in have)) or "no AMD code objects"
    if unlisted:
        return RunsOn(
            False,
            f"cannot tell: {unlisted} compressed offload bundles could not be listed",
            f"they may hold code for {gfx}"
            + (f" (the listed ones have {bases})" if have else "")
            + "; zstd bundles are read with Python 3.14+ (run torchsmith there) or listed by "
            "`clang-offload-bundler --list`",
            gfx,
            "unknown",
        )
    return RunsOn(False, f"no code object for {gfx} (has {bases})", "", gfx)


def with_runs_on_gfx(report: InspectReport, gfx: str, *, gpu: str | None = None) -> InspectReport:
    """The runs-on verdict for an AMD GPU, per binary with AMD code and in total."""
    every = [t for b in report.binaries for t in b.gfx_counts]
    binaries = tuple(
        dataclasses.replace(b, runs_on=gfx_runs_on(b.gfx_counts, gfx, b.offload_unlisted))
        if b.gfx_counts or b.offload_unlisted
        else b
        for b in report.binaries
    )
    unlisted = sum(b.offload_unlisted for b in report.binaries)
    return dataclasses.replace(
        report,
        binaries=binaries,
        gpu=gpu or gfx,
        compute_capability=gfx,
        runs_on=gfx_runs_on(every, gfx, unlisted),
    )


def read_archs(paths: Iterable[Path]) -> ArchSet:
    """The union of SASS and PTX archs in these binaries (or directories); headers only.

    Never raises for a bad or missing file: what could not be read is named in ``error``.
    """
    sass: set[str] = set()
    ptx: set[str] = set()
    files: list[str] = []
    errors: list[str] = []
    for given in paths:
        path = Path(given)
        candidates = _directory_files(path) if path.is_dir() else iter([path])
        for file in candidates:
            try:
                report = read_binary(file)
            except InputError as exc:
                if not path.is_dir():
                    errors.append(exc.message)
                continue
            files.append(str(file))
            sass.update(report.sass)
            ptx.update(report.ptx)
    return ArchSet(
        sass=sort_archs(sass),
        ptx=sort_archs(ptx),
        files=tuple(files),
        error="; ".join(errors) or None,
    )


# -- files and directories -------------------------------------------------------------------


def _looks_like_path(target: str) -> bool:
    return (
        os.sep in target
        or "/" in target
        or target.startswith(".")
        or target.endswith((".whl", ".so", ".dll", ".pyd", ".zip", ".exe", ".o"))
        or not PACKAGE_NAME.match(target)
    )


def _file_kind(path: Path) -> TargetKind:
    with open_input(path, what="binary") as fh:
        try:
            head = fh.read(PTX_HEAD_BYTES)
        except OSError as exc:
            raise os_error(path, exc, "binary") from None
    if head.startswith(b"PK\x03\x04") or path.suffix.lower() == ".whl":
        return "wheel"
    if sniff(head[:64]) is None and ptx_target(head) is None:
        raise BinaryFormatError(
            f"{path}: not an ELF or PE binary ({describe_head(head)})",
            tip="give a .so, .dll, .pyd, executable, wheel, directory or installed package name",
        )
    return "file"


def _directory_files(root: Path, problems: Problems | None = None) -> Iterator[Path]:
    """Every regular file under ``root`` that may be a binary (by name and first bytes), once.

    Folders and files that cannot be opened go to ``problems`` (when given) as unreadable.
    """
    seen: set[str] = set()

    def failed(exc: OSError) -> None:
        if problems is not None:
            where = Path(exc.filename) if exc.filename else root
            shown = str(where.relative_to(root)) if where.is_relative_to(root) else str(where)
            problems.add(shown, UnreadableFileError(f"{shown}: {_os_reason(exc)}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=failed):
        dirnames.sort()
        for name in sorted(filenames):
            if Path(name).suffix.lower() in TEXT_SUFFIXES:
                continue
            path = Path(dirpath, name)
            try:
                if not path.is_file():
                    continue
                real = os.path.realpath(path)
                if real in seen:
                    continue
                seen.add(real)
                with path.open("rb") as fh:
                    if not _may_be_binary(name, fh.read(SNIFF_BYTES)):
                        continue
            except OSError as exc:
                exc.filename = str(path)
                failed(exc)
                continue
            yield path


def _may_be_binary(name: str, head: bytes) -> bool:
    """Whether a file (or wheel member) of this name starting with ``head`` is worth reading:
    by its first bytes, so an executable, a static library or a cubin is not missed."""
    return sniff(head) is not None or name.lower().endswith(".ptx")


def _file_may_be_binary(path: Path) -> bool:
    """:func:`_may_be_binary` for a file a distribution lists; one that cannot be opened is
    kept, so that reading it names the problem."""
    if BINARY_NAME.search(path.name):
        return True
    try:
        with path.open("rb") as fh:
            return _may_be_binary(path.name, fh.read(SNIFF_BYTES))
    except OSError:
        return True


def _read_files(
    files: Iterator[Path],
    root: Path | None,
    progress: ByteProgress | None,
    notes: list[str],
    problems: Problems,
) -> tuple[BinaryReport, ...]:
    paths = list(files)
    sizes = [_size(p) for p in paths]
    total = sum(sizes)
    done = 0
    out: list[BinaryReport] = []
    for path, size in zip(paths, sizes, strict=True):
        shown = (
            str(path.relative_to(root))
            if root is not None and path.is_relative_to(root)
            else str(path)
        )
        if progress is not None:
            progress(done, total, shown)
        try:
            out.append(
                read_binary(path, display=shown, progress=_within(progress, done, total, shown))
            )
        except InputError as exc:
            problems.add(shown, exc)
            if not isinstance(exc, UnreadableFileError):
                out.append(_unreadable(shown, size, exc.message))
        done += size
    if progress is not None:
        progress(total, total, "")
    if not paths and not problems.unreadable:
        notes.append("no binaries (ELF or PE files) found")
    return tuple(out)


def _within(
    progress: ByteProgress | None, base: int, total: int, shown: str
) -> Callable[[int], None] | None:
    """Progress inside one file (a 1 GB .dll is read for seconds): its offsets, moved to
    ``base`` of ``total``."""
    return None if progress is None else offset(progress, base, total, shown)


def _unreadable(shown: str, size: int, message: str) -> BinaryReport:
    reason = _reason(shown, message)
    return BinaryReport(shown, "unknown", size, False, notes=(reason,), error=reason)


def _reason(shown: str, message: str) -> str:
    return message.split(": ", 1)[1] if message.startswith(shown + ": ") else message


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "permission denied"
    return f"cannot be read: {exc.strerror or type(exc).__name__}"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


# -- wheels ----------------------------------------------------------------------------------


def _read_wheel(
    path: Path, progress: ByteProgress | None, notes: list[str], problems: Problems
) -> tuple[BinaryReport, ...]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(
            f"{path}: not a wheel (not a readable zip archive: {exc})",
            tip="download the wheel again; a .whl is a zip file",
        ) from None
    with archive:
        names = archive.namelist()
        if not any(re.match(r"^[^/]+\.dist-info/WHEEL$", n) for n in names):
            raise InputError(
                f"{path}: a zip archive but not a wheel (no *.dist-info/WHEEL inside)",
                tip="give a .whl file, a directory, a binary or an installed package name",
            )
        members = _wheel_binaries(archive)
        total = sum(i.file_size for i in members)
        done = 0
        out: list[BinaryReport] = []
        for info in members:
            shown = info.filename

            def step(pos: int, base: int = done, name: str = shown) -> None:
                if progress is not None:
                    progress(base + pos, total, name)

            try:
                with archive.open(info) as stream:
                    report = read_stream(shown, stream, info.file_size, progress=step)
                if not report.fatbin_found and ROCM_NAME.search(shown):
                    # ROCm libraries hold offload bundles: a second pass over the member
                    with archive.open(info) as stream:
                        source = StreamSource(stream, info.file_size)
                        whole = Region("(scan)", 0, info.file_size, trusted=False)
                        report = with_offload(report, source, (whole,))
                out.append(report)
            except InputError as exc:
                problems.add(shown, exc)
                out.append(_unreadable(shown, info.file_size, exc.message))
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                problems.damaged.append(f"{shown} (cannot be read from the wheel: {exc})")
                out.append(
                    _unreadable(shown, info.file_size, f"cannot be read from the wheel: {exc}")
                )
            done += info.file_size
        if progress is not None:
            progress(total, total, "")
    if not members:
        notes.append("the wheel holds no binaries (ELF, PE, cubin, PTX or fat binary files)")
    return tuple(out)


def _wheel_binaries(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The members that may be binaries, by their first bytes as in a directory (an executable
    or a static library has no .so name); one that cannot be read is kept, to be named."""
    out = []
    for info in archive.infolist():
        if info.is_dir() or Path(info.filename).suffix.lower() in TEXT_SUFFIXES:
            continue
        if BINARY_NAME.search(info.filename):
            out.append(info)
            continue
        try:
            with archive.open(info) as stream:
                head = stream.read(SNIFF_BYTES)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError):
            head = None
        if head is None or _may_be_binary(info.filename, head):
            out.append(info)
    return out


# -- installed packages ----------------------------------------------------------------------

_LOCATE_SCRIPT = r"""
import importlib.metadata as md, importlib.util as iu, json, os, re, sys
if sys.path and sys.path[0] in ("", os.getcwd()):
    sys.path.pop(0)  # the working directory must not shadow the installed package
name = sys.argv[1]
text = re.compile(sys.argv[2], re.IGNORECASE)
out = {"python": sys.executable, "files": [], "location": None, "version": None}
try:
    dist = md.distribution(name)
except Exception:
    dist = None
if dist is not None:
    out["version"] = dist.version
    for f in dist.files or []:
        if not text.search(str(f)):
            p = os.path.abspath(str(f.locate()))
            if os.path.isfile(p):
                out["files"].append(p)
    out["location"] = os.path.abspath(str(dist.locate_file("")))
top, _, rest = name.replace("-", "_").partition(".")
spec = None
try:
    spec = iu.find_spec(top)
except Exception:
    pass
if spec is not None:
    if spec.submodule_search_locations:
        where = os.path.abspath(list(spec.submodule_search_locations)[0])
    elif spec.origin and os.path.isfile(spec.origin):
        where = os.path.abspath(spec.origin)
    else:
        where = None
    for part in [p for p in rest.split(".") if p] if where else []:
        if os.path.isdir(os.path.join(where, part)):
            where = os.path.join(where, part)
        else:
            where = None
            break
    if where:
        out["module"] = where
print("TORCHSMITH_JSON:" + json.dumps(out))
"""


@dataclass(frozen=True)
class PackageLocation:
    name: str
    python: str
    location: str  # package directory (or module file, or site-packages for a distribution)
    version: str | None
    files: tuple[Path, ...]


def locate_package(name: str, *, python: str | None = None) -> PackageLocation:
    """Find an installed package's binaries in ``python`` without importing the package.

    A distribution name (``torch``, ``nvidia-cudnn-cu12``) gives the binaries its RECORD lists;
    otherwise (or when RECORD lists none, as for editable installs) the module's directory is
    walked. Raises InputError when neither exists.
    """
    interpreter = python or sys.executable
    result = cmd.run(
        [interpreter, "-c", _LOCATE_SCRIPT, name, TEXT_NAME.pattern], timeout=PACKAGE_TIMEOUT_S
    )
    line = next(
        (ln for ln in result.stdout.splitlines() if ln.startswith("TORCHSMITH_JSON:")), None
    )
    if not result.ok or line is None:
        last = (result.stderr or result.stdout).strip().splitlines()
        raise InputError(
            f"{interpreter}: could not look up package {name!r}"
            + (f": {last[-1]}" if last else ""),
            tip="check that --python points at a working Python interpreter",
        )
    data = json.loads(line.split(":", 1)[1])
    module = data.get("module")
    files = tuple(p for p in map(Path, data["files"]) if _file_may_be_binary(p))
    if module and not files:
        files = (Path(module),) if Path(module).is_file() else tuple(_directory_files(Path(module)))
    if not files and not module and data["version"] is None:
        raise InputError(
            f"package {name!r} is not installed in {data['python']}",
            tip="check the name, or point --python at the interpreter that has it",
        )
    location = module or data["location"] or data["python"]
    return PackageLocation(name, data["python"], location, data["version"], files)
