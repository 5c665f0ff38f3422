"""explain --probe: the machine's facts decide a log's GPU symptom.

The machine is the real H200 probe (tests/fixtures/h200-linux/doctor.json, recorded there), as it
is and with one fact changed the way it is on the machines in the corpus' threads: a CPU build of
torch, a driver below the floor of torch's CUDA line, no GPU visible.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from torchsmith import envelope
from torchsmith.cli import main
from torchsmith.explain import explain_text
from torchsmith.explain.machine import deciding_fact, with_machine_facts
from torchsmith.findings.analyze import analyze
from torchsmith.probe.io import load_probe
from torchsmith.probe.model import DriverInfo, Probe

H200 = Path(__file__).parents[1] / "fixtures" / "h200-linux" / "doctor.json"
NOT_AVAILABLE = ">>> import torch\n>>> torch.cuda.is_available()\nFalse\n"
NO_KERNEL = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"


def _h200() -> Probe:
    return load_probe(H200)


def _cpu_build(probe: Probe) -> Probe:
    assert probe.torch is not None
    torch = replace(probe.torch, version="2.11.0+cpu", cuda=None, archs=None)
    return replace(probe, torch=torch)


def _old_driver(probe: Probe) -> Probe:
    return replace(probe, driver=DriverInfo("470.256.02", "11.4", "nvml"))


def _no_gpu(probe: Probe) -> Probe:
    return replace(probe, gpus=(), driver=None)


def _explain(log: str, probe: Probe) -> tuple[str, ...]:
    result = with_machine_facts(explain_text(log), analyze(probe), "probe file p.json")
    return tuple(d.rule for d in result.diagnoses)


def test_a_working_machine_decides_nothing() -> None:
    assert deciding_fact(analyze(_h200()), "no-gpu-visible") is None
    assert _explain(NOT_AVAILABLE, _h200()) == ("general.cuda-not-available-printed",)


@pytest.mark.parametrize(
    ("machine", "cause"),
    [
        (_cpu_build, "machine.cpu-only-torch"),
        (_old_driver, "machine.driver-too-old"),
    ],
    ids=["cpu-build", "old-driver"],
)
def test_the_machine_names_the_cause_of_a_symptom(machine: object, cause: str) -> None:
    probe = machine(_h200())  # type: ignore[operator]
    assert _explain(NOT_AVAILABLE, probe) == (cause, "general.cuda-not-available-printed")


def test_no_gpu_on_the_machine_confirms_the_symptom_s_own_category() -> None:
    result = with_machine_facts(explain_text(NOT_AVAILABLE), analyze(_no_gpu(_h200())), "here")
    (lead,) = result.diagnoses
    assert (lead.category, lead.rule) == ("no-gpu-visible", "general.cuda-not-available-printed")
    assert lead.evidence[-1] == "here: no NVIDIA GPU is visible"


def test_cuda_visible_devices_on_the_machine_names_the_hidden_gpus() -> None:
    h200 = _h200()
    probe = replace(h200, host=replace(h200.host, cuda_visible_devices=""))
    result = with_machine_facts(explain_text(NOT_AVAILABLE), analyze(probe), "this machine")
    (lead,) = result.diagnoses
    assert lead.category == "no-gpu-visible"
    assert "CUDA_VISIBLE_DEVICES='' hides every GPU" in lead.evidence[-1]


def test_a_cpu_build_explains_the_driver_too() -> None:
    probe = _old_driver(_cpu_build(_h200()))
    fact = deciding_fact(analyze(probe), "no-gpu-visible")
    assert fact is not None
    assert fact.category == "cpu-only-torch"


def test_a_gpu_without_native_code_does_not_explain_cuda_unavailable() -> None:
    from torchsmith.probe.model import Finding  # noqa: PLC0415

    jit = Finding("arch-not-compiled", "warning", "torch has no native code for GPU 0", "fix")
    assert deciding_fact([jit], "no-gpu-visible") is None
    assert deciding_fact([jit], "arch-not-compiled") == jit


def test_the_log_s_own_cause_stays_first_and_the_machine_adds_its_own() -> None:
    assert _explain(NO_KERNEL, _old_driver(_h200())) == (
        "arch.no-kernel-image",
        "machine.driver-too-old",
    )


def test_the_same_cause_on_the_machine_confirms_the_log() -> None:
    log = (
        "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old "
        "(found version 11040).\n"
    )
    result = with_machine_facts(explain_text(log), analyze(_old_driver(_h200())), "this machine")
    (lead,) = result.diagnoses
    assert lead.category == "driver-too-old"
    assert lead.evidence[-1].startswith("this machine: driver 470.256.02 allows CUDA 11.4")
    assert "machine.driver-too-old" in lead.related


def test_a_healthy_log_stays_healthy_whatever_the_machine() -> None:
    result = explain_text("Successfully installed torch-2.11.0\n")
    assert with_machine_facts(result, analyze(_h200()), "this machine") == result
    told = with_machine_facts(result, analyze(_cpu_build(_h200())), "this machine")
    assert told.healthy
    assert not told.diagnoses
    assert told.summary.endswith(
        "; this machine has 1 error finding(s): torchsmith doctor shows them"
    )


def test_other_families_are_left_alone() -> None:
    log = "c++: fatal error: Killed signal terminated program cc1plus\n"
    assert _explain(log, _cpu_build(_h200())) == ("memory.compiler-killed",)


def test_cli_probe_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    probe_file = tmp_path / "probe.json"
    probe_file.write_text(envelope.dumps(envelope.wrap("doctor", _cpu_build(_h200()))))
    log = tmp_path / "run.log"
    log.write_text(NOT_AVAILABLE)
    assert main(["explain", "--json", "--probe", str(probe_file), str(log)]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    top = data["diagnoses"][0]
    assert (top["category"], top["rule"], top["line"]) == (
        "cpu-only-torch",
        "machine.cpu-only-torch",
        0,
    )
    assert [d["basis"] for d in data["diagnoses"]] == ["machine", "symptom"]
    assert "2.11.0+cpu is a CPU-only build" in top["evidence"][0]
    assert main(["explain", "--probe", str(probe_file), str(log)]) == 0
    out = capsys.readouterr().out
    assert "torch on this machine is a CPU-only build" in out
    assert "how sure: A fact of the machine the log came from decides it." in out
    assert f"probe file {probe_file}:0" not in out


def test_recorded_on_an_h100_with_the_gpu_hidden(capsys: pytest.CaptureFixture[str]) -> None:
    recorded = Path(__file__).parents[1] / "fixtures" / "h100-linux-cvd-empty"
    log, probe_file = recorded / "is-available.log", recorded / "doctor.json"
    assert main(["explain", "--json", "--probe", str(probe_file), str(log)]) == 0
    (top,) = json.loads(capsys.readouterr().out)["data"]["diagnoses"]
    assert top["category"] == "no-gpu-visible"
    assert top["rule"] == "general.cuda-not-available-printed"
    assert top["evidence"][-1] == (
        f"probe file {probe_file}: CUDA_VISIBLE_DEVICES='' hides every GPU from CUDA programs "
        "(nvidia-smi still lists 1): torch.cuda.is_available() is False"
    )


def test_a_container_without_the_uvm_node_explains_the_corpus_log() -> None:
    corpus = Path(__file__).parent / "corpus" / "nvidia-docker-1085-missing-nvidia-uvm-device"
    h200 = _h200()
    host = replace(h200.host, container="docker", nvidia_devices=("nvidia0", "nvidiactl"))
    result = explain_text((corpus / "log.txt").read_bytes())
    result = with_machine_facts(result, analyze(replace(h200, host=host)), "this machine")
    (lead,) = result.diagnoses
    assert lead.category == "no-gpu-visible"
    assert "but no /dev/nvidia-uvm" in lead.evidence[-1]


def test_the_probe_gpu_tailors_a_fix_only_for_a_log_of_that_gpu() -> None:
    from torchsmith.explain.context import context_from_probe  # noqa: PLC0415

    probe = load_probe(Path(__file__).parents[1] / "fixtures" / "h200-linux" / "doctor.json")
    context = context_from_probe(probe)
    assert context["gpu_sm"] == "sm_90"
    warning = (
        "{gpu} with CUDA capability {sm} is not compatible with the current PyTorch installation.\n"
        "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80.\n"
    )
    # a log from a laptop with an RTX 5070: the H200's sm_90 must not be given as its arch
    other = explain_text(
        warning.format(gpu="NVIDIA GeForce RTX 5070 Laptop GPU", sm="sm_120"), context=context
    )
    assert "sm_90" not in other.diagnoses[0].fix
    # a log of the probe's own GPU: its facts tailor the fix
    own = explain_text(warning.format(gpu=context["gpu_name"], sm="sm_90"), context=context)
    assert context["wheel_variant"] in own.diagnoses[0].fix
