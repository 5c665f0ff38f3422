"""Rich view of a plan: the recommendation first, then what was rejected and why."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from torchsmith.plan.model import MachineFacts, Plan, Recommendation

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
MAX_REJECTED_ROWS = 12


def render_plan(plan: Plan, console: Console) -> None:
    console.print(f"[dim]{escape(_machine(plan.machine))}[/dim]")
    target = _target(plan)
    if target:
        console.print(escape(target), soft_wrap=True)
    _recommendation(plan.recommendation, plan.machine.os, console)
    if plan.source_build is not None:
        b = plan.source_build
        console.print(
            f"[bold]source build[/bold]: torch {b.torch}, "
            f"TORCH_CUDA_ARCH_LIST={b.torch_cuda_arch_list}, "
            f"CUDA {b.toolkit}"
            + (f" (any of {b.toolkit_span})" if b.toolkit_min != b.toolkit_max else "")
            + ", "
            f"{b.host_compilers(plan.machine.os)}"
        )
    if plan.alternatives:
        alts = ", ".join(_label(a, plan.machine.os) for a in plan.alternatives)
        console.print(f"[bold]alternatives[/bold]: {escape(alts)}")
    for f in plan.findings:
        style = SEVERITY_STYLE.get(f.severity, "")
        console.print(
            f"[{style}]{f.severity}[/{style}] {escape(f.message)}\n"
            f"    [dim]fix:[/dim] {escape(f.fix)}"
        )
    if plan.rejected:
        console.print(_rejected(plan))


def _machine(m: MachineFacts) -> str:
    gpus = ", ".join(_gpu(g.name, g.compute_capability or g.architecture) for g in m.gpus)
    gpus = gpus or "no GPU"
    py = f"Python {m.python}" if m.python else "Python ?"
    # the NVIDIA driver matters only where an NVIDIA GPU is planned for
    nvidia = any(g.vendor == "nvidia" for g in m.gpus)
    driver = f", driver {m.driver}" if m.driver else (", driver ?" if nvidia else "")
    return f"{m.origin}: {m.os}-{m.arch}, {gpus}{driver}, {py}"


def _target(plan: Plan) -> str | None:
    """The interpreter the commands install into, and the torch it has now: whether the plan
    replaces it or it is already the one recommended."""
    m, rec = plan.machine, plan.recommendation
    where = f"target {m.python_path}" if m.python_path else None
    if m.torch_installed is None:
        return f"{where}: no torch installed" if where else None
    where = where or ("the active Python" if m.origin == "live" else "the probed Python")
    now = f"{where} has torch {m.torch_installed} now"
    if rec.kind not in ("wheel", "cpu") or rec.torch is None:
        return now
    same = m.torch_installed.split("+")[0] == rec.torch and (
        "+" not in m.torch_installed or m.torch_installed.endswith(f"+{rec.variant}")
    )
    return f"{now}: already the one recommended" if same else f"{now}: the commands replace it"


def _gpu(name: str, what: str | None) -> str:
    """A GPU and its compute capability or target, once: not "gfx1030 (gfx1030)"."""
    if what is None:
        return f"{name} (?)"
    return name if what in name else f"{name} ({what})"


def _label(rec: Recommendation, os_name: str) -> str:
    if rec.kind == "source":
        return f"torch {rec.torch} from source"
    if os_name == "macos":  # one macOS wheel per release: CPU and, on Apple silicon, MPS
        return f"torch {rec.torch}"
    return f"torch {rec.torch}+{rec.variant}"


def _recommendation(rec: Recommendation, os_name: str, console: Console) -> None:
    if rec.kind == "none":
        console.print("[bold red]no working install found[/bold red]")
    else:
        where = rec.index_url or ("PyPI" if rec.kind in ("wheel", "cpu") else None)
        suffix = f" [dim]({escape(where)})[/dim]" if where else ""
        console.print(f"[bold green]install {escape(_label(rec, os_name))}[/bold green]{suffix}")
    for reason in rec.reasons:
        console.print(f"  • {escape(reason)}")
    for name, command in rec.commands.items():
        console.print(f"  [dim]{name}:[/dim] {escape(command)}", soft_wrap=True)


def _rejected(plan: Plan) -> Table:
    table = Table(box=box.SIMPLE_HEAD, title="rejected", title_justify="left", pad_edge=False)
    table.add_column("torch", no_wrap=True)
    table.add_column("variant", no_wrap=True)
    table.add_column("why", no_wrap=True, style="yellow")
    table.add_column("")
    for r in plan.rejected[:MAX_REJECTED_ROWS]:
        table.add_row(r.torch, r.variant or "all", r.category, escape(r.reason))
    hidden = len(plan.rejected) - MAX_REJECTED_ROWS
    if hidden > 0:
        table.caption = f"{hidden} more in --json"
    return table
