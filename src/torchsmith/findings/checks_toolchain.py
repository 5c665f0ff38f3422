"""Checks about CUDA toolkits and host compilers (they matter for building, not for wheels)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from torchsmith.findings.common import Context, major_minor
from torchsmith.probe.model import CudaToolkitInfo, Finding, Probe, ToolInfo
from torchsmith.util.envvars import setting

WHEELS_NEED_NO_TOOLKIT = (
    "pip/uv wheels bundle the CUDA runtime and need only the driver; a toolkit is needed only "
    "to build PyTorch or CUDA extensions"
)


def _selected(probe: Probe) -> CudaToolkitInfo | None:
    for toolkit in probe.cuda_toolkits:
        if toolkit.selected:
            return toolkit
    return None


def check_toolkit_present(probe: Probe, ctx: Context) -> Iterator[Finding]:
    if probe.cuda_toolkits or not any(g.vendor == "nvidia" for g in probe.gpus):
        return
    yield Finding(
        "cuda-toolkit-not-found",
        "info",
        "no CUDA toolkit (nvcc) found",
        f"nothing to do for running PyTorch: {WHEELS_NEED_NO_TOOLKIT}. To build extensions, "
        "install the toolkit matching torch's CUDA version and set CUDA_HOME (for a CUDA 13 "
        "torch, pip's nvidia-cuda-nvcc of the same version also brings nvcc; the CUDA 11/12 "
        "wheels do not)",
        subject="cuda toolkit",
    )


def check_selected_toolkit_is_whole(probe: Probe, ctx: Context) -> Iterator[Finding]:
    toolkit = _selected(probe)
    if toolkit is None or toolkit.headers is not False:
        return
    whole = [t for t in probe.cuda_toolkits if t.headers and t.version == toolkit.version]
    better = whole[0].root if whole else None
    yield Finding(
        "cuda-toolkit-not-found",
        "warning",
        f"the CUDA toolkit a build would use ({toolkit.root}, found via "
        f"{', '.join(toolkit.found_via) or '?'}) has no CUDA headers (include/cuda_runtime.h): "
        "extension builds fail with 'cuda_runtime.h: No such file or directory'",
        setting(probe.host.os, "CUDA_HOME", better)
        if better
        else "set CUDA_HOME to a complete CUDA toolkit",
        subject="cuda toolkit",
    )


def check_toolkit_targets_gpu(probe: Probe, ctx: Context) -> Iterator[Finding]:
    working = [t for t in probe.cuda_toolkits if t.version and not t.error]
    if not working:
        return
    for gpu in probe.gpus:
        if gpu.vendor != "nvidia" or not gpu.compute_capability:
            continue
        sm = "sm_" + gpu.compute_capability.replace(".", "")
        able = [t for t in working if sm in _targets(t, ctx)]
        if able:
            continue
        versions = ", ".join(sorted({t.version or "?" for t in working}))
        yield Finding(
            "toolkit-too-old-for-arch",
            "warning",
            f"no installed CUDA toolkit ({versions}) can compile for GPU {gpu.index} "
            f"({gpu.name}, {sm}): source builds and CUDA extensions will fail with "
            f"'Unsupported gpu architecture'",
            f"only for building: install a toolkit that targets {sm} "
            f"({_toolkits_for(sm, ctx, working)}). {WHEELS_NEED_NO_TOOLKIT}",
            subject=f"gpu {gpu.index}",
        )


def _targets(toolkit: CudaToolkitInfo, ctx: Context) -> tuple[str, ...]:
    if toolkit.sm_targets:
        return toolkit.sm_targets
    if ctx.kb is None or not toolkit.version:
        return ()
    try:
        known = ctx.kb.toolkit(toolkit.version)
    except Exception:  # noqa: BLE001
        return ()
    return tuple(known.sm_targets) if known else ()


def _toolkits_for(sm: str, ctx: Context, installed: list[CudaToolkitInfo]) -> str:
    if ctx.kb is None:
        return "see the CUDA release notes"
    known = [t.version for t in installed if major_minor(t.version)]
    newest = max(known, key=lambda v: major_minor(v) or (0, 0), default=None)
    try:
        return str(ctx.kb.toolkits_for_text([sm], have=newest))
    except Exception:  # noqa: BLE001
        return "see the CUDA release notes"


def check_toolkit_matches_torch(probe: Probe, ctx: Context) -> Iterator[Finding]:
    toolkit, torch = _selected(probe), probe.torch
    if toolkit is None or torch is None or not torch.cuda or not toolkit.version:
        return
    have, need = major_minor(toolkit.version), major_minor(torch.cuda)
    if have is None or need is None or have == need:
        return
    major = have[0] != need[0]
    yield Finding(
        "toolkit-torch-cuda-mismatch",
        "warning" if major else "info",
        f"the CUDA toolkit a build would use ({toolkit.version} at {toolkit.root}) differs from "
        f"torch's CUDA {torch.cuda}"
        + (
            ": building CUDA extensions fails (torch refuses a different CUDA major)"
            if major
            else ": extension builds warn but usually work"
        ),
        f"for building extensions, install CUDA {need[0]}.{need[1]} and point CUDA_HOME at it. "
        "Running torch is unaffected (wheels bundle their CUDA runtime)",
        subject="cuda toolkit",
    )


def check_nvcc_path_vs_cuda_home(probe: Probe, ctx: Context) -> Iterator[Finding]:
    on_path = [t for t in probe.cuda_toolkits if "PATH" in t.found_via]
    homes = [t for t in probe.cuda_toolkits if {"CUDA_HOME", "CUDA_PATH"} & set(t.found_via)]
    if not on_path or not homes:
        return
    path_tk, home_tk = on_path[0], homes[0]
    if _same_dir(path_tk.root, home_tk.root):
        return
    var = "CUDA_HOME" if "CUDA_HOME" in home_tk.found_via else "CUDA_PATH"
    yield Finding(
        "toolkit-torch-cuda-mismatch",
        "warning",
        f"nvcc on PATH ({path_tk.nvcc}, CUDA {path_tk.version}) is not the toolkit {var} "
        f"names ({home_tk.root}, CUDA {home_tk.version}): builds mix headers and compilers",
        f"make them agree: put {Path(home_tk.root) / 'bin'} first on PATH, or set {var} to "
        f"{path_tk.root}",
        subject="cuda toolkit",
    )


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except OSError:
        return a == b


def check_host_compiler(probe: Probe, ctx: Context) -> Iterator[Finding]:
    toolkit = _selected(probe)
    if toolkit is None or not toolkit.version or ctx.kb is None:
        return
    try:
        known = ctx.kb.toolkit(toolkit.version)
    except Exception:  # noqa: BLE001
        return
    if known is None:
        return
    for compiler in probe.compilers:
        problem = _compiler_problem(compiler, known)
        if problem is None:
            continue
        yield Finding(
            "unsupported-host-compiler",
            "warning",
            f"{compiler.name} {compiler.version} is outside what CUDA {toolkit.version}'s nvcc "
            f"accepts ({problem}): nvcc stops with 'unsupported ... version'",
            f"install a supported {compiler.name} and pass it to builds (CUDAHOSTCXX / "
            "NVCC_CCBIN / -ccbin), or use a CUDA toolkit whose range includes it",
            subject=compiler.name,
        )


def _compiler_problem(compiler: ToolInfo, known: object) -> str | None:
    if not compiler.version or compiler.error:
        return None
    major = _leading_int(compiler.version)
    if compiler.name in ("gcc", "g++"):
        limit = getattr(known, "max_gcc_major", None)
        return f"gcc up to {limit}" if limit and major and major > limit else None
    if compiler.name in ("clang", "clang++"):
        limit = getattr(known, "max_clang_major", None)
        return f"clang up to {limit}" if limit and major and major > limit else None
    if compiler.name in ("msvc", "cl"):
        msc = compiler.details.get("msc_ver")
        low, high = getattr(known, "msc_ver_min", None), getattr(known, "msc_ver_max", None)
        if msc and msc.isdigit() and low and high and not low <= int(msc) <= high:
            return f"_MSC_VER {low}-{high}, this is {msc}"
    return None


def _leading_int(text: str) -> int | None:
    match = re.match(r"\s*(\d+)", text)
    return int(match.group(1)) if match else None
