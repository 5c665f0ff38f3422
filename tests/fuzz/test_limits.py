"""One test per class of hostile input from issue 12, each through the real CLI in a subprocess
limited to 5 s of CPU and 500 MB of data: a result or one clear line, with the exit code of its
kind (3: input)."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz.contract import assert_contract, run_cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROBE = json.loads((FIXTURES / "h200-linux" / "doctor.json").read_text("utf-8"))


def _probe(tmp_path: Path, change: Any) -> str:
    doc = copy.deepcopy(PROBE)
    change(doc["data"])
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(doc), "utf-8")
    return str(path)


def _set(section: str, key: str, value: Any) -> Any:
    def change(data: dict[str, Any]) -> None:
        target = data["gpus"][0] if section == "gpu" else data[section]
        target[key] = value

    return change


# -- log scanning: linear in the line --------------------------------------------------------


def test_long_digit_lines_scan_fast(tmp_path: Path) -> None:
    words = " with CUDA capability sm_120 is not compatible undefined symbol: _Zx depends on torch"
    log = tmp_path / "digits.log"
    log.write_text("".join("7" * 4000 + words + "\n" for _ in range(300)))  # ~1.2 MB
    run = run_cli("explain", str(log))
    assert run.code in (0, 1), run.err
    assert_contract(run)


def test_repeated_token_lines_scan_fast(tmp_path: Path) -> None:
    log = tmp_path / "tokens.log"
    lines = ["undefined symbol: " * 200, "libfoo" * 600 + ": cannot open shared object file"]
    log.write_text("\n".join(lines * 150) + "\n")
    run = run_cli("explain", str(log))
    assert_contract(run)


# -- probe values of the wrong shape ---------------------------------------------------------


@pytest.mark.parametrize("cc", ["9", "9.0.0", "9.0a", "x.y", 9, "", "１２.０"])
def test_compute_capability_not_x_y(tmp_path: Path, cc: Any) -> None:
    run = run_cli("plan", "--probe", _probe(tmp_path, _set("gpu", "compute_capability", cc)))
    assert run.code == 3, run.err
    assert "compute_capability" in run.err
    assert_contract(run)


def test_huge_integer(tmp_path: Path) -> None:
    path = tmp_path / "probe.json"
    text = json.dumps(PROBE).replace('"ram_total_bytes": ', '"ram_total_bytes": ' + "9" * 5000, 1)
    path.write_text(text)
    run = run_cli("plan", "--probe", str(path))
    assert run.code == 3, run.err
    assert "too many digits" in run.err, run.err
    assert_contract(run)


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("host", "ram_total_bytes", 0),
        ("host", "ram_total_bytes", -1),
        ("host", "ram_total_bytes", 2**70),
        ("host", "cores_logical", 0),
        ("gpu", "memory_total_bytes", -5),
        ("gpu", "index", True),
    ],
)
def test_out_of_range_numbers(tmp_path: Path, section: str, key: str, value: Any) -> None:
    run = run_cli("plan", "--probe", _probe(tmp_path, _set(section, key, value)))
    assert run.code == 3, run.err
    assert key in run.err, run.err
    assert_contract(run)


def test_deeply_nested_arrays(tmp_path: Path) -> None:
    path = tmp_path / "probe.json"
    path.write_text('{"data": {"host": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    run = run_cli("plan", "--probe", str(path), "--json")
    assert run.code == 3, run.err
    assert_contract(run, as_json=True)


# -- huge strings in matching ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["RTX 4090 " * 300, "RTX 4090 " * 4000, "A" * 2_000_000])
def test_huge_gpu_name(tmp_path: Path, name: str) -> None:
    run = run_cli("plan", "--probe", _probe(tmp_path, _set("gpu", "name", name)))
    assert run.code == 3, run.err
    assert "gpus[0].name" in run.err, run.err
    assert_contract(run)


# -- unbounded reads: devices, FIFOs ---------------------------------------------------------


@pytest.mark.parametrize("command", ["plan --probe", "explain --probe", "explain", "inspect"])
def test_dev_zero_is_refused(command: str, tmp_path: Path) -> None:
    args = [*command.split(), "/dev/zero"]
    if command == "explain --probe":
        log = tmp_path / "x.log"
        log.write_text("hello\n")
        args.append(str(log))
    run = run_cli(*args)
    assert run.code == 3, run.err
    assert "is a device" in run.err, run.err
    assert_contract(run)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this OS")
@pytest.mark.parametrize("command", ["plan --probe", "explain", "inspect"])
def test_fifo_without_writer_is_refused(command: str, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    run = run_cli(*command.split(), str(fifo))
    assert run.code == 3, run.err
    assert "is a FIFO" in run.err, run.err
    assert_contract(run)


def test_stdin_still_reads_logs() -> None:
    run = run_cli("explain", "-", stdin=b"Killed\n" * 1000)
    assert run.code in (0, 1), run.err


def test_oversized_probe_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "probe.json"
    with path.open("wb") as out:
        out.truncate(64 * 1024 * 1024)  # sparse: costs no disk
    run = run_cli("plan", "--probe", str(path))
    assert run.code == 3, run.err
    assert "bytes" in run.err, run.err


# -- OSErrors on input paths -----------------------------------------------------------------


@pytest.mark.parametrize("command", ["explain", "inspect", "plan --probe", "explain --probe"])
def test_name_too_long(command: str) -> None:
    args = [*command.split(), "/tmp/" + "a" * 5000]
    if command == "explain --probe":
        args.append("-")
    run = run_cli(*args)
    assert run.code == 3, run.err
    assert "too long" in run.err, run.err
    assert_contract(run)


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="Linux /proc only")
@pytest.mark.parametrize("command", ["inspect", "explain", "plan --probe"])
def test_proc_self_mem(command: str) -> None:
    run = run_cli(*command.split(), "/proc/self/mem")
    assert run.code == 3, run.err
    assert_contract(run)


def test_json_envelope_on_input_errors(tmp_path: Path) -> None:
    run = run_cli("explain", "--json", "/tmp/" + "b" * 5000)
    assert run.code == 3
    assert_contract(run, as_json=True)
