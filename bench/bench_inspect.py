"""Benchmark: torchsmith's fatbin reader vs cuobjdump on the same binaries.

    python bench/bench_inspect.py [FILE ...] [--budget SECONDS] [--repeat N]

Default file: torch/lib/libtorch_cuda.so of this interpreter's torch (found without importing
torch), else a small library compiled here with nvcc. For each file: time torchsmith's reader
(first run and best of --repeat), time ``cuobjdump --list-elf`` and ``--list-ptx``, check that the
per-arch counts agree (cuobjdump shows sm_100f as sm_100), print both and the speed ratio.
Exits 1 if they disagree or the first read takes longer than --budget.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from torchsmith.binaries.cuobjdump import comparable, find_cuobjdump, run_listing
from torchsmith.binaries.reader import read_binary

NVCC = "/usr/local/cuda/bin/nvcc"
KERNEL = "__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n"


def default_files(scratch: Path) -> list[Path]:
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.origin:
        lib = Path(spec.origin).parent / "lib" / "libtorch_cuda.so"
        if lib.is_file():
            return [lib]
    source = scratch / "k.cu"
    source.write_text(KERNEL)
    out = scratch / "libbench.so"
    argv = [NVCC, "-shared", "-Xcompiler", "-fPIC", "-o", str(out), str(source)]
    for code in ("sm_80", "sm_90a", "sm_100f", "sm_120"):
        argv += ["-gencode", f"arch=compute_{code[3:]},code={code}"]
    argv += ["-gencode", "arch=compute_120,code=compute_120"]
    print(f"no torch with libtorch_cuda.so here; compiling a test library: {' '.join(argv)}")
    subprocess.run(argv, check=True, timeout=300)
    return [out]


def bench(path: Path, tool: str | None, repeat: int, budget: float | None) -> bool:
    size_mb = path.stat().st_size / 1e6
    print(f"\n{path} ({size_mb:,.1f} MB)")
    started = time.perf_counter()
    report = read_binary(path)
    first = time.perf_counter() - started
    best = first
    for _ in range(repeat - 1):
        started = time.perf_counter()
        read_binary(path)
        best = min(best, time.perf_counter() - started)
    print(f"  torchsmith: first {first:.3f} s, best of {repeat} {best:.3f} s")
    print(f"    SASS {report.sass_counts}")
    print(f"    PTX  {report.ptx_counts}")
    ok = True
    if budget is not None and first > budget:
        print(f"  SLOW: first read took {first:.3f} s > budget {budget:.3f} s")
        ok = False
    if tool is None:
        print("  cuobjdump not found: no comparison (pip install nvidia-cuda-cuobjdump)")
        return ok
    listing, seconds = run_listing(tool, path, timeout=600)
    print(f"  cuobjdump --list-elf + --list-ptx: {seconds:.3f} s ({tool})")
    ratio = seconds / best if best > 0 else float("inf")
    print(f"  ratio: torchsmith is {ratio:,.1f}x faster (best run)")
    ours = comparable(report.sass_counts, report.ptx_counts)
    if ours == listing:
        print("  counts: identical")
    else:
        print("  counts DIFFER:")
        print(f"    torchsmith (as cuobjdump names them): {ours}")
        print(f"    cuobjdump:                           {listing}")
        ok = False
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--budget", type=float, default=None, help="max seconds for a first read")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    tool = find_cuobjdump()
    with tempfile.TemporaryDirectory() as scratch:
        files = args.files or default_files(Path(scratch))
        results = [bench(f, tool, max(1, args.repeat), args.budget) for f in files]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
