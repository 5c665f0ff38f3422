"""The one place that scores `torchsmith explain` on its corpus, per split.

Each case (tests/explain/corpus/<case>/case.toml) has ``split = "train"`` or ``split = "heldout"``.
Rules are written against the train cases only; the held-out figure is the one that counts.
A failing case is right when the top diagnosis has its confirmed category; a healthy case is right
when it gets no diagnosis at all (a diagnosis there is a false alarm).

Used by tests/explain/test_corpus.py and to rewrite the figures in the corpus README:

    .venv/bin/python -m tests.explain.corpus_score            # print both scores and the misses
    .venv/bin/python -m tests.explain.corpus_score --readme   # also rewrite the README's figures
    .venv/bin/python -m tests.explain.corpus_score --round after-rules-33 after-rules-34
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from torchsmith.explain import explain_files
from torchsmith.explain.model import BASES
from torchsmith.explain.track_record import Tally, TrackRecord
from torchsmith.taxonomy import CATEGORIES
from torchsmith.util.toml import loads_toml

CORPUS = Path(__file__).parent / "corpus"
SPLITS = ("train", "heldout")
READINGS = CORPUS / "blind_readings.tsv"
FIRST_ANSWERS = CORPUS / "first_answers.tsv"  # written by tests/explain/first_answers.py
FIRST_ANSWER_COLUMNS = ("batch", "case", "answer", "rule", "basis", "rev")
TRACK_RECORD = Path(__file__).parents[2] / "src/torchsmith/explain/track_record.toml"


@dataclass(frozen=True)
class Case:
    name: str
    meta: dict[str, object]
    log: Path

    @property
    def split(self) -> str:
        return str(self.meta.get("split", ""))

    @property
    def healthy(self) -> bool:
        return bool(self.meta.get("healthy"))

    @property
    def category(self) -> str:
        return str(self.meta["category"])


@dataclass
class SplitScore:
    cases: int = 0
    hits: int = 0
    healthy: int = 0
    false_alarms: list[str] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    right: set[str] = field(default_factory=set)  # the cases scored right

    @property
    def failing(self) -> int:
        return self.cases - self.healthy

    @property
    def failing_hits(self) -> int:
        return self.hits - (self.healthy - len(self.false_alarms))

    @property
    def top1(self) -> float:
        """Top-1 on the failing logs (right category first)."""
        return self.failing_hits / self.failing if self.failing else 1.0

    def line(self, split: str) -> str:
        return (
            f"{split}: top-1 {self.failing_hits}/{self.failing} = {100 * self.top1:.1f}% "
            f"on failing logs; false alarms {len(self.false_alarms)}/{self.healthy} healthy logs"
        )


# case.toml (README, "Case format")
REQUIRED_KEYS = ("source", "category", "confirmed_by", "platform", "tool", "healthy", "split")
PLATFORMS = ("linux", "windows", "wsl", "macos")
TOOLS = ("pip", "uv", "conda", "source-build", "extension-build", "runtime", "jupyter")


def meta_problems(meta: dict[str, object]) -> list[str]:
    """What is wrong with a case.toml's keys and values (empty when it follows the case format)."""
    found = [f"no {key}" for key in REQUIRED_KEYS if key not in meta]
    if meta.get("category") not in CATEGORIES:
        found.append(f"category {meta.get('category')!r} is not in the taxonomy")
    if meta.get("healthy") is True and meta.get("category") != "other":
        found.append("a healthy case must have category other")
    if meta.get("platform") not in PLATFORMS:
        found.append(f"platform {meta.get('platform')!r} is not one of {', '.join(PLATFORMS)}")
    if meta.get("tool") not in TOOLS:
        found.append(f"tool {meta.get('tool')!r} is not one of {', '.join(TOOLS)}")
    return found


def load_cases(corpus: Path = CORPUS) -> list[Case]:
    found = []
    for case in sorted(corpus.glob("*/case.toml")):
        log = case.parent / "log.txt"
        if log.is_file():
            found.append(Case(case.parent.name, loads_toml(case.read_text("utf-8")), log))
    return found


def score(cases: list[Case]) -> dict[str, SplitScore]:
    scores = {split: SplitScore() for split in SPLITS}
    for case in cases:
        s = scores[case.split]
        s.cases += 1
        result = explain_files([str(case.log)])
        if case.healthy:
            s.healthy += 1
            if not result.healthy:  # a diagnosis, or called incomplete (cut inside a traceback)
                s.false_alarms.append(f"{case.name}: {[d.rule for d in result.diagnoses]}")
            else:
                s.hits += 1
                s.right.add(case.name)
            continue
        top = result.diagnoses[0].category if result.diagnoses else None
        if top == case.category:
            s.hits += 1
            s.right.add(case.name)
        else:
            s.misses.append(f"{case.name}: want {case.category}, got {top}")
    return scores


def subset(whole: SplitScore, group: list[Case]) -> SplitScore:
    """The score of ``group`` (cases of one split) read off the split's score, without rerunning."""
    names = {c.name for c in group}

    def mine(entries: list[str]) -> list[str]:
        return [e for e in entries if e.partition(":")[0] in names]

    right = whole.right & names
    return SplitScore(
        cases=len(group),
        hits=len(right),
        healthy=sum(c.healthy for c in group),
        false_alarms=mine(whole.false_alarms),
        misses=mine(whole.misses),
        right=right,
    )


def load_readings(path: Path = READINGS) -> dict[str, str]:
    """The blind readers' verdicts (BLIND_READING.md): case -> category, healthy or cannot-tell."""
    found = {}
    for line in path.read_text("utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            case, verdict = line.split("\t")[:2]
            found[case] = verdict
    return found


def sure_readings(path: Path = READINGS) -> set[str]:
    """The cases whose blind reader was sure of the verdict (confidence ``high``)."""
    found = set()
    for line in path.read_text("utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            case, _, confidence = line.split("\t")[:3]
            if confidence == "high":
                found.add(case)
    return found


def blind_line(split: str, cases: list[Case], s: SplitScore, readings: dict[str, str]) -> str:
    """explain on the failing logs whose confirmed cause a blind reader of the log alone named."""
    read = [c for c in cases if c.split == split and not c.healthy and c.name in readings]
    named = [c for c in read if readings[c.name] == c.category]
    hits = sum(c.name in s.right for c in named)
    share = f" = {100 * hits / len(named):.1f}%" if named else ""
    return (
        f"{split}: {len(read)} failing logs read blind, the reader named the confirmed cause of "
        f"{len(named)}; top-1 on those {hits}/{len(named)}{share}"
    )


def load_first_answers(path: Path = FIRST_ANSWERS) -> list[dict[str, str]]:
    """The recorded first answers, one dict per row (FIRST_ANSWER_COLUMNS)."""
    rows = []
    for line in path.read_text("utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            rows.append(dict(zip(FIRST_ANSWER_COLUMNS, line.split("\t"), strict=True)))
    return rows


def score_first_answers(cases: list[Case], batches: list[str] | None = None) -> TrackRecord:
    """explain's recorded first answers (first_answers.tsv) scored against today's labels (only
    those of ``batches``, when given)."""
    rows = [r for r in load_first_answers() if batches is None or r["batch"] in batches]
    labels = {c.name: c for c in cases}
    tallies = {basis: [0, 0] for basis in BASES}
    failing = healthy = silent = false_alarms = 0
    for row in rows:
        case = labels[row["case"]]
        if case.healthy:
            healthy += 1
            false_alarms += row["answer"] != "none"
        elif row["basis"] == "none":
            failing += 1
            silent += 1
        else:
            failing += 1
            tally = tallies[row["basis"]]  # type: ignore[index]
            tally[0] += 1
            tally[1] += row["answer"] == case.category
    return TrackRecord(
        batches=len({row["batch"] for row in rows}),
        failing=failing,
        healthy=healthy,
        silent_on_failing=silent,
        false_alarms=false_alarms,
        by_basis={b: Tally(n, right) for b, (n, right) in tallies.items() if n},
    )


def first_answer_lines(record: TrackRecord) -> list[str]:
    right = sum(t.right for t in record.by_basis.values())
    out = [
        f"first answers on {record.batches} unseen batches: top-1 {right}/{record.failing} = "
        f"{100 * right / record.failing:.1f}% on failing logs, silent on "
        f"{record.silent_on_failing}; false alarms {record.false_alarms}/{record.healthy}"
    ]
    for basis, t in record.by_basis.items():
        out.append(f"  decided by {basis}: {t.right}/{t.answered} = {100 * t.share:.1f}% right")
    return out


def round_lines(cases: list[Case], names: list[str]) -> list[str]:
    """A round's figures from its recorded first answers, per batch and together: top-1, silence and
    false alarms; what the blind readers named and explain on those; and, together, by basis."""
    labels = {c.name: c for c in cases}
    readings, sure = load_readings(), sure_readings()
    rows = [r for r in load_first_answers() if r["batch"] in names]
    out = []
    for name in [*names, "together"] if len(names) > 1 else names:
        group = [r for r in rows if name in ("together", r["batch"])]
        failing = [r for r in group if not labels[r["case"]].healthy]
        right = [r for r in failing if r["answer"] == labels[r["case"]].category]
        alarms = sum(r["answer"] != "none" for r in group if labels[r["case"]].healthy)
        read = [r for r in failing if r["case"] in readings]
        named = [r for r in read if readings[r["case"]] == labels[r["case"]].category]
        unsure = sum(readings[r["case"]] == "cannot-tell" for r in read)
        named_sure = [r for r in named if r["case"] in sure]
        out.append(
            f"{name}: first answers {len(right)}/{len(failing)}"
            f"{f' = {100 * len(right) / len(failing):.1f}%' if failing else ''}, silent on "
            f"{sum(r['answer'] == 'none' for r in failing)}; false alarms "
            f"{alarms}/{len(group) - len(failing)}; read blind {len(read)}: the reader named "
            f"{len(named)} (could not tell {unsure}, another category "
            f"{len(read) - len(named) - unsure}), explain right on "
            f"{sum(r in right for r in named)} of those and on "
            f"{sum(r in right for r in named_sure)} of the {len(named_sure)} the reader was sure of"
        )
    for basis, tally in score_first_answers(cases, names).by_basis.items():
        out.append(f"  decided by {basis}: {tally.right}/{tally.answered}")
    return out


def track_record_toml(record: TrackRecord) -> str:
    out = [
        "# explain's first answers on logs nobody had tuned it for, by what decided them.",
        "# Written by `python -m tests.explain.corpus_score --readme` from",
        "# tests/explain/corpus/first_answers.tsv (each case answered once, with the rules",
        "# before its batch came in; today's labels).",
        f"batches = {record.batches}",
        f"failing = {record.failing}",
        f"healthy = {record.healthy}",
        f"silent_on_failing = {record.silent_on_failing}",
        f"false_alarms = {record.false_alarms}",
    ]
    for basis, t in record.by_basis.items():
        out += ["", f'[basis."{basis}"]', f"answered = {t.answered}", f"right = {t.right}"]
    return "\n".join(out) + "\n"


def batches(cases: list[Case]) -> dict[str, list[Case]]:
    """Held-out cases per ``batch`` (gathered after a round of rule writing, not tuned against)."""
    out: dict[str, list[Case]] = {}
    for c in cases:
        if c.split == "heldout" and c.meta.get("batch"):
            out.setdefault(str(c.meta["batch"]), []).append(c)
    return dict(
        sorted(
            out.items(),
            key=lambda kv: [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", kv[0])],
        )
    )


def _counts(cases: list[Case], key: str) -> str:
    counter = Counter(str(c.meta.get(key)) for c in cases)
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def coverage_markdown(
    cases: list[Case],
    scores: dict[str, SplitScore],
    readings: dict[str, str],
    record: TrackRecord,
) -> str:
    healthy = sum(c.healthy for c in cases)
    recorded = sum(c.name.startswith("recorded-") for c in cases)
    out = [
        f"{len(cases)} cases, {healthy} healthy, {recorded} recorded here; "
        + ", ".join(f"{split} {scores[split].cases}" for split in SPLITS)
        + ".",
        "",
        "| split | cases | failing | top-1 on failing | healthy | false alarms |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for split in SPLITS:
        s = scores[split]
        out.append(
            f"| {split} | {s.cases} | {s.failing} "
            f"| {s.failing_hits}/{s.failing} = {100 * s.top1:.1f}% "
            f"| {s.healthy} | {len(s.false_alarms)} |"
        )
    out += ["", "explain's first answers, recorded as each unseen batch came in:", ""]
    out += [f"    {line}" for line in first_answer_lines(record)]
    out += ["", "Logs read blind (BLIND_READING.md), explain where the reader named the cause"]
    out += ["(today's rules; studied misses sit in train, so first answers are in item 19):", ""]
    out += [f"- {blind_line(split, cases, scores[split], readings)}" for split in SPLITS]
    for name, group in batches(cases).items():
        b = subset(scores["heldout"], group)
        out += [
            "",
            f"Held-out batch `{name}` ({b.cases} cases, gathered after that round's rules): "
            f"top-1 {b.failing_hits}/{b.failing} = {100 * b.top1:.1f}%, "
            f"false alarms {len(b.false_alarms)}/{b.healthy}.",
        ]
    out += ["", "Cases per category and split:", ""]
    out += ["| category | train | heldout |", "| --- | --- | --- |"]
    per: Counter[tuple[str, str]] = Counter((c.category, c.split) for c in cases)
    for cat in sorted({c.category for c in cases}):
        out.append(f"| {cat} | {per[(cat, 'train')]} | {per[(cat, 'heldout')]} |")
    out += [
        "",
        f"- platforms: {_counts(cases, 'platform')}",
        f"- tools: {_counts(cases, 'tool')}",
    ]
    return "\n".join(out)


def cases_markdown(cases: list[Case]) -> str:
    out = [
        "| case | category | split | platform | tool | healthy | source |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in cases:
        source = str(c.meta.get("source", ""))
        where = f"<{source}>" if source.startswith("https://") else "recorded here"
        out.append(
            f"| `{c.name}` | {c.category} | {c.split} | {c.meta.get('platform')} "
            f"| {c.meta.get('tool')} | {'yes' if c.healthy else ''} | {where} |"
        )
    return "\n".join(out)


def update_readme(text: str, block: str, name: str = "corpus_score") -> str:
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    return pattern.sub(lambda _: f"{begin}\n{block}\n{end}", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", action="store_true", help="rewrite the README's figures")
    parser.add_argument("--quiet", action="store_true", help="do not list the misses")
    parser.add_argument(
        "--show-heldout",
        action="store_true",
        help="also list the held-out misses (whoever reads them must move those cases to train)",
    )
    parser.add_argument(
        "--round",
        nargs="+",
        metavar="BATCH",
        help="print only these batches' first-answer figures (a round's, for the README)",
    )
    args = parser.parse_args(argv)
    cases = load_cases()
    if args.round:
        print("\n".join(round_lines(cases, args.round)))
        return 0
    scores = score(cases)
    readings = load_readings()
    for split in SPLITS:
        print(scores[split].line(split))
        print("  " + blind_line(split, cases, scores[split], readings))
        if not args.quiet and (split == "train" or args.show_heldout):
            for miss in scores[split].misses + scores[split].false_alarms:
                print(f"  {split} miss: {miss}")
    for name, group in batches(cases).items():
        print(subset(scores["heldout"], group).line(f"heldout batch {name}"))
    record = score_first_answers(cases)
    print("\n".join(first_answer_lines(record)))
    if args.readme:
        TRACK_RECORD.write_text(track_record_toml(record), "utf-8")
        readme = CORPUS / "README.md"
        text = update_readme(
            readme.read_text("utf-8"), coverage_markdown(cases, scores, readings, record)
        )
        readme.write_text(update_readme(text, cases_markdown(cases), "corpus_cases"), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
