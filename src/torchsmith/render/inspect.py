"""Rich rendering of ``torchsmith inspect``: a table per binary, a total, the runs-on verdict."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from torchsmith.binaries.archs import RunsOn
from torchsmith.binaries.reader import BinaryReport
from torchsmith.binaries.targets import InspectReport


def render_inspect(report: InspectReport, console: Console, *, show_all: bool = False) -> None:
    title = f"{report.target}" + (f" {report.package_version}" if report.package_version else "")
    console.print(Text(f"{title}  ({report.kind}: {report.location})", style="bold"))
    # a file asked about by name is always shown: "1 binaries ... not shown" would hide the answer
    shown = [b for b in report.binaries if show_all or b.has_gpu_code or report.kind == "file"]
    for binary in shown:
        if binary.has_gpu_code:
            console.print(_binary_table(binary))
        console.print(_binary_facts(binary))
    hidden = sum(1 for b in report.binaries if b not in shown and b.error is None)
    if hidden:
        console.print(
            Text(f"{hidden} binaries without GPU code not shown (--all shows them)", style="dim")
        )
    for note in report.notes:
        console.print(Text(f"note: {note}", style="yellow"))
    console.print(_total_line(report))
    if report.runs_on is not None:
        console.print(_runs_on_line(report.runs_on, report.gpu))
        partial = [b.path for b in report.binaries if b.runs_on is not None and not b.runs_on.ok]
        if partial and report.runs_on.ok:
            console.print(
                Text(
                    f"  but {len(partial)} binaries have no code for it: {', '.join(partial[:5])}"
                    + (" ..." if len(partial) > 5 else ""),
                    style="yellow",
                )
            )


def _binary_table(binary: BinaryReport) -> Table:
    table = Table(
        title=Text(binary.path),
        title_justify="left",
        title_style="bold",
        show_edge=False,
        pad_edge=False,
    )
    table.add_column("code")
    table.add_column("arch")
    table.add_column("entries", justify="right")
    for kind, counts in (("SASS", binary.sass_counts), ("PTX", binary.ptx_counts)):
        for arch, count in counts.items():
            table.add_row(kind, Text(arch), str(count))
    for arch, count in binary.lto_counts.items():
        table.add_row("LTO IR", Text(arch), str(count))
    for target, count in binary.gfx_counts.items():
        table.add_row("AMDGPU", Text(target), str(count))
    if binary.offload_unlisted:
        table.add_row("AMDGPU", Text("? (compressed, not listed)"), str(binary.offload_unlisted))
    return table


def _binary_facts(binary: BinaryReport) -> Text:
    facts = [binary.format.upper(), f"{binary.size_bytes / 1e6:,.1f} MB"]
    if binary.fatbin_found:
        where = ", ".join(binary.fatbin_sections)
        facts.append(f"{binary.containers} fatbin containers in {where}")
        if binary.compressed_entries:
            facts.append(f"{binary.compressed_entries} entries compressed")
    if binary.offload_bundles:
        where = ", ".join(binary.offload_sections)
        facts.append(f"{binary.offload_bundles} offload bundles in {where}")
    text = Text("" if binary.has_gpu_code else f"{binary.path}: ", style="dim")
    text.append("; ".join(facts + list(binary.notes)), style="dim")
    if binary.runs_on is not None:
        text.append(f"\n{_verdict(binary.runs_on)}", style="green" if binary.runs_on.ok else "red")
    return text


def _total_line(report: InspectReport) -> Text:
    sass = ", ".join(f"{a}×{n}" for a, n in report.sass_counts.items()) or "none"
    ptx = ", ".join(f"{a}×{n}" for a, n in report.ptx_counts.items()) or "none"
    line = Text("total: ", style="bold")
    line.append(
        f"{report.files_with_gpu_code} of {len(report.binaries)} binaries hold GPU code; "
        f"SASS {sass}; PTX {ptx}"
    )
    if report.lto_counts:
        line.append("; LTO IR " + ", ".join(f"{a}×{n}" for a, n in report.lto_counts.items()))
    gfx: dict[str, int] = {}
    for binary in report.binaries:
        for target, count in binary.gfx_counts.items():
            gfx[target] = gfx.get(target, 0) + count
    if gfx:
        line.append("; AMDGPU " + ", ".join(f"{a}×{n}" for a, n in gfx.items()))
    unlisted = sum(b.offload_unlisted for b in report.binaries)
    if unlisted:
        line.append(f"; {unlisted} compressed AMD offload bundles not listed")
    return line


def _verdict(result: RunsOn) -> str:
    mark = "runs" if result.ok else "may not run" if result.kind == "unknown" else "does NOT run"
    return f"{mark} on {result.compute_capability}: {result.route}"


def _runs_on_line(result: RunsOn, gpu: str | None) -> Text:
    asked = f" ({gpu})" if gpu and gpu != result.compute_capability else ""
    text = Text()
    text.append(
        f"GPU {result.compute_capability}{asked}: ", style="bold green" if result.ok else "bold red"
    )
    text.append(result.route)
    if result.detail:  # an AMD verdict has none: no blank line under it
        text.append(f"\n  {result.detail}", style="dim")
    return text
