"""`torchsmith kb`: look facts up in the knowledge base, and check it against PyPI."""

from __future__ import annotations

from pathlib import Path

import click

from torchsmith.commands.common import console
from torchsmith.errors import UsageError
from torchsmith.util.inputs import read_input

MAX_KB_INPUT = 64 * 1024 * 1024  # a release list or index page is far smaller


@click.group()
def kb() -> None:
    """The knowledge base of GPUs, CUDA toolkits, drivers and torch releases."""


@kb.command()
@click.argument("what")
def show(what: str) -> None:
    """Show what the knowledge base says about a GPU name, a CUDA version or a torch version."""
    from torchsmith.knowledge import load_knowledge  # noqa: PLC0415 (fast --help)

    base = load_knowledge()
    out = console()
    gpu = base.find_gpu(what)
    if gpu is not None:
        src = base.sources[gpu.source]
        out.print(
            f"{gpu.name}: compute capability {gpu.compute_capability} ({gpu.sm}), "
            f"{gpu.architecture}, {gpu.kind}"
        )
        out.print(f"  source: {src.title} <{src.url}> [{src.status}]")
        return
    release = base.torch_release(what)
    if release is not None:
        out.print(
            f"torch {release.version} ({release.date}), Requires-Python {release.requires_python}"
        )
        for platform, tags in release.python.items():
            default = release.pypi_default.get(platform, "?")
            out.print(f"  {platform}: Python {', '.join(tags)}; PyPI default {default}")
        out.print(f"  index variants: {', '.join(release.variants)}")
        comp = base.companions(release.version)
        if comp:
            out.print(f"  torchvision {comp['torchvision']}, torchaudio {comp['torchaudio']}")
        return
    toolkit = base.toolkit(what)
    if toolkit is not None:
        out.print(
            f"CUDA {toolkit.version}: driver >= {toolkit.min_driver_linux or '?'} (Linux), "
            f">= {toolkit.min_driver_windows or 'N/A'} (Windows)"
        )
        out.print(f"  nvcc targets: {' '.join(toolkit.sm_targets)}")
        out.print(
            f"  host compilers: gcc <= {toolkit.max_gcc_major}, clang <= "
            f"{toolkit.max_clang_major}, _MSC_VER {toolkit.msc_ver_min}-{toolkit.msc_ver_max}"
        )
        return
    close = base.suggest_gpus(what)
    hint = f"; close GPU names: {', '.join(close)}" if close else ""
    raise UsageError(f"{what!r} is not a known GPU, torch version or CUDA version{hint}")


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
def refresh(
    pypi_json: Path | None, index_html: Path | None, output: Path | None, offline_index: bool
) -> None:
    """Compare the shipped knowledge base with PyPI (and the PyTorch index) and report changes."""
    from torchsmith.errors import ToolError  # noqa: PLC0415
    from torchsmith.knowledge import load_knowledge  # noqa: PLC0415
    from torchsmith.knowledge import refresh as r  # noqa: PLC0415

    base = load_knowledge()
    raw = _read(pypi_json) if pypi_json else r.fetch(r.PYPI_TORCH_JSON)
    html = None
    if index_html is not None:
        html = _read(index_html).decode("utf-8", "replace")
    elif not offline_index:
        try:
            html = r.fetch(r.PYTORCH_INDEX, timeout=10.0).decode("utf-8", "replace")
        except ToolError:
            html = None
    report = r.diff(base, r.parse_pypi_json(raw), html)
    out = console()
    out.print(
        f"newest torch on PyPI: {report.newest_on_pypi}; "
        f"shipped data goes to {report.newest_shipped}"
    )
    if not report.changes:
        out.print("no changes")
    for change in report.changes:
        out.print(
            f"  {change.what}: {change.subject}: shipped {change.shipped!r}, live {change.live!r}",
            markup=False,
        )
    if report.newest_cuda_pins:
        out.print(
            f"CUDA pins of torch {report.newest_on_pypi}: {'; '.join(report.newest_cuda_pins)}",
            markup=False,
        )
    for note in report.notes:
        out.print(f"note: {note}")
    if output is not None and report.new_releases:
        output.write_text(r.toml_for(report.new_releases), encoding="utf-8")
        out.print(f"wrote {len(report.new_releases)} [[release]] entries to {output}")


def _read(path: Path) -> bytes:
    return read_input(path, MAX_KB_INPUT)
