"""Bring gathered cases into the corpus as two unseen batches, split by a hash of the slug.

Gatherers write ``STAGE/<gatherer>/<slug>/{log.txt,case.toml}`` (corpus README, "Case format").
Each case is checked (keys, category, a log with text, a slug and a source the corpus does not hold
yet; two logs of one thread may come in together) and goes, by the parity of its slug's SHA-256,
either into the corpus with ``batch = FIRST`` or into ``SEALED`` (outside the repository) with
``batch = SECOND``, to be scored only after FIRST's misses have been studied. Both halves come
from the same gatherers, so they are alike.

    .venv/bin/python -m tests.explain.import_batch STAGE after-rules-30 after-rules-31 SEALED

A case that fails a check is not imported; the reason is printed and the exit status is 1.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import sys
from pathlib import Path

from tests.explain.corpus_score import CORPUS, load_cases, meta_problems
from torchsmith.util.toml import loads_toml

SLUG = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")


def half(slug: str) -> int:
    """0 or 1: which of the two batches the case goes to."""
    return hashlib.sha256(slug.encode()).digest()[0] & 1


def problems(case: Path, slugs: set[str], sources: set[str]) -> list[str]:
    """What keeps ``case`` (a folder with case.toml and log.txt) out of the corpus."""
    found = []
    if not SLUG.match(case.name):
        found.append("slug is not lowercase letters, digits and hyphens")
    if case.name in slugs:
        found.append("slug already in the corpus")
    log = case / "log.txt"
    if not log.is_file() or not log.read_bytes().strip():
        found.append("no log text")
    try:
        meta = loads_toml((case / "case.toml").read_text("utf-8"))
    except (OSError, ValueError) as exc:
        return [*found, f"case.toml unreadable: {exc}"]
    found += meta_problems(meta)
    if str(meta.get("source", "")).rstrip("/") in sources:
        found.append("source already in the corpus")
    return found


def with_batch(text: str, batch: str) -> str:
    """case.toml text held out in ``batch`` (the gatherer's split/batch lines replaced)."""
    kept = [line for line in text.splitlines() if not re.match(r"(split|batch)\s*=", line)]
    return "\n".join([*kept, 'split = "heldout"', f'batch = "{batch}"']) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage", type=Path)
    ap.add_argument("first", help="batch name of the half imported now")
    ap.add_argument("second", help="batch name of the sealed half")
    ap.add_argument("sealed", type=Path, help="where the sealed half waits, outside the repository")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    args = ap.parse_args(argv)

    existing = load_cases(args.corpus)
    slugs = {c.name for c in existing}
    sources = {str(c.meta.get("source", "")).rstrip("/") for c in existing}
    bad = 0
    counts = {args.first: 0, args.second: 0}
    for toml in sorted(args.stage.glob("*/*/case.toml")):
        case = toml.parent
        wrong = problems(case, slugs, sources)
        if wrong:
            bad += 1
            print(f"skipped {case}: {'; '.join(wrong)}")
            continue
        batch, where = (
            (args.first, args.corpus) if half(case.name) == 0 else (args.second, args.sealed)
        )
        target = where / case.name
        target.mkdir(parents=True)
        shutil.copyfile(case / "log.txt", target / "log.txt")
        text = (case / "case.toml").read_text("utf-8")
        (target / "case.toml").write_text(with_batch(text, batch), "utf-8")
        slugs.add(case.name)
        counts[batch] += 1
    for batch, n in counts.items():
        print(f"{batch}: {n} cases")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
