"""The corrected configuration of one reviewed section, as `torchsmith build` arguments.

Every build setting the section makes ends in one of two places: the corrected command (as
``--cc``, ``--profile``, ``--python``, ``--jobs``, ``--cache`` or ``--set``), with the review's
own fixes applied (the jobs that fit, the arch list that runs on the target's GPUs, a flag without
``-allow-unsupported-compiler``), or ``dropped``, each with why. Settings that are the same as
build's default (``CMAKE_BUILD_TYPE=Release``, a Ninja generator) need neither. Pure: from the
extracted configuration, its findings and the target to a :class:`Corrected`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from torchsmith.build.config import SET_KEY
from torchsmith.knowledge import Knowledge
from torchsmith.knowledge.compat import (
    arch_list_tokens,
    covers,
    entry_cc,
    parse_cc,
    specific_entry_problem,
    split_entry,
)
from torchsmith.review.checks import (
    ARCH_KEYS,
    CMAKE_ARCH_KEYS,
    CXX_FLAG_KEYS,
    FLAG_KEYS,
    JOB_KEYS,
    NAMED_ARCHES,
    TOOLKIT_KEYS,
    LineFinding,
    Target,
    jobs_that_fit,
)
from torchsmith.review.extract import ExtractedConfig, Setting
from torchsmith.review.switches import BuildSwitches


@dataclass(frozen=True)
class Corrected:
    """The configuration torchsmith would use instead, as `torchsmith build` arguments."""

    build_args: tuple[str, ...]
    dropped: tuple[str, ...] = ()  # settings left out, each "KEY=VALUE (line N): why"
    # the same choices as build's options (what --emit prepares)
    ccs: tuple[str, ...] = ()
    profile: str = "fast"
    python: str | None = None
    jobs: int | None = None
    cache: str | None = None
    sets: tuple[tuple[str, str], ...] = ()
    needs: tuple[str, ...] = ()  # what the command still lacks to run on the target


_HOST_COMPILER_KEYS = (
    "CC",
    "CXX",
    "CUDAHOSTCXX",
    "CMAKE_C_COMPILER",
    "CMAKE_CXX_COMPILER",
    "CMAKE_CUDA_HOST_COMPILER",
)
_LAUNCHER_KEYS = (
    "TORCHSMITH_LAUNCHER",
    "CMAKE_C_COMPILER_LAUNCHER",
    "CMAKE_CXX_COMPILER_LAUNCHER",
    "CMAKE_CUDA_COMPILER_LAUNCHER",
)
_BUILD_TYPE_KEYS = ("DEBUG", "REL_WITH_DEB_INFO", "CMAKE_BUILD_TYPE")
# flags the review's findings ask to remove (check_host_compiler_flags, check_generator_flags)
_REMOVED_FLAGS = re.compile(r"^(?:--?allow-unsupported-compiler|[/-]MP\d*)$")
# build sets NVCC_APPEND_FLAGS itself (nvcc --threads): a --set would replace it
_BUILD_OWNS = frozenset({"NVCC_APPEND_FLAGS", "MAX_JOBS", "BUILD_DIR"})
_WHY = {
    "toolkit": "torchsmith build picks the CUDA toolkit itself: an installed one that can "
    "compile the archs",
    "PATH": "torchsmith build finds the toolkit and its tools itself",
    "host": "torchsmith build picks a host compiler inside the toolkit's supported range",
    "vcvars": "torchsmith build finds Visual Studio and runs its vcvars64.bat itself",
    "generator": "torchsmith build uses Ninja (where it is installed); no flag picks another "
    "generator",
    "setup_command": "torchsmith build picks the build and install steps itself "
    "(torchsmith build --dry-run shows them)",
    "build_dir": "torchsmith build configures in the project's own build directory",
}


@dataclass
class _Acc:
    ccs: list[str] = field(default_factory=list)
    ptx: bool = False
    debug: bool = False
    python: str | None = None
    jobs: int | None = None
    cache: str | None = None
    sets: dict[str, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)
    done: set[str] = field(default_factory=set)  # keys decided

    def drop(self, setting: Setting, why: str) -> None:
        self.dropped.append(f"{setting.key}={setting.value} (line {setting.line}): {why}")
        self.done.add(setting.key)


def correct(
    config: ExtractedConfig,
    findings: tuple[LineFinding, ...],
    target: Target,
    kb: Knowledge,
    tree: str | None,
) -> Corrected:
    flagged: dict[str, list[LineFinding]] = {}
    for item in findings:
        if item.key is not None and item.finding.severity in ("error", "warning"):
            flagged.setdefault(item.key, []).append(item)
    acc = _Acc()
    _cuda_off_with_archs(config, target, flagged, acc)
    _archs(config, target, kb, flagged, acc)
    _jobs(config, target, flagged, acc)
    _build_type(config, acc)
    for setting in config.effective().values():
        if setting.key not in acc.done:
            _other(setting, flagged, acc)
    if acc.ptx and acc.debug:
        acc.dropped.append(
            "+PTX: torchsmith build adds PTX with --profile portable only, and the script's "
            "debug build takes --profile debug (one profile at a time)"
        )
    profile = "debug" if acc.debug else "portable" if acc.ptx else "fast"
    if tree is None:
        _needs_checkout(config, acc)
    args = [tree or "."]
    for cc in acc.ccs:
        args += ["--cc", cc]
    if profile != "fast":
        args += ["--profile", profile]
    if acc.python is not None:
        args += ["--python", acc.python]
    if acc.jobs is not None:
        args += ["--jobs", str(acc.jobs)]
    if acc.cache is not None:
        args += ["--cache", acc.cache]
    for key, value in acc.sets.items():
        args += ["--set", f"{key}={value}"]
    return Corrected(
        build_args=tuple(args),
        dropped=tuple(acc.dropped),
        ccs=tuple(acc.ccs),
        profile=profile,
        python=acc.python,
        jobs=acc.jobs,
        cache=acc.cache,
        sets=tuple(acc.sets.items()),
        needs=tuple(acc.needs),
    )


def _unquoted(value: str) -> str:
    """The value without one pair of quotes around all of it (quotes inside are the value's)."""
    text = value.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


# a shell variable in a value ($X, ${X}, %X%, $env:X): --set would pass its name, not its value
_VARIABLE = re.compile(
    r"\$env:(?P<ps>\w+)|\$\{?(?P<sh>[A-Za-z_]\w*)|%(?P<cmd>[A-Za-z_]\w*)%", re.IGNORECASE
)


def _why(items: list[LineFinding]) -> str:
    return items[0].finding.message


# -- archs --------------------------------------------------------------------------------------
def _written(setting: Setting) -> list[tuple[str, bool]] | None:
    """An arch setting's entries as (X.Y[a|f], with PTX); None when one is not a compute
    capability (a typo, "native", "all"). CMake's "90-virtual" (PTX only) counts as 9.0 with PTX:
    --cc always builds the SASS too."""
    out: list[tuple[str, bool]] = []
    for token in arch_list_tokens(_unquoted(setting.value)):
        if setting.key in ARCH_KEYS:
            named = NAMED_ARCHES.get(token.lower())
            if named is not None:
                more = _written(Setting(setting.key, named, setting.line, setting.via))
                out += more or []
                continue
            match = re.fullmatch(r"(\d{1,2})\.(\d)([af]?)(\+PTX)?", token, re.IGNORECASE)
        else:
            match = re.fullmatch(r"(\d{1,2})(\d)([af]?)(-real|-virtual)?", token, re.IGNORECASE)
        if match is None:
            return None
        entry = f"{int(match.group(1))}.{match.group(2)}{match.group(3).lower()}"
        suffix = (match.group(4) or "").lower()
        ptx = suffix == "+ptx" if setting.key in ARCH_KEYS else suffix != "-real"
        out.append((entry, ptx))
    return out


def _gpu_ccs(target: Target) -> list[str]:
    ccs = {g.compute_capability for g in target.facts.gpus if g.compute_capability}
    return sorted(ccs, key=parse_cc)


def _archs(
    config: ExtractedConfig,
    target: Target,
    kb: Knowledge,
    flagged: dict[str, list[LineFinding]],
    acc: _Acc,
) -> None:
    gpus = _gpu_ccs(target)
    entries: dict[str, bool] = {}  # entry -> with PTX
    effective = config.effective()
    for key in (*ARCH_KEYS, *CMAKE_ARCH_KEYS):
        setting = effective.get(key)
        if setting is None or key in acc.done:
            continue
        acc.done.add(key)
        wrong = [f for f in flagged.get(key, []) if f.finding.category == "arch-not-compiled"]
        written = _written(setting)
        if wrong:  # the review's fix: the target GPUs' own compute capabilities
            instead = f"--cc {' --cc '.join(gpus)} instead" if gpus else "name the GPUs with --cc"
            acc.drop(setting, f"{_why(wrong)}; {instead}")
            entries.update(dict.fromkeys(gpus, False))
            continue
        if written is None:
            word = _unquoted(setting.value).lower()
            if word == "native" and gpus:
                entries.update(dict.fromkeys(gpus, False))  # the target's own GPUs: --cc says it
                continue
            acc.drop(
                setting,
                "torchsmith build builds for named GPUs (--cc, --gpu, --probe), not "
                f"{word or 'an empty list'}; name the GPUs that will run it with --cc X.Y",
            )
            continue
        for entry, ptx in written:
            problem = specific_entry_problem(entry, kb)
            if problem:  # 8.6a: the review's fix is the plain 8.6
                base = split_entry(entry)[0]
                acc.dropped.append(
                    f"{entry} of {key} (line {setting.line}): {problem}; --cc {base} instead"
                )
                entry = base
            entries[entry] = entries.get(entry, False) or ptx
    for cc in gpus:  # a GPU of the target that no entry reaches (or no arch list at all)
        if not any(_covers(e, cc) for e in entries):
            entries[cc] = False
    acc.ccs = list(entries)
    _ptx(entries, acc)
    cuda = effective.get("USE_CUDA")
    cpu_only = cuda is not None and cuda.key not in acc.done and _off(cuda.value)
    others = any(g.vendor in ("amd", "intel", "apple") for g in target.facts.gpus)
    if not acc.ccs and not cpu_only and not others:
        acc.needs.append(
            "--cc X.Y for a CUDA build: the script names no compute capability and the target "
            "shows no NVIDIA GPU, so torchsmith build would stop at preflight (no-gpu-visible)"
        )


def _ptx(entries: dict[str, bool], acc: _Acc) -> None:
    """+PTX on the newest compute capability is --profile portable; elsewhere build has no
    flag for it."""
    if not any(entries.values()):
        return
    newest = max((entry_cc(e) for e in entries), key=parse_cc)
    for entry, ptx in entries.items():
        if not ptx:
            continue
        if entry_cc(entry) == newest:
            acc.ptx = True
        else:
            acc.dropped.append(
                f"{entry}+PTX: torchsmith build puts PTX on the newest compute capability only "
                f"(--profile portable: {newest}+PTX); {entry} is built as SASS"
            )


def _covers(entry: str, cc: str) -> bool:
    try:
        return covers(entry, cc)
    except ValueError:  # not an X.Ya entry: it covers nothing
        return False


def _cuda_off_with_archs(
    config: ExtractedConfig, target: Target, flagged: dict[str, list[LineFinding]], acc: _Acc
) -> None:
    """USE_CUDA=0 beside an arch list (check_switches' warning): for a target with an NVIDIA
    GPU the fix is to build for it (drop USE_CUDA=0); without one, to drop the arch list."""
    cuda = config.effective().get("USE_CUDA")
    arch = config.get(*ARCH_KEYS, *CMAKE_ARCH_KEYS)
    if cuda is None or arch is None or arch.key not in flagged:
        return
    said = [f for f in flagged[arch.key] if "USE_CUDA is off" in f.finding.message]
    if not said:
        return
    if any(g.vendor == "nvidia" for g in target.facts.gpus):
        acc.drop(cuda, f"{_why(said)}; the target has an NVIDIA GPU: built for it")
    else:
        for key in (*ARCH_KEYS, *CMAKE_ARCH_KEYS):
            setting = config.effective().get(key)
            if setting is not None:
                acc.drop(setting, f"{_why(said)}; the target has no NVIDIA GPU")


# -- what is built ------------------------------------------------------------------------------
# pip install options that take a value (the value is no requirement)
_PIP_VALUED = frozenset({
    "-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f",
    "--find-links", "-t", "--target", "--prefix", "--root", "--src", "-C", "--config-settings",
    "--global-option", "--build-option", "--install-option", "--upgrade-strategy", "--python",
    "--platform", "--python-version", "--implementation", "--abi", "--only-binary", "--no-binary",
    "--progress-bar", "--log", "--cache-dir", "--cert", "--client-cert", "--proxy", "--timeout",
    "--retries", "--exists-action", "--trusted-host", "--report",
})  # fmt: skip
# what build scripts pip-install beside the build (torch itself, build tools): wheels, not the
# project they build
_NOT_BUILT = frozenset({
    "torch", "torchvision", "torchaudio", "ninja", "cmake", "packaging", "wheel", "setuptools",
    "pip", "numpy", "psutil", "pybind11", "scikit-build", "scikit-build-core", "einops",
})  # fmt: skip


def _index_requirements(argv: tuple[str, ...]) -> tuple[list[str], bool]:
    """The requirements a ``pip install`` line fetches from an index or a URL (flash-attn==2.6.3,
    git+https://...), and whether it also names a local path (., ./ext, -e .)."""
    if "install" not in argv:
        return [], False
    remote: list[str] = []
    local = False
    words = argv[argv.index("install") + 1 :]
    i = 0
    while i < len(words):
        word = words[i]
        if word in _PIP_VALUED:
            i += 2
            continue
        if word in ("-e", "--editable") and i + 1 < len(words):
            word = words[i + 1]
            i += 1
        if word.startswith("-"):
            pass
        elif re.match(r"^(?:git\+|[\w+.-]+://)", word):
            remote.append(word)
        elif (
            word.startswith((".", "/", "~"))
            or re.search(r"[\\/]", word)
            or re.search(r"\.(?:whl|tar\.gz|zip)$", word, re.IGNORECASE)  # a file at hand
        ):
            local = True
        elif _project(word) not in _NOT_BUILT:
            remote.append(word)
        i += 1
    return remote, local


def _project(requirement: str) -> str:
    """The normalized project name of a requirement: "Flash_Attn>=2" -> "flash-attn"."""
    return re.split(r"[^A-Za-z0-9._-]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _needs_checkout(config: ExtractedConfig, acc: _Acc) -> None:
    """A script whose build is ``pip install flash-attn==2.6.3`` builds what pip downloads;
    torchsmith build builds a source tree, and the command's ``.`` is only that tree where it
    is run from a checkout of it."""
    if any(c.tool in ("setup.py", "cmake", "cmake-build") for c in config.commands):
        return
    remote: list[str] = []
    for command in config.commands:
        if command.tool == "pip":
            names, local = _index_requirements(command.argv)
            if local:
                return
            remote += names
    if remote:
        acc.needs.append(
            f"a source checkout of {' '.join(remote)}: the script has pip download and build "
            "it, and torchsmith build builds a source tree, so run the command in that "
            "checkout (or name its folder instead of .)"
        )


# -- jobs and profile ---------------------------------------------------------------------------
def _jobs(
    config: ExtractedConfig, target: Target, flagged: dict[str, list[LineFinding]], acc: _Acc
) -> None:
    setting = config.get(*JOB_KEYS)
    if setting is None:
        return
    effective = config.effective()
    value = _unquoted(setting.value)
    too_many = [f for f in flagged.get(setting.key, []) if f.finding.category == "compile-oom"]
    fits = jobs_that_fit(target)
    if too_many and fits is not None:
        acc.jobs = fits
        acc.drop(setting, f"{_why(too_many)}; --jobs {fits} instead")
    elif value.isdigit() and int(value) >= 1:
        acc.jobs = int(value)
        acc.done.add(setting.key)
    else:
        acc.drop(
            setting,
            "not a number of jobs; torchsmith build picks them from the RAM and cores "
            "(or give --jobs N)",
        )
    for key in JOB_KEYS:
        other = effective.get(key)
        if other is None or key in acc.done:
            continue
        acc.done.add(key)
        if _unquoted(other.value) != value:
            acc.drop(other, f"{setting.key} (line {setting.line}) sets the jobs after it")


def _build_type(config: ExtractedConfig, acc: _Acc) -> None:
    effective = config.effective()
    for key in _BUILD_TYPE_KEYS:
        setting = effective.get(key)
        if setting is None:
            continue
        acc.done.add(key)
        value = _unquoted(setting.value).lower()
        if (key == "CMAKE_BUILD_TYPE" and value == "debug") or (key == "DEBUG" and _on(value)):
            acc.debug = True
        elif key == "CMAKE_BUILD_TYPE" and value in ("release", ""):
            continue  # build's fast and portable profiles build Release
        elif key == "CMAKE_BUILD_TYPE" or _on(value):
            acc.drop(
                setting,
                "torchsmith build's profiles build Release (fast, portable) or Debug (debug); "
                "none builds this type",
            )


def _on(value: str) -> bool:
    return _unquoted(value).upper() in ("1", "ON", "TRUE", "YES", "Y")


def _off(value: str) -> bool:
    return _unquoted(value).upper() in ("0", "OFF", "FALSE", "NO", "N")


# -- everything else ----------------------------------------------------------------------------
def _other(setting: Setting, flagged: dict[str, list[LineFinding]], acc: _Acc) -> None:
    key = setting.key
    acc.done.add(key)
    if key == "python":
        acc.python = setting.value
    elif key in _LAUNCHER_KEYS:
        _launcher(setting, acc)
    elif key in (*FLAG_KEYS, *CXX_FLAG_KEYS):
        _flags(setting, flagged, acc)
    elif key in flagged:
        acc.drop(setting, _why(flagged[key]))
    elif key in ("BUILD_DIR", "build_dir"):
        acc.drop(setting, _WHY["build_dir"])
    elif BuildSwitches.is_switch_name(key) or (
        key.startswith("CMAKE_")
        and key not in (*TOOLKIT_KEYS, *_HOST_COMPILER_KEYS, "CMAKE_GENERATOR")
    ):
        _set(setting, _unquoted(setting.value), acc)
    elif key in TOOLKIT_KEYS:
        acc.drop(setting, _WHY["PATH" if key == "PATH" else "toolkit"])
    elif key in _HOST_COMPILER_KEYS:
        acc.drop(setting, _WHY["host"])
    elif key == "vcvars":
        acc.drop(setting, _WHY["vcvars"])
    elif key in ("generator", "CMAKE_GENERATOR"):
        if "ninja" not in setting.value.lower():
            acc.drop(setting, _WHY["generator"])
    elif key == "setup_command":
        acc.drop(setting, _WHY["setup_command"])
    elif setting.via == "cmake-define":
        acc.drop(setting, "no flag of torchsmith build passes it to CMake")
    # any other variable (LOG=..., a loop counter) is the script's own, not a build setting


def _set(setting: Setting, value: str, acc: _Acc) -> None:
    variable = _VARIABLE.search(value)
    if variable:
        acc.drop(
            setting,
            f"it refers to the shell variable {next(v for v in variable.groups() if v)}, whose "
            "name --set would pass as text: give its value with --set yourself",
        )
    elif setting.key in _BUILD_OWNS:
        acc.drop(setting, "torchsmith build sets it itself; --set would replace its value")
    elif not SET_KEY.match(setting.key):
        acc.drop(
            setting, "torchsmith build's --set takes upper-case names that start with a letter"
        )
    else:
        acc.sets[setting.key] = value


def _launcher(setting: Setting, acc: _Acc) -> None:
    name = re.split(r"[\\/]", _unquoted(setting.value))[-1].lower().removesuffix(".exe")
    if name in ("sccache", "ccache"):
        acc.cache = name
    else:
        acc.drop(setting, "torchsmith build's --cache takes sccache or ccache")


def _flags(setting: Setting, flagged: dict[str, list[LineFinding]], acc: _Acc) -> None:
    words = _unquoted(setting.value).split()
    removed = [w for w in words if _REMOVED_FLAGS.match(w)] if setting.key in flagged else []
    kept = " ".join(w for w in words if w not in removed)
    if removed:
        why = _why(flagged[setting.key])
        if kept:
            acc.dropped.append(f"{' '.join(removed)} of {setting.key} (line {setting.line}): {why}")
        else:
            acc.drop(setting, why)
            return
    elif setting.key in flagged:
        acc.drop(setting, _why(flagged[setting.key]))
        return
    if kept:
        _set(setting, kept, acc)
