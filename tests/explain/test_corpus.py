"""The corpus of real logs (tests/explain/corpus/<case>/log.txt + case.toml), scored per split by
tests/explain/corpus_score.py: rules are written against the train split; the held-out split is the
figure that counts. Healthy logs (runs that ended well, warnings included) must get no diagnosis."""

from __future__ import annotations

import pytest

from tests.explain.corpus_score import SPLITS, SplitScore, load_cases, score

GOAL = 0.9  # issue 11: >= 90% top-1 on the held-out split, 0 false alarms on healthy logs
# train holds every studied miss, including logs no rule can diagnose (no error text, cut before the
# error, a confirmed cause the text contradicts): a regression floor, not the figure that counts.
# It was 0.85 until after-rules-6 and -7 moved 18 studied misses in, about half of them logs whose
# text cannot show the cause (corpus README).
TRAIN_FLOOR = 0.80


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


@pytest.mark.parametrize("split", SPLITS)
def test_corpus_accuracy(scores: dict[str, SplitScore], split: str) -> None:
    s = scores[split]
    print(s.line(split))
    assert not s.false_alarms, s.false_alarms
    # held-out misses are not printed: whoever studies one must move it to train (README)
    floor = TRAIN_FLOOR if split == "train" else GOAL
    assert s.top1 >= floor, s.misses if split == "train" else "held-out top-1 below the goal"
