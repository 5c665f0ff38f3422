"""An experiment, kept so it can be rerun: would a learned fallback beat silence and symptoms?

For every unseen batch in order, nearest neighbours by word overlap (TF-IDF over the log's words,
cosine, K neighbours voting by similarity) are fitted on every case that came in before that batch,
and asked about the logs on which explain's recorded first answer was silent, a symptom or a
generic first error. Printed: how often the neighbours named the confirmed cause on the failing
ones, and how often they named any cause on the healthy ones (a false alarm).

    .venv/bin/python -m tests.explain.knn_fallback [K]

Result (round 20, 24 batches, K=5): right on 58 of the 189 failing logs asked about (31%; explain's
own symptom and generic answers were right on 40 of them), but a false alarm on 60 of 138 healthy
logs (43%). Asked only where explain already answered with a symptom or a generic error (no risk to
healthy logs), it was right less often than explain (16/58 against 33/58 over the first 22
batches). Not adopted.
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter

from tests.explain.corpus_score import load_cases, load_first_answers

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
ASKED = {"none", "symptom", "generic"}


def _dot(a: dict[str, float], b: dict[str, float]) -> float:
    return sum(a.get(w, 0.0) * x for w, x in b.items())


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    k = int(args[0]) if args else 5
    cases = {c.name: c for c in load_cases()}
    words = {
        n: {w.lower() for w in WORD.findall(c.log.read_text("utf-8", "replace"))}
        for n, c in cases.items()
    }
    label = {n: "healthy" if c.healthy else c.category for n, c in cases.items()}
    rows = load_first_answers()
    order = list(dict.fromkeys(r["batch"] for r in rows))
    recorded = {r["case"]: r["batch"] for r in rows}
    right = failing = alarms = healthy = 0
    for index, batch in enumerate(order):
        later = set(order[index:])
        train = [n for n in cases if recorded.get(n, str(cases[n].meta.get("batch"))) not in later]
        df: Counter[str] = Counter()
        for n in train:
            df.update(words[n])
        idf = {w: math.log(len(train) / c) for w, c in df.items()}

        def vector(ws: set[str], idf: dict[str, float] = idf) -> dict[str, float]:
            v = {w: idf[w] for w in ws if w in idf}
            norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
            return {w: x / norm for w, x in v.items()}

        fitted = {n: vector(words[n]) for n in train}
        for row in rows:
            if row["batch"] != batch or row["basis"] not in ASKED:
                continue
            q = vector(words[row["case"]])
            near = sorted((_dot(q, v), n) for n, v in fitted.items())
            vote: dict[str, float] = {}
            for sim, n in near[-k:]:
                vote[label[n]] = vote.get(label[n], 0.0) + sim
            guess = max(vote, key=lambda lab: vote[lab])
            if label[row["case"]] == "healthy":
                healthy += 1
                alarms += guess != "healthy"
            else:
                failing += 1
                right += guess == label[row["case"]]
    print(f"K={k}: right on {right}/{failing} failing logs; false alarms {alarms}/{healthy}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
