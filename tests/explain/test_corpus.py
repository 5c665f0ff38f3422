"""The corpus of real logs (tests/explain/corpus/<case>/log.txt + case.toml): the top diagnosis must
have the confirmed category for at least 90% of cases, and healthy logs must get no diagnosis."""

from __future__ import annotations

from pathlib import Path

from torchsmith.explain import explain_files
from torchsmith.util.toml import loads_toml

CORPUS = Path(__file__).parent / "corpus"


def _cases() -> list[tuple[str, dict[str, object], Path]]:
    found = []
    for case in sorted(CORPUS.glob("*/case.toml")):
        log = case.parent / "log.txt"
        if log.is_file():
            found.append((case.parent.name, loads_toml(case.read_text("utf-8")), log))
    return found


def test_corpus_accuracy() -> None:
    cases = _cases()
    if not cases:
        return
    hits, misses, healthy_noise = 0, [], []
    for name, meta, log in cases:
        result = explain_files([str(log)])
        if meta.get("healthy"):
            if result.diagnoses:
                healthy_noise.append(f"{name}: {[d.rule for d in result.diagnoses]}")
            else:
                hits += 1
            continue
        top = result.diagnoses[0].category if result.diagnoses else None
        if top == meta["category"]:
            hits += 1
        else:
            misses.append(f"{name}: want {meta['category']}, got {top}")
    print(f"corpus: {hits}/{len(cases)} correct")
    for miss in misses + healthy_noise:
        print("  miss:", miss)
    assert not healthy_noise, healthy_noise
    assert hits >= 0.9 * len(cases), misses
