"""The streaming runner: real subprocesses, real signals, a real full disk where one can be made."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from torchsmith.util import cmd
from torchsmith.util.cmd import CommandNotFoundError
from torchsmith.util.stream import split_lines, stream

PY = sys.executable


def test_split_lines_handles_cr_crlf_and_split_chunks() -> None:
    chunks = [b"a\r\nb", b"\r", b"\nc 10%\rc 20%\r", b"d\xff\n", b"tail"]
    assert list(split_lines(iter(chunks))) == ["a", "b", "c 10%", "c 20%", "d\ufffd", "tail"]


def test_stream_merges_output_tees_to_log_and_callback(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "build.log"
    seen: list[str] = []
    code = (
        "import sys; print('out1'); print('err1', file=sys.stderr);"
        " sys.stdout.write('p 1\\rp 2\\n')"
    )
    result = stream([PY, "-c", code], log_path=log, on_line=seen.append, env_overlay={"X": "1"})
    assert result.status == "succeeded"
    assert result.returncode == 0
    assert sorted(seen) == sorted(["out1", "err1", "p 1", "p 2"])
    text = log.read_text()
    assert "$ " in text.splitlines()[0]
    assert "out1" in text
    assert "err1" in text
    assert text.splitlines()[-1].split(" ", 1)[1].startswith("# exit 0")


def test_stream_env_overlay_and_cwd(tmp_path: Path) -> None:
    seen: list[str] = []
    code = "import os; print(os.environ['TS_X'], os.getcwd())"
    stream([PY, "-c", code], on_line=seen.append, env_overlay={"TS_X": "42"}, cwd=tmp_path)
    assert seen == [f"42 {tmp_path}"]


def test_stream_failure_keeps_exit_code(tmp_path: Path) -> None:
    result = stream([PY, "-c", "raise SystemExit(3)"], log_path=tmp_path / "l.log")
    assert (result.status, result.returncode) == ("failed", 3)


def test_stream_missing_program() -> None:
    with pytest.raises(CommandNotFoundError):
        stream(["/nonexistent/cc"])


@pytest.mark.parametrize("content", [b"", b"\x7fELF garbage, not a program"])
def test_a_file_that_is_no_program_is_a_one_line_error(tmp_path: Path, content: bytes) -> None:
    fake = tmp_path / "nvcc"
    fake.write_bytes(content)
    fake.chmod(0o755)
    with pytest.raises(CommandNotFoundError, match=r"^nvcc: (cannot be started|not executable)"):
        stream([str(fake)])
    with pytest.raises(CommandNotFoundError, match=r"^nvcc: (cannot be started|not executable)"):
        cmd.run([str(fake)])


def test_peak_rss_counts_the_process_tree() -> None:
    # A child that holds ~150 MB: the parent alone is small, so the peak shows the tree is summed.
    child = "b = bytearray(150 * 1024 * 1024); import time; time.sleep(1.0)"
    code = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    result = stream([PY, "-c", code])
    assert result.status == "succeeded"
    assert result.peak_rss_bytes > 150 * 1024 * 1024


def test_timeout_stops_the_whole_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    child = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    code = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    started = time.monotonic()
    result = stream([PY, "-c", code], timeout=1.5)
    assert time.monotonic() - started < 15
    assert result.status == "interrupted"
    assert result.returncode is None
    assert result.reason is not None
    assert "timed out" in result.reason
    grandchild = int(pidfile.read_text())
    time.sleep(0.2)
    # gone, or a zombie waiting for its new parent to reap it
    with contextlib.suppress(psutil.NoSuchProcess):
        assert psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE


def test_sigint_to_the_runner_interrupts(tmp_path: Path) -> None:
    """SIGINT to a process running stream() stops the child group; the result is interrupted."""
    script = tmp_path / "runner.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            from pathlib import Path
            from torchsmith.util.stream import stream
            code = "import time\\nprint('go', flush=True)\\ntime.sleep(60)"
            r = stream([sys.executable, "-c", code],
                       log_path=Path({str(tmp_path / "b.log")!r}),
                       on_line=lambda line: print(line, flush=True))
            print("RESULT", r.status, r.reason, flush=True)
            """
        )
    )
    proc = subprocess.Popen([PY, str(script)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "go"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=20)
    assert "RESULT interrupted stopped by Ctrl-C" in out
    assert "stopped by Ctrl-C" in (tmp_path / "b.log").read_text()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_full_disk_while_logging_fails_with_one_line(tmp_path: Path) -> None:
    # /dev/full answers every write with ENOSPC: the real errno a full disk gives.
    log = tmp_path / "full.log"
    log.symlink_to("/dev/full")
    result = stream([PY, "-c", "print('x' * 100)"], log_path=log)
    assert result.status == "failed"
    assert result.reason == "the disk holding the build log is full; the build was stopped"


def test_callback_errors_do_not_stop_the_build() -> None:
    def boom(_line: str) -> None:
        raise RuntimeError("display bug")

    result = stream([PY, "-c", "print(1); print(2)"], on_line=boom)
    assert result.status == "succeeded"
    assert result.lines == 2


def test_not_main_thread_still_runs() -> None:
    box: list[str] = []
    t = threading.Thread(target=lambda: box.append(stream([PY, "-c", "print(1)"]).status))
    t.start()
    t.join(30)
    assert box == ["succeeded"]
