"""Rich view of a probe: compact, pasteable into a bug report."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from torchsmith.probe.model import Finding, Probe, ToolInfo

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
GIB = 1024**3


def render_doctor(probe: Probe, console: Console) -> None:
    console.print(_summary(probe))
    console.print(_findings(probe.findings))
    counts = {s: sum(f.severity == s for f in probe.findings) for s in SEVERITY_STYLE}
    tail = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items())
    console.print(f"[dim]probe took {probe.meta.duration_s:.2f}s — {tail}[/dim]")


def _summary(probe: Probe) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_header=False, title="torchsmith doctor", pad_edge=False)
    table.add_column("", style="bold", no_wrap=True)
    table.add_column("")
    for label, value in _rows(probe):
        table.add_row(label, Text(value) if isinstance(value, str) else value)
    return table


def _rows(probe: Probe) -> list[tuple[str, str | Text]]:
    rows: list[tuple[str, str | Text]] = [("host", _host(probe))]
    rows.extend(_gpu_rows(probe))
    driver = probe.driver
    if driver and driver.version:
        rows.append(("driver", f"{driver.version} (supports CUDA {driver.cuda_version or '?'})"))
    elif driver and driver.error:
        rows.append(("driver", Text(f"none: {driver.error}", style="dim")))
    rows.extend(_toolkit_rows(probe))
    rows.append(("compilers", _tools(probe.compilers)))
    rows.append(("build tools", _tools(probe.build_tools)))
    rows.append(("python", _python(probe)))
    rows.append(("torch", _torch(probe)))
    return rows


def _host(probe: Probe) -> str:
    h = probe.host
    parts = [h.os_pretty, h.arch]
    if h.cpu_model:
        cores = f"{h.cores_physical or '?'}c/{h.cores_logical or '?'}t"
        if h.cores_performance and h.cores_efficiency:
            cores += f", {h.cores_performance}P+{h.cores_efficiency}E"
        parts.append(f"{h.cpu_model} ({cores})")
    if h.ram_total_bytes:
        avail = f", {h.ram_available_bytes / GIB:.0f} free" if h.ram_available_bytes else ""
        parts.append(f"{h.ram_total_bytes / GIB:.0f} GiB RAM{avail}")
    if h.disk_free_bytes is not None:
        parts.append(f"{h.disk_free_bytes / GIB:.0f} GiB free disk")
    if h.wsl:
        parts.append("WSL")
    if h.container:
        parts.append(f"in {h.container}")
    if h.cuda_visible_devices is not None:
        parts.append(f"CUDA_VISIBLE_DEVICES={h.cuda_visible_devices!r}")
    return " · ".join(parts)


def _gpu_rows(probe: Probe) -> list[tuple[str, str | Text]]:
    if not probe.gpus:
        return [("gpus", Text("none visible", style="dim"))]
    rows: list[tuple[str, str | Text]] = []
    for gpu in probe.gpus:
        bits = [gpu.name]
        if gpu.compute_capability:
            bits.append(f"cc {gpu.compute_capability}")
        if gpu.gfx:
            bits.append(gpu.gfx)
        if gpu.memory_total_bytes:
            bits.append(f"{gpu.memory_total_bytes / GIB:.0f} GiB")
        if gpu.mig_mode and gpu.mig_mode.lower() == "enabled":
            bits.append("MIG on")
        if gpu.pci_bus_id:
            bits.append(gpu.pci_bus_id)
        rows.append((f"gpu {gpu.index}", " · ".join(bits)))
    if probe.rocm is not None:
        rocm = probe.rocm
        bits = [f"ROCm {rocm.runtime_version}" if rocm.runtime_version else "ROCm runtime ?"]
        bits.append(", ".join(d.gfx for d in rocm.devices) or "no gfx agent")
        bits.append("/dev/kfd" if rocm.kfd_present else "no /dev/kfd")
        if rocm.hsa_override:
            bits.append(f"HSA_OVERRIDE_GFX_VERSION={rocm.hsa_override}")
        rows.append(("rocm", f"{' · '.join(bits)} (from {rocm.source})"))
    if probe.xpu is not None:
        zero = [d.name for d in probe.xpu.devices if d.backend == "level_zero"]
        rows.append(("sycl", ", ".join(zero) or Text("no Level Zero GPU", style="yellow")))
    return rows


def _toolkit_rows(probe: Probe) -> list[tuple[str, str | Text]]:
    if not probe.cuda_toolkits:
        return [("cuda toolkit", Text("none found", style="dim"))]
    rows: list[tuple[str, str | Text]] = []
    for tk in probe.cuda_toolkits:
        mark = " (builds use this one)" if tk.selected else ""
        if tk.error:
            rows.append(("cuda toolkit", Text(f"{tk.root}: {tk.error}", style="yellow")))
            continue
        archs = _arch_span(tk.sm_targets)
        text = f"{tk.full_version or tk.version or '?'} at {tk.root}{mark}"
        if archs:
            text += f" · archs {archs}"
        rows.append(("cuda toolkit", text))
    return rows


def _arch_span(sms: tuple[str, ...]) -> str:
    return " ".join(s.removeprefix("sm_") for s in sms)


def _tools(tools: tuple[ToolInfo, ...]) -> str | Text:
    found = [t for t in tools if t.path]
    missing = [t.name for t in tools if not t.path]
    text = ", ".join(f"{t.name} {t.version or '?'}" for t in found) or "none"
    if missing:
        text += f"  (not found: {', '.join(missing)})"
    return text


def _python(probe: Probe) -> str | Text:
    py = probe.python
    if py is None:
        return Text("not probed", style="dim")
    if py.error:
        return Text(f"{py.executable}: {py.error}", style="yellow")
    extra = [py.implementation, f"{py.bits}-bit", py.env_kind]
    if py.free_threaded:
        extra.append("free-threaded")
    return f"{py.version} ({', '.join(extra)}) {py.executable}"


def _torch(probe: Probe) -> str | Text:
    t = probe.torch
    if t is None:
        return Text("not installed", style="dim")
    if t.error:
        return Text(f"{t.location}: {t.error}", style="yellow")
    backend = f"CUDA {t.cuda}" if t.cuda else f"ROCm {t.hip}" if t.hip else "CPU only"
    parts = [f"{t.version} ({backend})"]
    if t.cudnn:
        parts.append(f"cuDNN {t.cudnn}")
    if t.nccl:
        parts.append(f"NCCL {t.nccl}")
    if t.archs and (t.archs.sass or t.archs.ptx):
        parts.append("archs " + " ".join([*t.archs.sass, *t.archs.ptx]))
    parts.extend(f"{k} {v}" for k, v in sorted(t.companions.items()))
    return " · ".join(parts)


def _findings(findings: tuple[Finding, ...]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, title="findings", title_justify="left", expand=False)
    table.add_column("severity", no_wrap=True)
    table.add_column("category", no_wrap=True)
    table.add_column("problem and fix")
    if not findings:
        table.add_row(Text("ok", style="green"), "", "no problems found")
    for f in findings:
        body = Text(f.message)
        body.append("\nfix: ", style="bold")
        body.append(f.fix)
        table.add_row(Text(f.severity, style=SEVERITY_STYLE[f.severity]), Text(f.category), body)
    return table
