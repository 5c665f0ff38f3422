"""Data shown in the human views is shown as it is: Rich reads ``[...]`` in a printed string as
markup, so ``pip install torch[opt-einsum]`` lost its extra and a path holding ``[/x]`` raised
MarkupError (a traceback) before each view passed such text as plain text."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.console import Console

from torchsmith.binaries.reader import BinaryReport
from torchsmith.binaries.targets import InspectReport
from torchsmith.install.model import InstallResult, Requirement
from torchsmith.probe.io import load_probe
from torchsmith.probe.model import Finding
from torchsmith.render.doctor import render_doctor
from torchsmith.render.inspect import render_inspect
from torchsmith.render.install import progress, render_install
from torchsmith.render.verify import render_verify
from torchsmith.verify.model import Check, VerifyReport

H200 = Path(__file__).parents[1] / "fixtures" / "h200-linux" / "doctor.json"
PATH = "/home/u/runs[/x]/v[abc]/bin/python"
SPEC = "torch[opt-einsum]==2.13.0"


def _text(render: object, *args: object, **kwargs: object) -> str:
    console = Console(record=True, width=200)
    render(*args, console, **kwargs)  # type: ignore[operator]
    return console.export_text()


def _finding() -> Finding:
    return Finding("other", "warning", f"{SPEC} came from [cpu]", "pip install [/x]")


def test_install_shows_paths_specs_findings_and_notes_as_they_are() -> None:
    result = InstallResult(
        python=PATH, installer="uv", status="rolled-back", torch="2.13.0+cpu", variant="cpu",
        requirements=[Requirement("torch", SPEC, "file:///w[1]", "")],
        changed={"torch[x]": ["1.0[a]", None]}, origins={"torch[x]": "/w[/x]"},
        findings=[_finding()], notes=["kept [/x] as it was"], snapshot="/s[/x]", ledger_id=3,
        error="uv said [/x]",
    )  # fmt: skip
    result.installer = "torchsmith"
    text = _text(render_install, result)
    for shown in (PATH, SPEC, "file:///w[1]", "torch[x]", "1.0[a]", "/w[/x]", "[cpu]",
                  "pip install [/x]", "kept [/x] as it was", "/s[/x]", "uv said [/x]"):  # fmt: skip
        assert shown in text, shown


def test_install_progress_lines_keep_brackets_and_do_not_wrap_when_piped() -> None:
    console = Console(record=True, width=40, force_terminal=False)
    with progress(console) as on_step:
        on_step(f"installing {SPEC} into {PATH} and a long tail past forty columns")
    text = console.export_text()
    assert f"… installing {SPEC} into {PATH} and a long tail past forty columns\n" == text


def test_verify_shows_check_details_and_findings_as_they_are() -> None:
    report = VerifyReport(
        python=PATH, mode="quick", ok=False, torch_version="2.13.0", torch_cuda="13.0",
        checks=[Check("matmul[0]", False, "tensor([1.])", "got [/x] back")],
        findings=[_finding()], error="RuntimeError: [/x]",
    )  # fmt: skip
    text = _text(render_verify, report)
    for shown in (PATH, "matmul[0]", "got [/x] back", "[cpu]", "pip install [/x]", "[/x]"):
        assert shown in text, shown


def test_doctor_shows_findings_and_paths_as_they_are() -> None:
    probe = load_probe(H200)
    assert probe.python is not None
    python = replace(probe.python, executable=PATH)
    probe = replace(probe, python=python, findings=(_finding(),))
    text = _text(render_doctor, probe)
    for shown in (PATH, SPEC, "[cpu]", "pip install [/x]"):
        assert shown in text, shown


def test_inspect_titles_a_binary_by_its_path_as_it_is() -> None:
    binary = BinaryReport(
        path="lib[/x]/libk[abc].so", format="elf", size_bytes=10, fatbin_found=True,
        sass=("sm_90",), sass_counts={"sm_90": 1},
    )  # fmt: skip
    report = InspectReport(
        target="w[/x]", kind="directory", location="/w[/x]", binaries=(binary,),
        sass=("sm_90",), sass_counts={"sm_90": 1}, files_read=1, files_with_gpu_code=1,
    )  # fmt: skip
    text = _text(render_inspect, report)
    assert "lib[/x]/libk[abc].so" in text
    assert "/w[/x]" in text
