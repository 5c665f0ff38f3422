"""explain's scanning speed on adversarial lines against the ordinary benchmark log.

Builds two logs of the same size in a temp dir: the ordinary one of bench_explain.py (build noise
with real corpus lines) and an adversarial one: the same log with every 50th line replaced by a
hostile one (thousands of digits, a long run of one repeated token, or underscores; half of them
ending in a real rule example, so the rule patterns run on them). Prints MB/s for both (one
process, the same path `torchsmith explain` takes for a small file) and their ratio; goal: the
adversarial log within 2x of the ordinary one. ``--worst`` also times a log made only of hostile
lines that hit rules (every line runs patterns), the figure that no prefilter can help.

    .venv/bin/python bench/bench_explain_adversarial.py --size-mb 64
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_explain import build_log

from torchsmith.explain.engine import Explainer
from torchsmith.explain.reader import chunks, open_log
from torchsmith.explain.rules import load_rules


def hostile_line(rng: random.Random, examples: list[str], n: int) -> str:
    example = examples[rng.randrange(len(examples))] if n % 2 == 0 else "done in 3.2 s"
    first = example.split()[0] if example.split() else "x"
    kind = n % 4
    if kind == 0:
        return "1234567890" * rng.randrange(200, 600) + " " + example
    if kind == 1:
        return example + " " + "9" * rng.randrange(2000, 6000)
    if kind == 2:
        return (first + " ") * rng.randrange(100, 600) + example
    return "_" * rng.randrange(2000, 6000) + example


def make_adversarial(ordinary: Path, out: Path, every: int = 50, seed: int = 11) -> int:
    rng = random.Random(seed)
    examples = [e for r in load_rules() for e in r.examples]
    size = ordinary.stat().st_size
    written = 0
    with ordinary.open(encoding="utf-8") as src, out.open("w", encoding="utf-8") as dst:
        for n, line in enumerate(src):
            if written >= size:
                break
            text = hostile_line(rng, examples, n // every) + "\n" if n % every == 0 else line
            dst.write(text)
            written += len(text)
    return written


def make_worst(out: Path, size: int, seed: int = 13) -> int:
    rng = random.Random(seed)
    examples = [e for r in load_rules() for e in r.examples]
    written = 0
    with out.open("w", encoding="utf-8") as dst:
        n = 0
        while written < size:
            text = hostile_line(rng, examples, 2 * n + 2 * (n % 2)) + "\n"  # always an example
            dst.write(text)
            written += len(text)
            n += 1
    return written


def time_scan(log: Path) -> float:
    start = time.perf_counter()
    explainer = Explainer()
    stream = open_log(str(log))
    explainer.feed(stream.name, chunks(stream), stream.encoding)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=64)
    parser.add_argument("--worst", action="store_true", help="also time an all-hostile log")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-adversarial-") as tmp:
        work = Path(tmp)
        ordinary, hostile = work / "ordinary.log", work / "adversarial.log"
        size = build_log(ordinary, args.size_mb * 1024 * 1024)
        hostile_size = make_adversarial(ordinary, hostile)
        ord_s, adv_s = time_scan(ordinary), time_scan(hostile)
        ord_mbs, adv_mbs = size / 1e6 / ord_s, hostile_size / 1e6 / adv_s
        print(f"ordinary   : {size / 1e6:7.1f} MB {ord_s:7.2f} s {ord_mbs:7.1f} MB/s")
        print(f"adversarial: {hostile_size / 1e6:7.1f} MB {adv_s:7.2f} s {adv_mbs:7.1f} MB/s")
        ratio = ord_mbs / adv_mbs
        print(f"ratio      : {ratio:.2f}x slower (goal <= 2x): {'ok' if ratio <= 2 else 'MISSED'}")
        if args.worst:
            worst = work / "worst.log"
            worst_size = make_worst(worst, min(size, 8 * 1024 * 1024))
            worst_s = time_scan(worst)
            print(
                f"all-hostile: {worst_size / 1e6:7.1f} MB {worst_s:7.2f} s "
                f"{worst_size / 1e6 / worst_s:7.1f} MB/s (every line runs rule patterns)"
            )


if __name__ == "__main__":
    main()
