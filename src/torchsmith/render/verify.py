"""Rich rendering of ``torchsmith verify``: one line per check, the GPUs and their figures."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from torchsmith.verify.model import VerifyReport

_MARK = {True: ("PASS", "green"), False: ("FAIL", "bold red"), None: ("skip", "dim")}
_SEVERITY = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def render_verify(report: VerifyReport, console: Console) -> None:
    torch = report.torch_version or "?"
    build = f"CUDA {report.torch_cuda}" if report.torch_cuda else "CPU-only"
    console.print(
        Text(f"torch {torch} ({build}) in {report.python}  [{report.mode}]", style="bold")
    )
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in ("", "check", "value", "time", "detail"):
        table.add_column(column, overflow="fold")
    for check in report.checks:
        mark, style = _MARK[check.passed]
        value = "" if check.value is None else _fmt(check.value)
        table.add_row(
            Text(mark, style=style),
            Text(check.name),
            Text(value),
            f"{check.duration_s:.2f}s",
            Text(check.detail),
        )
    console.print(table)
    for gpu in report.gpus:
        cc = gpu.compute_capability
        line = f"gpu {gpu.index}: {gpu.name} (compute capability {cc}) — {gpu.route}"
        console.print(Text(line))
        for figure, peak, unit in (
            (gpu.bf16_tflops, gpu.peak_bf16_tflops, "bf16 TFLOP/s"),
            (gpu.copy_gbs, gpu.peak_bandwidth_gbs, "copy GB/s"),
        ):
            if figure is not None:
                versus = f" = {figure / peak:.0%} of datasheet {peak:g}" if peak else ""
                console.print(Text(f"    {unit}: {figure:g}{versus}"))
    if report.nccl_busbw_gbs is not None:
        console.print(Text(f"NCCL all-reduce bus bandwidth: {report.nccl_busbw_gbs:g} GB/s"))
    if report.driver_version or report.driver_cuda:
        console.print(
            Text(f"driver {report.driver_version or '?'} (CUDA {report.driver_cuda or '?'})")
        )
    if report.versions:
        said = ", ".join(f"{k} {v}" for k, v in sorted(report.versions.items()))
        console.print(Text(f"versions in use: {said}"))
    for lib in report.loaded:
        console.print(Text(f"loaded {lib.name} {lib.version or ''}  {lib.path}", style="dim"))
    for f in report.findings:
        console.print(
            Text(f"{f.severity}: [{f.category}] {f.message}", style=_SEVERITY[f.severity])
        )
        console.print(Text(f"  fix: {f.fix}"))
    if report.error:
        console.print(Text(f"error: {report.error}", style="bold red"))
    verdict = "all checks passed" if report.ok else "some checks FAILED"
    console.print(
        Text(
            f"{verdict} in {report.duration_s:.1f}s",
            style="bold green" if report.ok else "bold red",
        )
    )


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1e-2 else f"{value:g}"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)
