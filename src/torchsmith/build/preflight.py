"""preflight: every check before anything compiles, each a Finding with a category and a fix.

Pure: compares the configuration with the probe, the knowledge base and what ``read_tree``
found in the tree. The configuration's own findings (no GPU visible...) come first.
"""

from __future__ import annotations

import re

from torchsmith import platforms
from torchsmith.binaries.archs import runs_on
from torchsmith.build.config import (
    EXTENSION_KINDS,
    GB,
    can_target,
    host_compiler_ok,
    toolkit_sm_targets,
)
from torchsmith.build.detect import is_cuda_project
from torchsmith.build.model import BuildConfig
from torchsmith.build.scripts import shell_command
from torchsmith.build.tree import BuildCache, TreeFacts
from torchsmith.knowledge import Knowledge
from torchsmith.knowledge.build_facts import BuildFacts, load_build_facts
from torchsmith.knowledge.compat import (
    arch_list_tokens,
    entry_cc,
    entry_sm,
    parse_cc,
    split_entry,
)
from torchsmith.probe.model import Finding, Probe
from torchsmith.taxonomy import SEVERITY_ORDER


def preflight(
    config: BuildConfig,
    tree: TreeFacts,
    probe: Probe,
    kb: Knowledge,
    *,
    facts: BuildFacts | None = None,
) -> tuple[Finding, ...]:
    facts = facts or load_build_facts()
    out: list[Finding] = list(config.findings)
    out += _resources(config, tree, probe, facts)
    out += _tools(config, tree, probe)
    out += _submodules(tree)
    out += _target_torch(config, probe)
    out += _toolkit(config, probe, kb)
    out += _extension_arches(config, tree, probe)
    out += _this_machines_gpus(config, probe)
    out += _windows(config, facts)
    out += stale_cache(config, tree)
    return tuple(sorted(out, key=lambda f: SEVERITY_ORDER[f.severity]))


def _this_machines_gpus(config: BuildConfig, probe: Probe) -> list[Finding]:
    """A warning for each NVIDIA GPU of this machine that nothing the build makes runs on: a
    build for other machines (--cc, --gpu, --probe) is fine, but one that was meant to run here
    too would fail with 'no kernel image' (SASS runs on its own major from its minor up, PTX on
    its capability and later)."""
    if not config.arch_list or not is_cuda_project(config.project):
        return []
    sass = [entry_sm(e) for e in config.arch_list]
    ptx = [entry_sm(e).replace("sm_", "compute_") for e in config.arch_list if e.endswith("+PTX")]
    out = []
    for gpu in probe.gpus:
        cc = gpu.compute_capability
        if gpu.vendor != "nvidia" or not cc:
            continue
        try:
            verdict = runs_on(sass, ptx, cc)
        except ValueError:
            continue
        if verdict.ok:
            continue
        out.append(
            Finding(
                "arch-not-compiled",
                "warning",
                f"GPU {gpu.index} of this machine ({gpu.name}, {cc}) cannot run what this build "
                f"makes ({', '.join(config.arch_list)}): right for other machines only",
                f"add --cc {cc} (or --gpu for this machine's GPU) if the result is to run here too",
                subject=f"gpu {gpu.index}",
            )
        )
    return out


def blocking(findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
    """The findings that stop a build (errors)."""
    return tuple(f for f in findings if f.severity == "error")


# -- RAM, disk, permissions -------------------------------------------------------------------


def _resources(
    config: BuildConfig, tree: TreeFacts, probe: Probe, facts: BuildFacts
) -> list[Finding]:
    out = []
    cuda = is_cuda_project(config.project)
    per_job = facts.job_gb(cuda, config.nvcc_threads)
    need = per_job * config.jobs + facts.reserve_gb
    ram = probe.host.ram_available_bytes or probe.host.ram_total_bytes
    if ram is not None and ram / GB < need:
        safe = facts.jobs_that_fit(ram / GB, cuda, config.nvcc_threads)
        out.append(
            Finding(
                "compile-oom",
                "error" if ram / GB < per_job + facts.reserve_gb else "warning",
                f"{config.jobs} jobs need about {need:.0f} GB RAM ({per_job:g} GB each); "
                f"{ram / GB:.1f} GB is available: compilers would be killed",
                f"build with --jobs {safe} (or free memory)",
                subject="RAM",
                source=facts.memory_sources[0],
            )
        )
    disk_need = facts.disk_gb.get(config.project.kind)
    if tree.disk_free_bytes is not None and disk_need and tree.disk_free_bytes / GB < disk_need:
        out.append(
            Finding(
                "other",
                "error",
                f"{tree.disk_free_bytes / GB:.1f} GB free at {tree.path}; a "
                f"{config.project.kind} build needs about {disk_need:g} GB",
                "free disk space or build from a copy of the tree on a larger disk",
                subject="disk",
                source=facts.disk_sources[0],
            )
        )
    if not tree.writable:
        out.append(
            Finding(
                "other",
                "error",
                f"{tree.path} is not writable: the build cannot write its outputs there",
                "build from a copy you own, or fix the folder's permissions",
                subject="permissions",
            )
        )
    return out


# -- build tools ------------------------------------------------------------------------------


def _version(text: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text or "")[:3])


def _tools(config: BuildConfig, tree: TreeFacts, probe: Probe) -> list[Finding]:
    out = []
    uses_cmake = config.project.kind in ("cmake", "pytorch")
    cmake = probe.build_tool("cmake")  # the one the steps run
    if uses_cmake and cmake is None:
        out.append(
            Finding(
                "missing-build-dependency",
                "error",
                "cmake is not installed; this tree is configured with CMake",
                "pip install cmake (into the build's environment) or install it system-wide",
                subject="cmake",
            )
        )
    elif (
        uses_cmake
        and cmake
        and tree.cmake_minimum
        and _version(cmake.version) < _version(tree.cmake_minimum)
    ):
        out.append(
            Finding(
                "missing-build-dependency",
                "error",
                f"the tree needs cmake >= {tree.cmake_minimum} "
                f"(cmake_minimum_required); {cmake.path} is {cmake.version}",
                f'pip install "cmake>={tree.cmake_minimum}"',  # double quotes work in cmd too
                subject="cmake",
            )
        )
    wants_ninja = config.project.kind != "cpp_extension" or config.project.uses_ninja
    if wants_ninja and probe.build_tool("ninja") is None:
        out.append(
            Finding(
                "missing-build-dependency",
                "error" if config.project.kind == "cmake" else "warning",
                "ninja is not installed: "
                + (
                    "the configuration asks CMake for the Ninja generator"
                    if config.project.kind in ("cmake", "pytorch")
                    else "torch.utils.cpp_extension falls back to compiling one file at a time"
                ),
                "pip install ninja",
                subject="ninja",
            )
        )
    if config.host_compiler is None and (config.project.kind != "cmake" or config.cuda_home):
        out.append(
            Finding(
                "missing-build-dependency",
                "error",
                "no C++ compiler found",
                "install a C++ compiler (gcc/g++, clang, or Visual Studio Build Tools on Windows)",
                subject="compiler",
            )
        )
    return out


def _submodules(tree: TreeFacts) -> list[Finding]:
    missing = [s.path for s in tree.submodules if s.state == "uninitialized"]
    if not missing:
        return []
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return [
        Finding(
            "missing-build-dependency",
            "error",
            f"{len(missing)} git submodule(s) not initialised: {shown}",
            f'git -C "{tree.path}" submodule update --init --recursive',
            subject="git submodules",
        )
    ]


# -- toolkit, host compiler, torch --------------------------------------------------------------


def _target_torch(config: BuildConfig, probe: Probe) -> list[Finding]:
    """An extension's setup imports torch (torch.utils.cpp_extension) in the target interpreter:
    without a torch there the build stops at once with "No module named 'torch'". Said only
    where the probe ran that interpreter and answered (a failed probe says nothing about torch);
    PyTorch itself and plain CMake projects build without one."""
    target = probe.python
    if config.project.kind not in EXTENSION_KINDS or target is None or target.error:
        return []
    fix = (
        f'install torch into it first: torchsmith install --python "{config.python}" '
        "(torchsmith plan shows which build), then build again"
    )
    if probe.torch is None:
        message = (
            f"the target interpreter {config.python} has no torch: the "
            f"{config.project.build_system} build imports torch.utils.cpp_extension and would "
            "stop with \"No module named 'torch'\""
        )
    elif probe.torch.error:
        message = (
            f"the target interpreter {config.python} has no usable torch ({probe.torch.error}): "
            "the build imports torch.utils.cpp_extension and would stop there"
        )
    else:
        return []
    return [Finding("missing-build-dependency", "error", message, fix, subject="torch")]


def _extension_arches(config: BuildConfig, tree: TreeFacts, probe: Probe) -> list[Finding]:
    """Entries the target torch's cpp_extension does not list: it stops the build with "Unknown
    CUDA arch" (torch 2.13 lists 9.0a but no 10.0f; older ones lack newer GPUs)."""
    accepted = tree.extension_arches
    value = config.env.get("TORCH_CUDA_ARCH_LIST")
    # a CPU or ROCm torch builds no CUDA code (its own finding says so)
    if not accepted or value is None or probe.torch is None or probe.torch.cuda is None:
        return []
    # torch's own reading (_get_cuda_arch_flags): spaces are ';', then split at ';', names
    # (Ampere) expanded; an empty entry ("8.6;9.0;") or "8.6,9.0" stops it as well
    tokens = value.replace(" ", ";").split(";")
    unknown = [t for t in tokens if not t[:1].isalpha() and t not in accepted]
    if not unknown:
        return []
    shown = ", ".join(f"'{t}'" for t in unknown)
    first = unknown[0].removesuffix("+PTX")
    try:
        major, minor = parse_cc(entry_cc(first))
        near = [a for a in accepted if entry_cc(a) == f"{major}.{minor}"]
    except ValueError:
        near = []
    fix = (f"use {' or '.join(near)} instead" if near else "write X.Y entries separated by ';'") + (
        " (its list: torch/utils/cpp_extension.py, supported_arches)"
    )
    torch = f"torch {probe.torch.version}"
    message = (
        f"{torch}'s cpp_extension does not accept TORCH_CUDA_ARCH_LIST entries {shown}: the "
        f'build would stop with "Unknown CUDA arch ({first}) or GPU not supported"'
    )
    if config.project.own_arch_flags:  # torch reads no list where the setup passes arch flags
        return [
            Finding(
                "unknown-build-option",
                "warning",
                message + ", unless the setup's own nvcc arch flags replace the list, as its "
                "text suggests",
                fix,
                subject="TORCH_CUDA_ARCH_LIST",
            )
        ]
    return [Finding("unknown-build-option", "error", message, fix, subject="TORCH_CUDA_ARCH_LIST")]


def _toolkit(config: BuildConfig, probe: Probe, kb: Knowledge) -> list[Finding]:
    out: list[Finding] = []
    tk = next((t for t in probe.cuda_toolkits if t.root == config.cuda_home), None)
    if tk is None:
        return out
    sms, how = toolkit_sm_targets(tk, kb)
    if tk.nvcc is None and tk.error:
        out.append(
            Finding(
                "cuda-toolkit-not-found",
                "error",
                f"the CUDA toolkit at {tk.root} has no nvcc ({tk.error})",
                "install a full CUDA toolkit (or pip install nvidia-cuda-nvcc for CUDA 13) and "
                "set CUDA_HOME to it",
                subject="nvcc",
            )
        )
    for entry in dict.fromkeys(e.removesuffix("+PTX") for e in config.arch_list):
        if can_target(tk, kb, entry) is False:
            cc, letter = split_entry(entry)
            plain, sm = entry_sm(cc), entry_sm(entry)  # sm_90, sm_90a
            suffix = kb.arch_suffix(letter) if letter and plain in sms else None
            why = (
                f"{'arch' if suffix.suffix == 'a' else 'family'}-specific code needs CUDA "
                f"{suffix.min_cuda} or newer"
                if suffix is not None
                else f"it targets {_span(sms)} ({how})"
            )
            hint = (
                kb.toolkits_for_text([sm], tk.version)  # counts the suffix's own minimum
                if kb.toolkits_for([sm])
                else "a CUDA toolkit that lists it in nvcc --list-gpu-code"
            )
            out.append(
                Finding(
                    "toolkit-too-old-for-arch",
                    "error",
                    f"nvcc {tk.version} at {tk.root} cannot compile for {sm} (compute capability "
                    f"{cc}); {why}",
                    f"install {hint} and set CUDA_HOME to it, or drop that target",
                    subject=sm,
                    source=suffix.sources[0]
                    if suffix is not None and suffix.sources
                    else (None if how.startswith("nvcc") else "nvcc_wheels"),
                )
            )
    host = next(
        (c for c in probe.compilers if (c.path or c.name) == config.host_compiler and c.version),
        None,
    )
    if host is not None and host_compiler_ok(host, kb, tk.version) is False:
        known = kb.toolkit(tk.version or "")
        limit = ""
        if known is not None:
            limit = (
                f"MSC_VER {known.msc_ver_min}-{known.msc_ver_max}"
                if host.name == "msvc"
                else f"gcc <= {known.max_gcc_major}, clang <= {known.max_clang_major}"
            )
        out.append(
            Finding(
                "unsupported-host-compiler",
                "error",
                f"nvcc {tk.version} rejects {host.name} {host.version} as host compiler "
                f"(accepts {limit})",
                "install a supported compiler and set CUDAHOSTCXX (Linux) or use a newer "
                "CUDA toolkit",
                subject=host.name,
                source="host_config",
            )
        )
    if config.project.kind in EXTENSION_KINDS and probe.torch is not None:
        torch_cuda = probe.torch.cuda
        if torch_cuda is None and is_cuda_project(config.project):
            out.append(
                Finding(
                    "cpu-only-torch",
                    "error",
                    f"the target torch {probe.torch.version} is a CPU build: CUDA extensions "
                    "cannot be built against it",
                    cpu_torch_fix(config, f"torch {probe.torch.version}"),
                    subject="torch",
                )
            )
        elif torch_cuda and _version(torch_cuda)[:1] != _version(tk.version)[:1]:
            out.append(
                Finding(
                    "toolkit-torch-cuda-mismatch",
                    "error",
                    f"CUDA toolkit {tk.version} differs in major version from the CUDA "
                    f"{torch_cuda} the target torch {probe.torch.version} was built with; "
                    "torch.utils.cpp_extension refuses the mix",
                    f"install a CUDA {_version(torch_cuda)[0]}.x toolkit and set CUDA_HOME to it",
                    subject="CUDA_HOME",
                )
            )
    return out


def cpu_torch_fix(config: BuildConfig, torch: str) -> str:
    """What to do when the target torch is a CPU build and CUDA code was wanted: a CUDA torch
    for the build's GPUs, of the CUDA major version of the toolkit the build uses."""
    ccs = dict.fromkeys(entry_cc(e.removesuffix("+PTX")) for e in config.arch_list)
    plan = shell_command(
        ["torchsmith", "plan", "--python", config.python, *(a for c in ccs for a in ("--cc", c))]
    )
    toolkit = (
        f"; with the toolkit at {config.cuda_home}, one built for CUDA "
        f"{config.cuda_version.split('.')[0]}.x"
        if config.cuda_home and config.cuda_version
        else ""
    )
    return (
        f"install a CUDA build of torch into {config.python} ({plan} shows which{toolkit}), "
        f"then build again: {torch} compiles no CUDA code, whatever "
        "TORCH_CUDA_ARCH_LIST and CUDA_HOME say"
    )


def _span(sms: tuple[str, ...]) -> str:
    if not sms:
        return "no known archs"
    order = sorted(sms, key=_version)
    return f"{order[0]}…{order[-1]}"


def _windows(config: BuildConfig, facts: BuildFacts) -> list[Finding]:
    if platforms.current_os() != "windows":
        return []
    if len(config.project.path) <= facts.windows_max_tree_path:
        return []
    return [
        Finding(
            "windows-path-length",
            "warning",
            f"the tree's path is {len(config.project.path)} characters; build outputs nest "
            "deep and can pass Windows' 260-character MAX_PATH",
            "move or clone the tree to a short path such as C:\\src\\pt, or enable long paths "
            "(LongPathsEnabled=1) and git config core.longpaths true",
            subject="path",
            source="ms_max_path",
        )
    ]


# -- stale build cache -------------------------------------------------------------------------

_ON = {"1", "on", "true", "yes", "y"}
_OFF = {"0", "off", "false", "no", "n", ""}


def _switch(value: str) -> str:
    v = value.strip().lower()
    if v in _ON:
        return "ON"
    if v in _OFF or v.endswith("-notfound"):
        return "OFF"
    return value.strip()


def _is_bool(value: str) -> bool:
    return value.strip().lower() in _ON | _OFF - {""}


def _arch_set(value: str) -> frozenset[str]:
    """ "9.0;12.0+PTX" / "90-real;120" / "90 120" → comparable sm numbers ("9.0a" → "90a")."""
    out = set()
    for item in arch_list_tokens(value):
        base = item.split("-")[0].split("+")[0]
        m = re.fullmatch(r"(?:sm_|compute_)?(\d{1,2})\.?(\d?)([af]?)", base)
        digits = "".join(m.groups()) if m else re.sub(r"\D", "", base)
        out.add(digits + ("+ptx" if "+PTX" in item else ""))
    return frozenset(out)


def _expected(config: BuildConfig) -> dict[str, str]:
    """What the configuration will hand CMake / the extension build, by cache key."""
    want: dict[str, str] = {}
    env = config.env
    for key, value in env.items():
        if key.startswith(("USE_", "BUILD_")):
            want[key] = value
    want.update(_cmake_defines(config))
    if config.arch_list:
        want["TORCH_CUDA_ARCH_LIST"] = ";".join(config.arch_list)
    if config.cuda_home:
        sep = "\\" if "\\" in config.cuda_home else "/"
        want.setdefault("CMAKE_CUDA_COMPILER", config.cuda_home.rstrip(sep) + f"{sep}bin{sep}nvcc")
    if "CMAKE_GENERATOR" in env or config.project.kind == "cmake":
        want["CMAKE_GENERATOR"] = env.get("CMAKE_GENERATOR", "Ninja")
    if config.project.kind in ("pytorch",):
        want["PYTHON_EXECUTABLE"] = config.python
        want["CMAKE_BUILD_TYPE"] = "Debug" if config.profile == "debug" else "Release"
        if config.launcher:
            for lang in ("C", "CXX", "CUDA"):
                want[f"CMAKE_{lang}_COMPILER_LAUNCHER"] = config.launcher
    return want


def stale_cache_file(finding: Finding) -> str | None:
    """The cache file a stale-build-cache finding is about."""
    return finding.path if finding.category == "stale-build-cache" else None


def clean_fix(tree: str) -> str:
    """The fix of a stale cache: clean the tree the build is about (named, since the build may
    have been run from another folder)."""
    return (
        "clean the build outputs and configure again: "
        f"{shell_command(('torchsmith', 'clean', '--yes', tree))} "
        "(without --yes it lists them first), or build --clean"
    )


def stale_cache(config: BuildConfig, tree: TreeFacts) -> list[Finding]:
    out = []
    for cache in tree.caches:
        if cache.kind == "cmake" and config.project.kind == "cmake":
            out += _plain_cmake_cache(config, tree, cache)
            continue
        if cache.kind == "cmake":
            diffs = [_diff_text(d) for d in _cmake_diffs(config, tree, cache)]
        else:
            diffs = _ninja_diffs(config, tree, cache)
        if not diffs:
            continue
        pytorch = config.project.kind == "pytorch" and cache.kind == "cmake"
        why = (
            "; PyTorch's tools/setup_helpers/cmake.py skips CMake configure while "
            "build/CMakeCache.txt exists, so the new values would never reach the build"
            if pytorch
            else ""
        )
        out.append(
            Finding(
                "stale-build-cache",
                "error" if cache.kind == "cmake" else "warning",
                f"{cache.path} was made for another configuration: " + "; ".join(diffs) + why,
                clean_fix(config.project.path),
                subject=cache.kind + " cache",
                path=cache.path,
            )
        )
    return out


# What CMake keeps in an existing build directory whatever this configure passes (checked with
# cmake 3.25): a new CMAKE_CUDA_COMPILER makes CMake delete its cache and configure again without
# the other -D values of the command line (CMAKE_CUDA_ARCHITECTURES falls back to its default); a
# new CMAKE_CUDA_HOST_COMPILER goes into the cache, but the build files keep the -ccbin that
# compiler detection found the first time; another generator is refused outright.
_KEPT_BY_CMAKE = {
    "CMAKE_CUDA_COMPILER": "CMake would delete its cache and configure again without the other "
    "-D values (the CUDA archs fall back to CMake's default)",
    "CMAKE_CUDA_HOST_COMPILER": "CMake keeps compiling with the host compiler it detected first "
    "(-ccbin in the build files), whatever the cache says",
    "CMAKE_GENERATOR": "CMake refuses another generator in an existing build directory",
}


def _plain_cmake_cache(config: BuildConfig, tree: TreeFacts, cache: BuildCache) -> list[Finding]:
    """A plain CMake project is configured by every build with its -D values, which replace what
    the cache holds: those are no stale cache (a note says they change). What CMake keeps
    whatever the command line says (_KEPT_BY_CMAKE), and cached values no -D replaces, are."""
    passed = _cmake_defines(config)
    kept: list[str] = []
    replaced: list[str] = []
    for diff in _cmake_diffs(config, tree, cache):
        key = diff[0]
        if key in _KEPT_BY_CMAKE:
            kept.append(f"{_diff_text(diff)} ({_KEPT_BY_CMAKE[key]})")
        elif key in passed:
            replaced.append(_diff_text(diff))
        else:
            kept.append(f"{_diff_text(diff)} (no -D replaces it: CMake keeps the cached value)")
    out = []
    if kept:
        out.append(
            Finding(
                "stale-build-cache",
                "error",
                f"{cache.path} was made for another configuration that CMake keeps: "
                + "; ".join(kept),
                clean_fix(config.project.path),
                subject="cmake cache",
                path=cache.path,
            )
        )
    if replaced:
        out.append(
            Finding(
                "stale-build-cache",
                "info",
                f"{cache.path} was configured with other values; this build's configure step "
                "passes the new ones with -D, which replace them: " + "; ".join(replaced),
                "nothing to do: CMake rebuilds what the new values change",
                subject="cmake cache",
                path=cache.path,
            )
        )
    return out


def _cmake_defines(config: BuildConfig) -> dict[str, str]:
    """The cache values the configure step sets, from its ``-DKEY[:TYPE]=VALUE`` arguments."""
    out = {}
    for arg in config.cmake_args:
        if arg.startswith("-D") and "=" in arg:
            key, value = arg[2:].split("=", 1)
            out[key.split(":")[0]] = value
    return out


def _same_path(a: str, b: str, tree: TreeFacts) -> bool:
    return a == b or tree.realpaths.get(a, a) == tree.realpaths.get(b, b)


_PATHS = ("CMAKE_CUDA_COMPILER", "CMAKE_CUDA_HOST_COMPILER", "PYTHON_EXECUTABLE")
_LAUNCH = (
    "CMAKE_C_COMPILER_LAUNCHER",
    "CMAKE_CXX_COMPILER_LAUNCHER",
    "CMAKE_CUDA_COMPILER_LAUNCHER",
)

_Diff = tuple[str, str | None, str]  # key, cached value (None: not cached), requested value


def _diff_text(diff: _Diff) -> str:
    key, have, want = diff
    return f"{key}: cached {'none' if have is None else have or '(empty)'}, requested {want}"


def _cmake_diffs(config: BuildConfig, tree: TreeFacts, cache: BuildCache) -> list[_Diff]:
    cached = cache.values
    diffs: list[_Diff] = []
    want_all = _expected(config)
    if config.project.kind == "cmake":  # a launcher cached and no longer asked for stays
        for key in _LAUNCH:
            if cached.get(key) and key not in want_all:
                diffs.append((key, cached[key], "none"))
    for key, want in want_all.items():
        have = cached.get(key)
        if key == "PYTHON_EXECUTABLE" and have is None:
            have = cached.get("Python_EXECUTABLE") or cached.get("Python3_EXECUTABLE")
        if have is None:
            if key in _LAUNCH:
                diffs.append((key, None, want))
            continue
        if key == "TORCH_CUDA_ARCH_LIST":
            same = _arch_set(have) == _arch_set(want)
        elif key == "CMAKE_CUDA_ARCHITECTURES":
            same = set(re.split(r"[;\s]+", have.strip())) == set(re.split(r"[;\s]+", want))
        elif key in _PATHS or key in _LAUNCH:
            same = _same_path(have, want, tree)
        elif key.startswith(("USE_", "BUILD_")) or (_is_bool(have) and _is_bool(want)):
            same = _switch(have) == _switch(want)
        else:
            same = have.strip() == want.strip()
        if not same:
            diffs.append((key, have, want))
    return diffs


def _ninja_diffs(config: BuildConfig, tree: TreeFacts, cache: BuildCache) -> list[str]:
    cached = cache.values
    diffs = []
    have_archs = cached.get("TORCH_CUDA_ARCH_LIST")
    if have_archs and config.arch_list:
        want = ";".join(a.replace("+PTX", "") for a in config.arch_list)
        if _arch_set(have_archs) != _arch_set(want):
            diffs.append(f"CUDA archs: cached {have_archs}, requested {want}")
    nvcc = cached.get("nvcc")
    if nvcc and config.cuda_home:
        sep = "\\" if "\\" in config.cuda_home else "/"
        want_nvcc = config.cuda_home.rstrip(sep) + f"{sep}bin{sep}nvcc"
        if not _same_path(nvcc, want_nvcc, tree) and not nvcc.startswith(config.cuda_home):
            diffs.append(f"nvcc: cached {nvcc}, requested {want_nvcc}")
    return diffs
