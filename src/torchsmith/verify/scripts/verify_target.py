"""torchsmith verify: the runtime checks, run INSIDE the target interpreter.

Usage: python -B verify_target.py OUT_JSON ARGS_JSON

ARGS_JSON: {"full": bool, "routes": {"9.0": {"ok": true, "kind": "sass", "route": "..."}}}
(the runs-on decision for each compute capability, made by torchsmith from the archs inside
torch's CUDA libraries before any kernel runs). The result is rewritten to OUT_JSON after every
check, so a hang (killed by the caller's timeout) still leaves what ran and what was running.
Standard library + torch only; never prints the result to stdout.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, Tuple  # noqa: UP035 (Python 3.8 targets)

Result = Tuple[Any, Any, str]  # noqa: UP006 (evaluated at run time, on Python 3.8 too)

SCHEMA = 1
STATE: dict[str, Any] = {"schema": SCHEMA, "checks": [], "running": None, "gpus": [], "loaded": []}
OUT = ""


def save() -> None:
    tmp = OUT + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(STATE, f)
    os.replace(tmp, OUT)


def check(name: str, fn: Callable[..., tuple[Any, Any, str]], *args: Any) -> tuple[Any, Any]:
    """Run one check; record (name, passed, value, detail, duration_s)."""
    STATE["running"] = name
    save()
    started = time.perf_counter()
    try:
        passed, value, detail = fn(*args)
    except Exception as exc:  # a check that raises has failed, with the first line of why
        passed, value = False, None
        detail = (type(exc).__name__ + ": " + str(exc)).strip().splitlines()[0][:400]
    STATE["checks"].append(
        {
            "name": name,
            "passed": passed,
            "value": value,
            "detail": detail,
            "duration_s": round(time.perf_counter() - started, 4),
        }
    )
    STATE["running"] = None
    save()
    return passed, value


def exception_line(exc: BaseException) -> str:
    """``ImportError: <first line of its message>``: the line that names what failed (torch's
    own messages run on for lines of advice, and some start with a blank line)."""
    said = [line.strip() for line in str(exc).splitlines() if line.strip()]
    name = type(exc).__name__
    return (name + ": " + said[0] if said else name)[:400]


def import_torch() -> Any:
    started = time.perf_counter()
    try:
        import torch
    except BaseException as exc:
        STATE["import_error"] = traceback.format_exc()
        STATE["import_error_line"] = exception_line(exc)
        STATE["checks"].append(
            {
                "name": "import torch",
                "passed": False,
                "value": None,
                "detail": STATE["import_error_line"],
                "duration_s": round(time.perf_counter() - started, 4),
            }
        )
        save()
        return None
    took = time.perf_counter() - started
    STATE["checks"].append(
        {
            "name": "import torch",
            "passed": True,
            "value": torch.__version__,
            "detail": f"imported in {took:.2f} s from {os.path.dirname(torch.__file__)}",
            "duration_s": round(took, 4),
        }
    )
    STATE["torch"] = {
        "version": torch.__version__,
        "cuda": torch.version.cuda,
        "location": os.path.dirname(torch.__file__),
        "import_s": round(took, 4),
    }
    save()
    return torch


# ---------------------------------------------------------------- correctness


def rel_err(torch: Any, got: Any, ref: Any) -> float:
    got, ref = got.double().cpu(), ref.double().cpu()
    return float((got - ref).norm() / max(float(ref.norm()), 1e-30))


MATMUL_TOL = {"fp32": 1e-5, "tf32": 5e-3, "fp16": 5e-3, "bf16": 3e-2}


def matmul_check(torch: Any, dev: Any, mode: str) -> Result:
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(512, 512, generator=gen)
    b = torch.randn(512, 512, generator=gen)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(mode, torch.float32)
    a, b = a.to(dtype), b.to(dtype)  # the reference uses the same rounded inputs
    ref = a.double() @ b.double()
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    try:
        got = (a.to(dev) @ b.to(dev)).float()
        torch.cuda.synchronize(dev)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    err = rel_err(torch, got, ref)
    tol = MATMUL_TOL[mode]
    return err <= tol, err, f"relative error {err:.2e} vs CPU (tolerance {tol:.0e})"


def cpu_matmul(torch: Any) -> Result:
    """A CPU build computes: a float32 matmul (BLAS, OpenMP threads) against float64."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(256, 256, generator=gen)
    b = torch.randn(256, 256, generator=gen)
    err = rel_err(torch, a @ b, a.double() @ b.double())
    tol = MATMUL_TOL["fp32"]
    threads = torch.get_num_threads()
    return err <= tol, err, f"relative error {err:.2e} vs float64 on {threads} thread(s)"


def conv_check(torch: Any, dev: Any) -> Result:
    if not torch.backends.cudnn.is_available():
        return False, None, "cuDNN is not available to this torch"
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 16, 32, 32, generator=gen)
    w = torch.randn(32, 16, 3, 3, generator=gen)
    ref = torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        got = torch.nn.functional.conv2d(x.to(dev), w.to(dev), padding=1)
        torch.cuda.synchronize(dev)
    finally:
        torch.backends.cudnn.allow_tf32 = saved
    err = rel_err(torch, got, ref)
    version = torch.backends.cudnn.version()
    return err <= 1e-4, err, f"cuDNN {version} conv2d fp32, relative error {err:.2e}"


def sdpa_check(torch: Any, dev: Any) -> Result:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    f = torch.nn.functional.scaled_dot_product_attention
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 8, 256, 64, generator=gen) for _ in range(3))
    ref = f(q.double(), k.double(), v.double(), is_causal=True)
    usable, why = [], []
    for label, backend in (
        ("flash", "FLASH_ATTENTION"),
        ("efficient", "EFFICIENT_ATTENTION"),
        ("cudnn", "CUDNN_ATTENTION"),
        ("math", "MATH"),
    ):
        member = getattr(SDPBackend, backend, None)
        if member is None:
            why.append(f"{label}: not in this torch")
            continue
        try:
            with sdpa_kernel([member]):
                args = [t.to(dev, torch.bfloat16) for t in (q, k, v)]
                got = f(*args, is_causal=True)
                torch.cuda.synchronize(dev)
            err = rel_err(torch, got, ref)
            if err <= 3e-2:
                usable.append(label)
            else:
                why.append(f"{label}: wrong result (relative error {err:.1e})")
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            why.append(f"{label}: {first[:160]}")
    detail = "usable: %s" % (", ".join(usable) or "none")
    if why:
        detail += "; " + "; ".join(why)
    return bool(usable), usable, detail


# ---------------------------------------------------------------- speed


def matmul_tflops(torch: Any, dev: Any, full: bool) -> Result:
    """Best bf16 TFLOP/s of an n x n x n product (n = 8192 where memory allows)."""
    free = torch.cuda.mem_get_info(dev)[0]
    n = 8192 if free > 3 * 8192 * 8192 * 2 * 1.5 else 4096
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    c = torch.empty(n, n, device=dev, dtype=torch.bfloat16)
    batches, reps = (10, 20) if full else (8, 10)
    warm_until = time.perf_counter() + (0.5 if full else 0.15)  # clocks ramp up under load
    while time.perf_counter() < warm_until:
        for _ in range(5):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize(dev)
    best = 0.0
    for _ in range(batches):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            torch.matmul(a, b, out=c)
        stop.record()
        stop.synchronize()
        seconds = start.elapsed_time(stop) / 1e3 / reps
        best = max(best, 2.0 * n**3 / seconds / 1e12)
    del a, b, c
    return True, round(best, 1), "bf16 %dx%dx%d, best of %d x %d" % (n, n, n, batches, reps)


def copy_bandwidth(torch: Any, dev: Any, full: bool) -> Result:
    """Device-to-device copy: (bytes read + bytes written) / time, in GB/s."""
    free = torch.cuda.mem_get_info(dev)[0]
    size = (1 << 30) if free > (3 << 30) else (1 << 28)
    src = torch.empty(size, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    reps, batches = (10, 5) if full else (5, 3)
    dst.copy_(src)
    torch.cuda.synchronize(dev)
    best = 0.0
    for _ in range(batches):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            dst.copy_(src)
        stop.record()
        stop.synchronize()
        seconds = start.elapsed_time(stop) / 1e3 / reps
        best = max(best, 2.0 * size / seconds / 1e9)
    del src, dst
    return True, round(best, 1), "%d MiB copy, read+write bytes per second" % (size >> 20)


def compile_check(torch: Any, dev: Any) -> Result:
    try:
        import triton

        triton_version = triton.__version__
    except Exception as exc:
        return False, None, f"Triton is not importable: {exc}"
    x = torch.randn(4096, device=dev)

    def fn(t: Any) -> Any:
        return torch.sin(t) * 2 + torch.cos(t)

    started = time.perf_counter()
    got = torch.compile(fn)(x)
    torch.cuda.synchronize(dev)
    took = time.perf_counter() - started
    err = rel_err(torch, got, fn(x))
    ok = err < 1e-5
    return (
        ok,
        round(took, 2),
        f"torch.compile (Triton {triton_version}) first call {took:.1f} s, error {err:.1e}",
    )


# ---------------------------------------------------------------- what loaded


def loaded_libraries() -> list[dict[str, str]]:
    wanted = ("cudnn", "cublas", "nccl", "cudart", "libcuda.", "nvcuda", "nvrtc", "nvjitlink")
    paths = []
    if sys.platform.startswith("linux"):
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].startswith("/"):
                    paths.append(parts[5].strip())
    elif sys.platform == "win32":
        paths = windows_modules()
    seen, out = set(), []
    for p in paths:
        base = os.path.basename(p).lower()
        if p in seen or not any(w in base for w in wanted):
            continue
        seen.add(p)
        out.append({"name": os.path.basename(p), "path": os.path.realpath(p)})
    return out


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except Exception:
        return None


def library_versions(torch: Any, loaded: list[dict[str, str]]) -> dict[str, Any]:
    """Versions as the loaded libraries report them (cuBLAS and the runtime through ctypes)."""
    import ctypes

    def nccl() -> str:
        return ".".join(str(v) for v in torch.cuda.nccl.version())

    out: dict[str, Any] = {
        "cudnn": _safe(torch.backends.cudnn.version),
        "nccl": _safe(nccl),
    }
    for lib in loaded:
        base = lib["name"].lower()
        if base.startswith(("libcublas.", "cublas64")):

            def cublas(path: str = lib["path"]) -> str:
                handle, parts = ctypes.CDLL(path), []
                for prop in range(3):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
                    value = ctypes.c_int()
                    if handle.cublasGetProperty(prop, ctypes.byref(value)) != 0:
                        raise OSError("cublasGetProperty failed")
                    parts.append(str(value.value))
                return ".".join(parts)

            out["cublas"] = _safe(cublas)
        elif base.startswith(("libcudart.", "cudart64")):

            def cudart(path: str = lib["path"]) -> str:
                value = ctypes.c_int()
                if ctypes.CDLL(path).cudaRuntimeGetVersion(ctypes.byref(value)) != 0:
                    raise OSError("cudaRuntimeGetVersion failed")
                return "%d.%d" % (value.value // 1000, value.value % 1000 // 10)

            out["cudart"] = _safe(cudart)
    return out


def windows_modules() -> list[str]:
    import ctypes
    from ctypes import wintypes

    windll = getattr(ctypes, "WinDLL")  # noqa: B009 (Windows only; mypy on Linux)
    psapi = windll("psapi")
    kernel32 = windll("kernel32")
    process = kernel32.GetCurrentProcess()
    modules = (wintypes.HMODULE * 4096)()
    needed = wintypes.DWORD()
    if not psapi.EnumProcessModules(process, modules, ctypes.sizeof(modules), ctypes.byref(needed)):
        return []
    out = []
    for i in range(needed.value // ctypes.sizeof(wintypes.HMODULE)):
        buf = ctypes.create_unicode_buffer(1024)
        if kernel32.GetModuleFileNameW(modules[i], buf, 1024):
            out.append(buf.value)
    return out


def driver_info(torch: Any) -> dict[str, str]:
    info = {}
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as f:
            first = f.readline()
        for word in first.split():
            if word.count(".") >= 1 and word.replace(".", "").isdigit():
                info["driver_version"] = word
                break
    except OSError:
        pass
    try:
        import ctypes

        name = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
        lib = ctypes.CDLL(name)
        version = ctypes.c_int()
        if lib.cuDriverGetVersion(ctypes.byref(version)) == 0:
            info["driver_cuda"] = "%d.%d" % (version.value // 1000, version.value % 1000 // 10)
    except OSError:
        pass
    return info


# ---------------------------------------------------------------- several GPUs


def nccl_worker(  # noqa: PLR0917 (multiprocessing passes args positionally)
    rank: int, world: int, init: str, out_dir: str, size: int, backend: str = "nccl"
) -> None:
    """One rank of the all-reduce (backend "gloo" on CPU tensors: the tests' stand-in)."""
    import torch
    import torch.distributed as dist

    gpu = backend == "nccl"
    if gpu:
        torch.cuda.set_device(rank)

    def sync() -> None:
        if gpu:
            torch.cuda.synchronize()

    result: dict[str, Any] = {"rank": rank}
    try:
        dist.init_process_group(backend, init_method=init, rank=rank, world_size=world)
        x = torch.ones(size // 4, dtype=torch.float32, device="cuda" if gpu else "cpu")
        for _ in range(3):
            dist.all_reduce(x)
        sync()
        x.fill_(1.0)
        reps = 10
        dist.barrier()
        started = time.perf_counter()
        for _ in range(reps):
            dist.all_reduce(x)
        sync()
        seconds = (time.perf_counter() - started) / reps
        x.fill_(1.0)
        dist.all_reduce(x)
        result["correct"] = bool(float(x[0]) == world and float(x[-1]) == world)
        result["busbw_gbs"] = size * 2.0 * (world - 1) / world / seconds / 1e9
        if gpu:
            result["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        dist.destroy_process_group()
    except Exception as exc:
        result["error"] = (type(exc).__name__ + ": " + str(exc)).splitlines()[0][:300]
    with open(os.path.join(out_dir, "rank%d.json" % rank), "w", encoding="utf-8") as f:
        json.dump(result, f)


def nccl_check(
    torch: Any, world: int, full: bool, budget_s: float, backend: str = "nccl"
) -> Result:
    import multiprocessing
    import socket
    import tempfile

    if not torch.distributed.is_available():
        return False, None, "this torch has no torch.distributed"
    if backend == "nccl" and not torch.distributed.is_nccl_available():
        return False, None, "this torch has no NCCL backend"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    init = "tcp://127.0.0.1:%d" % port
    size = ((256 << 20) if full else (64 << 20)) if backend == "nccl" else (1 << 20)
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="torchsmith-nccl-") as out_dir:
        procs = [
            ctx.Process(target=nccl_worker, args=(r, world, init, out_dir, size, backend))
            for r in range(world)
        ]
        for p in procs:
            p.start()
        deadline = time.monotonic() + budget_s
        for p in procs:
            p.join(max(0.1, deadline - time.monotonic()))
        hung = [p for p in procs if p.is_alive()]
        for p in hung:
            p.kill()
        if hung:
            return False, None, f"all-reduce did not finish within {budget_s:.0f} s (NCCL hang?)"
        results = []
        for r in range(world):
            path = os.path.join(out_dir, "rank%d.json" % r)
            if not os.path.exists(path):
                return False, None, "rank %d died without a result" % r
            with open(path, encoding="utf-8") as f:
                results.append(json.load(f))
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        return False, None, errors[0]
    bw = min(r["busbw_gbs"] for r in results)
    ok = all(r["correct"] for r in results)
    detail = "%s %s all-reduce of %d MiB over %d ranks, bus bandwidth %.1f GB/s%s" % (
        backend.upper(),
        results[0].get("nccl") or "",
        size >> 20,
        world,
        bw,
        "" if ok else "; WRONG SUM",
    )
    return ok, round(bw, 1), detail


# ---------------------------------------------------------------- main


def cuda_available(torch: Any) -> Result:
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        return True, count, "%d device(s)" % count
    try:
        torch.cuda.init()  # raises with the reason (no driver, too old, no device)
        why = "no device"
    except Exception as exc:
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    return False, 0, why


def peer_access(torch: Any, count: int) -> Result:
    pairs = [
        [i, j, bool(torch.cuda.can_device_access_peer(i, j))]
        for i in range(count)
        for j in range(count)
        if i != j
    ]
    STATE["peer_access"] = pairs
    able = sum(p[2] for p in pairs)
    return True, able, "%d of %d GPU pairs can access each other's memory" % (able, len(pairs))


def gpu_checks(torch: Any, index: int, routes: dict[str, Any], full: bool) -> None:
    dev = torch.device("cuda", index)
    props = torch.cuda.get_device_properties(index)
    cc = "%d.%d" % (props.major, props.minor)
    route = routes.get(cc)
    gpu = {
        "index": index,
        "name": props.name,
        "compute_capability": cc,
        "memory_bytes": int(props.total_memory),
        "multiprocessors": int(props.multi_processor_count),
        "route": route,
    }
    STATE["gpus"].append(gpu)
    save()
    tag = "cuda:%d " % index
    if route is None:
        arch_list = torch.cuda.get_arch_list()
        own = "sm_%d%d" % (props.major, props.minor)
        gpu["route"] = {
            "ok": own in arch_list or any(a.startswith("compute_") for a in arch_list),
            "kind": "sass" if own in arch_list else "unknown",
            "route": "torch.cuda.get_arch_list(): {}".format(" ".join(arch_list)),
        }
        route = gpu["route"]
    if not route.get("ok"):
        STATE["checks"].append(
            {
                "name": tag + "kernels",
                "passed": False,
                "value": None,
                "detail": "skipped every kernel: " + str(route.get("route")),
                "duration_s": 0.0,
            }
        )
        save()
        return
    # CUDA events and the current stream belong to the current device: make it this GPU, or
    # the timings of GPU 1+ measure an empty stream of GPU 0.
    with torch.cuda.device(index):
        for mode in ("fp32", "tf32", "fp16", "bf16"):
            check(tag + "matmul " + mode, matmul_check, torch, dev, mode)
        check(tag + "cudnn conv2d", conv_check, torch, dev)
        check(tag + "sdpa", sdpa_check, torch, dev)
        check(tag + "bf16 matmul TFLOP/s", matmul_tflops, torch, dev, full)
        check(tag + "copy bandwidth GB/s", copy_bandwidth, torch, dev, full)
        if full:
            check(tag + "torch.compile", compile_check, torch, dev)


def main(argv: list[str]) -> None:
    global OUT
    OUT = argv[1]
    args = json.loads(argv[2])
    full = bool(args.get("full"))
    routes = args.get("routes") or {}
    nccl_budget = float(args.get("nccl_budget_s") or 60)
    STATE["started"] = time.time()
    torch = import_torch()
    if torch is None:
        return
    STATE["cuda_built"] = torch.version.cuda
    STATE["hip_built"] = getattr(torch.version, "hip", None)
    if not (torch.version.cuda or STATE["hip_built"]):  # ROCm builds use the torch.cuda API too
        check("cpu matmul", cpu_matmul, torch)  # all a CPU build can prove: that it computes
        STATE["done"] = True
        save()
        return
    passed, count = check("cuda available", cuda_available, torch)
    if not passed:
        STATE["done"] = True
        save()
        return
    STATE["driver"] = _safe(lambda: driver_info(torch)) or {}
    for index in range(count):
        try:
            gpu_checks(torch, index, routes, full)
        except Exception as exc:  # outside a check (device properties): record, go on
            STATE.setdefault("errors", []).append("cuda:%d: %s" % (index, exc))
    STATE["loaded"] = _safe(loaded_libraries) or []
    STATE["versions"] = _safe(lambda: library_versions(torch, STATE["loaded"])) or {}
    save()
    if count > 1:
        check("peer access", peer_access, torch, count)
        check("nccl all-reduce GB/s", nccl_check, torch, count, full, nccl_budget)
    STATE["done"] = True
    save()


if __name__ == "__main__":
    main(sys.argv)
