"""`torchsmith kb`: look facts up in the knowledge base, and check it against PyPI."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click

from torchsmith.binaries.archs import parse_arch
from torchsmith.commands.common import emit, json_option
from torchsmith.errors import InputError, UsageError
from torchsmith.util.inputs import read_input

if TYPE_CHECKING:
    from rich.console import Console

    from torchsmith.knowledge import CudaToolkit, GpuModel, Knowledge, TorchRelease
    from torchsmith.knowledge.model import AmdGpu, IntelGpu
    from torchsmith.knowledge.refresh import RefreshReport

MAX_KB_INPUT = 64 * 1024 * 1024  # a release list or index page is far smaller


@click.group()
def kb() -> None:
    """The knowledge base of GPUs, CUDA toolkits, drivers and torch releases."""


@dataclass(frozen=True)
class KbAnswer:
    """What the knowledge base says about one thing: its records, and the same as lines."""

    query: str
    kind: Literal["gpu", "amd_gpu", "intel_gpu", "architecture", "cuda_toolkit", "torch_release"]
    facts: Any  # the knowledge base's own record(s), or a mapping of them
    lines: tuple[str, ...]
    notes: tuple[str, ...] = ()


@kb.command()
@click.argument("what")
@json_option
def show(what: str, *, as_json: bool) -> None:
    """Show what the knowledge base says about a GPU (NVIDIA, AMD, Intel), an architecture
    (sm_90, compute_120), a CUDA version or a torch version.

    A bare X.Y that is both a CUDA version and a compute capability is the CUDA version; ask
    for the compute capability as sm_XY.
    """
    from torchsmith.knowledge import load_knowledge  # noqa: PLC0415 (fast --help)

    answer = lookup(load_knowledge(), what)
    emit("kb", answer, as_json=as_json, render=_render_answer)


def _render_answer(answer: KbAnswer, out: Console) -> None:
    for line in answer.lines:
        out.print(line, markup=False)
    for note in answer.notes:
        out.print(f"note: {note}", markup=False)


def lookup(base: Knowledge, what: str) -> KbAnswer:
    """The first reading of ``what`` the knowledge base has; UsageError when it has none."""
    if re.match(r"^\s*(sm|compute)_", what, re.IGNORECASE):
        arch = _architecture(base, what)
        if arch is None:
            raise UsageError(
                f"{what!r} is not an architecture the knowledge base knows",
                tip="write sm_XY or compute_XY with a compute capability X.Y, e.g. sm_90",
            )
        return arch
    gpu = base.find_gpu(what)
    if gpu is not None:
        return _nvidia_gpu(base, what, gpu)
    release = base.torch_release(what)
    if release is not None:
        return _torch_release(base, what, release)
    toolkit = base.toolkit(what) if re.fullmatch(r"\s*\d+\.\d+(\.\d+)*\s*", what) else None
    if toolkit is not None:
        return _toolkit(base, what, toolkit)
    if re.fullmatch(r"\s*\d{1,2}\.\d\s*", what):
        arch = _architecture(base, "sm_" + what.strip().replace(".", ""))
        if arch is not None:
            return dataclasses.replace(arch, query=what)
    amd = base.find_amd_gpu(what)
    if amd is not None:
        return _amd_gpu(base, what, amd)
    intel = base.find_intel_gpu(what)
    if intel is not None:
        return _intel_gpu(base, what, intel)
    close = base.suggest_gpus(what)
    hint = f"; close GPU names: {', '.join(close)}" if close else ""
    raise UsageError(
        f"{what!r} is not a known GPU, architecture, torch version or CUDA version{hint}",
        tip="give a GPU name (NVIDIA, AMD or Intel), sm_XY, a CUDA version (12.8) or a torch "
        "version (2.6)",
    )


def _source_line(base: Knowledge, key: str) -> str:
    src = base.sources.get(key)
    return f"  source: {src.title} <{src.url}> [{src.status}]" if src else f"  source: {key}"


def _nvidia_gpu(base: Knowledge, what: str, gpu: GpuModel) -> KbAnswer:
    lines = (
        f"{gpu.name}: compute capability {gpu.compute_capability} ({gpu.sm}), "
        f"{gpu.architecture}, {gpu.kind}",
        f"  CUDA toolkits that can target {gpu.sm}: {base.toolkits_for_text([gpu.sm])}",
        _source_line(base, gpu.source),
    )
    return KbAnswer(what, "gpu", gpu, lines)


def _amd_gpu(base: Knowledge, what: str, amd: AmdGpu) -> KbAnswer:
    kind = "consumer (Radeon)" if amd.consumer else "datacenter (Instinct)"
    lines = (
        f"{amd.name}: AMD GPU, LLVM target {amd.gfx} (HSA_OVERRIDE_GFX_VERSION "
        f"{amd.hsa_version}), {kind}",
        *(_source_line(base, key) for key in amd.sources),
    )
    return KbAnswer(what, "amd_gpu", amd, lines)


def _intel_gpu(base: Knowledge, what: str, intel: IntelGpu) -> KbAnswer:
    since = f" from torch {intel.torch_min}" if intel.torch_min else ""
    lines = (
        f"{intel.name}: Intel GPU, {intel.family}",
        f"  PyTorch xpu wheels support it{since} on {', '.join(intel.os)}",
        *(_source_line(base, key) for key in intel.sources),
    )
    return KbAnswer(what, "intel_gpu", intel, lines)


def _architecture(base: Knowledge, what: str) -> KbAnswer | None:
    """sm_XY / compute_XY (a/f too): the GPUs of that compute capability and the toolkits."""
    try:
        arch = parse_arch(what)
    except ValueError:
        return None
    sm = f"sm_{arch.number}{arch.variant}"  # sm_90a needs CUDA 12.0 where sm_90 takes 11.8
    gpus = [g.name for g in base.gpus if g.compute_capability == arch.compute_capability]
    toolkits = [t.version for t in base.toolkits_for([sm])]
    if not gpus and not base.toolkits_for([f"sm_{arch.number}"]):
        return None
    variant = {
        "a": f"arch-specific: runs only on compute capability {arch.compute_capability}",
        "f": f"family-specific: runs on {arch.major}.x GPUs from {arch.compute_capability} on",
        "": "",
    }[arch.variant]
    lines = (
        f"{arch.name}: compute capability {arch.compute_capability}"
        + (f" ({variant})" if variant else ""),
        f"  GPUs: {', '.join(gpus) or 'none in the knowledge base'}",
        f"  CUDA toolkits that can target {sm}: {base.toolkits_for_text([sm])}",
    )
    facts = {
        "arch": arch.name,
        "compute_capability": arch.compute_capability,
        "gpus": gpus,
        "cuda_toolkits": toolkits,
    }
    return KbAnswer(what, "architecture", facts, lines)


def _toolkit(base: Knowledge, what: str, toolkit: CudaToolkit) -> KbAnswer:
    lines = (
        f"CUDA {toolkit.version}: minimum driver on Linux {_known(toolkit.min_driver_linux)}, "
        f"on Windows {_known(toolkit.min_driver_windows)}",
        f"  nvcc targets: {' '.join(toolkit.sm_targets)}",
        f"  host compilers: gcc <= {toolkit.max_gcc_major}, clang <= "
        f"{toolkit.max_clang_major}, _MSC_VER {toolkit.msc_ver_min}-{toolkit.msc_ver_max}",
    )
    notes: tuple[str, ...] = ()
    sm = f"sm_{toolkit.version.replace('.', '')}"
    if what.strip() == toolkit.version and _architecture(base, sm) is not None:
        notes = (
            f"{toolkit.version} is also a compute capability: `torchsmith kb show {sm}` shows "
            "that architecture",
        )
    return KbAnswer(what, "cuda_toolkit", toolkit, lines, notes)


def _known(value: str | None) -> str:
    return value if value else "unknown (not in the knowledge base)"


def _torch_release(base: Knowledge, what: str, release: TorchRelease) -> KbAnswer:
    lines = [f"torch {release.version} ({release.date}), Requires-Python {release.requires_python}"]
    for platform, tags in release.python.items():
        default = release.pypi_default.get(platform) or "unknown"
        lines.append(f"  {platform}: Python {', '.join(tags)}; PyPI default {default}")
    lines.append(f"  index variants: {', '.join(release.variants)}")
    comp = base.companions(release.version)
    if comp:
        lines.append(f"  torchvision {comp['torchvision']}, torchaudio {comp['torchaudio']}")
    return KbAnswer(what, "torch_release", release, tuple(lines))


@kb.command()
@click.option(
    "--pypi-json",
    type=click.Path(path_type=Path),
    help="A saved https://pypi.org/pypi/torch/json instead of fetching it.",
)
@click.option(
    "--index-html",
    type=click.Path(path_type=Path),
    help="A saved https://download.pytorch.org/whl/torch/ page.",
)
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    help="Write TOML entries for new releases here (never into the package).",
)
@click.option("--offline-index", is_flag=True, help="Do not try download.pytorch.org.")
@json_option
def refresh(
    pypi_json: Path | None,
    index_html: Path | None,
    output: Path | None,
    offline_index: bool,
    *,
    as_json: bool,
) -> None:
    """Compare the shipped knowledge base with PyPI (and the PyTorch index) and report changes."""
    from torchsmith.errors import ToolError  # noqa: PLC0415
    from torchsmith.knowledge import load_knowledge  # noqa: PLC0415
    from torchsmith.knowledge import refresh as r  # noqa: PLC0415

    if output is not None:
        _check_output(output)
    base = load_knowledge()
    if pypi_json is not None:
        doc = r.parse_pypi_json(_read(pypi_json), origin=f"--pypi-json {pypi_json}")
    else:
        doc = r.parse_pypi_json(r.fetch(r.PYPI_TORCH_JSON))
    html = None
    if index_html is not None:
        html = _read(index_html).decode("utf-8", "replace")
        if not r.index_variants(html):  # else "no changes" would claim the variants were checked
            raise InputError(
                f"--index-html {index_html} lists no torch wheels: not a saved {r.PYTORCH_INDEX}",
                tip="save that page again, or leave out --index-html to fetch it",
            )
    elif not offline_index:
        try:
            html = r.fetch(r.PYTORCH_INDEX, timeout=10.0).decode("utf-8", "replace")
        except ToolError:
            html = None
    report = r.diff(base, doc, html)
    written = None
    if output is not None and report.new_releases:
        try:
            output.write_text(r.toml_for(report.new_releases), encoding="utf-8")
        except OSError as exc:
            raise _unwritable(output, exc) from None
        written = str(output)
    emit("kb", RefreshResult(report, written), as_json=as_json, render=_render_refresh)


@dataclass(frozen=True)
class RefreshResult:
    """The refresh report, and the file the new [[release]] entries went to (if any)."""

    report: RefreshReport
    output: str | None = None


def _render_refresh(result: RefreshResult, out: Console) -> None:
    report = result.report
    out.print(
        f"newest torch on PyPI: {report.newest_on_pypi}; "
        f"shipped data goes to {report.newest_shipped}",
        markup=False,
    )
    if not report.changes:
        out.print("no changes")
    for change in report.changes:
        out.print(f"  {change.text}", markup=False)
    if report.newest_cuda_pins:
        out.print(
            f"CUDA pins of torch {report.newest_on_pypi}: {'; '.join(report.newest_cuda_pins)}",
            markup=False,
        )
    for note in report.notes:
        out.print(f"note: {note}", markup=False)
    if result.output is not None:
        count = len(report.new_releases)
        out.print(f"wrote {count} [[release]] entries to {result.output}", markup=False)


def _check_output(output: Path) -> None:
    """Refuse an --output that cannot be written before any work (or network) is done."""
    if output.is_dir():
        raise UsageError(f"--output {output} is a directory", tip="give a file name for the TOML")
    parent = output.parent
    if not parent.is_dir():
        raise _unwritable(output, FileNotFoundError(2, "its folder does not exist"))


def _unwritable(output: Path, exc: OSError) -> InputError:
    return InputError(
        f"--output {output} cannot be written: {exc.strerror or exc}",
        tip="give a path in a folder that exists and that you can write to",
    )


def _read(path: Path) -> bytes:
    return read_input(path, MAX_KB_INPUT)
