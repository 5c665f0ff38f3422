"""From CLI request to plan: pick the input (probe file, live probe or flags), then plan.

The live machine is probed only when neither --probe nor --os is given, so a plan for another
machine never depends on (or waits for) this one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from torchsmith.errors import UsageError
from torchsmith.knowledge import Knowledge, load_knowledge
from torchsmith.plan.machine import (
    WhatIf,
    apply_what_if,
    blank_facts,
    facts_from_probe,
    means_no_gpu,
    python_tag,
    torch_version,
)
from torchsmith.plan.model import MachineFacts, Plan, PlanOptions
from torchsmith.plan.planner import make_plan, parse_spec

_PY_VERSION = re.compile(r"^3\.\d{1,2}(\.\d+)?t?$")


@dataclass(frozen=True)
class PlanRequest:
    probe_file: Path | None = None
    gpus: tuple[str, ...] = ()
    ccs: tuple[str, ...] = ()
    driver: str | None = None
    os: str | None = None
    arch: str | None = None
    python: str | None = None
    cuda_toolkits: tuple[str, ...] = ()
    torch: str | None = None
    prefer: str = "wheel"
    installer: str | None = None
    ptx: bool = False


def plan_for(request: PlanRequest, kb: Knowledge | None = None) -> Plan:
    kb = kb or load_knowledge()
    parse_spec(request.torch)  # a malformed constraint fails before any probing
    _check_no_gpu(request)
    python_version, python_path = _split_python(request.python)
    what = WhatIf(
        gpus=request.gpus,
        ccs=request.ccs,
        driver=request.driver,
        os=request.os,
        arch=request.arch,
        python=python_version,
        cuda_toolkits=request.cuda_toolkits,
    )
    facts = _base_facts(request, python_path, kb)
    facts = apply_what_if(facts, what, kb)
    options = PlanOptions(
        torch=request.torch,
        prefer=request.prefer,  # type: ignore[arg-type]
        installer=request.installer,  # type: ignore[arg-type]
        ptx=request.ptx,
    )
    return make_plan(facts, kb, options)


def _check_no_gpu(request: PlanRequest) -> None:
    """``--gpu none`` says the machine has no GPU: naming one beside it is a contradiction."""
    nones = [g for g in request.gpus if means_no_gpu(g)]
    others = [g for g in request.gpus if not means_no_gpu(g)]
    if nones and (others or request.ccs):
        also = f"--gpu {others[0]!r}" if others else f"--cc {request.ccs[0]}"
        raise UsageError(
            f"--gpu {nones[0]} (no GPU) contradicts {also}",
            tip=f"drop --gpu {nones[0]} to plan for the GPUs named, or drop the GPUs to plan "
            "for none",
        )


def _split_python(value: str | None) -> tuple[str | None, str | None]:
    if value is None:
        return None, None
    if _PY_VERSION.match(value.strip()):
        return value.strip(), None
    if "/" in value or "\\" in value or Path(value).exists():
        return None, value
    return value, None  # validate_python reports it


def _base_facts(request: PlanRequest, python_path: str | None, kb: Knowledge) -> MachineFacts:
    if request.probe_file is not None:
        from torchsmith.probe.io import load_probe  # noqa: PLC0415

        facts = facts_from_probe(load_probe(request.probe_file), kb, "probe-file")
        return _with_python_path(facts, python_path)
    if request.os is not None:
        return _with_python_path(blank_facts(request.os), python_path)
    from torchsmith.probe.collect import collect_probe  # noqa: PLC0415
    from torchsmith.probe.python_env import python_error, resolve_python  # noqa: PLC0415

    target = resolve_python(python_path, hang_is_error=True)
    probe = collect_probe(target)
    if python_path is not None and probe.python and probe.python.error:  # "Python ?" helps none
        raise python_error(python_path, probe.python)
    facts = facts_from_probe(probe, kb, "live")
    return facts if python_path is None else replace(facts, python_path=target)


def _with_python_path(facts: MachineFacts, python_path: str | None) -> MachineFacts:
    """Facts of another machine (a probe file) or of flags, for an interpreter named here: its
    version, its torch, and its path for the commands."""
    if python_path is None:
        return facts
    from torchsmith.probe.python_env import probe_target  # noqa: PLC0415

    exe, info, torch = probe_target(python_path)
    return replace(
        facts,
        python=python_tag(info.version, info.free_threaded),
        python_path=exe,
        torch_installed=torch_version(torch),
    )
