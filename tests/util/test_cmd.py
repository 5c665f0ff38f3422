"""The command gateway, against real processes (tiny scripts run by this interpreter)."""

from __future__ import annotations

import sys
import time

import pytest

from torchsmith import platforms
from torchsmith.util import cmd


def test_captures_stdout_stderr_and_status() -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    result = cmd.run([sys.executable, "-c", code])
    assert (result.stdout.strip(), result.stderr.strip(), result.returncode) == ("out", "err", 3)
    assert not result.ok


def test_missing_tool_is_a_one_line_error() -> None:
    with pytest.raises(cmd.CommandNotFoundError, match="not found"):
        cmd.run(["/nonexistent/tool-xyz", "--version"])


def test_hanging_tool_is_killed_after_its_timeout() -> None:
    started = time.monotonic()
    with pytest.raises(cmd.CommandTimeoutError, match=r"no answer after 0\.5s"):
        cmd.run([sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5)
    assert time.monotonic() - started < 10


def test_hanging_tool_that_ignores_sigterm_is_killed() -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    started = time.monotonic()
    with pytest.raises(cmd.CommandTimeoutError):
        cmd.run([sys.executable, "-c", code], timeout=0.5)
    assert time.monotonic() - started < 10


def test_check_raises_with_the_last_error_line() -> None:
    code = "import sys; print('first'); print('fatal: boom', file=sys.stderr); sys.exit(1)"
    with pytest.raises(cmd.CommandFailedError, match="fatal: boom"):
        cmd.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"plain", "plain"),
        ("h\u00e9".encode("utf-16"), "h\u00e9"),
        (b"bad \xff byte", "bad \ufffd byte"),
    ],
)
def test_decode_never_raises(raw: bytes, text: str) -> None:
    assert cmd.decode(raw) == text


def test_spawn_passes_a_cmd_line_as_written_on_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    # on Windows, spawn hands Popen the command line windows_command_line makes
    seen: list[object] = []

    class Fake:
        def __init__(self, args: object, **_: object) -> None:
            seen.append(args)

    monkeypatch.setattr(cmd.subprocess, "Popen", Fake)
    line = '"call "C:\\VS\\vcvars64.bat" && python -V"'
    with platforms.override("windows"):
        cmd.spawn(("cmd.exe", "/d", "/s", "/c", line), stdin=0, stderr=0, env=None, cwd=None)
        cmd.spawn(["python", "-V"], stdin=0, stderr=0, env=None, cwd=None)  # type: ignore[arg-type]
    assert seen == [f"cmd.exe /d /s /c {line}", ["python", "-V"]]


def test_a_timeout_message_is_one_line_with_a_script_cut_short() -> None:
    # a python -c script of several lines cut the error mid-command (error shows one line)
    script = "import time\n" + "x = 1\n" * 40 + "time.sleep(60)"
    with pytest.raises(cmd.CommandTimeoutError) as caught:
        cmd.run([sys.executable, "-c", script], timeout=0.5)
    message = caught.value.message
    assert "\n" not in message
    assert message.endswith("'import time…')")
    assert cmd.brief(["a" * 100]) == "'" + "a" * 80 + "…'"
    assert cmd.brief(["-c", "short"]) == "-c short"
