"""Pure checks of someone's build configuration against a target machine and a source tree.

Each check reads an :class:`ExtractedConfig`, the target machine (plan's ``MachineFacts``), the
knowledge base and the known build switches, and yields :class:`LineFinding` values: a finding of
the shared taxonomy plus the line to change.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from torchsmith.binaries.archs import parse_compute_capability, runs_on
from torchsmith.knowledge import Knowledge
from torchsmith.knowledge.build_facts import load_build_facts
from torchsmith.knowledge.compat import (
    arch_list_tokens,
    sm_entry,
    specific_entry_problem,
    specific_kind,
)
from torchsmith.plan.model import GpuTarget, MachineFacts
from torchsmith.probe.model import Finding
from torchsmith.review.extract import ExtractedConfig, Setting
from torchsmith.review.switches import BuildSwitches

# TORCH_CUDA_ARCH_LIST's named architectures (torch.utils.cpp_extension._get_cuda_arch_flags and
# PyTorch's cmake/Modules_CUDA_fix select_compute_arch.cmake).
NAMED_ARCHES: dict[str, str] = {
    "kepler+tesla": "3.7",
    "kepler": "3.5+PTX",
    "maxwell+tegra": "5.3",
    "maxwell": "5.0;5.2+PTX",
    "pascal": "6.0;6.1+PTX",
    "volta+tegra": "7.2",
    "volta": "7.0+PTX",
    "turing": "7.5+PTX",
    "ampere+tegra": "8.7",
    "ampere": "8.0;8.6+PTX",
    "ada": "8.9+PTX",
    "hopper": "9.0+PTX",
}

ARCH_KEYS = ("TORCH_CUDA_ARCH_LIST",)
CMAKE_ARCH_KEYS = ("CMAKE_CUDA_ARCHITECTURES", "CUDA_ARCHITECTURES")
TOOLKIT_KEYS = (
    "CUDA_TOOLKIT_ROOT_DIR",
    "CUDAToolkit_ROOT",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_ROOT",
    "CMAKE_CUDA_COMPILER",
    "CUDACXX",
    "CUDA_NVCC_EXECUTABLE",
    "PATH",
)
FLAG_KEYS = ("CMAKE_CUDA_FLAGS", "CUDAFLAGS", "NVCC_FLAGS", "NVCC_APPEND_FLAGS", "TORCH_NVCC_FLAGS")
CXX_FLAG_KEYS = ("CMAKE_CXX_FLAGS", "CMAKE_C_FLAGS", "CFLAGS", "CXXFLAGS", "CL", "_CL_")
JOB_KEYS = ("MAX_JOBS", "CMAKE_BUILD_PARALLEL_LEVEL", "jobs")


@dataclass(frozen=True)
class LineFinding:
    finding: Finding
    line: int | None
    section: int = 0
    key: str | None = None  # the setting it is about


@dataclass(frozen=True)
class Target:
    """What the reviewed build must fit."""

    facts: MachineFacts
    ram_bytes: int | None = None
    cores: int | None = None


Check = Callable[[ExtractedConfig, Target, Knowledge, BuildSwitches], Iterable[LineFinding]]


def run_checks(
    config: ExtractedConfig, target: Target, kb: Knowledge, switches: BuildSwitches
) -> list[LineFinding]:
    out: list[LineFinding] = []
    for check in CHECKS:
        out.extend(check(config, target, kb, switches))
    for line, problem in config.problems:
        out.append(
            _at(
                line,
                config,
                None,
                "other",
                "warning",
                f"this line cannot be read as the shell would: {problem}",
                "balance the quotes on this line (the shell would stop here)",
            )
        )
    return sorted(out, key=lambda f: (f.line or 0, f.finding.severity))


def _at(  # noqa: PLR0917 (one call shape for every check)
    line: int | None,
    config: ExtractedConfig,
    key: str | None,
    category: str,
    severity: str,
    message: str,
    fix: str,
    source: str | None = None,
) -> LineFinding:
    finding = Finding(
        category=category,  # type: ignore[arg-type]
        severity=severity,  # type: ignore[arg-type]
        message=message,
        fix=fix,
        subject=key,
        source=source,
    )
    return LineFinding(finding, line, config.section, key)


# -- archs -------------------------------------------------------------------------------------
def parse_arch_list(value: str) -> tuple[list[str], list[str]] | None:
    """TORCH_CUDA_ARCH_LIST → (sass, ptx) arch names; None when a token is not an arch."""
    sass: list[str] = []
    ptx: list[str] = []
    for token in arch_list_tokens(value.strip().strip("\"'")):
        expanded = NAMED_ARCHES.get(token.lower())
        if expanded:
            more = parse_arch_list(expanded)
            assert more is not None
            sass += more[0]
            ptx += more[1]
            continue
        match = re.fullmatch(r"(\d{1,2})\.(\d)([af]?)(\+PTX)?", token, re.IGNORECASE)
        if not match:
            return None
        arch = f"{match.group(1)}{match.group(2)}{match.group(3).lower()}"
        sass.append(f"sm_{arch}")
        if match.group(4):
            ptx.append(f"compute_{arch}")
    return sass, ptx


def parse_cmake_archs(value: str) -> tuple[list[str], list[str]] | None:
    """CMAKE_CUDA_ARCHITECTURES ("89", "89-real", "90a-virtual", "native") → (sass, ptx)."""
    sass: list[str] = []
    ptx: list[str] = []
    for token in arch_list_tokens(value.strip().strip("\"'")):
        if token.lower() in ("native", "all", "all-major", "off"):
            return None
        match = re.fullmatch(r"(\d{2,3}[af]?)(-real|-virtual)?", token, re.IGNORECASE)
        if not match:
            return None
        arch = match.group(1).lower()
        if match.group(2) != "-virtual":
            sass.append(f"sm_{arch}")
        if match.group(2) != "-real":
            ptx.append(f"compute_{arch}")
    return sass, ptx


def _gpu_label(gpu: GpuTarget) -> str:
    return f"{gpu.name} (compute capability {gpu.compute_capability})"


def check_archs(
    config: ExtractedConfig, target: Target, kb: Knowledge, switches: BuildSwitches
) -> Iterator[LineFinding]:
    gpus = [g for g in target.facts.gpus if g.compute_capability]
    for keys, parse in ((ARCH_KEYS, parse_arch_list), (CMAKE_ARCH_KEYS, parse_cmake_archs)):
        setting = config.get(*keys)
        if setting is None:
            continue
        parsed = parse(setting.value)
        if parsed is None:
            if setting.value.strip().lower() not in ("native", "all", "all-major"):
                yield _at(
                    setting.line,
                    config,
                    setting.key,
                    "arch-not-compiled",
                    "error",
                    f"{setting.key}={setting.value} is not a list of compute capabilities",
                    _arch_fix(setting.key, gpus),
                )
            continue
        sass, ptx = parsed
        if setting.key in CMAKE_ARCH_KEYS:
            yield from _cmake_refuses(setting, config, target, kb, sass + ptx)
        for name in dict.fromkeys(sass):
            problem = specific_entry_problem(sm_entry(name), kb)
            if problem:
                yield _at(
                    setting.line,
                    config,
                    setting.key,
                    "unknown-build-option",
                    "error",
                    f"{setting.key}={setting.value}: {name} cannot be built: {problem}",
                    f"write {sm_entry(name)[:-1]} instead"
                    if setting.key in ARCH_KEYS
                    else f"write {name.removeprefix('sm_')[:-1]} instead",
                )
        for gpu in gpus:
            assert gpu.compute_capability is not None
            verdict = runs_on(sass, ptx, gpu.compute_capability)
            if not verdict.ok:
                yield _at(
                    setting.line,
                    config,
                    setting.key,
                    "arch-not-compiled",
                    "error",
                    f"{setting.key}={setting.value} builds no code that runs on the "
                    f"{_gpu_label(gpu)}: the build would fail at run time with 'no kernel "
                    "image is available'",
                    _arch_fix(setting.key, gpus),
                )
            elif verdict.kind == "ptx":
                yield _at(
                    setting.line,
                    config,
                    setting.key,
                    "arch-not-compiled",
                    "warning",
                    f"{setting.key}={setting.value} reaches the {_gpu_label(gpu)} only through "
                    "PTX compiled at run time (slow first run, slower kernels)",
                    _arch_fix(setting.key, gpus),
                )


# one entry of an arch list, as TORCH_CUDA_ARCH_LIST (8.6, 9.0a, 8.9+PTX) or CMake (86, 90-real)
# writes it
_ARCH_WORD = re.compile(r"(?i)^(?:\d{1,2}\.\d[af]?(?:\+PTX)?|\d{2,3}[af]?(?:-real|-virtual)?)$")


def check_unquoted_list(
    config: ExtractedConfig, target: Target, kb: Knowledge, switches: BuildSwitches
) -> Iterator[LineFinding]:
    """In bash and PowerShell an unquoted ``;`` ends the statement: ``export
    TORCH_CUDA_ARCH_LIST=8.6;8.9`` sets 8.6, then bash runs ``8.9`` as a command, which fails
    (and stops a ``set -e`` script), or PowerShell prints it; the build gets the first entry."""
    if config.dialect == "cmd":  # cmd does not split on ;
        return
    keys = (*ARCH_KEYS, *CMAKE_ARCH_KEYS)
    cut: dict[Setting, list[str]] = {}  # the setting the ; ended -> the entries run as commands
    for command in config.commands:
        if command.tool != "other" or not _ARCH_WORD.match(command.argv[0]):
            continue
        last = max(command.line, command.end_line)
        before = [s for s in config.settings if s.key in keys and command.line <= s.line <= last]
        if before:
            cut.setdefault(before[-1], []).append(command.argv[0])
    for setting, lost in cut.items():
        whole = ";".join([setting.value, *lost])
        if setting.via != "env":
            fix = f'quote the whole argument: "-D{setting.key}={whole}"'
        elif config.dialect == "powershell":
            fix = f'quote the whole list: $env:{setting.key} = "{whole}"'
        else:
            fix = f'quote the whole list: {setting.key}="{whole}"'
        words = " and ".join(lost)
        many = len(lost) > 1
        rest = (
            f"PowerShell prints {words} as {'values' if many else 'a value'}"
            if config.dialect == "powershell"
            else f"bash runs {words} as {'commands' if many else 'a command'} ('command not found')"
        )
        yield _at(
            setting.line,
            config,
            setting.key,
            "other",
            "error",
            f"the unquoted ; ends the statement at {setting.key}={setting.value}: the build gets "
            f"{setting.value} only, and {rest}",
            fix,
        )


def _cmake_refuses(
    setting: Setting, config: ExtractedConfig, target: Target, kb: Knowledge, names: list[str]
) -> Iterator[LineFinding]:
    """An a/f entry the machine's CMake refuses at configure (arch_suffix's cmake versions; the
    same check as build's configuration). Said only where the CMake's version is known."""
    cmake = target.facts.cmake
    if cmake is None:
        return
    for suffix in sorted({n[-1] for n in names if n[-1] in "af"}):
        if kb.cmake_takes(suffix, cmake) is not False:
            continue
        firsts = kb.cmake_firsts(suffix)
        yield _at(
            setting.line,
            config,
            setting.key,
            "unknown-build-option",
            "error",
            f"{setting.key}={setting.value}: CMake {cmake}, this machine's, refuses "
            f"{specific_kind(suffix)} entries at configure; the first CMakes that take them: "
            f"{' and '.join(firsts) or 'newer ones'}",
            f'install a CMake that takes them (pip install "cmake>={firsts[-1]}")'
            if firsts
            else "install a newer CMake",
        )


def _arch_fix(key: str, gpus: list[GpuTarget]) -> str:
    ccs = sorted({g.compute_capability for g in gpus if g.compute_capability})
    if not ccs:
        return f"set {key} to the compute capabilities of the GPUs that will run the build"
    cmake = key in CMAKE_ARCH_KEYS
    value = ";".join(cc.replace(".", "") for cc in ccs) if cmake else ";".join(ccs)
    return f"set {key}={value}"


# -- toolkit -----------------------------------------------------------------------------------
_TOOLKIT_VERSION = re.compile(r"(?i)cuda[\\/ _-]*(?:toolkit[\\/ _-]*)?[\\/]?v?(\d{2})\.(\d)")


def toolkit_version_of(value: str) -> str | None:
    """The CUDA version a toolkit path names: C:\\...\\CUDA\\v12.4, /usr/local/cuda-12.8."""
    match = _TOOLKIT_VERSION.search(value)
    return f"{int(match.group(1))}.{int(match.group(2))}" if match else None


def toolkit_settings(config: ExtractedConfig) -> list[tuple[Setting, str]]:
    """Every effective setting that picks a toolkit, with the CUDA version it names."""
    out: list[tuple[Setting, str]] = []
    effective = config.effective()
    for key in TOOLKIT_KEYS:
        setting = effective.get(key)
        version = toolkit_version_of(setting.value) if setting is not None else None
        if setting is not None and version:
            out.append((setting, version))
    return sorted(out, key=lambda pair: pair[0].line)


def check_toolkit(
    config: ExtractedConfig, target: Target, kb: Knowledge, switches: BuildSwitches
) -> Iterator[LineFinding]:
    found = toolkit_settings(config)
    for setting, version in found:
        yield from _toolkit_vs_gpus(config, target, kb, setting, version)
    if not found:
        return
    setting, version = found[-1]
    toolkit = kb.toolkit(version)
    arch = config.get(*ARCH_KEYS)
    parsed = parse_arch_list(arch.value) if arch else None
    if toolkit is not None and arch is not None and parsed is not None:
        unknown = [  # an entry that cannot exist at all (8.6a) has its own finding
            a
            for a in parsed[0]
            if not kb.emits(toolkit, a) and not specific_entry_problem(sm_entry(a), kb)
        ]
        if unknown:
            yield _at(
                arch.line,
                config,
                arch.key,
                "toolkit-too-old-for-arch",
                "error",
                f"CUDA {version} (line {setting.line}) cannot compile {', '.join(unknown)} "
                f"asked for by {arch.key}: nvcc stops with 'Unsupported gpu architecture'",
                (
                    "use a toolkit that can compile them: "
                    f"{kb.toolkits_for_text(unknown, version)}; "
                    if kb.toolkits_for(unknown)
                    else ""
                )
                + f"or drop them from {arch.key}",
            )


def _toolkit_vs_gpus(
    config: ExtractedConfig, target: Target, kb: Knowledge, setting: Setting, version: str
) -> Iterator[LineFinding]:
    toolkit = kb.toolkit(version)
    if toolkit is None:
        return
    for gpu in target.facts.gpus:
        if not gpu.compute_capability:
            continue
        sm = "sm_" + gpu.compute_capability.replace(".", "")
        if sm in toolkit.sm_targets:
            continue
        fix = (
            f"use a toolkit whose nvcc can compile for {sm}: {kb.toolkits_for_text([sm], version)}"
            if kb.toolkits_for([sm])
            else kb.toolkits_for_text([sm])
        )
        yield _at(
            setting.line,
            config,
            setting.key,
            "toolkit-too-old-for-arch",
            "error",
            f"{setting.key} selects CUDA {version}, whose nvcc cannot compile for {sm}, the "
            f"{_gpu_label(gpu)}",
            fix,
            source=toolkit.sources[0] if toolkit.sources else None,
        )
    known = target.facts.cuda_toolkits
    if known and target.facts.origin != "what-if" and version not in known:
        yield _at(
            setting.line,
            config,
            setting.key,
            "cuda-toolkit-not-found",
            "warning",
            f"{setting.key} points at CUDA {version}, which is not installed on the target "
            f"machine (installed: {', '.join(known)})",
            "point it at an installed toolkit that can target the GPUs",
        )


def check_host_compiler_flags(
    config: ExtractedConfig, target: Target, kb: Knowledge, switches: BuildSwitches
) -> Iterator[LineFinding]:
    for key in FLAG_KEYS:
        setting = config.get(key)
        if setting is None or "allow-unsupported-compiler" not in setting.value:
            continue
        detail = ""
        found = toolkit_settings(config)
        toolkit = kb.toolkit(found[-1][1]) if found else None
        msc = target.facts.msc_ver
        if toolkit is not None and msc is not None:
            inside = toolkit.msc_ver_min <= msc <= toolkit.msc_ver_max
            detail = (
                f"; the target's MSVC (_MSC_VER {msc}) is inside CUDA {toolkit.version}'s "
                "range, so the flag is not needed"
                if inside
                else f"; the target's MSVC (_MSC_VER {msc}) is outside CUDA {toolkit.version}'s "
                f"range {toolkit.msc_ver_min}-{toolkit.msc_ver_max}: a real mismatch"
            )
        yield _at(
            setting.line,
            config,
            key,
            "unsupported-host-compiler",
            "warning",
            f"-allow-unsupported-compiler in {key} hides a host-compiler mismatch instead of "
            f"fixing it; builds that pass it can miscompile or fail later{detail}",
            "remove the flag and use a host compiler inside the toolkit's supported range "
            "(or a toolkit that supports your compiler)",
        )


def check_generator_flags(
    config: ExtractedConfig, target: Target, kb: Knowledge, switches: BuildSwitches
) -> Iterator[LineFinding]:
    generator = config.get("generator", "CMAKE_GENERATOR")
    use_ninja = config.get("USE_NINJA")
    ninja = (generator is not None and "ninja" in generator.value.lower()) or (
        generator is None
        and (use_ninja is None or use_ninja.value not in ("0", "OFF", "off"))
        and any(c.tool in ("setup.py", "pip") for c in config.commands)
    )
    if not ninja:
        return
    for key in CXX_FLAG_KEYS:
        setting = config.get(key)
        if setting is None or not re.search(r"(^|\s)[/-]MP\d*(\s|$)", setting.value):
            continue
        yield _at(
            setting.line,
            config,
            key,
            "other",
            "warning",
            f"/MP in {key} does nothing under Ninja: Ninja hands cl.exe one source file per "
            "call and runs the calls in parallel itself",
            f"remove /MP from {key}; set the parallelism with MAX_JOBS (or ninja -j)",
        )


def check_switches(
    config: ExtractedConfig, target: Target, kb: Knowledge, switches: BuildSwitches
) -> Iterator[LineFinding]:
    effective = config.effective()
    for key, setting in effective.items():
        if not switches.is_switch_name(key):
            continue
        verdict = switches.lookup(key)
        if verdict.known:
            continue
        yield _at(
            setting.line,
            config,
            key,
            "unknown-build-option",
            "warning",
            f"{key} is not a build option of {switches.label}: {verdict.reason}",
            f"remove {key}"
            + (f" (did you mean {verdict.suggestion}?)" if verdict.suggestion else ""),
            source=switches.source,
        )
    os_name = target.facts.os
    for key, setting in effective.items():
        if os_name in switches.platform_off.get(key, ()) and _is_on(setting.value):
            yield _at(
                setting.line,
                config,
                key,
                "other",
                "warning",
                f"{key}={setting.value} has no effect on {os_name}: PyTorch's CMake turns it off "
                f"there (its condition needs {'Linux' if os_name == 'windows' else 'not macOS'})",
                f"remove {key}",
                source=switches.source,
            )
    for parent, children in switches.dependents.items():
        parent_setting = effective.get(parent)
        if parent_setting is None or not _is_off(parent_setting.value):
            continue
        for child in children:
            child_setting = effective.get(child)
            if child_setting is not None and _is_on(child_setting.value):
                yield _at(
                    child_setting.line,
                    config,
                    child,
                    "other",
                    "warning",
                    f"{child}={child_setting.value} has no effect: {parent} is off "
                    f"(line {parent_setting.line}) and {child} depends on it",
                    f"remove {child}, or turn {parent} on",
                    source=switches.source,
                )
    distributed = effective.get("USE_DISTRIBUTED")
    if distributed is not None and _is_off(distributed.value):
        yield _at(
            distributed.line,
            config,
            "USE_DISTRIBUTED",
            "stale-build-cache",
            "info",
            "switching USE_DISTRIBUTED off in a tree that was configured with it on leaves the "
            "old value in build/CMakeCache.txt (PyTorch does not re-run CMake while that file "
            "exists): link errors on c10d symbols follow",
            "clean the build directory when you change a USE_ switch (torchsmith build --clean)",
        )
    cuda = effective.get("USE_CUDA")
    arch = config.get(*ARCH_KEYS, *CMAKE_ARCH_KEYS)
    if cuda is not None and _is_off(cuda.value) and arch is not None:
        yield _at(
            arch.line,
            config,
            arch.key,
            "other",
            "warning",
            f"{arch.key} is set but USE_CUDA is off (line {cuda.line}): nothing is compiled "
            "for a GPU",
            "drop USE_CUDA=0 to build for the GPU, or drop the arch list",
        )


def _is_off(value: str) -> bool:
    return value.strip().strip("\"'").upper() in ("0", "OFF", "FALSE", "NO", "N")


def _is_on(value: str) -> bool:
    return value.strip().strip("\"'").upper() in ("1", "ON", "TRUE", "YES", "Y")


def jobs_that_fit(target: Target) -> int | None:
    """The CUDA compile jobs the target's RAM holds, by the budget `torchsmith build` uses
    (knowledge/data/build.toml); None where the RAM is not known."""
    if target.ram_bytes is None:
        return None
    return load_build_facts().jobs_that_fit(target.ram_bytes / 1024**3, cuda=True)


def check_jobs(
    config: ExtractedConfig, target: Target, kb: Knowledge, switches: BuildSwitches
) -> Iterator[LineFinding]:
    setting = config.get(*JOB_KEYS)
    fits = jobs_that_fit(target)
    if setting is None or target.ram_bytes is None or fits is None:
        return
    try:
        jobs = int(setting.value.strip().strip("\"'"))
    except ValueError:
        return
    facts = load_build_facts()
    ram_gb = target.ram_bytes / 1024**3  # GB as build counts them
    if jobs <= fits:
        return
    need = jobs * facts.job_gb(cuda=True) + facts.reserve_gb
    yield _at(
        setting.line,
        config,
        setting.key,
        "compile-oom",
        "warning",
        f"{jobs} parallel jobs with nvcc need about {need:.0f} GB at peak "
        f"({facts.job_gb(cuda=True):g} GB per CUDA compile job, {facts.reserve_gb:g} GB kept "
        f"free); the target has {ram_gb:.0f} GB: compilers get killed or the machine swaps",
        f"set {setting.key if setting.key != 'jobs' else 'MAX_JOBS'}={fits}",
        source="https://github.com/pytorch/pytorch/pull/130443",
    )


_UNQUOTED_SPACE_PATH = re.compile(r"(?i)^[A-Z]:\\(Program|NVIDIA|Users\\[^\\]+)$")


def check_paths(
    config: ExtractedConfig, target: Target, kb: Knowledge, switches: BuildSwitches
) -> Iterator[LineFinding]:
    for setting in config.settings:
        if setting.via == "cmake-define" and _UNQUOTED_SPACE_PATH.match(setting.value):
            yield _at(
                setting.line,
                config,
                setting.key,
                "other",
                "error",
                f"-D{setting.key}={setting.value} is cut at a space: the path was not quoted, "
                "so CMake gets the rest as another argument",
                f'quote the whole argument: "-D{setting.key}=<the full path>"',
            )
    if target.facts.os != "windows":
        return
    limit = 100
    for key in ("build_dir", "source_dir"):
        path_setting = config.get(key)
        if path_setting is not None and len(path_setting.value) > limit:
            yield _at(
                path_setting.line,
                config,
                key,
                "windows-path-length",
                "warning",
                f"the {key.replace('_', ' ')} is {len(path_setting.value)} characters long; "
                "PyTorch's deepest build outputs add ~150 more and Windows stops at 260 (MAX_PATH)",
                "build from a short path such as C:\\src\\pytorch, or enable long paths",
            )


def check_cmd_quotes(
    config: ExtractedConfig, target: Target, kb: Knowledge, switches: BuildSwitches
) -> Iterator[LineFinding]:
    if config.dialect != "cmd":
        return
    for setting in config.settings:
        value = setting.value
        if setting.via == "env" and len(value) >= 2 and value[0] == value[-1] == '"':
            yield _at(
                setting.line,
                config,
                setting.key,
                "other",
                "warning",
                f"in cmd, set {setting.key}={value} keeps the quotes as part of the value, so "
                f"the build reads {value} with its quotes",
                f'write set "{setting.key}={value[1:-1]}" (quotes around the whole assignment)',
            )


def check_platform(
    config: ExtractedConfig, target: Target, kb: Knowledge, switches: BuildSwitches
) -> Iterator[LineFinding]:
    """A Windows script judged against a Linux machine (or the reverse), or a CUDA build against
    an AMD or Intel GPU, gets that machine's facts: say so once, so the findings below are read
    for what they are."""
    os_name = target.facts.os
    gpus = target.facts.gpus
    cuda_keys = (*ARCH_KEYS, *CMAKE_ARCH_KEYS, "CUDA_HOME", "CUDA_PATH")
    others = [g.name for g in gpus if g.vendor in ("amd", "intel")]
    if others and not any(g.vendor == "nvidia" for g in gpus) and config.get(*cuda_keys):
        yield _at(
            None,
            config,
            None,
            "other",
            "warning",
            f"this script sets up a CUDA build, and the target machine's GPU is "
            f"{', '.join(others)}: a CUDA build cannot use it",
            "for an AMD GPU take the ROCm wheel, for an Intel GPU the xpu wheel (torchsmith plan); "
            "review the script against the NVIDIA machine it is for (--probe FILE from there)",
        )
    windows_script = config.dialect in ("cmd", "powershell")
    if windows_script == (os_name == "windows"):
        return
    if windows_script:
        message = (
            f"this is a {config.dialect} script, which runs on Windows, and the target machine "
            f"is {os_name}: the findings below use that machine's facts"
        )
        fix = "review it with the probe of the Windows machine that runs it (doctor --json there)"
    else:
        message = (
            "this is a bash script, and the target machine is Windows: under WSL the build runs "
            "on Linux, with WSL's toolkit and compiler"
        )
        fix = "review it with a probe taken inside WSL (torchsmith doctor --json run there)"
    yield _at(None, config, None, "other", "warning", message, fix)


CHECKS: tuple[Check, ...] = (
    check_platform,
    check_cmd_quotes,
    check_unquoted_list,
    check_archs,
    check_toolkit,
    check_host_compiler_flags,
    check_generator_flags,
    check_switches,
    check_jobs,
    check_paths,
)

__all__ = ["CHECKS", "LineFinding", "Target", "parse_compute_capability", "run_checks"]
