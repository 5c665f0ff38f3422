"""Benchmark: building torch-scatter 2.1.2 (and causal-conv1d 1.7.0) from their sdists, naive vs
torchsmith, on a GPU machine. Run through bench/gpu_build.sh, which sets up the venv offline.

    python bench/bench_build.py naive      --python PY --sdist S --work DIR [--cap SECONDS]
    python bench/bench_build.py cold-warm  --python PY --sdist S --work DIR
    python bench/bench_build.py causal     --python PY --sdist S --work DIR

naive: ``PY -m pip install --no-build-isolation .`` in the unpacked sdist with nothing set (a new
user); torch-scatter's setup.py turns ninja off, so its 17 sources compile one after another. It
gets a hard time cap; if it hits it the figure is a lower bound.
cold-warm: ``torchsmith build TREE --python PY --cache sccache`` exactly as a user runs it (its
configuration is printed first from ``--dry-run``; the build writes its log and ledger entry),
first with an empty compiler cache (cold), then with build outputs removed and the cache kept
(warm).
causal: causal-conv1d from source with ``torchsmith build`` (cold cache).

Each mode checks the result: the archs in what was installed (torchsmith inspect), and that it
imports and runs a small op on the GPU. Results go to ``--work``/results/<mode>.json (kept between
invocations on the same machine) and to $OUT; cold-warm prints the ratios against the naive run
when that file exists.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import psutil

from torchsmith.binaries.targets import inspect_target
from torchsmith.util.stream import stream

SCATTER_CHECK = (
    "import torch, torch_scatter\n"
    "src = torch.ones(8, device='cuda')\n"
    "idx = torch.tensor([0, 1, 0, 1, 2, 2, 3, 3], device='cuda')\n"
    "out = torch_scatter.scatter_add(src, idx)\n"
    "torch.cuda.synchronize()\n"
    "assert out.tolist() == [2.0, 2.0, 2.0, 2.0], out\n"
    "print('RUNS', out.device, torch_scatter.__version__)\n"
)
CAUSAL_CHECK = (
    "import torch\n"
    "from causal_conv1d import causal_conv1d_fn\n"
    "x = torch.randn(2, 64, 128, device='cuda')\n"
    "w = torch.randn(64, 4, device='cuda')\n"
    "y = causal_conv1d_fn(x, w)\n"
    "ref = torch.nn.functional.conv1d(torch.nn.functional.pad(x, (3, 0)), w.unsqueeze(1),"
    " groups=64)\n"
    "torch.cuda.synchronize()\n"
    "assert torch.allclose(y, ref, atol=1e-3), (y - ref).abs().max()\n"
    "print('RUNS', y.device)\n"
)


SMOKE_CPU = os.environ.get("BENCH_SMOKE_CPU") == "1"  # dev-machine smoke test: no GPU, CPU torch


def gpu_cc() -> str:
    if SMOKE_CPU:
        return "9.0"
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=compute_cap,name", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return out.stdout.splitlines()[0].split(",")[0].strip()


def cuda_home() -> str:
    for candidate in ("/usr/local/cuda-13.0", "/usr/local/cuda"):
        if Path(candidate, "bin", "nvcc").exists():
            return candidate
    nvcc = shutil.which("nvcc")
    if nvcc:
        return str(Path(nvcc).resolve().parent.parent)
    raise SystemExit("no nvcc found")


def unpack(sdist: Path, work: Path, name: str) -> Path:
    dest = work / name
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with tarfile.open(sdist) as tf:
        tf.extractall(dest, filter="data")
    (tree,) = list(dest.iterdir())
    return tree


def installed_location(python: str, module: str) -> str | None:
    code = f"import importlib.util as u; s = u.find_spec({module!r}); print(s.submodule_search_locations[0] if s else '')"  # noqa: E501
    out = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    return out.stdout.strip() or None


def check_result(python: str, module: str, code: str) -> dict[str, Any]:
    where = installed_location(python, module)
    archs: dict[str, Any] = {"sass": [], "ptx": []}
    if where:
        report = inspect_target(where)
        archs = {"sass": list(report.sass), "ptx": list(report.ptx), "location": where}
    run = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    return {
        **archs,
        "runs_on_gpu": run.returncode == 0 and "RUNS" in run.stdout,
        "run_output": (run.stdout + run.stderr).strip().splitlines()[-3:],
    }


def uninstall(python: str, package: str) -> None:
    subprocess.run(
        [python, "-m", "pip", "uninstall", "-y", package],
        capture_output=True,
        timeout=120,
        check=False,
    )


def machine() -> dict[str, Any]:
    return {
        "host": platform.node(),
        "cores_logical": psutil.cpu_count(),
        "cores_physical": psutil.cpu_count(logical=False),
        "ram_bytes": psutil.virtual_memory().total,
        "gpu_cc": gpu_cc(),
    }


# -- naive -----------------------------------------------------------------------------------


def naive(args: argparse.Namespace) -> dict[str, Any]:
    tree = unpack(args.sdist, args.work, "naive")
    uninstall(args.python, args.package)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_", "MAX_JOBS", "SCC"))}
    # A new user's PATH: no compiler cache on it (newer torch puts one in front by itself).
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not Path(p, "sccache").exists()
    )
    log = args.work / "logs" / "naive.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    print(f"naive: {args.python} -m pip install --no-build-isolation . (cap {args.cap:g}s)")
    result = stream(
        [args.python, "-m", "pip", "install", "-v", "--no-build-isolation", "--no-deps", "."],
        env=env,
        cwd=tree,
        log_path=log,
        timeout=args.cap,
        on_line=_dot,
    )
    print()
    capped = result.status == "interrupted"
    data = {
        "mode": "naive",
        "package": args.package,
        "status": result.status,
        "wall_s": round(result.duration_s, 1),
        "lower_bound": capped,
        "peak_rss_bytes": result.peak_rss_bytes,
        "log": str(log),
    }
    if result.status == "succeeded":
        data["result"] = check_result(args.python, args.module, args.check)
    return data


def _dot(line: str) -> None:
    if " -c " in line or line.startswith(("building '", "[")):
        print(".", end="", flush=True)


# -- torchsmith ------------------------------------------------------------------------------


def torchsmith_cli(args: argparse.Namespace, tree: Path, *extra: str) -> list[str]:
    """The real command a user runs: torchsmith build, this machine's GPUs, sccache as launcher."""
    exe = str(Path(args.python).with_name("torchsmith"))
    return [exe, "build", str(tree), "--python", args.python, "--cache", "sccache", *extra]


def torchsmith_build(
    args: argparse.Namespace, tree: Path, label: str, extra_env: dict[str, str]
) -> dict[str, Any]:
    env = {
        **os.environ,
        **extra_env,
        "TORCHSMITH_LEDGER": str(args.work / "ledger.sqlite"),
        "TORCHSMITH_LOG_DIR": str(args.work / "logs"),
    }
    dry = subprocess.run(
        [*torchsmith_cli(args, tree, "--dry-run", "--json")],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    plan = json.loads(dry.stdout or "{}").get("data") or {}
    config = plan.get("config") or {}
    for choice in config.get("choices", []):
        print(f"  {choice['key']} = {choice['value']}  ({choice['reason']})")
    for finding in plan.get("findings", []):
        print(f"  {finding['severity']}: {finding['message']}")
    uninstall(args.python, args.package)
    print("  " + " ".join(torchsmith_cli(args, tree, "--json")))
    started = time.monotonic()
    run = subprocess.run(
        torchsmith_cli(args, tree, "--json"),
        capture_output=True, text=True, env=env, timeout=args.cap, check=False,
    )  # fmt: skip
    wall = time.monotonic() - started
    doc = json.loads(run.stdout or "{}")
    result = doc.get("data") or {}
    data: dict[str, Any] = {
        "mode": label,
        "package": args.package,
        "command": "torchsmith build TREE --python PY --cache sccache",
        "exit_code": run.returncode,
        "status": result.get("status") or "error",
        "wall_s": round(wall, 1),
        "build_s": result.get("duration_s"),
        "peak_rss_bytes": result.get("peak_rss_bytes"),
        "log": result.get("log_path"),
        "attempt": result.get("attempt_id"),
        "built_sass": result.get("sass", []),
        "findings": [f["message"] for f in result.get("findings", [])],
        "diagnoses": [d.get("title") for d in result.get("diagnoses", [])[:1]],
        "choices": {c["key"]: c["value"] for c in config.get("choices", [])},
        "error": doc.get("error"),
    }
    if data["status"] == "succeeded":
        data["result"] = check_result(args.python, args.module, args.check)
    else:
        print(run.stderr[-2000:])
        if data["log"] and Path(data["log"]).is_file():
            print(Path(data["log"]).read_text(errors="replace")[-3000:])
    return data


def start_sccache(sccache: str, cache_dir: Path, *, empty: bool) -> dict[str, str]:
    if empty and cache_dir.exists():
        shutil.rmtree(cache_dir)
    env = {"SCCACHE_DIR": str(cache_dir), "SCCACHE_CACHE_SIZE": "20G", "SCCACHE_IDLE_TIMEOUT": "0"}
    full = {**os.environ, **env}
    subprocess.run(
        [sccache, "--stop-server"], env=full, capture_output=True, timeout=60, check=False
    )
    subprocess.run([sccache, "--start-server"], env=full, check=True, timeout=60)
    subprocess.run([sccache, "--zero-stats"], env=full, check=True, timeout=60)
    return env


def sccache_stats(sccache: str, env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run(
        [sccache, "--show-stats", "--stats-format", "json"],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
        check=False,
    )
    try:
        stats = json.loads(out.stdout)["stats"]
    except (ValueError, KeyError):
        return {}
    return {"hits": stats["cache_hits"]["counts"], "misses": stats["cache_misses"]["counts"]}


def cold_warm(args: argparse.Namespace) -> dict[str, Any]:
    sccache = shutil.which("sccache")
    if sccache is None:
        raise SystemExit("sccache is not on PATH (gpu_build.sh installs it into the bench venv)")
    cache_dir = args.work / "sccache"
    env = start_sccache(sccache, cache_dir, empty=True)
    tree = unpack(args.sdist, args.work, "torchsmith")
    print("torchsmith cold (empty compiler cache):")
    cold = torchsmith_build(args, tree, "torchsmith-cold", env)
    cold["sccache"] = sccache_stats(sccache, env)
    # Warm: build outputs removed, compiler cache kept.
    for name in ("build", "dist"):
        shutil.rmtree(tree / name, ignore_errors=True)
    for info in tree.glob("*.egg-info"):
        shutil.rmtree(info, ignore_errors=True)
    subprocess.run([sccache, "--zero-stats"], env={**os.environ, **env}, check=True, timeout=60)
    print("torchsmith warm (build outputs removed, compiler cache kept):")
    warm = torchsmith_build(args, tree, "torchsmith-warm", env)
    warm["sccache"] = sccache_stats(sccache, env)
    subprocess.run(
        [sccache, "--stop-server"], env={**os.environ, **env}, capture_output=True, check=False
    )
    data: dict[str, Any] = {"mode": "cold-warm", "cold": cold, "warm": warm}
    naive_file = args.work / "results" / "naive.json"
    if naive_file.exists():
        base = json.loads(naive_file.read_text())
        data["naive"] = base
        if cold["status"] == warm["status"] == "succeeded":
            data["ratio_naive_over_cold"] = round(base["wall_s"] / cold["wall_s"], 2)
            data["ratio_naive_over_warm"] = round(base["wall_s"] / warm["wall_s"], 2)
            data["naive_is_lower_bound"] = base.get("lower_bound", False)
    return data


def causal(args: argparse.Namespace) -> dict[str, Any]:
    sccache = shutil.which("sccache")
    env: dict[str, str] = {"CAUSAL_CONV1D_FORCE_BUILD": "TRUE"}
    if sccache:
        env |= start_sccache(sccache, args.work / "sccache-causal", empty=True)
    tree = unpack(args.sdist, args.work, "causal")
    print("torchsmith, causal-conv1d (cold):")
    return torchsmith_build(args, tree, "torchsmith-causal", env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["naive", "cold-warm", "causal"])
    parser.add_argument("--python", required=True, help="the interpreter with torch (target)")
    parser.add_argument("--sdist", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--cap", type=float, default=480.0, help="naive: stop after this long")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    args = parser.parse_args()
    args.work = args.work.resolve()
    args.sdist = args.sdist.resolve()
    causal_mode = args.mode == "causal"
    args.package = "causal-conv1d" if causal_mode else "torch-scatter"
    args.module = "causal_conv1d" if causal_mode else "torch_scatter"
    args.check = CAUSAL_CHECK if causal_mode else SCATTER_CHECK
    os.environ["TORCHSMITH_LEDGER"] = str(args.work / "ledger.sqlite")
    runner = {"naive": naive, "cold-warm": cold_warm, "causal": causal}[args.mode]
    data = {"machine": machine(), **runner(args)}
    text = json.dumps(data, indent=2)
    for folder in (args.work / "results", args.out):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{args.mode}.json").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
