"""Safe cleaning: remove build outputs only, never a tracked file, never anything outside the tree.

:func:`plan_clean` only reads: inside a git work tree it asks git what is ignored (``git ls-files
--others --ignored --exclude-standard --directory``) and what is untracked; outside git it lists
only the build directories the project kind defines, and only where they look like build output
(a CMakeCache.txt, build.ninja, setuptools' temp.*/lib.* folders, wheels, PKG-INFO).
Of what git ignores, only what is provably a build output goes (a build directory, egg-info,
caches, compiled objects and extension modules, CMake's and Ninja's files): a .gitignore lists
virtual environments, data, checkpoints and secrets too, and those are kept. Untracked files
that git does not ignore are kept, in a build directory too: they are as likely a new source
file as an output. Anything holding a nested git repository is kept. A tree inside a folder git
ignores whole (``build/temp.x``) is emptied exactly when a clean of the whole work tree would
take that folder. Every entry is checked to lie inside the tree with its parent folders
resolved, so a symlink out of the tree is removed as a link and never followed.

:func:`execute_clean` is the executor: it deletes only when told the user confirmed, re-checks
containment, never follows a symlink, makes read-only files and folders writable and retries,
and on Windows names the process holding a file open where psutil can tell. Given the ledger,
it records the clean as an attempt of kind ``clean`` (what was listed, what went, what failed).
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from torchsmith import platforms
from torchsmith.build.model import ProjectKind
from torchsmith.errors import InputError, UsageError
from torchsmith.util import cmd
from torchsmith.util.serialize import to_jsonable

if TYPE_CHECKING:
    from torchsmith.ledger import Ledger

BUILD_DIR_NAMES = ("build", "dist", "_skbuild", "cmake-build-debug", "cmake-build-release")
PYTHON_KINDS: tuple[str, ...] = ("pytorch", "torchvision", "torchaudio", "cpp_extension")


@dataclass(frozen=True)
class CleanEntry:
    path: str  # relative to the tree, "/"-separated
    kind: str  # "file" | "dir" | "symlink"
    bytes: int
    reason: str


@dataclass(frozen=True)
class Kept:
    path: str
    reason: str


@dataclass(frozen=True)
class CleanPlan:
    tree: str  # absolute, resolved
    in_git: bool
    entries: tuple[CleanEntry, ...]
    kept: tuple[Kept, ...] = ()

    @property
    def total_bytes(self) -> int:
        return sum(e.bytes for e in self.entries)


@dataclass(frozen=True)
class CleanFailure:
    path: str
    message: str


@dataclass(frozen=True)
class CleanResult:
    tree: str
    removed: tuple[str, ...]
    bytes_freed: int
    failed: tuple[CleanFailure, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> str:
        """One line: what went, and the first thing that could not go."""
        line = f"removed {len(self.removed)} entries ({self.bytes_freed / 2**20:.1f} MiB)"
        if self.failed:
            first = self.failed[0]
            line += f"; {len(self.failed)} could not be removed: {first.path}: {first.message}"
        return line


# -- planning -----------------------------------------------------------------------------------
def plan_clean(tree: Path, kind: ProjectKind | None = None) -> CleanPlan:
    """What a clean of ``tree`` would remove, with sizes; reads only."""
    root = _tree_root(tree)
    _refuse_broad(root)
    top, why = _git_toplevel(root)
    if top is None:
        _refuse_unreadable_git(root, why)
    else:
        inside = _plan_inside_ignored(root, top)
        entries, kept = inside if inside is not None else _plan_git(root)
        return CleanPlan(str(root), True, tuple(entries), tuple(kept))
    entries, kept = _plan_known_dirs(root, kind)
    return CleanPlan(str(root), False, tuple(entries), tuple(kept))


def _tree_root(tree: Path) -> Path:
    if not tree.exists():
        raise InputError(f"{tree}: no such directory")
    if not tree.is_dir():
        raise InputError(f"{tree}: not a directory", tip="pass the project's source tree")
    return tree.resolve()


def _refuse_broad(root: Path) -> None:
    """The filesystem root and the home folder are never a project's tree: refuse them whole."""
    home = Path.home().resolve()
    if root in (root.parent, home):
        what = "the filesystem root" if root.parent == root else "your home folder"
        raise UsageError(
            f"{root} is {what}, not a source tree: clean refuses it",
            tip="pass the project's own folder",
        )


def _refuse_unreadable_git(root: Path, why: str) -> None:
    """A tree inside a git work tree that git cannot read (not installed, or refusing: 'dubious
    ownership') must not be cleaned as if it had no git: what git tracks is not known then.
    ``why`` is what git said (or that it is not installed)."""
    marker = next((p / ".git" for p in (root, *root.parents) if (p / ".git").exists()), None)
    if marker is None:
        return
    raise InputError(
        f"{root} is in a git work tree ({marker}), but git cannot read it: {why}",
        tip="fix git's access to the repository (or install git), then clean again: "
        "without git, clean cannot tell tracked files from build outputs",
    )


def _git_toplevel(root: Path) -> tuple[Path | None, str]:
    """The top of the git work tree holding ``root``, or None with the reason git gave."""
    try:
        result = cmd.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], timeout=30)
    except cmd.CommandNotFoundError:
        return None, "git is not installed"
    if not result.ok or not result.stdout.strip():
        return None, (result.stderr.strip().splitlines() or ["git failed"])[0]
    return Path(result.stdout.strip()).resolve(), ""


def _git_paths(root: Path, *extra: str) -> list[str]:
    # git prints names as the bytes they are: a name that is not UTF-8 must come back as the
    # same file (a replacement character would name another one)
    result = cmd.run(
        ["git", "--literal-pathspecs", "-C", str(root), "ls-files", "-z", *extra],
        timeout=120,
        check=True,
        encoding="utf-8",
        errors="surrogateescape",
    )
    return [p for p in result.stdout.split("\0") if p]


def _plan_inside_ignored(root: Path, top: Path) -> tuple[list[CleanEntry], list[Kept]] | None:
    """The plan for a tree inside a folder git ignores whole (``build/temp.x``, or ``build``
    itself), or None when no such folder holds it. git cannot list from there (``ls-files`` in
    it fails: "directory entry not superset of prefix"), and need not: all below is ignored.
    The highest such folder (ignored, holding no tracked file) is judged as a clean of the
    whole work tree judges it: if it is a build output, so is everything in the tree, which
    goes (never the tree itself, a tracked file or a nested repository); if not, all stays."""
    if root == top:
        return None
    parts = root.relative_to(top).as_posix().split("/")
    folders = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    ignored = _git_ignored(top, folders)
    if folders[-1] not in ignored:
        return None
    tracked = set(_git_paths(top, "--cached"))
    holder = next((f for f in folders if f in ignored and not _holds(f, tracked)), None)
    if holder is None:
        return None  # the tree holds tracked files: git lists from there
    parent = holder.rpartition("/")[0]
    if parent and not _holds(parent, tracked):  # as a clean of the work tree keeps it
        return [], [Kept(".", f"in an untracked folder ({parent}), kept whole")]
    reason = _ignored_output_reason(top, holder, tracked)
    if reason is None:
        why = f"in {holder}, ignored by git, but not a known build output: may be data"
        return [], [Kept(".", why)]
    nested = _nested_repo(top / holder)
    if nested is not None:  # a clean of the work tree keeps the whole folder then
        where = nested.relative_to(top).as_posix()
        return [], [Kept(".", f"in {holder}, which holds a nested git repository ({where})")]
    entries: list[CleanEntry] = []
    kept: list[Kept] = []
    for child in sorted(root.iterdir()):
        entry = _entry(root, child.name, f"in {holder}, ignored by git, {reason}", None, kept)
        if entry is not None:
            entries.append(entry)
    return entries, kept


def _holds(folder: str, tracked: set[str]) -> bool:
    """Whether a tracked file lies under ``folder`` (a path relative to the work tree)."""
    return any(t.startswith(folder + "/") for t in tracked)


def _git_ignored(top: Path, paths: list[str]) -> set[str]:
    """Which of ``paths`` (relative to ``top``) git ignores, by a pattern for them or for a
    folder holding them."""
    result = cmd.run(
        ["git", "-C", str(top), "check-ignore", "-z", "--stdin"],
        stdin=b"".join(os.fsencode(p) + b"\0" for p in paths),
        timeout=30,
        encoding="utf-8",
        errors="surrogateescape",
    )
    if result.returncode not in (0, 1):  # 1: none is ignored
        said = result.stderr.strip().splitlines()
        detail = f": {said[-1].strip()}" if said else ""
        raise cmd.CommandFailedError(f"git: exited with status {result.returncode}{detail}")
    return {p for p in result.stdout.split("\0") if p}


def _plan_git(root: Path) -> tuple[list[CleanEntry], list[Kept]]:
    # Paths from ls-files run in ``root`` are relative to root (git prints cwd-relative paths).
    ignored = _git_paths(root, "--others", "--ignored", "--exclude-standard", "--directory")
    untracked = _git_paths(root, "--others", "--exclude-standard", "--directory")
    tracked = set(_git_paths(root, "--cached"))
    entries: list[CleanEntry] = []
    kept: list[Kept] = []
    candidates: list[tuple[str, str]] = []
    # git lists a folder it did not ignore but went into (one holding only ignored files) as
    # ignored too, beside what it found there: only what lies in it is ignored
    ordered = sorted(ignored)  # what lies in a folder sorts right after it
    entered = {p for p, q in itertools.pairwise(ordered) if p.endswith("/") and q.startswith(p)}
    ignored = [p for p in ignored if p not in entered]
    # an untracked folder git does not ignore (a venv, a new package) is kept whole, below too
    open_dirs = tuple(p for p in untracked if p.endswith("/"))
    for p in ignored:
        rel = p.rstrip("/")
        holder = next((d for d in open_dirs if p.startswith(d)), None)
        if holder is not None:
            if holder != p:  # the folder itself is told among the untracked, below
                kept.append(Kept(rel, f"in an untracked folder ({holder.rstrip('/')}), kept whole"))
            continue
        reason = _ignored_output_reason(root, rel, tracked)
        if reason is None:
            kept.append(Kept(rel, "ignored by git, but not a known build output: may be data"))
        else:
            candidates.append((p, f"ignored by git, {reason}"))
    kept.extend(_untracked_kept(root, untracked))
    not_ignored = tuple(untracked)
    for raw, reason in sorted(candidates):
        rel = raw.rstrip("/")
        if any(u.startswith(rel + "/") for u in not_ignored):
            kept.append(Kept(rel, "holds files git does not ignore"))
            continue
        entry = _entry(root, rel, reason, tracked, kept)
        if entry is not None:
            entries.append(entry)
    return entries, kept


def _untracked_kept(root: Path, untracked: list[str]) -> list[Kept]:
    """Why each untracked entry stays. What git neither tracks nor ignores may be someone's new
    file, in a build folder too: it is never removed (a build folder git should ignore belongs in
    .gitignore). git also lists as untracked a folder holding no such file (only ignored files,
    or nothing): that one is told as what it is, and one holding no file at all is not listed."""
    real: list[str] = []
    if any(p.endswith("/") for p in untracked):
        real = _git_paths(
            root, "--others", "--exclude-standard", "--directory", "--no-empty-directory"
        )
    kept: list[Kept] = []
    for p in untracked:
        rel = p.rstrip("/")
        if rel in ("", "."):  # the tree itself (an untracked folder cleaned on its own) is no entry
            continue
        if not p.endswith("/") or _among(p, real):
            kept.append(Kept(rel, "untracked and not ignored: may be a new source file"))
        elif _holds_files(root / rel):
            kept.append(Kept(rel, "an untracked folder of ignored files only, kept whole"))
    return kept


def _among(folder: str, paths: list[str]) -> bool:
    """Whether ``folder`` (git's "dir/") is listed in ``paths``, or something in it, or a folder
    holding it."""
    return any(p.startswith(folder) or (p.endswith("/") and folder.startswith(p)) for p in paths)


def _holds_files(path: Path) -> bool:
    """Whether anything but folders lies under ``path`` (a link counts; none is followed)."""
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        if filenames or any((Path(dirpath) / d).is_symlink() for d in dirnames):
            return True
    return False


# Files a build writes next to the sources (in-place extension builds, object files, Ninja's state)
OUTPUT_SUFFIXES = (".so", ".pyd", ".o", ".pyc")
OUTPUT_FILES = (
    ".ninja_deps",
    ".ninja_log",
    "CMakeCache.txt",
    "build.ninja",
    "compile_commands.json",
)
OUTPUT_DIRS = ("__pycache__", "CMakeFiles", ".eggs")  # torch_extensions: _build_dir_reason
ENV_MARKERS = ("pyvenv.cfg", "conda-meta")  # a folder holding one is an environment, not output


def _ignored_output_reason(root: Path, rel: str, tracked: set[str]) -> str | None:
    """Why ``rel``, a path under ``root`` that git ignores, is a build output, or None: a
    .gitignore also lists virtual environments, data, checkpoints and secrets, which clean must
    never take. Only the top folder counts as a build directory (src/tool/build may be a
    package), and only while it holds no tracked file; inside one that does, and anywhere
    else, the path must itself look like output."""
    path = root / rel
    parts = rel.split("/")
    if any(
        (root.joinpath(*parts[:i]) / m).exists() for i in range(1, len(parts)) for m in ENV_MARKERS
    ):
        return None
    top = parts[0]
    in_build_dir = _is_build_dir_name(top)
    if in_build_dir and not _holds(top, tracked):
        # a folder named like a build directory proves nothing by its name (a .gitignore of
        # `*` ignores everything): it shows build output, or holds only compiled files
        proof = _build_dir_reason(root / top, python_kind=True)
        if proof is not None or _only_outputs(root / top):
            what = proof or "compiled objects only"
            return (
                f"a build directory ({top}: {what})"
                if len(parts) == 1
                else (f"in a build directory ({top}: {what})")
            )
    if path.is_symlink():
        return "a link in a build directory (the link only)" if in_build_dir else None
    name = path.name
    if path.is_dir():
        if any((path / m).exists() for m in ENV_MARKERS):
            return None
        if name in OUTPUT_DIRS:
            return "a build cache"
        reason = _build_dir_reason(path, python_kind=True)
        if reason is None and in_build_dir and _only_outputs(path):
            return "compiled objects only"
        return reason
    if name in OUTPUT_FILES or name.endswith(OUTPUT_SUFFIXES):
        return "a compiled output"
    return None


CMAKE_CACHE_MAX = 16 * 2**20  # PyTorch's own cache is about 0.3 MB


def _cmake_build_dir(path: Path) -> bool:
    """Whether ``path`` is a CMake build directory outside its source folder: its CMakeCache.txt
    names the folder it was configured from (CMAKE_HOME_DIRECTORY), an existing folder outside
    this one. A cache in the source folder itself (``cmake .``), one naming a folder inside it,
    or an empty or foreign file named CMakeCache.txt, proves only that file is CMake's, not what
    is beside it. (A folder holding a CMakeLists.txt never gets here: _build_dir_reason.)"""
    cache = path / "CMakeCache.txt"
    if not cache.is_file() or cache.is_symlink():
        return False
    try:
        with cache.open("rb") as handle:
            text = handle.read(CMAKE_CACHE_MAX).decode("utf-8", "replace")
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("CMAKE_HOME_DIRECTORY:"):
            home = Path(line.partition("=")[2].strip())
            if not home.is_absolute():
                return False
            try:
                source, here = home.resolve(strict=True), path.resolve(strict=True)
            except (OSError, RuntimeError):
                return False  # the source folder it names is not here: nothing is proven
            # the sources must lie outside: a cache naming a folder inside this one (a
            # subproject configured in its parent) makes this folder the project's own
            return source != here and here not in source.parents
    return False


def _only_outputs(path: Path) -> bool:
    files = [Path(d) / f for d, _, fs in os.walk(path, followlinks=False) for f in fs]
    return bool(files) and all(f.name.endswith(OUTPUT_SUFFIXES) for f in files)


def _is_build_dir_name(name: str) -> bool:
    return name in BUILD_DIR_NAMES or _is_egg_info(name)


def _is_egg_info(name: str) -> bool:
    return name.endswith(".egg-info")


def _entry(
    root: Path, rel: str, reason: str, tracked: set[str] | None, kept: list[Kept]
) -> CleanEntry | None:
    path = root / rel
    problem = containment_problem(root, path)
    if problem:
        kept.append(Kept(rel, problem))
        return None
    if tracked is not None and (rel in tracked or _holds(rel, tracked)):
        kept.append(Kept(rel, "holds tracked files"))
        return None
    if path.is_symlink():
        return CleanEntry(rel, "symlink", 0, reason + " (the link only)")
    if path.is_dir():
        nested = _nested_repo(path)
        if nested is not None:
            kept.append(Kept(rel, f"holds a nested git repository ({nested.relative_to(root)})"))
            return None
        return CleanEntry(rel, "dir", tree_bytes(path), reason)
    if path.exists():
        return CleanEntry(rel, "file", path.lstat().st_size, reason)
    return None


def containment_problem(root: Path, path: Path) -> str | None:
    """Why ``path`` must not be removed as part of ``root``, or None when it may.

    The parent folders are resolved (a symlinked folder on the way is followed); the last part
    is not, so a symlink is judged where it sits, and removing it removes the link only.
    """
    try:
        parent = path.parent.resolve(strict=True)
    except OSError:
        return "its folder cannot be resolved"
    if path == root or (parent == root.parent and path.name == root.name):
        return "the tree itself"
    if parent != root and root not in parent.parents:
        return "outside the tree (through a symlinked folder)"
    return None


def _nested_repo(path: Path) -> Path | None:
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        if ".git" in dirnames or ".git" in filenames:
            return Path(dirpath)
    return None


def tree_bytes(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path, followlinks=False):
        for name in files:
            try:
                total += (Path(dirpath) / name).lstat().st_size
            except OSError:
                continue
    return total


def _plan_known_dirs(root: Path, kind: ProjectKind | None) -> tuple[list[CleanEntry], list[Kept]]:
    entries: list[CleanEntry] = []
    kept: list[Kept] = []
    python_kind = kind is None or kind in PYTHON_KINDS
    for child in sorted(root.iterdir()):
        name = child.name
        if child.is_symlink() or not child.is_dir():
            continue
        reason = _build_dir_reason(child, python_kind)
        if reason is None:
            if name in BUILD_DIR_NAMES:
                kept.append(Kept(name, "named like a build directory but holds no build output"))
            continue
        entry = _entry(root, name, reason, None, kept)
        if entry is not None:
            entries.append(entry)
    return entries, kept


PROJECT_FILES = ("CMakeLists.txt", "setup.py", "pyproject.toml", "meson.build", "Makefile.am")


def _build_dir_reason(path: Path, python_kind: bool) -> str | None:
    name = path.name
    if any((path / f).exists() for f in PROJECT_FILES):
        return None  # a project's own folder (an in-source build, a subproject named build)
    if _cmake_build_dir(path):
        return "a CMake build directory (its CMakeCache.txt names another source folder)"
    if name in BUILD_DIR_NAMES:
        if (path / "build.ninja").is_file():
            return "a build directory (build.ninja)"
        if python_kind and any(
            c.name.startswith(("temp.", "lib.", "bdist.")) for c in path.iterdir() if c.is_dir()
        ):
            return "setuptools build output (temp.*, lib.*)"
        if name == "dist" and python_kind:
            files = list(path.iterdir())
            made = (".whl", ".tar.gz", ".egg", *OUTPUT_SUFFIXES)
            if files and all(c.is_symlink() or c.name.endswith(made) for c in files):
                return "built distributions"
        if name == "torch_extensions" or (path / "torch_extensions").is_dir():
            return "a torch_extensions JIT cache"
    if name == "torch_extensions":
        return "a torch_extensions JIT cache"
    if python_kind and _is_egg_info(name) and (path / "PKG-INFO").is_file():
        return "egg-info metadata"
    return None


# -- executing ----------------------------------------------------------------------------------
def execute_clean(plan: CleanPlan, *, confirmed: bool, ledger: Ledger | None = None) -> CleanResult:
    """Delete the plan's entries; refuses without ``confirmed`` (the CLI's --yes).

    With ``ledger`` the clean is recorded: succeeded, failed (some entries could not be
    removed) or interrupted (Ctrl-C part-way; what went is in the tree, not in the record).
    """
    if not confirmed:
        raise UsageError(
            "nothing deleted: cleaning needs confirmation",
            tip="look at the list, then run again with --yes",
        )
    root = Path(plan.tree)
    if not os.access(root, os.W_OK):
        raise InputError(
            f"{root}: no write permission on the tree", tip="clean as the tree's owner"
        )
    if ledger is None:
        return _delete(plan, root)
    attempt = ledger.start(
        "clean",
        config={
            "in_git": plan.in_git,
            "entries": plan.entries,
            "bytes": sum(e.bytes for e in plan.entries),
        },
        command=("torchsmith", "clean", "--yes", plan.tree),
        tree=plan.tree,
    )
    try:
        result = _delete(plan, root)
    except BaseException:
        ledger.finish(attempt, status="interrupted")
        raise
    ledger.finish(
        attempt,
        status="succeeded" if result.ok else "failed",
        result={**to_jsonable(result), "reason": result.summary()},
    )
    return result


def _delete(plan: CleanPlan, root: Path) -> CleanResult:
    removed: list[str] = []
    failed: list[CleanFailure] = []
    freed = 0
    for entry in plan.entries:
        path = root / entry.path
        problem = containment_problem(root, path)
        if problem:
            failed.append(CleanFailure(entry.path, f"skipped: {problem}"))
            continue
        if not os.path.lexists(path):
            continue
        errors = _remove(path)
        if errors:
            failed.extend(CleanFailure(_rel(root, p), m) for p, m in errors)
        else:
            removed.append(entry.path)
            freed += entry.bytes
    return CleanResult(str(root), tuple(removed), freed, tuple(failed))


def _rel(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _remove(path: Path) -> list[tuple[Path, str]]:
    """Remove a file, a link or a folder without ever following a link."""
    errors: list[tuple[Path, str]] = []
    if path.is_symlink() or not path.is_dir():
        _unlink(path, errors)
        return errors
    for dirpath, dirnames, filenames in os.walk(path, topdown=False, followlinks=False):
        here = Path(dirpath)
        for name in filenames:
            _unlink(here / name, errors)
        for name in dirnames:
            sub = here / name
            if sub.is_symlink():
                _unlink(sub, errors)
            else:
                _rmdir(sub, errors)
    _rmdir(path, errors)
    return errors


def _make_writable(path: Path) -> None:
    """Let ``path`` go: on POSIX removing an entry needs only its folder to be writable, so the
    folder (inside the tree) is the only thing changed; a file's own mode is changed only on
    Windows, where a read-only file cannot be deleted, and only when no other name links its
    data (a hard link from outside the tree shares the mode: changing it would change a file
    outside the tree)."""
    targets = [path.parent]
    if platforms.current_os() == "windows":
        targets.append(path)
    for target in targets:
        try:
            if target.is_symlink():
                continue
            info = target.lstat()
            if not target.is_dir() and info.st_nlink > 1:
                continue
            target.chmod(
                stat.S_IMODE(info.st_mode)
                | stat.S_IWRITE
                | (stat.S_IXUSR if target.is_dir() else 0),
            )
        except OSError:
            continue


def _unlink(path: Path, errors: list[tuple[Path, str]]) -> None:
    _retry(path, os.unlink, errors)


def _rmdir(path: Path, errors: list[tuple[Path, str]]) -> None:
    if any(p == path or path in p.parents for p, _ in errors):
        return  # something inside stayed; the folder cannot go
    _retry(path, os.rmdir, errors)


def _retry(path: Path, action: object, errors: list[tuple[Path, str]]) -> None:
    assert callable(action)
    try:
        action(path)
        return
    except FileNotFoundError:
        return
    except PermissionError:
        _make_writable(path)
    except OSError as exc:
        errors.append((path, exc.strerror or str(exc)))
        return
    try:
        action(path)
    except FileNotFoundError:
        return
    except PermissionError as exc:
        errors.append((path, _held_message(path, exc)))
    except OSError as exc:
        errors.append((path, exc.strerror or str(exc)))


def _held_message(path: Path, exc: PermissionError) -> str:
    held = getattr(exc, "winerror", None) == 32
    if platforms.current_os() == "windows" and held:
        holders = file_holders(path)
        if holders:
            return "in use by " + ", ".join(holders) + "; close it and run clean again"
        return "in use by another process; close it and run clean again"
    return f"permission denied ({exc.strerror or exc})"


def file_holders(path: Path, processes: Iterable[object] | None = None) -> list[str]:
    """The processes holding ``path`` open, as "name (pid N)", where psutil can tell."""
    import psutil  # noqa: PLC0415

    target = os.path.normcase(Path(path).absolute())
    found: list[str] = []
    for proc in processes if processes is not None else psutil.process_iter(["pid", "name"]):
        try:
            assert isinstance(proc, psutil.Process)
            for opened in proc.open_files():
                if os.path.normcase(Path(opened.path).absolute()) == target:
                    found.append(f"{proc.name()} (pid {proc.pid})")
                    break
        except (psutil.Error, OSError):
            continue
    return found
