"""Time ``torchsmith doctor --json`` against ``python -m torch.utils.collect_env`` in one venv.

    python bench/bench_doctor.py --python .cache/torch-venv/bin/python [--runs 5]
    python bench/bench_doctor.py --python PATH --probe-only   # just the python/torch probe

Each command runs once to warm the page cache, then ``--runs`` times; the medians are compared.
The goal (issue): doctor takes at most 0.2x the time of collect_env. Exit status 1 when it does
not, or when either command fails.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from torchsmith.probe.python_env import probe_python_and_torch, resolve_python

GOAL = 0.2
TIMEOUT_S = 300.0


def _torchsmith() -> list[str]:
    """The torchsmith CLI of the interpreter running this benchmark."""
    beside = Path(sys.executable).parent / "torchsmith"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("torchsmith")
    return [found] if found else [sys.executable, "-m", "torchsmith"]


def _run(argv: list[str], last: list[bytes] | None = None) -> Callable[[], None]:
    """Run ``argv``; keep its stdout in ``last`` (doctor's own timings are read from it)."""

    def once() -> None:
        done = subprocess.run(argv, capture_output=True, timeout=TIMEOUT_S, check=False)
        if done.returncode != 0 and not done.stdout:
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
            raise RuntimeError(f"{argv[0]} exited {done.returncode}: {' '.join(tail)}")
        if last is not None:
            last[:] = [done.stdout]

    return once


def _sections(stdout: bytes) -> str:
    """doctor's own per-section seconds (meta.section_seconds of its JSON), slowest first."""
    try:
        meta = json.loads(stdout)["data"]["meta"]
        sections = sorted(meta["section_seconds"].items(), key=lambda kv: -kv[1])
    except (ValueError, KeyError, TypeError, AttributeError):
        return "n/a"
    parts = [f"{name} {seconds * 1000:.0f}" for name, seconds in sections]
    return f"total {meta['duration_s'] * 1000:.0f} ms in-process; " + ", ".join(parts)


def _probe_only(python: str) -> Callable[[], None]:
    target = resolve_python(python)

    def once() -> None:
        probe_python_and_torch(target)

    return once


def _median_s(func: Callable[[], None], runs: int) -> tuple[float, list[float]]:
    func()  # warm-up
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        func()
        times.append(time.perf_counter() - started)
    return statistics.median(times), times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="interpreter of the venv with torch")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--probe-only", action="store_true", help="time the python/torch probe, not the CLI"
    )
    args = parser.parse_args(argv)

    last: list[bytes] = []
    if args.probe_only:
        label, doctor = "python/torch probe", _probe_only(args.python)
    else:
        cli = [*_torchsmith(), "doctor", "--python", args.python, "--json"]
        label, doctor = " ".join(cli), _run(cli, last)
    collect = [args.python, "-m", "torch.utils.collect_env"]

    try:
        doctor_s, doctor_all = _median_s(doctor, args.runs)
        collect_s, collect_all = _median_s(_run(collect), args.runs)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    ratio = doctor_s / collect_s
    print(f"doctor:      {doctor_s * 1000:8.1f} ms median of {args.runs}  ({label})")
    print(f"             runs: {', '.join(f'{t * 1000:.0f}' for t in doctor_all)} ms")
    if last:
        print(f"             last run: {_sections(last[0])}")
    print(f"collect_env: {collect_s * 1000:8.1f} ms median of {args.runs}  ({' '.join(collect)})")
    print(f"             runs: {', '.join(f'{t * 1000:.0f}' for t in collect_all)} ms")
    verdict = "meets" if ratio <= GOAL else "MISSES"
    print(f"ratio:       {ratio:.3f}x  ({verdict} the goal of <= {GOAL}x)")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
