"""verify --quick end to end, and its bf16 matmul figure against the best 8192^3 bf16 product.

    python bench/bench_verify.py [--python PY] [--out DIR] [--seconds 8]

1. Runs ``torchsmith verify --quick --json`` on PY (this repo's src on PYTHONPATH), timed end to
   end (wall clock, including the import of torch); saves ``verify_quick.json`` in --out. When
   torchsmith itself cannot run there (its dependencies missing), runs the target script alone
   instead (``scripts/verify_target.py``: torch only) and says so.
2. In THIS process (run it with the same PY): the best bf16 8192x8192x8192 TFLOP/s reachable,
   over --seconds of timed batches after a warm-up, on GPU 0.
3. Prints verify-figure / best (the target: >= 0.95) and the end-to-end time (target: < 10 s).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "src" / "torchsmith" / "verify" / "scripts" / "verify_target.py"


def run_verify(python: str, out: Path) -> tuple[float | None, float, str]:
    """(verify's bf16 TFLOP/s on cuda:0, wall seconds, how it ran)."""
    env = dict(
        os.environ, PYTHONPATH=f"{REPO / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    )
    argv = [python, "-m", "torchsmith", "verify", "--quick", "--json", "--python", python]
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=False)
    wall = time.perf_counter() - started
    (out / "verify_quick.json").write_text(proc.stdout)
    (out / "verify_quick.stderr.txt").write_text(proc.stderr)
    try:
        doc: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        doc = {}
    if "data" in doc:
        checks = {c["name"]: c for c in doc["data"]["checks"]}
        value = checks.get("cuda:0 bf16 matmul TFLOP/s", {}).get("value")
        return value, wall, f"torchsmith verify --quick (exit {proc.returncode})"
    print(f"torchsmith verify did not give JSON (exit {proc.returncode}): {proc.stderr[-400:]}")
    with tempfile.TemporaryDirectory() as tmp:
        state_path = Path(tmp) / "state.json"
        started = time.perf_counter()
        subprocess.run([python, "-B", str(SCRIPT), str(state_path), "{}"], timeout=300, check=False)
        wall = time.perf_counter() - started
        state = json.loads(state_path.read_text()) if state_path.exists() else {}
    (out / "state_quick_fallback.json").write_text(json.dumps(state, indent=1))
    checks = {c["name"]: c for c in state.get("checks", [])}
    value = checks.get("cuda:0 bf16 matmul TFLOP/s", {}).get("value")
    return value, wall, "verify_target.py alone (torchsmith could not run)"


def best_tflops(seconds: float) -> tuple[float, int]:
    import torch  # noqa: PLC0415 (the benchmark side of this file runs in the target)

    if not torch.cuda.is_available():
        raise RuntimeError("torch.cuda.is_available() is False")
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(50):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    best, batches, deadline = 0.0, 0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            torch.matmul(a, b, out=c)
        stop.record()
        stop.synchronize()
        best = max(best, 2 * n**3 / (start.elapsed_time(stop) / 1e3 / 20) / 1e12)
        batches += 1
    return best, batches


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--out", default=tempfile.mkdtemp(prefix="bench-verify-"))
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    figure, wall, how = run_verify(args.python, out)
    print(f"verify --quick end to end: {wall:.2f} s ({how}); target < 10 s")
    print(f"verify bf16 figure (cuda:0): {figure} TFLOP/s")
    try:
        best, batches = best_tflops(args.seconds)
    except Exception as exc:  # noqa: BLE001 (one clear line on a machine without a usable GPU)
        print(
            f"no best figure: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        )
        best, batches = 0.0, 0
    print(f"best bf16 8192^3: {best:.1f} TFLOP/s over {batches} batches of 20")
    result = {
        "verify_wall_s": round(wall, 3),
        "verify_tflops": figure,
        "best_tflops": round(best, 1),
    }
    if isinstance(figure, (int, float)) and best > 0:
        ratio = figure / best
        result["ratio"] = round(ratio, 4)
        verdict = "OK" if ratio >= 0.95 else "BELOW"
        print(f"ratio verify/best = {ratio:.3f} ({verdict} the 0.95 target)")
    (out / "bench_verify.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
