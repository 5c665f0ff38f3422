"""review reads scripts as their shell would, and writes corrected commands that shell runs: the
cases an audit with hand-written scripts found wrong."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.review.test_review import _review as review_json
from tests.util.winargv import cmd_unescaped, msvc_argv

from torchsmith.cli import main
from torchsmith.review.parse import logical_lines


def _review(capsys: pytest.CaptureFixture[str], script: Path, *args: str) -> dict:  # type: ignore[type-arg]
    return review_json(capsys, str(script), *args)[1]["data"]  # type: ignore[no-any-return]


def _findings(data: dict) -> list[dict]:  # type: ignore[type-arg]
    return [item for section in data["sections"] for item in section["findings"]]


def test_a_here_document_is_data_not_lines_the_script_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # audit: the export inside `cat > notes <<EOT` ... `EOT` was read as the script's own, and
    # the review reported an arch list (5.2) the build never gets
    script = tmp_path / "build.sh"
    script.write_text(
        'export TORCH_CUDA_ARCH_LIST="8.9"\n'
        "cat > /tmp/notes.txt <<EOT\n"
        "export TORCH_CUDA_ARCH_LIST=5.2\n"
        "EOT\n"
        "python - <<-'PY'\n"
        "\texport MAX_JOBS=64\n"
        "\tPY\n"
        "x=$((1<<2)); y=$(cat <<<word)\n"
        "export USE_CUDNN=1\n"
        "python setup.py develop\n"
    )
    data = _review(capsys, script, "--gpu", "RTX 4090", "--os", "linux", "--ram", "64")
    settings = data["sections"][0]["settings"]
    assert settings["TORCH_CUDA_ARCH_LIST"]["value"] == "8.9"
    assert "MAX_JOBS" not in settings
    assert settings["USE_CUDNN"]["line"] == 9  # read again after the documents end
    assert _findings(data) == []


def test_here_documents_leave_the_lines_around_them() -> None:
    text = "cat <<A <<'B'\na\nA\nb\nB\nexport X=1\necho '<<C'\nexport Y=2\n"
    assert [line for _, _, line in logical_lines(text, "bash")] == [
        "cat <<A <<'B'",
        "export X=1",
        "echo '<<C'",
        "export Y=2",
    ]


@pytest.mark.parametrize(
    ("name", "text", "os_name", "said", "fix"),
    [
        (
            "build.sh",
            "export TORCH_CUDA_ARCH_LIST=8.0;8.6;8.9\npip install -e .\n",
            "linux",
            "bash runs 8.6 and 8.9 as commands",
            'TORCH_CUDA_ARCH_LIST="8.0;8.6;8.9"',
        ),
        (
            "build.sh",
            "cmake .. -GNinja \\\n  -DCMAKE_CUDA_ARCHITECTURES=80;86 \\\n  -DX=1\nninja\n",
            "linux",
            "bash runs 86 as a command",
            '"-DCMAKE_CUDA_ARCHITECTURES=80;86"',
        ),
        (
            "build.ps1",
            "$env:TORCH_CUDA_ARCH_LIST=8.6;8.9\npython setup.py install\n",
            "windows",
            "PowerShell prints 8.9 as a value",
            '$env:TORCH_CUDA_ARCH_LIST = "8.6;8.9"',
        ),
    ],
)
def test_an_unquoted_semicolon_that_cuts_an_arch_list_is_an_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    text: str,
    os_name: str,
    said: str,
    fix: str,
) -> None:
    # audit: `export TORCH_CUDA_ARCH_LIST=8.6;8.9` was "no problems found": the shell sets 8.6
    # and runs 8.9 as a command, and the GPU of the target made up for the lost entry silently
    script = tmp_path / name
    script.write_text(text)
    data = _review(capsys, script, "--gpu", "RTX 4090", "--os", os_name, "--ram", "64")
    (cut,) = [f for f in _findings(data) if "unquoted ;" in f["finding"]["message"]]
    assert cut["finding"]["severity"] == "error"
    assert cut["line"] == (2 if "cmake" in text else 1)
    assert said in cut["finding"]["message"]
    assert fix in cut["finding"]["fix"]


def test_cmd_keeps_a_semicolon_in_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "build.bat"
    script.write_text("set TORCH_CUDA_ARCH_LIST=8.6;8.9\r\npython setup.py install\r\n")
    data = _review(capsys, script, "--gpu", "RTX 4090", "--os", "windows", "--ram", "64")
    assert _findings(data) == []


def test_a_pip_install_from_an_index_needs_a_checkout_to_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # audit: `pip install flash-attn==2.6.3` became `torchsmith build . --cc ...` with nothing
    # saying that "." has to be a flash-attn checkout: run anywhere else, it builds nothing
    script = tmp_path / "build.sh"
    script.write_text(
        "pip install torch ninja\n"
        "MAX_JOBS=4 pip install -v --no-build-isolation -i https://pypi.org/simple "
        "flash-attn==2.6.3\n"
    )
    data = _review(capsys, script, "--gpu", "RTX 4090", "--os", "linux")
    (needs,) = data["sections"][0]["corrected"]["needs"]
    assert needs.startswith("a source checkout of flash-attn==2.6.3:")
    script.write_text("pip install torch ninja\npip install --no-build-isolation -e .\n")
    data = _review(capsys, script, "--gpu", "RTX 4090", "--os", "linux")
    assert data["sections"][0]["corrected"]["needs"] == []


def test_a_windows_corrected_command_with_a_quote_in_a_value_runs_in_cmd_and_powershell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # audit: cmd got --set "CMAKE_CXX_FLAGS=/EHsc /DFOO="bar baz"", which splits at the inner
    # quote, and Windows PowerShell 5.1 passes '...="bar baz"' on the same broken way
    script = tmp_path / "build.bat"
    script.write_text(
        'set CMAKE_CXX_FLAGS=/EHsc /DFOO="bar baz"\r\nset TORCH_CUDA_ARCH_LIST=12.0\r\n'
        "python setup.py bdist_wheel\r\n"
    )
    main(["review", str(script), "--gpu", "RTX 5070", "--os", "windows", "--ram", "64"])
    out = capsys.readouterr().out
    lines = {m.group(1): m.group(2) for m in re.finditer(r"(?m)^corrected \(([^)]*)\): (.*)$", out)}
    value = 'CMAKE_CXX_FLAGS=/EHsc /DFOO="bar baz"'
    cmd = msvc_argv(cmd_unescaped(lines["cmd"]))
    assert cmd[cmd.index("--set") + 1] == value
    # PowerShell 7.3+ passes a single-quoted word on as the program splits it
    ps = re.findall(r"'((?:[^']|'')*)'", lines["PowerShell 7.3+"])
    assert value in [w.replace("''", "'") for w in ps]
    # Windows PowerShell 5.1 needs --%, after which it passes the rest on as written
    head, rest = lines["Windows PowerShell 5.1"].split(" --% ", 1)
    assert head == "torchsmith"
    ps = msvc_argv(rest)
    assert ps[ps.index("--set") + 1] == value


def test_a_here_document_named_in_a_comment_opens_none() -> None:
    # review: `# see <<EOF below` dropped every line after it, hiding the arch list
    text = 'export MAX_JOBS=2 # see <<EOF below\nexport TORCH_CUDA_ARCH_LIST="5.0"\n'
    assert [line for _, _, line in logical_lines(text, "bash")] == [
        "export MAX_JOBS=2 # see <<EOF below",
        'export TORCH_CUDA_ARCH_LIST="5.0"',
    ]


def test_a_wheel_at_hand_needs_no_checkout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # review: installing a downloaded wheel was read as building it from an index
    script = tmp_path / "build.sh"
    script.write_text(
        "pip install flash_attn-2.6.3+cu121torch2.3-cp311-cp311-linux_x86_64.whl\n"
        "pip install -e .\n"
    )
    data = _review(capsys, script, "--gpu", "RTX 4090", "--os", "linux")
    assert data["sections"][0]["corrected"]["needs"] == []
