"""The corpus of real logs (tests/explain/corpus/<case>/log.txt + case.toml), scored per split by
tests/explain/corpus_score.py: rules are written against the train split; the held-out split is the
figure that counts. Healthy logs (runs that ended well, warnings included) must get no diagnosis."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.explain.corpus_score import (
    SPLITS,
    TRACK_RECORD,
    SplitScore,
    load_cases,
    load_first_answers,
    load_readings,
    meta_problems,
    round_lines,
    score,
    score_first_answers,
)
from torchsmith.explain.model import BASES
from torchsmith.explain.track_record import parse_track_record
from torchsmith.taxonomy import CATEGORIES

GOAL = 0.9  # issue 11: >= 90% top-1 on the held-out split, 0 false alarms on healthy logs
# train holds every studied miss, including logs no rule can diagnose (no error text, cut before the
# error, a confirmed cause the text contradicts): the guard there is that no train case that explain
# gets right today starts missing. The known misses are listed, with what explain says, in
# corpus/train_misses.txt.
KNOWN_TRAIN_MISSES = Path(__file__).parent / "corpus" / "train_misses.txt"


def known_train_misses() -> set[str]:
    lines = KNOWN_TRAIN_MISSES.read_text(encoding="utf-8").splitlines()
    return {line.partition(":")[0] for line in lines if line and not line.startswith("#")}


@pytest.fixture(scope="module")
def scores() -> dict[str, SplitScore]:
    return score(load_cases())


def test_every_case_has_a_split_and_a_third_is_held_out() -> None:
    cases = load_cases()
    assert cases
    unknown = [c.name for c in cases if c.split not in SPLITS]
    assert not unknown, f"cases without split = train|heldout: {unknown}"
    held = sum(c.split == "heldout" for c in cases)
    assert 3 * held >= len(cases), f"only {held} of {len(cases)} cases are held out"


def test_every_case_follows_the_case_format() -> None:
    wrong = {c.name: p for c in load_cases() if (p := meta_problems(c.meta))}
    assert not wrong, wrong


@pytest.mark.parametrize("split", SPLITS)
def test_corpus_accuracy(scores: dict[str, SplitScore], split: str) -> None:
    s = scores[split]
    print(s.line(split))
    if split == "train":
        # a studied false alarm stays listed too (a healthy log whose error line is real)
        wrong = [*s.misses, *s.false_alarms]
        known = known_train_misses()
        new = [m for m in wrong if m.partition(":")[0] not in known]
        assert not new, f"train cases that used to be right: {new}"
        fixed = known - {m.partition(":")[0] for m in wrong}
        assert not fixed, f"now right, delete their lines from train_misses.txt: {sorted(fixed)}"
    else:
        assert not s.false_alarms, s.false_alarms
        # held-out misses are not printed: whoever studies one must move it to train (README)
        assert s.top1 >= GOAL, "held-out top-1 below the goal"


def test_blind_readings_name_real_cases_and_verdicts() -> None:
    """blind_readings.tsv: a verdict per case, a category, healthy or cannot-tell."""
    names = {c.name for c in load_cases()}
    readings = load_readings()
    assert readings
    stray = set(readings) - names
    assert not stray, f"readings of cases not in the corpus: {stray}"
    allowed = {*CATEGORIES, "healthy", "cannot-tell"}
    odd = {case: v for case, v in readings.items() if v not in allowed}
    assert not odd, f"verdicts outside the taxonomy: {odd}"


def test_every_unseen_case_has_its_first_answer_recorded() -> None:
    """first_answers.tsv holds one row per case gathered after a rule round, naming a real case,
    a category or none, and a basis; a case's batch changes only when it moved to train (early
    rounds did that)."""
    cases = {c.name: c for c in load_cases()}
    rows = load_first_answers()
    assert len({r["case"] for r in rows}) == len(rows), "a case recorded twice"
    for row in rows:
        case = cases.get(row["case"])
        assert case is not None, f"{row['case']}: recorded but not in the corpus"
        assert row["answer"] in {*CATEGORIES, "none"}, row
        assert row["basis"] in {*BASES, "none"}, row
        assert (row["answer"] == "none") == (row["basis"] == "none"), row
        assert case.meta.get("batch") == row["batch"] or case.split == "train", row
    unseen = {n for n, c in cases.items() if str(c.meta.get("batch", "")).startswith("after-rules")}
    missing = unseen - {r["case"] for r in rows}
    assert not missing, f"unseen cases without a recorded first answer: {sorted(missing)}"


def test_shipped_track_record_is_the_recorded_first_answers() -> None:
    """What explain shows as its track record (src/torchsmith/explain/track_record.toml) is what
    first_answers.tsv gives with today's labels (rewrite it with corpus_score --readme)."""
    shipped = parse_track_record(TRACK_RECORD.read_text("utf-8"))
    assert shipped == score_first_answers(load_cases())


def test_a_rounds_figures_are_those_the_readme_gives() -> None:
    # corpus README, items 23 and 24: each round's figures come from its recorded first answers
    cases = load_cases()
    round23 = round_lines(cases, ["after-rules-30", "after-rules-31", "after-rules-32"])
    assert round23[3] == (
        "together: first answers 39/75 = 52.0%, silent on 16; false alarms 0/20; read blind 75: "
        "the reader named 48 (could not tell 14, another category 13), explain right on 36 of "
        "those and on 22 of the 24 the reader was sure of"
    )
    assert "  decided by cause: 30/38" in round23
    round24 = round_lines(cases, ["after-rules-33", "after-rules-34", "after-rules-35"])
    assert round24[3].startswith("together: first answers 50/81 = 61.7%, silent on 13; false ")
    assert "explain right on 42 of those and on 31 of the 34 the reader was sure of" in round24[3]
