"""torchsmith review: real shell syntax in, findings with line numbers out."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchsmith.cli import main
from torchsmith.knowledge import load_knowledge
from torchsmith.plan.model import GpuTarget, MachineFacts
from torchsmith.review import review_text
from torchsmith.review.checks import (
    Target,
    parse_arch_list,
    parse_cmake_archs,
    toolkit_version_of,
)
from torchsmith.review.parse import detect_dialect, logical_lines, parse_section
from torchsmith.review.switches import from_knowledge, from_tree

FIXTURES = Path(__file__).parent / "fixtures"
RTX5070 = ["--gpu", "RTX 5070", "--os", "windows", "--python", "3.11", "--ram", "32"]


def _review(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main(["review", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _by_line(data: dict) -> dict[int | None, set[str]]:  # type: ignore[type-arg]
    out: dict[int | None, set[str]] = {}
    for section in data["sections"]:
        for item in section["findings"]:
            out.setdefault(item["line"], set()).add(item["finding"]["category"])
    return out


# The RTX 5070 configurations of issue #10, in each shell: every wrong line named.
EXPECTED = {
    "rtx5070-cuda12.3.bat": {
        4: {"toolkit-too-old-for-arch"},  # set CUDA_HOME=...\v12.3
        5: {"toolkit-too-old-for-arch"},  # set CUDA_PATH=%CUDA_HOME%
        6: {"arch-not-compiled"},  # TORCH_CUDA_ARCH_LIST=8.9
        7: {"stale-build-cache"},  # USE_DISTRIBUTED=0 (info: clean when switching)
        8: {"other"},  # USE_NCCL=1: PyTorch's CMake turns NCCL off on Windows
        9: {"compile-oom"},  # MAX_JOBS=18 on 32 GB
        14: {"arch-not-compiled"},  # -DCMAKE_CUDA_ARCHITECTURES=89 (PTX only)
        15: {"toolkit-too-old-for-arch"},  # -DCUDA_TOOLKIT_ROOT_DIR
        16: {"unsupported-host-compiler"},  # -allow-unsupported-compiler
        17: {"unknown-build-option"},  # USE_PTHREADPOOL (forced ON by PyTorch)
        18: {"unknown-build-option"},  # CAFFE2_USE_PTHREADPOOL
        19: {"unknown-build-option"},  # BUILD_CAFFE2
        20: {"unknown-build-option"},  # USE_CAFFE2
        21: {"other"},  # /MP under Ninja
    },
    "rtx5070-cuda12.4.ps1": {
        3: {"toolkit-too-old-for-arch"},
        4: {"toolkit-too-old-for-arch"},
        5: {"arch-not-compiled"},
        6: {"stale-build-cache"},
        7: {"compile-oom"},
        11: {"arch-not-compiled"},
        12: {"toolkit-too-old-for-arch"},
        13: {"unsupported-host-compiler"},
        14: {"unknown-build-option"},
        15: {"unknown-build-option"},
        16: {"unknown-build-option"},
        17: {"other"},
    },
    "rtx5070-cuda12.9.sh": {
        None: {"other"},  # a bash script judged with a Windows machine's facts: said once
        5: {"arch-not-compiled"},
        6: {"stale-build-cache"},
        7: {"other"},  # USE_GLOO=1 with USE_DISTRIBUTED=0: no effect
        8: {"compile-oom"},
        11: {"arch-not-compiled"},
        13: {"unsupported-host-compiler"},
        14: {"unknown-build-option"},
        15: {"unknown-build-option"},
        16: {"unknown-build-option"},
    },
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_rtx5070_configurations(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, envelope = _review(capsys, str(FIXTURES / name), *RTX5070)
    assert code == 1  # error findings
    data = envelope["data"]
    assert _by_line(data) == EXPECTED[name]
    assert data["source_build_needed"] is False
    assert "one wheel install" in data["wheel_advice"]
    corrected = data["sections"][0]["corrected"]["build_args"]
    assert corrected[:3] == [".", "--cc", "12.0"]
    assert not any("PTHREADPOOL" in a or "CAFFE2" in a for a in corrected)


def test_markdown_log_of_attempts(capsys: pytest.CaptureFixture[str]) -> None:
    code, envelope = _review(capsys, str(FIXTURES / "attempts.md"), *RTX5070)
    assert code == 1
    data = envelope["data"]
    assert data["kind"] == "markdown"
    sections = data["sections"]
    assert [s["dialect"] for s in sections] == ["cmd", "cmd", "powershell"]
    assert sections[0]["title"].startswith("Attempt 1")
    assert sections[1]["changed_from_previous"] == ["+ USE_DISTRIBUTED=0"]
    assert "~ TORCH_CUDA_ARCH_LIST: 8.9 -> 8.9;9.0" in sections[2]["changed_from_previous"]
    # Attempt 3 used CUDA 12.8: its toolkit line is fine, its arch list is not.
    assert _by_line({"sections": [sections[2]]}) == {23: {"arch-not-compiled"}}
    assert any("12.0" in line for line in data["never_tried"])


def test_public_cmd_excerpt_quotes_in_values(capsys: pytest.CaptureFixture[str]) -> None:
    """pytorch#9242: `set X="6.1"` in cmd keeps the quotes in the value."""
    path = FIXTURES / "public" / "pytorch-9242-gtx1050.txt"
    code, envelope = _review(capsys, str(path), "--gpu", "GTX 1050", "--os", "windows")
    assert code == 0
    lines = _by_line(envelope["data"])
    assert lines == {1: {"other"}, 5: {"other"}}


def test_public_markdown_answer_for_the_right_gpu_is_clean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = FIXTURES / "public" / "pytorch-40138-arch.md"
    code, envelope = _review(capsys, str(path), "--cc", "7.5", "--os", "linux")
    assert code == 0
    assert _by_line(envelope["data"]) == {}


# -- parsing edge cases ----------------------------------------------------------------------
def test_cmd_continuations_nested_vars_and_crlf() -> None:
    text = (
        'set "ROOT=C:\\Program Files (x86)\\Tools & More"\r\n'
        "set CUDA=%ROOT%\\cuda\r\n"
        "set ALL=%CUDA%;%ROOT%\r\n"
        "cmake .. ^\r\n"
        '  "-DCUDA_TOOLKIT_ROOT_DIR=%CUDA%" ^\r\n'
        "  -DX=100%% ^^ok\r\n"
    )
    section = parse_section(text, "cmd")
    values = {a.name: a.value for a in section.assignments}
    assert values["ROOT"] == "C:\\Program Files (x86)\\Tools & More"
    assert values["ALL"] == "C:\\Program Files (x86)\\Tools & More\\cuda;" + values["ROOT"]
    (command,) = section.commands
    assert command.argv == (
        "cmake",
        "..",
        "-DCUDA_TOOLKIT_ROOT_DIR=C:\\Program Files (x86)\\Tools & More\\cuda",
        "-DX=100%",
        "^ok",
    )
    assert (command.line, command.end_line) == (4, 6)


def test_powershell_quotes_and_env() -> None:
    text = (
        "$root = 'C:\\it''s here'\n"
        '$env:CUDA_HOME = "$root\\v12.8"\n'
        "cmake `\n"
        '  "-DA=$env:CUDA_HOME" `\n'
        "  '-DB=$env:NOT_EXPANDED'\n"
    )
    section = parse_section(text, "powershell")
    assert [(a.name, a.value) for a in section.assignments] == [
        ("CUDA_HOME", "C:\\it's here\\v12.8")
    ]
    assert section.commands[0].argv == (
        "cmake",
        "-DA=C:\\it's here\\v12.8",
        "-DB=$env:NOT_EXPANDED",
    )


def test_bash_quotes_prefix_assignments_and_comments() -> None:
    text = (
        "export CUDA_HOME=/usr/local/cuda-12.8  # the toolkit\n"
        "MAX_JOBS=4 TORCH_CUDA_ARCH_LIST='9.0;12.0' \\\n"
        '  python setup.py develop "$CUDA_HOME"\n'
    )
    section = parse_section(text, "bash")
    names = [(a.name, a.value, a.line) for a in section.assignments]
    assert ("CUDA_HOME", "/usr/local/cuda-12.8", 1) in names
    assert ("TORCH_CUDA_ARCH_LIST", "9.0;12.0", 2) in names
    assert section.commands[0].argv == ("python", "setup.py", "develop", "/usr/local/cuda-12.8")


def test_escaped_dollar_stays_literal_inside_double_quotes() -> None:
    text = 'export CUDA_HOME=/opt/cuda\ncmake "-DA=\\$CUDA_HOME" "-DB=$CUDA_HOME" \\$CUDA_HOME\n'
    assert parse_section(text, "bash").commands[0].argv == (
        "cmake",
        "-DA=$CUDA_HOME",
        "-DB=/opt/cuda",
        "$CUDA_HOME",
    )
    ps = '$env:CUDA_HOME = "C:\\cuda"\ncmake "-DA=`$env:CUDA_HOME" "-DB=$env:CUDA_HOME"\n'
    assert parse_section(ps, "powershell").commands[0].argv == (
        "cmake",
        "-DA=$env:CUDA_HOME",
        "-DB=C:\\cuda",
    )


def test_unbalanced_quote_is_a_finding_not_a_crash(capsys: pytest.CaptureFixture[str]) -> None:
    section = parse_section('cmake "-DA=1 -DB=2\nset X=1\n', "cmd")
    assert section.problems == ((1, "unbalanced double quote"),)


@pytest.mark.parametrize(
    ("text", "dialect"),
    [
        ("@echo off\nset X=1\n", "cmd"),
        ("$env:X = '1'\n", "powershell"),
        ("export X=1\n", "bash"),
        ("C:\\src>set X=1\n", "cmd"),
        ("PS C:\\src> $env:X = 1\n", "powershell"),
    ],
)
def test_dialect_detection(text: str, dialect: str) -> None:
    assert detect_dialect(text) == dialect


def test_comments_dropped_and_lines_kept() -> None:
    lines = logical_lines("REM hi\n:: also\nset A=1\n\nset B=2\n", "cmd")
    assert [(a, t) for a, _, t in lines] == [(3, "set A=1"), (5, "set B=2")]


def test_utf16_powershell_redirection(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (FIXTURES / "rtx5070-cuda12.4.ps1").read_text("utf-8")
    path = tmp_path / "build.ps1"
    path.write_bytes(b"\xff\xfe" + text.replace("\n", "\r\n").encode("utf-16-le"))
    code, envelope = _review(capsys, str(path), *RTX5070)
    assert code == 1
    assert _by_line(envelope["data"]) == EXPECTED["rtx5070-cuda12.4.ps1"]


# -- values ----------------------------------------------------------------------------------
def test_arch_value_parsers() -> None:
    assert parse_arch_list("8.9") == (["sm_89"], [])
    assert parse_arch_list('"9.0;12.0+PTX"') == (["sm_90", "sm_120"], ["compute_120"])
    assert parse_arch_list("Ada") == (["sm_89"], ["compute_89"])
    assert parse_arch_list("sm_89") is None
    assert parse_cmake_archs("89") == (["sm_89"], ["compute_89"])
    assert parse_cmake_archs("90a-real;120-virtual") == (["sm_90a"], ["compute_120"])
    assert parse_cmake_archs("native") is None


@pytest.mark.parametrize(
    ("path", "version"),
    [
        ("C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4", "12.4"),
        ("/usr/local/cuda-12.8", "12.8"),
        ("/usr/local/cuda-13.0/bin/nvcc", "13.0"),
        ("/opt/conda", None),
    ],
)
def test_toolkit_version_from_path(path: str, version: str | None) -> None:
    assert toolkit_version_of(path) == version


def test_switches_from_tree(tmp_path: Path) -> None:
    (tmp_path / "cmake").mkdir()
    (tmp_path / "CMakeLists.txt").write_text(
        'option(USE_CUDA "Use CUDA" ON)\n'
        'cmake_dependent_option(USE_GLOO "Use Gloo" ON "USE_DISTRIBUTED" OFF)\n'
        'option(USE_DISTRIBUTED "Use distributed" ON)\n'
    )
    (tmp_path / "cmake" / "Dependencies.cmake").write_text(
        'set(USE_PTHREADPOOL ON CACHE BOOL "" FORCE)\n'
    )
    switches = from_tree(tmp_path)
    assert switches.lookup("USE_CUDA").known
    assert switches.lookup("USE_NINJA").known  # read by setup.py
    assert not switches.lookup("USE_CUDAA").known
    assert switches.lookup("USE_CUDAA").suggestion == "USE_CUDA"
    assert "forces it" in switches.lookup("USE_PTHREADPOOL").reason
    assert not switches.lookup("BUILD_CAFFE2").known
    assert switches.dependents["USE_DISTRIBUTED"] == ("USE_GLOO",)


def test_knowledge_switches_have_a_defined_source() -> None:
    switches = from_knowledge()
    assert switches.source in load_knowledge().sources
    assert "USE_DISTRIBUTED" in switches.names


# -- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8, "binary data"),
        (b"echo hello\nls -la\n", "no build command"),
    ],
)
def test_bad_input_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    path = tmp_path / "script.sh"
    path.write_bytes(content)
    code = main(["review", str(path), "--cc", "9.0", "--os", "linux"])
    err = capsys.readouterr().err
    assert code == 3
    assert message in err
    assert "Traceback" not in err


def test_missing_file_and_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["review", str(tmp_path / "nope.bat"), "--os", "linux"]) == 3
    assert main(["review", str(tmp_path), "--os", "linux"]) == 3
    assert "Traceback" not in capsys.readouterr().err


def test_corrected_configuration_is_accepted_by_build_dry_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10's loop: the flags review proposes pass `torchsmith build --dry-run` on a PyTorch
    tree with no configuration error (arch, toolkit, compiler, switch or cache)."""
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "ledger.sqlite"))
    _, envelope = _review(capsys, str(FIXTURES / "rtx5070-cuda12.3.bat"), *RTX5070)
    args = envelope["data"]["sections"][0]["corrected"]["build_args"]
    tree = tmp_path / "pytorch"
    shutil.copytree(Path(__file__).parents[1] / "build" / "projects" / "pytorch_skeleton", tree)
    code = main(["build", str(tree), *args[1:], "--dry-run", "--json"])
    plan = json.loads(capsys.readouterr().out)["data"]
    assert code == 0
    assert plan["config"]["arch_list"] == ["12.0"]
    errors = [f for f in plan["findings"] if f["severity"] == "error"]
    # This machine's own cmake may be older than the tree asks for, and its disk or RAM smaller
    # than a PyTorch build needs: machine facts, not configuration errors. Nothing else may be.
    machine = [f for f in errors if f["category"] == "missing-build-dependency"]
    machine += [f for f in errors if f["subject"] in ("disk", "RAM")]
    assert [f for f in errors if f not in machine] == []


def test_emit_writes_the_corrected_build_as_a_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--emit prepares the corrected configuration for the tree on the probed machine, as
    `torchsmith build --emit` would, and writes the script (shellcheck-clean where available)."""
    tree = tmp_path / "pytorch"
    shutil.copytree(Path(__file__).parents[1] / "build" / "projects" / "pytorch_skeleton", tree)
    probe = Path(__file__).parents[1] / "fixtures" / "h200-linux" / "doctor.json"
    out = tmp_path / "build.sh"
    argv = ["review", str(FIXTURES / "rtx5070-cuda12.9.sh"), "--probe", str(probe)]
    code = main([*argv, "--tree", str(tree), "--emit", "bash", "-o", str(out)])
    capsys.readouterr()
    assert code == 1  # the reviewed script has errors; the corrected one is written anyway
    text = out.read_text()
    assert "export TORCH_CUDA_ARCH_LIST=9.0" in text
    assert "USE_PTHREADPOOL" not in text
    assert "BUILD_CAFFE2" not in text
    shellcheck = shutil.which("shellcheck") or str(Path(sys.executable).with_name("shellcheck"))
    if Path(shellcheck).exists():
        run = subprocess.run([shellcheck, str(out)], capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stdout


def test_emit_needs_a_tree(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["review", str(FIXTURES / "rtx5070-cuda12.9.sh"), "--cc", "9.0", "--emit", "bash"])
    assert code == 2
    assert "--tree" in capsys.readouterr().err


def test_a_toolkit_too_new_for_the_gpu_is_told_the_range_that_can(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # CUDA 13.0 dropped sm_50..sm_72: "CUDA 11.7 or newer" would be wrong advice for a GTX 1080
    script = tmp_path / "build.sh"
    script.write_text(
        "export CUDA_HOME=/usr/local/cuda-13.0\nexport TORCH_CUDA_ARCH_LIST=6.1\n"
        "python setup.py develop\n"
    )
    _, data = _review(
        capsys, str(script), "--gpu", "GTX 1080", "--os", "linux", "--driver", "580.95.05"
    )
    fixes = [
        item["finding"]["fix"]
        for section in data["data"]["sections"]
        for item in section["findings"]
        if item["finding"]["category"] == "toolkit-too-old-for-arch"
    ]
    assert len(fixes) == 2
    assert all("CUDA 11.7 to 12.9 (CUDA 13.0 dropped sm_61)" in fix for fix in fixes)


def test_emit_refuses_a_script_for_another_machine_or_shell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The script holds this machine's paths and toolkit: no cmd script from a Linux machine, and
    no script at all for a probe of another OS."""
    tree = tmp_path / "pytorch"
    shutil.copytree(Path(__file__).parents[1] / "build" / "projects" / "pytorch_skeleton", tree)
    probe = Path(__file__).parents[1] / "fixtures" / "h200-linux" / "doctor.json"
    argv = ["review", str(FIXTURES / "rtx5070-cuda12.9.sh"), "--tree", str(tree)]
    assert main([*argv, "--probe", str(probe), "--emit", "cmd"]) == 2
    assert "--emit cmd does not run on linux" in capsys.readouterr().err
    data = json.loads(probe.read_text())
    data["data"]["host"]["os"] = "windows"
    windows = tmp_path / "windows.json"
    windows.write_text(json.dumps(data))
    assert main([*argv, "--probe", str(windows), "--emit", "powershell"]) == 2
    assert "the target is windows" in capsys.readouterr().err


def test_a_switch_cmake_turns_off_on_windows_is_read_from_the_tree_too() -> None:
    from torchsmith.review.switches import from_knowledge, from_tree  # noqa: PLC0415

    skeleton = Path(__file__).parents[1] / "build" / "projects" / "pytorch_skeleton"
    assert from_tree(skeleton).platform_off["USE_NCCL"] == ("windows", "macos")
    assert from_knowledge().platform_off["USE_NCCL"] == ("windows", "macos")


def test_a_cuda_build_reviewed_against_an_amd_gpu_says_it_cannot_use_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, envelope = _review(
        capsys,
        str(FIXTURES / "rtx5070-cuda12.9.sh"),
        "--gpu",
        "Radeon RX 7900 XTX",
        "--os",
        "linux",
    )
    messages = [
        item["finding"]["message"]
        for section in envelope["data"]["sections"]
        for item in section["findings"]
        if item["line"] is None
    ]
    assert any("a CUDA build cannot use it" in m for m in messages)


def test_arch_specific_entries_that_cannot_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # review said "no problems found" for 8.6a (no nvcc has compute_86a) and for 10.0f with
    # CUDA 12.8 (the ptxas of nvidia-cuda-nvcc-cu12 12.8.93 has no sm_100f; 12.9.86 has)
    script = tmp_path / "build.sh"
    script.write_text(
        "#!/bin/bash\nexport CUDA_HOME=/usr/local/cuda-12.8\n"
        'export TORCH_CUDA_ARCH_LIST="9.0a;10.0f;8.6a"\npython setup.py install\n'
    )
    code, data = _review(capsys, str(script), "--gpu", "B200")
    assert code != 0
    found = [i["finding"] for s in data["data"]["sections"] for i in s["findings"]]
    messages = [f["message"] for f in found]
    assert any("sm_86a cannot be built: arch-specific code exists from" in m for m in messages)
    (too_old,) = [f for f in found if "cannot compile" in f["message"]]
    assert "sm_100f" in too_old["message"]
    assert "sm_90a" not in too_old["message"]  # 12.8 has sm_90a (12.0 added it)
    assert "CUDA 12.9 or newer" in too_old["fix"]


def test_a_sound_arch_specific_list_is_kept_in_the_corrected_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # build takes --cc 9.0a now: the corrected command dropped an H100's 9.0a for 9.0
    script = tmp_path / "build.sh"
    script.write_text('export TORCH_CUDA_ARCH_LIST="9.0a"\npip install --no-build-isolation .\n')
    _, data = _review(capsys, str(script), "--gpu", "H100")
    (section,) = data["data"]["sections"]
    assert section["corrected"]["build_args"][1:] == ["--cc", "9.0a"]


@pytest.mark.parametrize(("cmake", "refused"), [("3.25.1", True), ("4.0.2", False), (None, False)])
def test_a_cmake_entry_this_machines_cmake_refuses(cmake: str | None, refused: bool) -> None:
    # audit: build refused --cc 10.0f on CMake 3.25.1 while review of a script passing 100f-real to
    # the same CMake said "no problems found"
    b200 = GpuTarget(name="NVIDIA B200", vendor="nvidia", compute_capability="10.0")
    facts = MachineFacts(os="linux", arch="x86_64", gpus=(b200,), cmake=cmake)
    result = review_text(
        "cmake -S . -B build -DCMAKE_CUDA_ARCHITECTURES=100f-real\ncmake --build build\n",
        filename="build.sh",
        target=Target(facts),
        kb=load_knowledge(),
        switches=from_knowledge(),
        plan=None,
    )
    said = [
        f.finding for s in result.sections for f in s.findings if "refuses" in f.finding.message
    ]
    assert bool(said) is refused
    if refused:
        assert "first CMakes that take them: 3.31.8 and 4.0.2" in said[0].message
        assert 'pip install "cmake>=4.0.2"' in said[0].fix


# -- the corrected command carries every setting it can express (audit #9) -----------------------
def _corrected(data: dict) -> dict:  # type: ignore[type-arg]
    (section,) = data["data"]["sections"]
    return section["corrected"]  # type: ignore[no-any-return]


def test_the_corrected_command_keeps_the_arch_list_and_applies_its_jobs_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # audit: "corrected: torchsmith build ." lost the arch list and MAX_JOBS=64 was only "left
    # out": on a GPU-less machine that command stops at preflight (no-gpu-visible)
    script = tmp_path / "a52.sh"
    script.write_text(
        'export TORCH_CUDA_ARCH_LIST="8.0;9.0"\nexport MAX_JOBS=64\npython setup.py install\n'
    )
    _, data = _review(capsys, str(script), "--os", "linux", "--ram", "24")
    (section,) = data["data"]["sections"]
    (fix,) = [i["finding"]["fix"] for i in section["findings"] if i["key"] == "MAX_JOBS"]
    jobs = fix.removeprefix("set MAX_JOBS=")
    corrected = section["corrected"]
    assert corrected["build_args"] == [".", "--cc", "8.0", "--cc", "9.0", "--jobs", jobs]
    (dropped,) = [d for d in corrected["dropped"] if d.startswith("MAX_JOBS=64")]
    assert f"--jobs {jobs} instead" in dropped
    assert any(d.startswith("setup_command=install") for d in corrected["dropped"])

    text = capsys.readouterr().out
    main(["review", str(script), "--os", "linux", "--ram", "24"])
    text = capsys.readouterr().out
    assert f"corrected: torchsmith build . --cc 8.0 --cc 9.0 --jobs {jobs}" in text
    assert "MAX_JOBS=64 (line 2)" in text


def test_the_corrected_command_passes_build_preflight_on_any_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "a52.sh"
    script.write_text('export TORCH_CUDA_ARCH_LIST="8.0;9.0"\npython setup.py install\n')
    _, data = _review(capsys, str(script), "--os", "linux", "--ram", "24")
    args = _corrected(data)["build_args"]
    tree = tmp_path / "pytorch"
    shutil.copytree(Path(__file__).parents[1] / "build" / "projects" / "pytorch_skeleton", tree)
    assert main(["build", str(tree), *args[1:], "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["data"]
    assert plan["config"]["arch_list"] == ["8.0", "9.0"]
    assert not [f for f in plan["findings"] if f["category"] == "no-gpu-visible"]


def test_a_script_build_emitted_turns_back_into_its_build_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # audit: review of `build --emit bash --cc 8.0`'s own script said "no problems found" and
    # proposed `torchsmith build . --jobs 2`, without the --cc 8.0 it was written for
    _, data = _review(capsys, str(FIXTURES / "emitted-scatter-cc8.0.sh"), "--os", "linux")
    corrected = _corrected(data)
    python = "/work/audit52/sd/../venv1/bin/python"
    assert corrected["build_args"] == [
        *(".", "--cc", "8.0", "--python", python, "--jobs", "2", "--cache", "sccache"),
    ]
    dropped = corrected["dropped"]
    assert any(
        d.startswith("CUDA_HOME=/usr/local/cuda-13.0 (line 20): torchsmith build picks")
        for d in dropped
    )
    assert any(d.startswith("CUDAHOSTCXX=/usr/bin/g++ (line 21)") for d in dropped)
    assert not any(d.startswith(("LOG=", "listed=")) for d in dropped)  # the script's own


def _corrected_for(text: str, *gpus: GpuTarget) -> object:
    facts = MachineFacts(os="linux", arch="x86_64", gpus=gpus)
    result = review_text(
        text,
        filename="build.sh",
        target=Target(facts),
        kb=load_knowledge(),
        switches=from_knowledge(),
        plan=None,
    )
    return result.sections[0].corrected


H100 = GpuTarget(name="NVIDIA H100", vendor="nvidia", compute_capability="9.0")


@pytest.mark.parametrize(
    ("text", "args", "dropped"),
    [
        # a sound list is kept whole, not narrowed to the target's GPUs
        ('export TORCH_CUDA_ARCH_LIST="8.0;9.0"\n', ("--cc", "8.0", "--cc", "9.0"), ()),
        # +PTX on the newest is build's portable profile; elsewhere it has no flag
        (
            'export TORCH_CUDA_ARCH_LIST="8.0;9.0+PTX"\n',
            ("--cc", "8.0", "--cc", "9.0", "--profile", "portable"),
            (),
        ),
        (
            'export TORCH_CUDA_ARCH_LIST="8.0+PTX;9.0"\n',
            ("--cc", "8.0", "--cc", "9.0"),
            ("8.0+PTX: torchsmith build puts PTX on the newest",),
        ),
        # named architectures, and CMake's spelling
        (
            "export TORCH_CUDA_ARCH_LIST='Ampere;Hopper'\n",
            ("--cc", "8.0", "--cc", "8.6", "--cc", "9.0", "--profile", "portable"),
            ("8.6+PTX: torchsmith build puts PTX on the newest",),
        ),
        (
            'cmake -S . -B b "-DCMAKE_CUDA_ARCHITECTURES=80-real;90-real"\n',
            ("--cc", "8.0", "--cc", "9.0"),
            ("build_dir=b",),
        ),
        # the review's own fixes: 8.6a cannot exist (write 8.6), the flag it names goes
        (
            'export TORCH_CUDA_ARCH_LIST="8.6a;9.0"\n',
            ("--cc", "8.6", "--cc", "9.0"),
            ("8.6a of TORCH_CUDA_ARCH_LIST (line 1):",),
        ),
        (
            'export CMAKE_CUDA_FLAGS="-allow-unsupported-compiler -lineinfo"\n',
            ("--cc", "9.0", "--set", "CMAKE_CUDA_FLAGS=-lineinfo"),
            ("-allow-unsupported-compiler of CMAKE_CUDA_FLAGS (line 1): -allow-unsupported",),
        ),
        # switches and CMake variables go as --set; the debug build is a profile
        (
            "export USE_KINETO=0 DEBUG=1 CMAKE_PREFIX_PATH=/opt/x\n",
            (
                "--cc",
                "9.0",
                "--profile",
                "debug",
                "--set",
                "USE_KINETO=0",
                "--set",
                "CMAKE_PREFIX_PATH=/opt/x",
            ),
            (),
        ),
        # what build has no flag for is named, with why
        (
            "export TORCH_CUDA_ARCH_LIST=all CMAKE_BUILD_TYPE=RelWithDebInfo\n",
            ("--cc", "9.0"),
            (
                "TORCH_CUDA_ARCH_LIST=all (line 1): torchsmith build builds for named GPUs",
                "CMAKE_BUILD_TYPE=RelWithDebInfo (line 1): torchsmith build's profiles",
            ),
        ),
        (
            "export CMAKE_CXX_COMPILER_LAUNCHER=distcc\n",
            ("--cc", "9.0"),
            ("CMAKE_CXX_COMPILER_LAUNCHER=distcc (line 1): torchsmith build's --cache takes",),
        ),
        # review of the review: quotes inside a value are the value's; a variable is no value
        (
            'export CMAKE_CXX_FLAGS=\'-DBAR="x y"\' CMAKE_PREFIX_PATH="$CONDA_PREFIX"\n',
            ("--cc", "9.0", "--set", 'CMAKE_CXX_FLAGS=-DBAR="x y"'),
            ("CMAKE_PREFIX_PATH=$CONDA_PREFIX (line 1): it refers to the shell variable CONDA_PR",),
        ),
    ],
)
def test_corrected_settings(text: str, args: tuple[str, ...], dropped: tuple[str, ...]) -> None:
    corrected = _corrected_for(text + "python setup.py develop\n", H100)
    assert corrected.build_args[1:] == args  # type: ignore[attr-defined]
    left_out = [d for d in corrected.dropped if not d.startswith("setup_command=")]  # type: ignore[attr-defined]
    assert len(left_out) == len(dropped), left_out
    for said, expected in zip(left_out, dropped, strict=True):
        assert said.startswith(expected), said


def test_a_corrected_command_without_a_gpu_to_build_for_says_what_it_still_needs() -> None:
    corrected = _corrected_for("export MAX_JOBS=4\npython setup.py develop\n")
    assert corrected.build_args == (".", "--jobs", "4")  # type: ignore[attr-defined]
    (need,) = corrected.needs  # type: ignore[attr-defined]
    assert "--cc X.Y" in need
    assert "no-gpu-visible" in need
    cpu = _corrected_for("export USE_CUDA=0\npython setup.py develop\n")
    assert cpu.needs == ()  # type: ignore[attr-defined]


def test_a_windows_correction_is_written_for_cmd_and_powershell() -> None:
    """review: the corrected command was quoted with list2cmdline (C runtime rules): a bare ';'
    in a value ended the command in PowerShell, and cmd does not read \\"."""
    from rich.console import Console  # noqa: PLC0415

    from torchsmith.render.review import _corrected  # noqa: PLC0415
    from torchsmith.review.correct import Corrected  # noqa: PLC0415

    corrected = Corrected(build_args=(".", "--set", "CMAKE_PREFIX_PATH=C:\\libs\\a;C:\\libs\\b"))
    console = Console(record=True, width=200)
    _corrected(corrected, "windows", console)
    text = console.export_text()
    # one line: inside double quotes neither cmd nor PowerShell ends the command at ;
    assert 'corrected: torchsmith build . --set "CMAKE_PREFIX_PATH=C:\\libs\\a;C:\\libs\\b"' in text
    plain = Console(record=True, width=200)
    _corrected(Corrected(build_args=(".", "--cc", "9.0")), "windows", plain)
    assert "corrected: torchsmith build . --cc 9.0" in plain.export_text()


def test_a_windows_correction_quotes_powershells_comma() -> None:
    """In PowerShell a bare a,b is an array, passed as two arguments: it is quoted."""
    from rich.console import Console  # noqa: PLC0415

    from torchsmith.render.review import _corrected  # noqa: PLC0415
    from torchsmith.review.correct import Corrected  # noqa: PLC0415

    console = Console(record=True, width=200)
    _corrected(Corrected(build_args=(".", "--set", "X=80,90")), "windows", console)
    assert 'corrected: torchsmith build . --set "X=80,90"' in console.export_text()
    dollar = Console(record=True, width=200)
    _corrected(Corrected(build_args=(".", "--set", "X=$HOME")), "windows", dollar)
    assert "corrected (PowerShell): torchsmith build . --set 'X=$HOME'" in dollar.export_text()
