"""Scanning speed of `torchsmith explain` against `grep -E -c -f` with the same pattern set.

Builds a log (default 1 GB) from real corpus lines mixed into realistic build noise in a temp file,
writes every rule pattern as a POSIX ERE to patterns.txt, then times, side by side:
  torchsmith, read the way `torchsmith explain FILE` reads it (trigger-literal prefilter, worker
    processes for a big file, every rule's full regex on the lines that pass)
  torchsmith in one process (and checks that it finds exactly the same matches)
  grep -E -c -f patterns.txt LOG, in the environment's locale and with LC_ALL=C
and prints MB/s for each and the ratio against the fast grep (LC_ALL=C); goal: >= 0.5x.

    .venv/bin/python bench/bench_explain.py [--size-mb 1024] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from torchsmith.explain import parallel
from torchsmith.explain.engine import Explainer
from torchsmith.explain.reader import chunks, open_log
from torchsmith.explain.rules import load_rules

GOAL = 0.5  # issue 4: at least half the throughput of grep -E (LC_ALL=C, its fast mode)
CORPUS = Path(__file__).resolve().parent.parent / "tests" / "explain" / "corpus"

NOISE = [
    "[{n}/4567] /usr/local/cuda/bin/nvcc -DAT_PER_OPERATOR_HEADERS -DUSE_C10D_GLOO "
    "-I/home/u/pytorch/build/aten/src -isystem /usr/include -Xfatbin -compress-all "
    "-gencode arch=compute_90,code=sm_90 -Xcudafe --diag_suppress=cc_clobber_ignored -O3 "
    "-DNDEBUG -std=c++17 -Xcompiler=-fPIC -Xcompiler -Wno-error=deprecated -MD -MT "
    "caffe2/CMakeFiles/torch_cuda.dir/aten/src/ATen/native/cuda/K{n}.cu.o -o K{n}.cu.o -c K{n}.cu",
    '/home/u/pytorch/aten/src/ATen/native/cuda/K{n}.cu(123): warning #177-D: variable "x" was '
    "declared but never referenced",
    "/home/u/pytorch/c10/util/Exception.h:12:3: warning: unused parameter 'foo' "
    "[-Wunused-parameter]",
    "In file included from /home/u/pytorch/aten/src/ATen/core/Tensor.h:3,",
    "      |     ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
    "-- Performing Test COMPILER_SUPPORTS_AVX512 - Success",
    "  Downloading https://download.pytorch.org/whl/cu128/torch-2.7.0%2Bcu128-cp311-cp311-"
    "manylinux_2_28_x86_64.whl (1102.4 MB)",
    "Requirement already satisfied: numpy in ./venv/lib/python3.11/site-packages (1.26.4)",
    "copying torch/nn/modules/conv{n}.py -> build/lib.linux-x86_64-cpython-311/torch/nn/modules",
    "2024-05-01T12:00:00.1234567Z [{n}/9000] c++ -Werror=return-type -O2 -fPIC -c src/op{n}.cpp",
]


def python_to_ere(pattern: str) -> str:
    """Translate the regex subset the rules use into POSIX ERE for grep -E."""
    out: list[str] = []
    i, in_class = 0, False
    classes = {
        "d": ("[0-9]", "0-9"),
        "s": ("[[:space:]]", "[:space:]"),
        "w": ("[[:alnum:]_]", "[:alnum:]_"),
    }
    negated = {"D": "[^0-9]", "S": "[^[:space:]]", "W": "[^[:alnum:]_]"}
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            n = pattern[i + 1]
            if n in classes:
                out.append(classes[n][1] if in_class else classes[n][0])
            elif n in negated and not in_class:
                out.append(negated[n])
            elif pattern.startswith("x27", i + 1):
                out.append("'")
                i += 2
            else:
                out.append(c + n)
            i += 2
            continue
        if in_class:
            in_class = c != "]"
            out.append(c)
        elif c == "[":
            in_class = True
            out.append(c)
        elif pattern.startswith("(?P<", i):
            i = pattern.index(">", i) + 1
            out.append("(")
            continue
        elif pattern.startswith("(?:", i):
            out.append("(")
            i += 3
            continue
        elif pattern.startswith("(?i)", i):
            i += 4
            continue
        elif c == "?" and out and out[-1] in ("*", "+", "?", "}"):
            pass  # lazy quantifier: ERE has none; greedy gives the same line matches
        else:
            out.append(c)
        i += 1
    return "".join(out)


def build_log(path: Path, size: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    real = []
    for log in sorted(CORPUS.glob("*/log.txt")):
        real.extend(log.read_text("utf-8", "replace").splitlines())
    written = 0
    with path.open("w", encoding="utf-8") as out:
        while written < size:
            block = []
            for n in range(2000):
                block.append(NOISE[rng.randrange(len(NOISE))].format(n=n))
            block.append(real[rng.randrange(len(real))])  # ~1 real line per 2000 noise lines
            text = "\n".join(block) + "\n"
            out.write(text)
            written += len(text)
    return written


def time_grep(
    patterns: Path, log: Path, locale: str | None, timeout: float
) -> tuple[float, str | None]:
    """Seconds and matching-line count of grep; (timeout, None) when it did not finish in time
    (GNU grep's DFA can blow up on counted repetitions): the time is then a lower bound."""
    env = dict(os.environ, LC_ALL=locale) if locale else None
    start = time.perf_counter()
    try:
        done = subprocess.run(
            ["grep", "-E", "-c", "-f", str(patterns), str(log)],
            capture_output=True,
            text=True,
            check=False,
            env=env,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return timeout, None
    if done.returncode > 1:
        raise SystemExit(f"grep failed: {done.stderr.strip()}")
    return time.perf_counter() - start, done.stdout.strip()


def time_torchsmith(log: Path, workers: bool = True) -> tuple[float, dict[str, tuple[int, int]]]:
    """Seconds for the way `torchsmith explain FILE` reads a file (several cores for a big one;
    ``workers=False``: one process), and every rule's (first line, match count)."""
    start = time.perf_counter()
    explainer = Explainer()
    stream = open_log(str(log))
    if workers:
        explainer.feed_stream(stream)
    else:
        explainer.feed(stream.name, chunks(stream), stream.encoding)
    seconds = time.perf_counter() - start
    return seconds, {k: (m.line, m.count) for k, m in explainer.matches.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument(
        "--grep-timeout", type=float, default=600.0, help="stop a grep run after this many seconds"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-explain-"))
    try:
        rules = load_rules()
        patterns = work / "patterns.txt"
        ere = [python_to_ere(p.pattern) for r in rules for p in r.patterns]
        patterns.write_text("\n".join(ere) + "\n")
        log = work / "build.log"
        size = build_log(log, args.size_mb * 1024 * 1024)
        mb = size / 1e6
        env_locale = os.environ.get("LC_ALL") or os.environ.get("LANG") or "C"
        print(
            f"log: {mb:.0f} MB, {len(ere)} patterns from {len(rules)} rules, locale "
            f"{env_locale}, {os.cpu_count()} CPUs"
        )
        # warm the page cache so both read from memory
        subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)
        ts_s, found = time_torchsmith(log)
        hits = sum(count for _, count in found.values())
        print(
            f"torchsmith     : {ts_s:7.2f} s {mb / ts_s:8.1f} MB/s ({hits} rule hits, "
            f"{parallel.worker_count()} worker process(es))"
        )
        one_s, one_found = time_torchsmith(log, workers=False)
        print(f"torchsmith, 1 p: {one_s:7.2f} s {mb / one_s:8.1f} MB/s (single process)")
        if one_found != found:
            raise SystemExit("error: the parallel and single-process scans disagree")
        grep_s: dict[str, tuple[float, bool]] = {}
        for locale in (None, "C"):
            seconds, count = time_grep(patterns, log, locale, args.grep_timeout)
            label = f"grep LC_ALL={locale}" if locale else f"grep ({env_locale})"
            if count is None:
                print(f"{label:15}: > {seconds:5.0f} s  < {mb / seconds:6.1f} MB/s (stopped)")
            else:
                print(f"{label:15}: {seconds:7.2f} s {mb / seconds:8.1f} MB/s ({count} lines)")
            grep_s[locale or env_locale] = (seconds, count is None)
        seconds, stopped = grep_s["C"]
        ratio = seconds / ts_s
        bound = ">= " if stopped else ""
        verdict = "PASS" if ratio >= GOAL else "FAIL"
        print(f"ratio vs grep LC_ALL=C: {bound}{ratio:.2f}x (goal >= {GOAL}x): {verdict}")
        if env_locale != "C":
            seconds, stopped = grep_s[env_locale]
            bound = ">= " if stopped else ""
            print(f"ratio torchsmith / grep in {env_locale}: {bound}{seconds / ts_s:.2f}x")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
