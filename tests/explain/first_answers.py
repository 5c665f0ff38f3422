"""Record explain's first answers on a batch of unseen cases, with the rules it had then.

The held-out split's figure rises each time a studied miss moves to train, so it cannot show how
explain does on logs nobody tuned for. This record can: for every case gathered after a round of
rule writing (``batch = "after-rules…"``), the answer explain gave the first time it saw the log,
with the rules of the commit before the batch came in. Rows are never rewritten; relabelling a case
later changes whether its recorded answer counts as right, not the answer.

    .venv/bin/python -m tests.explain.first_answers --batch after-rules-23  # rules at HEAD
    .venv/bin/python -m tests.explain.first_answers --batch after-rules-24 --cases DIR  # sealed
    .venv/bin/python -m tests.explain.first_answers --batch after-rules-9 --rev 1715c66^ \
        --listed-at 1715c66 --print   # a past batch, as its import commit listed it

Columns of ``corpus/first_answers.tsv`` (``corpus_score.FIRST_ANSWER_COLUMNS``, which reads it):
batch, case, answer (the top category, or ``none``), rule, basis (what decided it,
``torchsmith.explain.model.BASES``; ``none`` when explain stayed silent) and rev (the commit whose
rules answered).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.explain.corpus_score import CORPUS, FIRST_ANSWERS, load_cases, load_first_answers

REPO = Path(__file__).resolve().parents[2]

# Run inside the rules' own checkout: a commit whose diagnoses carry ``basis`` (engine.basis_of)
# gives it; older commits have none, so it is read off the rule the same way.
_SNIPPET = """
import sys
from pathlib import Path
from torchsmith.explain import explain_files
from torchsmith.explain.rules import load_rules
rules = {r.id: r for r in load_rules()}
for d in sys.argv[1:]:
    result = explain_files([str(Path(d) / "log.txt")])
    if not result.diagnoses:
        print(f"{Path(d).name}\\tnone\\t-\\tnone")
        continue
    top = result.diagnoses[0]
    basis = getattr(top, "basis", None)
    if basis is None:
        rule = rules.get(top.rule)
        if rule is None:
            basis = "machine"
        elif getattr(rule, "tail", False):
            basis = "ended-in-error"
        elif getattr(rule, "symptom", False):
            basis = "symptom"
        else:
            basis = "generic" if getattr(rule, "generic", False) else "cause"
    print(f"{Path(d).name}\\t{getattr(top.category, 'value', top.category)}\\t{top.rule}\\t{basis}")
"""


def batch_cases(batch: str, where: Path, listed_at: str | None = None) -> list[Path]:
    """The cases of ``batch`` under ``where``; with ``listed_at``, those whose case.toml said so in
    that commit (early rounds dropped the batch of a studied miss when it moved to train)."""
    if listed_at is None:
        return [c.log.parent for c in load_cases(where) if c.meta.get("batch") == batch]
    listed = subprocess.run(
        ["git", "-C", str(REPO), "grep", "-l", f'^batch = "{batch}"$', listed_at, "--", "tests/"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    names = sorted({Path(line.partition(":")[2]).parent.name for line in listed.splitlines()})
    return [where / name for name in names if (where / name / "log.txt").is_file()]


def answers_at(rev: str, cases: list[Path]) -> tuple[str, list[list[str]]]:
    """Run explain with the rules of ``rev`` over ``cases``: (short rev, rows)."""
    short = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", rev],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "rev"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(tree), short],
            check=True,
            timeout=120,
        )
        try:
            env = {**os.environ, "PYTHONPATH": str(tree / "src")}
            out = subprocess.run(
                [sys.executable, "-c", _SNIPPET, *map(str, cases)],
                check=True,
                capture_output=True,
                text=True,
                env=env,
                timeout=1800,
            ).stdout
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                check=False,
                timeout=120,
            )
    return short, [line.split("\t") for line in out.splitlines()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", required=True, help="the batch name of the cases' case.toml")
    parser.add_argument("--rev", default="HEAD", help="the commit whose rules answer")
    parser.add_argument("--cases", type=Path, default=CORPUS, help="where the batch's cases are")
    parser.add_argument(
        "--listed-at", metavar="COMMIT", help="take the batch's cases as that commit listed them"
    )
    parser.add_argument("--print", action="store_true", help="print the rows, do not record them")
    args = parser.parse_args(argv)
    if any(row["batch"] == args.batch for row in load_first_answers()) and not args.print:
        print(f"{args.batch} is recorded already; its first answers are not rewritten")
        return 1
    cases = batch_cases(args.batch, args.cases, args.listed_at)
    if not cases:
        print(f"no case of batch {args.batch} under {args.cases}")
        return 1
    rev, rows = answers_at(args.rev, cases)
    lines = ["\t".join([args.batch, *row, rev]) for row in rows]
    if args.print:
        print("\n".join(lines))
        return 0
    with FIRST_ANSWERS.open("a", encoding="utf-8") as record:
        record.write("\n".join(lines) + "\n")
    print(f"recorded {len(lines)} first answers of {args.batch} (rules at {rev})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
